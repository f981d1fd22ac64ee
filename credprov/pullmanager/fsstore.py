"""The on-disk pull records: ``<kubelet root>/image_manager/{pulling,pulled}``.

Mirrors the kubelet's ``fsPullRecordsAccessor`` (``pkg/kubelet/images/pullmanager/
fs_pullrecords.go``, 1.35+) so that credprov and a kubelet can read each other's files:

* intents live in ``image_manager/pulling``, records in ``image_manager/pulled``; each file is
  ``sha256-<hex of sha256(image or imageRef)>`` (:func:`~credprov.pullmanager.types.cache_filename`)
  holding the kubelet's compact JSON, written as ``v1beta1``;
* directories are (re)created ``0700`` on every write, files are ``0600``;
* listing reads every entry whose name starts with ``sha256-`` and does not end in ``.tmp``;
  entries that fail are reported one message each while the valid ones are still returned;
* ``image_pull_intent_exists`` compares the decoded ``image`` and ``get_image_pulled_record``
  the decoded ``imageRef`` with the key asked for (hash-collision guard);
* deleting a missing file is fine;
* at construction every decodable ``v1alpha1`` file is rewritten as ``v1beta1`` through the
  normal write path; errors are only collected (:attr:`FSPullRecordsAccessor.startup_errors`);
* the start-up migration has to read every file anyway; what it found is kept and
  answers the next ``list_*`` calls (the in-memory layer's warm-up, the manager's
  housekeeping), so at start-up each file is read once. A file already in the storage
  version and in an encoder's exact form (nearly every file) is only checked
  (``well_formed_*_version``: it then decodes without fail) and kept as its bytes, decoded
  when a list returns it; :meth:`~FSPullRecordsAccessor.list_image_pulled_records_head`
  returns the first items of a list with its length and errors, so the in-memory layer's
  warm-up decodes only the records it keeps (2,000 of 10,000). The kept listing is used only
  while the directory's mtime is the one read before the scan (any create, delete or
  rename in it, by any process, changes that) and this store has written nothing since,
  and for at most a few seconds, and it is dropped by
  :meth:`~FSPullRecordsAccessor.forget_startup_scan` (the manager calls it at the end of its
  construction);
* :meth:`~FSPullRecordsAccessor.count_intents`/:meth:`~FSPullRecordsAccessor.count_records`
  count valid-looking names without decoding (``countCacheFiles``).

Where we are stronger than upstream:

* writes go to a unique temp file (``<target>.<pid>.<random>.tmp``, ``O_EXCL|O_NOFOLLOW``) that
  is fsynced before the rename, and the directory is fsynced after it, so a crash or power
  loss leaves either the old or the new file, never a torn one, and two writers never share
  a temp file (upstream uses one fixed ``<target>.tmp`` and no fsync);
* reads never follow symlinks, refuse non-regular files and files over 1 MiB, and a valid
  looking name that is not a regular file (a directory, a symlink, a FIFO) is reported as an
  error by the list functions instead of being skipped silently: an absent record would let
  a preloaded-image policy through, an error makes the manager fail safe;
* error messages carry the path and a one-line reason, never the file's content; the
  decoding step alone (:func:`decode_intent_file`, :func:`decode_record_file`: bytes in,
  the same messages out) serves readers that fetch the bytes their own way, such as the
  doctor reading a node image through its root;
* :meth:`~FSPullRecordsAccessor.locked`/:meth:`~FSPullRecordsAccessor.global_lock` are
  ``flock``-based striped locks shared by every process using the same kubelet root (upstream
  has in-process mutexes only and assumes one kubelet). The store does **not** take them
  around its single operations (an atomic rename makes each one safe on its own); callers
  hold them around read-modify-write sequences so that no update is lost.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

from credprov.base.fileio import (
    AtomicWriteError,
    FileTooLargeError,
    read_regular_fd,
    sync_dir,
    write_atomic,
)
from credprov.base.redact import shorten
from credprov.pullmanager.interfaces import StoreReadError, StoreWriteError
from credprov.pullmanager.locks import MAX_LOCK_STRIPES, key_hash
from credprov.pullmanager.types import (
    STORAGE_VERSION,
    ImagePulledRecord,
    ImagePullIntent,
    RecordDecodeError,
    cache_filename,
    decode_intent,
    decode_record,
    encode_intent,
    encode_record,
    well_formed_intent_version,
    well_formed_record_version,
)

__all__ = [
    "CACHE_FILE_PREFIX",
    "LOCK_STRIPES",
    "MAX_FILE_SIZE",
    "TMP_SUFFIX",
    "FSPullRecordsAccessor",
    "LockKind",
    "decode_intent_file",
    "decode_record_file",
    "is_cache_filename",
]

CACHE_FILE_PREFIX = "sha256-"
TMP_SUFFIX = ".tmp"
#: A record is a few hundred bytes; anything this big is not one of ours (and must not be
#: slurped into memory on every read).
MAX_FILE_SIZE = 1 << 20
#: The kubelet's StripedLockSet never has more than 31 stripes.
LOCK_STRIPES = MAX_LOCK_STRIPES

LockKind = Literal["intent", "record"]
_T = TypeVar("_T")
_LOCK_KINDS: tuple[LockKind, ...] = ("intent", "record")

# O_NOFOLLOW: a symlink planted in the records directory must not redirect reads or writes.
# O_NONBLOCK on reads: opening a FIFO planted under a record's name must not hang.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Filesystems that cannot fsync a directory say so with these; the rename already happened.
_DIR_FSYNC_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EBADF})


_SCAN_REUSE_SECONDS = 5.0


def _dir_mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def is_cache_filename(name: str) -> bool:
    """The kubelet's filter: ``sha256-`` prefix and no ``.tmp`` suffix."""
    return name.startswith(CACHE_FILE_PREFIX) and not name.endswith(TMP_SUFFIX)


