"""``credprov get-credentials``: the credentials the kubelet would try for each image."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from credprov.base.fileio import write_atomic
from credprov.cli._output import print_json, secret
from credprov.cli.main import add_common, feature_gates


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "get-credentials",
        help="resolve registry credentials for images as the kubelet would",
        description=(
            "Resolve the registry credentials for each IMAGE exactly as the kubelet does: "
            "pod pull secrets first, then the node's docker config, then every matching "
            "credential provider plugin (run from --bin-dir as the kubelet runs it). All "
            "images share one provider set: one cache and one singleflight group. "
            "Passwords are redacted unless --show-secrets. Exit 1 when an image is invalid "
            "or a matching provider failed. With --objects and --pod, resolve as that pod on "
            "its node would: the pod's imagePullSecrets are read through the Node authorizer, "
            "and providers with tokenAttributes get a service-account token for the pod "
            "(KEP-4412) only when the Node authorizer and NodeRestriction allow the token "
            "request; IMAGE defaults to every image of the pod (image volumes, then init, "
            "regular and ephemeral containers)."
        ),
    )
    p.add_argument("images", nargs="*", metavar="IMAGE")
    p.add_argument("--config", required=True, metavar="PATH", help="provider config file or dir")
    p.add_argument("--bin-dir", required=True, metavar="DIR", help="plugin binary directory")
    p.add_argument(
        "--pull-secret",
        action="append",
        default=[],
        metavar="FILE",
        help="a Secret (or List of Secrets) of type kubernetes.io/dockerconfigjson or "
        "kubernetes.io/dockercfg, YAML or JSON; repeatable. Other Secrets (and a docker "
        "config.json, which belongs in --node-docker-config) are ignored as the kubelet "
        "ignores them, with a warning",
    )
    p.add_argument(
        "--node-docker-config",
        metavar="FILE",
        help="the node's docker config.json (or legacy .dockercfg)",
    )
    p.add_argument(
        "--objects",
        metavar="FILE",
        help="the cluster's objects (kubectl get -o json/yaml List, or multi-document YAML): "
        "pods, secrets, service accounts, nodes, RBAC; needs --pod",
    )
    p.add_argument(
        "--pod",
        metavar="NS/NAME",
        help="resolve as this pod of --objects would (pull secrets and service-account "
        "tokens through the Node authorizer and NodeRestriction)",
    )
    p.add_argument(
        "--node",
        metavar="NAME",
        help="the node asking (default: the pod's spec.nodeName); another node shows what "
        "it would be refused",
    )
    p.add_argument(
        "--parallel", type=_positive_int, default=1, metavar="N", help="resolve N images at once"
    )
    p.add_argument(
        "--plugin-timeout",
        default="1m",
        metavar="DURATION",
        help="plugin deadline, a Go duration (kubelet: 1m)",
    )
    p.add_argument(
        "--show-secrets", action="store_true", help="print passwords instead of <redacted>"
    )
    p.add_argument(
        "--metrics-out", metavar="FILE", help="write the Prometheus text exposition here"
    )
    add_common(p, output=True, feature_gates=True, go_version=True)
    p.set_defaults(run=run)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _service_account(p: Any) -> dict[str, str] | None:
    sa = getattr(p, "service_account", None)
    if sa is None:
        return None
    return {"namespace": sa.namespace, "name": sa.name, "uid": sa.uid}


def resolution_to_dict(res: Any, show_secrets: bool) -> dict[str, Any]:
    from credprov._go.durations import format_duration

    return {
        "image": res.image,
        "repo": res.repo,
        "error": res.error,
        "credentials": [
            {
                "username": c.username,
                "password": secret(c.password, show_secrets),
                "email": c.email,
                "key": c.key,
                "source": c.source_label,
                "credentialHash": c.credential_hash,
            }
            for c in res.credentials
        ],
        "providers": [
            {
                "name": p.name,
                "matched": p.matched,
                "executed": p.executed,
                "cached": p.cached,
                "cacheKeyType": p.cache_key_type,
                "cacheDuration": (
                    format_duration(p.cache_duration) if p.cache_duration is not None else None
                ),
                "error": p.error,
                **({"skipped": p.skipped} if p.skipped else {}),
                **({"serviceAccount": _service_account(p)} if _service_account(p) else {}),
            }
            for p in res.providers
        ],
    }


def run(args: argparse.Namespace) -> int:
    from credprov._go.durations import parse_duration
    from credprov.cli.main import CLIError, one_line, warn
    from credprov.credentialprovider.keyring import KeyringError
    from credprov.credentialprovider.objects import ObjectsError, load_pull_secrets
    from credprov.kubelet.node import node_engine

    timeout = parse_duration(args.plugin_timeout)
    if timeout <= 0:
        raise CLIError("--plugin-timeout must be positive")
    gates = feature_gates(args)
    as_pod = _as_pod(args, gates) if (args.objects or args.pod or args.node) else None
    if not args.images and as_pod is None:
        raise CLIError("give at least one IMAGE (or --objects and --pod)")
    images: list[str] = args.images or (as_pod.images if as_pod is not None else [])
    if not images and as_pod is not None:
        raise CLIError(f"pod {as_pod.namespace}/{as_pod.name} has no images: give IMAGE")
    try:
        secrets = (
            as_pod.secrets
            if as_pod is not None
            else load_pull_secrets(args.pull_secret, on_ignored=warn)
        )
    except ObjectsError as exc:
        raise CLIError(str(exc)) from None
    engine = node_engine(
        args.node_docker_config,
        (args.config, args.bin_dir),
        gates,
        plugin_timeout=timeout,
        as_pod=as_pod,
    )
    providers = engine.providers
    assert providers is not None  # --config is required
    pod_info = as_pod.info if as_pod is not None else None
    if as_pod is not None:
        for warning in as_pod.warnings:
            print(f"credprov: warning: {warning}", file=sys.stderr)

    def resolve(image: str) -> Any:
        try:
            return engine.resolve(image, secrets, pod_info)
        except KeyringError as exc:
            raise CLIError(str(exc)) from None

    if args.parallel > 1 and len(images) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            results = list(pool.map(resolve, images))
    else:
        results = [resolve(image) for image in images]

    if args.metrics_out:
        try:
            write_atomic(args.metrics_out, providers.metrics.exposition())
        except OSError as exc:
            raise CLIError(f"cannot write {args.metrics_out}: {exc.strerror}") from None

    failed = any(r.failed for r in results)
    if args.output == "json":
        document: dict[str, Any] = {
            "images": [resolution_to_dict(r, args.show_secrets) for r in results],
            "executions": providers.executions(),
        }
        if as_pod is not None:
            document.update(as_pod.to_dict())
        print_json(document)
        return 1 if failed else 0

    if as_pod is not None:
        sa = as_pod.service_account_name or "(none)"
        print(
            f"as pod {as_pod.namespace}/{as_pod.name} on node {as_pod.node} (service account {sa})"
        )

    for r in results:
        d = resolution_to_dict(r, args.show_secrets)
        header = r.image if r.repo in (None, r.image) else f"{r.image} -> {r.repo}"
        print(header)
        if r.error:
            print(f"  error: {one_line(r.error)}")
            continue
        if not d["credentials"]:
            print("  no credentials (the kubelet would pull anonymously)")
        for i, c in enumerate(d["credentials"], 1):
            print(
                f"  {i}. {c['key']}: username={c['username']} password={c['password']} "
                f"source={c['source']}"
            )
        for p in d["providers"]:
            if not p["matched"]:
                status = "not matched"
            elif p["error"]:
                status = f"error: {one_line(p['error'])}"
            elif p.get("skipped"):
                status = f"skipped: {p['skipped']}"
            else:
                how = (
                    "cached"
                    if p["cached"]
                    else "executed"
                    if p["executed"]
                    else "shared a concurrent run"
                )
                status = (
                    f"{how}, cacheKeyType={p['cacheKeyType']} cacheDuration={p['cacheDuration']}"
                )
                sa = p.get("serviceAccount")
                if sa:
                    status += f" serviceAccount={sa['namespace']}/{sa['name']} (uid {sa['uid']})"
            print(f"  provider {p['name']}: {status}")
    if failed:
        print("credprov: some images could not be resolved (see above)", file=sys.stderr)
    return 1 if failed else 0


def _as_pod(args: argparse.Namespace, gates: Any) -> Any:
    """The ``--objects/--pod/--node`` pod (:class:`credprov.kubelet.aspod.AsPod`)."""
    from credprov.cli.main import CLIError
    from credprov.kubelet.aspod import load_as_pod

    if not args.objects or not args.pod:
        raise CLIError("--objects and --pod go together (--node needs both)")
    if args.pull_secret:
        raise CLIError(
            "--pull-secret cannot be combined with --pod: the pod's imagePullSecrets are "
            "read from --objects through the Node authorizer"
        )
    return load_as_pod(args.objects, args.pod, args.node, gates)
