"""Every file credprov reads is bounded, non-blocking and a regular file (issue 11, §3).

Each row gives one CLI input a FIFO (which would block a plain ``open`` forever), a device
that never ends (``/dev/zero``) and a directory. The command runs as a real subprocess with
a timeout, so a regression shows as a hang or a memory blow-up, not as a silent pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
PROVIDER_CONFIG = str(CONFIG / "credential-provider-config.yaml")
BIN_DIR = str(CONFIG / "bin")


def _credprov(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "credprov", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _records_root(tmp: Path) -> str:
    (tmp / "kubelet" / "image_manager" / "pulled").mkdir(parents=True, exist_ok=True)
    return str(tmp / "kubelet")


# name -> argv built from the bad path (and the test's temp dir)
CASES: dict[str, Callable[[str, Path], list[str]]] = {
    "config": lambda p, t: ["config", "validate", p],
    "pull-secret": lambda p, t: [
        "get-credentials",
        "nginx",
        "--config",
        PROVIDER_CONFIG,
        "--bin-dir",
        BIN_DIR,
        "--pull-secret",
        p,
    ],
    "node-docker-config": lambda p, t: [
        "get-credentials",
        "nginx",
        "--config",
        PROVIDER_CONFIG,
        "--bin-dir",
        BIN_DIR,
        "--node-docker-config",
        p,
    ],
    "objects": lambda p, t: ["nodeauth", "audit", "--objects", p, "--node", "n"],
    "scenario": lambda p, t: ["simulate", p],
    "pod": lambda p, t: [
        "ensure-image",
        "--cri",
        "unix:///nonexistent.sock",
        "--root-dir",
        _records_root(t),
        "--pod",
        p,
    ],
    "token-file": lambda p, t: [
        "plugin",
        "test",
        str(CONFIG / "bin" / "example-credential-provider"),
        "--image",
        "registry.example.com/app",
        "--service-account-token-file",
        p,
    ],
    "keep-file": lambda p, t: [
        "pull-records",
        "prune",
        "--root-dir",
        _records_root(t),
        "--keep-file",
        p,
    ],
}


def _bad_path(kind: str, tmp: Path) -> str:
    if kind == "fifo":
        path = tmp / "fifo.yaml"
        os.mkfifo(path)
        return str(path)
    if kind == "dev-zero":
        return "/dev/zero"
    path = tmp / "dir.yaml"
    path.mkdir()
    return str(path)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_non_regular_inputs_get_one_line_and_exit_1(case: str, kind: str, tmp_path: Path) -> None:
    bad = _bad_path(kind, tmp_path)
    proc = _credprov(*CASES[case](bad, tmp_path), cwd=tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("credprov: error: "), proc.stderr
    if case == "config" and kind == "directory":  # a config dir is valid: this one is empty
        assert "no configuration files found in directory" in lines[0]
    else:
        assert "not a regular file" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_fifo_in_a_config_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(Path(PROVIDER_CONFIG).read_text())
    os.mkfifo(tmp_path / "b.yaml")
    proc = _credprov("config", "validate", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f'credprov: error: unable to read file "{tmp_path}/b.yaml": not a regular file (a FIFO)'
    )


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero"])
def test_install_never_reads_what_is_in_the_way(kind: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    target = bin_dir / "static-credential-provider"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    proc = _credprov(
        "install", "--bin-dir", str(bin_dir), "static-credential-provider", cwd=tmp_path
    )
    assert proc.returncode == 1 and "was not written by credprov" in proc.stderr
    proc = _credprov(
        "install", "--bin-dir", str(bin_dir), "static-credential-provider", "--force", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert target.is_file() and not target.is_symlink()
    assert Path("/dev/zero").is_char_device()  # replaced the link, never wrote through it
