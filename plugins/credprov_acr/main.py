"""Entry point of ``acr-credential-provider`` (kept tiny: the warm path runs through it).

It reads upstream's command line with the SDK's pflag parser (:mod:`credprov.sdk.flags`)
and hands :func:`credprov.sdk.run` a canonical one:

* the ``azure.json`` path, upstream's single positional argument, becomes
  ``--azure-config PATH``, and the file's identity (size, mtime, inode; and those of
  ``$AZURE_ENVIRONMENT_FILEPATH``) becomes ``--config-stamp``, so that the plugin cache,
  which is scoped by the options, never answers for another or an edited file;
* ``--registry-mirror``/``-r`` and the identity-bindings flags ``--ib-sni-name``,
  ``--ib-default-client-id``, ``--ib-default-tenant-id``, ``--ib-apiserver-ip``, in the
  ``--flag value``, ``--flag=value``, ``-r value``, ``-r=value`` and ``-rvalue`` forms;
* ``-v N``/``--v=N`` (passed on); the other klog flags (``--vmodule``, ``--logtostderr``,
  ``--log-file``…) are accepted and ignored: messages always go to stderr;
* ``--help``, ``--version`` and credprov's ``--clear-cache``.

Like upstream, every argument error exits 1 with one line on stderr, before stdin is read.
Only the standard library and ``credprov.sdk`` are imported here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from credprov.sdk import flags, run
from credprov.sdk.flags import KLOG_COMPONENT_FLAGS, VERBOSITY, Option

NAME = "acr-credential-provider"
HANDLER = "credprov_acr.plugin:provide"
ENVIRONMENT_FILEPATH_ENV = "AZURE_ENVIRONMENT_FILEPATH"  # also in credprov_acr.cloud

OPTIONS = [
    Option("azure-config", help="the azure.json file (upstream's positional argument)"),
    Option("config-stamp", help="set automatically from the config file, to scope the cache"),
    Option("registry-mirror", default="", help="SOURCE:TARGET[,SOURCE:TARGET...]"),
    Option("ib-sni-name", default="", help="identity bindings: the token endpoint's TLS name"),
    Option("ib-default-client-id", default="", help="identity bindings: default client id"),
    Option("ib-default-tenant-id", default="", help="identity bindings: default tenant id"),
    Option("ib-apiserver-ip", default="", help="identity bindings: the address to connect to"),
]

#: Upstream's command line, declared once: its flags, component-base's klog flags, and
#: credprov's ``--clear-cache``.
FLAGS = (
    Option("registry-mirror", "", shorthand="r"),
    Option("ib-sni-name", ""),
    Option("ib-default-client-id", ""),
    Option("ib-default-tenant-id", ""),
    Option("ib-apiserver-ip", ""),
    Option("help", False, flag=True, shorthand="h"),
    Option("version", False, flag=True),
    Option("clear-cache", False, flag=True),
    VERBOSITY,
    *KLOG_COMPONENT_FLAGS,
)
_VALUE_FLAGS = tuple(o.name for o in FLAGS[:5])

USAGE = f"""\
usage: {NAME} <azure.json> [--registry-mirror SRC:DST[,SRC:DST...]] [-v N]
       [--ib-sni-name NAME --ib-apiserver-ip IP [--ib-default-client-id ID]
        [--ib-default-tenant-id ID]] | --version | --clear-cache

A kubelet image credential provider for Azure Container Registry, compatible with the
upstream executable of the same name. Reads a CredentialProviderRequest on stdin and writes
a CredentialProviderResponse in the same apiVersion on stdout.

  <azure.json>               the cloud-provider config (JSON or YAML)
  -r, --registry-mirror      serve images of SRC from the ACR DST (either may have :port)
  --ib-sni-name              identity bindings: TLS name of the AKS token endpoint
  --ib-apiserver-ip          identity bindings: IP (or name) to connect to
  --ib-default-client-id     identity bindings: client id when the service account has none
  --ib-default-tenant-id     identity bindings: tenant id when the service account has none
  -v N, --v=N                log verbosity on stderr (secrets are never logged)
  --clear-cache              remove this plugin's cached answers and exit
  --version                  print the version and exit
"""


class ArgumentError(flags.FlagError):
    """A bad command line; ``str()`` is the one-line message."""


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_size}-{st.st_mtime_ns}-{st.st_ino}"


def config_stamp(path: str) -> str:
    """The identity of the config file (and of the environment file, when one is set)."""
    stamp = _stamp(path)
    env_file = os.environ.get(ENVIRONMENT_FILEPATH_ENV)
    if env_file:
        stamp += f";{env_file};{_stamp(env_file)}"
    return stamp


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Upstream's command line → the SDK's (see the module docstring).

    Raises:
        ArgumentError: unknown flag, missing value, not exactly one config file, or
            identity-bindings flags that do not go together.
    """
    try:
        parsed = flags.parse(argv, FLAGS)
    except flags.FlagError as exc:
        raise ArgumentError(str(exc)) from None
    given = parsed.values
    out = [f"--v={given['v']}"] if "v" in parsed.given else []
    out += [f"--{action}" for action in ("help", "version", "clear-cache") if given[action]]
    values = {name: given[name] for name in _VALUE_FLAGS if name in parsed.given}
    positional = parsed.positional
    if given["help"] or given["version"]:
        return out
    _check_identity_bindings(values)
    if not positional:
        if "--clear-cache" in out:
            return out
        raise ArgumentError("config file is not specified")
    if len(positional) > 1:
        raise ArgumentError(
            f"expected exactly one argument (config file); Got arguments: [{' '.join(positional)}]"
        )
    path = positional[0]
    out += ["--azure-config", path, "--config-stamp", config_stamp(path)]
    for option, value in sorted(values.items()):
        out += [f"--{option}", value]
    return out


def _check_identity_bindings(values: dict[str, str]) -> None:
    """Upstream's flag rules (``ParseIdentityBindingsConfig``); whether the API server
    address is an IP or resolves is checked when it is used, not on every run."""
    sni = values.get("ib-sni-name", "")
    client = values.get("ib-default-client-id", "")
    tenant = values.get("ib-default-tenant-id", "")
    apiserver = values.get("ib-apiserver-ip", "")
    if sni:
        if sni.startswith(("https://", "http://")):
            raise ArgumentError(
                f"--ib-sni-name must not contain protocol prefix (https:// or http://), got: {sni}"
            )
        if not apiserver:
            raise ArgumentError("--ib-apiserver-ip must be set when --ib-sni-name is provided")
    if client and not sni:
        raise ArgumentError("--ib-sni-name must be set when --ib-default-client-id is provided")
    if tenant and not sni:
        raise ArgumentError("--ib-sni-name must be set when --ib-default-tenant-id is provided")
    if apiserver and not sni:
        raise ArgumentError("--ib-sni-name must be set when --ib-apiserver-ip is provided")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the plugin once; the exit code."""
    try:
        sdk_argv = normalize_argv(sys.argv[1:] if argv is None else argv)
    except ArgumentError as exc:
        sys.stderr.write(f"{NAME}: {exc}\n")
        return 1
    if "--help" in sdk_argv:
        sys.stdout.write(USAGE)
        return 0
    return run(
        HANDLER,
        name=NAME,
        description="Azure Container Registry credentials (acr-credential-provider).",
        options=OPTIONS,
        cache=True,
        argv=sdk_argv,
        # Upstream decodes the request, then refuses an empty image with this text.
        empty_image_error="image in plugin request was empty",
    )
