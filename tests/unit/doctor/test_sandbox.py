"""The doctor runs plugins safely: by the kubelet's path, inside ``--node-root`` confined, within an
overall deadline.

Real subprocess plugins (``sh`` scripts run by a static busybox copied into fixture roots);
confinement needs root (CI runs as root), so those tests skip otherwise.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov._go.durations import MILLISECOND, MINUTE, SECOND
from credprov.api import internal
from credprov.base.rootfs import NodeRoot
from credprov.cli.main import main
from credprov.credentialprovider.plugin.exec import ExecPlugin
from credprov.doctor import DoctorOptions, Report, plugin_runs, render_text, run_doctor, sandbox
from credprov.doctor.binaries import DEFAULT_PATH
from credprov.doctor.plugin_runs import PluginDeadline, PluginRuns
from credprov.doctor.sandbox import (
    CACHE_DIR_ENV,
    HostLauncher,
    RootLauncher,
    RootPlan,
    SandboxError,
    plan_root,
)
from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import BIN, CANARY, PROVIDERS, write

V1 = "credentialprovider.kubelet.k8s.io/v1"
REQUEST = internal.CredentialProviderRequest(image="registry-a.example.com/team/app")

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not nodes.busybox_available(),
    reason="confining a plugin needs root (a private mount namespace, chroot) and a static "
    "/bin/busybox for the fixture roots",
)


def _answer(auth_key: str) -> str:
    """sh that prints a valid v1 answer for ``auth_key`` with $PASSWORD."""
    return (
        'printf \'%s\' \'{"kind":"CredentialProviderResponse","apiVersion":'
        f'"{V1}","cacheKeyType":"Registry","cacheDuration":"5m","auth":{{"{auth_key}":\'\n'
        'printf \'{"username":"doctor","password":"%s"}}}\\n\' "$PASSWORD"\n'
    )


def _plugin(root: Path, name: str, text: str, mode: int = 0o755) -> Path:
    return write(root, f"{BIN}/{name}", text, mode)


def _responds(report: Report) -> dict[str, tuple[str, str]]:
    return {c.subject: (str(c.status), c.message) for c in report.by_id("plugin.responds")}


def _tree(root: Path) -> list[tuple[str, ...]]:
    """Every entry of a tree with its type, mode, owner, size, mtime and link target."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
            out.append(
                (
                    os.path.relpath(path, root),
                    oct(st.st_mode),
                    str(st.st_uid),
                    str(st.st_size),
                    str(st.st_mtime_ns),
                    target,
                )
            )
    return sorted(out)


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


# -- (a) the kubelet's path: multicall plugins dispatch on their name -------------------------------

MULTICALL = """#!/bin/sh
name=$(basename "$0")
case "$name" in
{cases}
  *) echo "multicall: started as '$name', which is not a plugin name" >&2; exit 2 ;;
esac
cat >/dev/null
{answer}"""


def _multicall(runtime: Path, link_target: str, bin_dir: Path) -> None:
    """One runtime that answers as whichever provider it was started as, and every
    provider's name in ``bin_dir`` a symlink to it (as credprov's bundle installs)."""
    cases = "\n".join(f"  {name}) auth='{pattern}' ;;" for name, pattern, _ in PROVIDERS)
    runtime.parent.mkdir(parents=True, exist_ok=True)
    runtime.write_text(MULTICALL.format(cases=cases, answer=_answer("'\"$auth\"'")))
    runtime.chmod(0o755)
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, _, _ in PROVIDERS:
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).symlink_to(link_target)


@needs_root
def test_multicall_plugin_dispatches_inside_the_root(node: Path) -> None:
    # An absolute link, as the node sees it: inside the root it names the runtime.
    _multicall(node / "opt/credprov/runtime", "/opt/credprov/runtime", node / BIN.lstrip("/"))
    got = _responds(run_doctor(DoctorOptions(root=str(node))))
    assert {status for status, _ in got.values()} == {"pass"}, got


