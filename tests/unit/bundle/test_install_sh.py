"""``credprov-plugins/install`` (POSIX sh) under faults and concurrency, on a stand-in runtime.

The stand-in is a small sh script in the bundle's ``runtime/`` that answers ``--list`` and a
CredentialProviderRequest (with its bundle's tag, so a test can tell versions apart), with
filler files so that copying and checking a runtime takes measurable time. Every script run
is real: ``install`` under dash and under busybox sh, killed with SIGKILL (its whole process
group, as a container runtime kills a pod) at random instants, or run several at once.

The invariant checked everywhere: a plugin name is absent, or a symlink to a runtime dir
whose tree is exactly one bundle's ``runtime/`` and which answers a request. After any
interruption, one uninterrupted install leaves exactly the names, one runtime dir, and
nothing else (no lock, no work dir).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from credprov.bundle import _multicall
from credprov.bundle.build import assemble

NAMES = ("static-credential-provider", "ecr-credential-provider", "docker-credential-credprov")
SHELLS = [s for s in (("dash",), ("busybox", "sh")) if shutil.which(s[0])]
SHELL_IDS = [" ".join(s) for s in SHELLS]
REQUEST = '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderRequest","image":"r.example/i"}\n'
RUNTIME_DIR = ".credprov-plugins-"

STAND_IN = """#!/bin/sh
# Stand-in for the frozen runtime: --list, and one request answered with this bundle's tag.
fails='FAILS'
case "${1:-}" in
--list) [ -z "$fails" ] || { echo "$fails" >&2; exit 127; }
        printf '%s\\n' NAMES; exit 0 ;;
esac
IFS= read -r request || :
case $request in *CredentialProviderRequest*) ;; *) echo "not a request" >&2; exit 1 ;; esac
printf '{"kind":"CredentialProviderResponse","name":"%s","tag":"%s"}\\n' "${0##*/}" TAG
"""


@dataclass(frozen=True)
class Bundle:
    dir: Path
    build_id: str
    tag: str

    @property
    def install(self) -> Path:
        return self.dir / "install"


def make_bundle(
    root: Path, tag: str, fill: int = 24, size: int = 1 << 16, list_fails: str = ""
) -> Bundle:
    """A bundle around the stand-in runtime; ``fill`` files of ``size`` bytes make copies and
    deletes take time (a real runtime has ~115 files, 47 MB);
    with ``list_fails`` its ``--list`` prints that and exits 127 (as a loader that fails)."""
    src = root / f"runtime-{tag}"
    (src / "_internal").mkdir(parents=True)
    exe = src / "credprov-plugins"
    text = STAND_IN.replace("NAMES", " ".join(NAMES)).replace("TAG", tag)
    exe.write_text(text.replace("FAILS", list_fails))
    exe.chmod(0o755)
    for i in range(fill):
        (src / "_internal" / f"fill-{i:03}").write_bytes(
            hashlib.sha256(f"{tag}{i}".encode()).digest() * (size // 32)
        )
    bundle, build_id, _glibc = assemble(src, NAMES, root / f"out-{tag}")
    return Bundle(bundle, build_id, tag)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bundle, Bundle]:
    root = tmp_path_factory.mktemp("bundles")
    return make_bundle(root, "v1"), make_bundle(root, "v2")


def run(
    bundle: Bundle, *args: str, shell: Sequence[str] = ("sh",), cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run([*shell, str(bundle.install), *args], capture_output=True, text=True,
                          check=False, cwd=cwd, env={**os.environ, **(env or {})})  # fmt: skip


# -- what a bin dir holds -------------------------------------------------------------------


def tree(root: Path) -> dict[str, str]:
    """Relative path → sha256 of a file, "dir", or "link:<target>", for everything under root."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = f"link:{os.readlink(path)}"
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class Expect:
    """The bundles a bin dir may hold, by build id; their runtime trees computed once."""

    def __init__(self, *bundles: Bundle) -> None:
        self.by_id = {b.build_id: (b, tree(b.dir / "runtime")) for b in bundles}

    def bundle_of(self, runtime_dir: Path) -> Bundle | None:
        """The bundle whose runtime ``runtime_dir`` is exactly (by its name and its tree)."""
        name = runtime_dir.name.removeprefix(RUNTIME_DIR)
        for build_id, (bundle, want) in self.by_id.items():
            if name == build_id or name.startswith(build_id + "."):
                return bundle if tree(runtime_dir) == want else None
        return None


