"""The on-disk pull records: kubelet-exact files, fail-safe reads, atomic writes, locks."""

from __future__ import annotations

import datetime as dt
import errno
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from credprov.pullmanager.fsstore import LOCK_STRIPES, MAX_FILE_SIZE, FSPullRecordsAccessor
from credprov.pullmanager.interfaces import PullRecordsAccessor, StoreReadError, StoreWriteError
from credprov.pullmanager.locks import fnv32
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    ImagePullSecret,
    ImagePullServiceAccount,
    cache_filename,
    encode_record,
)
from tests.conftest import CANARY

REPO = Path(__file__).resolve().parents[3]
T = dt.datetime(2024, 10, 21, 12, 26, 40, tzinfo=dt.UTC)
V1B1 = "kubelet.config.k8s.io/v1beta1"
V1A1 = "kubelet.config.k8s.io/v1alpha1"
TESTIMAGEREF_FILE = "sha256-b3c0cc4278800b03a308ceb2611161430df571ca733122f0a40ac8b9792a9064"
REPO_IMAGE_FILE = "sha256-7d8c031e2f1aeaa71649ca3e0b64c9902370ed460ef57fb07582a87a5a1e1c02"


def _store(root: Path, **kwargs: Any) -> FSPullRecordsAccessor:
    return FSPullRecordsAccessor(str(root), **kwargs)


def _pulled(root: Path) -> Path:
    return root / "image_manager" / "pulled"


def _pulling(root: Path) -> Path:
    return root / "image_manager" / "pulling"


def _record(image_ref: str, **mapping: ImagePullCredentials) -> ImagePulledRecord:
    return ImagePulledRecord(lastUpdatedTime=T, imageRef=image_ref, credentialMapping=mapping)


def _creds(**kwargs: Any) -> ImagePullCredentials:
    return ImagePullCredentials.model_validate(kwargs)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _leftovers(root: Path) -> list[str]:
    return sorted(
        p.name
        for d in (_pulled(root), _pulling(root))
        if d.exists()
        for p in d.iterdir()
        if p.name.endswith(".tmp")
    )


# -- layout and bytes -------------------------------------------------------------------------


def test_satisfies_the_protocol(tmp_path: Path) -> None:
    accessor: PullRecordsAccessor = _store(tmp_path)
    assert accessor.list_image_pulled_records() == ([], [])


@pytest.mark.parametrize(
    ("image", "filename"),
    [
        ("docker.io/testing/test:latest", cache_filename("docker.io/testing/test:latest")),
        ("repo.repo/test/test:latest", REPO_IMAGE_FILE),
    ],
)
def test_intent_file_is_kubelet_exact(tmp_path: Path, image: str, filename: str) -> None:
    store = _store(tmp_path)
    store.write_image_pull_intent(image)
    path = _pulling(tmp_path) / filename
    assert path.read_bytes() == (
        b'{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"'
        + image.encode()
        + b'"}\n'
    )
    assert _mode(path) == 0o600
    assert _mode(_pulling(tmp_path)) == 0o700
    assert _mode(tmp_path / "image_manager") == 0o700
    assert store.image_pull_intent_exists(image)
    assert not store.image_pull_intent_exists(image + "x")
    assert [i.image for i in store.list_image_pull_intents()[0]] == [image]
    assert os.listdir(_pulling(tmp_path)) == [filename]  # no temp file left


_RECORD_CASES = [
    (
        _record(
            "testimage-anonpull", **{"docker.io/testing/test": _creds(nodePodsAccessible=True)}
        ),
        b'"imageRef":"testimage-anonpull","credentialMapping":{"docker.io/testing/test":'
        b'{"nodePodsAccessible":true}}}\n',
    ),
    (
        _record(
            "testimageref",
            **{
                "docker.io/testing/test": _creds(
                    kubernetesSecrets=[
                        ImagePullSecret(
                            uid="testsecretuid",
                            namespace="default",
                            name="pull-secret",
                            credential_hash="testsecrethash",
                        )
                    ]
                )
            },
        ),
        b'"imageRef":"testimageref","credentialMapping":{"docker.io/testing/test":'
        b'{"kubernetesSecrets":[{"uid":"testsecretuid","namespace":"default",'
        b'"name":"pull-secret","credentialHash":"testsecrethash"}]}}}\n',
    ),
    (
        _record(
            "testimage-sa",
            **{
                "docker.io/testing/test": _creds(
                    kubernetesServiceAccounts=[
                        ImagePullServiceAccount(
                            uid="test-sa-uid", namespace="default", name="test-sa"
                        )
                    ]
                )
            },
        ),
        b'"imageRef":"testimage-sa","credentialMapping":{"docker.io/testing/test":'
        b'{"kubernetesServiceAccounts":[{"uid":"test-sa-uid","namespace":"default",'
        b'"name":"test-sa"}]}}}\n',
    ),
    (_record("testemptycredmapping"), b'"imageRef":"testemptycredmapping"}\n'),
]


