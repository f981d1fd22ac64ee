"""``credprov explain``: which ``matchImages`` entry matches an image, and why others don't."""

from __future__ import annotations

import argparse

from credprov import cmdoptions as opts
from credprov.cli.main import feature_gates
from credprov.cmdoptions import print_json, print_line
from credprov.errors import EXIT_OK

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any


def add_parser(sub: Any) -> None:
    """Add ``explain`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "explain",
        help="show which providers match an image, and why the others don't",
        description=(
            "Normalise IMAGE as the kubelet does and check it against every provider's "
            "matchImages, in config order. For each pattern that does not match, say why "
            "(port, number of host labels, path prefix, a label). No plugin is run. With "
            "--containerd-config-path or --registries-conf, also say which hosts the runtime "
            "contacts (registry mirrors) and which credentials reach each (docs/mirrors.md)."
        ),
    )
    p.add_argument("image", metavar="IMAGE")
    opts.CONFIG.add(p, required=True)
    opts.add_common(
        p,
        opts.FEATURE_GATES,
        *opts.GO_BEHAVIOUR,
        opts.CONTAINERD_CONFIG_PATH,
        opts.REGISTRIES_CONF,
        opts.NODE_DOCKER_CONFIG,
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Explain the match of ``args.image``; the exit status."""
    from credprov.cli.main import CLIError
    from credprov.credentialprovider.plugin.config import load_config
    from credprov.imageauth.images import InvalidImageError, parse_image_name
    from credprov.imageauth.matching import explain_match

    config, _ = load_config(args.config, feature_gates(args))
    try:
        repo = parse_image_name(args.image)
    except InvalidImageError as exc:
        raise CLIError(f"invalid image {args.image!r}: {exc}") from None
    providers: list[dict[str, Any]] = []
    for provider in config.providers:
        patterns: list[dict[str, Any]] = []
        for pattern in provider.match_images:
            explanation = explain_match(pattern, repo)
            patterns.append(
                {"pattern": pattern, "matched": explanation.matched, "reason": explanation.reason}
            )
        providers.append(
            {
                "name": provider.name,
                "matched": any(p["matched"] for p in patterns),
                "matchImages": patterns,
            }
        )
    runtimes = _runtime_routes(args, config.providers)
    if args.output == "json":
        doc: dict[str, Any] = {"image": args.image, "repo": repo, "providers": providers}
        if runtimes is not None:
            doc["runtimes"] = [
                {**r.to_dict(), "credentials": [v.to_dict() for v in vs]} for r, vs in runtimes
            ]
        print_json(doc)
        return EXIT_OK
    print_line(f"image {args.image} is requested from plugins as {repo}")
    for prov in providers:
        verdict = "MATCHES" if prov["matched"] else "does not match"
        print_line(f"provider {prov['name']}: {verdict}")
        for pat in prov["matchImages"]:
            mark = "+" if pat["matched"] else "-"
            print_line(f"  {mark} {pat['pattern']}: {pat['reason']}")
    if not any(p["matched"] for p in providers):
        print_line("no provider matches: the kubelet runs no plugin for this image")
    for route, verdicts in runtimes or []:
        _print_route(route, verdicts)
    return EXIT_OK


def _runtime_routes(args: argparse.Namespace, providers: Any) -> list[tuple[Any, list[Any]]] | None:
    """Each runtime's route for the image with the credential verdicts; None without
    mirror options (the output is then what it always was)."""
    if args.containerd_config_path is None and args.registries_conf is None:
        return None
    from credprov.base.rootfs import NodeRoot
    from credprov.credentialprovider.objects import load_docker_config_keyring
    from credprov.cri.mirrors import credential_sources, judge_credentials, load_runtime_mirrors

    keyring = (
        load_docker_config_keyring(args.node_docker_config) if args.node_docker_config else None
    )
    sources = credential_sources(providers, keyring)
    runtimes = load_runtime_mirrors(
        NodeRoot("/"),
        containerd_config_path=_abs(args.containerd_config_path),
        registries_conf=_abs(args.registries_conf),
    )
    out = []
    for runtime in runtimes:
        route = runtime.route(args.image)
        out.append((route, judge_credentials(route, sources)))
    return out


def _abs(path: str | None) -> str | None:
    import os

    return None if path is None else os.path.abspath(path)


def _print_route(route: Any, verdicts: list[Any]) -> None:
    """The runtime section: where the pull goes and what credentials reach each host."""
    source = f" ({route.source})" if route.source else " (no mirror configured for it)"
    print_line(f"runtime {route.runtime}{source}: the runtime will contact {route.describe()}")
    handed = verdicts[0].handed if verdicts else ()
    if handed:
        print_line(
            f"  the kubelet hands the credentials it finds for {route.repository} "
            f"({', '.join(handed)}); the runtime offers them to every host it contacts"
        )
    else:
        print_line(
            f"  the kubelet hands no credentials: nothing it knows matches {route.repository}"
        )
    for host, why in route.skipped:
        print_line(f"  - {host.host} ({host.role}): not contacted: {why}")
    for note in route.notes:
        print_line(f"  note: {note}")
    for verdict in verdicts:
        mark = "+" if verdict.ok else "!"
        print_line(f"  {mark} {verdict.contact.host.host}: {verdict.message}")