def answer(path: Path) -> str:
    """Run an installed plugin name with a request; its stand-in's tag."""
    proc = subprocess.run([str(path)], input=REQUEST, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{path.name} does not answer: {proc.stderr.strip()}"
    return str(json.loads(proc.stdout)["tag"])


def plugin_names(prefix: str = "") -> list[str]:
    return [prefix + n for n in NAMES]


def check_names(bin_dir: Path, expect: Expect, prefix: str = "") -> dict[str, str | None]:
    """Every plugin name is absent or a link to a whole runtime that answers: name → tag."""
    found: dict[str, str | None] = {}
    for name in plugin_names(prefix):
        path = bin_dir / name
        if not path.is_symlink():
            assert not path.exists(), f"{name} is not a link"
            found[name] = None
            continue
        target = os.readlink(path)
        runtime = bin_dir / target.partition("/")[0]
        assert runtime.is_dir(), f"{name} -> {target} dangles"
        bundle = expect.bundle_of(runtime)
        assert bundle is not None, f"{name} -> {target}: not a whole runtime"
        assert answer(path) == bundle.tag
        found[name] = bundle.tag
    return found


def check_clean(bin_dir: Path, expect: Expect, want: Bundle, prefix: str = "") -> None:
    """Exactly the names and one whole runtime of ``want``: no lock, work dir or leftover."""
    tags = check_names(bin_dir, expect, prefix)
    assert set(tags.values()) == {want.tag}, tags
    entries = sorted(p.name for p in bin_dir.iterdir())
    runtimes = [e for e in entries if e.startswith(RUNTIME_DIR)]
    assert len(runtimes) == 1, entries
    assert sorted(plugin_names(prefix) + runtimes) == entries
    assert expect.bundle_of(bin_dir / runtimes[0]) == want  # whole: no nesting, nothing extra


# -- kill -9 at random points ---------------------------------------------------------------

KILL_POINTS = 100
LANES = 4


Counter = collections.Counter[tuple[str, str, str]]


def leftovers(bin_dir: Path) -> str:
    """What a killed run left: the lock, its work dir and what was in it (a copy being made,
    a runtime being deleted, a new link), for the summary of where the kills landed."""
    left = []
    for path in sorted(bin_dir.iterdir()):
        if path.name == ".credprov-plugins.lock":
            left.append("lock")
        elif path.name.startswith(".credprov-plugins-tmp."):
            inside = sorted({p.name.partition(".")[0] for p in path.iterdir()})
            left.append("work(" + "+".join(inside) + ")")
    return " ".join(left) or "nothing"


def kill_lane(lane: int, root: Path, v1: Bundle, v2: Bundle, expect: Expect) -> Counter:
    """KILL_POINTS / LANES rounds on one bin dir: start an operation, SIGKILL its process group
    at a random instant, check the names, then repair with one install and check it clean."""
    rng = random.Random(2100 + lane)
    shell = SHELLS[lane % len(SHELLS)]
    bin_dir = root / f"bin-{lane}"
    bin_dir.mkdir()
    current = v1
    assert run(current, "--bin-dir", str(bin_dir), shell=shell).returncode == 0
    window: dict[str, float] = {}
    outcomes: Counter = collections.Counter()
    for i in range(KILL_POINTS // LANES):
        op = rng.choice(("upgrade", "upgrade", "uninstall", "fresh"))
        other = v2 if current is v1 else v1
        if op == "fresh":  # an install into an empty bin dir
            assert (
                run(current, "--bin-dir", str(bin_dir), "--uninstall", shell=shell).returncode == 0
            )
        args = ["--bin-dir", str(bin_dir)] + (["--uninstall"] if op == "uninstall" else [])
        started = time.monotonic()
        proc = subprocess.Popen([*shell, str(other.install), *args], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        time.sleep(rng.uniform(0, window.get(op, 0.05)))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = proc.returncode == -signal.SIGKILL
        if not killed:
            window[op] = max(window.get(op, 0), (time.monotonic() - started) * 1.2)
        outcomes[(op, "killed" if killed else "finished", leftovers(bin_dir))] += 1
        check_names(bin_dir, expect)  # absent, or whole and answering: never half
        # One install repairs and cleans up; every other one with --no-verify (the defect's case).
        current = rng.choice((v1, v2))
        repair = ["--bin-dir", str(bin_dir)] + (["--no-verify"] if i % 2 else [])
        fixed = run(current, *repair, shell=shell)
        assert fixed.returncode == 0, fixed.stderr
        check_clean(bin_dir, expect, current)
    return outcomes


@pytest.mark.skipif(not SHELLS, reason="neither dash nor busybox")
def test_kill_9_at_random_points_leaves_every_name_whole_or_absent(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, v2 = bundles
    expect = Expect(v1, v2)
    started = time.monotonic()
    with ThreadPoolExecutor(LANES) as pool:
        lanes = list(pool.map(lambda n: kill_lane(n, tmp_path, v1, v2, expect), range(LANES)))
    total: Counter = sum(lanes, collections.Counter())
    assert sum(total.values()) == KILL_POINTS
    assert sum(n for (_op, how, _left), n in total.items() if how == "killed") >= KILL_POINTS // 2
    summary = ", ".join(
        f"{op}/{how}/left={left}: {n}" for (op, how, left), n in sorted(total.items())
    )
    print(f"\n{KILL_POINTS} kill points in {time.monotonic() - started:.1f}s: {summary}")


def kill_while(proc: subprocess.Popen[bytes], command: str) -> bool:
    """SIGKILL ``proc``'s process group while its shell runs ``command`` (a child process);
    False when it finished first."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            for child in children.read_text().split():
                stat = Path(f"/proc/{child}/stat").read_text()
                name, _, rest = stat.partition("(")[2].rpartition(")")
                if name == command and rest.split()[0] != "Z":  # running, not a zombie
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return True
    return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
def test_kill_9_while_an_upgrade_deletes_the_old_runtime(
    tmp_path: Path, shell: tuple[str, ...]
) -> None:
    """The old runtime is renamed away before rm -rf: a reinstall of the old version (with
    --no-verify, as the defect was found) copies it whole instead of linking into a half."""
    old = make_bundle(tmp_path, "old", fill=1500, size=64)  # many files: rm -rf takes a while
    new = make_bundle(tmp_path, "new", fill=2)
    expect = Expect(old, new)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert run(old, "--bin-dir", str(bin_dir), shell=shell).returncode == 0
    proc = subprocess.Popen([*shell, str(new.install), "--bin-dir", str(bin_dir)],
                            stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    if not kill_while(proc, "rm"):
        pytest.skip("the upgrade finished before its rm -rf was seen")
    assert check_names(bin_dir, expect) == dict.fromkeys(NAMES, "new")
    again = run(old, "--bin-dir", str(bin_dir), "--no-verify", shell=shell)
    assert again.returncode == 0, again.stderr
    check_clean(bin_dir, expect, old)


# -- concurrent installs --------------------------------------------------------------------


@pytest.mark.skipif(not SHELLS, reason="neither dash nor busybox")
def test_concurrent_installs_leave_one_whole_runtime(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, v2 = bundles
    expect = Expect(v1, v2)
    rng = random.Random(21)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for _round in range(6):
        chosen = [rng.choice((v1, v2)) for _ in range(rng.randint(2, 4))]
        procs = [subprocess.Popen([*rng.choice(SHELLS), str(b.install), "--bin-dir", str(bin_dir)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for b in chosen]  # fmt: skip
        results = [p.communicate() for p in procs]
        assert [p.returncode for p in procs] == [0] * len(procs), results
        tags = check_names(bin_dir, expect)
        (tag,) = set(tags.values())
        check_clean(bin_dir, expect, v1 if tag == "v1" else v2)


# -- locks left by others -------------------------------------------------------------------


def record(pid: int, *, ns: str | None = None, boot: str | None = None) -> str:
    """An owner record as install writes it, for process ``pid`` of this machine."""
    my_ns = os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    my_boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    stat = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()
    return (f"credprov-install:pid={pid}:ns={ns or my_ns}:boot={boot or my_boot}"
            f":start={stat[19]}")  # fmt: skip


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_lock_whose_owner_is_gone_is_broken(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gone = subprocess.Popen(["sleep", "0"])
    stale = record(gone.pid)
    gone.wait()
    cases = {
        "process gone": stale,
        "another boot": record(os.getpid(), boot="00000000-0000-0000-0000-000000000000"),
        "pid reused": record(os.getpid()).rpartition(":start=")[0] + ":start=1",
    }
    for why, text in cases.items():
        (bin_dir / ".credprov-plugins.lock").symlink_to(text)
        proc = run(v1, "--bin-dir", str(bin_dir))
        assert proc.returncode == 0, (why, proc.stderr)
        assert proc.stderr == f"install: removed the lock of an install that is gone ({text})\n"
        check_clean(bin_dir, Expect(v1), v1)


def test_a_live_lock_is_waited_for(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], sleeper: subprocess.Popen[bytes]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lock = bin_dir / ".credprov-plugins.lock"
    lock.symlink_to(record(sleeper.pid))
    proc = run(v1, "--bin-dir", str(bin_dir), env={"CREDPROV_INSTALL_LOCK_WAIT": "1"})
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"install: error: bin dir {bin_dir} is locked by another install ({os.readlink(lock)}) "
        f"for over 1s; remove {lock} if none is running"
    )
    assert sorted(p.name for p in bin_dir.iterdir()) == [lock.name]  # nothing touched
    # Released while a second install waits: it goes on.
    waiting = subprocess.Popen(["sh", str(v1.install), "--bin-dir", str(bin_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(0.3)
    assert waiting.poll() is None
    lock.unlink()
    _out, err = waiting.communicate(timeout=10)
    assert waiting.returncode == 0, err
    assert err.startswith("install: waiting for another install to finish (credprov-install:pid=")
    check_clean(bin_dir, Expect(v1), v1)


def test_a_lock_of_another_pid_namespace_is_a_lease(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    """Its pid means nothing here: it is stale once its owner stops refreshing it (30 s)."""
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lock = bin_dir / ".credprov-plugins.lock"
    lock.symlink_to(record(os.getpid(), ns="1"))
    fresh = run(v1, "--bin-dir", str(bin_dir), env={"CREDPROV_INSTALL_LOCK_WAIT": "1"})
    assert fresh.returncode == 1 and "is locked by another install" in fresh.stderr
    old = time.time() - 31
    os.utime(lock, (old, old), follow_symlinks=False)
    lapsed = run(v1, "--bin-dir", str(bin_dir))
    assert lapsed.returncode == 0, lapsed.stderr
    check_clean(bin_dir, Expect(v1), v1)


def test_a_lock_left_by_a_killed_breaker_is_removed(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gone = subprocess.Popen(["sleep", "0"])
    stale = record(gone.pid)
    gone.wait()
    (bin_dir / ".credprov-plugins.lock").symlink_to(stale)
    (bin_dir / ".credprov-plugins.lock.break").symlink_to(stale)
    assert run(v1, "--bin-dir", str(bin_dir)).returncode == 0
    check_clean(bin_dir, Expect(v1), v1)
    (bin_dir / ".credprov-plugins.lock.break").symlink_to(stale)  # without a lock
    assert run(v1, "--bin-dir", str(bin_dir)).returncode == 0
    check_clean(bin_dir, Expect(v1), v1)


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_something_else_at_the_lock_name_is_refused(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], kind: str
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lock = bin_dir / ".credprov-plugins.lock"
    lock.mkdir() if kind == "dir" else lock.write_text("x")
    proc = run(v1, "--bin-dir", str(bin_dir))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"install: error: {lock} is not a lock this installer made; remove it\n"
    assert [p.name for p in bin_dir.iterdir()] == [lock.name]
    if kind == "dir":
        assert list(lock.iterdir()) == []


# -- repair ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
def test_a_damaged_runtime_in_use_is_repaired_without_a_dangling_name(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], shell: tuple[str, ...]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert run(v1, "--bin-dir", str(bin_dir), shell=shell).returncode == 0
    damaged = bin_dir / f"{RUNTIME_DIR}{v1.build_id}"
    for victim in sorted((damaged / "_internal").iterdir())[:5]:  # a half-deleted runtime
        victim.unlink()
    (damaged / "_internal" / "fill-010").write_bytes(b"truncated")
    # Only one name asked for: the others use the same build's dir and are repaired too.
    proc = run(v1, "--bin-dir", str(bin_dir), "--no-verify", NAMES[0], shell=shell)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith(f"unpacked: {bin_dir}/{RUNTIME_DIR}{v1.build_id}.")
    others = sorted(f"repaired: {bin_dir}/{n}" for n in NAMES[1:])
    assert out[1:] == [f"repaired: {bin_dir}/{NAMES[0]}", *others, f"removed: {damaged}"]
    check_clean(bin_dir, Expect(v1), v1)
    again = run(v1, "--bin-dir", str(bin_dir), shell=shell)
    assert again.stdout.splitlines() == [f"unchanged: {bin_dir}/{n}" for n in NAMES]


def test_a_damaged_runtime_nothing_uses_is_replaced_under_its_name(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    half = bin_dir / f"{RUNTIME_DIR}{v1.build_id}"
    shutil.copytree(v1.dir / "runtime", half)
    shutil.rmtree(half / "_internal")  # as a kill during an older installer's clean-up left it
    proc = run(v1, "--bin-dir", str(bin_dir), "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"unpacked: {half}"
    check_clean(bin_dir, Expect(v1), v1)


def test_leftovers_of_older_installers_are_removed(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert run(v1, "--bin-dir", str(bin_dir)).returncode == 0
    target = os.readlink(bin_dir / NAMES[0])
    (bin_dir / f".{NAMES[1]}.tmp.4242").symlink_to(target)
    (bin_dir / ".credprov-plugins-probe.4242").write_text("")
    shutil.copytree(v1.dir / "runtime", bin_dir / f"{RUNTIME_DIR}{v1.build_id}.tmp.4242")
    (bin_dir / ".credprov-plugins-tmp.AbC123").mkdir()
    proc = run(v1, "--bin-dir", str(bin_dir))
    assert proc.stdout.splitlines() == [f"unchanged: {bin_dir}/{n}" for n in NAMES]
    check_clean(bin_dir, Expect(v1), v1)


def test_temporary_names_are_not_predictable_or_followed(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    """The names older versions used (.<name>.tmp.<pid>, .credprov-plugins-probe.<pid>),
    planted as symlinks for the pid install will have (exec keeps it), are not written
    through."""
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    victim = tmp_path / "precious"
    victim.write_text("precious\n")
    plant = " ".join(f'ln -s {victim} "$1/{n}.$$";' for n in
                     [".credprov-plugins-probe", *(f".{p}.tmp" for p in NAMES)])  # fmt: skip
    proc = subprocess.run(["sh", "-c", f'{plant} exec sh "$0" --bin-dir "$1"',
                           str(v1.install), str(bin_dir)], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert check_names(bin_dir, Expect(v1)) == dict.fromkeys(NAMES, "v1")


# -- refusals and messages ------------------------------------------------------------------

ERRORS = {
    "empty name": (["BIN", ""], 2, "an empty plugin name; name plugins from: " + " ".join(NAMES)),
    "empty name after --": (["BIN", "--", ""], 2, "an empty plugin name; name plugins from: "
                            + " ".join(NAMES)),
    "option-like name after --": (["BIN", "--", "--force"], 1, "unknown plugin --force; this "
                                  "bundle has: " + " ".join(NAMES)),
    "a lone dash": (["BIN", "-"], 1, "unknown plugin -; this bundle has: " + " ".join(NAMES)),
    "empty bin dir": (["--bin-dir", ""], 2, "--bin-dir is empty"),
    "bin dir needs a value": (["--bin-dir"], 2, "--bin-dir needs a value"),
    "other prefix": (["BIN", "--prefix", "eks-"], 2, "--prefix eks-: only credprov- is "
                     "supported (the runtime strips exactly that prefix)"),
    "bad prefix": (["BIN", "--prefix=credprov"], 2, "--prefix credprov: a prefix is "
                   "[a-z0-9][a-z0-9._-]*- and only credprov- is supported"),
    "empty prefix": (["BIN", "--prefix", ""], 2, "--prefix needs a value"),
    "node root alone": (["BIN", "--node-root", "/"], 2, "--node-root and --node-bin-dir go "
                        "together"),
    "relative node bin dir": (["BIN", "--node-root", "/", "--node-bin-dir", "bin"], 2,
                              "--node-bin-dir bin: want the bin dir's absolute path on the node"),
    "node bin dir elsewhere": (["BIN", "--node-root", "/", "--node-bin-dir", "/usr"], 1,
                               "--node-bin-dir /usr inside --node-root / is not the bin dir BIN"),
    "unknown option": (["BIN", "--bogus"], 2, "unknown option --bogus"),
    "bin dir with a newline": (["--bin-dir", "/nonexistent/x\ny"], 1,
                               "bin dir /nonexistent/x\\ny does not exist (create it first)"),
}  # fmt: skip


@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
@pytest.mark.parametrize("args, code, line", ERRORS.values(), ids=ERRORS.keys())
def test_refusals_are_one_line_and_touch_nothing(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], shell: tuple[str, ...],
    args: list[str], code: int, line: str,
) -> None:  # fmt: skip
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv = [a for arg in args for a in (["--bin-dir", str(bin_dir)] if arg == "BIN" else [arg])]
    proc = run(v1, *argv, shell=shell)
    assert (proc.returncode, proc.stdout) == (code, "")
    assert proc.stderr == f"install: error: {line.replace('BIN', str(bin_dir))}\n"
    assert list(bin_dir.iterdir()) == []


def test_a_directory_at_a_plugin_name_is_refused_even_with_force(
    tmp_path: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    (bin_dir / NAMES[1]).mkdir(parents=True)
    (bin_dir / NAMES[1] / "keep").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (bin_dir / NAMES[2]).symlink_to(elsewhere)  # a foreign link to a dir: replaced, not entered
    proc = run(v1, "--bin-dir", str(bin_dir), "--force")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (f"install: error: {bin_dir}/{NAMES[1]} is a directory; refusing to "
                           "replace it (also with --force)\n")  # fmt: skip
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(NAMES[1:])
    proc = run(v1, "--bin-dir", str(bin_dir), "--force", NAMES[0], NAMES[2])
    assert proc.returncode == 0, proc.stderr
    assert list(elsewhere.iterdir()) == []
    assert os.readlink(bin_dir / NAMES[2]).startswith(RUNTIME_DIR)


@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
@pytest.mark.parametrize("rel", ["-", "-dash", "trailing\n", "with space"])
def test_a_relative_bin_dir_is_resolved_safely(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], shell: tuple[str, ...], rel: str
) -> None:
    v1, _v2 = bundles
    work = tmp_path / "cwd"
    (work / rel).mkdir(parents=True)
    decoy = tmp_path / "cdpath"
    (decoy / rel).mkdir(parents=True)  # CDPATH would pick this one
    proc = run(v1, "--bin-dir", rel, shell=shell, cwd=work,
               env={"CDPATH": str(decoy), "OLDPWD": str(decoy / rel)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = str(work / rel).replace("\n", "\\n")
    assert proc.stdout.splitlines()[1:] == [f"installed: {shown}/{n}" for n in NAMES]
    assert check_names(work / rel, Expect(v1)) == dict.fromkeys(NAMES, "v1")
    assert list((decoy / rel).iterdir()) == []


LOADER = "error while loading shared libraries: libz.so.1: cannot open shared object file"


def test_a_runtime_that_cannot_run_here_names_the_loaders_words_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    bundle = make_bundle(tmp_path, "bad", fill=2, list_fails=LOADER)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "other-plugin").write_text("x")
    proc = run(bundle, "--bin-dir", str(bin_dir))
    needs = (bundle.dir / "REQUIREMENTS").read_text().strip()
    runtime = f"{bin_dir}/{RUNTIME_DIR}{bundle.build_id}/credprov-plugins"
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (f"install: error: the runtime cannot run on this node: {LOADER} (ran "
                           f"{runtime} --list, on this host: exit 127); it needs {needs}\n")  # fmt: skip
    assert [p.name for p in bin_dir.iterdir()] == ["other-plugin"]  # no runtime left behind


def node_root_with_busybox(tmp_path: Path) -> Path:
    """A root with only a static busybox as /bin/sh: enough for the stand-in under chroot."""
    busybox = shutil.which("busybox")
    if busybox is None or os.geteuid() != 0:
        pytest.skip("needs busybox and root (chroot)")
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    shutil.copyfile(busybox, root / "bin" / "busybox")
    (root / "bin" / "busybox").chmod(0o755)
    (root / "bin" / "sh").symlink_to("busybox")
    (root / "opt" / "bin").mkdir(parents=True)
    return root


def test_node_root_verifies_inside_the_root(tmp_path: Path, bundles: tuple[Bundle, Bundle]) -> None:
    v1, _v2 = bundles
    root = node_root_with_busybox(tmp_path)
    bin_dir = root / "opt" / "bin"
    args = ["--bin-dir", str(bin_dir), "--node-root", str(root), "--node-bin-dir", "/opt/bin"]
    proc = run(v1, *args)
    assert proc.returncode == 0, proc.stderr
    check_clean(bin_dir, Expect(v1), v1)
    # Without a shell in the root, the stand-in cannot run there (as a runtime without the
    # node's glibc): refused, the new runtime removed, the installed names untouched.
    (root / "bin" / "sh").unlink()
    proc = run(make_bundle(tmp_path, "v3", fill=2), *args)
    assert proc.returncode == 1
    assert proc.stderr.startswith("install: error: the runtime cannot run on this node: chroot: ")
    assert f"(ran chroot {root} /opt/bin/{RUNTIME_DIR}" in proc.stderr
    assert "--list, inside --node-root: exit 127); it needs linux/" in proc.stderr
    check_clean(bin_dir, Expect(v1), v1)


@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
def test_prefix_installs_and_uninstalls_prefixed_names_next_to_the_nodes_own(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], shell: tuple[str, ...]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ecr-credential-provider").write_text("#!/bin/sh\n# the node's own\n")
    proc = run(v1, "--bin-dir", str(bin_dir), "--prefix", "credprov-", shell=shell)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == [f"installed: {bin_dir}/credprov-{n}" for n in NAMES]
    assert check_names(bin_dir, Expect(v1), prefix="credprov-") == {
        f"credprov-{n}": "v1" for n in NAMES
    }
    assert (bin_dir / "ecr-credential-provider").read_text() == "#!/bin/sh\n# the node's own\n"
    gone = run(v1, "--bin-dir", str(bin_dir), "--prefix=credprov-", "--uninstall", shell=shell)
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines()[:3] == [f"uninstalled: {bin_dir}/credprov-{n}" for n in NAMES]
    assert [p.name for p in bin_dir.iterdir()] == ["ecr-credential-provider"]


def test_runtime_strips_the_credprov_prefix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []
    table = {"docker-credential-credprov": "x:y", "ecr-credential-provider": "x:y"}

    class Module:
        @staticmethod
        def y() -> int:
            seen.append(sys.argv[0])
            return 0

    monkeypatch.setitem(sys.modules, "x", Module)  # type: ignore[arg-type]
    for argv0 in ("/b/credprov-ecr-credential-provider", "/b/credprov-docker-credential-credprov",
                  "/b/docker-credential-credprov"):  # fmt: skip
        monkeypatch.setattr(sys, "argv", [argv0])
        assert _multicall.main(table, {}) == 0
    assert len(seen) == 3
    for argv0 in ("/b/credprov-nope", "/b/credprov-", "/b/eks-ecr-credential-provider"):
        monkeypatch.setattr(sys, "argv", [argv0])
        assert _multicall.main(table, {}) == 2
        assert "which is not a plugin name" in capsys.readouterr().err


def test_help_describes_every_option(bundles: tuple[Bundle, Bundle]) -> None:
    v1, _v2 = bundles
    proc = run(v1, "--help")
    assert proc.returncode == 0
    for word in ("--bin-dir", "--force", "--uninstall", "--no-verify", "--prefix credprov-",
                 "--node-root", "--node-bin-dir", "--list", "--version", "lock",
                 "CREDPROV_INSTALL_LOCK_WAIT", "MANIFEST"):  # fmt: skip
        assert word in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 92


def test_version_prints_the_build_id_and_the_requirements(bundles: tuple[Bundle, Bundle]) -> None:
    """``install --version``: what the bundle needs (the floor) and carries, from files
    written by ``assemble`` (no runtime is run)."""
    v1, _v2 = bundles
    proc = run(v1, "--version")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"credprov-plugins {v1.build_id}"
    requirements = (v1.dir / "REQUIREMENTS").read_text().splitlines()
    assert lines[1:] == requirements
    assert "glibc >= 2.17 (the floor: manylinux2014" in lines[1]


# -- a full or read-only bin dir ------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only); unmounted afterwards."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                                            str(mnt)], capture_output=True).returncode:  # fmt: skip
        pytest.skip("needs root and mount")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_bin_dir_says_what_failed_and_leaves_nothing(
    small_fs: Path, bundles: tuple[Bundle, Bundle]
) -> None:
    v1, _v2 = bundles
    proc = run(v1, "--bin-dir", str(small_fs))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith(
        f"install: error: cannot copy the runtime into bin dir {small_fs}: cp: "
    )
    assert proc.stderr.endswith(": No space left on device\n") and proc.stderr.count("\n") == 1
    assert list(small_fs.iterdir()) == []


def test_a_read_only_bin_dir_says_so(small_fs: Path, bundles: tuple[Bundle, Bundle]) -> None:
    v1, _v2 = bundles
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    proc = run(v1, "--bin-dir", str(small_fs))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith(f"install: error: cannot write in bin dir {small_fs}: ln: ")
    assert proc.stderr.endswith("Read-only file system\n") and proc.stderr.count("\n") == 1


@pytest.fixture
def current_fs(tmp_path: Path, bundles: tuple[Bundle, Bundle]) -> Iterator[Path]:
    """A tmpfs (root only) holding v1, installed; unmounted afterwards."""
    mnt = tmp_path / "current"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs",
                                            str(mnt)], capture_output=True).returncode:  # fmt: skip
        pytest.skip("needs root and mount")
    try:
        assert run(bundles[0], "--bin-dir", str(mnt)).returncode == 0
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read-only"])
@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
def test_a_current_install_is_a_no_op_that_writes_nothing(
    current_fs: Path, bundles: tuple[Bundle, Bundle], shell: tuple[str, ...], read_only: bool
) -> None:
    """An unchanged reinstall takes no lock and writes nothing: it exits 0 on a read-only
    bin dir (a baked image) and leaves the dir's mtime alone."""
    v1, _v2 = bundles
    if read_only:
        subprocess.run(["mount", "-o", "remount,ro", str(current_fs)], check=True)
    before = (tree(current_fs), current_fs.stat().st_mtime_ns)
    proc = run(v1, "--bin-dir", str(current_fs), shell=shell)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [f"unchanged: {current_fs}/{n}" for n in NAMES]
    assert (tree(current_fs), current_fs.stat().st_mtime_ns) == before


@pytest.mark.parametrize("shell", SHELLS, ids=SHELL_IDS)
def test_prune_removes_what_this_installer_wrote_and_no_longer_lists(
    tmp_path: Path, bundles: tuple[Bundle, Bundle], shell: tuple[str, ...]
) -> None:
    v1, _v2 = bundles
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "other-plugin").write_text("#!/bin/sh\n")  # not ours: never touched
    assert run(v1, "--bin-dir", str(bin_dir), shell=shell).returncode == 0
    assert run(v1, "--bin-dir", str(bin_dir), "--prefix", "credprov-", NAMES[0]).returncode == 0
    # Without --prune, narrowing leaves the earlier plugins (the documented default).
    kept = run(v1, "--bin-dir", str(bin_dir), NAMES[0], shell=shell)
    assert kept.stdout.splitlines() == [f"unchanged: {bin_dir}/{NAMES[0]}"]
    assert all((bin_dir / n).is_symlink() for n in NAMES)
    pruned = run(v1, "--bin-dir", str(bin_dir), "--prune", NAMES[0], shell=shell)
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.splitlines() == [f"unchanged: {bin_dir}/{NAMES[0]}"] + [
        f"uninstalled: {bin_dir}/{n} (not in the plugins named, --prune)" for n in sorted(NAMES[1:])
    ]
    assert sorted(p.name for p in bin_dir.iterdir() if not p.name.startswith(".")) == sorted(
        [NAMES[0], f"credprov-{NAMES[0]}", "other-plugin"]  # another prefix: not this run's
    )
    assert answer(bin_dir / NAMES[0]) == "v1"
    again = run(v1, "--bin-dir", str(bin_dir), "--prune", NAMES[0], shell=shell)
    assert again.stdout.splitlines() == [f"unchanged: {bin_dir}/{NAMES[0]}"]
