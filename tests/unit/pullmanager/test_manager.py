"""ImagePullManager: the kubelet's ``image_pull_manager.go`` behaviour, step by step.

Most tests run against an in-memory fake accessor and a fake policy so each step of
``MustAttemptImagePull``, the merge rules, intent ref-counting, pruning and start-up
housekeeping can be pinned down in isolation; the last section goes through the real file
store, LRU layer, policies and metrics on a temporary kubelet root, including two processes
sharing one root.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from credprov.pullmanager.interfaces import (
    RuntimeImage,
    StoreReadError,
    StoreWriteError,
)
from credprov.pullmanager.locks import StripedLockSet, fnv32
from credprov.pullmanager.manager import (
    RESULT_ERROR,
    RESULT_MUST_AUTHENTICATE,
    RESULT_POLICY_ALLOWED,
    RESULT_RECORD_FOUND,
    WRITE_RECORD_WHILE_MATCHING_LIMIT,
    ImagePullManager,
    PullIntentError,
    merge_pull_secrets,
    merge_pull_service_accounts,
    merge_pulled_record,
)
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    ImagePullIntent,
    ImagePullSecret,
    ImagePullServiceAccount,
)

T0 = dt.datetime(2024, 10, 21, 12, 26, 40, tzinfo=dt.UTC)
REF = "sha256:aaaa"
IMAGE = "registry.io/team/app:v1"
KEY = "registry.io/team/app"

# -- fakes --------------------------------------------------------------------------------------


class FakeClock:
    """A :class:`credprov.base.clock.Clock` whose wall time is a settable datetime."""

    def __init__(self, now: dt.datetime = T0) -> None:
        self.current = now

    def now(self) -> int:
        return int(self.current.timestamp() * 1e9)

    def time(self) -> float:
        return self.current.timestamp()

    def advance(self, **kw: float) -> None:
        self.current += dt.timedelta(**kw)


class FakeStore:
    """The PullRecordsAccessor protocol over dicts, with error injection and counters."""

    def __init__(self) -> None:
        self.intents: dict[str, ImagePullIntent] = {}
        self.records: dict[str, ImagePulledRecord] = {}
        self.broken_records: set[str] = set()
        self.broken_intents: set[str] = set()
        self.fail_writes = False
        self.fail_intent_writes = False
        self.fail_deletes = False
        self.record_writes: list[ImagePulledRecord] = []
        self.mu = threading.Lock()

    def write_image_pull_intent(self, image: str) -> None:
        if self.fail_intent_writes:
            raise StoreWriteError("no space left on device")
        with self.mu:
            self.intents[image] = ImagePullIntent(image=image)

    def image_pull_intent_exists(self, image: str) -> bool:
        if image in self.broken_intents:
            raise StoreReadError("intent: strict decoding error")
        return image in self.intents

    def delete_image_pull_intent(self, image: str) -> None:
        if self.fail_deletes:
            raise StoreWriteError("permission denied")
        with self.mu:
            self.intents.pop(image, None)

    def list_image_pull_intents(self) -> tuple[list[ImagePullIntent], list[str]]:
        return list(self.intents.values()), [f"{i}: broken" for i in self.broken_intents]

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        if image_ref in self.broken_records:
            raise StoreReadError("record: strict decoding error")
        # Shared object, as the LRU layer hands out: the manager must never mutate it.
        return self.records.get(image_ref)

    def write_image_pulled_record(self, record: ImagePulledRecord) -> None:
        if self.fail_writes:
            raise StoreWriteError("no space left on device")
        with self.mu:
            self.records[record.image_ref] = record
            self.broken_records.discard(record.image_ref)
            self.record_writes.append(record)

    def delete_image_pulled_record(self, image_ref: str) -> None:
        if self.fail_deletes:
            raise StoreWriteError("permission denied")
        with self.mu:
            self.records.pop(image_ref, None)

    def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
        return list(self.records.values()), [f"{r}: broken" for r in self.broken_records]


class LockingStore(FakeStore):
    """A store offering the cross-process ``locked(kind, key)`` the file store has."""

    def __init__(self) -> None:
        super().__init__()
        self.lock_calls: list[tuple[str, str]] = []
        self.held: set[tuple[str, str]] = set()

    @contextlib.contextmanager
    def locked(self, kind: str, key: str) -> Iterator[None]:
        self.lock_calls.append((kind, key))
        self.held.add((kind, key))
        try:
            yield
        finally:
            self.held.discard((kind, key))

    def write_image_pulled_record(self, record: ImagePulledRecord) -> None:
        assert ("record", record.image_ref) in self.held, "record written outside its flock"
        super().write_image_pulled_record(record)


class FakePolicy:
    """The four policies' answers, and the 1.36 literal trimImageTagDigest."""

    def __init__(self, mode: str = "NeverVerifyPreloadedImages") -> None:
        self.mode = mode
        self.calls: list[tuple[str, bool]] = []

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        self.calls.append((image, image_pulled_by_kubelet))
        if self.mode == "NeverVerify":
            return False
        if self.mode == "AlwaysVerify":
            return True
        return image_pulled_by_kubelet

    @staticmethod
    def trim_image_tag_digest(image: str) -> str:
        if not image or image != image.lower():
            raise ValueError(f'invalid image name "{image}": must be lowercase')
        name = image.partition("@")[0]
        colon = name.rfind(":")
        return name[:colon] if colon > name.rfind("/") else name


