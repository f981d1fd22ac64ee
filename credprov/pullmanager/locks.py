"""Striped locks: per-key mutual exclusion with a bounded number of locks.

Mirrors the kubelet's ``pkg/kubelet/images/pullmanager/locks.go`` (``StripedLockSet``),
shared by the manager and the in-memory layer. Upstream picks a stripe by FNV-1 32-bit;
which stripe a key gets inside one process is invisible outside it, so
:class:`StripedLockSet` uses Python's own string hash (computed in C, cached on the string):
FNV-1 in Python is a byte loop of microseconds per key, and memoising it thrashed once a node
checked more keys than the memo held. The file store's flock stripes are shared between
processes and keep FNV-1 (:func:`key_hash`), so every credprov process agrees on them.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator

#: The kubelet never allocates more stripes than this.
MAX_LOCK_STRIPES = 31


def fnv32(data: bytes) -> int:
    """FNV-1 32-bit (Go's ``hash/fnv.New32``), which the kubelet uses to pick a stripe."""
    h = 0x811C9DC5
    for byte in data:  # one statement per byte: the loop is the whole cost
        h = ((h * 0x01000193) & 0xFFFFFFFF) ^ byte
    return h


@functools.lru_cache(maxsize=16384)
def key_hash(key: str) -> int:
    """``fnv32`` of ``key``'s UTF-8, memoised.

    The file store's flock stripe of every write; a byte loop in Python costs microseconds
    per key, a dictionary hit a fraction of one.
    """
    return fnv32(key.encode("utf-8"))


class StripedLockSet:
    """Locks keyed by string, hashed onto at most 31 stripes (``locks.go``).

    The stripe index is taken modulo the number of stripes actually allocated: taking it modulo
    the requested size is the kubelet panic of issue #138935 (fixed by PR #138937).
    """

    def __init__(self, size: int) -> None:
        self._locks = [threading.Lock() for _ in range(min(MAX_LOCK_STRIPES, max(size, 1)))]
        self._stripes = len(self._locks)

    def __len__(self) -> int:
        return self._stripes

    def lock(self, key: str) -> threading.Lock:
        """The lock of ``key``'s stripe (keys that share a stripe share the lock)."""
        return self._locks[hash(key) % self._stripes]

    @contextlib.contextmanager
    def global_lock(self) -> Iterator[None]:
        """Every stripe, always in the same order so two global lockers cannot deadlock."""
        taken: list[threading.Lock] = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
            yield
        finally:
            for lock in reversed(taken):
                lock.release()
