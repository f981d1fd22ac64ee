#!/usr/bin/env python3
"""Benchmarks of the credential engine: cache hits, singleflight, and CLI start-up.

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_engine.py            # about 2 minutes
    .venv/bin/python benchmarks/bench_engine.py --quick    # about 30 seconds
    .venv/bin/python benchmarks/bench_engine.py --json out.json --profile

Three figures, each a median over repeats, with ratios measured side by side in one run
(machines are shared and noisy, so compare ratios rather than absolute times across runs):

1. cache-hit lookups per second: ``Engine.resolve`` over 10,000 distinct images on 100
   registries with 5 providers whose caches are warm, broken down into its stages;
2. plugin executions for 100 concurrent lookups of one image (singleflight: must be 1);
3. wall time of one ``credprov get-credentials`` call, cold and warm, next to the floor of
   starting Python and importing pydantic.

A benchmark never fails a build: the script exits 0 and prints ``UNEXPECTED`` beside a
figure that is not what the engine promises. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from credprov.credentialprovider.engine import Engine
from credprov.credentialprovider.plugin.registry import (
    CredentialProviders,
    register_credential_provider_plugins,
)
from credprov.imageauth.images import parse_image_name
from credprov.imageauth.keyring import DockerKeyring

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO_ROOT / "config" / "credential-provider-config.yaml"
EXAMPLE_BIN_DIR = REPO_ROOT / "config" / "bin"
EXAMPLE_IMAGE = "registry.example.com/team/app:v1"
API_VERSION = "credentialprovider.kubelet.k8s.io/v1"

N_REGISTRIES = 100
N_IMAGES = 10_000
N_PROVIDERS = 5
N_CONCURRENT = 100
PLUGIN_SLEEP = 0.2

# A fake plugin: stdlib only and started with ``-IS`` so that start-up stays small. Each run
# appends "<start> <end>" (wall clock, after interpreter start-up) to BENCH_COUNTER, so the
# execution count is checked outside the engine too, and its run time can be placed.
PLUGIN_SOURCE = """\
import json
import os
import sys
import time

started = time.time()
request = json.loads(sys.stdin.buffer.read())
sleep = float(os.environ.get("BENCH_SLEEP") or 0)
if sleep:
    time.sleep(sleep)
registry = request["image"].split("/", 1)[0]
json.dump(
    {
        "kind": "CredentialProviderResponse",
        "apiVersion": request["apiVersion"],
        "cacheKeyType": "Registry",
        "cacheDuration": "24h0m0s",
        "auth": {registry: {"username": os.environ["BENCH_USER"], "password": "bench-pw"}},
    },
    sys.stdout,
)
counter = os.environ.get("BENCH_COUNTER")
if counter:
    fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, f"{started} {time.time()}\\n".encode())
    os.close(fd)
