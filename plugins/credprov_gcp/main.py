"""Entry point of ``auth-provider-gcp`` (kept tiny: the warm path runs through it).

Reads upstream's command line (:mod:`credprov_gcp.flags`), then hands over to
:func:`credprov.sdk.run`, which answers from the plugin cache when it can and imports the
handler (google-auth, requests) only when it cannot. Only the SDK and the standard library
are imported here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from credprov.sdk import EXIT_OK, EXIT_USAGE, Option, run
from credprov_gcp import flags

NAME = flags.NAME
HANDLER = "credprov_gcp.plugin:provide"

#: The SDK's view of the settings (see :func:`credprov_gcp.flags.sdk_argv`).
OPTIONS = [
    Option("authFlow", default="gcr", help="gcr, dockercfg or dockercfg-url"),
    Option("identity-provider", default="", help="workload identity provider URL"),
    Option("project-id", default="", help="workload identity project"),
    Option("sts-endpoint", default="", help="token exchange endpoint"),
    Option("metadata-host", default="", help="from GCE_METADATA_HOST"),
    Option("sidecar-cache-duration", default="", help="from KUBE_SIDECAR_CACHE_DURATION"),
    Option("sidecar-cache-type", default="", help="from KUBE_SIDECAR_CACHE_TYPE"),
    Option("allow-non-google-registries", default=False, flag=True, help="send tokens anywhere"),
]


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    handler: Any = HANDLER,
    **run_kwargs: Any,
) -> int:
    """Run the plugin once; returns the exit code.

    Args:
        argv: the arguments (default ``sys.argv[1:]``), as upstream takes them.
        environ: the environment (default ``os.environ``).
        handler: the SDK handler (tests pass one with injected dependencies).
        run_kwargs: passed to :func:`credprov.sdk.run` (``stdin``, ``stdout``, ``stderr``,
            ``cache_dir``, ``clock``).
    """
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    stderr = run_kwargs.get("stderr") or sys.stderr
    try:
        parsed = flags.parse(argv)
    except flags.FlagError as exc:
        stderr.write(f"{NAME}: {exc} (see '{NAME} {flags.SUBCOMMAND} --help')\n")
        return EXIT_USAGE
    if parsed.help:
        stdout = run_kwargs.get("stdout") or sys.stdout.buffer
        stdout.write(flags.usage().encode("utf-8"))
        return EXIT_OK
    for warning in parsed.warnings:
        stderr.write(f"{NAME}: warning: {warning}\n")
    return run(
        handler,
        name=NAME,
        description="Google registry credentials from the metadata server or workload identity.",
        options=OPTIONS,
        cache=True,
        argv=flags.sdk_argv(parsed, environ),
        **run_kwargs,
    )