class FakeMetrics:
    def __init__(self) -> None:
        self.results: list[str] = []
        self.ondisk: list[tuple[int, int]] = []
        self.inmemory: list[tuple[int, int]] = []

    def must_pull_check(self, result: str) -> None:
        self.results.append(result)

    def set_ondisk(self, intents: int, records: int) -> None:
        self.ondisk.append((intents, records))

    def set_inmemory(self, intents: int, records: int) -> None:
        self.inmemory.append((intents, records))


@dataclass
class FakeRuntime:
    images: list[RuntimeImage] = field(default_factory=list)
    error: Exception | None = None

    def list_images(self) -> list[RuntimeImage]:
        if self.error is not None:
            raise self.error
        return self.images


class PodCreds:
    """A ``get_pod_credentials`` that counts its calls."""

    def __init__(
        self,
        secrets: list[ImagePullSecret] | None = None,
        sa: ImagePullServiceAccount | None = None,
        error: Exception | None = None,
    ) -> None:
        self.secrets = secrets or []
        self.sa = sa
        self.error = error
        self.calls = 0

    def __call__(self) -> tuple[list[ImagePullSecret], ImagePullServiceAccount | None]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.secrets, self.sa


def secret(name: str, h: str, ns: str = "default", uid: str | None = None) -> ImagePullSecret:
    return ImagePullSecret.model_validate(
        {"uid": uid or f"uid-{name}", "namespace": ns, "name": name, "credentialHash": h}
    )


def sa(name: str, ns: str = "default", uid: str | None = None) -> ImagePullServiceAccount:
    return ImagePullServiceAccount.model_validate(
        {"uid": uid or f"uid-{name}", "namespace": ns, "name": name}
    )


def creds(
    secrets: list[ImagePullSecret] | None = None,
    sas: list[ImagePullServiceAccount] | None = None,
    node: bool = False,
) -> ImagePullCredentials:
    return ImagePullCredentials(
        kubernetesSecrets=secrets, kubernetesServiceAccounts=sas, nodePodsAccessible=node
    )


def record(
    mapping: dict[str, ImagePullCredentials] | None = None,
    ref: str = REF,
    at: dt.datetime = T0,
) -> ImagePulledRecord:
    return ImagePulledRecord(imageRef=ref, lastUpdatedTime=at, credentialMapping=mapping or {})


@dataclass
class Env:
    mgr: ImagePullManager
    store: FakeStore
    policy: FakePolicy
    metrics: FakeMetrics
    clock: FakeClock


def make(
    store: FakeStore | None = None,
    mode: str = "NeverVerifyPreloadedImages",
    runtime: FakeRuntime | None = None,
    **kw: Any,
) -> Env:
    store = store if store is not None else FakeStore()
    policy = FakePolicy(mode)
    metrics = FakeMetrics()
    clock = FakeClock()
    mgr = ImagePullManager(
        "/nonexistent", policy, (), runtime, clock, accessor=store, metrics=metrics, **kw
    )
    return Env(mgr, store, policy, metrics, clock)


# -- locks --------------------------------------------------------------------------------------


def test_fnv32_is_go_fnv1() -> None:
    assert fnv32(b"") == 0x811C9DC5
    assert fnv32(b"a") == 0x050C5D7E
    assert fnv32(b"foobar") == 0x31F0B262


@pytest.mark.parametrize(("size", "stripes"), [(-1, 1), (0, 1), (10, 10), (31, 31), (500, 31)])
def test_striped_lock_set_sizes(size: int, stripes: int) -> None:
    locks = StripedLockSet(size)
    assert len(locks) == stripes
    # Issue #138935: any key must land on an allocated stripe, whatever size was asked for.
    for i in range(200):
        locks.lock(f"image-{i}")


def test_striped_lock_set_global_lock_blocks_keys() -> None:
    locks = StripedLockSet(4)
    with locks.global_lock():
        assert not locks.lock("x").acquire(blocking=False)
    assert locks.lock("x").acquire(blocking=False)
    locks.lock("x").release()


# -- MustAttemptImagePull -----------------------------------------------------------------------

S_A = secret("a", "hash-a")


@dataclass
class Case:
    name: str
    records: dict[str, ImagePulledRecord] = field(default_factory=dict)
    intents: tuple[str, ...] = ()
    mode: str = "NeverVerifyPreloadedImages"
    image: str = IMAGE
    ref: str = REF
    pod_secrets: list[ImagePullSecret] = field(default_factory=list)
    pod_sa: ImagePullServiceAccount | None = None
    broken_record: bool = False
    broken_intent: bool = False
    want: bool = True
    metric: str | None = RESULT_MUST_AUTHENTICATE
    creds_looked_up: bool = False
    want_secrets: list[ImagePullSecret] | None = None  # the entry after the call, if written


def rec(entry: ImagePullCredentials, key: str = KEY) -> dict[str, ImagePulledRecord]:
    return {REF: record({key: entry})}


MANY = [secret(f"s{i:03d}", f"h{i:03d}") for i in range(WRITE_RECORD_WHILE_MATCHING_LIMIT)]