"""


# -- helpers -------------------------------------------------------------------------------


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def write_plugin(bin_dir: Path, name: str) -> None:
    path = bin_dir / name
    # Linux passes everything after the interpreter as one argument, hence "-IS".
    path.write_text(f"#!{sys.executable} -IS\n{PLUGIN_SOURCE}")
    path.chmod(0o755)


def provider_entry(name: str, match_images: list[str], env: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "apiVersion": API_VERSION,
        "matchImages": match_images,
        "defaultCacheDuration": "24h",
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }


def write_config(path: Path, providers: list[dict[str, Any]]) -> None:
    # JSON is YAML, and the loader takes any extension.
    doc = {
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": providers,
    }
    path.write_text(json.dumps(doc, indent=2))


def plugin_spans(path: Path) -> list[tuple[float, float]]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    return [(float(a), float(b)) for a, b in (line.split() for line in lines)]


def registries() -> list[str]:
    return [f"registry-{i:02d}.example.com" for i in range(N_REGISTRIES)]


def images() -> list[str]:
    """10,000 distinct images (distinct repositories, not just tags), 100 per registry."""
    out = []
    per_registry = N_IMAGES // N_REGISTRIES
    for j in range(per_registry):
        for i, registry in enumerate(registries()):
            out.append(f"{registry}/team-{j % 10}/app-{i}-{j}:v{j % 7}")
    return out


# Every registry is matched by exactly two providers: fake-provider-1 by a wildcard, and one
# of the others by literal hosts or by globs, so the match work is a realistic mix. The
# "[5-9]" classes in a host parse only for kubelets built with Go before 1.24.8/1.25.2, so
# the section follows Go 1.25.1 (bench_cache_hits).
MATCH_IMAGES = {
    "fake-provider-1": ["*.example.com"],
    "fake-provider-2": [f"registry-{i:02d}.example.com" for i in range(25)],
    "fake-provider-3": [
        "registry-2[5-9].example.com",
        "registry-3[0-9].example.com",
        "registry-4[0-9].example.com",
    ],
    "fake-provider-4": [
        "registry-5*.example.com",
        "registry-6*.example.com",
        "registry-7[0-4].example.com",
    ],
    "fake-provider-5": [
        "registry-7[5-9].example.com",
        "registry-8*.example.com",
        "registry-9*.example.com:443",  # a port must match exactly: never matches
        "registry-9*.example.com",
    ],
}


BLOCK = 500


def timed_interleaved(
    stages: dict[str, Callable[[str], object]], inputs: dict[str, list[str]], repeats: int
) -> dict[str, list[float]]:
    """Seconds per full pass of each stage over its inputs, one value per repeat.

    The stages take turns every BLOCK items, so that they share the machine's noise at a
    fine grain and their ratios hold even when absolute times swing.
    """
    times: dict[str, list[float]] = {name: [] for name in stages}
    n = len(next(iter(inputs.values())))
    clock = time.perf_counter
    for _ in range(repeats):
        gc.collect()
        acc = dict.fromkeys(stages, 0.0)
        for lo in range(0, n, BLOCK):
            for name, fn in stages.items():
                block = inputs[name][lo : lo + BLOCK]
                start = clock()
                for item in block:
                    fn(item)
                acc[name] += clock() - start
        for name, total in acc.items():
            times[name].append(total)
    return times


# -- 1. cache-hit lookups ------------------------------------------------------------------


def bench_cache_hits(tmp: Path, repeats: int, profile: bool) -> dict[str, Any]:
    from credprov._go.version import use_go

    use_go("1.25.1")  # MATCH_IMAGES has "[...]" globs in hosts
    bin_dir = tmp / "bin-cache"
    bin_dir.mkdir()
    counters = {}
    entries = []
    for name, match in MATCH_IMAGES.items():
        write_plugin(bin_dir, name)
        counters[name] = tmp / f"{name}.count"
        entries.append(
            provider_entry(name, match, {"BENCH_COUNTER": str(counters[name]), "BENCH_USER": name})
        )
    config = tmp / "cache-config.json"
    write_config(config, entries)

    providers = register_credential_provider_plugins(str(config), str(bin_dir))
    engine = Engine(providers)

    # Different registries never share a singleflight key, so the warm-up can overlap.
    warm_start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(engine.resolve, [f"{r}/warm/up:v1" for r in registries()]))
    warm_time = time.perf_counter() - warm_start
    warm_execs = sum(providers.executions().values())

    imgs = images()
    repos = [parse_image_name(i) for i in imgs]
    assert len(set(repos)) == len(imgs)
    sample = engine.resolve(imgs[0])
    creds_per_image = len(sample.credentials)

    keyring = DockerKeyring()
    keyring.add({r: {"username": "u", "password": "p"} for r in registries()})
    # Each breakdown row runs on a provider set of its own, measured cold: its caches hold
    # the warm-up's answers (copied, no plugin runs), but nothing that resolve's passes
    # memoised (matching per registry, merged answers) is shared with it.
    lookup_set = _copy_warm(providers, str(config), str(bin_dir))
    provide_all = _provide_all(_copy_warm(providers, str(config), str(bin_dir)))

    def resolve_and_read(image: str) -> object:
        return engine.resolve(image).providers

    stages: dict[str, Callable[[str], object]] = {
        "Engine.resolve(image)": engine.resolve,
        # The per-provider results are the caller's own copies, made on first read: what
        # `get-credentials` and ensure-image's error report pay on top of a lookup.
        "Engine.resolve(image).providers": resolve_and_read,
        # Unwrapped: resolve's memo (keyed by the image as given) skips it on a hit, and its
        # LRU cache would hit here on the names resolve has just parsed.
        "parse_image_name(image), uncached": parse_image_name.__wrapped__,
        "CredentialProviders.lookup(repo)": lookup_set.lookup,
        "5 x PluginProvider.provide(repo)": provide_all,
        "DockerKeyring.lookup(repo), 100 keys": keyring.lookup,
    }
    inputs = {name: imgs if "(image)" in name else repos for name in stages}
    times = timed_interleaved(stages, inputs, repeats)

    execs_after = sum(providers.executions().values())
    plugin_runs = sum(len(plugin_spans(p)) for p in counters.values())
    result: dict[str, Any] = {
        "images": len(imgs),
        "registries": N_REGISTRIES,
        "providers": len(providers.providers),
        "repeats": repeats,
        "warmup_seconds": warm_time,
        "warmup_executions": warm_execs,
        "warmup_expected_executions": 2 * N_REGISTRIES,
        "executions_during_timing": execs_after - warm_execs,
        "plugin_runs_counted_by_plugins": plugin_runs,
        "credentials_per_image": creds_per_image,
        "stages": {},
    }
    full = times["Engine.resolve(image)"]
    # The first pass meets every image for the first time: plugin caches warm, but nothing
    # memoised per image yet.
    result["first_pass_per_second"] = len(imgs) / full[0]
    for name, values in times.items():
        med = median(values)
        result["stages"][name] = {
            "median_seconds_per_pass": med,
            "median_share_of_resolve": median(v / f for v, f in zip(values, full, strict=True)),
            "all_seconds_per_pass": values,
            "per_second": len(imgs) / med,
            "microseconds_each": med / len(imgs) * 1e6,
        }
    if profile:
        result["profile"] = _profile(engine.resolve, imgs)
    return result


def _copy_warm(warm: CredentialProviders, config: str, bin_dir: str) -> CredentialProviders:
    """A fresh provider set for the same config, its caches holding ``warm``'s entries."""
    fresh = register_credential_provider_plugins(config, bin_dir)
    for src, dst in zip(warm.providers, fresh.providers, strict=True):
        for key in list(src.cache.keys()):
            entry = src.cache.get(key)
            if entry is not None:
                dst.cache.add(entry)
    return fresh


