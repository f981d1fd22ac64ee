"""Bundled plugins vs the venv launcher: start-up, size and build time, side by side.

Builds the bundle (``credprov bundle``; timed) unless ``--tarball`` gives one, installs it
with its own ``install`` into a temporary bin dir, installs the venv launcher of the same
plugin with ``credprov install``, and runs, interleaved, medians of ``--rounds``. Each
``--compare LABEL=TARBALL`` (e.g. ``pyinstaller=...``, a bundle of an earlier build) is
installed and run in the same rounds, so before → after is measured side by side:

- ``floor``: ``python -I -S -c pass`` (the plugins' start-up floor);
- ``venv warm`` / ``bundle warm``: ``static-credential-provider`` answering from its
  persistent answer cache;
- ``venv cold`` / ``bundle cold``: the same with an empty cache (reads and matches the
  credentials file).

Goals (issue 12): bundle warm ≤ 1.5 × venv warm, bundle cold ≤ 1.3 × venv cold, bundle
≤ 40 MB gzipped, build ≤ 3 minutes. Usage:
``.venv/bin/python benchmarks/bench_bundle.py [--rounds 15] [--tarball FILE] [--json FILE]``
(``--rounds 3`` is a quick smoke run). Always exits 0; prints ``UNEXPECTED`` next to a
missed goal.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUEST = json.dumps(
    {
        "kind": "CredentialProviderRequest",
        "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
        "image": "registry.example.com/team/app",
    }
).encode()
CREDENTIALS = REPO / "config" / "static-credentials.yaml"
PLUGIN = "static-credential-provider"


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=REQUEST, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tarball", metavar="FILE", help="use this bundle (no build)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument(
        "--compare",
        metavar="LABEL=TARBALL",
        action="append",
        default=[],
        help="another bundle to run in the same rounds (its size is reported too)",
    )
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    from credprov.bundle.build import build_bundle, unpack
    from credprov.install import install

    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-bundle-"))
    try:
        build_seconds = None
        if args.tarball:
            tarball = Path(args.tarball)
        else:
            result = build_bundle(tmp)
            tarball, build_seconds = result.tarball, result.seconds
        size = tarball.stat().st_size
        bundles = {"bundle": tarball}
        for spec in args.compare:
            label, _, path = spec.partition("=")
            bundles[label] = Path(path)
        venv_bin = tmp / "venv-bin"
        venv_bin.mkdir()
        install(str(venv_bin), [PLUGIN])
        cmds = {
            "floor": [sys.executable, "-I", "-S", "-c", "pass"],
            "venv": [str(venv_bin / PLUGIN), "--config", str(CREDENTIALS)],
        }
        for label, path in bundles.items():
            unpacked = unpack(path, tmp / f"unpacked-{label}")
            bin_dir = tmp / f"{label}-bin"
            bin_dir.mkdir()
            subprocess.run(
                [str(unpacked / "install"), "--bin-dir", str(bin_dir), PLUGIN],
                check=True,
                capture_output=True,
            )
            cmds[label] = [str(bin_dir / PLUGIN), "--config", str(CREDENTIALS)]
        kinds = [k for k in cmds if k != "floor"]
        samples: dict[str, list[float]] = {"floor": []}
        for kind in kinds:
            samples[f"{kind} warm"] = []
            samples[f"{kind} cold"] = []
        base = {"PATH": "/usr/bin:/bin"}
        for kind in kinds:  # fill the warm caches
            _time(cmds[kind], {**base, "CREDPROV_PLUGIN_CACHE_DIR": str(tmp / f"{kind}-warm")})
        for i in range(args.rounds):
            samples["floor"].append(_time(cmds["floor"], base))
            for kind in kinds:
                warm = {**base, "CREDPROV_PLUGIN_CACHE_DIR": str(tmp / f"{kind}-warm")}
                samples[f"{kind} warm"].append(_time(cmds[kind], warm))
                cold = {**base, "CREDPROV_PLUGIN_CACHE_DIR": str(tmp / f"{kind}-cold-{i}")}
                samples[f"{kind} cold"].append(_time(cmds[kind], cold))
        med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
        print(f"{'':<18} {'median ms':>10} {'× floor':>8} {'× venv':>7} {'× bundle':>9}")
        for key, value in med.items():
            kind, _, temp = key.partition(" ")
            vs_venv = f"{value / med['venv ' + temp]:.2f}" if temp and kind != "venv" else ""
            vs_bundle = (
                f"{value / med['bundle ' + temp]:.2f}"
                if temp and kind not in ("bundle", "venv")
                else ""
            )
            print(
                f"{key:<18} {value:>10.1f} {value / med['floor']:>8.2f} {vs_venv:>7} {vs_bundle:>9}"
            )
        for label, path in bundles.items():
            print(f"{label + ' size (gz)':<24} {path.stat().st_size / 1e6:>8.1f} MB")
        warm_ratio = med["bundle warm"] / med["venv warm"]
        cold_ratio = med["bundle cold"] / med["venv cold"]
        checks = [
            ("bundle warm / venv warm", f"{warm_ratio:.2f}", warm_ratio <= 1.5),
            ("bundle cold / venv cold", f"{cold_ratio:.2f}", cold_ratio <= 1.3),
            ("bundle size (gz)", f"{size / 1e6:.1f} MB", size <= 40e6),
        ]
        if build_seconds is not None:
            checks.append(("build time", f"{build_seconds:.1f} s", build_seconds <= 180))
        for label, value, ok in checks:
            print(f"{label:<24} {value:>10}{'' if ok else '  UNEXPECTED'}")
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {
                        "medians_ms": med,
                        "rounds": args.rounds,
                        "size": size,
                        "build_seconds": build_seconds,
                        "sizes": {k: v.stat().st_size for k, v in bundles.items()},
                    },
                    indent=2,
                )
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
