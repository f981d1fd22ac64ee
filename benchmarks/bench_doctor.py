#!/usr/bin/env python3
"""Wall time of ``credprov doctor`` on a healthy node with three providers, next to
``credprov config validate`` on the same provider config.

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_doctor.py            # 15 interleaved rounds
    .venv/bin/python benchmarks/bench_doctor.py --rounds 5

The node root is the tests' healthy kubeadm fixture (systemd unit, drop-in, env files,
KubeletConfiguration, three ``sh`` plugins, a pull record). Each round runs, in turn,
``doctor`` (every check, the three plugins executed), ``doctor --no-exec`` and ``config
validate``, each a fresh process as an operator runs them; medians and the ratio to
``config validate`` are printed side by side. A benchmark never fails a build.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.unit.doctor import nodes  # noqa: E402


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = nodes.kubeadm_node(Path(tmp) / "node")
        cli = [sys.executable, "-m", "credprov"]
        commands = {
            "doctor": [*cli, "doctor", "--node-root", str(root)],
            "doctor --no-exec": [*cli, "doctor", "--node-root", str(root), "--no-exec"],
            "config validate": [
                *cli,
                "config",
                "validate",
                str(root / nodes.CONFIG.lstrip("/")),
            ],
        }
        for argv in commands.values():  # warm the page cache and the bytecode
            _time(argv)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, argv in commands.items():
                times[name].append(_time(argv))
    base = statistics.median(times["config validate"])
    print(f"credprov doctor vs config validate, {args.rounds} interleaved rounds (medians)")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"  {name:18} {median * 1000:8.1f} ms   x{median / base:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