CASES = [
    # 1. not present: nothing to decide, nothing counted
    Case("empty imageRef", ref="", records=rec(creds(node=True)), want=True, metric=None),
    # 2. fail safe on read errors
    Case("record read error", broken_record=True, want=True, metric=RESULT_ERROR),
    Case("intent read error", broken_intent=True, want=True, metric=RESULT_ERROR),
    Case("intent file marks kubelet-pulled", intents=(IMAGE,), want=True),
    Case("intent for another string only", intents=(IMAGE + "x",), want=False,
         metric=RESULT_POLICY_ALLOWED),
    # 3. policy
    Case("preloaded image allowed", want=False, metric=RESULT_POLICY_ALLOWED),
    Case("NeverVerify ignores records", mode="NeverVerify", records=rec(creds([S_A])),
         want=False, metric=RESULT_POLICY_ALLOWED),
    # 4. no record
    Case("AlwaysVerify unknown image", mode="AlwaysVerify", want=True),
    Case("intent only, AlwaysVerify", mode="AlwaysVerify", intents=(IMAGE,), want=True),
    # 5. bad name
    Case("bad image name", image="Registry.io/App:v1", records=rec(creds(node=True)),
         want=True, metric=RESULT_ERROR),
    # 6. key absent: same imageRef under another name grants nothing
    Case("another name, same ref", records=rec(creds(node=True), key="other.io/app"),
         want=True),
    # 7. node-wide
    Case("nodePodsAccessible", records=rec(creds(node=True)), want=False,
         metric=RESULT_RECORD_FOUND),
    Case("nodePodsAccessible, tag/digest ignored", image=KEY + "@sha256:" + "b" * 64,
         records=rec(creds(node=True)), want=False, metric=RESULT_RECORD_FOUND),
    # 8. tracked without credentials
    Case("empty entry", records=rec(creds()), want=True),
    Case("empty mapping", records={REF: record()}, want=True),
    # 10. secrets
    Case("secret hash and coords match", records=rec(creds([S_A])), pod_secrets=[S_A],
         want=False, metric=RESULT_RECORD_FOUND, creds_looked_up=True),
    Case("hash match learns coordinates", records=rec(creds([S_A])),
         pod_secrets=[secret("b", "hash-a", ns="team")], want=False,
         metric=RESULT_RECORD_FOUND, creds_looked_up=True,
         want_secrets=[S_A, secret("b", "hash-a", ns="team")]),
    Case("rotation by coordinates", records=rec(creds([S_A])),
         pod_secrets=[secret("a", "hash-new")], want=False, metric=RESULT_RECORD_FOUND,
         creds_looked_up=True, want_secrets=[secret("a", "hash-new")]),
    Case("empty cached hash matches nothing", records=rec(creds([secret("a", "")])),
         pod_secrets=[secret("b", "")], want=True, creds_looked_up=True),
    Case("no secret matches", records=rec(creds([S_A])), pod_secrets=[secret("b", "x")],
         want=True, creds_looked_up=True),
    Case("pod without credentials", records=rec(creds([S_A])), want=True,
         creds_looked_up=True),
    Case("cap: coordinates-only refused", records=rec(creds(MANY)),
         pod_secrets=[secret("s000", "rotated")], want=True, creds_looked_up=True),
    Case("cap: hash match accepted, not written", records=rec(creds(MANY)),
         pod_secrets=[secret("new", "h050")], want=False, metric=RESULT_RECORD_FOUND,
         creds_looked_up=True, want_secrets=MANY),
    Case("below cap: hash match written", records=rec(creds(MANY[:99])),
         pod_secrets=[secret("s099", "h000")], want=False, metric=RESULT_RECORD_FOUND,
         creds_looked_up=True, want_secrets=[*MANY[:99], secret("s099", "h000")]),
    # 11. service accounts
    Case("service account exact match", records=rec(creds(sas=[sa("builder")])),
         pod_sa=sa("builder"), want=False, metric=RESULT_RECORD_FOUND, creds_looked_up=True),
    Case("service account other uid", records=rec(creds(sas=[sa("builder")])),
         pod_sa=sa("builder", uid="recreated"), want=True, creds_looked_up=True),
    Case("service account, pod has none", records=rec(creds(sas=[sa("builder")])),
         want=True, creds_looked_up=True),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_must_attempt_image_pull(case: Case) -> None:
    env = make(mode=case.mode)
    env.store.records.update(case.records)
    for image in case.intents:
        env.store.intents[image] = ImagePullIntent(image=image)
    if case.broken_record:
        env.store.broken_records.add(case.ref)
    if case.broken_intent:
        env.store.broken_intents.add(case.image)
    before = {k: v.model_copy(deep=True) for k, v in env.store.records.items()}
    get_creds = PodCreds(case.pod_secrets, case.pod_sa)

    got = env.mgr.must_attempt_image_pull(case.image, case.ref, get_creds)

    assert got is case.want
    assert env.metrics.results == ([case.metric] if case.metric else [])
    # Lazy lookup (PR #133079): plugins run only when a cached secret/SA could match.
    assert get_creds.calls == (1 if case.creds_looked_up else 0)
    if case.want_secrets is None:
        assert env.store.record_writes == []
    else:
        entry = env.store.records[REF].credential_mapping[KEY]
        expected = sorted(case.want_secrets, key=lambda s: (s.namespace, s.name, s.uid))
        assert entry.secrets == expected
        if entry.secrets == before[REF].credential_mapping[KEY].secrets:
            assert env.store.record_writes == []  # at the cap: accepted but not written
        else:
            assert len(env.store.record_writes) == 1
    # The shared objects the store handed out were never mutated.
    for ref, original in before.items():
        if ref in case.records:
            assert case.records[ref] == original


def test_must_attempt_policy_sees_kubelet_pulled_flag() -> None:
    env = make()
    env.store.records[REF] = record({"other": creds(node=True)})
    env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds())
    # A record for the imageRef under any name marks the image as kubelet-pulled (#138175).
    assert env.policy.calls == [(IMAGE, True)]


