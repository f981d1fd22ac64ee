"""``credprov pull-records`` on a hand-written kubelet root."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from credprov.cli import pullrecords_cmd
from credprov.cli.main import CLIError
from credprov.pullmanager.types import cache_filename

V1B1 = "kubelet.config.k8s.io/v1beta1"
V1A1 = "kubelet.config.k8s.io/v1alpha1"
SECRET_REF = "sha256:" + "5e" * 32
ANON_REF = "testimage-anonpull"
SA_REF = "sha256:" + "5a" * 32


def record(ref: str, mapping: dict[str, Any] | None, when: str, version: str = V1B1) -> str:
    body: dict[str, Any] = {
        "kind": "ImagePulledRecord",
        "apiVersion": version,
        "lastUpdatedTime": when,
        "imageRef": ref,
    }
    if mapping is not None:
        body["credentialMapping"] = mapping
    return json.dumps(body, separators=(",", ":")) + "\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    pulled = tmp_path / "image_manager" / "pulled"
    pulling = tmp_path / "image_manager" / "pulling"
    pulled.mkdir(parents=True)
    pulling.mkdir(parents=True)
    secret = {
        "uid": "testsecretuid",
        "namespace": "default",
        "name": "pull-secret",
        "credentialHash": "testsecrethash",
    }
    files = {
        SECRET_REF: record(
            SECRET_REF,
            {"docker.io/testing/test": {"kubernetesSecrets": [secret]}},
            "2024-10-21T12:26:40Z",
        ),
        ANON_REF: record(
            ANON_REF,
            {"docker.io/testing/test": {"nodePodsAccessible": True}},
            "2030-01-01T00:00:00Z",
            version=V1A1,
        ),
        SA_REF: record(
            SA_REF,
            {
                "docker.io/testing/sa": {
                    "kubernetesServiceAccounts": [
                        {"uid": "test-sa-uid", "namespace": "default", "name": "test-sa"}
                    ]
                }
            },
            "2024-10-21T12:26:40Z",
        ),
    }
    for ref, text in files.items():
        (pulled / cache_filename(ref)).write_text(text)
    (pulled / "sha256-corrupt").write_text('{"kind":"ImagePulledRecord","unknown":1}\n')
    (pulled / "sha256-leftover.tmp").write_text("half")  # ignored, as by the kubelet
    image = "docker.io/testing/test:latest"
    intent = {"kind": "ImagePullIntent", "apiVersion": V1B1, "image": image}
    (pulling / cache_filename(image)).write_text(json.dumps(intent) + "\n")
    return tmp_path


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="credprov")
    parser.add_argument("-v", dest="verbosity", default=0)
    sub = parser.add_subparsers(dest="command")
    pullrecords_cmd.add_parser(sub)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = run(["pull-records", *argv, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_list_json(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = as_json(capsys, "list", "--root-dir", str(root))
    assert code == 0
    assert sorted(r["imageRef"] for r in out["records"]) == sorted([SECRET_REF, ANON_REF, SA_REF])
    assert out["intents"] == ["docker.io/testing/test:latest"]
    [error] = out["errors"]
    assert "sha256-corrupt" in error and "\n" not in error


def test_list_text(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["pull-records", "list", "--root-dir", str(root)]) == 0
    text = capsys.readouterr().out
    assert (
        "docker.io/testing/test: secret default/pull-secret uid=testsecretuid hash=testsecrethash"
        in text
    )
    assert "docker.io/testing/test: node-wide" in text
    assert "docker.io/testing/sa: serviceaccount default/test-sa uid=test-sa-uid" in text
    assert "dangling intents (1)" in text and "files that fail to decode (1)" in text
    # Listing never writes: the v1alpha1 file is still v1alpha1.
    assert V1A1 in (root / "image_manager" / "pulled" / cache_filename(ANON_REF)).read_text()


def test_show(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = as_json(capsys, "show", SECRET_REF, "--root-dir", str(root))
    assert code == 0 and out["imageRef"] == SECRET_REF
    with pytest.raises(CLIError, match="no pulled record for imageRef 'nope'"):
        run(["pull-records", "show", "nope", "--root-dir", str(root)])


def test_verify(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = as_json(capsys, "verify", "--root-dir", str(root))
    assert code == 1 and not out["ok"]
    bad = [f for f in out["files"] if f["error"]]
    assert [Path(f["path"]).name for f in bad] == ["sha256-corrupt"]
    assert len(out["files"]) == 5  # 4 records (incl. corrupt) + 1 intent; .tmp ignored
    (root / "image_manager" / "pulled" / "sha256-corrupt").unlink()
    code, out = as_json(capsys, "verify", "--root-dir", str(root))
    assert code == 0 and out["ok"]


def test_verify_wrong_file_name(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pulled = root / "image_manager" / "pulled"
    (pulled / cache_filename(SA_REF)).rename(pulled / "sha256-elsewhere")
    code, out = as_json(capsys, "verify", "--root-dir", str(root))
    assert code == 1
    assert any("file name does not match its imageRef" in (f["error"] or "") for f in out["files"])


def test_migrate(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = as_json(capsys, "migrate", "--root-dir", str(root), "--dry-run")
    assert code == 0 and [Path(p).name for p in out["migrated"]] == [cache_filename(ANON_REF)]
    path = root / "image_manager" / "pulled" / cache_filename(ANON_REF)
    assert V1A1 in path.read_text()
    code, out = as_json(capsys, "migrate", "--root-dir", str(root))
    assert code == 0 and len(out["migrated"]) == 1
    assert path.read_text() == record(
        ANON_REF,
        {"docker.io/testing/test": {"nodePodsAccessible": True}},
        "2030-01-01T00:00:00Z",
    )


def test_prune(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = as_json(
        capsys,
        "prune",
        "--root-dir",
        str(root),
        "--keep",
        SA_REF,
        "--before",
        "2025-01-01T00:00:00Z",
    )
    # Only the old, unkept record goes; the newer anonymous one and the kept one stay.
    assert code == 0 and out["pruned"] == [SECRET_REF]
    pulled = root / "image_manager" / "pulled"
    assert not (pulled / cache_filename(SECRET_REF)).exists()
    assert (pulled / cache_filename(ANON_REF)).exists() and (
        pulled / cache_filename(SA_REF)
    ).exists()
    # Intents are untouched by prune.
    assert len(list((root / "image_manager" / "pulling").iterdir())) == 1


def test_prune_keep_file_and_dry_run(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text(f"{SA_REF}\n\n")
    code, out = as_json(
        capsys, "prune", "--root-dir", str(root), "--keep-file", str(keep), "--dry-run"
    )
    assert code == 0 and out["pruned"] == [SECRET_REF]
    assert (root / "image_manager" / "pulled" / cache_filename(SECRET_REF)).exists()


def test_prune_requires_keep(root: Path) -> None:
    with pytest.raises(CLIError, match="--keep-none"):
        run(["pull-records", "prune", "--root-dir", str(root)])
    with pytest.raises(CLIError, match="not an RFC 3339 time"):
        run(["pull-records", "prune", "--root-dir", str(root), "--keep-none", "--before", "soon"])


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(CLIError, match=r"nope: does not exist$"):
        run(["pull-records", "list", "--root-dir", str(tmp_path / "nope")])
    (tmp_path / "file").write_text("")
    with pytest.raises(CLIError, match=r"file: not a directory$"):
        run(["pull-records", "list", "--root-dir", str(tmp_path / "file")])


def test_keep_file_must_be_a_regular_file(root: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        with pytest.raises(CLIError, match=r"cannot read --keep-file .*: not a regular file"):
            run(["pull-records", "prune", "--root-dir", str(root), "--keep-file", path])


def _misnamed_root(tmp_path: Path) -> tuple[Path, Path]:
    pulled = tmp_path / "image_manager" / "pulled"
    pulled.mkdir(parents=True)
    misnamed = pulled / ("sha256-" + "0" * 64)
    misnamed.write_text(
        record(
            SECRET_REF,
            {"docker.io/x/y": {"nodePodsAccessible": True}},
            "2024-10-21T12:26:40Z",
            V1A1,
        )
    )
    return misnamed, pulled / cache_filename(SECRET_REF)


def test_list_flags_misnamed_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    misnamed, _ = _misnamed_root(tmp_path)
    assert run(["pull-records", "list", "--root-dir", str(tmp_path), "-o", "json"]) == 0
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert errors == [f"{misnamed}: file name does not match its imageRef {SECRET_REF!r}"]


def test_migrate_reports_every_file_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    misnamed, target = _misnamed_root(tmp_path)
    assert run(["pull-records", "migrate", "--root-dir", str(tmp_path), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["migrated"] == [str(misnamed)] and doc["written"] == [str(target)]
    assert target.is_file() and misnamed.is_file()


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd="/",
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[3]), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize(
    ("denied", "message"),
    [
        ("stat", "permission denied (run as root?)"),  # a parent directory not traversable
        ("access", "permission denied reading"),  # the 0700 root itself
    ],
)
def test_unreadable_root_is_an_error_not_an_empty_list(
    root: Path, monkeypatch: pytest.MonkeyPatch, denied: str, message: str
) -> None:
    """In-process, so it runs whoever runs the tests: the OS's answers are those an
    unprivileged user gets (root itself is never refused)."""
    real_stat = os.stat
    if denied == "stat":

        def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
            if str(path) == str(root):
                raise PermissionError(13, "Permission denied", str(path))
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", stat)
    else:
        monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(root))
    with pytest.raises(CLIError, match=re.escape(message)) as err:
        run(["pull-records", "list", "--root-dir", str(root)])
    assert "\n" not in str(err.value)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root")
def test_unreadable_root_as_a_real_unprivileged_user(root: Path) -> None:
    if _as_nobody("-c", "import credprov").returncode != 0:
        pytest.skip("this checkout is not readable by an unprivileged user")
    root.chmod(0o700)
    proc = _as_nobody("-m", "credprov", "pull-records", "list", "--root-dir", str(root))
    assert proc.returncode == 1, proc.stdout
    assert "permission denied" in proc.stderr and proc.stderr.count("\n") == 1
