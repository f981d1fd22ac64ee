"""``docker-credential-credprov``: a Docker credential helper backed by kubelet plugins.

docker, skopeo, podman, buildah and crane run ``docker-credential-<name> get`` with a
registry's server URL on stdin when their config's ``credHelpers`` (or ``credsStore``) says
so. This helper answers from the node's kubelet ``CredentialProviderConfig`` and plugin bin
dir, through the same engine as the kubelet, so node tools and the kubelet share plugins:

* ``get``: server URL on stdin → ``{"ServerURL", "Username", "Secret"}`` on stdout: the
  first credential in kubelet order (pull secret, node docker config, then plugins); none →
  ``credentials not found in native keychain`` on stdout, exit 1 (the protocol's "not
  found", which clients treat as anonymous).
* ``list`` prints ``{}``; ``store`` and ``erase`` are refused (the plugins own the secrets);
  ``version`` prints the version.

Configuration (environment):

* ``CREDPROV_PROVIDER_CONFIG``: the kubelet's ``--image-credential-provider-config`` (file
  or directory; default :data:`DEFAULT_CONFIG`). Set it to the empty string to use no
  plugins, only the two sources below.
* ``CREDPROV_PROVIDER_BIN_DIR``: the kubelet's ``--image-credential-provider-bin-dir``
  (default :data:`DEFAULT_BIN_DIR`).
* ``CREDPROV_PULL_SECRET``: optional Secret file(s) (YAML/JSON, ``:``-separated), tried first.
* ``CREDPROV_NODE_DOCKER_CONFIG``: optional docker ``config.json`` whose ``auths`` come next.
* ``CREDPROV_PLUGIN_TIMEOUT``: optional plugin timeout (Go duration; default ``1m``).
* ``CREDPROV_GO_VERSION``: optional Go release the kubelet was built with (e.g. ``1.26.6``;
  default ``1.25.5``): what ``url.Parse`` accepts in ``matchImages`` depends on it.

Errors are one line on stderr (and, when stdout is not a terminal, on stdout too, because
docker and containers/image only show a failed helper's stdout), never a traceback and
never a secret.

This module is the engine-side bridge, not a plugin: it builds the node's engine with
:func:`credprov.credentialprovider.engine.node_engine` (the one assembly the CLI and the
library use) and asks its chain, as a docker credential helper, so it imports the
library itself. It is the one plugin module allowed to (the others import only
:mod:`credprov.sdk` and :mod:`credprov.version`; ``tests/unit/plugins`` checks it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from credprov.errors import CredprovError

NAME = "docker-credential-credprov"
DEFAULT_CONFIG = "/etc/kubernetes/credential-provider-config.yaml"
DEFAULT_BIN_DIR = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"

ENV_CONFIG = "CREDPROV_PROVIDER_CONFIG"
ENV_BIN_DIR = "CREDPROV_PROVIDER_BIN_DIR"
ENV_PULL_SECRET = "CREDPROV_PULL_SECRET"
ENV_NODE_DOCKER_CONFIG = "CREDPROV_NODE_DOCKER_CONFIG"
ENV_PLUGIN_TIMEOUT = "CREDPROV_PLUGIN_TIMEOUT"
ENV_GO_VERSION = "CREDPROV_GO_VERSION"
#: Set for the plugins this helper runs. A plugin that runs Docker credential helpers
#: (``docker-credential-helper-provider``) could otherwise run this helper again, forever.
ENV_ACTIVE = "CREDPROV_DOCKER_HELPER_ACTIVE"

#: The helper protocol's "not found" (docker-credential-helpers' errCredentialsNotFound).
NOT_FOUND_MESSAGE = "credentials not found in native keychain"

EXIT_OK = 0
EXIT_ERROR = 1

_DOCKER_HUB_HOSTS = frozenset(
    ("docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com")
)
_HOST_RE = re.compile(r"[a-z0-9._\-]+(:[0-9]+)?|\[[0-9a-f:.]+\](:[0-9]+)?")
_MAX_STDIN = 64 * 1024
_MAX_MESSAGE = 400

USAGE = f"""usage: {NAME} get|list|store|erase|version