def _provide_all(providers: CredentialProviders) -> Callable[[str], object]:
    plist = providers.providers

    def provide_all(repo: str) -> object:
        return [p.provide(repo) for p in plist]

    return provide_all


def _profile(fn: Callable[[str], object], items: list[str], top: int = 20) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for item in items:
        fn(item)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def report_cache_hits(r: dict[str, Any]) -> None:
    print(
        f"1. Cache-hit lookups: {r['images']:,} distinct images, {r['registries']} registries, "
        f"{r['providers']} providers (median of {r['repeats']} passes)"
    )
    ok = r["warmup_executions"] == r["warmup_expected_executions"]
    print(
        f"   warm-up: {r['warmup_executions']} plugin executions "
        f"(expected {r['warmup_expected_executions']}){'' if ok else '  UNEXPECTED'} "
        f"in {fmt_s(r['warmup_seconds'])}"
    )
    extra = r["executions_during_timing"]
    print(
        f"   plugin executions while timing: {extra}{'' if extra == 0 else '  UNEXPECTED'}; "
        f"credentials per image: {r['credentials_per_image']}"
    )
    print(f"   {'stage':<40} {'lookups/s':>12} {'µs each':>10} {'% of resolve':>13}")
    for name, s in r["stages"].items():
        share = 100 * s["median_share_of_resolve"]
        print(
            f"   {name:<40} {s['per_second']:>12,.0f} {s['microseconds_each']:>10.1f} "
            f"{share:>12.0f}%"
        )
    keyring = r["stages"]["DockerKeyring.lookup(repo), 100 keys"]["median_share_of_resolve"]
    print(f"   ratio resolve / keyring-alone: {ratio(1, keyring):.1f}x")
    first = r["first_pass_per_second"]
    print(f"   first pass (each image new to the engine's memos): {first:,.0f} lookups/s")
    if "profile" in r:
        print("   cProfile of one Engine.resolve pass (top functions by own time):")
        for line in r["profile"].splitlines():
            print(f"     {line}")


# -- 2. singleflight -----------------------------------------------------------------------


