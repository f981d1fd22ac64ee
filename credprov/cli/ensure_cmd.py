"""``credprov ensure-image``: the kubelet's image path for every container of a pod.

(Over 300 lines because of its fourteen options' help text and the text report; the
work is :meth:`credprov.kubelet.node.KubeletNode.ensure_pod`.)

For each image volume (``spec.volumes[].image``) and each init, regular and ephemeral
container of ``--pod`` (in the order the kubelet pulls them) run ``EnsureImageExists`` (:mod:`credprov.kubelet.ensure`) against a real
container runtime over CRI, with the ``KubeletEnsureSecretPulledImages`` pull manager
keeping its records under ``--root/image_manager`` as the kubelet does:

* credentials come from the pod's ``imagePullSecrets`` (looked up by name in the pod's
  namespace among the ``--secrets`` objects), then the node's docker config, then the
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

from credprov.cli.main import CLIError, add_common, feature_gates

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


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "ensure-image",
        help="run the kubelet's image path for a pod against a real CRI runtime (KEP-2535)",
        description=(
            "For every image volume and container of POD.yaml (or, with --objects, of the pod "
            "NS/NAME of that "
            "cluster, with pull secrets and KEP-4412 service-account tokens obtained as its "
            "node would: through the Node authorizer, NodeRestriction and RBAC) decide, as "
            "the kubelet does with "
            "KubeletEnsureSecretPulledImages on, whether its image may be used as present, "
            "must be pulled (through the CRI runtime at --cri, with the pod's pull secrets, "
            "the node's docker config and the credential provider plugins) or is refused; "
            "keep the kubelet's pull records under --root/image_manager; print the events "
            "the kubelet would record. Exit 0 when every image is ready, 1 otherwise."
        ),
    )
    p.add_argument(
        "--cri",
        required=True,
        metavar="unix:///PATH",
        help="the runtime's CRI endpoint (e.g. unix:///run/containerd/containerd.sock)",
    )
    p.add_argument(
        "--root",
        required=True,
        metavar="DIR",
        help="the kubelet root directory (records in DIR/image_manager); must exist",
    )
    p.add_argument(
        "--pod",
        required=True,
        metavar="POD.yaml|NS/NAME",
        help="one Pod, YAML or JSON; with --objects, NAMESPACE/NAME of a pod in that file",
    )
    p.add_argument(
        "--secrets",
        action="append",
        default=[],
        metavar="FILE",
        help="Secret objects (or a List) the pod's imagePullSecrets may name; repeatable "
        "(not with --objects)",
    )
    p.add_argument(
        "--objects",
        metavar="FILE",
        help="the cluster's objects (kubectl get -o yaml/json List, or multi-document YAML): "
        "run as the pod's node would, reading pull secrets, service accounts and tokens "
        "through the Node authorizer, NodeRestriction and RBAC (KEP-4412)",
    )
    p.add_argument(
        "--node",
        metavar="NAME",
        help="with --objects: the node asking (default: the pod's spec.nodeName)",
    )
    p.add_argument("--config", metavar="PATH", help="CredentialProviderConfig file or dir")
    p.add_argument("--bin-dir", metavar="DIR", help="credential provider plugin directory")
    p.add_argument("--node-docker-config", metavar="FILE", help="the node's docker config.json")
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
    p.add_argument(
        "--plugin-timeout",
        default="1m",
        metavar="DURATION",
        help="plugin deadline, a Go duration (kubelet: 1m)",
    )
    p.add_argument(
        "--pull-timeout",
        default="5m",
        metavar="DURATION",
        help="deadline of one CRI PullImage, a Go duration (default 5m)",
    )
    p.add_argument(
        "--verify-image-ref",
        action="store_true",
        help="beyond the kubelet: after a pull, record it under the ref ImageStatus reports "
        "if PullImage answered another one (kubernetes#137024)",
    )
    p.add_argument(
        "--metrics-out", metavar="FILE", help="write the kubelet_image_manager_* metrics here"
    )
    add_common(p, output=True, feature_gates=True, go_version=True)
    p.set_defaults(run=run)


def _duration_seconds(value: str, flag: str) -> float:
    from credprov._go.durations import DurationError, parse_duration

    try:
        ns = parse_duration(value)
    except DurationError as exc:
        raise CLIError(f"{flag}: {exc}") from None
    if ns <= 0:
        raise CLIError(f"{flag} must be positive")
    return ns / 1e9


def run(args: argparse.Namespace) -> int:
    """``credprov ensure-image`` against the CRI endpoint of ``--cri``."""
    return execute(args)


def execute(args: argparse.Namespace, runtime_factory: RuntimeFactory | None = None) -> int:
    """Run the command; ``runtime_factory(cri_endpoint)`` opens the runtime (default: the
    CRI client). Returns the exit status.

    Raises:
        CLIError: bad arguments or files, an unreachable runtime (one line each).
    """
    from credprov.kubelet import node as node_mod
    from credprov.kubelet.podspec import (
        PodSpecError,
        load_pod,
        missing_secret_warning,
        select_pull_secrets,
    )

    node_mod.validate_policy(args.policy, args.allowlist)
    node_mod.parse_cri_endpoint(args.cri)
    root = node_mod.check_root(args.root)
    if bool(args.config) != bool(args.bin_dir):
        raise CLIError("--config and --bin-dir go together: give both or neither")
    plugin_timeout = _duration_seconds(args.plugin_timeout, "--plugin-timeout")
    pull_timeout = _duration_seconds(args.pull_timeout, "--pull-timeout")
    gates = feature_gates(args)
    as_pod = None
    if args.objects:
        as_pod, pod = _pod_from_objects(args, gates)
        secrets, missing = list(as_pod.secrets), list(as_pod.missing_secrets)
    else:
        if args.node:
            raise CLIError("--node needs --objects (the cluster the node belongs to)")
        try:
            pod = load_pod(args.pod)
        except PodSpecError as exc:
            raise CLIError(str(exc)) from None
    engine = node_mod.node_engine(
        args.node_docker_config,
        (args.config, args.bin_dir) if args.config else None,
        gates,
        plugin_timeout=int(plugin_timeout * 1e9),
        as_pod=as_pod,
    )
    if as_pod is None:
        secrets, missing = select_pull_secrets(pod, _load_secrets(args.secrets))
        warnings = [missing_secret_warning(pod, name) for name in missing]
    else:
        warnings = list(as_pod.warnings)
    # The kubelet's log line for each pull secret it could not retrieve, always; the pod
    # event (FailedToRetrieveImagePullSecret) only when a pull then fails.
    for warning in warnings:
        print(f"credprov: warning: {warning}", file=sys.stderr)

    from credprov.pullmanager.metrics import PullManagerMetrics

    metrics = PullManagerMetrics()
    with node_mod.opened_runtime(
        args.cri, root, runtime_factory, pull_timeout=pull_timeout
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
        from credprov.base.fileio import write_atomic

        try:
            write_atomic(args.metrics_out, metrics.exposition())
        except OSError as exc:
            raise CLIError(f"cannot write {args.metrics_out}: {exc.strerror}") from None

    if args.output == "json":
        from credprov.cli._output import print_json

        print_json(report)
    else:
        _print_text(report)
    if not report["ready"]:
        not_ready = sum(1 for c in report["containers"] if not c["ready"])
        total = len(report["containers"])
        print(f"credprov: {not_ready} of {total} images not ready", file=sys.stderr)
        return 1
    return 0


def _load_secrets(paths: list[str]) -> list[dict[str, Any]]:
    from credprov.credentialprovider.objects import ObjectsError, load_pull_secrets

    try:
        return load_pull_secrets(paths)
    except ObjectsError as exc:
        raise CLIError(str(exc)) from None


def _pod_from_objects(args: argparse.Namespace, gates: Any) -> tuple[Any, Any]:
    """``--objects`` + ``--pod NS/NAME``: the pod as its node sees the cluster, and its
    checked spec (pull policies defaulted; the service account as stored)."""
    import dataclasses

    from credprov.kubelet.aspod import load_as_pod
    from credprov.kubelet.podspec import PodSpecError, parse_pod

    if args.secrets:
        raise CLIError(
            "--secrets cannot be combined with --objects: the pod's imagePullSecrets are "
            "read from --objects through the Node authorizer"
        )
    as_pod = load_as_pod(args.objects, args.pod, args.node, gates)
    try:
        pod = parse_pod(as_pod.pod, f"pod {as_pod.namespace}/{as_pod.name} in {args.objects}")
    except PodSpecError as exc:
        raise CLIError(str(exc)) from None
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
    from credprov.cli.main import one_line

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
