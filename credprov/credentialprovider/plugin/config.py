"""Reading a ``CredentialProviderConfig`` from a file or a directory, as the kubelet does.

Mirrors ``pkg/credentialprovider/plugin/config.go`` (Kubernetes 1.34+): a directory
contributes its ``*.json``/``*.yaml``/``*.yml`` regular files in bytewise-sorted order, one
running sha256 over ``uint64be(len) || bytes`` of every file gives the ``sha256:`` hash, names
must be unique across files, and the merged config is validated with the kubelet's rules.
Every error's ``str()`` is the kubelet's text.

Where the files come from is a :class:`ConfigFiles` (this machine's filesystem by default);
``credprov doctor --node-root`` passes one that resolves every path inside a node image, so a
config directory's symlinks never lead it to the host's files.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Collection, Mapping
from typing import Protocol

from credprov._go.decode import DecodeError, load_document
from credprov._go.fmt import errno_text, go_quote, os_error
from credprov._go.strconv import NumError, parse_bool
from credprov.api import internal
from credprov.api.config import decode_config
from credprov.base.fileio import FileTooLargeError, NotRegularFileError, read_bounded, read_stream
from credprov.base.hashing import sha256 as _sha256
from credprov.errors import CredentialProviderError

__all__ = [
    "DEFAULT_FEATURE_GATES",
    "MAX_CONFIG_FILE_BYTES",
    "SERVICE_ACCOUNT_TOKEN_GATE",
    "ConfigError",
    "ConfigFiles",
    "HostFiles",
    "check_bin_dir",
    "check_plugin_binary",
    "config_files",
    "load_config",
    "parse_feature_gates",
    "read_config",
    "resolve_feature_gates",
    "validate_config",
]


SERVICE_ACCOUNT_TOKEN_GATE = "KubeletServiceAccountTokenForCredentialProviders"

#: Feature gates credprov knows, with the defaults of the newest kubelet (1.34+).
DEFAULT_FEATURE_GATES: dict[str, bool] = {SERVICE_ACCOUNT_TOKEN_GATE: True}

_CONFIG_EXTENSIONS = (".json", ".yaml", ".yml")

#: Refuse config files larger than this: a kubelet config is a few KiB, and reading a huge
#: file (or a device) into memory is how a typo takes a node tool down.
MAX_CONFIG_FILE_BYTES = 16 * 1024 * 1024


class ConfigError(CredentialProviderError):
    """A config the kubelet would refuse to start with; ``str()`` is the kubelet's text."""


def parse_feature_gates(spec: str, known: Collection[str] | None = None) -> dict[str, bool]:
    """Parse ``Name=bool,Name=bool`` (component-base's ``--feature-gates`` form).

    Args:
        known: the gate names accepted (default: the kubelet's gates credprov reads).

    Raises:
        ConfigError: unknown gate or non-boolean value, with the component-base text.
    """
    if known is None:
        known = DEFAULT_FEATURE_GATES
    gates: dict[str, bool] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(f"missing bool value for {name}")
        if name not in known:
            raise ConfigError(f"unrecognized feature gate: {name}")
        try:
            gates[name] = parse_bool(value.strip())
        except NumError:
            raise ConfigError(
                f"invalid value of {name}={value}, err: strconv.ParseBool: "
                f"parsing {go_quote(value)}: invalid syntax"
            ) from None
    return gates


def resolve_feature_gates(feature_gates: Mapping[str, bool] | None) -> dict[str, bool]:
    """The kubelet's credential-provider feature gates: the defaults with
    ``feature_gates`` applied.

    Raises:
        ConfigError: a gate this kubelet does not know (``unrecognized feature gate``).
    """
    gates = dict(DEFAULT_FEATURE_GATES)
    for name, value in (feature_gates or {}).items():
        if name not in DEFAULT_FEATURE_GATES:
            raise ConfigError(f"unrecognized feature gate: {name}")
        gates[name] = bool(value)
    return gates