@pytest.mark.parametrize(
    ("record", "tail"), _RECORD_CASES, ids=lambda v: getattr(v, "image_ref", "")
)
def test_record_file_is_kubelet_exact(
    tmp_path: Path, record: ImagePulledRecord, tail: bytes
) -> None:
    store = _store(tmp_path)
    store.write_image_pulled_record(record)
    path = _pulled(tmp_path) / cache_filename(record.image_ref)
    head = (
        b'{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1",'
        b'"lastUpdatedTime":"2024-10-21T12:26:40Z",'
    )
    assert path.read_bytes() == head + tail
    assert _mode(path) == 0o600
    assert _mode(_pulled(tmp_path)) == 0o700
    assert store.get_image_pulled_record(record.image_ref) == record
    assert store.list_image_pulled_records() == ([record], [])


def test_testimageref_file_name(tmp_path: Path) -> None:
    _store(tmp_path).write_image_pulled_record(_record("testimageref"))
    assert os.listdir(_pulled(tmp_path)) == [TESTIMAGEREF_FILE]


def test_overwrite_delete_and_on_change(tmp_path: Path) -> None:
    calls: list[int] = []
    store = _store(tmp_path, on_change=lambda: calls.append(1))
    store.write_image_pulled_record(_record("ref"))
    newer = _record("ref", a=_creds(nodePodsAccessible=True))
    store.write_image_pulled_record(newer)
    assert store.get_image_pulled_record("ref") == newer
    store.write_image_pull_intent("img")
    assert len(calls) == 3
    assert (store.count_records(), store.count_intents()) == (1, 1)
    store.delete_image_pulled_record("ref")
    store.delete_image_pull_intent("img")
    assert len(calls) == 5
    assert store.get_image_pulled_record("ref") is None
    assert not store.image_pull_intent_exists("img")
    # Deleting what is not there is fine and changes nothing.
    store.delete_image_pulled_record("ref")
    store.delete_image_pull_intent("img")
    assert len(calls) == 5
    assert (store.count_records(), store.count_intents()) == (0, 0)


def test_missing_root_reads_empty_and_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "kubelet"
    store = _store(root, migrate=False)
    assert store.get_image_pulled_record("x") is None
    assert not store.image_pull_intent_exists("x")
    assert store.list_image_pull_intents() == ([], [])
    assert store.list_image_pulled_records() == ([], [])
    assert (store.count_intents(), store.count_records()) == (0, 0)
    store.delete_image_pull_intent("x")
    assert not root.exists()
    store.write_image_pull_intent("x")  # directories are made by the write
    assert store.image_pull_intent_exists("x")


def test_collision_guard(tmp_path: Path) -> None:
    """A file whose content is for another key (same name) is not that key's entry."""
    store = _store(tmp_path)
    store.write_image_pulled_record(_record("ref-a"))
    store.write_image_pull_intent("img-a")
    os.rename(
        _pulled(tmp_path) / cache_filename("ref-a"), _pulled(tmp_path) / cache_filename("ref-b")
    )
    os.rename(
        _pulling(tmp_path) / cache_filename("img-a"), _pulling(tmp_path) / cache_filename("img-b")
    )
    assert store.get_image_pulled_record("ref-b") is None
    assert store.get_image_pulled_record("ref-a") is None
    assert not store.image_pull_intent_exists("img-b")


# -- fail-safe reads --------------------------------------------------------------------------

_GOOD_RECORD = (
    '{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1",'
    '"lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"%s"}\n'
)
_GOOD_INTENT = (
    '{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"%s"}\n'
)

