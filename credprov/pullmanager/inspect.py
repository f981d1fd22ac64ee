"""Checking the pull-record files on disk one by one, as ``pull-records verify`` and
``migrate`` report them.

The store's list functions return what decodes and a message per file that does not; this
module looks at each file: it must be a regular file (never followed through a symlink),
at most the store's size cap, decode strictly, and sit under the name the kubelet looks for
(``sha256-<hash of its key>``): a file under another name is invisible to the kubelet.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["FileCheck", "scan_files"]


@dataclass
class FileCheck:
    """What one intent or record file holds: its version and key, or why it does not decode, and
    whether its name fits its key.
    """

    path: str
    kind: str  # "intent" | "record"
    version: str | None = None
    key: str | None = None  # the image (intent) or imageRef (record)
    error: str | None = None
    misnamed: bool = False  # decodes, but its name is not the hash of its key

    @property
    def target(self) -> str:
        """Where the kubelet (and a migration) writes this file's content."""
        from credprov.pullmanager.types import cache_filename

        assert self.key is not None
        return os.path.join(os.path.dirname(self.path), cache_filename(self.key))


def scan_files(store: Any) -> list[FileCheck]:
    """Decode every cache file strictly; also check it is where the kubelet looks for it."""
    from credprov.base.fileio import FileTooLargeError, NotRegularFileError, read_bounded
    from credprov.pullmanager.fsstore import MAX_FILE_SIZE, is_cache_filename
    from credprov.pullmanager.types import (
        RecordDecodeError,
        cache_filename,
        decode_intent,
        decode_record,
    )

    out: list[FileCheck] = []
    for kind, directory in (("intent", store.intents_dir), ("record", store.records_dir)):
        try:
            names = sorted(os.listdir(directory))
        except FileNotFoundError:
            continue
        except OSError as exc:
            out.append(FileCheck(directory, kind, error=f"cannot list: {exc.strerror}"))
            continue
        for name in names:
            if not is_cache_filename(name):
                continue  # the kubelet ignores these too
            path = os.path.join(directory, name)
            check = FileCheck(path, kind)
            out.append(check)
            try:
                data = read_bounded(path, MAX_FILE_SIZE, follow_symlinks=False)
            except FileTooLargeError:
                check.error = f"larger than {MAX_FILE_SIZE} bytes"
                continue
            except NotRegularFileError:
                check.error = "not a regular file"
                continue
            except OSError as exc:
                check.error = (
                    "not a regular file"
                    if exc.errno == errno.ELOOP
                    else f"cannot read: {exc.strerror}"
                )
                continue
            try:
                if kind == "intent":
                    check.version, intent = decode_intent(data)
                    check.key = intent.image
                else:
                    check.version, record = decode_record(data)
                    check.key = record.image_ref
            except RecordDecodeError as exc:
                check.error = f"does not decode: {str(exc).splitlines()[0]}"
                continue
            if cache_filename(check.key) != name:
                # The kubelet finds files by the hash of their key only: this one is invisible.
                field = "image" if kind == "intent" else "imageRef"
                check.error = f"file name does not match its {field} {check.key!r}"
                check.misnamed = True
    return out