def test_must_attempt_intent_counter_without_file() -> None:
    env = make()
    env.mgr.record_pull_intent(IMAGE)
    env.store.intents.clear()  # the counter alone must say "kubelet-pulled"
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds()) is True
    assert env.policy.calls == [(IMAGE, True)]
    assert env.metrics.results == [RESULT_MUST_AUTHENTICATE]


def test_must_attempt_get_pod_credentials_error_propagates() -> None:
    env = make()
    env.store.records[REF] = record({KEY: creds([S_A])})
    boom = RuntimeError("plugin exited 1")
    with pytest.raises(RuntimeError, match="plugin exited 1"):
        env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds(error=boom))
    assert env.metrics.results == [RESULT_ERROR]


def test_must_attempt_learning_write_error_is_only_logged() -> None:
    env = make()
    env.store.records[REF] = record({KEY: creds([S_A])})
    env.store.fail_writes = True
    pod = PodCreds([secret("b", "hash-a")])
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, pod) is False
    assert env.metrics.results == [RESULT_RECORD_FOUND]


def test_learning_bumps_last_updated_time() -> None:
    env = make()
    env.store.records[REF] = record({KEY: creds([S_A])})
    env.clock.advance(hours=1)
    env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds([secret("b", "hash-a")]))
    assert env.store.records[REF].last_updated_time == T0 + dt.timedelta(hours=1)


# -- merge rules --------------------------------------------------------------------------------

T1 = T0 + dt.timedelta(minutes=5)
S_B = secret("b", "hash-b", ns="alpha")
SA_X = sa("x", ns="zeta")
SA_Y = sa("y", ns="alpha")


@dataclass
class MergeCase:
    name: str
    orig: dict[str, ImagePullCredentials]
    new: ImagePullCredentials | None
    changed: bool
    want: dict[str, ImagePullCredentials] | None = None  # None: unchanged


MERGE_CASES = [
    MergeCase("nil credentials", {KEY: creds([S_A])}, None, False),
    MergeCase("empty credentials", {KEY: creds([S_A])}, creds(), False),
    MergeCase("key absent adds entry", {"other": creds(node=True)}, creds([S_A]), True,
              {"other": creds(node=True), KEY: creds([S_A])}),
    MergeCase("node-wide is terminal (secret)", {KEY: creds(node=True)}, creds([S_A]), False),
    MergeCase("node-wide is terminal (node)", {KEY: creds(node=True)}, creds(node=True), False),
    MergeCase("node-wide replaces secrets and SAs", {KEY: creds([S_A], [SA_X])},
              creds(node=True), True, {KEY: creds(node=True)}),
    MergeCase("same secret unchanged", {KEY: creds([S_A])}, creds([S_A]), False),
    MergeCase("new secret merged and sorted", {KEY: creds([S_A])}, creds([S_B]), True,
              {KEY: creds([S_B, S_A])}),
    MergeCase("same coordinates replace hash", {KEY: creds([S_A, S_B])},
              creds([secret("a", "hash-rotated")]), True,
              {KEY: creds([S_B, secret("a", "hash-rotated")])}),
    MergeCase("secrets keep existing SAs", {KEY: creds(sas=[SA_X])}, creds([S_A]), True,
              {KEY: creds([S_A], [SA_X])}),
    MergeCase("secrets win over SAs in one input", {KEY: creds([S_A])},
              creds([S_B], [SA_X]), True, {KEY: creds([S_B, S_A])}),
    MergeCase("same SA unchanged", {KEY: creds(sas=[SA_X])}, creds(sas=[SA_X]), False),
    MergeCase("SA union sorted", {KEY: creds(sas=[SA_X])}, creds(sas=[SA_Y]), True,
              {KEY: creds(sas=[SA_Y, SA_X])}),
    MergeCase("SA keeps existing secrets", {KEY: creds([S_A])}, creds(sas=[SA_X]), True,
              {KEY: creds([S_A], [SA_X])}),
]  # fmt: skip


@pytest.mark.parametrize("case", MERGE_CASES, ids=[c.name for c in MERGE_CASES])
def test_merge_pulled_record(case: MergeCase) -> None:
    orig = record(case.orig)
    snapshot = orig.model_copy(deep=True)
    got, changed = merge_pulled_record(orig, KEY, case.new, T1)
    assert changed is case.changed
    assert orig == snapshot  # never modified in place
    if not changed:
        assert got is orig
        return
    assert got.credential_mapping == case.want
    assert got.last_updated_time == T1
    assert got.image_ref == REF


def test_merge_pull_secrets_sorted_by_namespace_name_uid() -> None:
    items = [
        secret("b", "1", ns="n1", uid="u2"),
        secret("a", "1", ns="n2", uid="u1"),
        secret("b", "1", ns="n1", uid="u1"),
    ]
    merged, changed = merge_pull_secrets([], items)
    assert changed
    assert [(s.namespace, s.name, s.uid) for s in merged] == [
        ("n1", "b", "u1"),
        ("n1", "b", "u2"),
        ("n2", "a", "u1"),
    ]
    again, changed = merge_pull_secrets(merged, items)
    assert not changed and again is merged