# (id, intent file content, record file content); CANARY stands for content that must never
# reach an error message.
_BAD_CONTENT = [
    (
        "unknown field",
        _GOOD_INTENT.replace('"}', f'","bogus":"{CANARY}"}}'),
        _GOOD_RECORD.replace('"}', f'","bogus":"{CANARY}"}}'),
    ),
    (
        "duplicate field",
        _GOOD_INTENT.replace('"}', f'","image":"{CANARY}"}}'),
        _GOOD_RECORD.replace('"}', f'","imageRef":"{CANARY}"}}'),
    ),
    (
        "nested duplicate",
        _GOOD_INTENT.replace('{"kind"', '{"kind":"ImagePullIntent","kind"'),
        _GOOD_RECORD.replace(
            '"}',
            '","credentialMapping":{"a":{"nodePodsAccessible":true,"nodePodsAccessible":false}}}',
        ),
    ),
    ("wrong kind", _GOOD_RECORD, _GOOD_INTENT),
    (
        "odd kind",
        _GOOD_INTENT.replace('"ImagePullIntent"', f'"Image {CANARY}"'),
        _GOOD_RECORD.replace('"ImagePulledRecord"', f'"{CANARY} "'),
    ),
    (
        "wrong group",
        _GOOD_INTENT.replace("kubelet.config", "imagemanager.kubelet.config"),
        _GOOD_RECORD.replace("kubelet.config", "imagemanager.kubelet.config"),
    ),
    ("wrong version", _GOOD_INTENT.replace("v1beta1", "v1"), _GOOD_RECORD.replace("v1beta1", "v1")),
    (
        "no kind",
        _GOOD_INTENT.replace('"kind":"ImagePullIntent",', ""),
        _GOOD_RECORD.replace('"kind":"ImagePulledRecord",', ""),
    ),
    (
        "wrong type",
        _GOOD_INTENT.replace('"%s"', "42"),
        _GOOD_RECORD.replace('"imageRef":"%s"', '"imageRef":["%s"]'),
    ),
    (
        "bad time",
        _GOOD_INTENT.replace('"image"', '"imag"'),
        _GOOD_RECORD.replace("2024-10-21T12:26:40Z", f"{CANARY}"),
    ),
    ("truncated", _GOOD_INTENT[:60], _GOOD_RECORD[:90]),
    ("empty", "", ""),
    ("yaml error", f"image: {CANARY}: x\n", f"kind: [{CANARY}\n"),
    ("not an object", "[1, 2]", f'"{CANARY}"'),
]


def _bad_bytes(template: str, key: str) -> bytes:
    return (template % key).encode() if "%s" in template else template.encode()


@pytest.mark.parametrize(
    ("content_intent", "content_record"),
    [c[1:] for c in _BAD_CONTENT],
    ids=[c[0] for c in _BAD_CONTENT],
)
def test_undecodable_files_fail_safe(
    tmp_path: Path, content_intent: str, content_record: str
) -> None:
    store = _store(tmp_path, migrate=False)
    for good in ("good-1", "good-2"):
        store.write_image_pull_intent(good)
        store.write_image_pulled_record(_record(good))
    bad_intent = _pulling(tmp_path) / cache_filename("bad")
    bad_record = _pulled(tmp_path) / cache_filename("bad")
    bad_intent.write_bytes(_bad_bytes(content_intent, "bad"))
    bad_record.write_bytes(_bad_bytes(content_record, "bad"))

    with pytest.raises(StoreReadError) as intent_err:
        store.image_pull_intent_exists("bad")
    with pytest.raises(StoreReadError) as record_err:
        store.get_image_pulled_record("bad")
    intents, intent_errors = store.list_image_pull_intents()
    records, record_errors = store.list_image_pulled_records()
    # Partial success: the valid entries are still listed next to the one error.
    assert sorted(i.image for i in intents) == ["good-1", "good-2"]
    assert sorted(r.image_ref for r in records) == ["good-1", "good-2"]
    assert len(intent_errors) == len(record_errors) == 1
    assert intent_errors[0].startswith(f"{bad_intent}: ")
    assert record_errors[0].startswith(f"{bad_record}: ")
    for msg in (*intent_errors, *record_errors, str(intent_err.value), str(record_err.value)):
        assert CANARY not in msg
        assert "\n" not in msg
    assert (store.count_intents(), store.count_records()) == (3, 3)


def _symlink_to_good(path: Path) -> None:
    target = path.parent / "elsewhere"
    target.write_text(
        _GOOD_RECORD % "bad" if path.parent.name == "pulled" else _GOOD_INTENT % "bad"
    )
    path.symlink_to(target)


