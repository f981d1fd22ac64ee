"""Upstream's command line, read the way cobra/pflag (and klog's Go flags) read it.

``auth-provider-gcp`` is a cobra program: a root command without a ``Run`` and the
subcommand ``get-credentials``, whose flags are ``--authFlow``/``-a``, ``--identity-provider``
and ``--project-id``, plus klog's flags (``-v``/``--v``, ``--logtostderr``, ...). This module
reads them with the SDK's pflag parser (:mod:`credprov.sdk.flags`: every spelling pflag
accepts) and, as Go's ``flag`` package does before cobra runs, klog flags with a single dash.
Flags may come before or after the subcommand. Error texts are pflag's and upstream's.

It then turns the result into the argument list :func:`credprov.sdk.run` parses, adding the
environment knobs (``KUBE_SIDECAR_CACHE_*``, ``GCE_METADATA_HOST``, the STS endpoint) as
options, so that they scope the plugin's answer cache like the arguments do.

Only the SDK and the standard library: this module is on the warm path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from credprov.sdk import flags as sdk_flags
from credprov.sdk.flags import KLOG_GO_FLAGS, VERBOSITY, Option, go_quote

NAME = "auth-provider-gcp"
SUBCOMMAND = "get-credentials"
AUTH_FLOWS = ("gcr", "dockercfg", "dockercfg-url")

#: Environment variables the plugin reads (upstream's, google-auth's and credprov's own).
ENV_CACHE_DURATION = "KUBE_SIDECAR_CACHE_DURATION"
ENV_CACHE_TYPE = "KUBE_SIDECAR_CACHE_TYPE"
ENV_METADATA_HOST = "GCE_METADATA_HOST"
ENV_METADATA_ROOT = "GCE_METADATA_ROOT"  # google-auth's older name, read when HOST is unset
ENV_STS_ENDPOINT = "CREDPROV_GCP_STS_ENDPOINT"

#: The command line, declared once (upstream's flags, credprov's additions, klog's).
OPTIONS = (
    Option("authFlow", "gcr", shorthand="a"),
    Option("identity-provider", ""),
    Option("project-id", ""),
    Option("sts-endpoint", ""),
    Option("allow-non-google-registries", False, flag=True),
    Option("help", False, flag=True, shorthand="h"),
    Option("version", False, flag=True),
    Option("clear-cache", False, flag=True),
    VERBOSITY,
    *KLOG_GO_FLAGS,
)


class FlagError(sdk_flags.FlagError):
    """A command line upstream would refuse too; ``str()`` is pflag's or upstream's text."""


class Flags:
    """What the command line asked for."""

    __slots__ = (
        "allow_non_google_registries",
        "auth_flow",
        "clear_cache",
        "help",
        "identity_provider",
        "ignored",
        "project_id",
        "sts_endpoint",
        "subcommand",
        "verbosity",
        "version",
        "warnings",
    )

    def __init__(self) -> None:
        self.subcommand = ""
        self.auth_flow = "gcr"
        self.identity_provider = ""
        self.project_id = ""
        self.sts_endpoint = ""
        self.allow_non_google_registries = False
        self.verbosity = 0
        self.help = False
        self.version = False
        self.clear_cache = False
        self.ignored: list[str] = []  # positional arguments after the subcommand
        self.warnings: list[str] = []


def parse(argv: Sequence[str]) -> Flags:
    """Parse ``argv`` (without the program name).

    Raises:
        FlagError: an unknown flag or command, a missing or invalid value, no subcommand, or
            a combination upstream refuses (``--identity-provider`` without ``--project-id``).
    """
    try:
        parsed = sdk_flags.parse(argv, OPTIONS, single_dash_long=True)
    except sdk_flags.FlagError as exc:
        raise FlagError(str(exc)) from None
    values = parsed.values
    flags = Flags()
    flags.auth_flow = values["authFlow"]
    flags.identity_provider = values["identity-provider"]
    flags.project_id = values["project-id"]
    flags.sts_endpoint = values["sts-endpoint"]
    flags.allow_non_google_registries = values["allow-non-google-registries"]
    flags.help = values["help"]
    flags.version = values["version"]
    flags.clear_cache = values["clear-cache"]
    flags.verbosity = max(values["v"], 0)  # klog treats a negative level like 0
    positional = parsed.positional
    if positional:
        command = positional[0]
        if command == "help":
            flags.help = True
        elif command != SUBCOMMAND:
            raise FlagError(f'unknown command {go_quote(command)} for "{NAME}"')
        flags.subcommand = command
        flags.ignored = positional[1:]  # cobra accepts (and ignores) a subcommand's args
    if flags.help or flags.version or flags.clear_cache:
        return flags
    if not flags.subcommand:
        raise FlagError(f"a subcommand is required: {NAME} {SUBCOMMAND} [flags]")
    validate(flags)
    return flags


def validate(flags: Flags) -> None:
    """Upstream's ``validateAuthFlow`` rules (errors), plus its warning.

    Raises:
        FlagError: an unknown ``--authFlow``, or ``--identity-provider`` without
            ``--project-id``.
    """
    if flags.auth_flow not in AUTH_FLOWS:
        raise FlagError(
            f"invalid value {go_quote(flags.auth_flow)} for authFlow "
            '(must be one of "gcr", "dockercfg", or "dockercfg-url")'
        )
    if flags.identity_provider:
        if not flags.project_id:
            raise FlagError("--project-id is required when --identity-provider is set")
        if flags.auth_flow != "gcr":
            flags.warnings.append(
                f"--identity-provider is ignored with --authFlow={flags.auth_flow} "
                "(workload identity needs --authFlow=gcr)"
            )


def sdk_argv(flags: Flags, environ: Mapping[str, str]) -> list[str]:
    """The arguments for :func:`credprov.sdk.run`: every setting, environment included.

    Options are always passed (empty when unset) so the answer cache is scoped by all of
    them; the handler validates the environment's values.
    """
    metadata_host = environ.get(ENV_METADATA_HOST) or environ.get(ENV_METADATA_ROOT) or ""
    argv = [
        "--authFlow",
        flags.auth_flow,
        "--identity-provider",
        flags.identity_provider,
        "--project-id",
        flags.project_id,
        "--sts-endpoint",
        flags.sts_endpoint or environ.get(ENV_STS_ENDPOINT, ""),
        "--metadata-host",
        metadata_host,
        "--sidecar-cache-duration",
        environ.get(ENV_CACHE_DURATION, ""),
        "--sidecar-cache-type",
        environ.get(ENV_CACHE_TYPE, ""),
        f"--v={flags.verbosity}",
    ]
    if flags.allow_non_google_registries:
        argv.append("--allow-non-google-registries")
    if flags.version:
        argv.append("--version")
    if flags.clear_cache:
        argv.append("--clear-cache")
    return argv


def usage() -> str:
    """``--help``: upstream's flags, credprov's additions and the environment."""
    return f"""\
