"""``validate-config``: check provider config files as ONE kubelet config directory, no Python.

The installer image must never write a config the kubelet refuses: a kubelet that cannot
load its credential provider config exits at start, so a bad file in its config directory
crash-loops the node at the next kubelet restart. This tool is the bundle's (and so the
image's) way to ask credprov's kubelet-exact loader
(:func:`credprov.credentialprovider.plugin.config.load_config`) before anything is written::

    validate-config [--names] PATH...

Every ``PATH`` is a directory or a file; together they are read as one config directory
would be: a directory contributes its ``*.json``/``*.yaml``/``*.yml`` entries that are not
directories (symlinks followed, as the kubelet does), a file joins under its own name, and a
later argument replaces an earlier entry of the same name. So
``validate-config /host/config /tmp/x/credprov-plugins.yaml`` is the kubelet's view of
``/host/config`` once that candidate has been renamed into it: decode errors, the kubelet's
validation and provider names duplicated across files, with the kubelet's words. The
union is presented to the loader as a virtual directory (a
:class:`~credprov.credentialprovider.plugin.config.ConfigFiles`), named after the first
directory given (else the first file's directory), so errors name each file as it will be
named there; the kubelet's own order (bytewise by name) and ``sha256:`` hash follow.

Exit 0 when valid (stdout: with ``--names`` the provider names, one per line; else one
summary line), 1 with one line on stderr when not (the kubelet's text), 2 on usage errors.
Nothing printed ever holds a config's values (``env`` values are often keys): only provider
names, counts, the hash and the loader's messages, which quote names and positions, not
values.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence

from credprov._go.fmt import go_quote, os_error
from credprov.base.fileio import read_bounded
from credprov.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError

__all__ = ["PROG", "UnionFiles", "main", "union_files"]

PROG = "validate-config"
USAGE = f"usage: {PROG} [--names] PATH..."
DESCRIPTION = (
    "Check provider config files and directories, read together as one kubelet config "
    "directory (a later file replaces an entry of the same name), with the kubelet's "
    "decoding and validation. --names prints the provider names. Exit 0 when valid, 1 "
    "when not (one line, the kubelet's text), 2 on usage errors."
)
_CONFIG_EXTENSIONS = (".json", ".yaml", ".yml")


class UnionFiles:
    """Files of several places, seen as the entries of one directory ``path``.

    Implements the loader's ``ConfigFiles`` protocol: ``is_dir(path)`` is true,
    ``entries(path)`` lists the union, ``read(path/NAME)`` reads the real file bounded (and
    refuses FIFOs and devices, as the loader always does).
    """

    def __init__(self, path: str, members: dict[str, str]) -> None:
        self.path = path
        self.members = dict(members)

    def is_dir(self, path: str) -> bool:
        """Only the virtual directory itself is a directory."""
        return path == self.path

    def entries(self, path: str) -> list[tuple[str, bool]]:
        """The union's names; never a directory (those were dropped when it was built)."""
        return [(name, False) for name in self.members]

    def read(self, path: str, limit: int) -> bytes:
        """The bytes of the member ``path`` stands for, at most ``limit``."""
        name = os.path.basename(path)
        if os.path.dirname(path) != self.path or name not in self.members:
            raise FileNotFoundError(2, "no such file or directory", path)
        return read_bounded(self.members[name], limit)


def _directory_members(path: str) -> dict[str, str]:
    from credprov.credentialprovider.plugin.config import ConfigError

    try:
        with os.scandir(path) as it:
            # Like Go's DirEntry.IsDir(): a symlink is not a directory, whatever it points to.
            return {
                e.name: os.path.join(path, e.name)
                for e in it
                if not e.is_dir(follow_symlinks=False)
            }
    except OSError as exc:
        raise ConfigError(
            f"unable to read directory {go_quote(path)}: {os_error('open', path, exc)}"
        ) from None


def union_files(paths: Sequence[str]) -> UnionFiles:
    """The union of ``paths`` as one directory (see the module docstring).

    Raises:
        UsageError: a file whose name the kubelet would not read from a directory.
        ConfigError: a path that cannot be reached or a directory that cannot be listed.
    """
    from credprov.credentialprovider.plugin.config import ConfigError

    members: dict[str, str] = {}
    first_dir = ""
    first_file_dir = ""
    for path in paths:
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError as exc:
            raise ConfigError(
                f"unable to access path {go_quote(path)}: {os_error('stat', path, exc)}"
            ) from None
        if is_dir:
            first_dir = first_dir or path.rstrip("/") or "/"
            members.update(_directory_members(path))
            continue
        name = os.path.basename(path)
        if os.path.splitext(name)[1] not in _CONFIG_EXTENSIONS:
            raise UsageError(
                f"{path}: a config file's name must end in .json, .yaml or .yml "
                "(the kubelet reads only those from a config directory)"
            )
        first_file_dir = first_file_dir or os.path.dirname(path) or "."
        members.pop(name, None)  # the later argument's entry, also in the kubelet's order
        members[name] = path
    return UnionFiles(first_dir or first_file_dir, members)


def _parse(argv: Sequence[str]) -> tuple[bool, list[str]]:
    names = False
    paths: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            paths += args
            break
        if arg == "--names":
            names = True
        elif arg in ("-h", "--help"):
            raise UsageError("")
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg}")
        else:
            paths.append(arg)
    if not paths:
        raise UsageError("no PATH given")
    if "-" in paths:
        raise UsageError("standard input is not a config directory's file; give a PATH")
    return names, paths


def _say(line: str) -> None:
    from credprov.base.redact import terminal_safe

    print(f"{PROG}: error: {terminal_safe(line)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``validate-config`` on ``argv`` (default ``sys.argv[1:]``); the exit status."""
    for stream in (sys.stdout, sys.stderr):  # text that cannot be encoded is escaped
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        names, paths = _parse(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        if not str(exc):
            print(f"{USAGE}\n\n{DESCRIPTION}")
            return EXIT_OK
        _say(f"{exc} ({USAGE})")
        return EXIT_USAGE
    from credprov.credentialprovider.plugin.config import ConfigError, load_config

    try:
        files = union_files(paths)
        config, digest = load_config(files.path, files=files)
    except UsageError as exc:
        _say(str(exc))
        return EXIT_USAGE
    except ConfigError as exc:
        _say(str(exc))
        return EXIT_FAILURE
    except Exception as exc:  # never a traceback; the type only, never a value
        _say(f"unexpected {type(exc).__name__} while reading the config")
        return EXIT_FAILURE
    if names:
        sys.stdout.write("".join(f"{p.name}\n" for p in config.providers))
    else:
        files_read = sum(1 for n in files.members if os.path.splitext(n)[1] in _CONFIG_EXTENSIONS)
        print(f"valid: {len(config.providers)} provider(s) in {files_read} file(s), hash {digest}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
