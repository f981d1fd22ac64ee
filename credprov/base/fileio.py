"""Reading the files credprov is given (bounded, non-blocking, regular files only) and
writing files atomically (:func:`write_atomic`, the one helper outside the stdlib-only SDK).

Every file credprov reads (configs and config-dir entries, pull secrets, docker configs,
object and pod files, scenarios, token files, keep files, install targets) goes through
:func:`read_bounded`, so that one place guarantees:

* the file is opened with ``O_NONBLOCK``, so a FIFO never blocks the caller (the kubelet
  would hang on one; credprov says what it is instead);
* it must be a regular file: FIFOs, sockets, character and block devices (``/dev/zero``)
  and directories are refused with :class:`NotRegularFileError`;
* at most ``limit`` bytes are read: a larger file raises :class:`FileTooLargeError`
  without reading the rest, so memory stays bounded whatever the file is;
* with ``follow_symlinks=False`` a symlink is refused (``O_NOFOLLOW``), for files credprov
  may later replace (install targets).

Both errors are :class:`OSError` subclasses with a ``strerror``, so callers that format
``OSError`` the kubelet's way keep their messages; both also derive from
:class:`credprov.errors.CredprovError`.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from credprov.errors import FileError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import BinaryIO

#: The default cap on any file credprov reads (16 MiB, the kubelet's own bound for configs).
MAX_FILE_BYTES = 16 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFileError(FileError, OSError):
    """The path names a FIFO, socket, device or directory instead of a regular file."""

    def __init__(self, path: str, kind: str) -> None:
        OSError.__init__(self, errno.EINVAL, f"not a regular file ({kind})", path)


class FileTooLargeError(FileError, OSError):
    """The file holds more than the cap for what it is."""

    def __init__(self, path: str, limit: int) -> None:
        OSError.__init__(self, errno.EFBIG, f"larger than {limit} bytes", path)
        self.limit = limit


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a directory"``... for a non-regular ``st_mode``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path: str, limit: int = MAX_FILE_BYTES, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises:
        NotRegularFileError: a FIFO, socket, device or directory.
        FileTooLargeError: more than ``limit`` bytes.
        OSError: the file cannot be opened or read (``ELOOP`` for a refused symlink).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(path, file_kind(st.st_mode))
        if st.st_size > limit:
            raise FileTooLargeError(path, limit)
        return read_regular_fd(fd, st.st_size, limit, path)
    finally:
        os.close(fd)


def read_regular_fd(fd: int, size: int, limit: int, path: str) -> bytes:
    """Read the open regular file ``fd`` (``size`` bytes at fstat) to its end, never more
    than ``limit`` bytes: the file may grow after fstat.

    The first read asks for the file's size (plus one byte, to see the end): ``os.read``
    allocates what it is asked for, so asking for the limit would cost the limit per read.
    A regular file's read comes up short only at its end, so a short read ends the loop.

    Raises:
        FileTooLargeError: the file holds more than ``limit`` bytes.
        OSError: a read failed.
    """
    chunks: list[bytes] = []
    total = 0
    want = size + 1
    while total <= limit:
        asked = min(want, limit + 1 - total)
        chunk = os.read(fd, asked)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if len(chunk) < asked:
            break
        want = 65536
    if total > limit:
        raise FileTooLargeError(path, limit)
    return b"".join(chunks)


def read_stream(
    stream: BinaryIO | None = None, limit: int = MAX_FILE_BYTES, name: str = "-"
) -> bytes:
    """At most ``limit`` bytes of a stream (standard input by default).

    Raises:
        FileTooLargeError: more than ``limit`` bytes.
    """
    fh = stream if stream is not None else sys.stdin.buffer
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(name, limit)
    return data


class InputReadError(FileError):
    """An input named on the command line (a file or ``-``) could not be read; ``str()`` is
    one line naming it."""


def read_input(path: str, limit: int, what: str) -> tuple[bytes, str]:
    """The bytes of the file ``path`` (``-``: standard input), at most ``limit``, with how
    messages name it (``standard input`` or ``<what> <path>``).

    Raises:
        InputReadError: larger than ``limit``, not a regular file, or unreadable.
    """
    where = "standard input" if path == "-" else f"{what} {path}"
    try:
        if path == "-":
            return read_stream(limit=limit, name=where), where
        return read_bounded(path, limit), where
    except FileTooLargeError:
        raise InputReadError(f"{where} is larger than {limit} bytes") from None
    except OSError as exc:
        raise InputReadError(f"cannot read {where}: {exc.strerror or exc}") from None


def read_text(path: str, limit: int = MAX_FILE_BYTES, *, follow_symlinks: bool = True) -> str:
    """:func:`read_bounded` decoded as UTF-8.

    Raises:
        UnicodeDecodeError: not UTF-8. And what :func:`read_bounded` raises.
    """
    return read_bounded(path, limit, follow_symlinks=follow_symlinks).decode("utf-8")


# -- writing ------------------------------------------------------------------------------------

#: Filesystems that cannot fsync a directory say so with these; the rename already happened.
_DIR_FSYNC_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EBADF})


class AtomicWriteError(FileError, OSError):
    """A write that did not happen (or, ``stage == "sync"``, may not survive a crash).

    ``stage`` is ``"create"`` (the temp file), ``"write"`` (data, fsync or rename) or
    ``"sync"`` (the directory fsync after the rename); the ``OSError`` is ``__cause__``.
    """

    def __init__(self, stage: str, path: str, cause: OSError) -> None:
        OSError.__init__(self, cause.errno, cause.strerror or str(cause), path)
        self.stage = stage


def sync_dir(directory: str) -> None:
    """fsync ``directory`` so a rename or unlink in it is durable.

    Raises:
        OSError: it cannot be opened or synced (not for filesystems that cannot sync a
            directory at all).
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _DIR_FSYNC_UNSUPPORTED:
            raise
    finally:
        os.close(fd)


