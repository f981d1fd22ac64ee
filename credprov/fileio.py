"""Reading the files credprov is given: bounded, non-blocking, regular files only.

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

from credprov.errors import CredprovError

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


class NotRegularFileError(CredprovError, OSError):
    """The path names a FIFO, socket, device or directory instead of a regular file."""

    def __init__(self, path: str, kind: str) -> None:
        OSError.__init__(self, errno.EINVAL, f"not a regular file ({kind})", path)


class FileTooLargeError(CredprovError, OSError):
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
        chunks: list[bytes] = []
        total = 0
        # Read to EOF but never past the limit: the file may grow after fstat.
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise FileTooLargeError(path, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


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


def read_text(path: str, limit: int = MAX_FILE_BYTES, *, follow_symlinks: bool = True) -> str:
    """:func:`read_bounded` decoded as UTF-8.

    Raises:
        UnicodeDecodeError: not UTF-8. And what :func:`read_bounded` raises.
    """
    return read_bounded(path, limit, follow_symlinks=follow_symlinks).decode("utf-8")