class ConfigFiles(Protocol):
    """Where config files are read from: paths in, bytes out, ``OSError`` on failure."""

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` (symlinks followed) is a directory; ``OSError`` when it cannot
        be reached."""

    def entries(self, path: str) -> list[tuple[str, bool]]:
        """``(name, is a directory, not following a symlink)`` of a directory's entries."""

    def read(self, path: str, limit: int) -> bytes:
        """A regular file's bytes (``FileTooLargeError`` past ``limit``,
        ``NotRegularFileError`` for FIFOs, devices and directories)."""


class HostFiles:
    """This machine's filesystem: what the kubelet reads."""

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` (symlinks followed) is a directory."""
        return stat.S_ISDIR(os.stat(path).st_mode)

    def entries(self, path: str) -> list[tuple[str, bool]]:
        # Like Go's DirEntry.IsDir(): a symlink is not a directory, whatever it points to.
        """``(name, is a directory)`` of each entry, a symlink never a directory."""
        with os.scandir(path) as it:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]

    def read(self, path: str, limit: int) -> bytes:
        """The regular file's bytes, at most ``limit`` of them."""
        return read_bounded(path, limit)


_HOST_FILES = HostFiles()


def config_files(path: str, files: ConfigFiles = _HOST_FILES) -> list[str]:
    """The files the kubelet reads for ``path``, in the order it reads them.

    Raises:
        ConfigError: empty path, inaccessible path, unreadable or empty directory.
    """
    if path == "":
        raise ConfigError("credential provider config path is empty")
    try:
        is_dir = files.is_dir(path)
    except OSError as exc:
        raise ConfigError(
            f"unable to access path {go_quote(path)}: {os_error('stat', path, exc)}"
        ) from None
    if not is_dir:
        return [path]
    try:
        entries = files.entries(path)
    except OSError as exc:
        raise ConfigError(
            f"unable to read directory {go_quote(path)}: {os_error('open', path, exc)}"
        ) from None
    found = []
    for name, entry_is_dir in entries:
        if entry_is_dir:
            continue
        if _go_ext(name) in _CONFIG_EXTENSIONS:
            found.append(os.path.join(path, name))
    if not found:
        raise ConfigError(f"no configuration files found in directory {go_quote(path)}")
    # Go sorts the joined paths as byte strings.
    found.sort(key=lambda p: p.encode("utf-8", "surrogateescape"))
    return found


def _go_ext(name: str) -> str:
    """Go's ``filepath.Ext`` of a base name: from its last dot on, so ``.yaml`` (a dot-file to
    Python's ``splitext``) has the extension ``.yaml`` and the kubelet reads it."""
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def _read_file(path: str, files: ConfigFiles = _HOST_FILES) -> bytes:
    try:
        return files.read(path, MAX_CONFIG_FILE_BYTES)
    except FileTooLargeError:
        raise ConfigError(
            f"unable to read file {go_quote(path)}: larger than {MAX_CONFIG_FILE_BYTES} bytes"
        ) from None
    except NotRegularFileError as exc:
        raise ConfigError(f"unable to read file {go_quote(path)}: {exc.strerror}") from None
    except OSError as exc:
        raise ConfigError(
            f"unable to read file {go_quote(path)}: {os_error('open', path, exc)}"
        ) from None


def _read_stdin() -> bytes:
    try:
        return read_stream(limit=MAX_CONFIG_FILE_BYTES, name="standard input")
    except FileTooLargeError:
        raise ConfigError(
            f"unable to read standard input: larger than {MAX_CONFIG_FILE_BYTES} bytes"
        ) from None
    except OSError as exc:
        raise ConfigError(f"unable to read standard input: {errno_text(exc)}") from None


def read_config(
    path: str, *, allow_stdin: bool = False, files: ConfigFiles = _HOST_FILES
) -> tuple[internal.CredentialProviderConfig, str]:
    """Read and decode (not validate) the config at ``path``; returns (config, hash).

    With ``allow_stdin``, ``-`` reads one config document from standard input (a CLI
    convenience; the kubelet itself has no such path). ``files`` is where paths are read.

    Raises:
        ConfigError: the kubelet's read/decode errors.
    """
    digest = _sha256()
    configs: list[tuple[str, internal.CredentialProviderConfig]] = []
    stdin = allow_stdin and path == "-"
    for file in ["-"] if stdin else config_files(path, files):
        data = _read_stdin() if stdin else _read_file(file, files)
        digest.update(struct.pack(">Q", len(data)))
        digest.update(data)
        try:
            configs.append((file, decode_config(load_document(data))))
        except DecodeError as exc:
            raise ConfigError(f"error decoding config {go_quote(file)}: {exc}") from None
    # Like the kubelet, merge only once every file has decoded: a decode error in a later
    # file wins over a duplicate name in earlier ones.
    # The kubelet's text names no file; which ones follows it, so an operator can act.
    providers: list[internal.CredentialProvider] = []
    seen: dict[str, str] = {}
    for file, cfg in configs:
        for provider in cfg.providers:
            first = seen.get(provider.name)
            if first is not None:
                where = (
                    f"twice in {go_quote(file)}"
                    if first == file
                    else f"in {go_quote(first)} and {go_quote(file)}"
                )
                raise ConfigError(
                    f"duplicate provider name {go_quote(provider.name)} found in "
                    f"configuration file(s) ({where})"
                )
            seen[provider.name] = file
            providers.append(provider)
    return internal.CredentialProviderConfig(providers=tuple(providers)), (
        "sha256:" + digest.hexdigest()
    )


