"""CLI start-up benchmark: warm wall time of the commands operators and node tools run.

Interleaved rounds (each command once per round, medians), all warm (bytecode written by an
untimed first run), with the project's interpreter, measured against ``python -I -c pass``:

- ``credprov get-credentials IMAGE --config config/... --bin-dir config/bin`` (runs the
  example plugin once); target ≤ 4× floor;
- ``credprov config validate config/credential-provider-config.yaml``; target ≤ 3×;
- ``credprov explain IMAGE --config config/...``; target ≤ 3×;
- ``docker-credential-credprov get`` with the server URL on stdin (what skopeo and podman run
  once per registry); target ≤ 4×;
- ``config/bin/example-credential-provider`` alone, for scale;
- ``python -c pass`` (with ``site``), what a console script pays before its first line:
  in an editable install (``scripts/setup.sh``) setuptools' finder adds ~10-15 ms that a
  regular install does not have.

The commands run through the virtualenv's console scripts, as users run them. Usage:
``.venv/bin/python benchmarks/bench_cli.py [--rounds N] [--quick] [--json FILE]
[--baseline CHECKOUT]``; ``--baseline`` runs another checkout's commands in the same rounds
and prints after/before ratios.
Always exits 0; prints ``UNEXPECTED`` beside a missed target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config" / "credential-provider-config.yaml"
BIN_DIR = REPO / "config" / "bin"
IMAGE = "registry.example.com/team/app:v1"
API = "credentialprovider.kubelet.k8s.io/v1"


def _time(cmd: list[str], env: dict[str, str], stdin: bytes) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    _, err = proc.communicate(stdin)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}: {err.decode()[-300:]}")
    return elapsed


def _timed(cmd: list[str], env: dict[str, str], stdin: bytes) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children): one run at a time, so
    the growth of RUSAGE_CHILDREN is this run's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = _time(cmd, env, stdin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def commands(
    baseline: Path | None = None,
) -> dict[str, tuple[list[str], dict[str, str], bytes, float | None]]:
    """name -> (argv, env, stdin, target ratio to the floor or None).

    With ``baseline`` (another checkout with its own ``.venv``), each credprov command also
    runs from there, as ``NAME (baseline)``, on this checkout's config files.
    """
    scripts = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    helper_env = dict(
        env,
        CREDPROV_PROVIDER_CONFIG=str(CONFIG),
        CREDPROV_PROVIDER_BIN_DIR=str(BIN_DIR),
    )
    request = json.dumps({"kind": "CredentialProviderRequest", "apiVersion": API, "image": IMAGE})
    out = _commands(scripts, env, helper_env, request)
    if baseline is not None:
        for name, (cmd, cenv, stdin, _) in _commands(
            baseline / ".venv" / "bin", env, helper_env, request
        ).items():
            if name.startswith(("credprov", "docker-credential")):
                out[f"{name} (baseline)"] = (cmd, cenv, stdin, None)
    return out


def _commands(
    scripts: Path, env: dict[str, str], helper_env: dict[str, str], request: str
) -> dict[str, tuple[list[str], dict[str, str], bytes, float | None]]:
    credprov = str(scripts / "credprov")
    return {
        "python -I -c pass (floor)": (
            [str(scripts / "python"), "-I", "-c", "pass"],
            env,
            b"",
            None,
        ),
        # What every console script pays before credprov's first line: site, with this
        # virtualenv's .pth files (an editable install's finder imports pathlib & co).
        "python -c pass (site)": ([str(scripts / "python"), "-c", "pass"], env, b"", None),
        "credprov get-credentials": (
            [
                credprov,
                "get-credentials",
                IMAGE,
                "--config",
                str(CONFIG),
                "--bin-dir",
                str(BIN_DIR),
            ],
            env,
            b"",
            4.0,
        ),
        "credprov config validate": (
            [credprov, "config", "validate", str(CONFIG)],
            env,
            b"",
            3.0,
        ),
        "credprov explain": ([credprov, "explain", IMAGE, "--config", str(CONFIG)], env, b"", 3.0),
        "docker-credential-credprov get": (
            [str(scripts / "docker-credential-credprov"), "get"],
            helper_env,
            b"registry.example.com\n",
            4.0,
        ),
        "example plugin alone": (
            [str(BIN_DIR / "example-credential-provider")],
            dict(env, EXAMPLE_USERNAME="robot", EXAMPLE_PASSWORD="x"),
            request.encode(),
            None,
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        type=Path,
        help="another checkout (with its .venv from scripts/setup.sh) whose commands run in "
        "the same rounds, for before/after ratios measured side by side",
    )
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds
    if args.baseline is not None and not (args.baseline / ".venv" / "bin" / "credprov").is_file():
        parser.error(f"{args.baseline}: no .venv/bin/credprov (run its scripts/setup.sh)")

    cmds = commands(args.baseline)
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    errors: dict[str, str] = {}
    for name, (cmd, env, stdin, _) in cmds.items():
        try:
            _time(cmd, env, stdin)  # untimed: bytecode and page cache warm
        except Exception as exc:  # a benchmark reports, it never fails the build
            errors[name] = f"{type(exc).__name__}: {exc}"
    for _ in range(rounds):
        for name, (cmd, env, stdin, _) in cmds.items():
            if name not in errors:
                wall, used = _timed(cmd, env, stdin)
                samples[name].append(wall)
                cpu[name].append(used)

    floor = statistics.median(samples["python -I -c pass (floor)"])
    cpu_floor = statistics.median(cpu["python -I -c pass (floor)"])
    print(
        f"CLI start-up, warm, median of {rounds} interleaved rounds; wall time and ratio to "
        "the floor's, then CPU time (user+sys, less sensitive to a busy machine) and its ratio"
    )
    result: dict[str, object] = {
        "rounds": rounds,
        "samples_s": samples,
        "cpu_samples_s": cpu,
        "errors": errors,
    }
    for name, (_, _, _, target) in cmds.items():
        if name in errors:
            print(f"  {name:<42} ERROR {errors[name]}")
            continue
        values = samples[name]
        med = statistics.median(values)
        spread = (max(values) - min(values)) * 1000
        r = med / floor
        verdict = ""
        if target is not None:
            verdict = f"  (target <= {target:.0f}x)" + ("" if r <= target else "  UNEXPECTED")
        cmed = statistics.median(cpu[name])
        print(
            f"  {name:<42} {med * 1000:7.1f} ms (spread {spread:5.1f}) {r:5.2f}x   "
            f"cpu {cmed * 1000:6.1f} ms {cmed / cpu_floor:5.2f}x{verdict}"
        )
    for name in cmds:
        if name.endswith(" (baseline)") and name not in errors:
            now = name.removesuffix(" (baseline)")
            if now in errors:
                continue
            ratio = statistics.median(samples[now]) / statistics.median(samples[name])
            cratio = statistics.median(cpu[now]) / statistics.median(cpu[name])
            print(f"  after/before {now:<30} wall {ratio:5.2f}   cpu {cratio:5.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
