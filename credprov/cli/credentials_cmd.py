"""``credprov get-credentials``: the credentials the kubelet would try for each image."""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from credprov.cli._output import print_json, secret, write_atomic
from credprov.cli.config_cmd import add_feature_gates, feature_gates
from credprov.cli.main import add_common


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
            "or a matching provider failed."
        ),
    )
    p.add_argument("images", nargs="+", metavar="IMAGE")
    p.add_argument("--config", required=True, metavar="PATH", help="provider config file or dir")
    p.add_argument("--bin-dir", required=True, metavar="DIR", help="plugin binary directory")
    p.add_argument(
        "--pull-secret",
        action="append",
        default=[],
        metavar="FILE",
        help="a Secret (or List of Secrets) of type kubernetes.io/dockerconfigjson or "
        "kubernetes.io/dockercfg, YAML or JSON; repeatable",
    )
    p.add_argument(
        "--node-docker-config",
        metavar="FILE",
        help="the node's docker config.json (or legacy .dockercfg)",
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
    add_feature_gates(p)
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument(
        "--show-secrets", action="store_true", help="print passwords instead of <redacted>"
    )
    p.add_argument(
        "--metrics-out", metavar="FILE", help="write the Prometheus text exposition here"
    )
    add_common(p)
    p.set_defaults(run=run)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def resolution_to_dict(res: Any, show_secrets: bool) -> dict[str, Any]:
    from credprov.durations import format_duration

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
            }
            for p in res.providers
        ],
    }


def run(args: argparse.Namespace) -> int:
    from credprov.cli.main import CLIError, one_line
    from credprov.durations import parse_duration
    from credprov.engine import Engine
    from credprov.keyring import KeyringError
    from credprov.objects import (
        ObjectsError,
        load_docker_config_keyring,
        load_pull_secrets,
    )
    from credprov.plugin.registry import register_credential_provider_plugins

    timeout = parse_duration(args.plugin_timeout)
    if timeout <= 0:
        raise CLIError("--plugin-timeout must be positive")
    gates = feature_gates(args)
    try:
        secrets = load_pull_secrets(args.pull_secret)
        node_keyring = load_docker_config_keyring(args.node_docker_config)
    except ObjectsError as exc:
        raise CLIError(str(exc)) from None
    providers = register_credential_provider_plugins(
        args.config, args.bin_dir, gates, plugin_timeout=timeout
    )
    engine = Engine(providers, node_keyring)

    def resolve(image: str) -> Any:
        try:
            return engine.resolve(image, secrets)
        except KeyringError as exc:
            raise CLIError(str(exc)) from None

    if args.parallel > 1 and len(args.images) > 1:
        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            results = list(pool.map(resolve, args.images))
    else:
        results = [resolve(image) for image in args.images]

    if args.metrics_out:
        try:
            write_atomic(args.metrics_out, providers.metrics.exposition())
        except OSError as exc:
            raise CLIError(f"cannot write {args.metrics_out}: {exc.strerror}") from None

    failed = any(r.failed for r in results)
    if args.output == "json":
        print_json(
            {
                "images": [resolution_to_dict(r, args.show_secrets) for r in results],
                "executions": providers.executions(),
            }
        )
        return 1 if failed else 0

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
                how = "cached" if p["cached"] else "executed"
                status = (
                    f"{how}, cacheKeyType={p['cacheKeyType']} cacheDuration={p['cacheDuration']}"
                )
            print(f"  provider {p['name']}: {status}")
    if failed:
        print("credprov: some images could not be resolved (see above)", file=sys.stderr)
    return 1 if failed else 0
