"""The per-provider credential cache of the kubelet's plugin provider.

Mirrors ``pkg/credentialprovider/plugin/plugin.go``: an expiration store whose keys are
``cryptobyte`` length-prefixed (image, registry or ``<global>``, plus an optional
service-account key), entries expire strictly after ``expires_at``, ``get`` drops an expired
entry, and every 15 minutes a lookup purges all expired entries.

Why not ``cachetools``: its ``TTLCache``/``TLRUCache`` evict by capacity and expire entries on
every mutation, while the kubelet's store never evicts, keeps an expired entry until a
lookup touches it or the 15-minute ``List`` purges it, and expires strictly *after*
``expiresAt``; its caches are also not thread-safe. The store here is a dict under a lock,
with one extra: a change counter (:class:`ChangeCounter`) that the provider set uses to
know when a memoised merged answer is still exactly what a fresh lookup would return.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from credprov.base.clock import Clock
from credprov.errors import CredentialProviderError

#: The cache key of a ``Global`` response (newest kubelet; angle brackets cannot clash
#: with an image or registry name).
GLOBAL_CACHE_KEY = "<global>"

#: How often the kubelet purges expired entries (on the next lookup after this long).
CACHE_PURGE_INTERVAL = 15 * 60 * 1_000_000_000


class CacheKeyError(CredentialProviderError, ValueError):
    """A key component too long for cryptobyte's 16-bit length prefix."""


def _lp16(value: str | bytes) -> bytes:
    raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    if len(raw) > 0xFFFF:
        raise CacheKeyError("cache key component longer than 65535 bytes")
    return struct.pack(">H", len(raw)) + raw


def generate_cache_key(base: str, service_account_cache_key: bytes = b"") -> bytes:
    """``lp16(base) || lp16(saKey)``: e.g. ``b"\\x00\\x10test.registry.io\\x00\\x00"``.

    ``service_account_cache_key`` is the raw bytes of
    :func:`generate_service_account_cache_key` (a Go string is bytes: its length prefix
    counts bytes, and non-ASCII annotation values or lengths >= 128 stay as they are).
    """
    if not service_account_cache_key:
        return _lp16(base) + b"\x00\x00"
    return _lp16(base) + _lp16(service_account_cache_key)


def _annotations(annotations: Mapping[str, str]) -> bytes:
    out = struct.pack(">I", len(annotations))
    for key in sorted(annotations):
        out += _lp16(key) + _lp16(annotations[key])
    return out


def generate_service_account_cache_key(
    namespace: str,
    name: str,
    uid: str,
    annotations: Mapping[str, str],
    cache_type: str = "",
    token_hash: str = "",
) -> bytes:
    """The service-account half of a cache key (KEP-4412); ``Token`` adds the token hash."""
    out = _lp16(namespace) + _lp16(name) + _lp16(uid) + _annotations(annotations)
    if cache_type == "Token":
        out += _lp16("token") + _lp16(token_hash)
    return out


def generate_single_flight_key(
    image: str, token_hash: str, annotations: Mapping[str, str]
) -> bytes:
    """The plugin's singleflight key for a KEP-4412 lookup: the image, the token's hash
    and the annotations, each length-prefixed so no two inputs give one key.
    """
    return _lp16(image) + _lp16(token_hash) + _annotations(annotations)


@dataclass
class CacheEntry:
    """One cached plugin answer under its cryptobyte key, with its expiry."""

    key: bytes
    credentials: dict[str, Any]
    expires_at: int
    cache_key_type: str = ""
    cache_duration: int | None = None
    # The credentials as the keyring stores them (normalised key, hash, source), computed
    # once when the answer is cached rather than on every hit.
    tracked: list[Any] = field(default_factory=list)
    # What ``provide`` returns for a hit on this entry, kept by the provider set's memo.
    result: Any = field(default=None, repr=False, compare=False)


class ChangeCounter:
    """A number that grows whenever a cache it is attached to changes (add, delete, purge).

    Several caches may share one. Reads are lock-free; a reader that saw value ``v`` before
    looking into the caches knows nothing changed since if the value is still ``v``.
    """

    __slots__ = ("_lock", "value")

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def bump(self) -> None:
        """Record one change."""
        with self._lock:
            self.value += 1


class ExpirationCache:
    """``cache.NewExpirationStore`` with the plugin's expiration policy; thread-safe."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._entries: dict[bytes, CacheEntry] = {}
        self._lock = threading.Lock()
        self._last_purge = clock.now()
        self.changes = ChangeCounter()

    @property
    def purge_due_after(self) -> int:
        """The last instant at which a lookup does not purge yet."""
        return self._last_purge + CACHE_PURGE_INTERVAL

    def lookup(self, keys: tuple[bytes, ...]) -> CacheEntry | None:
        """The purge check, then ``get`` of each key in turn: the first live entry.

        One lock and one clock reading for the kubelet's purge-then-three-probes sequence.
        """
        now = self._clock.now()
        with self._lock:
            if now > self._last_purge + CACHE_PURGE_INTERVAL:
                self._purge(now)
            entries = self._entries
            for key in keys:
                entry = entries.get(key)
                if entry is None:
                    continue
                if now > entry.expires_at:
                    del entries[key]
                    self.changes.bump()
                    continue
                return entry
            return None

    def _purge(self, now: int) -> None:
        self._entries = {k: e for k, e in self._entries.items() if not self._expired(e, now)}
        self._last_purge = now
        self.changes.bump()

    def _expired(self, entry: CacheEntry, now: int) -> bool:
        return now > entry.expires_at

    def get(self, key: bytes) -> CacheEntry | None:
        """The live entry under ``key``, or None (an expired one is deleted)."""
        now = self._clock.now()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if self._expired(entry, now):
                del self._entries[key]
                self.changes.bump()
                return None
            return entry

    def add(self, entry: CacheEntry) -> None:
        """Insert or replace ``entry`` under its key."""
        with self._lock:
            self._entries[entry.key] = entry
            self.changes.bump()

    def maybe_purge(self) -> bool:
        """Purge expired entries if 15 minutes passed since the last purge."""
        now = self._clock.now()
        with self._lock:
            if now <= self._last_purge + CACHE_PURGE_INTERVAL:
                return False
            self._purge(now)
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def keys(self) -> list[bytes]:
        """The keys held, expired entries not yet purged included."""
        with self._lock:
            return list(self._entries)
