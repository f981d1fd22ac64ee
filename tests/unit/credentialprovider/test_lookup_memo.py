"""The hot path's shortcuts give exactly the answers of the slow path.

- matching by registry (``split_plain_target`` + ``host_match_paths``) against
  ``urls_match_str``, over a table of globs and targets;
- the provider set's memoised merged answer against a fresh lookup, across inserts,
  per-entry expiry, Image/Registry/Global precedence and the 15-minute purge.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from credprov._go.durations import MINUTE, SECOND
from credprov.api import internal
from credprov.base.clock import FakeClock
from credprov.credentialprovider.cache import CACHE_PURGE_INTERVAL
from credprov.credentialprovider.plugin.metrics import Metrics
from credprov.credentialprovider.plugin.registry import CredentialProviders
from credprov.imageauth.keyring import DockerKeyring
from credprov.imageauth.matching import (
    host_match_paths,
    split_plain_target,
    urls_match_str,
)
from tests.unit.credentialprovider.plugin.test_provider import ScriptedPlugin, make_provider

GLOBS = [
    "registry.io",
    "*.registry.io",
    "registry.io:5000",
    "registry.io/team",
    "registry.io/team/app",
    "*.io/te",
    "registry-[0-4].io",
    "registry-[^0-4].io",
    "r?gistry.io",
    "[",
    "*.[a-z]*.io",
    "registry.io:",
    "%zz",
    "a:b:c",
    "user@registry.io",
    "registry.io/p%41th",
    "docker.io/library",
]
TARGETS = [
    "registry.io",
    "registry.io/team/app",
    "registry.io/teamz",
    "a.registry.io/team",
    "registry.io:5000/team",
    "registry.io:/x",
    "registry-3.io/x",
    "registry-7.io/x",
    "rigistry.io/x",
    "docker.io/library/nginx",
    "x.y.io/team",
    "registry.io/pAth",
    "registry.io/p%41th",
    "registry.io/a b",
    "registry.io/x?y",
    "registry.io#frag",
    "régistry.io/x",
    "user@registry.io/x",
    "a:b:c/x",
]


@pytest.mark.parametrize(("glob", "target"), list(itertools.product(GLOBS, TARGETS)))
def test_match_by_registry_equals_urls_match_str(glob: str, target: str) -> None:
    split = split_plain_target(target)
    if split is None:
        return  # not plain: callers take the exact slow path
    host, path = split
    fast = any(path.startswith(p) for p in host_match_paths((glob,), host))
    assert fast == urls_match_str(glob, target)


def test_keyring_lookup_by_registry_equals_slow_order() -> None:
    keyring = DockerKeyring()
    keyring.add({g: {"username": g, "password": "p"} for g in GLOBS})
    index = keyring.keys()
    for target in TARGETS:
        slow = [c for key in index if urls_match_str(key, target) for c in keyring._creds[key]]
        if not slow:
            continue  # the Docker Hub fallback is not the memo's business
        assert keyring.lookup(target) == slow, target


def response(key_type: str, duration: int | None, user: str) -> internal.CredentialProviderResponse:
    return internal.CredentialProviderResponse(
        cache_key_type=key_type,
        cache_duration=duration,
        auth={"registry.io": internal.AuthConfig(user, "pw")},
    )


def providers_for(clock: FakeClock, *plugins: ScriptedPlugin) -> CredentialProviders:
    provs = [
        make_provider(p, clock, match_images=("registry.io", "*.registry.io")) for p in plugins
    ]
    cfg = internal.CredentialProviderConfig(providers=tuple(p.provider for p in provs))
    return CredentialProviders(cfg, "sha256:x", provs, Metrics())


def fresh_answer(clock: FakeClock, providers: CredentialProviders, image: str) -> list[str]:
    creds, _ = providers._lookup(image, None)
    return [c.username for c in creds]


def users(providers: CredentialProviders, image: str) -> list[str]:
    creds, results = providers.lookup(image)
    assert all(r.error is None for r in results)
    return [c.username for c in creds]


def test_memo_follows_expiry_precedence_and_purge() -> None:
    clock = FakeClock(10**12)
    a = ScriptedPlugin(
        [
            response("Registry", 5 * MINUTE, "a-registry"),
            response("Image", 1 * MINUTE, "a-image"),
            response("Global", 30 * MINUTE, "a-global"),
        ]
    )
    b = ScriptedPlugin([response("Registry", 20 * MINUTE, "b-registry")])
    providers = providers_for(clock, a, b)
    image = "registry.io/team/app"

    assert users(providers, image) == ["a-registry", "b-registry"]
    assert len(a.calls) == 1 and len(b.calls) == 1
    first = providers.lookup(image)
    assert providers.lookup(image)[0] == first[0]
    # Results are the caller's own: mutating one does not change the next answer.
    first[1][0].credentials.clear()
    first[1][0].auth.clear()
    assert users(providers, image) == ["a-registry", "b-registry"]

    # The registry entry expires strictly after its time: at the instant it is still used.
    clock.step(5 * MINUTE)
    assert users(providers, image) == ["a-registry", "b-registry"]
    assert len(a.calls) == 1
    clock.step(1)
    # Expired: provider a runs again and answers with an Image key (it wins over Registry).
    assert users(providers, image) == ["a-image", "b-registry"]
    assert len(a.calls) == 2
    assert users(providers, image) == fresh_answer(clock, providers, image)
    # The Image entry expires; the next run answers Global.
    clock.step(MINUTE + SECOND)
    assert users(providers, image) == ["a-global", "b-registry"]
    assert len(a.calls) == 3
    for _ in range(3):
        assert users(providers, image) == ["a-global", "b-registry"]
    assert len(a.calls) == 3 and len(b.calls) == 1

    # b's entry expires 20 minutes after it was written: the memo must not outlive it.
    clock.step(14 * MINUTE)
    assert users(providers, image) == ["a-global", "b-registry"]
    assert len(b.calls) == 2
    # The 15-minute purge happens on the first lookup after it falls due, memo or not.
    before = [p.cache._last_purge for p in providers.providers]
    clock.step(CACHE_PURGE_INTERVAL)
    providers.lookup(image)  # exactly due: not yet (strictly after)
    assert [p.cache._last_purge for p in providers.providers] == before
    clock.step(1)
    providers.lookup(image)
    after = [p.cache._last_purge for p in providers.providers]
    assert all(x > y for x, y in zip(after, before, strict=True))


def test_memo_sees_inserts_from_other_images() -> None:
    clock = FakeClock(0)
    a = ScriptedPlugin(
        [response("Image", 10 * MINUTE, "first"), response("Registry", 10 * MINUTE, "reg")]
    )
    providers = providers_for(clock, a)
    assert users(providers, "registry.io/x") == ["first"]
    # Another image's run adds a Registry entry: an image-key hit still wins for x.
    assert users(providers, "registry.io/y") == ["reg"]
    assert users(providers, "registry.io/x") == ["first"]
    assert users(providers, "registry.io/z") == ["reg"]
    assert len(a.calls) == 2


def _config_documents() -> list[Path]:
    root = Path(__file__).resolve().parents[3]
    found = []
    for path in sorted([*root.glob("config/*.yaml"), *root.glob("tests/fixtures/**/*.yaml")]):
        if "CredentialProviderConfig" in path.read_text(errors="replace"):
            found.append(path)
    return found


@pytest.mark.parametrize("path", _config_documents(), ids=lambda p: p.name)
def test_config_decoding_without_pydantic_equals_the_models(path: Path) -> None:
    from credprov._go.decode import load_document
    from credprov.api.config import decode_config, validate_with_models

    doc = load_document(path.read_bytes())
    assert decode_config(doc) == validate_with_models(doc)


def test_fnv32_fast_and_memoised_agree_with_the_byte_loop() -> None:
    from credprov.pullmanager.locks import fnv32, key_hash

    def reference(data: bytes) -> int:
        h = 0x811C9DC5
        for byte in data:
            h = (h * 0x01000193) & 0xFFFFFFFF
            h ^= byte
        return h

    for key in ["", "a", "foobar", "sha256:" + "ab" * 32, "registry.example.com/tëam/app:v1"]:
        assert fnv32(key.encode()) == reference(key.encode())
        assert key_hash(key) == reference(key.encode())
        assert key_hash(key) == reference(key.encode())  # memoised


def test_startup_scan_answers_lists_only_while_the_directory_is_unchanged(tmp_path: Path) -> None:
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor

    first = FSPullRecordsAccessor(str(tmp_path))
    first.write_image_pull_intent("registry.io/a:v1")
    store = FSPullRecordsAccessor(str(tmp_path))
    assert [i.image for i in store.list_image_pull_intents()[0]] == ["registry.io/a:v1"]
    # Another process (here: another store) adds an intent: the directory changed. (Its
    # mtime is moved on explicitly: on a coarse-timestamp file system two writes within
    # one tick could share it, which is why a kept listing also expires after seconds.)
    pulling = tmp_path / "image_manager" / "pulling"
    before = pulling.stat().st_mtime_ns
    first.write_image_pull_intent("registry.io/b:v1")
    if pulling.stat().st_mtime_ns == before:
        os.utime(pulling, ns=(before + 1, before + 1))
    images = sorted(i.image for i in store.list_image_pull_intents()[0])
    assert images == ["registry.io/a:v1", "registry.io/b:v1"]


def test_record_decoding_fast_path_keeps_the_strict_errors() -> None:
    from credprov.pullmanager.types import RecordDecodeError, decode_intent

    ok = b'{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"x"}'
    assert decode_intent(ok)[1].image == "x"
    for bad, text in [
        (ok[:-1] + b',"image":"y"}', 'strict decoding error: duplicate field "image"'),
        (b'{"kind":NaN}', "invalid character"),
        (b"{", "unexpected end of JSON input"),
    ]:
        with pytest.raises(RecordDecodeError) as err:
            decode_intent(bad)
        assert text in str(err.value)