Reads a CredentialProviderRequest on stdin and writes a CredentialProviderResponse with
Google credentials for the image's registry on stdout (a kubelet image credential provider).

Usage:
  {NAME} {SUBCOMMAND} [flags]

Flags:
  -a, --authFlow string            authentication flow: gcr (an access token of the node's
                                   service account, or of the pod's with workload identity),
                                   dockercfg or dockercfg-url (the instance attributes
                                   google-dockercfg / google-dockercfg-url) (default "gcr")
      --identity-provider string   workload identity: the cluster's identity provider URL;
                                   a pod whose service account is annotated
                                   iam.gke.io/enable-wi-image-pull=true pulls with a token
                                   exchanged at STS for its service-account token (gcr only)
      --project-id string          the project of the workload identity pool (required with
                                   --identity-provider)
  -h, --help                       help for {SUBCOMMAND}

credprov additions:
      --allow-non-google-registries  also send the Google token to registries that are not
                                   Google's (upstream always does; by default only
                                   container.cloud.google.com, gcr.io, *.gcr.io, *.pkg.dev)
      --sts-endpoint URL           token exchange endpoint (default
                                   https://sts.googleapis.com/v1/token, or ${ENV_STS_ENDPOINT})
      --clear-cache                remove the plugin's cached answers and exit
      --version                    print the version and exit

Global flags:
  -v, --v Level                    log verbosity on stderr (secrets are never logged)
      klog's other flags (--logtostderr, --log_dir, --vmodule, ...) are accepted and ignored

Environment:
  {ENV_CACHE_DURATION}   cacheDuration to answer with (Go duration), capped by the token's
                                expiry; unset: the token's remaining lifetime minus 5 minutes
  {ENV_CACHE_TYPE}       cacheKeyType: image (default), registry or global
  {ENV_METADATA_HOST}             metadata server host[:port] (default metadata.google.internal.)
  {ENV_STS_ENDPOINT}     token exchange endpoint (see --sts-endpoint)
  CREDPROV_PLUGIN_CACHE_DIR     where answers are cached between runs
"""
