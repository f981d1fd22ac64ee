"""The write-through in-memory layer: upstream's ``mem_pullrecords_test.go`` behaviours.

A fake delegate counts every call, so each test can say whether the cache went to "disk".
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter
from dataclasses import dataclass

import pytest

from credprov.pullmanager.interfaces import PullRecordsAccessor, StoreReadError, StoreWriteError
from credprov.pullmanager.memstore import CachedPullRecordsAccessor
from credprov.pullmanager.types import ImagePullCredentials, ImagePulledRecord, ImagePullIntent

T0 = dt.datetime(2024, 10, 21, 12, 26, 40, tzinfo=dt.UTC)


def record(image_ref: str, key: str = "test.io/img") -> ImagePulledRecord:
    return ImagePulledRecord(
        lastUpdatedTime=T0,
        imageRef=image_ref,
        credentialMapping={key: ImagePullCredentials(nodePodsAccessible=True)},
    )


class FakeStore:
    """An in-memory ``PullRecordsAccessor`` that counts calls and fails on demand."""

    def __init__(self, intents: int = 0, records: int = 0) -> None:
        self.intents: dict[str, ImagePullIntent] = {
            f"img{i}": ImagePullIntent(image=f"img{i}") for i in range(intents)
        }
        self.records: dict[str, ImagePulledRecord] = {
            f"ref{i}": record(f"ref{i}") for i in range(records)
        }
        self.calls: Counter[str] = Counter()
        self.list_errors: list[str] = []
        self.fail_writes = False
        self.fail_reads = False

    def _call(self, name: str, write: bool = False) -> None:
        self.calls[name] += 1
        if write and self.fail_writes:
            raise StoreWriteError(f"{name}: no space left on device")
        if not write and self.fail_reads and not name.startswith("list"):
            raise StoreReadError(f"{name}: strict decoding error")

    def write_image_pull_intent(self, image: str) -> None:
        self._call("write_image_pull_intent", write=True)
        self.intents[image] = ImagePullIntent(image=image)

    def image_pull_intent_exists(self, image: str) -> bool:
        self._call("image_pull_intent_exists")
        return image in self.intents

    def delete_image_pull_intent(self, image: str) -> None:
        self._call("delete_image_pull_intent", write=True)
        self.intents.pop(image, None)

    def list_image_pull_intents(self) -> tuple[list[ImagePullIntent], list[str]]:
        self._call("list_image_pull_intents")
        return list(self.intents.values()), list(self.list_errors)

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        self._call("get_image_pulled_record")
        return self.records.get(image_ref)

    def write_image_pulled_record(self, rec: ImagePulledRecord) -> None:
        self._call("write_image_pulled_record", write=True)
        self.records[rec.image_ref] = rec

    def delete_image_pulled_record(self, image_ref: str) -> None:
        self._call("delete_image_pulled_record", write=True)
        self.records.pop(image_ref, None)

    def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
        self._call("list_image_pulled_records")
        return list(self.records.values()), list(self.list_errors)


# -- warm-up and authority --------------------------------------------------------------------


def test_warm_up_lists_both_kinds_and_becomes_authoritative() -> None:
    store = FakeStore(intents=3, records=5)
    cache: PullRecordsAccessor = CachedPullRecordsAccessor(store)  # also checks the protocol
    assert isinstance(cache, CachedPullRecordsAccessor)
    assert store.calls == {"list_image_pull_intents": 1, "list_image_pulled_records": 1}
    assert cache.intents_authoritative and cache.records_authoritative
    assert cache.intents_usage_percent() == 3 * 100 // 50
    assert cache.records_usage_percent() == 5


def test_authoritative_miss_does_not_touch_the_delegate() -> None:
    store = FakeStore(intents=1, records=1)
    cache = CachedPullRecordsAccessor(store)
    store.calls.clear()
    assert cache.image_pull_intent_exists("img0") is True
    assert cache.image_pull_intent_exists("nope") is False
    assert cache.get_image_pulled_record("ref0") == record("ref0")
    assert cache.get_image_pulled_record("nope") is None
    assert store.calls == {}


def test_authoritative_miss_hides_writes_made_behind_its_back() -> None:
    # The documented hazard of sharing a root with another process.
    store = FakeStore()
    cache = CachedPullRecordsAccessor(store)
    store.intents["elsewhere"] = ImagePullIntent(image="elsewhere")
    store.records["elsewhere"] = record("elsewhere")
    assert cache.image_pull_intent_exists("elsewhere") is False
    assert cache.get_image_pulled_record("elsewhere") is None


def test_authoritative_false_always_asks_the_delegate_on_a_miss() -> None:
    store = FakeStore(intents=1, records=1)
    cache = CachedPullRecordsAccessor(store, authoritative=False)
    assert not cache.intents_authoritative and not cache.records_authoritative
    # The warm-up still filled the cache, so hits stay in memory.
    store.calls.clear()
    assert cache.image_pull_intent_exists("img0") is True
    assert cache.get_image_pulled_record("ref0") is not None
    assert store.calls == {}
    # A write made by another process is seen, then cached.
    store.intents["elsewhere"] = ImagePullIntent(image="elsewhere")
    store.records["elsewhere"] = record("elsewhere")
    assert cache.image_pull_intent_exists("elsewhere") is True
    assert cache.get_image_pulled_record("elsewhere") == record("elsewhere")
    assert cache.image_pull_intent_exists("elsewhere") is True
    assert cache.get_image_pulled_record("nope") is None
    assert store.calls == {"image_pull_intent_exists": 1, "get_image_pulled_record": 2}
    # A clean list never makes it authoritative either.
    cache.list_image_pull_intents()
    assert not cache.intents_authoritative


def test_51_intents_with_size_50_is_not_authoritative_and_caches_the_first_50() -> None:
    store = FakeStore(intents=51)
    cache = CachedPullRecordsAccessor(store, intents_cache_size=50)
    assert not cache.intents_authoritative
    assert cache.intents_usage_percent() == 100
    store.calls.clear()
    for i in range(50):
        assert cache.image_pull_intent_exists(f"img{i}")
    assert store.calls == {}
    # The 51st is not in memory, and a miss is not proof of absence: ask the store.
    assert cache.image_pull_intent_exists("img50") is True
    assert cache.image_pull_intent_exists("missing") is False
    assert store.calls == {"image_pull_intent_exists": 2}


def test_exactly_capacity_is_not_authoritative() -> None:
    # Strictly fewer than capacity: a full cache cannot tell "all" from "the first N".
    cache = CachedPullRecordsAccessor(FakeStore(records=10), pulled_records_cache_size=10)
    assert not cache.records_authoritative
    assert cache.records_usage_percent() == 100


def test_partial_list_with_errors_is_never_authoritative() -> None:
    store = FakeStore(intents=2, records=2)
    store.list_errors = ["sha256-abc: strict decoding error"]
    cache = CachedPullRecordsAccessor(store)
    assert not cache.intents_authoritative and not cache.records_authoritative
    # ...but the empty cache was still filled with what could be read.
    store.calls.clear()
    assert cache.image_pull_intent_exists("img1") is True
    assert store.calls == {}
    assert cache.image_pull_intent_exists("other") is False
    assert store.calls == {"image_pull_intent_exists": 1}
    # A later clean list makes it authoritative.
    store.list_errors = []
    intents, errors = cache.list_image_pull_intents()
    assert (len(intents), errors) == (2, [])
    assert cache.intents_authoritative


def test_failing_list_leaves_a_non_empty_cache_alone() -> None:
    store = FakeStore(intents=3)
    cache = CachedPullRecordsAccessor(store, intents_cache_size=3)  # full: not authoritative
    assert not cache.intents_authoritative
    store.intents = {"only": ImagePullIntent(image="only")}
    store.list_errors = ["broken file"]
    cache.list_image_pull_intents()
    store.calls.clear()
    assert cache.image_pull_intent_exists("img0") is True  # still cached
    assert store.calls == {}


def test_warm_up_survives_a_raising_delegate() -> None:
    class Broken(FakeStore):
        def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
            raise OSError("permission denied")

    store = Broken(intents=1)
    cache = CachedPullRecordsAccessor(store)
    assert cache.intents_authoritative
    assert not cache.records_authoritative
    store.records["ref"] = record("ref")
    assert cache.get_image_pulled_record("ref") == record("ref")


class HeadStore(FakeStore):
    """A delegate that also offers the file store's ``list_*_head`` (the warm-up's path)."""

    def list_image_pull_intents_head(
        self, limit: int
    ) -> tuple[list[ImagePullIntent], int, list[str]]:
        self._call("list_image_pull_intents_head")
        return list(self.intents.values())[:limit], len(self.intents), list(self.list_errors)

    def list_image_pulled_records_head(
        self, limit: int
    ) -> tuple[list[ImagePulledRecord], int, list[str]]:
        self._call("list_image_pulled_records_head")
        return list(self.records.values())[:limit], len(self.records), list(self.list_errors)


def _warm_state(cache: CachedPullRecordsAccessor) -> tuple[object, ...]:
    return (
        cache.intents_authoritative,
        cache.records_authoritative,
        list(cache._intents.data.items()),
        list(cache._records.data.items()),
    )


@pytest.mark.parametrize("errors", [[], ["sha256-abc: strict decoding error"]])
@pytest.mark.parametrize(("items", "size"), [(0, 5), (4, 5), (5, 5), (6, 5), (12, 5)])
def test_warm_up_through_list_head_fills_the_cache_as_a_list_does(
    items: int, size: int, errors: list[str]
) -> None:
    caches = []
    for kind in (FakeStore, HeadStore):
        store = kind(intents=items, records=items)
        store.list_errors = errors
        caches.append(
            CachedPullRecordsAccessor(
                store, intents_cache_size=size, pulled_records_cache_size=size
            )
        )
        lists = {"list_image_pull_intents", "list_image_pulled_records"}
        assert (set(store.calls) & lists == set()) is (kind is HeadStore)
    assert _warm_state(caches[0]) == _warm_state(caches[1])


def test_authoritative_cache_stays_authoritative_on_a_failing_list() -> None:
    store = FakeStore(records=2)
    cache = CachedPullRecordsAccessor(store)
    store.list_errors = ["broken"]
    records, errors = cache.list_image_pulled_records()
    assert (len(records), errors) == (2, ["broken"])
    assert cache.records_authoritative


def test_list_returns_the_delegates_answer() -> None:
    store = FakeStore(intents=2, records=3)
    store.list_errors = ["x"]
    cache = CachedPullRecordsAccessor(store)
    intents, errors = cache.list_image_pull_intents()
    assert sorted(i.image for i in intents) == ["img0", "img1"]
    assert errors == ["x"]
    records, _ = cache.list_image_pulled_records()
    assert sorted(r.image_ref for r in records) == ["ref0", "ref1", "ref2"]


# -- eviction vs delete -----------------------------------------------------------------------


def test_capacity_eviction_clears_authoritative() -> None:
    store = FakeStore()
    cache = CachedPullRecordsAccessor(store, intents_cache_size=2, pulled_records_cache_size=2)
    assert cache.intents_authoritative and cache.records_authoritative
    for name in ("a", "b"):
        cache.write_image_pull_intent(name)
        cache.write_image_pulled_record(record(name))
    assert cache.intents_authoritative and cache.records_authoritative
    cache.write_image_pull_intent("c")
    cache.write_image_pulled_record(record("c"))
    assert not cache.intents_authoritative and not cache.records_authoritative
    # "a" was the least recently used, so it went; the store still has it.
    store.calls.clear()
    assert cache.image_pull_intent_exists("a") is True
    assert cache.get_image_pulled_record("a") == record("a")
    assert store.calls == {"image_pull_intent_exists": 1, "get_image_pulled_record": 1}


def test_eviction_is_least_recently_used() -> None:
    store = FakeStore()
    cache = CachedPullRecordsAccessor(store, intents_cache_size=2)
    cache.write_image_pull_intent("a")
    cache.write_image_pull_intent("b")
    assert cache.image_pull_intent_exists("a")  # "a" is now the most recent
    cache.write_image_pull_intent("c")  # evicts "b"
    store.calls.clear()
    assert cache.image_pull_intent_exists("a") and cache.image_pull_intent_exists("c")
    assert store.calls == {}
    assert cache.image_pull_intent_exists("b")
    assert store.calls == {"image_pull_intent_exists": 1}


def test_explicit_delete_keeps_authoritative() -> None:
    store = FakeStore(intents=2, records=2)
    cache = CachedPullRecordsAccessor(store)
    cache.delete_image_pull_intent("img0")
    cache.delete_image_pulled_record("ref0")
    assert cache.intents_authoritative and cache.records_authoritative
    store.calls.clear()
    assert cache.image_pull_intent_exists("img0") is False
    assert cache.get_image_pulled_record("ref0") is None
    assert store.calls == {}
    assert "img0" not in store.intents and "ref0" not in store.records


def test_delete_of_a_missing_key_is_fine() -> None:
    store = FakeStore()
    cache = CachedPullRecordsAccessor(store)
    cache.delete_image_pull_intent("never")
    cache.delete_image_pulled_record("never")
    assert store.calls["delete_image_pull_intent"] == 1
    assert cache.intents_authoritative


# -- read admission (the doorkeeper) ---------------------------------------------------------

# A step: (operation, key, whether the delegate is read). "get" reads a record, "exists" an
# intent, "write" writes both (always through to the delegate, so it "reads" nothing),
# "behind" puts both into the store behind the cache's back (another process).
Step = tuple[str, str, bool]


@dataclass
class AdmissionCase:
    name: str
    steps: list[Step]
    size: int = 2
    stored: int = 3  # records ref0.. and intents img0.. in the store at warm-up
    authoritative: bool = True  # the constructor's argument
    want_authoritative: bool = False


ADMISSION_CASES = [
    AdmissionCase(
        "room in the cache: the first miss fills it",
        size=4,
        stored=0,
        steps=[("write", "a", False), ("get", "b", False), ("exists", "b", False)],
        want_authoritative=True,
    ),
    AdmissionCase(
        "never authoritative (shared root), with room: the first miss fills",
        size=4,
        stored=1,
        authoritative=False,
        steps=[
            ("behind", "x", False),
            ("get", "x", True),
            ("get", "x", False),
            ("exists", "x", True),
            ("exists", "x", False),
        ],
    ),
    AdmissionCase(
        "full: the first miss reads through, the second fills, the third is a hit",
        steps=[
            ("get", "ref2", True),
            ("get", "ref2", True),
            ("get", "ref2", False),
            ("exists", "img2", True),
            ("exists", "img2", True),
            ("exists", "img2", False),
        ],
    ),
    AdmissionCase(
        "full: a refused fill evicts nothing",
        steps=[("get", "ref2", True), ("get", "ref0", False), ("get", "ref1", False)],
    ),
    AdmissionCase(
        "full: a fill evicts the least recently used",
        steps=[
            ("get", "ref0", False),  # ref1 is now the oldest
            ("get", "ref2", True),
            ("get", "ref2", True),  # admitted: ref1 goes
            ("get", "ref0", False),
            ("get", "ref1", True),
        ],
    ),
    AdmissionCase(
        "the doorkeeper forgets once it holds as many keys as the cache",
        stored=5,
        steps=[
            ("get", "ref2", True),
            ("get", "ref3", True),  # it now holds 2 = the cache size
            ("get", "ref4", True),  # forgets ref2 and ref3
            ("get", "ref2", True),  # a first miss again: not admitted
            ("get", "ref4", True),  # still remembered: admitted
            ("get", "ref4", False),
        ],
    ),
    AdmissionCase(
        "a miss of a key the delegate lacks caches nothing",
        steps=[("get", "none", True), ("get", "none", True), ("get", "none", True)],
    ),
    AdmissionCase(
        "writes always fill, even a full cache",
        steps=[("write", "new", False), ("get", "new", False), ("exists", "new", False)],
    ),
    AdmissionCase(
        "a full authoritative cache answers a miss as absent, without the delegate",
        stored=0,
        steps=[
            ("write", "a", False),
            ("write", "b", False),  # full, still authoritative (nothing evicted)
            ("get", "c", False),
            ("exists", "c", False),
        ],
        want_authoritative=True,
    ),
]


@pytest.mark.parametrize("case", ADMISSION_CASES, ids=lambda c: c.name)
def test_read_admission(case: AdmissionCase) -> None:
    store = FakeStore(intents=case.stored, records=case.stored)
    cache = CachedPullRecordsAccessor(
        store,
        intents_cache_size=case.size,
        pulled_records_cache_size=case.size,
        authoritative=case.authoritative,
    )
    for i, (op, key, want_delegate) in enumerate(case.steps):
        store.calls.clear()
        if op == "behind":
            store.intents[key] = ImagePullIntent(image=key)
            store.records[key] = record(key)
            continue
        if op == "write":
            cache.write_image_pull_intent(key)
            cache.write_image_pulled_record(record(key))
            assert store.calls == {"write_image_pull_intent": 1, "write_image_pulled_record": 1}
            continue
        if op == "get":
            got = cache.get_image_pulled_record(key)
            assert got == store.records.get(key), f"step {i}"
            read = "get_image_pulled_record"
        else:
            assert cache.image_pull_intent_exists(key) is (key in store.intents), f"step {i}"
            read = "image_pull_intent_exists"
        assert store.calls == ({read: 1} if want_delegate else {}), f"step {i}: {op} {key}"
    assert cache.records_authoritative is case.want_authoritative
    assert cache.intents_authoritative is case.want_authoritative


def test_refused_fills_do_not_report_usage() -> None:
    seen: list[tuple[int, int]] = []
    store = FakeStore(intents=3, records=3)
    cache = CachedPullRecordsAccessor(store, 2, 2, on_change=lambda i, r: seen.append((i, r)))
    assert seen[-1] == (100, 100)
    reported = len(seen)
    assert cache.get_image_pulled_record("ref2") is not None
    assert cache.image_pull_intent_exists("img2") is True
    assert len(seen) == reported


# -- write-through ----------------------------------------------------------------------------


def test_writes_go_through_and_are_then_served_from_memory() -> None:
    store = FakeStore()
    cache = CachedPullRecordsAccessor(store)
    cache.write_image_pull_intent("img")
    cache.write_image_pulled_record(record("ref"))
    assert "img" in store.intents and store.records["ref"] == record("ref")
    store.calls.clear()
    assert cache.image_pull_intent_exists("img")
    assert cache.get_image_pulled_record("ref") == record("ref")
    assert store.calls == {}


def test_failed_write_leaves_the_cache_untouched() -> None:
    store = FakeStore(intents=1, records=1)
    cache = CachedPullRecordsAccessor(store)
    store.fail_writes = True
    with pytest.raises(StoreWriteError):
        cache.write_image_pull_intent("new")
    with pytest.raises(StoreWriteError):
        cache.write_image_pulled_record(record("ref0", key="other.io/img"))
    with pytest.raises(StoreWriteError):
        cache.delete_image_pull_intent("img0")
    with pytest.raises(StoreWriteError):
        cache.delete_image_pulled_record("ref0")
    store.calls.clear()
    assert cache.image_pull_intent_exists("new") is False
    assert cache.image_pull_intent_exists("img0") is True
    assert cache.get_image_pulled_record("ref0") == record("ref0")
    assert store.calls == {}
    assert cache.intents_usage_percent() == 2


def test_cached_record_is_a_copy_of_what_was_written() -> None:
    cache = CachedPullRecordsAccessor(FakeStore())
    rec = record("ref")
    cache.write_image_pulled_record(rec)
    rec.credential_mapping.clear()
    cached = cache.get_image_pulled_record("ref")
    assert cached is not None and "test.io/img" in cached.credential_mapping


def test_read_errors_propagate_and_are_not_cached() -> None:
    store = FakeStore(intents=2, records=2)
    # Both caches are full, so neither is authoritative and misses reach the store.
    cache = CachedPullRecordsAccessor(store, intents_cache_size=2, pulled_records_cache_size=1)
    store.records["b"] = record("b")
    store.fail_reads = True
    with pytest.raises(StoreReadError):
        cache.image_pull_intent_exists("other")
    with pytest.raises(StoreReadError):
        cache.get_image_pulled_record("b")
    store.fail_reads = False
    assert cache.get_image_pulled_record("b") == record("b")


# -- sizes, usage, callback -------------------------------------------------------------------


def test_sizes_are_clamped_and_validated() -> None:
    store = FakeStore(intents=1, records=1)
    cache = CachedPullRecordsAccessor(
        store, intents_cache_size=10_000, pulled_records_cache_size=10_000
    )
    # 1 item of 1024 and of 2000.
    assert cache.intents_usage_percent() == 0 and cache.records_usage_percent() == 0
    store = FakeStore(intents=1024, records=2000)
    cache = CachedPullRecordsAccessor(
        store, intents_cache_size=5000, pulled_records_cache_size=5000
    )
    assert cache.intents_usage_percent() == 100 and cache.records_usage_percent() == 100
    with pytest.raises(ValueError):
        CachedPullRecordsAccessor(FakeStore(), intents_cache_size=0)


def test_usage_percent_is_integer_division() -> None:
    cache = CachedPullRecordsAccessor(FakeStore(intents=2, records=1), 3, 3)
    assert cache.intents_usage_percent() == 66
    assert cache.records_usage_percent() == 33


def test_on_change_reports_usage() -> None:
    seen: list[tuple[int, int]] = []
    store = FakeStore(intents=1)
    cache = CachedPullRecordsAccessor(store, 10, 10, on_change=lambda i, r: seen.append((i, r)))
    assert seen[-1] == (10, 0)
    cache.write_image_pulled_record(record("ref"))
    assert seen[-1] == (10, 10)
    cache.delete_image_pull_intent("img0")
    assert seen[-1] == (0, 10)


def test_on_change_errors_do_not_fail_operations() -> None:
    def boom(intents: int, records: int) -> None:
        raise RuntimeError("metrics down")

    cache = CachedPullRecordsAccessor(FakeStore(), on_change=boom)
    cache.write_image_pull_intent("img")
    assert cache.image_pull_intent_exists("img")


# -- concurrency ------------------------------------------------------------------------------


def test_concurrent_writes_and_reads_stay_consistent() -> None:
    store = FakeStore()
    cache = CachedPullRecordsAccessor(store, intents_cache_size=20, pulled_records_cache_size=20)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(200):
                key = f"w{n}-{i % 30}"
                cache.write_image_pull_intent(key)
                assert cache.image_pull_intent_exists(key)
                cache.write_image_pulled_record(record(key))
                got = cache.get_image_pulled_record(key)
                assert got is not None and got.image_ref == key
                if i % 3 == 0:
                    cache.delete_image_pull_intent(key)
                    assert not cache.image_pull_intent_exists(key)
                if i % 50 == 0:
                    cache.list_image_pulled_records()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.intents_usage_percent() <= 100 and cache.records_usage_percent() <= 100
    for key in store.intents:
        assert cache.image_pull_intent_exists(key)