def _mkdir_all(path: str) -> None:
    """``os.MkdirAll(path, 0700)``: unlike ``os.makedirs``, missing parents get 0700 too."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != path:
        _mkdir_all(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def _reason(exc: BaseException) -> str:
    """A one-line reason without file content (YAML errors quote the document below line 1)."""
    if isinstance(exc, OSError):
        text = exc.strerror or str(exc)
    else:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return shorten(text, 200)


class _Unusable(Exception):
    """A file that exists but cannot be used; ``str()`` is ``<path>: <reason>``."""


def _decoded(
    path: str, data: bytes | None, decode_file: Callable[[str, bytes], tuple[str, _T]]
) -> tuple[str, _T] | None:
    """``decode_file(path, data)``; None for no data (the file does not exist).

    Raises:
        _Unusable: it does not decode.
    """
    if data is None:
        return None
    try:
        return decode_file(path, data)
    except StoreReadError as exc:
        raise _Unusable(str(exc)) from exc.__cause__


def decode_intent_file(path: str, data: bytes) -> tuple[str, ImagePullIntent]:
    """(version, intent) from the bytes of the intent file ``path``, as the list functions
    decode them. Pure: ``path`` only names the file in the error, so a reader that fetched
    the bytes its own way (the doctor, through a node root) reports what the store would.

    Raises:
        StoreReadError: ``<path>: not a valid ImagePullIntent: <reason>`` (one line, never
            the file's content).
    """
    try:
        return decode_intent(data)
    except RecordDecodeError as exc:
        raise StoreReadError(f"{path}: not a valid ImagePullIntent: {_reason(exc)}") from exc


def decode_record_file(path: str, data: bytes) -> tuple[str, ImagePulledRecord]:
    """(version, record) from the bytes of the record file ``path``; see
    :func:`decode_intent_file`.

    Raises:
        StoreReadError: ``<path>: not a valid ImagePulledRecord: <reason>``.
    """
    try:
        return decode_record(data)
    except RecordDecodeError as exc:
        raise StoreReadError(f"{path}: not a valid ImagePulledRecord: {_reason(exc)}") from exc


#: kind -> (decode a file's bytes, the same with the store's messages, the file's version if
#: it is in an encoder's exact form).
_DECODING: dict[
    str,
    tuple[
        Callable[[bytes], tuple[str, Any]],
        Callable[[str, bytes], tuple[str, Any]],
        Callable[[bytes], str | None],
    ],
] = {
    "intent": (decode_intent, decode_intent_file, well_formed_intent_version),
    "record": (decode_record, decode_record_file, well_formed_record_version),
}


class FSPullRecordsAccessor:
    """:class:`~credprov.pullmanager.interfaces.PullRecordsAccessor` over the kubelet's files.

    Args:
        kubelet_root: the kubelet's root directory (``/var/lib/kubelet``).
        migrate: create ``image_manager/{pulling,pulled}`` (0700) and rewrite ``v1alpha1``
            files as ``v1beta1`` now, as the kubelet's accessor does when it is created.
            With ``migrate=False`` nothing is written until the first write, so an
            inspector leaves the disk untouched.

    Raises:
        StoreWriteError: with ``migrate``, a directory cannot be created.
        on_change: called after every successful write or delete (the size gauges).
    """

    def __init__(
        self,
        kubelet_root: str,
        *,
        migrate: bool = True,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.root = os.path.join(kubelet_root, "image_manager")
        self.intents_dir = os.path.join(self.root, "pulling")
        self.records_dir = os.path.join(self.root, "pulled")
        self.locks_dir = os.path.join(self.root, ".locks")
        self._on_change = on_change
        #: Messages from the start-up migration (upstream only logs them).
        self.startup_errors: list[str] = []
        # kind -> (directory mtime before the scan, items, list errors): see the docstring.
        self._scanned: dict[str, tuple[int, list[Any], list[str]]] = {}
        self._counted: dict[str, tuple[int, int]] = {}  # kind -> (mtime, _count's answer)
        self._scanned_at = 0.0
        if migrate:
            for directory in (self.intents_dir, self.records_dir):
                try:
                    _mkdir_all(directory)
                except OSError as exc:
                    raise StoreWriteError(f"{directory}: cannot create: {_reason(exc)}") from None
            self._migrate()

    def forget_startup_scan(self) -> None:
        """Drop what the start-up scan decoded: later lists read the files again."""
        self._scanned = {}
        self._counted = {}

    def _scan_still_good(self, directory: str, mtime: int) -> bool:
        # Directory mtimes can be coarse (a tick of a few ms): besides the mtime, what the
        # scan found is only used for a few seconds after it.
        return (
            time.monotonic() - self._scanned_at <= _SCAN_REUSE_SECONDS
            and _dir_mtime(directory) == mtime
        )

    def _from_scan(
        self, kind: str, directory: str, limit: int | None = None
    ) -> tuple[list[Any], int, list[str]] | None:
        """(the first ``limit`` items a list would return, how many it would return, its
        errors) from the start-up scan, or None when the scan is gone or out of date."""
        scanned = self._scanned.get(kind)
        if scanned is None:
            return None
        if not self._scan_still_good(directory, scanned[0]):
            self._scanned.pop(kind, None)
            return None
        items = scanned[1]
        head = items[:limit]
        decode = _DECODING[kind][0]
        for i, item in enumerate(head):
            if type(item) is bytes:
                # Kept undecoded by the scan, which made sure it decodes (see _scan_entry);
                # decoded once, then kept as the object.
                head[i] = items[i] = decode(item)[1]
        return head, len(items), list(scanned[2])

    # -- intents ------------------------------------------------------------------------------

    def write_image_pull_intent(self, image: str) -> None:
        """Write ``image``'s intent file atomically, as the kubelet writes it.

        Raises:
            StoreWriteError: it could not be written.
        """
        self._write(
            self.intents_dir, cache_filename(image), encode_intent(ImagePullIntent(image=image))
        )

    def image_pull_intent_exists(self, image: str) -> bool:
        """Whether ``image`` has an intent file.

        Raises:
            StoreReadError: the file is there but cannot be read or decoded.
        """
        path = os.path.join(self.intents_dir, cache_filename(image))
        try:
            intent = self._load_intent(path)
        except _Unusable as exc:
            raise StoreReadError(str(exc)) from None
        # Another image whose name hashes to the same file is not this intent.
        return intent is not None and intent[1].image == image

    def delete_image_pull_intent(self, image: str) -> None:
        """Remove ``image``'s intent file (absent is fine).

        Raises:
            StoreWriteError: the file could not be removed.
        """
        self._delete(self.intents_dir, cache_filename(image))

    def list_image_pull_intents(self) -> tuple[list[ImagePullIntent], list[str]]:
        """Every intent and, for each file that does not decode, one error line."""
        return self._list("intent", self.intents_dir, self._load_intent)

    def list_image_pull_intents_head(
        self, limit: int
    ) -> tuple[list[ImagePullIntent], int, list[str]]:
        """``list_image_pull_intents`` for a caller that keeps only the first ``limit`` items
        (the in-memory layer's warm-up): (those items, how many there are, the errors).

        Right after construction this decodes only the items it returns: the start-up scan
        has checked the others.
        """
        return self._head("intent", self.intents_dir, self._load_intent, limit)

    def count_intents(self) -> int:
        """Valid-looking intent file names (no reads, no decoding)."""
        return self._count_names("intent", self.intents_dir)

    # -- records ------------------------------------------------------------------------------

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        """The record of ``image_ref``, or None when there is none.

        Raises:
            StoreReadError: the file is there but cannot be read or decoded.
        """
        path = os.path.join(self.records_dir, cache_filename(image_ref))
        try:
            got = self._load_record(path)
        except _Unusable as exc:
            raise StoreReadError(str(exc)) from None
        if got is None or got[1].image_ref != image_ref:
            # Absent, or another imageRef whose name hashes to the same file.
            return None
        return got[1]

    def write_image_pulled_record(self, record: ImagePulledRecord) -> None:
        """Write ``record``'s file atomically, as the kubelet writes it (replacing the old one).

        Raises:
            StoreWriteError: it could not be written.
        """
        self._write(self.records_dir, cache_filename(record.image_ref), encode_record(record))

    def delete_image_pulled_record(self, image_ref: str) -> None:
        """Remove ``image_ref``'s record file (absent is fine).

        Raises:
            StoreWriteError: the file could not be removed.
        """
        self._delete(self.records_dir, cache_filename(image_ref))

    def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
        """Every record and, for each file that does not decode, one error line."""
        return self._list("record", self.records_dir, self._load_record)

    def list_image_pulled_records_head(
        self, limit: int
    ) -> tuple[list[ImagePulledRecord], int, list[str]]:
        """:meth:`list_image_pull_intents_head` for records."""
        return self._head("record", self.records_dir, self._load_record, limit)

    def count_records(self) -> int:
        """Valid-looking record file names (no reads, no decoding)."""
        return self._count_names("record", self.records_dir)

    # -- listing (intents and records alike) --------------------------------------------------

    def _list(
        self, kind: str, directory: str, load: Callable[[str], tuple[str, _T] | None]
    ) -> tuple[list[_T], list[str]]:
        scanned = self._from_scan(kind, directory)
        if scanned is not None:
            return scanned[0], scanned[2]
        items: list[_T] = []
        errors: list[str] = []
        for path in self._entries(directory, errors):
            try:
                got = load(path)
            except _Unusable as exc:
                errors.append(str(exc))
                continue
            if got is not None:  # removed between listing and reading
                items.append(got[1])
        return items, errors

    def _head(
        self,
        kind: str,
        directory: str,
        load: Callable[[str], tuple[str, _T] | None],
        limit: int,
    ) -> tuple[list[_T], int, list[str]]:
        scanned = self._from_scan(kind, directory, limit)
        if scanned is not None:
            return scanned
        items, errors = self._list(kind, directory, load)
        return items[:limit], len(items), errors

    def _count_names(self, kind: str, directory: str) -> int:
        scanned = self._counted.get(kind)
        if scanned is not None and self._scan_still_good(directory, scanned[0]):
            return scanned[1]
        return self._count(directory)

    # -- cross-process locks ------------------------------------------------------------------

    def lock_path(self, kind: LockKind, stripe: int) -> str:
        """The lock file of one stripe (``.locks/<kind>-NN``)."""
        return os.path.join(self.locks_dir, f"{kind}-{stripe:02d}")

    @staticmethod
    def stripe(key: str) -> int:
        """``fnv32(key) % 31``: the kubelet's ``keyToID`` over its (fixed) 31 stripes."""
        return key_hash(key) % LOCK_STRIPES

    @contextlib.contextmanager
    def locked(self, kind: LockKind, key: str) -> Iterator[None]:
        """Hold the stripe lock of ``key`` (an intent's image or a record's imageRef).

        Exclusive across threads and processes sharing this kubelet root (each acquisition
        opens its own file description, and ``flock`` locks belong to it). Not re-entrant,
        like Go's ``sync.Mutex``: never take a stripe twice in one thread, and take intent
        locks before record locks (the kubelet's order in ``RecordImagePulled``).

        Raises:
            StoreWriteError: the lock file cannot be created or locked.
        """
        self._check_kind(kind)
        fd = self._acquire(kind, self.stripe(key))
        try:
            yield
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    @contextlib.contextmanager
    def global_lock(self, kind: LockKind | None = None) -> Iterator[None]:
        """Hold every stripe of ``kind`` (both kinds when None: intents first), in order.

        Raises:
            StoreWriteError: a lock file cannot be created or locked.
        """
        kinds = _LOCK_KINDS if kind is None else (self._check_kind(kind),)
        fds: list[int] = []
        try:
            for k in kinds:
                for i in range(LOCK_STRIPES):
                    fds.append(self._acquire(k, i))
            yield
        finally:
            for fd in reversed(fds):
                os.close(fd)

    @staticmethod
    def _check_kind(kind: str) -> LockKind:
        if kind not in _LOCK_KINDS:
            raise ValueError(f"lock kind must be one of {_LOCK_KINDS}, not {kind!r}")
        return kind

    def _acquire(self, kind: LockKind, stripe: int) -> int:
        path = self.lock_path(kind, stripe)
        try:
            _mkdir_all(self.locks_dir)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreWriteError(f"{path}: cannot open lock file: {_reason(exc)}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            os.close(fd)
            raise StoreWriteError(f"{path}: cannot lock: {_reason(exc)}") from exc
        return fd

    # -- reading ------------------------------------------------------------------------------

    def _load_intent(self, path: str) -> tuple[str, ImagePullIntent] | None:
        return _decoded(path, self._read(path), decode_intent_file)

    def _load_record(self, path: str) -> tuple[str, ImagePulledRecord] | None:
        return _decoded(path, self._read(path), decode_record_file)

    def _scan_entry(self, kind: str, path: str) -> tuple[str, Any] | None:
        """What the start-up scan keeps of one file: (version, item), as ``_load_*``, except
        that a file in the storage version and in an encoder's exact form is kept as its
        bytes, which decode without fail (``well_formed_*_version``): the warm-up decodes
        only the items it keeps.

        Raises:
            _Unusable: as ``_load_*``.
        """
        data = self._read(path)
        _, decode_file, well_formed_version = _DECODING[kind]
        if data is not None and well_formed_version(data) == STORAGE_VERSION:
            return STORAGE_VERSION, data
        return _decoded(path, data, decode_file)

    @staticmethod
    def _read(path: str) -> bytes | None:
        """The file's bytes; None when it does not exist.

        Raises:
            _Unusable: a symlink, not a regular file, too big, or unreadable.
        """
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _Unusable(f"{path}: is a symlink") from None
            raise _Unusable(f"{path}: cannot open: {_reason(exc)}") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _Unusable(f"{path}: not a regular file")
            if st.st_size > MAX_FILE_SIZE:
                raise _Unusable(f"{path}: larger than {MAX_FILE_SIZE} bytes")
            try:
                return read_regular_fd(fd, st.st_size, MAX_FILE_SIZE, path)
            except FileTooLargeError:
                raise _Unusable(f"{path}: larger than {MAX_FILE_SIZE} bytes") from None
        except OSError as exc:
            raise _Unusable(f"{path}: cannot read: {_reason(exc)}") from exc
        finally:
            os.close(fd)

    @staticmethod
    def _entries(directory: str, errors: list[str]) -> list[str]:
        """Paths of the valid-looking names in ``directory``, sorted; a missing dir is empty.

        Subdirectories are not descended into. A valid-looking name that is not a regular
        file is still returned so that reading it reports it (upstream skips directories).
        """
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        except OSError as exc:
            errors.append(f"{directory}: cannot list: {_reason(exc)}")
            return []
        prefix = os.path.join(directory, "")
        return [prefix + n for n in sorted(names) if is_cache_filename(n)]

    @staticmethod
    def _entries_and_count(directory: str, errors: list[str]) -> tuple[list[str], int | None]:
        """``_entries`` and ``_count`` from one directory read (the start-up scan).

        The count is None when the directory could not be read (``_count`` then decides).
        """
        names: list[str] = []
        subdirectories = 0
        try:
            with os.scandir(directory) as it:
                # One pass, no call per entry but is_dir (d_type: no stat); is_cache_filename
                # inlined: this loop runs once per file at every start.
                for entry in it:
                    name = entry.name
                    if name.startswith(CACHE_FILE_PREFIX) and not name.endswith(TMP_SUFFIX):
                        names.append(name)
                        if entry.is_dir(follow_symlinks=False):
                            subdirectories += 1
        except FileNotFoundError:
            return [], None
        except OSError as exc:
            errors.append(f"{directory}: cannot list: {_reason(exc)}")
            return [], None
        names.sort()
        prefix = os.path.join(directory, "")  # os.path.join(directory, name), once
        return [prefix + name for name in names], len(names) - subdirectories

    @staticmethod
    def _count(directory: str) -> int:
        count = 0
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    # DirEntry caches d_type: no stat, no read (upstream's isValidCacheFile).
                    if is_cache_filename(entry.name) and not entry.is_dir(follow_symlinks=False):
                        count += 1
        except OSError:
            return count
        return count

    # -- writing ------------------------------------------------------------------------------

    def _write(self, directory: str, name: str, data: bytes) -> None:
        """Atomically replace ``directory/name`` with ``data``.

        Raises:
            StoreWriteError: with the ``OSError`` as ``__cause__``. Nothing was replaced
                and no temp file is left behind, unless only the final directory fsync
                failed (then the new content is in place but may not survive a crash).
        """
        target = os.path.join(directory, name)
        try:
            # Re-created on every write, as upstream, so a removed directory heals itself.
            _mkdir_all(directory)
        except OSError as exc:
            raise StoreWriteError(f"{directory}: cannot create directory: {_reason(exc)}") from exc
        try:
            write_atomic(target, data, mode=0o600, tmp_suffix=TMP_SUFFIX)
        except AtomicWriteError as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            if exc.stage == "create":
                raise StoreWriteError(f"{exc.filename}: cannot create: {_reason(cause)}") from cause
            if exc.stage == "write":
                raise StoreWriteError(f"{target}: cannot write: {_reason(cause)}") from cause
            self._changed()  # the new content is visible even when the sync failed
            raise StoreWriteError(f"{target}: cannot sync directory: {_reason(cause)}") from cause
        self._changed()

    def _delete(self, directory: str, name: str) -> None:
        path = os.path.join(directory, name)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreWriteError(f"{path}: cannot delete: {_reason(exc)}") from exc
        try:
            self._sync_dir(directory, path)
        finally:
            self._changed()

    @staticmethod
    def _sync_dir(directory: str, target: str) -> None:
        """Make the unlink durable (the directory entry is what changed)."""
        try:
            sync_dir(directory)
        except OSError as exc:
            raise StoreWriteError(f"{target}: cannot sync directory: {_reason(exc)}") from exc

    def _changed(self) -> None:
        self._scanned = {}
        self._counted = {}
        if self._on_change is not None:
            self._on_change()

    # -- migration ----------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Rewrite every decodable non-``v1beta1`` file as ``v1beta1`` (``recordsVersionMigration``).

        Each file is re-read under its stripe lock so that a record another process updated
        meanwhile is not overwritten with the stale content read by the scan.
        """
        # What a list would return, kept for the next list calls (see the module docstring).
        intents_mtime = _dir_mtime(self.intents_dir)
        intents, intent_errors, intents_count = self._migrate_dir(
            "intent",
            self.intents_dir,
            self._load_intent,
            lambda intent: intent.image,
            lambda intent: self.write_image_pull_intent(intent.image),
        )
        records_mtime = _dir_mtime(self.records_dir)
        records, record_errors, records_count = self._migrate_dir(
            "record",
            self.records_dir,
            self._load_record,
            lambda record: record.image_ref,
            self.write_image_pulled_record,
        )
        # A migration write above cleared nothing kept yet, but it changed the directory's
        # mtime: the kept listing of that kind is then never used.
        self._scanned_at = time.monotonic()
        if intents_mtime is not None:
            self._scanned["intent"] = (intents_mtime, intents, intent_errors)
            if intents_count is not None:
                self._counted["intent"] = (intents_mtime, intents_count)
        if records_mtime is not None:
            self._scanned["record"] = (records_mtime, records, record_errors)
            if records_count is not None:
                self._counted["record"] = (records_mtime, records_count)

    def _migrate_dir(
        self,
        kind: LockKind,
        directory: str,
        load: Callable[[str], tuple[str, _T] | None],
        key: Callable[[_T], str],
        write: Callable[[_T], None],
    ) -> tuple[list[_T | bytes], list[str], int | None]:
        """Migrate the files of one directory; returns what a list would (items, errors;
        an item may still be its file's bytes, see ``_scan_entry``) and the valid-looking
        name count."""
        items: list[_T | bytes] = []
        errors: list[str] = []
        paths, count = self._entries_and_count(directory, errors)
        self.startup_errors.extend(errors)
        for path in paths:
            try:
                try:
                    got = self._scan_entry(kind, path)
                except _Unusable as exc:
                    errors.append(str(exc))
                    raise
                if got is None:
                    continue
                items.append(got[1])
                if got[0] == STORAGE_VERSION:
                    continue
                with self.locked(kind, key(got[1])):
                    got = load(path)
                    if got is not None and got[0] != STORAGE_VERSION:
                        write(got[1])
            except (_Unusable, StoreWriteError) as exc:
                self.startup_errors.append(f"migrating {kind}: {exc}")
        return items, errors, count