def write_atomic(
    path: str, data: bytes, *, mode: int = 0o644, tmp_suffix: str = ".tmp", durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` all at once: a reader sees the old file or the new one.

    The data goes to a unique temp file next to ``path`` (``<path>.<pid>.<random><suffix>``,
    ``O_EXCL|O_NOFOLLOW``, so two writers never share one and a planted symlink is not
    followed), is fsynced, then renamed over ``path`` (which replaces a symlink there, never
    its target); with ``durable`` the directory is fsynced too. A failed or interrupted
    write (any exception, ``KeyboardInterrupt`` included) leaves no temp file behind.
    (The plugin SDK keeps its own copy: it imports only the stdlib.)

    Raises:
        AtomicWriteError: see its ``stage``.
    """
    directory = os.path.dirname(os.path.abspath(path))
    # os.urandom, not secrets.token_hex: the same bytes without importing hashlib and
    # OpenSSL (~9 ms), since plugins' telemetry writes through here on their warm path.
    tmp = f"{path}.{os.getpid()}.{os.urandom(8).hex()}{tmp_suffix}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, mode)
    except OSError as exc:
        raise AtomicWriteError("create", tmp, exc) from exc
    try:
        try:
            os.fchmod(fd, mode)  # whatever the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            # Data must be on disk before the rename makes it visible under the real name;
            # otherwise a power loss can leave an empty or torn file.
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        # Every way out (an interrupt, SIGTERM raised as an exception by the doctor's loop)
        # removes the temp file, not only a failed write; a SIGKILL cannot be caught: the
        # writers remove stale temp files (credprov.base.textfile.remove_stale_temps).
        # Not contextlib.suppress: plugins' telemetry writes through here on their warm path.
        try:  # noqa: SIM105
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise AtomicWriteError("write", path, exc) from exc
        raise
    if durable:
        try:
            sync_dir(directory)
        except OSError as exc:
            raise AtomicWriteError("sync", path, exc) from exc
