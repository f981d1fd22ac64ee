"""``credprov explain``: which ``matchImages`` entry matches an image, and why others don't."""

from __future__ import annotations

import argparse

from credprov import cmdoptions as opts
from credprov.cli.main import feature_gates
from credprov.cmdoptions import print_json
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
            "(port, number of host labels, path prefix, a label). No plugin is run."
        ),
    )
    p.add_argument("image", metavar="IMAGE")
    opts.CONFIG.add(p, required=True)
    opts.add_common(p, opts.FEATURE_GATES, opts.GO_VERSION)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Explain the match of ``args.image``; the exit status."""
    from credprov.cli.main import CLIError
    from credprov.credentialprovider.images import InvalidImageError, parse_image_name
    from credprov.credentialprovider.matching import explain_match
    from credprov.credentialprovider.plugin.config import load_config

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
    if args.output == "json":
        print_json({"image": args.image, "repo": repo, "providers": providers})
        return EXIT_OK
    print(f"image {args.image} is requested from plugins as {repo}")
    for prov in providers:
        verdict = "MATCHES" if prov["matched"] else "does not match"
        print(f"provider {prov['name']}: {verdict}")
        for pat in prov["matchImages"]:
            mark = "+" if pat["matched"] else "-"
            print(f"  {mark} {pat['pattern']}: {pat['reason']}")
    if not any(p["matched"] for p in providers):
        print("no provider matches: the kubelet runs no plugin for this image")
    return EXIT_OK
