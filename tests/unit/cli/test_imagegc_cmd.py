"""``credprov image-gc`` against the fake runtime: removal, pruning, dry runs, errors."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from credprov.cli.main import main
from credprov.kubelet import node as _kubelet_node
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    ImagePullSecret,
)
from credprov.testing import FakeRuntime
from tests.conftest import CANARY

CRI = "unix:///run/fake/cri.sock"
KEPT = "sha256:" + "1" * 64
GONE = "sha256:" + "2" * 64
REMOVED = "sha256:" + "3" * 64
OLD = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Node:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp_path / "kubelet"
        self.root.mkdir()
        self.runtime = FakeRuntime()
        self.runtime.add_image(KEPT, ["registry.example.com/app:v1"])
        self.runtime.add_image(REMOVED, ["registry.example.com/old:v1"])
        self.store = FSPullRecordsAccessor(str(self.root))
        for ref in (KEPT, GONE, REMOVED):
            self.store.write_image_pulled_record(
                ImagePulledRecord(
                    lastUpdatedTime=OLD,
                    imageRef=ref,
                    credentialMapping={
                        "registry.example.com/app": ImagePullCredentials(
                            kubernetesSecrets=[
                                ImagePullSecret(
                                    uid="u", namespace="ns", name="regcred", credential_hash="h"
                                )
                            ]
                        )
                    },
                )
            )
        self.store.write_image_pull_intent("registry.example.com/gone:v1")
        self.opened: list[str] = []

        def factory(endpoint: str, **_: Any) -> FakeRuntime:
            self.opened.append(endpoint)
            return self.runtime

        monkeypatch.setattr(_kubelet_node, "open_cri_runtime", factory)

    def gc(self, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
        code = main(["image-gc", "--cri", CRI, "--root-dir", str(self.root), *extra])
        out, err = capsys.readouterr()
        assert "Traceback" not in err and CANARY not in out + err
        return code, out, err

    def refs(self, errors_expected: int = 0) -> set[str]:
        records, errors = self.store.list_image_pulled_records()
        assert len(errors) == errors_expected
        return {r.image_ref for r in records}


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Node:
    return Node(tmp_path, monkeypatch)


def test_prunes_records_of_images_the_runtime_lacks(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = node.gc(capsys)
    assert code == 0
    assert node.opened == [CRI]
    assert node.refs() == {KEPT, REMOVED}
    lines = out.splitlines()
    assert lines[0] == "runtime has 2 images"
    assert lines[1] == "pruned 1 record(s), kept 2"
    assert lines[2] == (
        f"  {GONE} (updated 2026-01-01T00:00:00Z) registry.example.com/app: secret ns/regcred"
    )
    # Intents are the image GC's business no more than upstream's.
    assert [i.image for i in node.store.list_image_pull_intents()[0]] == [
        "registry.example.com/gone:v1"
    ]


def test_remove_then_prune(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = node.gc(capsys, "--remove", "registry.example.com/old:v1", "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["removed"] == [{"image": "registry.example.com/old:v1", "error": None}]
    assert sorted(r["imageRef"] for r in report["pruned"]) == sorted([GONE, REMOVED])
    assert report["kept"] == [KEPT]
    assert report["images"] == [KEPT]
    assert report["dryRun"] is False
    assert node.refs() == {KEPT}
    assert node.runtime.image_ref("registry.example.com/old:v1") is None


def test_dry_run_changes_nothing(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = node.gc(capsys, "--dry-run", "--remove", "registry.example.com/old:v1")
    assert code == 0
    assert "image registry.example.com/old:v1: would be removed" in out
    assert "would prune 2 record(s), kept 1" in out
    assert node.refs() == {KEPT, GONE, REMOVED}
    assert node.runtime.image_ref("registry.example.com/old:v1") == REMOVED


def test_recent_records_survive(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    # Written "during" GC (after its start time): kept even though the runtime lacks it.
    late = "sha256:" + "4" * 64
    node.store.write_image_pulled_record(
        ImagePulledRecord(
            lastUpdatedTime=dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1), imageRef=late
        )
    )
    assert node.gc(capsys)[0] == 0
    assert late in node.refs()


def test_failing_list_prunes_nothing(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> list[Any]:
        raise RuntimeError("rpc error: code = Unavailable desc = connection closed")

    monkeypatch.setattr(node.runtime, "list_images", broken)
    code, out, err = node.gc(capsys)
    assert code == 1 and out == ""
    assert err == (
        "credprov: error: cannot list the runtime's images, nothing pruned: rpc error: "
        "code = Unavailable desc = connection closed\n"
    )
    assert node.refs() == {KEPT, GONE, REMOVED}


def test_failing_removal_is_reported_and_exit_1(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(image: str) -> None:
        raise RuntimeError("image is in use by a container")

    monkeypatch.setattr(node.runtime, "remove_image", broken)
    code, out, err = node.gc(capsys, "--remove", "registry.example.com/old:v1")
    assert code == 1
    assert "image registry.example.com/old:v1: not removed: image is in use" in out
    assert err == "credprov: 1 image(s) could not be removed\n"
    assert node.refs() == {KEPT, REMOVED}  # pruning still ran


def test_unreadable_record_is_reported_not_fatal(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    (node.root / "image_manager" / "pulled" / ("sha256-" + "f" * 64)).write_text("{broken")
    code, out, _ = node.gc(capsys)
    assert code == 0
    assert "unreadable record:" in out
    # Upstream's prune skips what it cannot decode (an unreadable record fails safe anyway).
    assert node.refs(errors_expected=1) == {KEPT, REMOVED}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cri", "/run/c.sock", "--root-dir", "{root}"], "--cri /run/c.sock: want unix:///path"),
        (
            ["--cri", CRI, "--root-dir", "{root}/missing"],
            "--root-dir {root}/missing: not a directory",
        ),
    ],
)
def test_bad_arguments(
    node: Node, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    root = str(node.root)
    code = main(["image-gc", *[a.format(root=root) for a in argv]])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("credprov: error: ") and err.count("\n") == 1
    assert message.format(root=root) in err
    assert node.opened == []


def test_runtime_factory_is_injectable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from credprov.cli import imagegc_cmd
    from credprov.cli.parser import build_parser

    runtime = FakeRuntime()
    args = build_parser().parse_args(["image-gc", "--cri", CRI, "--root-dir", str(tmp_path)])
    assert imagegc_cmd.execute(args, lambda endpoint: runtime) == 0
    assert "pruned 0 record(s), kept 0" in capsys.readouterr().out
