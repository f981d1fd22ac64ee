"""A write-through in-memory LRU layer over another :class:`PullRecordsAccessor`.

Mirrors ``pkg/kubelet/images/pullmanager/mem_pullrecords.go`` (``cachedPullRecordsAccessor``,
PR #131882, Kubernetes 1.34+):

* two LRU caches, intents keyed by image and pulled records keyed by imageRef, capped at
  1024 and 2000 entries whatever the caller asks for;
* each cache has an *authoritative* flag: while it is set, a miss means "does not exist"
  and the delegate (the file store) is not read. Construction lists both kinds to warm the
  caches (through the delegate's ``list_*_head`` when it has one: the same answer, but the
  file store then decodes only the items the cache keeps); a list that succeeds without
  errors and returns fewer items than the capacity
  makes its cache authoritative (``cacheRefreshingList``). Any capacity eviction clears
  the flag; explicit deletes do not (the deleted item really is gone);
* writes and deletes go to the delegate first, and the cache changes only when that worked.

Beyond upstream, an admission rule for reads (never for writes, which always go through to
both): while a cache is full, a read that missed fills it only if the same key already
missed once since the cache last made room for such a key (a "doorkeeper", as in TinyLFU).
Upstream fills on every miss, so when the working set is larger than the cache (10,000
records behind 100 slots) every miss evicts an entry that is about as likely to be asked
for again as the one coming in, and the cache is slower than none; with the doorkeeper such
a miss costs one set lookup and reads the delegate without touching the cache (nor its
stripe lock: nothing is cached, so nothing can race a write). A key asked for again soon
enters on its second miss, so a new hot set settles in quickly. The rule only decides
*what* is kept: a lookup answers exactly as before (a hit from memory, an authoritative
miss as absent, any other miss from the delegate), and since a refused fill evicts nothing
it never changes the authoritative flag. Even so, with 10,000 records uniformly checked
behind 100 slots the layer is break-even at best: 1% of checks hit, which saves about as
much as the lock and the probe cost on the other 99%.

The LRU is an ``OrderedDict`` rather than ``cachetools.LRUCache`` (used before): a cached
pull check costs about 1.5 µs in all, and a cachetools hit alone was 300 ns (four Python
calls) against 70 ns; and the doorkeeper has to sit between the miss and the insert, where
cachetools offers no hook. See :class:`_LRU`.

Several processes may share one kubelet root (credprov supports two). An authoritative
cache cannot see another process's writes: a record or intent written elsewhere after this
cache warmed up reads as absent until this process lists again after losing authority or
restarts. Absent-when-present is the unsafe direction for an intent or record (the image
would look preloaded), so pass ``authoritative=False`` when another writer may exist: every
miss then reads the delegate, and only hits are served from memory. Hits can still be stale
(a record another process merged new credentials into, or pruned); that mostly errs towards
verifying again, which is the fail-safe direction.

Records handed out from the cache are shared objects, as upstream's pointers are: treat them
as read-only (the pull manager copies before merging, as ``pulledRecordMergeNewCreds``
does).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from credprov.pullmanager.interfaces import PullRecordsAccessor
from credprov.pullmanager.locks import MAX_LOCK_STRIPES, StripedLockSet
from credprov.pullmanager.types import ImagePulledRecord, ImagePullIntent

__all__ = ["MAX_INTENTS_CACHE_SIZE", "MAX_PULLED_RECORDS_CACHE_SIZE", "CachedPullRecordsAccessor"]

log = logging.getLogger("credprov.pullmanager")

MAX_INTENTS_CACHE_SIZE = 1024
MAX_PULLED_RECORDS_CACHE_SIZE = 2000
# Upstream sizes its StripedLockSet from maxParallelImagePulls and caps it at 31 stripes.

_V = TypeVar("_V")


class _LRU(Generic[_V]):
    """An LRU map with upstream's ``authoritative`` flag and the read doorkeeper.

    A capacity eviction clears the flag (what was evicted may exist in the delegate, so a
    miss no longer proves absence); an explicit delete does not. Callers hold the owner's
    lock.

    An ``OrderedDict`` rather than ``cachetools.LRUCache``: see the module docstring.
    """

    __slots__ = ("_missed", "authoritative", "data", "max_size")

    def __init__(self, max_size: int) -> None:
        self.data: OrderedDict[str, _V] = OrderedDict()
        self.max_size = max_size
        self.authoritative = False
        # Keys that missed while the cache was full and were not let in (the doorkeeper).
        self._missed: set[str] = set()

    def __len__(self) -> int:
        return len(self.data)

    def get(self, key: str) -> _V | None:
        """The value, marked most recently used; None when absent."""
        value = self.data.get(key)
        if value is not None:
            self.data.move_to_end(key)
        return value

    def set(self, key: str, value: _V) -> None:
        data = self.data
        data[key] = value
        data.move_to_end(key)
        if len(data) > self.max_size:
            data.popitem(last=False)
            self.authoritative = False

    def delete(self, key: str) -> None:
        self.data.pop(key, None)

    def admits(self, key: str) -> bool:
        """Whether a read that missed ``key`` may fill the cache (see the module docstring).

        Always while there is room. In a full cache only a key that already missed since
        the doorkeeper last forgot; it forgets everything once it holds as many keys as the
        cache, so it stays small and an old miss does not count forever.
        """
        if len(self.data) < self.max_size:
            return True
        missed = self._missed
        if key in missed:
            missed.discard(key)
            return True
        if len(missed) >= self.max_size:
            missed.clear()
        missed.add(key)
        return False

    def replace(self, items: list[tuple[str, _V]], authoritative: bool) -> None:
        self.data = OrderedDict(items[: self.max_size])
        self.authoritative = authoritative

    def usage_percent(self) -> int:
        return len(self.data) * 100 // self.max_size


class CachedPullRecordsAccessor:
    """``NewCachedPullRecordsAccessor``: the delegate's data, with memory in front of it.

    Args:
        delegate: the store of record (normally the file store).
        intents_cache_size: intents kept in memory, at most 1024.
        pulled_records_cache_size: pulled records kept in memory, at most 2000.
        on_change: called as ``on_change(intents_usage_percent, records_usage_percent)``
            after the warm-up lists and after every operation that changed how full the
            caches are, in percent (``PullManagerMetrics.set_inmemory`` fits); not again
            while both figures stay the same (a miss in a full cache, the common case). Its exceptions are
            logged, never raised: a metric must not fail a pull.
        authoritative: ``False`` never trusts a miss (see the module docstring on sharing
            a root with another process). ``True`` is upstream's behaviour.

    Raises:
        ValueError: a cache size below 1.
    """

    def __init__(
        self,
        delegate: PullRecordsAccessor,
        intents_cache_size: int = 50,
        pulled_records_cache_size: int = 100,
        on_change: Callable[[int, int], None] | None = None,
        *,
        authoritative: bool = True,
    ) -> None:
        if intents_cache_size < 1 or pulled_records_cache_size < 1:
            raise ValueError("cache sizes must be at least 1")
        self._delegate = delegate
        self._on_change = on_change
        self._reported: tuple[int, int] | None = None  # the last usage given to on_change
        self._may_be_authoritative = authoritative
        # One short lock guards both LRUs (memory only, never held during delegate I/O);
        # the striped locks serialise delegate I/O per key so a miss that is filling the
        # cache cannot race a write of the same key and cache the older value.
        self._mu = threading.Lock()
        self._intents: _LRU[ImagePullIntent] = _LRU(min(intents_cache_size, MAX_INTENTS_CACHE_SIZE))
        self._records: _LRU[ImagePulledRecord] = _LRU(
            min(pulled_records_cache_size, MAX_PULLED_RECORDS_CACHE_SIZE)
        )
        self._intent_locks = StripedLockSet(MAX_LOCK_STRIPES)
        self._record_locks = StripedLockSet(MAX_LOCK_STRIPES)

        # Warm both caches (a list of each kind, as upstream: only its first items are
        # kept); an error only leaves the cache non-authoritative until a later list
        # succeeds, as upstream.
        warm_ups = (
            ("image pull intents", self._intents, self._intent_locks,
             getattr(delegate, "list_image_pull_intents_head", None),
             delegate.list_image_pull_intents, lambda intent: intent.image),
            ("pulled records", self._records, self._record_locks,
             getattr(delegate, "list_image_pulled_records_head", None),
             delegate.list_image_pulled_records, lambda record: record.image_ref),
        )  # fmt: skip
        for what, cache, locks, head, full, key in warm_ups:
            try:
                errors = self._warm_up(cache, locks, head, full, key)
                if errors:
                    log.info("%s cache is not authoritative: %s", what, "; ".join(errors))
            except Exception as exc:
                log.info("%s cache is not authoritative: %s", what, exc)

    # -- introspection (metrics, tests) ---------------------------------------------------

    @property
    def intents_authoritative(self) -> bool:
        """Whether a miss in the intents cache proves the intent absent."""
        return self._intents.authoritative

    @property
    def records_authoritative(self) -> bool:
        """Whether a miss in the records cache proves the record absent."""
        return self._records.authoritative

    def intents_usage_percent(self) -> int:
        """How full the intents cache is, in percent."""
        with self._mu:
            return self._intents.usage_percent()

    def records_usage_percent(self) -> int:
        """How full the records cache is, in percent."""
        with self._mu:
            return self._records.usage_percent()

    # -- intents ----------------------------------------------------------------------------

    def write_image_pull_intent(self, image: str) -> None:
        """Write the intent to the delegate, then cache it."""
        self._write_through(
            self._intents,
            self._intent_locks,
            image,
            ImagePullIntent(image=image),
            lambda: self._delegate.write_image_pull_intent(image),
        )

    def image_pull_intent_exists(self, image: str) -> bool:
        """Whether ``image`` has an intent: from the cache, else from the delegate."""
        intents = self._intents
        self._mu.acquire()  # not ``with``: see get_image_pulled_record
        try:
            if intents.get(image) is not None:
                return True
            if intents.authoritative:
                return False
            admit = intents.admits(image)
        finally:
            self._mu.release()
        intent = self._read_through(
            intents, self._intent_locks, image, admit, self._delegate_intent
        )
        return intent is not None

    def _delegate_intent(self, image: str) -> ImagePullIntent | None:
        return (
            ImagePullIntent(image=image) if self._delegate.image_pull_intent_exists(image) else None
        )

    def delete_image_pull_intent(self, image: str) -> None:
        """Delete the intent from the delegate and the cache."""
        self._delete_through(
            self._intents, self._intent_locks, image, self._delegate.delete_image_pull_intent
        )

    def list_image_pull_intents(self) -> tuple[list[ImagePullIntent], list[str]]:
        """The delegate's intents (and errors); a full list may make the cache authoritative."""
        return self._refreshing_list(
            self._intents,
            self._intent_locks,
            self._delegate.list_image_pull_intents,
            lambda intent: intent.image,
        )

    # -- pulled records ---------------------------------------------------------------------

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        """The record for ``image_ref``: from the cache, else from the delegate."""
        records = self._records
        # acquire/release rather than ``with``: this is every pull check, and the context
        # manager protocol costs more than the dictionary lookup it guards.
        self._mu.acquire()
        try:
            # records.get(image_ref), inlined for the same reason.
            record = records.data.get(image_ref)
            if record is not None:
                records.data.move_to_end(image_ref)
                return record
            if records.authoritative:
                return None
            admit = records.admits(image_ref)
        finally:
            self._mu.release()
        return self._read_through(
            records,
            self._record_locks,
            image_ref,
            admit,
            self._delegate.get_image_pulled_record,
        )

    def write_image_pulled_record(self, record: ImagePulledRecord) -> None:
        """Write the record to the delegate, then cache a copy of it."""
        # Cache a copy: the caller keeps its object and may go on changing it.
        self._write_through(
            self._records,
            self._record_locks,
            record.image_ref,
            record.model_copy(deep=True),
            lambda: self._delegate.write_image_pulled_record(record),
        )

    def delete_image_pulled_record(self, image_ref: str) -> None:
        """Delete the record from the delegate and the cache."""
        self._delete_through(
            self._records,
            self._record_locks,
            image_ref,
            self._delegate.delete_image_pulled_record,
        )

    def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
        """The delegate's records (and errors); a full list may make the cache authoritative."""
        return self._refreshing_list(
            self._records,
            self._record_locks,
            self._delegate.list_image_pulled_records,
            lambda record: record.image_ref,
        )

    # -- helpers (intents and records alike) ------------------------------------------------

    def _read_through(
        self,
        cache: _LRU[_V],
        locks: StripedLockSet,
        key: str,
        admit: bool,
        load: Callable[[str], _V | None],
    ) -> _V | None:
        """A cache miss: the delegate's value, cached when ``admit`` (the doorkeeper)."""
        if not admit:
            # Nothing will be cached, so nothing can race a write: no stripe lock.
            return load(key)
        with locks.lock(key):
            # Another thread may have written or filled it while we waited for the lock.
            with self._mu:
                value = cache.get(key)
                if value is not None or cache.authoritative:
                    return value
            value = load(key)
            if value is None:
                return None
            with self._mu:
                cache.set(key, value)
        self._changed()
        return value

    def _write_through(
        self,
        cache: _LRU[_V],
        locks: StripedLockSet,
        key: str,
        cached: _V,
        write: Callable[[], None],
    ) -> None:
        with locks.lock(key):
            write()
            with self._mu:
                cache.set(key, cached)
        self._changed()

    def _delete_through(
        self, cache: _LRU[_V], locks: StripedLockSet, key: str, delete: Callable[[str], None]
    ) -> None:
        with locks.lock(key):
            delete(key)
            with self._mu:
                cache.delete(key)
        self._changed()

    def _refreshing_list(
        self,
        cache: _LRU[_V],
        locks: StripedLockSet,
        list_items: Callable[[], tuple[list[_V], list[str]]],
        key_of: Callable[[_V], str],
    ) -> tuple[list[_V], list[str]]:
        """``cacheRefreshingList``: a full list is a chance to become authoritative."""
        with self._mu:
            was_authoritative = cache.authoritative
        if was_authoritative:
            items, errors = list_items()
        else:
            # Hold every key's lock so no write lands between the list and the refill.
            with locks.global_lock():
                items, errors = list_items()
                self._refill(cache, items[: cache.max_size], len(items), errors, key_of)
        self._changed()
        return items, errors

    def _warm_up(
        self,
        cache: _LRU[_V],
        locks: StripedLockSet,
        list_head: Callable[[int], tuple[list[_V], int, list[str]]] | None,
        list_items: Callable[[], tuple[list[_V], list[str]]],
        key_of: Callable[[_V], str],
    ) -> list[str]:
        """The construction's ``_refreshing_list`` (the cache is not authoritative yet),
        through the delegate's ``list_*_head`` when it has one: the file store then decodes
        only the items the cache keeps. Returns the list's errors."""
        with locks.global_lock():
            if list_head is None:
                items, errors = list_items()
                kept, total = items[: cache.max_size], len(items)
            else:
                kept, total, errors = list_head(cache.max_size)
            self._refill(cache, kept, total, errors, key_of)
        self._changed()
        return errors

    def _refill(
        self,
        cache: _LRU[_V],
        kept: list[_V],
        total: int,
        errors: list[str],
        key_of: Callable[[_V], str],
    ) -> None:
        """``cacheRefreshingList``'s refill, from the first ``cache.max_size`` items of a
        list of ``total`` items (caller holds every stripe lock)."""
        # Strictly fewer than capacity: a full cache cannot tell "all" from "the first N".
        complete = not errors and total < cache.max_size
        authoritative = complete and self._may_be_authoritative
        with self._mu:
            # A partial list still beats an empty cache, never replaces a fuller one.
            if complete or len(cache) == 0:
                cache.replace([(key_of(item), item) for item in kept], authoritative)

    def _changed(self) -> None:
        if self._on_change is None:
            return
        # len() of each map is atomic: no lock needed for two figures that are only shown.
        usage = (self._intents.usage_percent(), self._records.usage_percent())
        if usage == self._reported:
            return  # the gauges already show these values: a miss in a full cache
        try:
            self._on_change(*usage)
            self._reported = usage
        except Exception:
            log.warning("in-memory cache usage callback failed", exc_info=True)