def _dangling_symlink(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere")


def _directory(path: Path) -> None:
    path.mkdir()
    (path / "sha256-inner").write_text(_GOOD_INTENT % "bad")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _oversized(path: Path) -> None:
    good = (_GOOD_RECORD if path.parent.name == "pulled" else _GOOD_INTENT) % "bad"
    path.write_bytes(good.encode() + b" " * MAX_FILE_SIZE)


@pytest.mark.parametrize(
    "make",
    [_symlink_to_good, _dangling_symlink, _directory, _fifo, _oversized],
    ids=lambda f: f.__name__.strip("_"),
)
def test_unusable_entries_fail_safe(tmp_path: Path, make: Callable[[Path], None]) -> None:
    store = _store(tmp_path, migrate=False)
    store.write_image_pull_intent("good")
    store.write_image_pulled_record(_record("good"))
    for path in (
        _pulling(tmp_path) / cache_filename("bad"),
        _pulled(tmp_path) / cache_filename("bad"),
    ):
        make(path)
    with pytest.raises(StoreReadError):
        store.image_pull_intent_exists("bad")
    with pytest.raises(StoreReadError):
        store.get_image_pulled_record("bad")
    intents, intent_errors = store.list_image_pull_intents()
    records, record_errors = store.list_image_pulled_records()
    assert [i.image for i in intents] == ["good"]
    assert [r.image_ref for r in records] == ["good"]
    assert len(intent_errors) == len(record_errors) == 1
    assert cache_filename("bad") in record_errors[0]


def test_read_error_is_reported_with_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    store.write_image_pulled_record(_record("ref"))
    real_read = os.read

    def failing_read(fd: int, n: int) -> bytes:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "read", failing_read)
    with pytest.raises(StoreReadError, match="Input/output error"):
        store.get_image_pulled_record("ref")
    monkeypatch.setattr(os, "read", real_read)
    assert store.get_image_pulled_record("ref") == _record("ref")


def test_ignored_names(tmp_path: Path) -> None:
    """Names without the prefix, temp files and other subdirectories are not entries."""
    store = _store(tmp_path)
    store.write_image_pulled_record(_record("ref"))
    pulled = _pulled(tmp_path)
    name = cache_filename("ref")
    (pulled / f"{name}.tmp").write_bytes(b"torn {")
    (pulled / f"{name}.1234.abcd.tmp").write_bytes(b"")
    (pulled / "README").write_text("not ours")
    (pulled / "lost+found").mkdir()
    (pulled / "lost+found" / name).write_text("nested")
    assert store.list_image_pulled_records() == ([_record("ref")], [])
    assert store.count_records() == 1
    # A directory with a valid-looking name is not counted, but reading it is an error.
    (pulled / "sha256-x").mkdir()
    assert store.count_records() == 1
    records, errors = store.list_image_pulled_records()
    assert records == [_record("ref")]
    assert len(errors) == 1 and "sha256-x: not a regular file" in errors[0]


# -- migration --------------------------------------------------------------------------------


def _alpha_files() -> dict[str, tuple[str, bytes]]:
    """(dir, bytes) per file name: v1alpha1 files as 1.33/1.34 kubelets wrote them."""
    secret = (
        '{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1",'
        '"lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimageref",'
        '"credentialMapping":{"docker.io/testing/test":{"kubernetesSecrets":[{"uid":"testsecretuid",'
        '"namespace":"default","name":"pull-secret","credentialHash":"testsecrethash"}]}}}\n'
    )
    anon = (
        '{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1",'
        '"lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimage-anonpull",'
        '"credentialMapping":{"docker.io/testing/test":{"nodePodsAccessible":true}}}\n'
    )
    intent = (
        '{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1alpha1",'
        '"image":"docker.io/testing/test:latest"}\n'
    )
    return {
        TESTIMAGEREF_FILE: ("pulled", secret.encode()),
        cache_filename("testimage-anonpull"): ("pulled", anon.encode()),
        cache_filename("docker.io/testing/test:latest"): ("pulling", intent.encode()),
    }


def _lay_out(root: Path, files: dict[str, tuple[str, bytes]]) -> None:
    for name, (sub, data) in files.items():
        (root / "image_manager" / sub).mkdir(parents=True, exist_ok=True)
        (root / "image_manager" / sub / name).write_bytes(data)