A Docker credential helper that answers `get` from the kubelet's image credential provider
plugins. Server URL on stdin, {{"ServerURL","Username","Secret"}} on stdout.

environment:
  {ENV_CONFIG}     kubelet CredentialProviderConfig (default {DEFAULT_CONFIG};
                               empty: no plugins)
  {ENV_BIN_DIR}    plugin bin dir (default {DEFAULT_BIN_DIR})
  {ENV_PULL_SECRET}         optional Secret file(s), ':'-separated, tried first
  {ENV_NODE_DOCKER_CONFIG}  optional docker config.json, tried before the plugins
  {ENV_PLUGIN_TIMEOUT}      plugin timeout (default 1m)
  {ENV_GO_VERSION}          Go release the kubelet was built with (default 1.25.5)
"""


class HelperError(CredprovError):
    """Fail ``get`` with this one-line message (never a secret)."""


def normalize_server_url(server_url: str) -> tuple[str, str]:
    """``(registry host, repository path)`` of a server URL as clients send it.

    ``https://index.docker.io/v1/`` → ``("docker.io", "")``; ``127.0.0.1:5000`` →
    ``("127.0.0.1:5000", "")``; ``https://registry.io/v2/team/app`` →
    ``("registry.io", "team/app")``. The scheme, ``/v1/``/``/v2/`` prefixes, query and
    user info are dropped, as the kubelet's keyring drops them from docker config keys.

    Raises:
        HelperError: empty or not a registry host.
    """
    text = server_url.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("?", 1)[0].split("#", 1)[0]
    host, _, path = text.partition("/")
    host = host.rsplit("@", 1)[-1].lower()
    if not host:
        raise HelperError("no server URL on stdin")
    if _HOST_RE.fullmatch(host) is None:
        raise HelperError(f"invalid server URL {_short(server_url)!r}")
    segments = [s for s in path.split("/") if s]
    if segments and segments[0] in ("v1", "v2"):
        segments = segments[1:]
    if host in _DOCKER_HUB_HOSTS:
        # The kubelet names every Docker Hub image docker.io/...; plugins match on that.
        host = "docker.io"
    return host, "/".join(segments)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


def _follow_go(environ: Mapping[str, str]) -> None:
    """Parse URLs as the kubelet's Go release does (``$CREDPROV_GO_VERSION``)."""
    if environ.get(ENV_GO_VERSION):
        from credprov import CredprovError, use_go

        try:
            use_go(environ[ENV_GO_VERSION])
        except CredprovError as exc:
            raise HelperError(f"invalid {ENV_GO_VERSION}: {exc}") from None


def _settings(environ: Mapping[str, str]) -> Any:
    """The node's credential settings (:class:`credprov.credentialprovider.engine.NodeSettings`)
    from the helper's environment.

    Raises:
        HelperError: a bad plugin timeout or an unreadable pull secret file.
    """
    from credprov._go.durations import DurationError, parse_duration
    from credprov.credentialprovider.engine import NodeSettings
    from credprov.credentialprovider.objects import ObjectsError, load_pull_secrets

    config = environ.get(ENV_CONFIG, DEFAULT_CONFIG) or None
    timeout = None
    if environ.get(ENV_PLUGIN_TIMEOUT):
        try:
            timeout = parse_duration(environ[ENV_PLUGIN_TIMEOUT])
        except DurationError as exc:
            raise HelperError(f"invalid {ENV_PLUGIN_TIMEOUT}: {exc}") from None
        if timeout <= 0:
            raise HelperError(f"{ENV_PLUGIN_TIMEOUT} must be positive")
    try:
        secrets = load_pull_secrets(
            filter(None, environ.get(ENV_PULL_SECRET, "").split(os.pathsep))
        )
    except ObjectsError as exc:
        raise HelperError(str(exc)) from None
    return NodeSettings(
        config=config,
        bin_dir=(environ.get(ENV_BIN_DIR) or DEFAULT_BIN_DIR) if config else None,
        node_docker_config=environ.get(ENV_NODE_DOCKER_CONFIG) or None,
        pull_secrets=secrets,
        plugin_timeout=timeout,
        environ={**environ, ENV_ACTIVE: "1"},
    )