def bench_singleflight(tmp: Path, repeats: int) -> dict[str, Any]:
    bin_dir = tmp / "bin-slow"
    bin_dir.mkdir()
    write_plugin(bin_dir, "slow-provider")
    image = "registry-00.example.com/team/app:v1"
    concurrent_walls: list[float] = []
    concurrent_execs: list[int] = []
    concurrent_runs: list[int] = []
    concurrent_creds: list[int] = []
    single_walls: list[float] = []
    before: list[float] = []
    after: list[float] = []

    def setup(tag: str) -> tuple[Engine, CredentialProviders, Path]:
        counter = tmp / f"slow-{tag}.count"
        config = tmp / f"slow-{tag}.json"
        env = {"BENCH_COUNTER": str(counter), "BENCH_SLEEP": str(PLUGIN_SLEEP), "BENCH_USER": "u"}
        write_config(config, [provider_entry("slow-provider", ["*.example.com"], env)])
        providers = register_credential_provider_plugins(str(config), str(bin_dir))
        return Engine(providers), providers, counter

    for rep in range(repeats):
        # One lookup alone, the baseline for the concurrent wall time.
        engine, providers, _ = setup(f"single-{rep}")
        start = time.perf_counter()
        engine.resolve(image)
        single_walls.append(time.perf_counter() - start)

        # A fresh engine (empty cache), 100 threads released together.
        engine, providers, counter = setup(f"concurrent-{rep}")
        barrier = threading.Barrier(N_CONCURRENT + 1)
        got: list[int] = [0] * N_CONCURRENT

        threads = [
            threading.Thread(target=_lookup_after_barrier, args=(engine, image, barrier, got, i))
            for i in range(N_CONCURRENT)
        ]
        for t in threads:
            t.start()
        gc.collect()
        barrier.wait()
        start = time.perf_counter()
        released = time.time()
        for t in threads:
            t.join()
        concurrent_walls.append(time.perf_counter() - start)
        finished = time.time()
        concurrent_execs.append(providers.executions()["slow-provider"])
        spans = plugin_spans(counter)
        concurrent_runs.append(len(spans))
        if spans:
            # Before the plugin's own code ran: fork/exec and interpreter start-up; after it
            # ended: reading its output, decoding, caching, and the 99 waiters' own work.
            before.append(min(s for s, _ in spans) - released)
            after.append(finished - max(e for _, e in spans))
        concurrent_creds.append(sum(1 for n in got if n))

    return {
        "threads": N_CONCURRENT,
        "plugin_sleep_seconds": PLUGIN_SLEEP,
        "repeats": repeats,
        "executions": concurrent_execs,
        "plugin_runs_counted_by_plugin": concurrent_runs,
        "lookups_with_credentials": concurrent_creds,
        "median_wall_seconds": median(concurrent_walls),
        "median_before_plugin_code_seconds": median(before) if before else None,
        "median_after_plugin_code_seconds": median(after) if after else None,
        "all_wall_seconds": concurrent_walls,
        "single_lookup_median_wall_seconds": median(single_walls),
        "all_single_lookup_wall_seconds": single_walls,
    }


def _lookup_after_barrier(
    engine: Engine, image: str, barrier: threading.Barrier, got: list[int], i: int
) -> None:
    barrier.wait()
    got[i] = len(engine.resolve(image).credentials)


def report_singleflight(r: dict[str, Any]) -> None:
    print(
        f"2. Singleflight: {r['threads']} concurrent lookups of one image, plugin sleeps "
        f"{fmt_s(r['plugin_sleep_seconds'])} (median of {r['repeats']})"
    )
    execs = max(r["executions"])
    runs = max(r["plugin_runs_counted_by_plugin"])
    ok = execs == 1 and runs == 1
    print(
        f"   plugin executions: {execs} (engine count), {runs} (plugin's own count)"
        f"{'' if ok else '  UNEXPECTED: want 1'}"
    )
    served = min(r["lookups_with_credentials"])
    print(
        f"   lookups that got credentials: {served}/{r['threads']}"
        f"{'' if served == r['threads'] else '  UNEXPECTED'}"
    )
    wall = r["median_wall_seconds"]
    single = r["single_lookup_median_wall_seconds"]
    print(
        f"   wall time: {fmt_s(wall)} for {r['threads']} lookups vs {fmt_s(single)} for one "
        f"lookup alone (ratio {ratio(wall, single):.2f}x)"
    )
    if r["median_before_plugin_code_seconds"] is not None:
        print(
            f"   of which: {fmt_s(r['median_before_plugin_code_seconds'])} from release to the "
            f"plugin's first line, {fmt_s(r['median_after_plugin_code_seconds'])} from its "
            "last line until every lookup returned"
        )


# -- 3. CLI wall time ----------------------------------------------------------------------