def test_migration_rewrites_v1alpha1_as_v1beta1(tmp_path: Path) -> None:
    files = _alpha_files()
    _lay_out(tmp_path, files)
    beta = _store(tmp_path, migrate=False)
    assert beta.get_image_pulled_record("testimageref") is not None  # alpha files are readable
    (_pulled(tmp_path) / cache_filename("broken")).write_bytes(b"{")
    calls: list[int] = []
    store = _store(tmp_path, on_change=lambda: calls.append(1))
    for name, (sub, data) in files.items():
        path = tmp_path / "image_manager" / sub / name
        assert path.read_bytes() == data.replace(V1A1.encode(), V1B1.encode()), name
        assert _mode(path) == 0o600
    assert len(calls) == 3
    assert len(store.startup_errors) == 1 and cache_filename("broken") in store.startup_errors[0]
    assert _leftovers(tmp_path) == []
    # A second start has nothing left to migrate.
    again = _store(tmp_path, on_change=lambda: calls.append(1))
    assert len(calls) == 3 and len(again.startup_errors) == 1


def test_migrate_false_leaves_files(tmp_path: Path) -> None:
    files = _alpha_files()
    _lay_out(tmp_path, files)
    store = _store(tmp_path, migrate=False)
    for name, (sub, data) in files.items():
        assert (tmp_path / "image_manager" / sub / name).read_bytes() == data
    assert store.startup_errors == []
    assert not (tmp_path / "image_manager" / ".locks").exists()


def _startup_mix(root: Path, alpha: bool) -> None:
    """Records and intents of every kind the start-up scan tells apart: in the encoder's
    exact form (kept undecoded until asked for), v1alpha1 (migrated), valid but written
    otherwise (decoded at once), broken, and entries that are no files at all."""
    store = _store(root, migrate=False)
    for i in range(6):
        store.write_image_pull_intent(f"img-{i}")
        store.write_image_pulled_record(
            _record(f"ref-{i}", **{f"r.io/{i}": _creds(nodePodsAccessible=True)})
        )
    if alpha:
        (_pulled(root) / cache_filename("alpha")).write_bytes(
            encode_record(_record("alpha"), "v1alpha1")
        )
    (_pulled(root) / cache_filename("spaced")).write_bytes(
        encode_record(_record("spaced")).replace(b",", b", ")
    )
    (_pulling(root) / cache_filename("spaced")).write_bytes(
        (_GOOD_INTENT % "spaced").replace(",", ", ").encode()
    )
    for directory, kind in ((_pulled(root), _GOOD_RECORD), (_pulling(root), _GOOD_INTENT)):
        (directory / cache_filename("broken")).write_bytes(b"{")
        (directory / cache_filename("dup")).write_bytes(
            (kind % "dup").replace('"}', '","kind":"x"}').encode()
        )
        (directory / cache_filename("dir")).mkdir()
        (directory / cache_filename("link")).symlink_to(directory / cache_filename("broken"))


def _listed(store: FSPullRecordsAccessor) -> Any:
    intents, intent_errors = store.list_image_pull_intents()
    records, record_errors = store.list_image_pulled_records()
    return intents, intent_errors, records, record_errors


@pytest.mark.parametrize("alpha", [False, True], ids=["kept", "migrated"])
def test_startup_scan_lists_what_reading_the_files_lists(tmp_path: Path, alpha: bool) -> None:
    # (A migration write changes the directory: the scan of records is then not used.)
    _startup_mix(tmp_path, alpha)
    store = _store(tmp_path)
    assert len(store.startup_errors) == 8  # 4 unusable entries in each directory
    from_scan = _listed(store)
    store.forget_startup_scan()
    from_files = _listed(store)
    assert from_scan == from_files
    assert [len(x) for x in from_files] == [7, 4, 7 + alpha, 4]
    assert [r.image_ref for r in from_files[2]] == [
        r.image_ref for r in sorted(from_files[2], key=lambda r: cache_filename(r.image_ref))
    ]