def test_merge_pull_service_accounts_is_a_set() -> None:
    merged, changed = merge_pull_service_accounts([SA_X], [SA_X, SA_Y, SA_Y])
    assert changed and merged == [SA_Y, SA_X]


# -- writing records through the manager --------------------------------------------------------


def test_record_image_pulled_new_record() -> None:
    env = make()
    env.mgr.record_pull_intent(IMAGE)
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    assert env.store.records[REF] == record({KEY: creds([S_A])})
    assert env.store.intents == {}
    assert env.mgr.intent_count(IMAGE) == 0


def test_record_image_pulled_nil_credentials_tracks_without_granting() -> None:
    env = make()
    env.mgr.record_image_pulled(IMAGE, REF, None)
    assert env.store.records[REF] == record({})
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds()) is True


def test_record_image_pulled_writes_only_on_change() -> None:
    env = make()
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    env.clock.advance(minutes=1)
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    assert len(env.store.record_writes) == 1
    assert env.store.records[REF].last_updated_time == T0  # not bumped without a change
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_B]))
    assert len(env.store.record_writes) == 2
    assert env.store.records[REF].last_updated_time == T0 + dt.timedelta(minutes=1)


def test_record_image_pulled_overwrites_unreadable_record() -> None:
    env = make()
    env.store.broken_records.add(REF)
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    assert env.store.records[REF] == record({KEY: creds([S_A])})


def test_record_image_pulled_bad_name_keeps_intent() -> None:
    env = make()
    env.mgr.record_pull_intent("Bad:Name")
    env.mgr.record_image_pulled("Bad:Name", REF, creds([S_A]))
    assert env.store.records == {}
    assert "Bad:Name" in env.store.intents


def test_record_image_pulled_write_error_leaves_intent_dangling() -> None:
    env = make()
    env.mgr.record_pull_intent(IMAGE)
    env.store.fail_writes = True
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    # The image keeps counting as kubelet-pulled until a restart converts the intent.
    assert IMAGE in env.store.intents
    assert env.mgr.intent_count(IMAGE) == 1
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds()) is True


def test_timestamps_are_whole_seconds() -> None:
    env = make()
    env.clock.current = T0 + dt.timedelta(microseconds=999_999)
    env.mgr.record_image_pulled(IMAGE, REF, creds(node=True))
    assert env.store.records[REF].last_updated_time == T0


# -- intents ------------------------------------------------------------------------------------


def test_intent_ref_counting() -> None:
    env = make()
    env.mgr.record_pull_intent(IMAGE)
    env.mgr.record_pull_intent(IMAGE)
    assert env.mgr.intent_count(IMAGE) == 2
    env.mgr.record_image_pull_failed(IMAGE)
    assert IMAGE in env.store.intents and env.mgr.intent_count(IMAGE) == 1
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    assert IMAGE not in env.store.intents and env.mgr.intent_count(IMAGE) == 0


def test_intent_written_even_when_pull_in_flight() -> None:
    env = make()
    env.mgr.record_pull_intent(IMAGE)
    env.store.intents.clear()
    env.mgr.record_pull_intent(IMAGE)
    assert IMAGE in env.store.intents


def test_intent_write_error() -> None:
    env = make()
    env.store.fail_intent_writes = True
    with pytest.raises(PullIntentError, match=r"^failed to record image pull intent: no space"):
        env.mgr.record_pull_intent(IMAGE)
    assert env.mgr.intent_count(IMAGE) == 0


def test_intent_delete_error_keeps_counter() -> None:
    env = make()
    env.mgr.record_pull_intent(IMAGE)
    env.store.fail_deletes = True
    env.mgr.record_image_pull_failed(IMAGE)
    assert env.mgr.intent_count(IMAGE) == 1
    env.store.fail_deletes = False
    env.mgr.record_image_pull_failed(IMAGE)
    assert env.mgr.intent_count(IMAGE) == 0 and env.store.intents == {}


def test_concurrent_pulls_share_one_intent() -> None:
    env = make()
    n = 16
    inside = threading.Barrier(n)
    seen_intent: list[bool] = []

    def pull(i: int) -> None:
        env.mgr.record_pull_intent(IMAGE)
        inside.wait()  # every pull is in flight at once
        seen_intent.append(IMAGE in env.store.intents)
        inside.wait()
        if i % 2:
            env.mgr.record_image_pulled(IMAGE, REF, creds([secret(f"s{i}", f"h{i}")]))
        else:
            env.mgr.record_image_pull_failed(IMAGE)

    threads = [threading.Thread(target=pull, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(seen_intent) and len(seen_intent) == n
    assert env.store.intents == {} and env.mgr.intent_count(IMAGE) == 0
    # No lost update among the concurrent merges.
    assert len(env.store.records[REF].credential_mapping[KEY].secrets) == n // 2


# -- cross-process lock use ---------------------------------------------------------------------


def test_flock_taken_around_writes() -> None:
    store = LockingStore()
    env = make(store)
    env.mgr.record_pull_intent(IMAGE)
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds([secret("b", "hash-a")]))
    assert store.lock_calls == [
        ("intent", IMAGE),
        ("record", REF),
        ("intent", IMAGE),
        ("record", REF),  # coordinate learning is a read-modify-write too
    ]


class Layer:
    """A caching layer that serves stale reads, wrapping a locking store as ``_delegate``."""

    def __init__(self, delegate: LockingStore) -> None:
        self._delegate = delegate
        self.stale: dict[str, ImagePulledRecord] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._delegate, name)

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        if image_ref in self.stale:
            return self.stale[image_ref]
        return self._delegate.get_image_pulled_record(image_ref)


