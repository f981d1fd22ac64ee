"""The doctor's cost per run under a container's CPU and memory limits (cgroup v1 here).

Runs ``credprov doctor --npd --node-root ROOT`` (NPD's permanent rule: plugins run) on the
unit tests' kubeadm fixture node, in a fresh cgroup with each ``cpu,memory`` limit pair,
and prints the median wall time, CPU time and peak memory of the run with its plugins.
Needs root and a cgroup v1 ``cpu`` and ``memory`` hierarchy; never fails a build.

    .venv/bin/python benchmarks/bench_doctor_limits.py [RUNS] [--quick]

``--quick`` (the e2e smoke run): one run each, without NPD's stock limits (over a minute).
Without root or a cgroup v1 ``cpu``/``memory`` hierarchy it says so and exits 0.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.doctor import nodes

#: (name, CPU millicores, memory MiB): NPD's stock limits, and what deploy/npd ships.
LIMITS = (("npd stock", 10, 80), ("deploy/npd", 500, 256), ("unlimited", 0, 0))
CGROUP = "/sys/fs/cgroup"


def _cgroup(name: str, millicores: int, mib: int) -> list[str]:
    paths = []
    for controller in ("cpu", "memory"):
        path = f"{CGROUP}/{controller}/credprov-bench-{name}-{os.getpid()}"
        os.makedirs(path, exist_ok=True)
        paths.append(path)
    cpu, memory = paths
    Path(cpu, "cpu.cfs_period_us").write_text("100000")
    Path(cpu, "cpu.cfs_quota_us").write_text(str(millicores * 100 if millicores else -1))
    Path(memory, "memory.limit_in_bytes").write_text(str(mib << 20) if mib else "-1")
    return paths


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    runs = 1 if quick else int(numbers[0]) if numbers else 3
    if os.geteuid() != 0 or not all(os.access(f"{CGROUP}/{c}", os.W_OK) for c in ("cpu", "memory")):
        print("skipped: needs root and a writable cgroup v1 cpu and memory hierarchy")
        return
    root = nodes.kubeadm_node(Path(tempfile.mkdtemp()) / "node")
    doctor = [sys.executable, "-m", "credprov", "doctor", "--npd", "--node-root", str(root)]
    for label, millicores, mib in LIMITS:
        if quick and label == "npd stock":
            continue
        groups = _cgroup(label.replace(" ", "-").replace("/", "-"), millicores, mib)
        enter = "; ".join(f"echo $$ > {g}/cgroup.procs" for g in groups)
        walls, cpus = [], []
        peak = 0
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            proc = subprocess.run(["sh", "-c", f'{enter}; exec "$@"', "sh", *doctor],
                                  capture_output=True, text=True, check=False)  # fmt: skip
            walls.append(time.monotonic() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        peak = int(Path(groups[1], "memory.max_usage_in_bytes").read_text()) >> 20
        for g in groups:
            os.rmdir(g)
        print(f"{label:10} wall {statistics.median(walls):6.2f}s  cpu {statistics.median(cpus):5.2f}s  "
              f"peak {peak:4d} MiB  -> {proc.stdout.strip()}")  # fmt: skip


if __name__ == "__main__":
    main()