@pytest.mark.parametrize("alpha", [False, True], ids=["kept", "migrated"])
@pytest.mark.parametrize("limit", [1, 3, 7, 100])
def test_list_head_is_the_start_of_the_list(tmp_path: Path, limit: int, alpha: bool) -> None:
    _startup_mix(tmp_path, alpha)
    store = _store(tmp_path)
    # First the start-up scan (decoding only what it returns), then the files themselves.
    heads = [
        (store.list_image_pull_intents_head(limit), store.list_image_pulled_records_head(limit))
    ]
    intents, intent_errors, records, record_errors = _listed(store)
    if not alpha:
        # The items decoded for the head are the very objects the list returns next.
        assert all(a is b for a, b in zip(heads[0][1][0], records, strict=False))
    store.forget_startup_scan()
    heads.append(
        (store.list_image_pull_intents_head(limit), store.list_image_pulled_records_head(limit))
    )
    for intent_head, record_head in heads:
        assert intent_head == (intents[:limit], len(intents), intent_errors)
        assert record_head == (records[:limit], len(records), record_errors)


def test_startup_scan_is_not_used_after_a_change(tmp_path: Path) -> None:
    _startup_mix(tmp_path, alpha=False)
    store = _store(tmp_path)
    store.write_image_pulled_record(_record("new"))
    records, _ = store.list_image_pulled_records()
    head, total, _ = store.list_image_pulled_records_head(100)
    assert "new" in {r.image_ref for r in records} and head == records and total == len(records)


# -- write failures ---------------------------------------------------------------------------


def _raise(err: int) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(err, os.strerror(err))

    return fail


def _fail_tmp_open(err: int) -> Callable[..., Any]:
    real_open = os.open

    def fake(path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        if str(path).endswith(".tmp"):
            raise OSError(err, os.strerror(err), str(path))
        return real_open(path, flags, mode, **kwargs)

    return fake


@pytest.mark.parametrize(
    ("attr", "make_fake", "err"),
    [
        ("open", _fail_tmp_open, errno.ENOSPC),
        ("open", _fail_tmp_open, errno.EACCES),
        ("open", _fail_tmp_open, errno.EROFS),
        ("write", _raise, errno.ENOSPC),
        ("write", _raise, errno.EDQUOT),
        ("fsync", _raise, errno.EIO),
        ("replace", _raise, errno.EACCES),
        ("replace", _raise, errno.EROFS),
    ],
    ids=lambda v: errno.errorcode[v] if isinstance(v, int) else getattr(v, "__name__", v),
)
def test_write_failures_keep_the_previous_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    attr: str,
    make_fake: Callable[[int], Callable[..., Any]],
    err: int,
) -> None:
    calls: list[int] = []
    store = _store(tmp_path, on_change=lambda: calls.append(1))
    old = _record("ref", a=_creds(nodePodsAccessible=True))
    store.write_image_pulled_record(old)
    store.write_image_pull_intent("img")
    record_path = _pulled(tmp_path) / cache_filename("ref")
    intent_path = _pulling(tmp_path) / cache_filename("img")
    before = (record_path.read_bytes(), intent_path.read_bytes())

    monkeypatch.setattr(os, attr, make_fake(err))
    with pytest.raises(StoreWriteError, match=os.strerror(err)) as exc_info:
        store.write_image_pulled_record(_record("ref"))
    assert isinstance(exc_info.value.__cause__, OSError)
    assert exc_info.value.__cause__.errno == err
    with pytest.raises(StoreWriteError):
        store.write_image_pull_intent("img")
    monkeypatch.undo()

    assert (record_path.read_bytes(), intent_path.read_bytes()) == before
    assert _leftovers(tmp_path) == []
    assert len(calls) == 2  # only the two successful writes
    assert store.get_image_pulled_record("ref") == old


def test_directories_are_created_with_the_accessor(tmp_path: Path) -> None:
    _store(tmp_path / "kubelet")  # as the kubelet's NewFSPullRecordsAccessor: MkdirAll 0700
    for d in ("kubelet/image_manager/pulling", "kubelet/image_manager/pulled"):
        assert _mode(tmp_path / d) == 0o700, d
    _store(tmp_path / "inspected", migrate=False)  # inspectors leave the disk alone
    assert not (tmp_path / "inspected").exists()


def test_accessor_creation_fails_when_directories_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "mkdir", _raise(errno.EACCES))
    with pytest.raises(StoreWriteError, match="pulling: cannot create: Permission denied"):
        _store(tmp_path / "kubelet")


def test_directory_creation_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path / "kubelet", migrate=False)
    monkeypatch.setattr(os, "mkdir", _raise(errno.EACCES))
    with pytest.raises(StoreWriteError, match="Permission denied"):
        store.write_image_pull_intent("img")
    with pytest.raises(StoreWriteError, match="Permission denied"), store.locked("intent", "img"):
        pass
    monkeypatch.undo()
    assert not (tmp_path / "kubelet").exists()
    store.write_image_pull_intent("img")
    for d in ("kubelet", "kubelet/image_manager", "kubelet/image_manager/pulling"):
        assert _mode(tmp_path / d) == 0o700, d  # like os.MkdirAll, parents too


