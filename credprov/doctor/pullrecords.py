"""A node's KEP-2535 pull records (``<kubelet root>/image_manager``), read through its root.

The kubelet's ``fsPullRecordsAccessor`` keeps intents in ``image_manager/pulling`` and
records in ``image_manager/pulled``; it lists every ``sha256-*`` name (not ``*.tmp``),
reads each file with ``os.ReadFile`` (through symlinks) and decodes it strictly, and it
looks one record up by the name ``sha256-<hash of the imageRef>``.

:class:`NodePullRecords` reads the same files as the kubelet would see them from inside the
node, and only through :class:`~credprov.base.rootfs.NodeRoot`: ``image_manager``, the two
directories and every file are resolved inside the root, so a record that links to
``/etc/shadow`` reads the node's ``/etc/shadow`` (which then fails to decode), never this
machine's, and a link loop is an error, not a hang. The bytes are decoded by the pull
manager's own :func:`~credprov.pullmanager.fsstore.decode_record_file`, so a broken file is
described as ``credprov pull-records`` describes it.

Bounded: each file is read up to the store's 1 MiB cap, and at most ``limit`` files of each
kind (by name); the others are counted and reported as not read. A directory the doctor
cannot use (a file, a dangling or looping link, no permission) is an error, like a file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from credprov.base.rootfs import NodeRoot
from credprov.pullmanager.fsstore import (
    MAX_FILE_SIZE,
    decode_intent_file,
    decode_record_file,
    is_cache_filename,
)
from credprov.pullmanager.interfaces import StoreReadError
from credprov.pullmanager.types import ImagePulledRecord, ImagePullIntent, cache_filename

__all__ = ["MAX_RECORD_FILES", "NodePullRecords", "RecordsScan"]

_T = TypeVar("_T")

#: At most this many intent files and this many record files are read (the kubelet's own
#: in-memory caches hold 1,024 and 2,000).
MAX_RECORD_FILES = 10_000


@dataclass
class RecordsScan:
    """Everything under ``image_manager``, as a listing by the kubelet would find it."""

    intents: list[ImagePullIntent] = field(default_factory=list)
    records: list[ImagePulledRecord] = field(default_factory=list)
    #: One ``<node path>: <reason>`` per file or directory that cannot be used.
    errors: list[str] = field(default_factory=list)
    #: ``<node path> (0755)`` per directory or file that others may read.
    loose: list[str] = field(default_factory=list)
    #: Intent and record files beyond the cap: counted, not read.
    unread_intents: int = 0
    unread_records: int = 0

    @property
    def intent_count(self) -> int:
        """Intents read plus intent files not read."""
        return len(self.intents) + self.unread_intents

    @property
    def record_count(self) -> int:
        """Records read plus record files not read."""
        return len(self.records) + self.unread_records


class NodePullRecords:
    """The read half of the kubelet's records accessor over a node root.

    Args:
        root: the node's filesystem.
        kubelet_root: the kubelet's ``--root-dir`` as a node path.
        limit: at most this many files of each kind are read by :meth:`scan`
            (:data:`MAX_RECORD_FILES` when None).
    """

    def __init__(self, root: NodeRoot, kubelet_root: str, *, limit: int | None = None) -> None:
        self.root = root
        self.manager_dir = f"{kubelet_root.rstrip('/')}/image_manager"
        self.intents_dir = f"{self.manager_dir}/pulling"
        self.records_dir = f"{self.manager_dir}/pulled"
        self.limit = MAX_RECORD_FILES if limit is None else limit

    def exists(self) -> bool:
        """Whether ``image_manager`` is there at all (a dangling link counts as there)."""
        return self.root.lstat(self.manager_dir) is not None

    def scan(self) -> RecordsScan:
        """Read every intent and record file (up to the limit), with their permissions."""
        out = RecordsScan()
        if self._directory(self.manager_dir, out) is None:
            return out
        for directory in (self.intents_dir, self.records_dir):
            if self._directory(directory, out) is None:
                continue
            names = [n for n in self.root.listdir(directory) if is_cache_filename(n)]
            unread = max(0, len(names) - self.limit)
            for name in names[: self.limit]:
                path = f"{directory}/{name}"
                self._check_mode(path, out, directory=False)
                try:
                    if directory == self.intents_dir:
                        intent = self._load(path, decode_intent_file)
                        if intent is not None:
                            out.intents.append(intent)
                    else:
                        record = self._load(path, decode_record_file)
                        if record is not None:
                            out.records.append(record)
                except StoreReadError as exc:
                    out.errors.append(str(exc))
            if directory == self.intents_dir:
                out.unread_intents = unread
            else:
                out.unread_records = unread
        return out

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        """The record of ``image_ref`` (``GetImagePulledRecord``): read by its name, None
        when absent or when the file holds another imageRef (a hash collision).

        Raises:
            StoreReadError: the file exists but cannot be read or decoded (the kubelet then
                verifies the image).
        """
        record = self._load(f"{self.records_dir}/{cache_filename(image_ref)}", decode_record_file)
        return record if record is not None and record.image_ref == image_ref else None

    def image_pull_intent_exists(self, image: str) -> bool:
        """Whether a pull intent for exactly ``image`` exists (``ImagePullIntentExists``).

        Raises:
            StoreReadError: the file exists but cannot be read or decoded.
        """
        intent = self._load(f"{self.intents_dir}/{cache_filename(image)}", decode_intent_file)
        return intent is not None and intent.image == image

    # -- reading -----------------------------------------------------------------------------

    def _load(self, path: str, decode: Callable[[str, bytes], tuple[str, _T]]) -> _T | None:
        """The decoded file, None when it does not exist.

        Raises:
            StoreReadError: ``<node path>: <reason>``.
        """
        try:
            data = self.root.read(path, MAX_FILE_SIZE)
        except FileNotFoundError:
            if self.root.lstat(path) is not None:
                raise StoreReadError(f"{path}: a symlink to nothing inside the root") from None
            return None
        except OSError as exc:
            raise StoreReadError(f"{path}: {exc.strerror or 'cannot read'}") from None
        return decode(path, data)[1]

    def _directory(self, path: str, out: RecordsScan) -> os.stat_result | None:
        """``path``'s stat when it is a directory the doctor can list; None when it is
        missing (fine: nothing was pulled yet) or unusable (an error is added)."""
        st = self.root.stat(path)
        if st is None:
            if self.root.lstat(path) is not None:
                out.errors.append(f"{path}: a symlink to nothing inside the root, or a loop")
            return None
        if not stat.S_ISDIR(st.st_mode):
            out.errors.append(f"{path}: not a directory")
            return None
        if not _may_list(st):
            out.errors.append(f"{path}: cannot list: permission denied (run as root)")
            return None
        self._check_mode(path, out, directory=True, st=st)
        return st

    def _check_mode(
        self, path: str, out: RecordsScan, *, directory: bool, st: os.stat_result | None = None
    ) -> None:
        st = st if st is not None else self.root.stat(path)
        if st is None or (not directory and not stat.S_ISREG(st.st_mode)):
            return
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            out.loose.append(f"{path} ({mode:04o})")


def _may_list(st: os.stat_result) -> bool:
    """Whether this process may list a directory with this owner and mode (root may)."""
    euid = os.geteuid()
    if euid == 0:
        return True
    if st.st_uid == euid:
        bits = st.st_mode >> 6
    elif st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        bits = st.st_mode >> 3
    else:
        bits = st.st_mode
    return bits & 0o5 == 0o5