def validate_config(
    config: internal.CredentialProviderConfig, feature_gates: Mapping[str, bool] | None = None
) -> None:
    """Validate with the kubelet's rules.

    Raises:
        ConfigError: ``failed to validate credential provider config: <aggregate>``.
    """
    from credprov.credentialprovider.validation import validate_credential_provider_config

    gates = resolve_feature_gates(feature_gates)
    errors = validate_credential_provider_config(
        config, service_account_token_gate=gates[SERVICE_ACCOUNT_TOKEN_GATE]
    )
    if not errors:
        return  # field_errors (and its imports) only when there is something to report
    from credprov._go.field_errors import aggregate

    message = aggregate(errors)
    if message is not None:
        from credprov.credentialprovider.lint import go_version_hint

        error = ConfigError(f"failed to validate credential provider config: {message}")
        raise error.with_hint(go_version_hint(config))


def load_config(
    path: str,
    feature_gates: Mapping[str, bool] | None = None,
    *,
    allow_stdin: bool = False,
    files: ConfigFiles = _HOST_FILES,
) -> tuple[internal.CredentialProviderConfig, str]:
    """Read, decode and validate a config file or directory exactly as the kubelet does.

    Args:
        path: a config file (any extension) or a directory of ``*.json|*.yaml|*.yml``.
        feature_gates: overrides of :data:`DEFAULT_FEATURE_GATES`.
        allow_stdin: read ``-`` as one document from standard input.
        files: where the paths are read (this machine's filesystem by default).

    Returns:
        ``(config, hash)`` where ``hash`` is ``sha256:<hex>`` as in
        ``kubelet_credential_provider_config_info``.

    Raises:
        ConfigError: with the kubelet's error text.
    """
    resolve_feature_gates(feature_gates)
    config, digest = read_config(path, allow_stdin=allow_stdin, files=files)
    validate_config(config, feature_gates)
    return config, digest


def check_bin_dir(bin_dir: str) -> None:
    """The kubelet's first registration step.

    Raises:
        ConfigError: ``plugin binary directory %s did not exist`` and friends.
    """
    try:
        os.stat(bin_dir)
    except FileNotFoundError:
        raise ConfigError(f"plugin binary directory {bin_dir} did not exist") from None
    except OSError as exc:
        raise ConfigError(
            f"error inspecting binary directory {bin_dir}: {os_error('stat', bin_dir, exc)}"
        ) from None


def check_plugin_binary(bin_dir: str, name: str) -> str:
    """``exec.LookPath(filepath.Join(binDir, name))`` with the kubelet's messages.

    Returns:
        The executable's path.

    Raises:
        ConfigError: missing, a directory, or not executable.
    """
    path = os.path.join(bin_dir, name) if name else bin_dir
    try:
        st = os.stat(path)
    except FileNotFoundError:
        # LookPath returns "" on error, hence the double space the kubelet prints.
        raise ConfigError("plugin binary executable  did not exist").with_hint(
            f"no file at {path}: the provider name must be the executable's file name "
            "in the bin dir"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"error inspecting binary executable : exec: {go_quote(path)}: {errno_text(exc)}"
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            f"error inspecting binary executable : exec: {go_quote(path)}: is a directory"
        )
    if st.st_mode & 0o111 == 0:
        raise ConfigError(
            f"error inspecting binary executable : exec: {go_quote(path)}: permission denied"
        )
    return path