def test_read_modify_write_reads_the_locked_layer() -> None:
    inner = LockingStore()
    layer = Layer(inner)
    env = make(layer)  # type: ignore[arg-type]
    # Another process added S_B on disk; this process's cache still has the old record.
    inner.records[REF] = record({KEY: creds([S_A, S_B])})
    layer.stale[REF] = record({KEY: creds([S_A])})
    env.mgr.record_image_pulled(IMAGE, REF, creds([secret("c", "hash-c")]))
    assert {s.name for s in inner.records[REF].credential_mapping[KEY].secrets} == {"a", "b", "c"}


# -- prune --------------------------------------------------------------------------------------


def test_prune_unknown_records() -> None:
    env = make()
    until = T0 + dt.timedelta(hours=1)
    env.store.records = {
        "old-unknown": record(ref="old-unknown"),
        "old-known": record(ref="old-known"),
        "new-unknown": record(ref="new-unknown", at=until),
        "newer-unknown": record(ref="newer-unknown", at=until + dt.timedelta(seconds=1)),
    }
    env.store.intents["x"] = ImagePullIntent(image="x")
    env.mgr.prune_unknown_records(["old-known", "unrelated"], until)
    assert set(env.store.records) == {"old-known", "new-unknown", "newer-unknown"}
    assert "x" in env.store.intents  # intents untouched


def test_prune_carries_on_after_errors() -> None:
    env = make()
    env.store.records = {"a": record(ref="a"), "b": record(ref="b")}
    env.store.broken_records.add("c")
    env.mgr.prune_unknown_records([], T0 + dt.timedelta(days=1))
    assert env.store.records == {}
    env.store.records = {"a": record(ref="a")}
    env.store.fail_deletes = True
    env.mgr.prune_unknown_records([], T0 + dt.timedelta(days=1))  # logged, not raised
    assert "a" in env.store.records


def test_prune_rechecks_under_flock() -> None:
    inner = LockingStore()
    layer = Layer(inner)
    env = make(layer)  # type: ignore[arg-type]
    until = T0 + dt.timedelta(hours=1)
    inner.records[REF] = record(at=T0)
    # Listed as old, but another process refreshed it before we took the lock.
    original_list = inner.list_image_pulled_records

    def list_then_refresh() -> tuple[list[ImagePulledRecord], list[str]]:
        listed = original_list()
        inner.records[REF] = record(at=until + dt.timedelta(minutes=1))
        return listed

    inner.list_image_pulled_records = list_then_refresh  # type: ignore[method-assign]
    env.mgr.prune_unknown_records([], until)
    assert REF in inner.records


# -- initialization -----------------------------------------------------------------------------


def test_initialize_converts_intents_of_present_images() -> None:
    store = FakeStore()
    for image in ("nginx:1", "registry.io/app@sha256:" + "c" * 64, "missing:1", "nginx"):
        store.intents[image] = ImagePullIntent(image=image)
    store.records["ref-existing"] = record({"registry.io/known": creds([S_A])}, ref="ref-existing")
    store.intents["registry.io/known:v2"] = ImagePullIntent(image="registry.io/known:v2")
    runtime = FakeRuntime(
        [
            RuntimeImage(id="ref-nginx", repo_tags=["nginx:1", "docker.io/library/nginx:1"]),
            RuntimeImage(id="ref-app", repo_digests=["registry.io/app@sha256:" + "c" * 64]),
            RuntimeImage(id="ref-existing", repo_tags=["registry.io/known:v2"]),
            RuntimeImage(id="ref-other", repo_tags=["other:1"]),
        ]
    )
    env = make(store, runtime=runtime)
    assert set(store.intents) == {"missing:1", "nginx"}  # not found by exact string: kept
    assert store.records["ref-nginx"] == record(ref="ref-nginx")
    assert store.records["ref-app"] == record(ref="ref-app")
    assert store.records["ref-existing"] == record(
        {"registry.io/known": creds([S_A])}, ref="ref-existing"
    )  # no-op for an existing record
    assert "ref-other" not in store.records
    # Converted images must authenticate; kept intents still mark their image kubelet-pulled.
    assert env.mgr.must_attempt_image_pull("nginx:1", "ref-nginx", PodCreds()) is True
    assert env.mgr.must_attempt_image_pull("missing:1", "ref-x", PodCreds()) is True
    assert env.mgr.intent_count("missing:1") == 0  # counters are not restored


def test_initialize_without_intents_does_not_ask_runtime() -> None:
    runtime = FakeRuntime(error=AssertionError("must not be called"))
    make(runtime=runtime)


def test_initialize_runtime_error_keeps_intents() -> None:
    store = FakeStore()
    store.intents["nginx:1"] = ImagePullIntent(image="nginx:1")
    make(store, runtime=FakeRuntime(error=ConnectionError("runtime down")))
    assert "nginx:1" in store.intents and store.records == {}


