"""``credprov ensure-image``: the kubelet's image path for every container of a pod.

(Over 300 lines because of its fourteen options' help text and the text report; the
work is :meth:`credprov.kubelet.node.KubeletNode.ensure_pod`.)

For each image volume (``spec.volumes[].image``) and each init, regular and ephemeral
container of ``--pod`` (in the order the kubelet pulls them) run ``EnsureImageExists`` (:mod:`credprov.kubelet.ensure`) against a real
container runtime over CRI, with the ``KubeletEnsureSecretPulledImages`` pull manager
keeping its records under ``--root-dir/image_manager`` as the kubelet does:

* credentials come from the pod's ``imagePullSecrets`` (looked up by name in the pod's
  namespace among the ``--pull-secret`` objects), then the node's docker config, then the
  credential provider plugins of ``--config``/``--bin-dir``, in the kubelet's order, and
  only when a decision needs them;
* with ``--objects FILE``, ``--pod NS/NAME`` is a pod of that cluster and the command runs
  as its node (``--node``, default the pod's ``spec.nodeName``) would
  (:mod:`credprov.kubelet.aspod`): pull secrets are read through the Node authorizer (a
  refused one is skipped with a ``credprov: warning:`` line, the kubelet's log line),
  and KEP-4412 providers get the pod's service account and a token bound to the pod only
  when the Node authorizer, NodeRestriction and RBAC allow it, so a pull with their
  credentials is recorded under ``kubernetesServiceAccounts``;
* an image already present is used when the verification policy and the records allow it,
  without any registry round-trip; otherwise ``IfNotPresent``/``Always`` pull through the
  CRI (recording the intent first and the credentials that worked after), and ``Never``
  fails with ``ErrImageNeverPull``;
* every step prints the event the kubelet would record on the pod (``Normal  Pulling
  Pulling image "..."``), or ``-o json`` prints them with each container's decision, metric
  labels, the credentials tried (source and hash only) and what was recorded;
  ``FailedToRetrieveImagePullSecret`` comes last and only when a pull failed with
  ``ErrImagePull`` while a pull secret was missing (Kubernetes 1.37, kubernetes#138432).

Each run is a kubelet start: the pull manager's start-up housekeeping settles the intents
an interrupted run left behind. Exit 0 when every image is ready, 1 otherwise. Passwords
are never printed or logged.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from credprov import cmdoptions as opts
from credprov.cli._output import write_metrics
from credprov.cli.main import CLIError, feature_gates
from credprov.errors import EXIT_FAILURE, EXIT_OK

if TYPE_CHECKING:
    from credprov.kubelet.node import RuntimeFactory

_STATUS = {
    "pulled": "ready, pulled",
    "present": "ready, already present",
}
#: The kubelet's image errors (the container's waiting reason); others print "error".
_IMAGE_ERRORS = (
    "ErrImagePull",
    "ErrImageNeverPull",
    "InvalidImageName",
    "ImageInspectError",
    "RegistryUnavailable",
)
_KIND_LABEL = {
    "imageVolume": "image volume",
    "initContainer": "init container",
    "container": "container",
    "ephemeralContainer": "ephemeral container",
}


_DESCRIPTION = (
    "For every image volume and container of POD.yaml (or, with --objects, of the pod "
    "NS/NAME of that cluster, with pull secrets and KEP-4412 service-account tokens obtained "
    "as its node would: through the Node authorizer, NodeRestriction and RBAC) decide, as "
    "the kubelet does with KubeletEnsureSecretPulledImages on, whether its image may be used "
    "as present, must be pulled (through the CRI runtime at --cri, with the pod's pull "
    "secrets, the node's docker config and the credential provider plugins) or is refused; "
    "keep the kubelet's pull records under --root-dir/image_manager; print the events the "
    "kubelet would record. Exit 0 when every image is ready, 1 otherwise."
)


def add_parser(sub: Any) -> None:
    """Add ``ensure-image`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "ensure-image",
        help="run the kubelet's image path for a pod against a real CRI runtime (KEP-2535)",
        description=_DESCRIPTION,
    )
    opts.CRI.add(p, required=True)
    opts.ROOT_DIR.add(p, required=True)
    opts.POD.add(p, required=True, note="or a Pod file, YAML or JSON, without --objects")
    opts.PULL_SECRET.add(
        p, aliases=("--secrets",), note="the pod's imagePullSecrets are looked up among them"
    )
    opts.OBJECTS.add(p)
    opts.NODE.add(p, note="default: the pod's spec.nodeName")
    for option in (opts.CONFIG, opts.BIN_DIR, opts.NODE_DOCKER_CONFIG):
        option.add(p)
    p.add_argument(
        "--policy",
        default="NeverVerifyPreloadedImages",
        metavar="NAME",
        help="imagePullCredentialsVerificationPolicy: NeverVerify, "
        "NeverVerifyPreloadedImages (default), NeverVerifyAllowlistedImages or AlwaysVerify",
    )
    p.add_argument(
        "--allowlist",
        action="append",
        default=[],
        metavar="PATTERN",
        help="preloadedImagesVerificationAllowlist entry (with NeverVerifyAllowlistedImages); "
        "repeatable",
    )
    opts.PLUGIN_TIMEOUT.add(p)
    opts.PULL_TIMEOUT.add(p)
    p.add_argument(
        "--verify-image-ref",
        action="store_true",
        help="beyond the kubelet: after a pull, record it under the ref ImageStatus reports "
        "if PullImage answered another one (kubernetes#137024)",
    )
    opts.METRICS_OUT.add(p)
    opts.add_common(p, opts.FEATURE_GATES, *opts.GO_BEHAVIOUR)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``credprov ensure-image`` against the CRI endpoint of ``--cri``."""
    return execute(args)


def execute(args: argparse.Namespace, runtime_factory: RuntimeFactory | None = None) -> int:
    """Run the command; ``runtime_factory(cri_endpoint)`` opens the runtime (default: the
    CRI client). Returns the exit status.

    Raises:
        credprov.errors.CredprovError: bad arguments or files, an unreachable runtime (one
            line each).
    """
    from credprov.kubelet import node as node_mod
    from credprov.pullmanager.metrics import PullManagerMetrics

    node_mod.validate_policy(args.policy, args.allowlist)
    node_mod.parse_cri_endpoint(args.cri)
    root = node_mod.check_root(args.root_dir)
    if bool(args.config) != bool(args.bin_dir):
        raise CLIError("--config and --bin-dir go together: give both or neither")
    pod, as_pod, engine, secrets, missing = _pod_and_credentials(args)
    metrics = PullManagerMetrics()
    with node_mod.opened_runtime(
        args.cri, root, runtime_factory, pull_timeout=args.pull_timeout / 1e9
    ) as runtime:
        node = node_mod.KubeletNode(
            node_mod.PullFailuresAsErrors(runtime),
            root,
            args.policy,
            args.allowlist,
            credentials=engine,
            on_provider_error=node_mod.ProviderErrors(),
            metrics=metrics,
            verify_image_ref=args.verify_image_ref,
            # Another ensure-image, or a daemon, may write the same root at the same time.
            shared_root=True,
        )
        report = node.ensure_pod(pod, secrets, missing)
        if as_pod is not None:
            _add_as_pod(report, as_pod)
    if args.metrics_out:
        write_metrics(args.metrics_out, metrics.exposition())
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(report)
    else:
        _print_text(report)
    if not report["ready"]:
        not_ready = sum(1 for c in report["containers"] if not c["ready"])
        total = len(report["containers"])
        print(f"credprov: {not_ready} of {total} images not ready", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _pod_and_credentials(args: argparse.Namespace) -> tuple[Any, Any, Any, Any, Any]:
    """The pod, the ``--objects`` view of it (or None), the credential engine, the pull
    secrets and the names of missing ones; prints the kubelet's warning line for each
    pull secret it could not retrieve (the pod event comes only when a pull then fails)."""
    from credprov.credentialprovider.engine import NodeSettings, node_engine
    from credprov.kubelet.podspec import load_pod, missing_secret_warning, select_pull_secrets

    gates = feature_gates(args)
    as_pod = None
    if args.objects:
        as_pod, pod = _pod_from_objects(args, gates)
        secrets, missing = list(as_pod.secrets), list(as_pod.missing_secrets)
        warnings = list(as_pod.warnings)
    else:
        if args.node:
            raise CLIError("--node needs --objects (the cluster the node belongs to)")
        pod = load_pod(args.pod)
    settings = NodeSettings(
        config=args.config or None,
        bin_dir=args.bin_dir if args.config else None,
        node_docker_config=args.node_docker_config,
        feature_gates=gates,
        plugin_timeout=args.plugin_timeout,
        service_accounts=as_pod.service_accounts if as_pod is not None else None,
    )
    engine = node_engine(settings)
    if as_pod is None:
        from credprov.credentialprovider.objects import load_pull_secrets

        secrets, missing = select_pull_secrets(pod, load_pull_secrets(args.pull_secret))
        warnings = [missing_secret_warning(pod, name) for name in missing]
    for warning in warnings:
        print(f"credprov: warning: {warning}", file=sys.stderr)
    return pod, as_pod, engine, secrets, missing


def _pod_from_objects(args: argparse.Namespace, gates: Any) -> tuple[Any, Any]:
    """``--objects`` + ``--pod NS/NAME``: the pod as its node sees the cluster, and its
    checked spec (pull policies defaulted; the service account as stored)."""
    import dataclasses

    from credprov.kubelet.aspod import load_as_pod
    from credprov.kubelet.podspec import parse_pod

    if args.pull_secret:
        raise CLIError(
            "--pull-secret cannot be combined with --objects: the pod's imagePullSecrets are "
            "read from --objects through the Node authorizer"
        )
    as_pod = load_as_pod(args.objects, args.pod, args.node, gates)
    pod = parse_pod(as_pod.pod, f"pod {as_pod.namespace}/{as_pod.name} in {args.objects}")
    # parse_pod defaults a missing name to "default" as ServiceAccount admission would; the
    # objects file is what the API server stored, and the graph reads it as it is.
    pod = dataclasses.replace(
        pod, namespace=as_pod.namespace, service_account_name=as_pod.service_account_name
    )
    return as_pod, pod


def _add_as_pod(report: dict[str, Any], as_pod: Any) -> None:
    """The node, warnings, tokens and authorizations of an ``--objects`` run."""
    extra = as_pod.to_dict()
    report["pod"] = {**report["pod"], **extra.pop("pod")}
    report.update(extra)


def _print_text(report: dict[str, Any]) -> None:
    from credprov.cmdoptions import one_line

    pod = report["pod"]
    on_node = f" on node {report['node']}" if "node" in report else ""
    print(f"pod {pod['namespace']}/{pod['name']}{on_node} (policy {report['policy']})")
    for c in report["containers"]:
        if c["ready"]:
            status = f"{_STATUS[c['decision']]} {c['imageRef']}"
        else:
            status = f"not ready, {c['error'] if c['error'] in _IMAGE_ERRORS else 'error'}"
        print(
            f"{_KIND_LABEL[c['type']]} {c['name']}: {c['image']} ({c['imagePullPolicy']}): {status}"
        )
        for e in c["events"]:
            print(f"  {e['type']}  {e['reason']}  {e['message']}")
        if not c["ready"] and c["error"] not in _IMAGE_ERRORS:
            print(f"  error: {one_line(c['message'] or c['error'])}")
        for pe in c.get("providerErrors") or ():
            print(f"  provider {pe['provider']}: error: {one_line(pe['error'])}")
        if c["attempts"]:
            tried = ", ".join(
                f"{a['credential']} ({'ok' if a['error'] is None else 'failed'})"
                for a in c["attempts"]
            )
            print(f"  credentials tried: {tried}")
    for e in report["podEvents"]:
        # Recorded on the pod after its pulls (FailedToRetrieveImagePullSecret, 1.37+).
        print(f"pod {pod['namespace']}/{pod['name']}:")
        print(f"  {e['type']}  {e['reason']}  {e['message']}")
    ready = sum(1 for c in report["containers"] if c["ready"])
    print(f"{ready}/{len(report['containers'])} images ready")
