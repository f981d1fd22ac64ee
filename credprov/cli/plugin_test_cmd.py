"""``credprov plugin test``: the conformance harness for any plugin binary.

``credprov/cli/plugin_cmd.py`` owns the ``plugin`` group and calls :func:`add_test_parser`
with its subparsers.
The checks, their rules and the text layout (``render_text``) are in
:mod:`credprov.credentialprovider.plugin.conformance`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.cmdoptions import print_json
from credprov.errors import EXIT_FAILURE, EXIT_OK


def add_test_parser(plugin_subparsers: Any) -> argparse.ArgumentParser:
    """Add ``test`` to the ``plugin`` group's subparsers; returns the new parser."""
    p: argparse.ArgumentParser = plugin_subparsers.add_parser(
        "test",
        help="check any plugin binary against the kubelet's expectations",
        description=(
            "Run BINARY as the kubelet would, for every IMAGE in every API version, and check "
            "that its responses are what the kubelet accepts: exit status, strict decoding, "
            "the echoed apiVersion, cacheKeyType, cacheDuration, auth keys that match the "
            "image, and the time taken against the deadline. Then check that it rejects "
            "malformed stdin, closed stdin, an empty image, an unknown apiVersion and a wrong "
            "kind promptly, with a short stderr that does not leak the request's token. "
            "After the first run that overruns its deadline the plugin is not run again: the "
            "remaining cases are reported as SKIP, naming that overrun. "
            "Give at least one --image: there is no sensible default, a plugin serves its "
            "own registries. Passwords are never printed. Exit 1 when any check fails."
        ),
    )
    p.add_argument("binary", metavar="BINARY", help="the plugin executable (a path or a name)")
    opts.IMAGE.add(p, required=True)
    p.add_argument(
        "--api-version",
        dest="api_versions",
        action="append",
        default=[],
        type=_api_version,
        metavar="V",
        help="v1alpha1, v1beta1 or v1 (or the full apiVersion); repeatable; default: all",
    )
    p.add_argument(
        "--arg",
        dest="plugin_args",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument for the plugin, as a provider's args; repeatable (use --arg=-x for "
        "one that starts with a dash)",
    )
    p.add_argument(
        "--env",
        dest="plugin_env",
        action="append",
        default=[],
        type=_name_value,
        metavar="NAME=VALUE",
        help="an environment variable for the plugin, as a provider's env; repeatable",
    )
    opts.PLUGIN_TIMEOUT.add(
        p,
        aliases=("--timeout",),
        note="negative cases use at most 10s; after the first overrun the remaining cases "
        "are skipped",
    )
    token = p.add_mutually_exclusive_group()
    token.add_argument(
        "--service-account-token",
        metavar="TOKEN",
        help="send this token (and --annotation) in every v1 request; visible to other users "
        "in the process list, prefer --service-account-token-file. Without a token, one "
        "extra v1 request carries a dummy JWT",
    )
    token.add_argument(
        "--service-account-token-file",
        metavar="FILE",
        help="read the service-account token from FILE",
    )
    p.add_argument(
        "--annotation",
        dest="annotations",
        action="append",
        default=[],
        type=_name_value,
        metavar="KEY=VALUE",
        help="a service-account annotation sent with the token; repeatable",
    )
    p.set_defaults(run=run)
    opts.add_common(p, *opts.GO_BEHAVIOUR)
    return p


def _api_version(value: str) -> str:
    from credprov.credentialprovider.plugin.conformance import normalize_api_version

    try:
        return normalize_api_version(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _name_value(value: str) -> tuple[str, str]:
    name, sep, val = value.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"want NAME=VALUE, got {value!r}")
    return name, val


def resolve_binary(binary: str) -> str:
    """An absolute path to an executable file: a path as given, or a name on ``PATH``.

    Raises:
        CLIError: not found, not a file, or not executable.
    """
    path = binary if os.sep in binary or os.path.exists(binary) else shutil.which(binary)
    if path is None or not os.path.exists(path):
        raise CLIError(f"plugin {binary!r} not found (no such file, and not on PATH)")
    if not os.path.isfile(path):
        raise CLIError(f"plugin {path}: not a file")
    if not os.access(path, os.X_OK):
        raise CLIError(f"plugin {path}: not executable")
    return os.path.abspath(path)


def _read_token(path: str) -> str:
    from credprov.base.fileio import read_bounded

    try:
        token = read_bounded(path, 1024 * 1024).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise CLIError(f"cannot read {path}: {reason}") from None
    if not token:
        raise CLIError(f"{path}: empty token")
    return token


def run(args: argparse.Namespace) -> int:
    """Run the conformance checks on the plugin; exit 1 when one fails."""
    from credprov.credentialprovider.plugin.conformance import render_text, run_conformance

    binary = resolve_binary(args.binary)
    token = args.service_account_token
    if args.service_account_token_file:
        token = _read_token(args.service_account_token_file)
    try:
        report = run_conformance(
            binary,
            args.images,
            args.api_versions,
            args=args.plugin_args,
            env=dict(args.plugin_env),
            timeout_ns=args.plugin_timeout,
            service_account_token=token or None,
            annotations=dict(args.annotations),
        )
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.output == "json":
        print_json(report.to_dict())
    else:
        sys.stdout.write(render_text(report))
    return EXIT_OK if report.ok else EXIT_FAILURE
