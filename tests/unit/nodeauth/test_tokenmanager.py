"""The kubelet's token cache: reuse, the 80%/24h refresh points, failed refreshes."""

from __future__ import annotations

import pytest

from credprov.nodeauth.tokenmanager import (
    MAX_TTL_SECONDS,
    IssuedToken,
    TokenManager,
    TokenManagerError,
    TokenRequestKey,
)

KEY = TokenRequestKey("ns", "sa", "sa-uid", ("aud",), "pod", "pod-uid")


class Server:
    """A TokenRequest endpoint with a settable clock; ``fail`` makes it refuse."""

    def __init__(self, ttl: int = 3600) -> None:
        self.wall = 1_000_000.0
        self.ttl = ttl
        self.fail = False
        self.issued = 0

    def now(self) -> int:  # the Clock protocol: the server is the test's clock too
        return int(self.wall * 1e9)

    def time(self) -> float:
        return self.wall

    def request(self, key: TokenRequestKey) -> IssuedToken:
        if self.fail:
            raise RuntimeError('serviceaccounts "sa" is forbidden: nope')
        self.issued += 1
        return IssuedToken(f"token-{self.issued}", self.wall + self.ttl, self.ttl)


@pytest.mark.parametrize(
    ("ttl", "elapsed", "refreshed"),
    [
        (3600, 0, False),
        (3600, 2880, False),  # exactly 80% of the lifetime: still fresh
        (3600, 2881, True),  # less than 20% left
        (MAX_TTL_SECONDS * 2, MAX_TTL_SECONDS, False),
        (MAX_TTL_SECONDS * 2, MAX_TTL_SECONDS + 1, True),  # older than 24h
    ],
)
def test_refresh_points(ttl: int, elapsed: int, refreshed: bool) -> None:
    server = Server(ttl)
    manager = TokenManager(server.request, server)
    assert manager.get(KEY) == "token-1"
    server.wall += elapsed
    assert manager.get(KEY) == ("token-2" if refreshed else "token-1")
    assert manager.requests == (2 if refreshed else 1)


def test_keys_are_the_whole_request() -> None:
    server = Server()
    manager = TokenManager(server.request, server)
    other_pod = TokenRequestKey("ns", "sa", "sa-uid", ("aud",), "pod2", "pod2-uid")
    recreated_sa = TokenRequestKey("ns", "sa", "sa-uid-2", ("aud",), "pod", "pod-uid")
    assert [manager.get(k) for k in (KEY, other_pod, recreated_sa, KEY)] == [
        "token-1",
        "token-2",
        "token-3",
        "token-1",
    ]


def test_failed_refresh_serves_the_unexpired_token_then_fails() -> None:
    server = Server()
    manager = TokenManager(server.request, server)
    manager.get(KEY)
    server.fail = True
    server.wall += 3000  # needs a refresh, still valid
    assert manager.get(KEY) == "token-1"
    server.wall += 600  # expired
    with pytest.raises(TokenManagerError, match=r"expired and refresh failed: .*forbidden"):
        manager.get(KEY)


def test_first_failure_is_failed_to_fetch() -> None:
    server = Server()
    server.fail = True
    manager = TokenManager(server.request, server)
    with pytest.raises(TokenManagerError) as info:
        manager.get(KEY)
    assert str(info.value) == 'failed to fetch token: serviceaccounts "sa" is forbidden: nope'
    assert isinstance(info.value.cause, RuntimeError)


def test_delete_pod_and_cleanup() -> None:
    server = Server()
    manager = TokenManager(server.request, server)
    manager.get(KEY)
    manager.get(TokenRequestKey("ns", "sa", "sa-uid", ("aud",), "pod2", "pod2-uid"))
    manager.delete_pod("pod-uid")
    assert len(manager) == 1
    assert manager.get(KEY) == "token-3"
    server.wall += 3600
    manager.cleanup()
    assert len(manager) == 0


def test_token_not_in_repr() -> None:
    assert "secret-token" not in repr(IssuedToken("secret-token", 1.0, 1))
