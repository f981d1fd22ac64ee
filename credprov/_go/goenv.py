"""Which Go behaviour a command follows: the kubelet's binary, its version, or a Go release.

Shared by the ``credprov`` CLI and the bundle's standalone doctor (which may not import the
CLI). One of, at most:

* ``--kubelet-binary PATH``: the Go build information of the kubelet itself
  (:mod:`credprov._go.buildinfo`): its toolchain and its ``DefaultGODEBUG``, the
  ``GODEBUG`` defaults its ``go.mod`` and ``//go:debug`` lines gave it;
* ``--kubelet-version 1.N[.P]``: the Go release and defaults of that Kubernetes release
  (:mod:`credprov._go.kubelet_versions`);
* ``--go-version VERSION``, else ``$CREDPROV_GO_VERSION``: a Go release with its
  toolchain's own defaults;

then ``--go-debug name=value,...`` on top, as the ``GODEBUG`` environment variable
overrides a binary's defaults. Only ``os`` at import: every command calls
:func:`follow_go`, and the Go modules (about 10 ms) are imported only when something is
named.
"""

from __future__ import annotations

import os
import re

__all__ = ["GO_VERSION_ENV", "GoChoice", "follow_go", "follow_go_version", "release_of_binary"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from credprov._go.buildinfo import BuildInfo
    from credprov._go.version import GoRelease

#: The environment variable with the default of ``--go-version`` (every command follows it).
GO_VERSION_ENV = "CREDPROV_GO_VERSION"

_TOOLCHAIN = re.compile(r"go(1\.\d{1,4}(?:\.\d{1,4})?)(?![\d.])")


class GoChoice:
    """What :func:`follow_go` settled on: ``error`` (a one-line usage error, with the option
    it came from) or ``notice`` (a line saying what a kubelet binary or version gave)."""

    def __init__(self, error: str | None = None, notice: str | None = None) -> None:
        self.error = error
        self.notice = notice


def release_of_binary(info: BuildInfo, go_debug: str = "") -> GoRelease:
    """The :class:`~credprov._go.version.GoRelease` a Go binary with ``info`` follows: its
    toolchain (``go1.26.6``, also ``go1.26.6 X:boringcrypto``) with its ``DefaultGODEBUG``,
    and ``go_debug`` (a run-time ``GODEBUG``) over it.

    Raises:
        credprov._go.version.GoVersionError: a toolchain credprov does not reproduce.
        credprov._go.godebug.GoDebugError: ``go_debug`` is malformed.
    """
    from credprov._go.godebug import format_godebug, parse_godebug
    from credprov._go.version import GoVersionError, go_release

    match = _TOOLCHAIN.match(info.go_version)
    if match is None:
        raise GoVersionError(
            f"built with Go {info.go_version!r}, a toolchain credprov cannot place; give "
            "--go-version"
        )
    settings = parse_godebug(info.default_godebug, strict=False)
    settings.update(parse_godebug(go_debug))
    version = match.group(1)
    if version.count(".") == 1:
        version += ".0"  # a binary names its release exactly: go1.21 is 1.21.0
    return go_release(version, format_godebug(settings))


def follow_go(
    *,
    go_version: str | None = None,
    go_debug: str | None = None,
    kubelet_version: str | None = None,
    kubelet_binary: str | None = None,
) -> GoChoice:
    """Follow what the options say (see the module docstring); the choice, with a one-line
    error (naming the option) when a value cannot be followed, or options that exclude
    each other are given together."""
    given = [
        name
        for name, value in (
            ("--kubelet-binary", kubelet_binary),
            ("--kubelet-version", kubelet_version),
            ("--go-version", go_version),
        )
        if value is not None
    ]
    if len(given) > 1:
        return GoChoice(f"{' and '.join(given)} exclude each other: give one")
    if not given and go_debug is None:
        return GoChoice(follow_go_version(None))
    from credprov._go.godebug import GoDebugError
    from credprov._go.version import GoVersionError, use_go

    debug = go_debug or ""
    source = given[0] if given else "--go-debug"
    try:
        if kubelet_binary is not None:
            return _follow_binary(kubelet_binary, debug)
        if kubelet_version is not None:
            from credprov._go.kubelet_versions import KubeletVersionError, kubelet_go

            try:
                entry, release = kubelet_go(kubelet_version, debug)
            except KubeletVersionError as exc:
                return GoChoice(f"--kubelet-version: {exc}")
            use_go(release)
            return GoChoice(notice=entry.notice(release))
        if go_version is None:
            env = os.environ.get(GO_VERSION_ENV) or None
            if env is not None:
                source = GO_VERSION_ENV
                go_version = env
        if go_version is None:
            from credprov._go.version import current_go

            use_go(current_go(), debug)
        else:
            use_go(go_version, debug)
    except GoDebugError as exc:
        return GoChoice(f"--go-debug: {exc}")
    except GoVersionError as exc:
        return GoChoice(f"{source}: {exc}")
    return GoChoice()


def _follow_binary(path: str, go_debug: str) -> GoChoice:
    from credprov._go.buildinfo import BuildInfoError, read_build_info
    from credprov._go.version import GoVersionError, use_go

    try:
        info = read_build_info(path)
    except BuildInfoError as exc:
        return GoChoice(f"--kubelet-binary {path}: {exc}")
    except OSError as exc:
        return GoChoice(f"--kubelet-binary {path}: {exc.strerror or exc}")
    try:
        release = release_of_binary(info, go_debug)
    except GoVersionError as exc:
        return GoChoice(f"--kubelet-binary {path}: {exc}")
    use_go(release)
    defaults = info.default_godebug or "none"
    return GoChoice(
        notice=f"kubelet binary {path}: built with {info.go_version} ({info.machine}), "
        f"DefaultGODEBUG {defaults}; credprov follows Go {release}"
    )


def follow_go_version(value: str | None) -> str | None:
    """Follow ``--go-version``'s ``value``, else ``$CREDPROV_GO_VERSION``, else nothing (the
    default stays); the one-line error (naming where the value came from) when it is not a
    Go release credprov reproduces."""
    source = "--go-version"
    if value is None:
        value = os.environ.get(GO_VERSION_ENV) or None
        source = GO_VERSION_ENV
    if value is None:
        return None
    from credprov._go.version import GoVersionError, use_go

    try:
        use_go(value)
    except GoVersionError as exc:
        return f"{source}: {exc}"
    return None
