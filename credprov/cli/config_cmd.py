"""``credprov config validate``: the kubelet's config checks, offline."""

from __future__ import annotations

import argparse
import sys

from credprov import cmdoptions as opts
from credprov.cli._output import REDACTED
from credprov.cli.main import feature_gates
from credprov.cmdoptions import print_json
from credprov.errors import EXIT_OK

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any


def add_parser(sub: Any) -> None:
    """Add ``config validate`` to ``credprov``'s subcommands."""
    config = sub.add_parser(
        "config",
        help="work with CredentialProviderConfig files",
        description="Work with kubelet CredentialProviderConfig files.",
    )
    config_sub = config.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    config_sub.required = True
    validate = config_sub.add_parser(
        "validate",
        help="decode and validate a config file or directory as the kubelet does",
        description=(
            "Decode and validate a CredentialProviderConfig file, or a directory of "
            "*.json/*.yaml/*.yml files, with the kubelet's rules. Exit 0 and a summary "
            "when valid; exit 1 and the kubelet's error text on stderr when not. Entries "
            "the kubelet accepts but that can never match (a '?' that starts a URL query, "
            "a scheme, ...) are reported as warnings on stderr."
        ),
    )
    validate.add_argument(
        "path", metavar="PATH", help="config file or directory; '-' reads one from stdin"
    )
    opts.add_common(validate, opts.FEATURE_GATES, *opts.GO_BEHAVIOUR)
    validate.set_defaults(run=run_validate)


def provider_summary(provider: Any) -> dict[str, Any]:
    """One provider as ``-o json`` shows it: ``env`` values redacted."""
    from credprov.api.config import provider_to_dict

    out = provider_to_dict(provider)
    if "env" in out:  # env values often hold keys; show names only
        out["env"] = [{"name": e["name"], "value": REDACTED} for e in out["env"]]
    return out


def run_validate(args: argparse.Namespace) -> int:
    """Validate the config as the kubelet does; exit 1 (the kubelet's text) when invalid."""
    from credprov.credentialprovider.plugin.config import ConfigError, load_config

    gates = feature_gates(args)
    try:
        config, config_hash = load_config(args.path, gates, allow_stdin=True)
    except ConfigError as exc:
        if args.output == "json":
            print_json({"valid": False, "error": str(exc)})
        raise  # printed, with its hint, by the CLI's one error handler: exit 1
    from credprov.credentialprovider.lint import lint_config

    providers = [provider_summary(p) for p in config.providers]
    warnings = lint_config(config)
    if args.output == "json":
        print_json(
            {"valid": True, "hash": config_hash, "providers": providers, "warnings": warnings}
        )
        return EXIT_OK
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"valid: {len(providers)} provider(s), hash {config_hash}")
    for p in providers:
        print(
            f"  {p['name']} ({p['apiVersion']}, defaultCacheDuration {p['defaultCacheDuration']})"
        )
        for image in p["matchImages"]:
            print(f"    matchImages: {image}")
        if "tokenAttributes" in p:
            ta = p["tokenAttributes"]
            print(
                f"    service account token: audience {ta['serviceAccountTokenAudience']}, "
                f"cacheType {ta['cacheType']}, requireServiceAccount "
                f"{str(ta['requireServiceAccount']).lower()}"
            )
    return EXIT_OK