def test_delete_failure_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    store.write_image_pulled_record(_record("ref"))
    monkeypatch.setattr(os, "unlink", _raise(errno.EROFS))
    with pytest.raises(StoreWriteError, match="Read-only file system"):
        store.delete_image_pulled_record("ref")
    monkeypatch.undo()
    assert store.get_image_pulled_record("ref") == _record("ref")


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def dribble(fd: int, data: Any) -> int:
        return real_write(fd, bytes(data[:7]))

    store = _store(tmp_path)
    record = _record("ref", a=_creds(nodePodsAccessible=True))
    monkeypatch.setattr(os, "write", dribble)
    store.write_image_pulled_record(record)
    monkeypatch.undo()
    assert (_pulled(tmp_path) / cache_filename("ref")).read_bytes() == encode_record(record)


def test_write_does_not_follow_a_planted_temp_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """O_EXCL|O_NOFOLLOW: a pre-existing temp name (or symlink) is never written through."""
    store = _store(tmp_path)
    store.write_image_pull_intent("img")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    tmp = f"{_pulling(tmp_path) / cache_filename('img')}.{os.getpid()}.{'00' * 8}.tmp"
    os.symlink(victim, tmp)
    monkeypatch.setattr(os, "urandom", lambda n: b"\0" * n)  # write_atomic's temp name
    with pytest.raises(StoreWriteError, match="File exists"):
        store.write_image_pull_intent("img")
    assert victim.read_text() == "keep"


# -- locks ------------------------------------------------------------------------------------


def test_stripes_follow_the_kubelet_fnv1() -> None:
    # FNV-1 32-bit test vectors (Go hash/fnv.New32).
    assert fnv32(b"") == 0x811C9DC5
    assert fnv32(b"a") == 0x050C5D7E
    assert fnv32(b"foobar") == 0x31F0B262
    assert FSPullRecordsAccessor.stripe("foobar") == 0x31F0B262 % 31


class _Contender:
    """Tries a lock from another thread; tells whether it had to wait."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def blocks(self, enter: Callable[[], Any], timeout: float = 0.15) -> bool:
        done = threading.Event()

        def run() -> None:
            with enter():
                done.set()

        thread = threading.Thread(target=run, daemon=True)
        self.threads.append(thread)
        thread.start()
        return not done.wait(timeout)

    def join(self) -> None:
        """Every waiter got its turn once the lock was released (no deadlock)."""
        for thread in self.threads:
            thread.join(timeout=5)
            assert not thread.is_alive()
        self.threads.clear()


def test_locks_exclude_threads(tmp_path: Path) -> None:
    store = _store(tmp_path)
    other = _store(tmp_path)  # another accessor over the same root: same lock files
    contender = _Contender()
    key2 = next(k for k in (f"k{i}" for i in range(100)) if store.stripe(k) != store.stripe("ref"))
    with store.locked("record", "ref"):
        assert contender.blocks(lambda: other.locked("record", "ref"))
        # another stripe, and the same key of the other kind, are free
        assert not contender.blocks(lambda: other.locked("record", key2))
        assert not contender.blocks(lambda: other.locked("intent", "ref"))
        assert contender.blocks(lambda: other.global_lock())
    contender.join()
    with store.global_lock("intent"):
        assert contender.blocks(lambda: other.locked("intent", "anything"))
        assert not contender.blocks(lambda: other.locked("record", "anything"))
    contender.join()
    locks = sorted(os.listdir(tmp_path / "image_manager" / ".locks"))
    assert len(locks) == 2 * LOCK_STRIPES
    assert all(_mode(tmp_path / "image_manager" / ".locks" / n) == 0o600 for n in locks)
    with pytest.raises(ValueError):
        store.locked("records", "x").__enter__()  # type: ignore[arg-type]


_PRELUDE = f"""
import sys
sys.path[:0] = [{str(REPO)!r}]
import datetime as dt, os
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.pullmanager.types import (
    ImagePullCredentials, ImagePulledRecord, ImagePullSecret, cache_filename,
)
"""

_INCREMENTER = (
    _PRELUDE
    + """
