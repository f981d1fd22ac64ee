"""The chain's memoised answer per image is exactly the answer of a fresh lookup.

Each row changes one thing between two lookups of the same image (the clock, the providers'
caches, the config, the chain, the node keyring) and checks the second answer against the
same engine's slow path (every memo emptied), the plugin runs it caused, and whether it
was served from the memo. The clock is injected: nothing sleeps.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from credprov._go.durations import MINUTE
from credprov.api import internal
from credprov.base.clock import FakeClock
from credprov.credentialprovider.cache import CACHE_PURGE_INTERVAL, CacheEntry, generate_cache_key
from credprov.credentialprovider.chain import ImageResolution, KeyringSource, PodInfo
from credprov.credentialprovider.engine import Engine
from credprov.credentialprovider.plugin.metrics import Metrics
from credprov.credentialprovider.plugin.registry import CredentialProviders
from credprov.imageauth.keyring import DockerKeyring, tracked_auth_configs
from tests.unit.credentialprovider.plugin.test_provider import ScriptedPlugin, make_provider

IMAGE = "registry.io/team/app:v1"
REPO = "registry.io/team/app"


def response(key_type: str, duration: int, user: str) -> internal.CredentialProviderResponse:
    return internal.CredentialProviderResponse(
        cache_key_type=key_type,
        cache_duration=duration,
        auth={"registry.io": internal.AuthConfig(user, "pw")},
    )


@dataclass
class World:
    clock: FakeClock
    a: ScriptedPlugin
    b: ScriptedPlugin
    providers: CredentialProviders
    engine: Engine

    def runs(self) -> int:
        return len(self.a.calls) + len(self.b.calls)


def provider_set(clock: FakeClock, *plugins: ScriptedPlugin) -> CredentialProviders:
    provs = [make_provider(p, clock, match_images=("registry.io",)) for p in plugins]
    cfg = internal.CredentialProviderConfig(providers=tuple(p.provider for p in provs))
    return CredentialProviders(cfg, "sha256:x", provs, Metrics())


def world() -> World:
    clock = FakeClock(10**12)
    a = ScriptedPlugin([response("Registry", 10 * MINUTE, "a1"), response("Image", MINUTE, "a2")])
    b = ScriptedPlugin([response("Registry", 24 * 60 * MINUTE, "b1")])
    providers = provider_set(clock, a, b)
    return World(clock, a, b, providers, Engine(providers))


def users(resolution: ImageResolution) -> list[str]:
    return [c.username for c in resolution.credentials]


def memoised(resolution: ImageResolution) -> bool:
    # A memoised answer holds the shared templates until its providers are first read.
    return "_provider_templates" in vars(resolution)


def slow(w: World, image: str = IMAGE) -> ImageResolution:
    """The same engine's answer with every memo emptied (its caches left as they are)."""
    w.engine._memo.clear()
    if isinstance(w.engine.providers, CredentialProviders):
        w.engine.providers._memo.clear()
    for source in w.engine.sources:
        inner = getattr(source, "providers", None)
        if isinstance(inner, CredentialProviders):
            inner._memo.clear()
    return w.engine.resolve(image)


def add_image_entry(w: World) -> None:
    # A new answer of provider a, cached under the image's own key (it wins over Registry).
    creds = {"registry.io": internal.AuthConfig("a-new", "pw")}
    w.providers.providers[0].cache.add(
        CacheEntry(
            key=generate_cache_key(REPO),
            credentials=creds,
            expires_at=w.clock.now() + MINUTE,
            cache_key_type="Image",
            cache_duration=MINUTE,
            tracked=tracked_auth_configs(creds, None, "scripted"),
        )
    )


def replace_providers(w: World) -> None:
    # A new config: one provider whose plugin answers differently.
    c = ScriptedPlugin([response("Registry", 10 * MINUTE, "c1")])
    w.b = c
    w.engine.sources[-1].providers = provider_set(w.clock, c)  # type: ignore[attr-defined]


def node_key(w: World) -> None:
    # (engine.node_keyring is the chain's own keyring, empty or not.)
    w.engine.node_keyring.add({"registry.io": {"username": "node", "password": "pw"}})


def node_keyring_replaced(w: World) -> None:
    keyring = DockerKeyring()
    keyring.add({"registry.io": {"username": "node2", "password": "pw"}})
    source = w.engine.sources[1]
    assert isinstance(source, KeyringSource)
    source.keyring = keyring


@dataclass(frozen=True)
class Case:
    name: str
    change: Callable[[World], None]
    users: list[str]  # the second answer's credentials, in try order
    runs: int  # plugin runs caused by the second lookup
    memoised: bool  # whether the second answer came from the memo
    # Whether the answer is memoised again (a node keyring holding keys is asked on every
    # lookup: it can change without a trace).
    memoised_after: bool = True


