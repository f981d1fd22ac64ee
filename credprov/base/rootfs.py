"""A node's filesystem seen from a root directory: every path resolved inside it, bounded reads.

The doctor looks at a node through ``--node-root DIR`` (a node image, a mounted disk, a test
fixture; ``/`` for the node it runs on), and the installer image takes another
architecture's busybox and system libraries from a ``--sysroot ARCH=DIR`` (whose absolute
links, like Debian's ``/lib64/ld-linux-x86-64.so.2``, must resolve inside it, not on the
machine making the image); both tools use this one module, which is why it is in ``base``. A node image is untrusted: its symlinks may point
at ``/etc/shadow`` on the machine the doctor runs on, or loop. Every node path is therefore
resolved as ``openat2(RESOLVE_IN_ROOT)`` resolves it, one component at a time from a
directory descriptor of DIR: an absolute link target restarts from DIR, ``..`` stops at
DIR, more than 40 links is ``ELOOP``. The last component is opened with ``O_NOFOLLOW``
relative to its resolved parent, so a link swapped in between the check and the open is
refused rather than followed. No host path built by string joining is ever opened, and
``os.path.realpath`` (which resolves absolute targets against the host) is never used.

Why not ``openat2`` itself: Python has no wrapper, the syscall needs Linux 5.6, and a ctypes
call would cost the import on every run; the walk below is the same rule in a few lines.

Reads are bounded and refuse anything that is not a regular file: a FIFO left in a fixture
or ``/dev/zero`` named in a unit file must not hang or flood the doctor. Directory listings
are capped. Nothing here writes.
"""

from __future__ import annotations

import errno
import os
import stat

from credprov.base.fileio import (
    FileTooLargeError,
    NotRegularFileError,
    file_kind,
    read_regular_fd,
)
from credprov.errors import FileError

__all__ = ["MAX_LIST_ENTRIES", "MAX_READ_BYTES", "NodeFileError", "NodeRoot", "describe_error"]

#: Unit files, env files, configs and scripts' first lines are small.
MAX_READ_BYTES = 1 << 20
#: Entries read from one directory (``/proc`` of a busy node has a few thousand).
MAX_LIST_ENTRIES = 10_000

_MAX_SYMLINKS = 40
_PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class NodeFileError(FileError, OSError):
    """A node file that cannot be read safely; ``str()`` is one line naming it."""