store = FSPullRecordsAccessor(sys.argv[1], migrate=False)
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    with store.locked("record", "counter"):
        rec = store.get_image_pulled_record("counter")
        later = rec.last_updated_time + dt.timedelta(seconds=1)
        store.write_image_pulled_record(rec.model_copy(update={"last_updated_time": later}))
"""
)


def test_two_processes_never_lose_an_update(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.write_image_pulled_record(_record("counter"))
    n = 150
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _INCREMENTER, str(tmp_path), str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        for p in procs:  # start both loops together
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            assert p.wait(timeout=20) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    final = store.get_image_pulled_record("counter")
    assert final is not None
    assert final.last_updated_time == T + dt.timedelta(seconds=2 * n)


# -- crash safety -----------------------------------------------------------------------------

#: Shared by the writer and the test: every value the writer can ever write.
_VALUES = """
T0 = dt.datetime(2024, 10, 21, 12, 26, 40, tzinfo=dt.UTC)
REFS = 4
SIZES = 40

def build(ref, n):
    secrets = [
        ImagePullSecret(uid=f"uid-{i}", namespace="ns", name=f"s-{i}", credential_hash="h" * 64)
        for i in range(n)
    ]
    creds = {f"registry.example/img-{i}": ImagePullCredentials(kubernetes_secrets=secrets or None, node_pods_accessible=not secrets) for i in range(min(n + 1, 8))}
    return ImagePulledRecord(
        last_updated_time=T0 + dt.timedelta(seconds=n), image_ref=f"ref-{ref}", credential_mapping=creds
    )
"""

# A zygote: imports once, then forks one writer per request, so that each of the many
# SIGKILLed writers is a real separate process without paying the interpreter start.
_ZYGOTE = (
    _PRELUDE
    + _VALUES
    + """
root = sys.argv[1]
for line in sys.stdin:
    seed = int(line)
    pid = os.fork()
    if pid == 0:
        store = FSPullRecordsAccessor(root, migrate=False)
        i = seed
        while True:
            i += 1
            store.write_image_pulled_record(build(i % REFS, (i * 7) % SIZES))
            store.write_image_pull_intent(f"image-{i % REFS}")
            if i % 5 == 0:
                store.delete_image_pull_intent(f"image-{(i + 1) % REFS}")
    print(pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print(status, flush=True)
"""
)


def test_sigkilled_writers_never_leave_a_torn_record(tmp_path: Path) -> None:
    zygote = subprocess.Popen(
        [sys.executable, "-c", _ZYGOTE, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    rng = random.Random(2535)
    try:
        for iteration in range(20):
            zygote.stdin.write(f"{iteration * 1000}\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            if iteration == 0:
                # On a loaded machine a writer may be killed before its first write: let the
                # first one write something (not timing-sensitive: just wait for a file).
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not any(
                    n.startswith("sha256-") and not n.endswith(".tmp")
                    for n in (os.listdir(_pulled(tmp_path)) if _pulled(tmp_path).is_dir() else [])
                ):
                    time.sleep(0.005)
            time.sleep(rng.uniform(0.005, 0.05))
            os.kill(pid, signal.SIGKILL)
            status = int(zygote.stdout.readline())
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=10)

    namespace: dict[str, Any] = {
        "dt": dt,
        "ImagePullCredentials": ImagePullCredentials,
        "ImagePulledRecord": ImagePulledRecord,
        "ImagePullSecret": ImagePullSecret,
    }
    exec(_VALUES, namespace)
    possible = {
        encode_record(namespace["build"](r, n))
        for r in range(namespace["REFS"])
        for n in range(namespace["SIZES"])
    }
    store = _store(tmp_path, migrate=False)
    records, errors = store.list_image_pulled_records()
    intents, intent_errors = store.list_image_pull_intents()
    # The rename is atomic and happens only after the data is complete: nothing is torn.
    assert errors == [] and intent_errors == []
    assert records, "the writers never got to write"
    assert all(encode_record(r) in possible for r in records)
    assert {i.image for i in intents} <= {f"image-{r}" for r in range(4)}
    for r in records:
        assert store.get_image_pulled_record(r.image_ref) == r
    # Stray temp files of killed writers are ignored and do not disturb later writes.
    assert store.count_records() == len(records) <= 4
    store.write_image_pulled_record(_record("ref-0"))
    assert store.get_image_pulled_record("ref-0") == _record("ref-0")