CASES = [
    Case("nothing changed", lambda w: None, ["a1", "b1"], 0, True),
    Case("at the entry's expiry", lambda w: w.clock.step(10 * MINUTE), ["a1", "b1"], 0, True),
    Case("entry expired", lambda w: w.clock.step(10 * MINUTE + 1), ["a2", "b1"], 1, False),
    Case("new answer in a provider's cache", add_image_entry, ["a-new", "b1"], 0, False),
    Case(
        "a provider removed from the config",
        lambda w: w.providers.providers.pop(0) and None,
        ["b1"],
        0,
        False,
    ),
    Case("the providers replaced (config reload)", replace_providers, ["c1"], 1, False),
    Case("the plugin source removed", lambda w: w.engine.sources.pop() and None, [], 0, False),
    Case("the node keyring gains a key", node_key, ["node", "a1", "b1"], 0, False, False),
    Case(
        "the node keyring replaced", node_keyring_replaced, ["node2", "a1", "b1"], 0, False, False
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_memoised_answer_follows_every_change(case: Case) -> None:
    w = world()
    first = w.engine.resolve(IMAGE)
    assert users(first) == ["a1", "b1"] and w.runs() == 2 and not memoised(first)
    # An answer that ran a plugin is not memoised; the next one, from the caches, is.
    assert not memoised(w.engine.resolve(IMAGE))
    assert memoised(w.engine.resolve(IMAGE))
    case.change(w)
    runs = w.runs()
    second = w.engine.resolve(IMAGE)
    assert users(second) == case.users
    assert w.runs() - runs == case.runs
    assert memoised(second) == case.memoised  # (before reading its providers)
    reference = slow(w)
    assert w.runs() - runs == case.runs  # the slow path ran nothing more
    if case.runs:  # the second lookup ran a plugin, the slow one found its answer cached
        assert users(second) == users(reference)
    else:
        assert second == reference
    third = w.engine.resolve(IMAGE)
    assert memoised(third) == case.memoised_after
    assert third == reference


def test_purge_falls_due_on_a_memoised_image() -> None:
    clock = FakeClock(0)
    a = ScriptedPlugin([response("Registry", 24 * 60 * MINUTE, "a1")])
    providers = provider_set(clock, a)
    engine = Engine(providers)
    engine.resolve(IMAGE)
    engine.resolve(IMAGE)
    assert memoised(engine.resolve(IMAGE))
    before = providers.providers[0].cache._last_purge
    clock.step(CACHE_PURGE_INTERVAL)
    assert memoised(engine.resolve(IMAGE))  # exactly due: not yet (strictly after)
    assert providers.providers[0].cache._last_purge == before
    clock.step(1)
    resolution = engine.resolve(IMAGE)
    assert not memoised(resolution) and users(resolution) == ["a1"]
    assert providers.providers[0].cache._last_purge > before  # the kubelet's purge ran
    # The purge changed the cache during that lookup, so its answer was not memoised.
    engine.resolve(IMAGE)
    assert memoised(engine.resolve(IMAGE)) and len(a.calls) == 1


def test_pull_secrets_and_token_providers_are_never_memoised() -> None:
    w = world()
    w.engine.resolve(IMAGE)
    w.engine.resolve(IMAGE)
    payload = json.dumps({"auths": {"registry.io": {"username": "secret", "password": "pw"}}})
    secret = {
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"namespace": "ns", "name": "s", "uid": "u"},
        "data": {".dockerconfigjson": base64.b64encode(payload.encode()).decode()},
    }
    with_secret = w.engine.resolve(IMAGE, [secret], PodInfo())
    assert users(with_secret) == ["secret", "a1", "b1"] and not memoised(with_secret)
    assert users(w.engine.resolve(IMAGE)) == ["a1", "b1"]

    clock = FakeClock(0)
    plugin = ScriptedPlugin([response("Registry", 10 * MINUTE, "t")])
    provider = make_provider(
        plugin,
        clock,
        match_images=("registry.io",),
        token_attributes=internal.ServiceAccountTokenAttributes(
            service_account_token_audience="aud", require_service_account=False
        ),
    )
    cfg = internal.CredentialProviderConfig(providers=(provider.provider,))
    engine = Engine(CredentialProviders(cfg, "sha256:x", [provider], Metrics()))
    engine.resolve(IMAGE)
    assert users(engine.resolve(IMAGE)) == ["t"]
    assert not memoised(engine.resolve(IMAGE)) and len(plugin.calls) == 1


def test_a_memoised_answer_is_an_ordinary_resolution_of_the_callers_own() -> None:
    w = world()
    w.engine.resolve(IMAGE)
    fresh = w.engine.resolve(IMAGE)
    hit = w.engine.resolve(IMAGE)
    assert memoised(hit)
    assert type(hit) is ImageResolution
    assert repr(hit) == repr(fresh) and hit == fresh and not hit.failed
    assert dataclasses.asdict(hit) == dataclasses.asdict(fresh)
    assert pickle.loads(pickle.dumps(w.engine.resolve(IMAGE))) == fresh
    assert copy.copy(w.engine.resolve(IMAGE)) == fresh
    # The same list on every read; mutating it, its results or the credentials does not
    # change the next answer.
    assert hit.providers is hit.providers
    hit.providers[0].credentials.clear()
    hit.providers[0].auth.clear()
    hit.providers.clear()
    hit.credentials.clear()
    again = w.engine.resolve(IMAGE)
    assert memoised(again) and again == fresh
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        again.nope  # noqa: B018