def _split(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


class _Resolved:
    """The resolved parent directory (an ``O_PATH`` descriptor) and the last component.

    ``name`` is ``None`` for the root itself; ``parts`` are the resolved node path's
    components, with whatever did not exist kept as written.
    """

    __slots__ = ("fd", "missing", "name", "parts")

    def __init__(self, fd: int, name: str | None, parts: list[str], missing: bool) -> None:
        self.fd = fd
        self.name = name
        self.parts = parts
        self.missing = missing

    def close(self) -> None:
        os.close(self.fd)


class NodeRoot:
    """The node's filesystem under ``root`` (``/`` for this machine)."""

    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root)
        #: Directories listed only in part (more than :data:`MAX_LIST_ENTRIES` entries).
        self.truncated: list[str] = []

    @property
    def is_host(self) -> bool:
        """Whether the root is this machine's ``/``."""
        return self.root == "/"

    # -- resolution ------------------------------------------------------------------------

    def _resolve(self, node_path: str, *, follow: bool = True) -> _Resolved:
        """Walk ``node_path`` inside the root.

        Returns the parent's descriptor (the caller closes it) and the last component, which
        is not a symlink when ``follow`` (it is, or does not exist, otherwise). A missing
        component ends the walk with ``missing`` set.

        Raises:
            NodeFileError: ``ELOOP`` (too many links), ``ENOTDIR``, ``EACCES`` on the way.
        """
        root_fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        stack: list[tuple[int, str]] = []  # the directories below the root, with names
        parts = _split(node_path)
        hops = 0

        def current() -> int:
            return stack[-1][0] if stack else root_fd

        def unwind(keep: int) -> None:
            while len(stack) > keep:
                os.close(stack.pop()[0])

        try:
            while parts:
                part = parts.pop(0)
                if part == "..":
                    unwind(max(len(stack) - 1, 0))
                    continue
                last = not parts
                try:
                    fd = os.open(part, _PATH_FLAGS, dir_fd=current())
                except FileNotFoundError:
                    names = [n for _, n in stack]
                    parent = os.dup(current())
                    return _Resolved(parent, part, [*names, part, *parts], True)
                except OSError as exc:
                    raise NodeFileError(
                        exc.errno, exc.strerror or "cannot open", node_path
                    ) from None
                st = os.fstat(fd)
                if stat.S_ISLNK(st.st_mode) and (follow or not last):
                    hops += 1
                    try:
                        target = os.readlink(part, dir_fd=current())
                    finally:
                        os.close(fd)
                    if hops > _MAX_SYMLINKS:
                        raise NodeFileError(
                            errno.ELOOP, "too many levels of symbolic links", node_path
                        )
                    if target.startswith("/"):
                        unwind(0)
                    parts = _split(target) + parts
                    continue
                if last:
                    os.close(fd)
                    names = [n for _, n in stack]
                    return _Resolved(os.dup(current()), part, [*names, part], False)
                if not stat.S_ISDIR(st.st_mode):
                    os.close(fd)
                    raise NodeFileError(errno.ENOTDIR, "not a directory", node_path)
                stack.append((fd, part))
            names = [n for _, n in stack]
            if not stack:
                return _Resolved(os.dup(root_fd), None, [], False)
            # The path named a directory (possibly through ``..``): re-express it as
            # parent + name so that every caller opens the last component the same way.
            fd, name = stack.pop()
            os.close(fd)
            return _Resolved(os.dup(current()), name, names, False)
        finally:
            unwind(0)
            os.close(root_fd)

    def resolve(self, node_path: str) -> str:
        """The node path with every symlink resolved inside the root (a node path).

        Components that do not exist are kept as they are (the result names where the file
        would be). Too many links raise :class:`NodeFileError` (``ELOOP``).
        """
        resolved = self._resolve(node_path)
        resolved.close()
        return "/" + "/".join(resolved.parts)

    def host_path(self, node_path: str) -> str:
        """Where ``node_path`` (resolved inside the root) is on this machine: for messages
        and for handing a path to a process confined to the root, never for opening."""
        parts = _split(self.resolve(node_path))
        return os.path.join(self.root, *parts) if parts else self.root

    def display(self, node_path: str) -> str:
        """How a node path is shown: as the node sees it, with the root when there is one."""
        return node_path if self.is_host else f"{node_path} (in {self.root})"

    # -- metadata --------------------------------------------------------------------------

    def stat(self, node_path: str, *, follow: bool = True) -> os.stat_result | None:
        """The file's status (of a final symlink itself when not ``follow``); None when it
        does not exist or cannot be reached inside the root."""
        try:
            resolved = self._resolve(node_path, follow=follow)
        except (OSError, ValueError):
            return None
        try:
            if resolved.missing:
                return None
            if resolved.name is None:
                return os.fstat(resolved.fd)
            return os.stat(resolved.name, dir_fd=resolved.fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            resolved.close()

    def lstat(self, node_path: str) -> os.stat_result | None:
        """:meth:`stat` without following a final symlink (its parents are followed, inside
        the root): tells a dangling or looping link from a missing file."""
        return self.stat(node_path, follow=False)

    def readlink(self, node_path: str) -> str | None:
        """The target of a symlink (its parents resolved inside the root), as written in the
        link; None when ``node_path`` is not a symlink or cannot be reached."""
        try:
            resolved = self._resolve(node_path, follow=False)
        except (OSError, ValueError):
            return None
        try:
            if resolved.missing or resolved.name is None:
                return None
            return os.readlink(resolved.name, dir_fd=resolved.fd)
        except OSError:
            return None
        finally:
            resolved.close()

    def exists(self, node_path: str) -> bool:
        """Whether ``node_path`` resolves to something inside the root."""
        return self.stat(node_path) is not None

    def is_executable_file(self, node_path: str) -> bool:
        """Whether ``node_path`` is a regular file with an execute bit."""
        st = self.stat(node_path)
        return st is not None and stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)

    # -- contents --------------------------------------------------------------------------

    def _open(self, node_path: str, flags: int) -> int:
        """A descriptor of the resolved file opened with ``flags`` (``O_NOFOLLOW`` always).

        Raises:
            FileNotFoundError: no such file (``filename`` is the node path).
            NodeFileError: anything else.
        """
        try:
            resolved = self._resolve(node_path)
        except ValueError:
            raise NodeFileError(errno.EINVAL, "invalid path", node_path) from None
        try:
            if resolved.missing:
                raise FileNotFoundError(errno.ENOENT, "no such file", node_path)
            if resolved.name is None:
                return os.open(".", flags & ~os.O_NOFOLLOW, dir_fd=resolved.fd)
            return os.open(resolved.name, flags, dir_fd=resolved.fd)
        except FileNotFoundError as exc:
            raise FileNotFoundError(errno.ENOENT, "no such file", node_path) from exc
        except NodeFileError:
            raise
        except OSError as exc:
            raise NodeFileError(exc.errno, exc.strerror or "cannot open", node_path) from None
        finally:
            resolved.close()

    def read(self, node_path: str, limit: int = MAX_READ_BYTES, *, head: bool = False) -> bytes:
        """The bytes of a regular file, at most ``limit``.

        Args:
            head: return the first ``limit`` bytes of a bigger file instead of refusing it
                (for ELF headers and shebang lines).

        Raises:
            FileNotFoundError: no such file.
            NotRegularFileError: a FIFO, device, socket or directory.
            FileTooLargeError: more than ``limit`` bytes (unless ``head``).
            NodeFileError: unreadable, a link loop.
        """
        fd = self._open(node_path, _READ_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFileError(node_path, file_kind(st.st_mode))
            os.set_blocking(fd, True)
            if head:
                return os.read(fd, min(limit, st.st_size + 1))[:limit]
            return read_regular_fd(fd, st.st_size, limit, node_path)
        except (NotRegularFileError, FileTooLargeError):
            raise
        except OSError as exc:
            raise NodeFileError(exc.errno, exc.strerror or "cannot read", node_path) from None
        finally:
            os.close(fd)

    def open_regular(self, node_path: str) -> int:
        """A blocking descriptor of the regular file ``node_path``, for bounded reads at
        offsets (``os.pread``) of a file too big to read whole (a kubelet binary); the
        caller closes it.

        Raises:
            FileNotFoundError: no such file.
            NotRegularFileError: a FIFO, device, socket or directory (refused before any read).
            NodeFileError: unreadable, a link loop.
        """
        fd = self._open(node_path, _READ_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFileError(node_path, file_kind(st.st_mode))
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read_text(self, node_path: str, limit: int = MAX_READ_BYTES) -> str:
        """The file as text (UTF-8, bad bytes replaced), at most ``limit`` bytes read."""
        return self.read(node_path, limit).decode("utf-8", "replace")

    def entries(self, node_path: str) -> list[tuple[str, bool]]:
        """``(name, is a directory)`` of each entry, sorted by name; a symlink is not a
        directory (as Go's ``DirEntry.IsDir``). At most :data:`MAX_LIST_ENTRIES` are read
        (the directory is then recorded in :attr:`truncated`).

        Raises:
            FileNotFoundError: no such directory.
            NodeFileError: not a directory, unreadable, a link loop.
        """
        fd = self._open(node_path, _DIR_FLAGS)
        out: list[tuple[str, bool]] = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    if len(out) >= MAX_LIST_ENTRIES:
                        self.truncated.append(node_path)
                        break
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    out.append((entry.name, is_dir))
        except OSError as exc:
            raise NodeFileError(exc.errno, exc.strerror or "cannot list", node_path) from None
        finally:
            os.close(fd)
        out.sort(key=lambda e: e[0].encode("utf-8", "surrogateescape"))
        return out

    def is_dir(self, node_path: str) -> bool:
        """Whether the node path is a directory (:class:`~credprov.credentialprovider.plugin.config.ConfigFiles`).

        Raises:
            OSError: it does not exist or cannot be reached inside the root.
        """
        resolved = self._resolve(node_path)
        try:
            if resolved.missing:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", node_path)
            if resolved.name is None:
                return True
            return stat.S_ISDIR(
                os.stat(resolved.name, dir_fd=resolved.fd, follow_symlinks=False).st_mode
            )
        finally:
            resolved.close()

    def listdir(self, node_path: str) -> list[str]:
        """Entry names of a directory, sorted; empty when it is missing or unreadable."""
        try:
            return [name for name, _ in self.entries(node_path)]
        except OSError:
            return []


def describe_error(exc: OSError) -> str:
    """One line for a read error: ``<path>: <reason>``."""
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename}: no such file"
    reason = exc.strerror or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason
