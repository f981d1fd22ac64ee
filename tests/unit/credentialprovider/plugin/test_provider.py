"""Provider caching, expiry, singleflight and cache keys (``pluginProvider.provide``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from credprov._go.durations import MINUTE, SECOND
from credprov._go.singleflight import Group
from credprov.api import internal
from credprov.base.clock import FakeClock
from credprov.credentialprovider.cache import (
    CACHE_PURGE_INTERVAL,
    CacheEntry,
    generate_cache_key,
    generate_service_account_cache_key,
    generate_single_flight_key,
)
from credprov.credentialprovider.chain import PodInfo, ServiceAccountInfo, TokenRequest
from credprov.credentialprovider.plugin.exec import ExecPlugin, PluginError
from credprov.credentialprovider.plugin.provider import PluginProvider
from tests.conftest import CANARY, install_fake_plugin

V1 = "credentialprovider.kubelet.k8s.io/v1"


@dataclass
class ScriptedPlugin:
    """An in-process stand-in for ExecPlugin: returns scripted responses, counts calls."""

    responses: list[internal.CredentialProviderResponse | Exception]
    calls: list[internal.CredentialProviderRequest] = field(default_factory=list)
    delay: threading.Event | None = None
    name: str = "scripted"

    def exec(
        self, request: internal.CredentialProviderRequest
    ) -> internal.CredentialProviderResponse:
        self.calls.append(request)
        if self.delay is not None:
            self.delay.wait(5)
        item = self.responses[min(len(self.calls), len(self.responses)) - 1]
        if isinstance(item, Exception):
            raise item
        return item


def response(
    key_type: str = "Registry", duration: int | None = None, password: str = "pw"
) -> internal.CredentialProviderResponse:
    return internal.CredentialProviderResponse(
        cache_key_type=key_type,
        cache_duration=duration,
        auth={"*.registry.io": internal.AuthConfig("user", password)},
    )


def make_provider(
    plugin: ScriptedPlugin,
    clock: FakeClock,
    default_cache_duration: int = 10 * MINUTE,
    match_images: tuple[str, ...] = ("*.registry.io",),
    token_attributes: internal.ServiceAccountTokenAttributes | None = None,
    **kwargs: object,
) -> PluginProvider:
    cfg = internal.CredentialProvider(
        name="scripted",
        match_images=match_images,
        default_cache_duration=default_cache_duration,
        api_version=V1,
        token_attributes=token_attributes,
    )
    return PluginProvider(cfg, plugin, clock=clock, **kwargs)  # type: ignore[arg-type]


def test_unmatched_image_runs_nothing(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([response()])
    p = make_provider(plugin, clock)
    res = p.provide("other.io/foo")
    assert not res.matched and not res.auth and plugin.calls == []


@pytest.mark.parametrize(
    ("key_type", "second_image", "hit"),
    [
        ("Image", "a.registry.io/foo", True),
        ("Image", "a.registry.io/bar", False),
        ("Registry", "a.registry.io/bar", True),
        ("Registry", "b.registry.io/foo", False),
        ("Global", "b.registry.io/foo", True),
    ],
    ids=["image-same", "image-other", "registry-same", "registry-other", "global-any"],
)
def test_cache_key_types(clock: FakeClock, key_type: str, second_image: str, hit: bool) -> None:
    plugin = ScriptedPlugin([response(key_type)])
    p = make_provider(plugin, clock)
    first = p.provide("a.registry.io/foo")
    assert first.executed and not first.cached
    second = p.provide(second_image)
    assert second.cached is hit
    assert len(plugin.calls) == (1 if hit else 2)


# The cache expiry timeline: (response cacheDuration, default, step, still cached?)
@pytest.mark.parametrize(
    ("duration", "default", "step", "cached"),
    [
        (None, 10 * MINUTE, 10 * MINUTE, True),  # expiry is strict: now > expiresAt
        (None, 10 * MINUTE, 10 * MINUTE + 1, False),
        (MINUTE, 10 * MINUTE, 59 * SECOND, True),
        (MINUTE, 10 * MINUTE, MINUTE + 1, False),
        (0, 10 * MINUTE, 0, False),  # explicit 0s: never cached
        (None, 0, 0, False),  # no duration and default 0: never cached
        (-MINUTE, 10 * MINUTE, 0, False),  # negative: already expired
    ],
    ids=[
        "default-edge",
        "default-expired",
        "response-live",
        "response-expired",
        "zero-response",
        "zero-default",
        "negative",
    ],
)
def test_expiry_timeline(
    clock: FakeClock, duration: int | None, default: int, step: int, cached: bool
) -> None:
    plugin = ScriptedPlugin([response(duration=duration)])
    p = make_provider(plugin, clock, default_cache_duration=default)
    p.provide("a.registry.io/foo")
    clock.step(step)
    assert p.provide("a.registry.io/foo").cached is cached


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (("a.registry.io/foo", "a.registry.io", "<global>"), "a.registry.io/foo"),
        (("a.registry.io", "<global>"), "a.registry.io"),
        (("<global>",), "<global>"),
    ],
    ids=["image-first", "registry-second", "global-last"],
)
def test_lookup_order_image_then_registry_then_global(
    clock: FakeClock, present: tuple[str, ...], expected: str
) -> None:
    plugin = ScriptedPlugin([response()])
    p = make_provider(plugin, clock)
    for base in present:
        p.cache.add(
            CacheEntry(
                key=generate_cache_key(base),
                credentials={"*.registry.io": internal.AuthConfig("u", base)},
                expires_at=clock.now() + MINUTE,
                cache_key_type="Image",
            )
        )
    res = p.provide("a.registry.io/foo")
    assert res.cached and res.auth["*.registry.io"].password == expected
    assert plugin.calls == []


def test_errors_are_not_cached(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([PluginError("boom: exit status 1: " + "stderr"), response()])
    p = make_provider(plugin, clock)
    first = p.provide("a.registry.io/foo")
    assert first.error and not first.auth
    second = p.provide("a.registry.io/foo")
    assert second.error is None and second.auth and not second.cached
    assert len(plugin.calls) == 2


@pytest.mark.parametrize(
    "key_type", ["", "image", "Repository"], ids=["empty", "lowercase", "other"]
)
def test_invalid_cache_key_type_drops_response(clock: FakeClock, key_type: str) -> None:
    plugin = ScriptedPlugin([response(key_type)])
    p = make_provider(plugin, clock)
    res = p.provide("a.registry.io/foo")
    assert res.auth == {}
    assert res.error == (
        f'credential provider plugin did not return a valid cacheKeyType: "{key_type}"'
    )
    assert len(p.cache) == 0


def test_empty_auth_with_valid_type_is_cached(clock: FakeClock) -> None:
    plugin = ScriptedPlugin(
        [internal.CredentialProviderResponse(cache_key_type="Registry"), response()]
    )
    p = make_provider(plugin, clock)
    p.provide("a.registry.io/foo")
    assert p.provide("a.registry.io/foo").cached
    assert len(plugin.calls) == 1


def test_purge_every_15_minutes(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([response("Image", duration=MINUTE)])
    p = make_provider(plugin, clock)
    for i in range(5):
        p.provide(f"a.registry.io/img{i}")
    assert len(p.cache) == 5
    clock.step(2 * MINUTE)
    p.provide("a.registry.io/img0")  # expired entry dropped on get, not yet purged
    assert len(p.cache) == 5
    clock.step(CACHE_PURGE_INTERVAL)
    p.provide("other.registry.io/x")  # first lookup after 15 min purges everything expired
    assert len(p.cache) == 1


def test_singleflight_with_slow_plugin(clock: FakeClock) -> None:
    gate = threading.Event()
    plugin = ScriptedPlugin([response()], delay=gate)
    p = make_provider(plugin, clock)
    barrier = threading.Barrier(20)
    results = []

    def worker() -> None:
        barrier.wait()
        results.append(p.provide("a.registry.io/foo"))

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for t in threads:
        t.start()
    # Let the threads pile up on the in-flight call, then release the plugin.
    while len(plugin.calls) < 1:
        pass
    threading.Event().wait(0.05)
    gate.set()
    for t in threads:
        t.join()
    assert len(plugin.calls) == 1
    assert p.executions == 1
    assert all(r.auth for r in results)
    # Only the caller that ran the plugin says so; the rest joined it or hit the cache.
    assert sum(r.executed for r in results) == 1


def test_singleflight_real_subprocess(bin_dir: Path, clock: FakeClock, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    path = install_fake_plugin(bin_dir, "slow")
    plugin = ExecPlugin(
        "slow",
        str(path),
        V1,
        env=[
            internal.ExecEnvVar("FAKE_MODE", "sleep"),
            internal.ExecEnvVar("FAKE_SLEEP", "0.5"),
            internal.ExecEnvVar("FAKE_COUNTER", str(counter)),
        ],
    )
    p = make_provider(ScriptedPlugin([]), clock)
    p.plugin = plugin
    barrier = threading.Barrier(30)

    def worker() -> None:
        barrier.wait()
        p.provide("a.registry.io/foo")

    threads = [threading.Thread(target=worker) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.read_text().count("x") == 1


def test_singleflight_group_propagates_errors() -> None:
    group: Group[int] = Group()

    def boom() -> int:
        raise ValueError("x")

    with pytest.raises(ValueError):
        group.do("k", boom)
    assert group.do("k", lambda: 3) == (3, False)


# -- cache keys (cryptobyte) ----------------------------------------------------------------


def test_cache_key_encoding() -> None:
    assert generate_cache_key("test.registry.io") == b"\x00\x10test.registry.io\x00\x00"
    assert generate_cache_key("<global>", "ab") == b"\x00\x08<global>\x00\x02ab"


def test_cache_key_too_long() -> None:
    from credprov.credentialprovider.cache import CacheKeyError

    with pytest.raises(CacheKeyError):
        generate_cache_key("x" * 65536)


def test_service_account_keys_are_upstreams_bytes() -> None:
    # A non-ASCII annotation value and a uid of 200 bytes (length prefix 0x00 0xc8): Go
    # keeps the bytes; they must not be re-encoded (0xc8 is not the UTF-8 of U+00C8).
    key = generate_service_account_cache_key("ns", "sa", "u" * 200, {"k": "ü"})
    assert key == (
        b"\x00\x02ns\x00\x02sa\x00\xc8" + b"u" * 200 + b"\x00\x00\x00\x01\x00\x01k\x00\x02\xc3\xbc"
    )
    full = generate_cache_key("registry.io", key)
    assert full[: 2 + 11] == b"\x00\x0bregistry.io"
    assert full[13:15] == len(key).to_bytes(2, "big") and full[15:] == key


def test_service_account_keys() -> None:
    base = generate_service_account_cache_key("ns", "sa", "uid", {"b": "2", "a": "1"})
    assert base == (
        b"\x00\x02ns\x00\x02sa\x00\x03uid\x00\x00\x00\x02\x00\x01a\x00\x011\x00\x01b\x00\x012"
    )
    token = generate_service_account_cache_key("ns", "sa", "uid", {}, "Token", "sha256:x")
    assert token.endswith(b"\x00\x05token\x00\x08sha256:x")
    sa_type = generate_service_account_cache_key("ns", "sa", "uid", {}, "ServiceAccount", "h")
    assert b"token" not in sa_type
    assert generate_single_flight_key("img", "", {}) == b"\x00\x03img\x00\x00\x00\x00\x00\x00"


# -- service-account mode (KEP-4412) --------------------------------------------------------


def sa_attrs(**kw: object) -> internal.ServiceAccountTokenAttributes:
    base: dict[str, object] = {
        "service_account_token_audience": "aud",
        "cache_type": "ServiceAccount",
        "require_service_account": True,
    }
    base.update(kw)
    return internal.ServiceAccountTokenAttributes(**base)  # type: ignore[arg-type]


def test_requires_service_account_skips_without_one(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([response()])
    p = make_provider(plugin, clock, token_attributes=sa_attrs())
    res = p.provide("a.registry.io/foo", PodInfo("ns", "pod", "uid", ""))
    assert res.skipped and plugin.calls == []


def test_service_account_token_and_annotations_sent(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([response()])
    tokens: list[TokenRequest] = []

    def get_sa(ns: str, name: str) -> ServiceAccountInfo:
        return ServiceAccountInfo("sa-uid", {"req": "r", "opt": "o", "other": "x"})

    def get_token(request: TokenRequest) -> str:
        tokens.append(request)
        return CANARY

    p = make_provider(
        plugin,
        clock,
        token_attributes=sa_attrs(
            required_service_account_annotation_keys=("req",),
            optional_service_account_annotation_keys=("opt", "missing"),
        ),
        get_service_account=get_sa,
        get_service_account_token=get_token,
    )
    res = p.provide("a.registry.io/foo", PodInfo("ns", "pod", "pod-uid", "default"))
    assert res.service_account is not None and res.service_account.uid == "sa-uid"
    assert plugin.calls[0].service_account_token == CANARY
    assert plugin.calls[0].service_account_annotations == {"req": "r", "opt": "o"}
    assert tokens == [TokenRequest("ns", "default", "sa-uid", "aud", "pod", "pod-uid")]


def test_missing_required_annotation_skips(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([response()])
    p = make_provider(
        plugin,
        clock,
        token_attributes=sa_attrs(required_service_account_annotation_keys=("req",)),
        get_service_account=lambda ns, n: ServiceAccountInfo("u", {}),
        get_service_account_token=lambda *a: "tok",
    )
    res = p.provide("a.registry.io/foo", PodInfo("ns", "pod", "uid", "default"))
    assert res.skipped and plugin.calls == []


@pytest.mark.parametrize(
    ("cache_type", "rejected"), [("ServiceAccount", True), ("Token", False)], ids=["sa", "token"]
)
def test_token_echo_check(clock: FakeClock, cache_type: str, rejected: bool) -> None:
    plugin = ScriptedPlugin([response(password=CANARY)])
    p = make_provider(
        plugin,
        clock,
        token_attributes=sa_attrs(cache_type=cache_type),
        get_service_account=lambda ns, n: ServiceAccountInfo("u", {}),
        get_service_account_token=lambda *a: CANARY,
    )
    res = p.provide("a.registry.io/foo", PodInfo("ns", "pod", "uid", "default"))
    assert (res.error is not None) is rejected
    assert CANARY not in (res.error or "")


def test_gate_off_ignores_token_attributes(clock: FakeClock) -> None:
    plugin = ScriptedPlugin([response()])
    p = make_provider(plugin, clock, token_attributes=sa_attrs(), service_account_token_gate=False)
    res = p.provide("a.registry.io/foo", PodInfo("ns", "pod", "uid", ""))
    assert res.auth and plugin.calls[0].service_account_token == ""