def _run(cmd: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(
            f"{cmd!r} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}"
        )
    return elapsed


def _remove_pycache(root: Path) -> None:
    for d in sorted(root.rglob("__pycache__"), reverse=True):
        shutil.rmtree(d, ignore_errors=True)


def bench_cli(tmp: Path, cold_repeats: int, warm_repeats: int) -> dict[str, Any]:
    import credprov

    # A private copy of the package, so that deleting bytecode never touches the work tree
    # (other sessions use it) and PYTHONDONTWRITEBYTECODE in the caller does not matter.
    src = tmp / "src"
    shutil.copytree(
        Path(credprov.__file__).parent,
        src / "credprov",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    env["PYTHONPATH"] = str(src)
    py = sys.executable
    where = subprocess.run(
        [py, "-c", "import credprov; print(credprov.__file__)"],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not where.startswith(str(src)):
        raise RuntimeError(f"the copy of credprov is not the one imported: {where}")

    get_credentials = [
        py,
        "-m",
        "credprov",
        "get-credentials",
        EXAMPLE_IMAGE,
        "--config",
        str(EXAMPLE_CONFIG),
        "--bin-dir",
        str(EXAMPLE_BIN_DIR),
    ]
    request = json.dumps(
        {"kind": "CredentialProviderRequest", "apiVersion": API_VERSION, "image": EXAMPLE_IMAGE}
    ).encode()
    plugin_env = dict(env, EXAMPLE_USERNAME="robot", EXAMPLE_PASSWORD="x")
    commands: dict[str, tuple[list[str], dict[str, str], bytes]] = {
        "get-credentials (warm)": (get_credentials, env, b""),
        'python -I -c "import json, sys"': ([py, "-I", "-c", "import json, sys"], env, b""),
        'python -c "import pydantic"': ([py, "-c", "import pydantic"], env, b""),
        "import credprov.cli.main + engine": (
            [
                py,
                "-c",
                "import credprov.cli.main, credprov.cli.credentials_cmd, credprov.credentialprovider.engine,"
                " credprov.credentialprovider.plugin.registry",
            ],
            env,
            b"",
        ),
        "example plugin alone": (
            [str(EXAMPLE_BIN_DIR / "example-credential-provider")],
            plugin_env,
            request,
        ),
    }

    # Cold runs are spread over the warm rounds, so that cold/warm is side by side too.
    cold_rounds = {i * warm_repeats // cold_repeats for i in range(cold_repeats)}
    cold: list[float] = []
    cold_imports: list[float] = []
    pyc = 0
    import_only = commands["import credprov.cli.main + engine"]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for cmd, cenv, stdin in commands.values():
        _run(cmd, cenv, tmp, stdin)  # one untimed run: bytecode and page cache warm
    for i in range(warm_repeats):
        if i in cold_rounds:
            _remove_pycache(src)
            cold.append(_run(get_credentials, env, tmp))
            pyc = sum(1 for _ in src.rglob("*.pyc"))
            _remove_pycache(src)
            cold_imports.append(_run(import_only[0], env, tmp))
        for name, (cmd, cenv, stdin) in commands.items():
            times[name].append(_run(cmd, cenv, tmp, stdin))

    return {
        "import_seconds_by_cause": _import_breakdown(get_credentials, env, tmp),
        "command": " ".join(get_credentials[1:]),
        "cold_repeats": cold_repeats,
        "warm_repeats": warm_repeats,
        "pyc_files_written_by_cold_run": pyc,
        "cold_median_seconds": median(cold),
        "all_cold_seconds": cold,
        "cold_import_median_seconds": median(cold_imports),
        "all_cold_import_seconds": cold_imports,
        "warm": {
            name: {"median_seconds": median(values), "all_seconds": values}
            for name, values in times.items()
        },
    }


_IMPORT_OWNERS = {
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
    "yaml": "yaml",
    "prometheus_client": "prometheus_client",
}


def _import_breakdown(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Seconds of import time of one warm run, by the package that caused each import.

    ``-X importtime`` prints each module after its children, indented by depth. A module
    is charged to its nearest enclosing dependency (so the stdlib modules prometheus_client
    pulls in count as prometheus_client), else to credprov, else to interpreter start-up.
    """
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], env=env, cwd=cwd, capture_output=True, text=True
    )
    stack: list[tuple[int, str, int, list[Any]]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3:
            continue
        raw = fields[2][1:]
        level = (len(raw) - len(raw.lstrip(" "))) // 2
        children: list[Any] = []
        while stack and stack[-1][0] > level:
            children.insert(0, stack.pop())
        stack.append((level, raw.strip(), int(fields[0]), children))

    totals: dict[str, float] = {}

    def charge(node: tuple[int, str, int, list[Any]], owner: str | None) -> None:
        _, name, self_us, kids = node
        top = name.split(".")[0]
        if top in _IMPORT_OWNERS:
            owner = _IMPORT_OWNERS[top]
        elif top == "credprov" and owner is None:
            owner = "credprov"
        key = owner or "start-up (site, runpy, finders)"
        totals[key] = totals.get(key, 0.0) + self_us / 1e6
        for kid in kids:
            charge(kid, owner)

    for root in stack:
        charge(root, None)
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def report_cli(r: dict[str, Any]) -> None:
    warm = r["warm"]
    w = warm["get-credentials (warm)"]["median_seconds"]
    floor = warm['python -I -c "import json, sys"']["median_seconds"]
    pyd = warm['python -c "import pydantic"']["median_seconds"]
    cold = r["cold_median_seconds"]
    print(
        f"3. CLI wall time: {r['command']} "
        f"(cold: median of {r['cold_repeats']}, warm: median of {r['warm_repeats']})"
    )
    print(
        f"   {'get-credentials (cold, no bytecode)':<40} {fmt_s(cold):>10}   "
        f"({r['pyc_files_written_by_cold_run']} .pyc written)"
    )
    cold_import = r["cold_import_median_seconds"]
    warm_import = warm["import credprov.cli.main + engine"]["median_seconds"]
    print(
        f"   {'import credprov.cli.main + engine (cold)':<40} {fmt_s(cold_import):>10}   "
        f"(bytecode compile costs about {fmt_s(cold_import - warm_import)})"
    )
    for name, s in warm.items():
        print(
            f"   {name:<40} {fmt_s(s['median_seconds']):>10}   "
            f"{ratio(s['median_seconds'], floor):5.1f}x python floor"
        )
    print(
        f"   ratios: warm/python floor {ratio(w, floor):.1f}x, warm/import pydantic "
        f"{ratio(w, pyd):.1f}x, cold/warm {ratio(cold, w):.2f}x"
    )
    imports = r["import_seconds_by_cause"]
    total = sum(imports.values())
    parts = ", ".join(f"{name} {fmt_s(sec)}" for name, sec in imports.items())
    print(f"   import time of one warm run (-X importtime, one sample): {fmt_s(total)}")
    print(f"     by cause: {parts}")


# -- main ----------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": load,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (about 30 s)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of one Engine.resolve pass"
    )
    parser.add_argument(
        "--only",
        choices=("cache", "singleflight", "cli"),
        action="append",
        help="run only these sections (repeatable)",
    )
    args = parser.parse_args(argv)
    sections = args.only or ["cache", "singleflight", "cli"]
    cache_repeats, sf_repeats, cold_repeats, warm_repeats = (
        (3, 1, 1, 3) if args.quick else (7, 5, 5, 15)
    )

    env = environment()
    print(
        f"credprov engine benchmarks ({'quick' if args.quick else 'full'}): Python "
        f"{env['python']} on {env['platform']}, {env['cpus']} CPUs, load average "
        f"{'/'.join(f'{x:.2f}' for x in env['loadavg']) if env['loadavg'] else 'n/a'}"
    )
    results: dict[str, Any] = {"environment": env, "quick": args.quick}
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-"))
    runs: list[tuple[str, Callable[[], dict[str, Any]], Callable[[dict[str, Any]], None]]] = [
        ("cache", lambda: bench_cache_hits(tmp, cache_repeats, args.profile), report_cache_hits),
        ("singleflight", lambda: bench_singleflight(tmp, sf_repeats), report_singleflight),
        ("cli", lambda: bench_cli(tmp, cold_repeats, warm_repeats), report_cli),
    ]
    try:
        for name, run, report in runs:
            if name not in sections:
                continue
            print()
            try:
                results[name] = run()
            except Exception as exc:  # a benchmark reports, it never fails the build
                traceback.print_exc()
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"{name}: ERROR {type(exc).__name__}: {exc}")
                continue
            report(results[name])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["total_seconds"] = time.perf_counter() - started
    print(f"\ntotal benchmark time: {fmt_s(results['total_seconds'])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
            fh.write("\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
