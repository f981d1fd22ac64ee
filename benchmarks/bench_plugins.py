"""Plugin start-up benchmark: warm and cold execution of an installed credprov plugin.

What the kubelet pays per cache miss is one plugin process. This measures, side by side in
one run (interleaved rounds, medians), for ``static-credential-provider`` installed with
``credprov install`` into a temporary bin dir:

- ``floor``: ``python -I -S -c "import json, sys"`` with the same interpreter: the floor of
  any Python plugin (the interpreter and a JSON reader; installed launchers skip ``site``);
- ``bare``: ``python -I -S -c pass``, and ``site``: ``python -I -c "import json, sys"`` (the
  floor this benchmark used before, with ``site``), for continuity;
- ``warm``: the plugin answering from its persistent cache (the kubelet restarted, or its
  cache expired, but the plugin's answer is still valid); telemetry off (the default);
- ``warm+telemetry``: the same with ``CREDPROV_METRICS_FILE`` set: each run also locks,
  reads back and atomically rewrites its metrics file (``--metrics-dir``: where, default
  the temporary directory; use a disk directory to include a real fsync);
- ``cold``: the plugin with an empty cache (its handler runs and reads the credentials file);
- ``eager``: the same plugin, same warm cache, but started the way a naive plugin is (site
  enabled, handler, PyYAML and pydantic imported before looking at the request).

Targets: warm ≤ 1.25 × floor (issue 15; was 1.5 × the ``site`` floor), eager / warm ≥ 5;
warm+telemetry is reported against the same floor (issue 23).

Usage: ``.venv/bin/python benchmarks/bench_plugins.py [--rounds N] [--json FILE]``.
Always exits 0; prints ``UNEXPECTED`` next to a missed target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

G = "credentialprovider.kubelet.k8s.io"
REQUEST = json.dumps(
    {
        "kind": "CredentialProviderRequest",
        "apiVersion": f"{G}/v1",
        "image": "registry.example.com/team/app",
    }
).encode()


def _time(cmd: list[str], env: dict[str, str], stdin: bytes) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {proc.stderr.decode()[:300]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--metrics-dir", metavar="DIR", help="where warm+telemetry writes")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 5

    from credprov.install import install

    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-"))
    try:
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (result,) = install(str(bin_dir), ["static-credential-provider"])
        launcher = result.path
        creds = tmp / "config.json"
        creds.write_text(
            json.dumps({"auths": {"registry.example.com": {"username": "u", "password": "p"}}})
        )
        warm_cache = tmp / "warm-cache"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        plugin_args = ["--config", str(creds)]

        # The "eager" variant: same plugin and cache, imports everything before reading stdin.
        eager = tmp / "eager-static-credential-provider"
        eager.write_text(
            f"#!{sys.executable} -I\n"
            "import sys\n"
            + "".join(f"sys.path.insert(0, {p!r})\n" for p in _launcher_paths(launcher))
            + "import yaml, pydantic, credprov.api.config, credprov_static.plugin\n"
            # The API's pydantic models, built on first use since issue 15.
            + "credprov.api.config.CredentialProviderConfigV1\n"
            "from credprov_static.main import main\n"
            "sys.exit(main())\n"
        )
        eager.chmod(0o755)

        def env_with(cache: Path) -> dict[str, str]:
            return {**env, "CREDPROV_PLUGIN_CACHE_DIR": str(cache)}

        metrics_dir = Path(tempfile.mkdtemp(prefix="credprov-bench-", dir=args.metrics_dir))
        metrics_file = metrics_dir / "credprov_plugin_static.prom"
        env_tel = {**env_with(warm_cache), "CREDPROV_METRICS_FILE": str(metrics_file)}

        # Prime the warm cache (and write bytecode) once.
        for cmd in ([launcher, *plugin_args], [str(eager), *plugin_args]):
            _time(cmd, env_with(warm_cache), REQUEST)
        _time([launcher, *plugin_args], env_tel, REQUEST)  # and the telemetry's bytecode

        floors = {
            "floor": [sys.executable, "-I", "-S", "-c", "import json, sys"],
            "bare": [sys.executable, "-I", "-S", "-c", "pass"],
            "site": [sys.executable, "-I", "-c", "import json, sys"],
        }
        samples: dict[str, list[float]] = {
            k: [] for k in ("floor", "bare", "site", "warm", "warm_tel", "cold", "eager")
        }
        for i in range(args.rounds):
            for name, cmd in floors.items():
                samples[name].append(_time(cmd, env, b""))
            samples["warm"].append(_time([launcher, *plugin_args], env_with(warm_cache), REQUEST))
            samples["warm_tel"].append(_time([launcher, *plugin_args], env_tel, REQUEST))
            cold_cache = tmp / f"cold-{i}"
            samples["cold"].append(_time([launcher, *plugin_args], env_with(cold_cache), REQUEST))
            shutil.rmtree(cold_cache, ignore_errors=True)
            samples["eager"].append(
                _time([str(eager), *plugin_args], env_with(warm_cache), REQUEST)
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if "metrics_dir" in locals():
            shutil.rmtree(metrics_dir, ignore_errors=True)

    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    warm_ratio = med["warm"] / med["floor"]
    eager_ratio = med["eager"] / med["warm"]
    print(f"static-credential-provider start-up, median of {args.rounds} interleaved rounds")
    labels = {
        "floor": "python -I -S -c 'import json, sys'",
        "bare": "python -I -S -c pass",
        "site": "python -I -c 'import json, sys'",
        "warm": "plugin, warm (answer cached)",
        "warm_tel": "plugin, warm + telemetry on",
        "cold": "plugin, cold (handler runs)",
        "eager": "plugin, eager imports",
    }
    for name, label in labels.items():
        spread = (max(samples[name]) - min(samples[name])) * 1000
        print(
            f"  {label:36s}{med[name]:7.1f} ms (spread {spread:5.1f})  "
            f"{med[name] / med['floor']:.2f}x floor  {med[name] / med['bare']:.2f}x bare  "
            f"{med[name] / med['site']:.2f}x site"
        )
    print(
        f"  warm / floor = {warm_ratio:.2f} (target <= 1.25)"
        + ("" if warm_ratio <= 1.25 else "  UNEXPECTED")
    )
    print(
        f"  eager / warm = {eager_ratio:.2f} (target >= 5)"
        + ("" if eager_ratio >= 5 else "  UNEXPECTED")
    )
    print(f"  cold / warm  = {med['cold'] / med['warm']:.2f}")
    print(
        f"  telemetry on: +{med['warm_tel'] - med['warm']:.1f} ms per warm run, "
        f"warm+telemetry / floor = {med['warm_tel'] / med['floor']:.2f}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"median_ms": med, "samples_s": samples, "rounds": args.rounds}, indent=2)
        )
    return 0


def _launcher_paths(launcher: str) -> list[str]:
    """The sys.path entries the launcher adds (plus site-packages), for the eager variant."""
    paths: list[str] = []
    for line in Path(launcher).read_text().splitlines():
        if line.startswith("sys.path[0:0] = "):
            paths.extend(json.loads(line.split("=", 1)[1].replace("'", '"')))
    return list(reversed(paths))


if __name__ == "__main__":
    sys.exit(main())
