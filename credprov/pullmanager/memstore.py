"""A write-through in-memory LRU layer over another :class:`PullRecordsAccessor`.

Mirrors ``pkg/kubelet/images/pullmanager/mem_pullrecords.go`` (``cachedPullRecordsAccessor``,
PR #131882, Kubernetes 1.34+):

* two LRU caches, intents keyed by image and pulled records keyed by imageRef, capped at
  1024 and 2000 entries whatever the caller asks for;
* each cache has an *authoritative* flag: while it is set, a miss means "does not exist"
  and the delegate (the file store) is not read. Construction lists both kinds to warm the
  caches; a list that succeeds without errors and returns fewer items than the capacity
  makes its cache authoritative (``cacheRefreshingList``). Any capacity eviction clears
  the flag; explicit deletes do not (the deleted item really is gone);
* writes and deletes go to the delegate first, and the cache changes only when that worked.

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
from collections.abc import Callable
from typing import TypeVar

import cachetools

from credprov.pullmanager.interfaces import PullRecordsAccessor
from credprov.pullmanager.locks import MAX_LOCK_STRIPES, StripedLockSet
from credprov.pullmanager.types import ImagePulledRecord, ImagePullIntent

__all__ = ["MAX_INTENTS_CACHE_SIZE", "MAX_PULLED_RECORDS_CACHE_SIZE", "CachedPullRecordsAccessor"]

log = logging.getLogger("credprov.pullmanager")

MAX_INTENTS_CACHE_SIZE = 1024
MAX_PULLED_RECORDS_CACHE_SIZE = 2000
# Upstream sizes its StripedLockSet from maxParallelImagePulls and caps it at 31 stripes.

_V = TypeVar("_V")


class _LRU(cachetools.LRUCache[str, _V]):
    """``cachetools.LRUCache`` with upstream's ``authoritative`` flag: a capacity eviction
    clears it (what was evicted may exist in the delegate, so a miss no longer proves
    absence); an explicit delete does not. Callers hold the owner's lock (cachetools caches
    are not thread-safe).

    (cachetools costs about 90 ns more per hit than the ``OrderedDict`` it replaced, measured
    side by side; a pull check pays one or two hits, about 3% of its fixed cost.)
    """

    def __init__(self, max_size: int) -> None:
        super().__init__(max_size)
        self.authoritative = False

    @property
    def max_size(self) -> int:
        return int(self.maxsize)

    def popitem(self) -> tuple[str, _V]:
        self.authoritative = False
        return super().popitem()

    def set(self, key: str, value: _V) -> None:
        self[key] = value

    def delete(self, key: str) -> None:
        self.pop(key, None)

    def replace(self, items: list[tuple[str, _V]], authoritative: bool) -> None:
        self.clear()
        for key, value in items[: self.max_size]:
            self[key] = value
        self.authoritative = authoritative

    def usage_percent(self) -> int:
        return len(self) * 100 // self.max_size


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

        # Warm both caches; an error only leaves the cache non-authoritative until a later
        # list succeeds, as upstream.
        try:
            _, errors = self.list_image_pull_intents()
            if errors:
                log.info("image pull intents cache is not authoritative: %s", "; ".join(errors))
        except Exception as exc:
            log.info("image pull intents cache is not authoritative: %s", exc)
        try:
            _, errors = self.list_image_pulled_records()
            if errors:
                log.info("pulled records cache is not authoritative: %s", "; ".join(errors))
        except Exception as exc:
            log.info("pulled records cache is not authoritative: %s", exc)

    # -- introspection (metrics, tests) ---------------------------------------------------

    @property
    def intents_authoritative(self) -> bool:
        return self._intents.authoritative

    @property
    def records_authoritative(self) -> bool:
        return self._records.authoritative

    def intents_usage_percent(self) -> int:
        with self._mu:
            return self._intents.usage_percent()

    def records_usage_percent(self) -> int:
        with self._mu:
            return self._records.usage_percent()

    # -- intents ----------------------------------------------------------------------------

    def write_image_pull_intent(self, image: str) -> None:
        with self._intent_locks.lock(image):
            self._delegate.write_image_pull_intent(image)
            with self._mu:
                self._intents.set(image, ImagePullIntent(image=image))
        self._changed()

    def image_pull_intent_exists(self, image: str) -> bool:
        with self._mu:
            if self._intents.get(image) is not None:
                return True
        with self._intent_locks.lock(image):
            # Another thread may have written or filled it while we waited for the lock.
            with self._mu:
                if self._intents.get(image) is not None:
                    return True
                if self._intents.authoritative:
                    return False
            exists = self._delegate.image_pull_intent_exists(image)
            if not exists:
                return False
            with self._mu:
                self._intents.set(image, ImagePullIntent(image=image))
        self._changed()
        return True

    def delete_image_pull_intent(self, image: str) -> None:
        with self._intent_locks.lock(image):
            self._delegate.delete_image_pull_intent(image)
            with self._mu:
                self._intents.delete(image)
        self._changed()

    def list_image_pull_intents(self) -> tuple[list[ImagePullIntent], list[str]]:
        result = self._refreshing_list(
            self._intents,
            self._intent_locks,
            self._delegate.list_image_pull_intents,
            lambda intent: intent.image,
        )
        self._changed()
        return result

    # -- pulled records ---------------------------------------------------------------------

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        with self._mu:
            record = self._records.get(image_ref)
        if record is not None:
            return record
        with self._record_locks.lock(image_ref):
            with self._mu:
                record = self._records.get(image_ref)
                if record is not None or self._records.authoritative:
                    return record
            record = self._delegate.get_image_pulled_record(image_ref)
            if record is None:
                return None
            with self._mu:
                self._records.set(image_ref, record)
        self._changed()
        return record

    def write_image_pulled_record(self, record: ImagePulledRecord) -> None:
        # Cache a copy: the caller keeps its object and may go on changing it.
        cached = record.model_copy(deep=True)
        with self._record_locks.lock(record.image_ref):
            self._delegate.write_image_pulled_record(record)
            with self._mu:
                self._records.set(cached.image_ref, cached)
        self._changed()

    def delete_image_pulled_record(self, image_ref: str) -> None:
        with self._record_locks.lock(image_ref):
            self._delegate.delete_image_pulled_record(image_ref)
            with self._mu:
                self._records.delete(image_ref)
        self._changed()

    def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
        result = self._refreshing_list(
            self._records,
            self._record_locks,
            self._delegate.list_image_pulled_records,
            lambda record: record.image_ref,
        )
        self._changed()
        return result

    # -- helpers ----------------------------------------------------------------------------

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
            return list_items()
        # Hold every key's lock so no write lands between the list and the refill.
        with locks.global_lock():
            items, errors = list_items()
            # Strictly fewer than capacity: a full cache cannot tell "all" from "the first N".
            complete = not errors and len(items) < cache.max_size
            authoritative = complete and self._may_be_authoritative
            with self._mu:
                # A partial list still beats an empty cache, but never replaces a fuller one.
                if complete or len(cache) == 0:
                    kept = items[: cache.max_size]  # what replace() keeps
                    cache.replace([(key_of(item), item) for item in kept], authoritative)
        return items, errors

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
