"""``credprov get-credentials``: the credentials the kubelet would try for each image."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from credprov import cmdoptions as opts
from credprov.cli._output import secret, write_metrics
from credprov.cli.main import CLIError, feature_gates, warn
from credprov.cmdoptions import one_line, print_json
from credprov.errors import EXIT_FAILURE, EXIT_OK


def add_parser(sub: Any) -> None:
    """Add ``get-credentials`` to ``credprov``'s subcommands."""
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
    opts.CONFIG.add(p, required=True)
    opts.BIN_DIR.add(p, required=True)
    opts.PULL_SECRET.add(
        p,
        note="Secrets of other types (and a docker config.json, which belongs in "
        "--node-docker-config) are ignored as the kubelet ignores them, with a warning",
    )
    for option in (opts.NODE_DOCKER_CONFIG, opts.OBJECTS, opts.POD):
        option.add(p)
    opts.NODE.add(p, note="default: the pod's spec.nodeName")
    p.add_argument(
        "--parallel", type=_positive_int, default=1, metavar="N", help="resolve N images at once"
    )
    for option in (opts.PLUGIN_TIMEOUT, opts.SHOW_SECRETS, opts.METRICS_OUT):
        option.add(p)
    opts.add_common(p, opts.FEATURE_GATES, *opts.GO_BEHAVIOUR)
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
    """One image's resolution as its ``-o json`` object (passwords redacted unless
    ``show_secrets``)."""
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
    """Resolve the images' credentials and print them; exit 1 when one failed."""
    from credprov.credentialprovider.engine import NodeSettings, node_engine
    from credprov.credentialprovider.objects import load_pull_secrets

    gates = feature_gates(args)
    as_pod = _as_pod(args, gates) if (args.objects or args.pod or args.node) else None
    if not args.images and as_pod is None:
        raise CLIError("give at least one IMAGE (or --objects and --pod)")
    images: list[str] = args.images or (as_pod.images if as_pod is not None else [])
    if not images and as_pod is not None:
        raise CLIError(f"pod {as_pod.namespace}/{as_pod.name} has no images: give IMAGE")
    secrets = (
        as_pod.secrets
        if as_pod is not None
        else load_pull_secrets(args.pull_secret, on_ignored=warn)
    )
    settings = NodeSettings(
        config=args.config,
        bin_dir=args.bin_dir,
        node_docker_config=args.node_docker_config,
        pull_secrets=secrets,
        feature_gates=gates,
        plugin_timeout=args.plugin_timeout,
        service_accounts=as_pod.service_accounts if as_pod is not None else None,
    )
    engine = node_engine(settings)
    providers = engine.providers
    assert providers is not None  # --config is required
    pod_info = as_pod.info if as_pod is not None else None
    if as_pod is not None:
        for warning in as_pod.warnings:
            print(f"credprov: warning: {warning}", file=sys.stderr)

    def resolve(image: str) -> Any:
        return engine.resolve(image, pod=pod_info)

    if args.parallel > 1 and len(images) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            results = list(pool.map(resolve, images))
    else:
        results = [resolve(image) for image in images]
    if args.metrics_out:
        write_metrics(args.metrics_out, providers.metrics.exposition())
    failed = any(r.failed for r in results)
    if args.output == "json":
        document: dict[str, Any] = {
            "images": [resolution_to_dict(r, args.show_secrets) for r in results],
            "executions": providers.executions(),
        }
        if as_pod is not None:
            document.update(as_pod.to_dict())
        print_json(document)
    else:
        _print_text(args, results, as_pod)
    return EXIT_FAILURE if failed else EXIT_OK


def _print_text(args: argparse.Namespace, results: list[Any], as_pod: Any) -> None:
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
            print(f"  provider {p['name']}: {_provider_status(p)}")
    if any(r.failed for r in results):
        print("credprov: some images could not be resolved (see above)", file=sys.stderr)


def _provider_status(p: dict[str, Any]) -> str:
    if not p["matched"]:
        return "not matched"
    if p["error"]:
        return f"error: {one_line(p['error'])}"
    if p.get("skipped"):
        return f"skipped: {p['skipped']}"
    how = "cached" if p["cached"] else "executed" if p["executed"] else "shared a concurrent run"
    status = f"{how}, cacheKeyType={p['cacheKeyType']} cacheDuration={p['cacheDuration']}"
    sa = p.get("serviceAccount")
    if sa:
        status += f" serviceAccount={sa['namespace']}/{sa['name']} (uid {sa['uid']})"
    return status


def _as_pod(args: argparse.Namespace, gates: Any) -> Any:
    """The ``--objects/--pod/--node`` pod (:class:`credprov.kubelet.aspod.AsPod`)."""
    from credprov.kubelet.aspod import load_as_pod

    if not args.objects or not args.pod:
        raise CLIError("--objects and --pod go together (--node needs both)")
    if args.pull_secret:
        raise CLIError(
            "--pull-secret cannot be combined with --pod: the pod's imagePullSecrets are "
            "read from --objects through the Node authorizer"
        )
    return load_as_pod(args.objects, args.pod, args.node, gates)