def test_initialize_write_error_keeps_intent() -> None:
    store = FakeStore()
    store.intents["nginx:1"] = ImagePullIntent(image="nginx:1")
    store.fail_writes = True
    make(store, runtime=FakeRuntime([RuntimeImage(id="r", repo_tags=["nginx:1"])]))
    assert "nginx:1" in store.intents


def test_initialize_delete_error_is_ignored() -> None:
    store = FakeStore()
    store.intents["nginx:1"] = ImagePullIntent(image="nginx:1")
    store.fail_deletes = True
    make(store, runtime=FakeRuntime([RuntimeImage(id="r", repo_tags=["nginx:1"])]))
    assert store.records["r"] == record(ref="r")


# -- record_max_age (beyond upstream) -----------------------------------------------------------

AGE = dt.timedelta(hours=1)


def test_max_age_off_records_never_expire() -> None:
    env = make()
    env.store.records[REF] = record({KEY: creds(node=True)})
    env.clock.advance(days=3650)
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds()) is False


@pytest.mark.parametrize(
    ("entry", "pod"),
    [(creds(node=True), PodCreds()), (creds([S_A]), PodCreds([S_A])),
     (creds(sas=[SA_X]), PodCreds(sa=SA_X))],
    ids=["node", "secret", "sa"],
)  # fmt: skip
def test_max_age_expires_every_kind_of_entry(entry: ImagePullCredentials, pod: PodCreds) -> None:
    env = make(record_max_age=AGE)
    env.store.records[REF] = record({KEY: entry})
    env.clock.advance(hours=1)
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, pod) is False  # exactly max age: ok
    env.clock.advance(seconds=1)
    calls = pod.calls
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, pod) is True
    assert pod.calls == calls  # no plugin run for an expired record
    assert env.metrics.results[-1] == RESULT_MUST_AUTHENTICATE


def test_max_age_repull_rebuilds_expired_record() -> None:
    env = make(record_max_age=AGE)
    env.store.records[REF] = record({KEY: creds([S_A]), "other": creds(node=True)})
    env.clock.advance(hours=2)
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_A]))
    # Only what just pulled survives, with the current time: every entry was verified since.
    assert env.store.records[REF] == record({KEY: creds([S_A])}, at=env.clock.current)
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds([S_A])) is False


def test_max_age_merge_into_live_record_keeps_its_time() -> None:
    env = make(record_max_age=AGE)
    env.store.records[REF] = record({KEY: creds([S_A])})
    env.clock.advance(minutes=30)
    env.mgr.record_image_pulled(IMAGE, REF, creds([S_B]))
    assert env.store.records[REF].last_updated_time == T0
    env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds([secret("c", "hash-a")]))  # learns
    assert env.store.records[REF].last_updated_time == T0
    assert len(env.store.records[REF].credential_mapping[KEY].secrets) == 3
    env.clock.advance(minutes=31)
    assert env.mgr.must_attempt_image_pull(IMAGE, REF, PodCreds([S_B])) is True


def test_max_age_unknown_pull_does_not_refresh() -> None:
    env = make(record_max_age=AGE)
    env.store.records[REF] = record({KEY: creds([S_A])})
    env.clock.advance(hours=2)
    env.mgr.record_image_pulled(IMAGE, REF, None)
    assert env.store.records[REF].last_updated_time == T0


# -- policy resolution --------------------------------------------------------------------------


def test_policy_object_without_trim_uses_policies_module() -> None:
    class Bare:
        def require_credential_verification(self, image: str, pulled: bool) -> bool:
            return True

    store = FakeStore()
    mgr = ImagePullManager("/x", Bare(), accessor=store, metrics=FakeMetrics())
    mgr.record_image_pulled("nginx:1.25", REF, creds(node=True))
    assert set(store.records[REF].credential_mapping) == {"nginx"}  # 1.36 literal trim


def test_unknown_policy_name() -> None:
    with pytest.raises(ValueError, match="unknown image pull credential verification policy"):
        ImagePullManager("/x", "Sometimes", accessor=FakeStore())


# -- integration: real file store, LRU layer, policies and metrics ------------------------------


def _sample(mgr: ImagePullManager, name: str, **labels: str) -> float | None:
    metrics: Any = mgr._metrics
    value: float | None = metrics.registry.get_sample_value(name, labels)
    return value


