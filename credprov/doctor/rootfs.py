"""A node's filesystem seen from a root directory: paths resolved inside it, bounded reads.

The doctor looks at a node through ``--root DIR`` (a node image, a mounted disk, a test
fixture; ``/`` for the node it runs on). Every node path (``/etc/default/kubelet``) is
resolved the way a process chrooted into DIR would see it: symlinks are followed one
component at a time and an absolute target or a ``..`` restarts from, or stops at, DIR, so a
link can never lead the doctor out of the root. ``os.path.realpath`` cannot do this (it
resolves absolute targets against the host), hence the small resolver here.

Reads are bounded and refuse anything that is not a regular file: a FIFO left in a fixture
or ``/dev/zero`` named in a unit file must not hang or flood the doctor. Nothing here
writes.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["MAX_READ_BYTES", "NodeFileError", "NodeRoot", "describe_error"]

#: Unit files, env files, configs and scripts' first lines are small.
MAX_READ_BYTES = 1 << 20

_MAX_SYMLINKS = 40
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NodeFileError(OSError):
    """A node file that cannot be read safely; ``str()`` is one line naming it."""


class NodeRoot:
    """The node's filesystem under ``root`` (``/`` for this machine)."""

    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root)

    @property
    def is_host(self) -> bool:
        return self.root == "/"

    def resolve(self, node_path: str) -> str:
        """The node path with every symlink resolved inside the root (a node path).

        Components that do not exist are kept as they are (the result names where the file
        would be). Too many links raise :class:`NodeFileError` (``ELOOP``).
        """
        parts = [p for p in node_path.split("/") if p not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = [*resolved, part]
            host = self._join(candidate)
            try:
                st = os.lstat(host)
            except OSError:
                resolved = [*candidate, *parts]
                break
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > _MAX_SYMLINKS:
                    raise NodeFileError(errno.ELOOP, "too many levels of symbolic links", node_path)
                target = os.readlink(host)
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p not in ("", ".")] + parts
                continue
            resolved = candidate
        return "/" + "/".join(resolved)

    def host_path(self, node_path: str) -> str:
        """Where ``node_path`` (symlinks resolved inside the root) is on this machine."""
        resolved = self.resolve(node_path)
        return self._join([p for p in resolved.split("/") if p])

    def _join(self, parts: list[str]) -> str:
        return os.path.join(self.root, *parts) if parts else self.root

    def display(self, node_path: str) -> str:
        """How a node path is shown: as the node sees it, with the root when there is one."""
        return node_path if self.is_host else f"{node_path} (in {self.root})"

    def stat(self, node_path: str) -> os.stat_result | None:
        try:
            return os.stat(self.host_path(node_path))
        except (OSError, ValueError):
            return None

    def exists(self, node_path: str) -> bool:
        return self.stat(node_path) is not None

    def is_executable_file(self, node_path: str) -> bool:
        st = self.stat(node_path)
        return st is not None and stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)

    def read(self, node_path: str, limit: int = MAX_READ_BYTES, *, head: bool = False) -> bytes:
        """The bytes of a regular file, at most ``limit``.

        Args:
            head: return the first ``limit`` bytes of a bigger file instead of refusing it
                (for ELF headers and shebang lines).

        Raises:
            FileNotFoundError: no such file.
            NodeFileError: not a regular file (FIFO, device, directory), too big, unreadable.
        """
        host = self.host_path(node_path)
        try:
            fd = os.open(host, _READ_FLAGS)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise NodeFileError(exc.errno, exc.strerror or "cannot open", node_path) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NodeFileError(errno.EINVAL, "not a regular file", node_path)
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            total = 0
            while total <= limit:
                chunk = os.read(fd, limit + 1 - total)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            data = b"".join(chunks)
        except NodeFileError:
            raise
        except OSError as exc:
            raise NodeFileError(exc.errno, exc.strerror or "cannot read", node_path) from None
        finally:
            os.close(fd)
        if len(data) > limit:
            if head:
                return data[:limit]
            raise NodeFileError(errno.EFBIG, f"larger than {limit} bytes", node_path)
        return data

    def read_text(self, node_path: str, limit: int = MAX_READ_BYTES) -> str:
        return self.read(node_path, limit).decode("utf-8", "replace")

    def listdir(self, node_path: str) -> list[str]:
        """Entry names of a directory, sorted; empty when it is missing or unreadable."""
        try:
            return sorted(os.listdir(self.host_path(node_path)))
        except (OSError, ValueError):
            return []

    def lstat(self, node_path: str) -> os.stat_result | None:
        """Like :meth:`stat`, but a final symlink is not followed (its parents are, inside
        the root): tells a dangling or looping link from a missing file."""
        parent, _, name = node_path.rstrip("/").rpartition("/")
        if name in ("", ".", ".."):
            return self.stat(node_path)
        try:
            return os.lstat(os.path.join(self.host_path(parent or "/"), name))
        except (OSError, ValueError):
            return None


def describe_error(exc: OSError) -> str:
    """One line for a read error: ``<path>: <reason>``."""
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename}: no such file"
    reason = exc.strerror or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason
