"""``credprov install``: write plugin launchers into the kubelet's bin dir.

Plugins are found through the ``credprov.plugins`` entry-point group (name → ``module:main``),
so third-party Python plugins built on :mod:`credprov.sdk` install the same way. Each
launcher starts this environment's interpreter directly with ``-I -S`` (see
:mod:`credprov.sdk._launch`). Installing is idempotent; a file that credprov did not write
is left alone unless ``force``.
"""

from __future__ import annotations

import importlib.util
import os
import site
import sys
import sysconfig
from dataclasses import dataclass

from credprov.base.fileio import read_bounded, write_atomic
from credprov.errors import CredentialProviderError
from credprov.sdk._launch import MARKER

ENTRY_POINT_GROUP = "credprov.plugins"


class InstallError(CredentialProviderError):
    """A plugin cannot be installed; ``str()`` is one line."""


@dataclass(frozen=True)
class InstallResult:
    """What installing one plugin did: ``installed``, ``updated`` or ``unchanged``."""

    name: str
    path: str
    status: str  # "installed", "updated", "unchanged"


def available_plugins() -> dict[str, str]:
    """Plugin executable name → ``module:function`` from installed distributions."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _package_root(module: str) -> str:
    top = module.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:
        raise InstallError(f"module {top!r} is not importable in this environment")
    if spec.submodule_search_locations:
        location = next(iter(spec.submodule_search_locations))
    elif spec.origin:
        location = spec.origin
    else:
        raise InstallError(f"cannot locate module {top!r}")
    return os.path.dirname(os.path.abspath(location))


def _site_dirs() -> list[str]:
    dirs = []
    for path in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]:
        if os.path.isdir(path) and path not in dirs:
            dirs.append(path)
    return dirs


def launcher_text(name: str, entry: str, interpreter: str | None = None) -> str:
    """The launcher script for plugin ``name`` whose main is ``entry``."""
    interpreter = interpreter or sys.executable
    if not interpreter or not os.path.isabs(interpreter):
        raise InstallError("cannot tell which interpreter runs this environment")
    if any(c.isspace() for c in interpreter):
        raise InstallError(f"interpreter path {interpreter!r} has spaces; a #! line cannot hold it")
    module = entry.partition(":")[0]
    paths = []
    for root in (_package_root("credprov"), _package_root(module)):
        if root not in paths:
            paths.append(root)
    site_dirs = [d for d in _site_dirs() if d not in paths]
    return (
        f"#!{interpreter} -IS\n"
        f"{MARKER}: {name}\n"
        "# Written by `credprov install`; run it again to update. Do not edit.\n"
        "import sys\n"
        f"sys.path[0:0] = {paths!r}\n"
        "from credprov.sdk._launch import launch\n"
        f"launch([], {site_dirs!r}, {entry!r})\n"
    )


#: Launchers are a few hundred bytes; anything bigger at a target name is not ours.
_MAX_LAUNCHER_BYTES = 64 * 1024


def _current(path: str) -> bytes | None:
    """The bytes of the regular file at ``path`` (never following a symlink), or None when
    it is anything else (a symlink, a FIFO, a device, too big, unreadable)."""
    try:
        return read_bounded(path, _MAX_LAUNCHER_BYTES, follow_symlinks=False)
    except OSError:
        return None


def _is_ours(path: str) -> bool:
    current = _current(path)
    return current is not None and MARKER.encode() in current[:4096]


def install(
    bin_dir: str,
    names: list[str] | None = None,
    force: bool = False,
    interpreter: str | None = None,
) -> list[InstallResult]:
    """Write launchers for ``names`` (default: every available plugin) into ``bin_dir``.

    Raises:
        InstallError: unknown plugin, missing bin dir, or a foreign file in the way.
    """
    if not os.path.isdir(bin_dir):
        raise InstallError(f"bin dir {bin_dir} does not exist (create it first)")
    plugins = available_plugins()
    wanted = names or sorted(plugins)
    unknown = [n for n in wanted if n not in plugins]
    if unknown:
        raise InstallError(
            f"unknown plugin(s) {', '.join(unknown)}; available: {', '.join(sorted(plugins))}"
        )
    # Check everything before writing anything: all or nothing.
    plans = []
    for name in wanted:
        path = os.path.join(bin_dir, name)
        text = launcher_text(name, plugins[name], interpreter)
        if os.path.lexists(path) and not force and not _is_ours(path):
            raise InstallError(
                f"{path} exists and was not written by credprov; use --force to replace it"
            )
        plans.append((name, path, text))
    results = []
    for name, path, text in plans:
        status = "installed"
        if os.path.lexists(path):
            current = _current(path)
            if current == text.encode("utf-8") and os.access(path, os.X_OK):
                results.append(InstallResult(name, path, "unchanged"))
                continue
            status = "updated"
        try:
            write_atomic(path, text.encode("utf-8"), mode=0o755)
        except OSError as exc:
            raise InstallError(f"cannot write {path}: {exc.strerror}") from None
        results.append(InstallResult(name, path, status))
    return results