def test_integration_default_constructor(tmp_path: Path) -> None:
    clock = FakeClock()
    mgr = ImagePullManager(tmp_path, "NeverVerifyPreloadedImages", clock=clock)
    mgr.record_pull_intent("registry.io/app:v1")
    pulling = tmp_path / "image_manager" / "pulling"
    assert len(list(pulling.iterdir())) == 1
    mgr.record_image_pulled("registry.io/app:v1", REF, creds([S_A]))
    assert list(pulling.iterdir()) == []
    files = list((tmp_path / "image_manager" / "pulled").iterdir())
    assert len(files) == 1
    assert json.loads(files[0].read_text()) == {
        "kind": "ImagePulledRecord",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "lastUpdatedTime": "2024-10-21T12:26:40Z",
        "imageRef": REF,
        "credentialMapping": {
            "registry.io/app": {
                "kubernetesSecrets": [
                    {
                        "uid": "uid-a",
                        "namespace": "default",
                        "name": "a",
                        "credentialHash": "hash-a",
                    }
                ]
            }
        },
    }
    assert mgr.must_attempt_image_pull("registry.io/app:v2", REF, PodCreds([S_A])) is False
    assert mgr.must_attempt_image_pull("registry.io/app", REF, PodCreds()) is True
    assert mgr.must_attempt_image_pull("preloaded:1", "sha256:pre", PodCreds()) is False
    name = "kubelet_imagemanager_image_mustpull_checks_total"
    assert _sample(mgr, name, result=RESULT_RECORD_FOUND) == 1
    assert _sample(mgr, name, result=RESULT_MUST_AUTHENTICATE) == 1
    assert _sample(mgr, name, result=RESULT_POLICY_ALLOWED) == 1
    assert _sample(mgr, "kubelet_imagemanager_ondisk_pulledrecords") == 1
    assert _sample(mgr, "kubelet_imagemanager_ondisk_pullintents") == 0
    # One record in the default 2000 slots: 0.05%, a whole percent of 0.
    assert _sample(mgr, "kubelet_imagemanager_inmemory_pulledrecords_usage_percent") == 0
    small = ImagePullManager(
        tmp_path, "NeverVerifyPreloadedImages", clock=clock, records_cache_size=100
    )
    assert _sample(small, "kubelet_imagemanager_inmemory_pulledrecords_usage_percent") == 1

    # A restart reads the same files.
    again = ImagePullManager(tmp_path, "NeverVerifyPreloadedImages", clock=clock)
    assert again.must_attempt_image_pull("registry.io/app:v1", REF, PodCreds([S_A])) is False
    assert _sample(again, "kubelet_imagemanager_ondisk_pulledrecords") == 1


def test_integration_restart_converts_intents(tmp_path: Path) -> None:
    mgr = ImagePullManager(tmp_path, "NeverVerifyPreloadedImages", clock=FakeClock())
    mgr.record_pull_intent("nginx:1")  # ... and the kubelet crashed mid-pull
    runtime = FakeRuntime([RuntimeImage(id="sha256:nginx", repo_tags=["nginx:1"])])
    again = ImagePullManager(tmp_path, "NeverVerifyPreloadedImages", runtime=runtime)
    assert list((tmp_path / "image_manager" / "pulling").iterdir()) == []
    assert again.must_attempt_image_pull("nginx:1", "sha256:nginx", PodCreds()) is True


def test_integration_corrupt_record_fails_safe_then_heals(tmp_path: Path) -> None:
    mgr = ImagePullManager(tmp_path, "NeverVerify", clock=FakeClock())
    mgr.record_image_pulled("app:1", REF, creds(node=True))
    (path,) = (tmp_path / "image_manager" / "pulled").iterdir()
    path.write_text('{"kind":"ImagePulledRecord","bogus":1}\n')
    # Through a fresh manager: its in-memory layer has not seen the good record.
    fresh = ImagePullManager(tmp_path, "NeverVerifyPreloadedImages", clock=FakeClock())
    assert fresh.must_attempt_image_pull("app:1", REF, PodCreds()) is True
    assert _sample(fresh, "kubelet_imagemanager_image_mustpull_checks_total", result="error") == 1
    fresh.record_image_pulled("app:1", REF, creds(node=True))
    assert fresh.must_attempt_image_pull("app:1", REF, PodCreds()) is False


def test_integration_allowlist_policy(tmp_path: Path) -> None:
    mgr = ImagePullManager(tmp_path, "NeverVerifyAllowlistedImages", ["registry.io/base/*"])
    mgr.record_image_pulled("registry.io/base/os:1", REF, creds([S_A]))
    assert mgr.must_attempt_image_pull("registry.io/base/os:1", REF, PodCreds()) is False
    mgr.record_image_pulled("registry.io/app:1", "sha256:app", creds([S_A]))
    assert mgr.must_attempt_image_pull("registry.io/app:1", "sha256:app", PodCreds()) is True


_WORKER = """
import sys, time
from pathlib import Path
from credprov.pullmanager.manager import ImagePullManager
from credprov.pullmanager.types import ImagePullCredentials, ImagePullSecret

root, who, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
mgr = ImagePullManager(root, "NeverVerifyPreloadedImages", shared_root=True)
while not go.exists():
    time.sleep(0.005)
for i in range(n):
    s = ImagePullSecret.model_validate(
        {"uid": f"{who}-{i}", "namespace": who, "name": f"s{i}", "credentialHash": f"h{who}{i}"}
    )
    mgr.record_pull_intent("registry.io/app:v1")
    mgr.record_image_pulled(
        "registry.io/app:v1", "sha256:shared", ImagePullCredentials(kubernetesSecrets=[s])
    )
"""


def test_two_processes_share_a_root_without_lost_updates(tmp_path: Path) -> None:
    root = tmp_path / "kubelet"
    go = tmp_path / "go"
    n = 25
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(root), who, str(n), str(go)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for who in ("p1", "p2")
    ]
    time.sleep(0.5)  # both constructed and waiting
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    mgr = ImagePullManager(root, "NeverVerifyPreloadedImages")
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor

    rec_ = FSPullRecordsAccessor(str(root)).get_image_pulled_record("sha256:shared")
    assert rec_ is not None
    assert len(rec_.credential_mapping["registry.io/app"].secrets) == 2 * n
    for who in ("p1", "p2"):
        s = secret(f"s{n - 1}", f"h{who}{n - 1}", ns=who, uid=f"{who}-{n - 1}")
        assert (
            mgr.must_attempt_image_pull("registry.io/app:v1", "sha256:shared", PodCreds([s]))
            is False
        )