def test_multicall_plugin_dispatches_on_this_host(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _multicall(
        tmp_path / "runtime/credprov-plugins", str(tmp_path / "runtime/credprov-plugins"), bin_dir
    )
    config = tmp_path / "config.json"
    config.write_text(nodes.provider_config(token_provider=False))
    report = run_doctor(DoctorOptions(config=str(config), bin_dir=str(bin_dir)))
    got = _responds(report)
    assert {status for status, _ in got.values()} == {"pass"}, got


# -- (b) confinement: who, where, which environment, which files -----------------------------------

OBSERVER = """#!/bin/sh
cat >/dev/null
echo "uid=$(id -u)"
echo "gid=$(id -g)"
echo "groups=$(id -G)"
echo "cwd=$(pwd)"
if cat {host_file} >/dev/null 2>&1; then echo "host-file=seen"; else echo "host-file=hidden"; fi
if echo x >/etc/written 2>/dev/null; then echo "node=written"; else echo "node=read-only"; fi
echo "dev=$(ls /dev | tr '\\n' ' ')"
env | sort | while read -r line; do echo "env:$line"; done
"""

SELF_CHECK = """#!/bin/sh
cat >/dev/null
fail() {{ echo "not confined: $*" >&2; exit 1; }}
[ "$(id -u)" = 0 ] || fail "uid $(id -u)"
[ "$(id -g)" = 0 ] || fail "gid $(id -g)"
[ "$(id -G)" = 0 ] || fail "groups $(id -G)"
[ "$(pwd)" = / ] || fail "cwd $(pwd)"
[ -e {host_file} ] && fail "sees the host file"
[ -z "$DOCTOR_ENV_CANARY" ] || fail "has the doctor's environment"
[ "$PATH" = "{path}" ] || fail "PATH $PATH"
[ "$CREDPROV_PLUGIN_CACHE_DIR" = /tmp ] || fail "cache dir $CREDPROV_PLUGIN_CACHE_DIR"
# busybox sh itself exports PWD and SHLVL
names=$(env | cut -d= -f1 | sort | tr '\\n' ' ')
[ "$names" = "CREDPROV_PLUGIN_CACHE_DIR PASSWORD PATH PWD SHLVL " ] || fail "env $names"
{answer}"""


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    """A file only this machine has (outside every root)."""
    path = tmp_path / f"host-only-{uuid.uuid4().hex}"
    path.write_text("host secret\n")
    path.chmod(0o644)
    return path


@needs_root
def test_plugin_runs_confined_as_the_kubelet_root_with_its_environment_only(
    node: Path, host_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCTOR_ENV_CANARY", "doctor-env-" + uuid.uuid4().hex)
    _plugin(
        node,
        "mirror-provider",
        SELF_CHECK.format(
            host_file=host_file, path=DEFAULT_PATH, answer=_answer("mirror.example.com:5000")
        ),
    )
    got = _responds(run_doctor(DoctorOptions(root=str(node))))
    assert got["mirror-provider"][0] == "pass", got


@needs_root
@pytest.mark.parametrize("mount_setattr", [True, False], ids=["mount_setattr", "remount"])
def test_root_launcher_observations(
    node: Path, host_file: Path, monkeypatch: pytest.MonkeyPatch, mount_setattr: bool
) -> None:
    """The same, read from the plugin's own output through the launcher the doctor uses;
    also with the read-only remount kernels before 5.12 get (no mount_setattr)."""
    monkeypatch.setenv("DOCTOR_ENV_CANARY", "doctor-env-canary")
    if not mount_setattr:
        monkeypatch.setattr(sandbox, "_SYS_MOUNT_SETATTR", 1 << 20)  # ENOSYS
    _plugin(node, "observer", OBSERVER.format(host_file=host_file))
    plan = plan_root(NodeRoot(str(node)))
    env = [internal.ExecEnvVar("PASSWORD", CANARY), internal.ExecEnvVar(CACHE_DIR_ENV, "/var/x")]
    with RootLauncher(plan) as launcher:
        plugin = ExecPlugin("observer", f"{BIN}/observer", V1, env=env, launcher=launcher)
        out = plugin.run(REQUEST).stdout.decode()
        assert launcher.failure() is None
    lines = out.splitlines()
    facts = dict(line.split("=", 1) for line in lines if not line.startswith("env:"))
    assert facts == {
        "uid": "0",
        "gid": "0",
        "groups": "0",
        "cwd": "/",
        "host-file": "hidden",
        "node": "read-only",
        "dev": "full null random urandom zero ",
    }
    environ = dict(line[4:].split("=", 1) for line in lines if line.startswith("env:"))
    for own in ("PWD", "SHLVL"):  # busybox sh's own
        environ.pop(own)
    # The provider's env, PATH, and the private cache dir (winning over the provider's).
    assert environ == {"PASSWORD": CANARY, "PATH": DEFAULT_PATH, CACHE_DIR_ENV: "/tmp"}


def test_host_launcher_runs_as_the_kubelet_would_with_a_throwaway_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCTOR_ENV_CANARY", "inherited")
    monkeypatch.chdir(tmp_path)
    script = write(
        tmp_path,
        "/bin/plugin",
        '#!/bin/sh\ncat >/dev/null\necho "$(pwd) $DOCTOR_ENV_CANARY $PASSWORD '
        '$CREDPROV_PLUGIN_CACHE_DIR"\necho secret >"$CREDPROV_PLUGIN_CACHE_DIR/answer"\n',
        0o755,
    )
    with HostLauncher() as launcher:
        plugin = ExecPlugin(
            "plugin", str(script), V1, env=[internal.ExecEnvVar("PASSWORD", "p")], launcher=launcher
        )
        cwd, inherited, password, cache = plugin.run(REQUEST).stdout.decode().split()
        assert (Path(cache) / "answer").read_text() == "secret\n"
    assert (cwd, inherited, password) == ("/", "inherited", "p")
    assert not Path(cache).exists()


# -- (c) the node's interpreter and loader, not this machine's --------------------------------------


@needs_root
def test_interpreter_only_the_root_has_runs(node: Path) -> None:
    nodes.install_busybox(node, "/node-only/bin", applets=())
    assert not Path("/node-only/bin/busybox").exists()
    _plugin(
        node,
        "mirror-provider",
        "#!/node-only/bin/busybox sh\ncat >/dev/null\n" + _answer("mirror.example.com:5000"),
    )
    got = _responds(run_doctor(DoctorOptions(root=str(node))))
    assert got["mirror-provider"][0] == "pass", got


@needs_root
def test_the_nodes_loader_starts_the_plugin(tmp_path: Path) -> None:
    """``/bin/sh`` is this machine's dynamic shell but the root's loader is an empty file:
    runnable by its headers, yet it cannot start on that node, so it must fail here."""
    root = nodes.kubeadm_node(tmp_path / "node", shell="host")
    report = run_doctor(DoctorOptions(root=str(root)))
    assert {str(c.status) for c in report.by_id("plugin.runnable")} == {"pass"}
    got = _responds(report)
    assert {status for status, _ in got.values()} == {"fail"}, got
    assert all("fork/exec" in message for _, message in got.values())


# -- (d) nothing left behind ------------------------------------------------------------------------

CACHING = """#!/bin/sh
cat >/dev/null
cache="${{CREDPROV_PLUGIN_CACHE_DIR:-$(dirname "$0")/../cache}}/$(basename "$0")"
mkdir -p "$cache" && echo "$PASSWORD" >"$cache/answer"
echo "$PASSWORD" >/tmp/scratch
{answer}"""


@needs_root
def test_nothing_is_left_in_the_root(
    node: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))
    for name, pattern, _ in PROVIDERS:
        _plugin(node, name, CACHING.format(answer=_answer(pattern)))
    before = _tree(node)
    got = _responds(run_doctor(DoctorOptions(root=str(node))))
    assert {status for status, _ in got.values()} == {"pass"}, got
    assert _tree(node) == before
    assert list((node / "tmp").iterdir()) == []
    assert list(host_tmp.iterdir()) == []  # scratch directories removed too


# -- where the private mounts go --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        pytest.param({"tmp": None, "run": None, "dev": None}, ("/tmp", "/tmp", "/dev"), id="plain"),
        pytest.param({"run": None}, ("/run", "/run", None), id="no /tmp, no /dev"),
        pytest.param(
            {"var/tmp": None, "tmp": "/var/tmp"}, ("/var/tmp", "/tmp", None), id="/tmp a link"
        ),
        pytest.param({"tmp": "/", "run": None}, ("/run", "/run", None), id="/tmp links to /"),
        pytest.param({"tmp": "../../../etc", "run": None}, ("/run", "/run", None), id="escape"),
        pytest.param({"dev": "/", "tmp": None}, ("/tmp", "/tmp", None), id="/dev links to /"),
        pytest.param({}, None, id="neither /tmp nor /run"),
    ],
)
def test_plan_root_mounts_only_on_directories_inside_the_root(
    tmp_path: Path, layout: dict[str, str | None], expected: tuple[str, str, str | None] | None
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for path, link in layout.items():
        if link is None:
            (root / path).mkdir(parents=True)
        else:
            (root / path).symlink_to(link)
    if expected is None:
        with pytest.raises(SandboxError, match="find /tmp or /run"):
            plan_root(NodeRoot(str(root)))
        return
    plan = plan_root(NodeRoot(str(root)))
    assert (plan.cache, plan.cache_dir, plan.dev) == expected


# -- the kubelet's identity: root, with only the capabilities to read -----------------------------

READS_ROOT_ONLY_FILE = """#!/bin/sh
cat >/dev/null
# A credentials file only root may read, as the kubelet's plugins usually have.
PASSWORD=$(cat /etc/credprov/root-only) || exit 1
{answer}"""


@needs_root
@pytest.mark.parametrize(
    ("file_mode", "plugin_mode"),
    [
        pytest.param(0o600, 0o755, id="0600 root credentials"),
        pytest.param(0o600, 0o700, id="0700 root plugin, 0600 credentials"),
        pytest.param(0o400, 0o500, id="read-only for root alone"),
    ],
)
def test_root_only_files_and_plugins_pass_as_the_kubelet_runs_them(
    node: Path, file_mode: int, plugin_mode: int
) -> None:
    """The kubelet runs plugins as root: a plugin and credentials only root may use must
    pass, not FAIL with 'Permission denied' (nor skip)."""
    write(node, "/etc/credprov/root-only", f"{CANARY}-root-only\n", file_mode)
    (node / "etc/credprov").chmod(0o700)
    _plugin(
        node,
        "mirror-provider",
        READS_ROOT_ONLY_FILE.format(answer=_answer("mirror.example.com:5000")),
        plugin_mode,
    )
    report = run_doctor(DoctorOptions(root=str(node)))
    status, message = _responds(report)["mirror-provider"]
    assert status == "pass", message
    assert CANARY not in render_text(report)


ESCAPES = """#!/bin/sh
cat >/dev/null
mount -o remount,rw / 2>/dev/null && echo "remount=done" || echo "remount=refused"
mount -t tmpfs none /mnt 2>/dev/null && echo "mount=done" || echo "mount=refused"
chroot /mnt /bin/true 2>/dev/null && echo "chroot=done" || echo "chroot=refused"
grep -E '^(Cap|NoNewPrivs)' /proc/self/status 2>/dev/null | tr -d '\t' | tr ':' '='
"""


@needs_root
def test_root_inside_keeps_no_capability_that_undoes_the_confinement(node: Path) -> None:
    nodes.install_busybox(node, "/bin", applets=("mount", "chroot", "grep", "tr", "true"))
    (node / "mnt").mkdir(exist_ok=True)
    (node / "proc").mkdir(exist_ok=True)
    _plugin(node, "observer", ESCAPES)
    plan = plan_root(NodeRoot(str(node)))
    subprocess.run(["mount", "-t", "proc", "proc", str(node / "proc")], check=True)
    try:
        with RootLauncher(plan) as launcher:
            plugin = ExecPlugin("observer", f"{BIN}/observer", V1, launcher=launcher)
            out = plugin.run(REQUEST).stdout.decode()
            assert launcher.failure() is None
    finally:
        subprocess.run(["umount", "-l", str(node / "proc")], check=False)
    facts = dict(line.split("=", 1) for line in out.splitlines())
    kept = f"{(1 << 1) | (1 << 3):016x}"  # CAP_DAC_OVERRIDE, CAP_FOWNER: no DAC_READ_SEARCH
    assert facts == {
        "remount": "refused",
        "mount": "refused",
        "chroot": "refused",
        "CapInh": "0" * 16,
        "CapPrm": kept,
        "CapEff": kept,
        "CapBnd": kept,
        "CapAmb": "0" * 16,
        "NoNewPrivs": "1",
    }, out


# -- (e) the overall deadline -----------------------------------------------------------------------


def _hung_node(root: Path, count: int) -> Path:
    nodes.kubeadm_node(root)
    providers = [
        {
            "name": f"hung-{i}",
            "matchImages": [f"registry-{i}.example.com"],
            "defaultCacheDuration": "1m",
            "apiVersion": V1,
        }
        for i in range(count)
    ]
    write(
        root,
        nodes.CONFIG,
        json.dumps(
            {
                "apiVersion": "kubelet.config.k8s.io/v1",
                "kind": "CredentialProviderConfig",
                "providers": providers,
            }
        ),
    )
    for i in range(count):
        _plugin(root, f"hung-{i}", "#!/bin/sh\nsleep 30\n")
    return root


@needs_root
def test_hung_plugins_cost_one_overall_deadline(tmp_path: Path) -> None:
    root = _hung_node(tmp_path / "node", 6)
    start = time.monotonic()
    report = run_doctor(
        DoctorOptions(
            root=str(root),
            plugin_timeout_ns=200 * MILLISECOND,
            plugin_deadline_ns=400 * MILLISECOND,
        )
    )
    took = time.monotonic() - start
    got = _responds(report)
    # Each run: 200ms or what is left of 400ms. Six in a row would take 1.2s.
    assert took < 0.9, took
    assert got["hung-0"][0] == "fail" and "context deadline exceeded" in got["hung-0"][1]
    assert got["hung-1"][0] == "skip" and "overall deadline (400ms) ran out" in got["hung-1"][1]
    for name in ("hung-2", "hung-3", "hung-4", "hung-5"):
        assert got[name] == (
            "skip",
            "not run: the plugins' overall deadline (400ms) was spent (hung: hung-0, hung-1); "
            "raise --plugins-deadline or check the slow plugins alone",
        )


class FakeClock:
    def __init__(self) -> None:
        self.ns = 1_000 * SECOND

    def __call__(self) -> int:
        return self.ns


def test_deadline_allots_what_is_left() -> None:
    clock = FakeClock()
    deadline = PluginDeadline(2 * MINUTE, clock)
    assert deadline.allot(MINUTE) == MINUTE  # the budget starts with the first run
    clock.ns += MINUTE + 30 * SECOND
    deadline.hung.append("a")
    assert deadline.allot(MINUTE) == 30 * SECOND
    clock.ns += 30 * SECOND
    deadline.hung.append("b")
    assert deadline.allot(MINUTE) == 0
    assert deadline.spent_reason().startswith(
        "not run: the plugins' overall deadline (2m0s) was spent (hung: a, b);"
    )


def test_spent_deadline_skips_before_probing() -> None:
    clock = FakeClock()
    probes: list[RootPlan] = []
    runs = PluginRuns(
        NodeRoot("/nonexistent-root"),
        MINUTE,
        MINUTE,
        clock=clock,
        prober=lambda p: probes.append(p),
    )
    runs.allot()
    clock.ns += MINUTE
    assert (runs.refusal("/x") or "").startswith("not run: the plugins' overall deadline")
    assert probes == []


# -- (f) no confinement, no run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("euid", "reason"),
    [
        pytest.param(
            1000,
            "not run: running a plugin inside --node-root needs root for a private mount "
            "namespace and chroot (unshare(CLONE_NEWNS): Operation not permitted); run as root "
            "or pass --no-exec",
            id="not root",
        ),
        pytest.param(
            0,
            "not run: running a plugin inside --node-root needs CAP_SYS_ADMIN and "
            "CAP_SYS_CHROOT for a private mount namespace and chroot (unshare(CLONE_NEWNS): "
            "Operation not permitted); this process is root without them (a container: add the "
            "capabilities, or run it privileged) or pass --no-exec",
            id="root without the capabilities",
        ),
    ],
)
def test_probe_runs_once_and_its_refusal_skips_every_plugin(
    node: Path, monkeypatch: pytest.MonkeyPatch, euid: int, reason: str
) -> None:
    calls: list[RootPlan] = []

    def refuse(plan: RootPlan) -> SandboxError:
        calls.append(plan)
        return SandboxError("unshare(CLONE_NEWNS)", errno.EPERM)

    monkeypatch.setattr(plugin_runs.os, "geteuid", lambda: euid)
    runs = PluginRuns(NodeRoot(str(node)), MINUTE, MINUTE, prober=refuse)
    reasons = {runs.refusal(f"{BIN}/{name}") for name, _, _ in PROVIDERS}
    assert reasons == {reason}
    assert len(calls) == 1


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the unprivileged user can read (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="credprov-sandbox-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")
def test_unprivileged_doctor_skips_and_runs_nothing_on_the_host(shared_dir: Path) -> None:
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    probe = subprocess.run([*nobody, "-c", "import credprov"], capture_output=True, cwd="/")
    if probe.returncode != 0:  # e.g. a checkout under a 0700 directory (mktemp -d)
        pytest.skip("this checkout is not readable by an unprivileged user")
    root = nodes.kubeadm_node(shared_dir / "node")
    marker_dir = shared_dir / "markers"
    marker_dir.mkdir(mode=0o777)
    marker_dir.chmod(0o777)
    for name, pattern, _ in PROVIDERS:
        _plugin(
            root, name, f"#!/bin/sh\ntouch {marker_dir}/{name}\ncat >/dev/null\n{_answer(pattern)}"
        )
    proc = subprocess.run(
        [
            *nobody,
            "-m",
            "credprov",
            "doctor",
            "--node-root",
            str(root),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert proc.returncode in (0, 1), proc.stderr
    checks = json.loads(proc.stdout)["checks"]
    responds = [c for c in checks if c["id"] == "plugin.responds"]
    assert len(responds) == len(PROVIDERS)
    for check in responds:
        assert check["status"] == "skip"
        assert check["message"].startswith(
            "not run: running a plugin inside --node-root needs root for a private mount namespace"
        )
        assert "Operation not permitted" in check["message"]
    assert list(marker_dir.iterdir()) == []


# -- the CLI ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("0", "argument --plugins-deadline: must be positive"),
        ("soon", "argument --plugins-deadline: time: invalid"),
    ],
)
def test_plugins_deadline_option_errors(
    node: Path, capsys: pytest.CaptureFixture[str], value: str, error: str
) -> None:
    with pytest.raises(SystemExit) as exc:  # argparse's usage error: the duration type's
        main(["doctor", "--node-root", str(node), "--plugins-deadline", value])
    assert exc.value.code == 2
    assert error in capsys.readouterr().err
