"""Duplicate call suppression, as ``golang.org/x/sync/singleflight`` gives the kubelet.

Concurrent ``do(key, fn)`` calls with the same key run ``fn`` once; every caller gets its
result (or its exception). A later call, after the first finished, runs ``fn`` again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Call(Generic[T]):
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None


class Group(Generic[T]):
    """One set of in-flight calls by key (``singleflight.Group``); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[bytes | str, _Call[T]] = {}

    def do(self, key: bytes | str, fn: Callable[[], T]) -> tuple[T, bool]:
        """Run ``fn`` once per concurrent ``key``; returns ``(result, shared)``.

        Raises:
            Whatever ``fn`` raised, in every caller that shared the call.
        """
        with self._lock:
            call = self._calls.get(key)
            if call is not None:
                leader = False
            else:
                call = _Call()
                self._calls[key] = call
                leader = True
        if not leader:
            call.done.wait()
            if call.error is not None:
                raise call.error
            return call.result, True  # type: ignore[return-value]
        try:
            call.result = fn()
        except BaseException as exc:
            call.error = exc
            raise
        finally:
            with self._lock:
                del self._calls[key]
            call.done.set()
        return call.result, False