def lookup(server_url: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The first credential, in kubelet order, for ``server_url``; None when there is none.

    Raises:
        HelperError: bad configuration, a bad server URL, or no credential because a
            matching plugin failed.
    """
    from credprov.credentialprovider.engine import node_engine
    from credprov.credentialprovider.objects import ObjectsError
    from credprov.credentialprovider.plugin.config import ConfigError
    from credprov.imageauth.keyring import KeyringError

    host, path = normalize_server_url(server_url)
    _follow_go(environ)
    settings = _settings(environ)
    try:
        engine = node_engine(settings)
    except ObjectsError as exc:
        raise HelperError(str(exc)) from None
    except ConfigError as exc:
        raise HelperError(f"kubelet credential providers: {exc}") from None
    try:
        # The protocol names a registry, and a path only sometimes: ask the chain about the
        # repository when there is one, else about the registry itself.
        resolution = engine.resolve(f"{host}/{path}") if path else engine.resolve_registry(host)
    except KeyringError as exc:
        raise HelperError(str(exc)) from None
    if resolution.credentials:
        first = resolution.credentials[0]
        return first.username, first.password
    if resolution.error:
        raise HelperError(resolution.error)
    errors = [p.error for p in resolution.providers if p.error]
    if errors:
        raise HelperError(errors[0])
    return None


def _get(stdin: IO[bytes], stdout: IO[str], environ: Mapping[str, str]) -> int:
    if environ.get(ENV_ACTIVE):
        raise HelperError(
            f"refusing to run inside a credential provider plugin that {NAME} started "
            "(a plugin configured to run this helper would loop)"
        )
    raw = stdin.read(_MAX_STDIN + 1)
    if len(raw) > _MAX_STDIN:
        raise HelperError("server URL on stdin is too long")
    server_url = raw.decode("utf-8", "replace").strip()
    found = lookup(server_url, environ)
    if found is None:
        stdout.write(NOT_FOUND_MESSAGE + "\n")
        return EXIT_ERROR
    username, secret = found
    stdout.write(json.dumps({"ServerURL": server_url, "Username": username, "Secret": secret}))
    stdout.write("\n")
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run one helper action; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    environ = os.environ if environ is None else environ
    # The engine logs plugin failures for the kubelet's log; here the one-line error below
    # reports them, and Python's last-resort handler would print them a second time.
    library_log = logging.getLogger("credprov")
    if not any(isinstance(h, logging.NullHandler) for h in library_log.handlers):
        library_log.addHandler(logging.NullHandler())

    def fail(message: str) -> int:
        line = f"{NAME}: {_short(message)}"
        stderr.write(line + "\n")
        stderr.flush()
        # docker and containers/image report a failed helper's stdout, not its stderr.
        isatty = getattr(stdout, "isatty", None)
        if not (callable(isatty) and isatty()):
            stdout.write(line + "\n")
        return EXIT_ERROR

    action = argv[0] if len(argv) == 1 else ""
    try:
        if action == "get":
            code = _get(stdin, stdout, environ)
        elif action == "list":
            stdout.write("{}\n")
            code = EXIT_OK
        elif action in ("store", "erase"):
            stdin.read(_MAX_STDIN)  # the caller writes a request: read it, so it gets no EPIPE
            code = fail(
                f"{action} is not supported: credentials come from the kubelet credential "
                "provider plugins; change them at their source"
            )
        elif action in ("version", "--version", "-v"):
            from credprov import __version__

            stdout.write(f"{NAME} (credprov) {__version__}\n")
            code = EXIT_OK
        elif action in ("help", "--help", "-h"):
            stdout.write(USAGE)
            code = EXIT_OK
        else:
            stderr.write(USAGE)
            code = fail("expected one action: get, list, store, erase or version")
    except HelperError as exc:
        code = fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted")
        code = 130
    except Exception as exc:
        # Only the type: an exception's text may quote a credential.
        code = fail(f"internal error ({type(exc).__name__})")
    stdout.flush()
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
