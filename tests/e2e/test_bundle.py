"""The plugin bundle on a node without Python: unpack, install, run every plugin there.

The node is a ``debootstrap --variant=minbase`` root (``tests/e2e/noderoot.py``): glibc,
zlib and a shell, no Python. These tests run exactly the README's tarball steps inside it
(``tar xzf`` on the host into the root, ``install`` under ``chroot``), then run each
installed plugin inside the root with a CredentialProviderRequest on stdin, against the same
loopback fakes the plugins' own tests use (moto's ECR, a GCE metadata server), and have
credprov's engine, standing in for the kubelet, drive the installed plugins through a
provider config whose bin dir holds one-line ``chroot`` wrappers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov.bundle._multicall import PLUGINS
from credprov.install import install as venv_install
from tests.conftest import CANARY
from tests.e2e.noderoot import BIN_DIR, chroot, find_python, inside, node_root

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
G = "credentialprovider.kubelet.k8s.io"
IMAGE = "registry.example.com/team/app"
STATIC_FILE = "/etc/credprov/static-credentials.yaml"
PASSWORD = f"robot-{CANARY}"
STATIC_YAML = f"""apiVersion: credprov.io/v1alpha1
kind: StaticCredentials
credentials:
  - match: ["registry.example.com"]
    username: robot
    password: {PASSWORD}
"""


def request(image: str = IMAGE, version: str = "v1") -> bytes:
    body = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/{version}", "image": image}
    return json.dumps(body).encode()


@pytest.fixture(scope="module")
def root(bundle_tarball: Path) -> Iterator[Path]:
    """A Python-less node root with the bundle unpacked in /opt and installed (README steps)."""
    with node_root() as node:
        assert find_python(node) == [], "the node root must not have Python"
        opt = inside(node, "/opt")
        subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(opt)], check=True)
        static = inside(node, STATIC_FILE)
        static.parent.mkdir(parents=True, exist_ok=True)
        static.write_text(STATIC_YAML)
        yield node


def run_install(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return chroot(root, ["/opt/credprov-plugins/install", "--bin-dir", BIN_DIR, *args])


def lines(proc: subprocess.CompletedProcess[bytes]) -> list[str]:
    return proc.stdout.decode().splitlines()


def test_install_in_the_root_then_again_changes_nothing(root: Path) -> None:
    first = run_install(root)
    assert first.returncode == 0, first.stderr
    out = lines(first)
    assert out[0].startswith(f"unpacked: {BIN_DIR}/.credprov-plugins-")
    assert out[1:] == [f"installed: {BIN_DIR}/{name}" for name in PLUGINS]

    again = run_install(root)
    assert again.returncode == 0, again.stderr
    assert lines(again) == [f"unchanged: {BIN_DIR}/{name}" for name in PLUGINS]

    bin_dir = inside(root, BIN_DIR)
    for name in PLUGINS:
        assert os.readlink(bin_dir / name).startswith(".credprov-plugins-")
    # Still no Python outside the bundle's own runtime, and none on the node's PATH.
    bundle_dirs = (str(bin_dir), str(inside(root, "/opt/credprov-plugins")))
    assert [p for p in find_python(root) if not p.startswith(bundle_dirs)] == []
    which = chroot(root, ["sh", "-c", "command -v python3 || command -v python"])
    assert which.returncode != 0 and which.stdout == b""


@pytest.fixture(scope="module")
def installed(root: Path) -> Path:
    proc = run_install(root)
    assert proc.returncode == 0, proc.stderr
    return root


def plugin_env(**extra: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **extra}


def test_static_plugin_answers_as_the_venv_one_and_caches(installed: Path, tmp_path: Path) -> None:
    static_cmd = [f"{BIN_DIR}/static-credential-provider", "--config", STATIC_FILE]
    bundled = chroot(installed, static_cmd, stdin=request())
    assert bundled.returncode == 0, bundled.stderr
    answer = json.loads(bundled.stdout)
    assert answer["auth"] == {"registry.example.com": {"username": "robot", "password": PASSWORD}}
    assert CANARY.encode() not in bundled.stderr

    # The venv launcher, same request and the same credentials file: the same bytes.
    host_file = tmp_path / "static.yaml"
    shutil.copyfile(inside(installed, STATIC_FILE), host_file)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (launcher,) = venv_install(str(bin_dir), ["static-credential-provider"])
    venv = subprocess.run(
        [launcher.path, "--config", str(host_file)],
        input=request(),
        capture_output=True,
        env={**os.environ, "CREDPROV_PLUGIN_CACHE_DIR": str(tmp_path / "cache")},
        check=False,
    )
    assert venv.returncode == 0, venv.stderr
    assert json.loads(venv.stdout) == answer

    # The persistent answer cache works the same: the file is gone, the answer is not.
    cache = inside(installed, "/run/credprov/plugins/static-credential-provider")
    assert cache.is_dir() and any(cache.iterdir())
    moved = inside(installed, STATIC_FILE + ".moved")
    inside(installed, STATIC_FILE).rename(moved)
    try:
        warm = chroot(installed, [*static_cmd, "-v", "4"], stdin=request())
    finally:
        moved.rename(inside(installed, STATIC_FILE))
    assert warm.returncode == 0, warm.stderr
    assert b"from the plugin cache" in warm.stderr
    assert json.loads(warm.stdout)["auth"] == answer["auth"]


def wrapper_bin_dir(root: Path, directory: Path) -> Path:
    """A host bin dir whose plugins run inside ``root``: ``exec chroot ROOT PLUGIN "$@"``."""
    directory.mkdir()
    for name in PLUGINS:
        wrapper = directory / name
        wrapper.write_text(f'#!/bin/sh\nexec chroot "{root}" "{BIN_DIR}/{name}" "$@"\n')
        wrapper.chmod(0o755)
    return directory


def test_engine_drives_the_installed_plugins(installed: Path, tmp_path: Path) -> None:
    from credprov.credentialprovider.engine import Engine
    from credprov.credentialprovider.plugin.registry import register_credential_provider_plugins

    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\n"
        "kind: CredentialProviderConfig\n"
        "providers:\n"
        "  - name: static-credential-provider\n"
        f"    apiVersion: {G}/v1\n"
        f'    args: ["--config", "{STATIC_FILE}"]\n'
        '    matchImages: ["registry.example.com"]\n'
        '    defaultCacheDuration: "1m"\n'
    )
    bin_dir = wrapper_bin_dir(installed, tmp_path / "bin")
    providers = register_credential_provider_plugins(str(config), str(bin_dir))
    result = Engine(providers).resolve(f"{IMAGE}:v1")
    assert [(c.username, c.password) for c in result.credentials] == [("robot", PASSWORD)]
    (info,) = result.providers
    assert info.executed and info.error is None


def conformance(binary: Path, *args: str) -> list[tuple[str, str, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "credprov", "plugin", "test", str(binary), "--image", IMAGE,
         *args, "-o", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    return [(c["name"], c["status"], c.get("apiVersion", "")) for c in report["checks"]]


def test_plugin_test_results_match_the_venv_plugin(installed: Path, tmp_path: Path) -> None:
    bin_dir = wrapper_bin_dir(installed, tmp_path / "bin")
    bundled = conformance(bin_dir / "static-credential-provider", "--arg=--config",
                          f"--arg={STATIC_FILE}", "--env=CREDPROV_PLUGIN_CACHE_DIR=/tmp/c1")  # fmt: skip
    host_file = tmp_path / "static.yaml"
    shutil.copyfile(inside(installed, STATIC_FILE), host_file)
    venv_dir = tmp_path / "venv-bin"
    venv_dir.mkdir()
    (launcher,) = venv_install(str(venv_dir), ["static-credential-provider"])
    venv = conformance(Path(launcher.path), "--arg=--config", f"--arg={host_file}",
                       f"--env=CREDPROV_PLUGIN_CACHE_DIR={tmp_path / 'c2'}")  # fmt: skip
    if emulated(installed):
        # Under qemu a first start can pass plugin test's "slow" mark (10% of the deadline)
        # on a busy machine: that is the emulator's time, not the plugin's answer.
        bundled = [(n, "pass" if (n, s) == ("deadline", "warn") else s, v) for n, s, v in bundled]
    assert bundled == venv
    assert all(status != "fail" for _, status, _ in bundled)


def emulated(root: Path) -> bool:
    """Whether ``root``'s programs run under qemu here (another architecture's root)."""
    import platform

    return chroot(root, ["uname", "-m"]).stdout.decode().strip() != platform.machine()


def signal_masks(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, int]:
    """The ignored and caught signal masks of ``argv`` once its interpreter has started
    (it then blocks on stdin)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)  # fmt: skip

    def masks() -> tuple[int, int]:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        found = {k: int(v, 16) for k, _, v in (ln.partition(":\t") for ln in
                 status.splitlines()) if k in ("SigIgn", "SigCgt")}  # fmt: skip
        return found["SigIgn"], found["SigCgt"]

    try:
        # subprocess gives the child SIGPIPE's default back; the interpreter's start ignores
        # it, then settles SIGINT. A loaded CI machine may take long; idle it is ~50 ms.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not masks()[0] & bit(signal.SIGPIPE):
            assert proc.poll() is None, f"{argv[0]} exited {proc.returncode} at start"
            time.sleep(0.05)
        time.sleep(0.5)  # the rest of the start (a few statements) is done by then
        return masks()
    finally:
        proc.kill()
        proc.wait()


def bit(sig: signal.Signals) -> int:
    return 1 << (sig - 1)


def test_plugins_keep_cpythons_signal_dispositions(installed: Path) -> None:
    """A frozen plugin has the signal dispositions CPython's start gives (SIGPIPE and
    SIGXFSZ ignored; SIGINT raising KeyboardInterrupt unless it was inherited ignored): a
    write to a socket its peer closed is a ``BrokenPipeError`` the SDKs retry, not a plugin
    killed by the signal (seen once as ``signal: broken pipe`` from the ECR plugin against a
    fake endpoint). Compared with a CPython started the same way, whatever this test
    process inherited (a background job ignores SIGINT)."""
    bundled = signal_masks(["chroot", str(installed), f"{BIN_DIR}/ecr-credential-provider"],
                           env=plugin_env())  # fmt: skip
    venv = signal_masks([sys.executable, "-I", "-c", "import sys; sys.stdin.read()"])
    assert bundled[0] & bit(signal.SIGPIPE) and bundled[0] & bit(signal.SIGXFSZ)
    assert bundled[0] == venv[0], (hex(bundled[0]), hex(venv[0]))
    sigint = bit(signal.SIGINT)
    assert bundled[1] & sigint == venv[1] & sigint, (hex(bundled[1]), hex(venv[1]))


def test_ecr_plugin_in_the_root_against_moto(installed: Path, tmp_path: Path) -> None:
    from tests.fakes.ecr import fake_aws

    image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/team/app"
    with fake_aws() as aws:
        env = plugin_env(
            AWS_ACCESS_KEY_ID="AKIDNODE",
            AWS_SECRET_ACCESS_KEY=f"node-secret-{CANARY}",
            AWS_ENDPOINT_URL=aws.url,
            AWS_EC2_METADATA_DISABLED="true",
            CREDPROV_PLUGIN_CACHE_DIR="/tmp/ecr-cache",
        )
        cmd = [f"{BIN_DIR}/ecr-credential-provider", "get-credentials"]
        cold = chroot(installed, cmd, stdin=request(image), env=env)
        assert cold.returncode == 0, cold.stderr
        answer = json.loads(cold.stdout)
        auth = answer["auth"]["123456789012.dkr.ecr.us-west-2.amazonaws.com"]
        assert auth["username"] == "AWS" and auth["password"]
        assert CANARY.encode() not in cold.stderr
        calls = len(aws.seen)
        warm = chroot(installed, [*cmd, "-v", "4"], stdin=request(image), env=env)
        assert warm.returncode == 0, warm.stderr
        assert json.loads(warm.stdout)["auth"] == answer["auth"]
        assert len(aws.seen) == calls  # answered from the plugin cache


def test_gcp_plugin_in_the_root_against_a_metadata_server(installed: Path) -> None:
    from tests.fakes.gcp import FakeMetadataServer

    token = f"ya29.node-{CANARY}"
    with FakeMetadataServer(token=token) as mds:
        env = plugin_env(GCE_METADATA_HOST=mds.host, CREDPROV_PLUGIN_CACHE_DIR="/tmp/gcp-cache")
        proc = chroot(
            installed,
            [f"{BIN_DIR}/auth-provider-gcp", "get-credentials", "--v=3"],
            stdin=request("gcr.io/my-project/app"),
            env=env,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["auth"]["gcr.io"] == {"username": "_token", "password": token}
    assert CANARY.encode() not in proc.stderr


def test_acr_plugin_in_the_root_fails_as_the_venv_plugin(installed: Path, tmp_path: Path) -> None:
    """No Azure here: with a managed identity the plugin imports azure-identity, finds no
    IMDS and fails with one line; the bundled plugin must say exactly what the venv one says
    (a missing module or data file in the bundle would show as a different error)."""
    azure_json = json.dumps({"cloud": "AzurePublicCloud", "useManagedIdentityExtension": True})
    inside(installed, "/etc/kubernetes").mkdir(exist_ok=True)
    inside(installed, "/etc/kubernetes/azure.json").write_text(azure_json)
    bundled = chroot(
        installed,
        [f"{BIN_DIR}/acr-credential-provider", "/etc/kubernetes/azure.json"],
        stdin=request("myregistry.azurecr.io/app"),
        env=plugin_env(CREDPROV_PLUGIN_CACHE_DIR="/tmp/acr-cache"),
    )
    (tmp_path / "azure.json").write_text(azure_json)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (launcher,) = venv_install(str(bin_dir), ["acr-credential-provider"])
    venv = subprocess.run(
        [launcher.path, str(tmp_path / "azure.json")],
        input=request("myregistry.azurecr.io/app"),
        capture_output=True,
        env=plugin_env(CREDPROV_PLUGIN_CACHE_DIR=str(tmp_path / "cache")),
        check=False,
    )
    assert (bundled.returncode, bundled.stdout, bundled.stderr) == (
        venv.returncode,
        venv.stdout,
        venv.stderr,
    )
    assert venv.returncode == 1 and len(venv.stderr.splitlines()) == 1


def test_docker_helper_plugins_in_the_root(installed: Path) -> None:
    # A docker credential helper inside the root, run by the kubelet-side bridge: the root's
    # dash, with the root's own glibc (the frozen runtime sets no LD_LIBRARY_PATH for it).
    helper = inside(installed, "/usr/local/bin/docker-credential-e2e")
    helper.write_text(
        "#!/bin/sh\nenv > /tmp/helper-env\nread server\n"
        f'printf \'{{"ServerURL":"%s","Username":"helper","Secret":"{PASSWORD}"}}\' "$server"\n'
    )
    helper.chmod(0o755)
    proc = chroot(
        installed,
        [f"{BIN_DIR}/docker-credential-helper-provider", "--helper", "e2e"],
        stdin=request(),
        env=plugin_env(CREDPROV_PLUGIN_CACHE_DIR="/tmp/dh-cache"),
    )
    assert proc.returncode == 0, proc.stderr
    auth = json.loads(proc.stdout)["auth"]
    assert {"username": "helper", "password": PASSWORD} in auth.values()
    helper_env = inside(installed, "/tmp/helper-env").read_text()
    assert "LD_LIBRARY_PATH" not in helper_env and "LD_PRELOAD" not in helper_env

    # The docker-side helper answers from the kubelet's providers: the engine (pydantic,
    # the config decoder) runs inside the bundle too.
    inside(installed, "/etc/kubernetes").mkdir(exist_ok=True)
    config = inside(installed, "/etc/kubernetes/credential-provider-config.yaml")
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        f"  - name: static-credential-provider\n    apiVersion: {G}/v1\n"
        f'    args: ["--config", "{STATIC_FILE}"]\n'
        '    matchImages: ["registry.example.com"]\n    defaultCacheDuration: "1m"\n'
    )
    proc = chroot(
        installed,
        [f"{BIN_DIR}/docker-credential-credprov", "get"],
        stdin=b"https://registry.example.com/v2/team/app\n",
        env=plugin_env(
            CREDPROV_PROVIDER_CONFIG="/etc/kubernetes/credential-provider-config.yaml",
            CREDPROV_PROVIDER_BIN_DIR=BIN_DIR,
            CREDPROV_PLUGIN_CACHE_DIR="/tmp/dcc-cache",
        ),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["Secret"] == PASSWORD


def test_force_uninstall_and_foreign_files(installed: Path) -> None:
    bin_dir = inside(installed, BIN_DIR)
    foreign = bin_dir / "someone-elses-provider"
    foreign.write_text("#!/bin/sh\n")
    (bin_dir / "static-credential-provider").unlink()
    (bin_dir / "static-credential-provider").write_text("#!/bin/sh\nexit 1\n")

    refused = run_install(installed, "static-credential-provider")
    assert refused.returncode == 1 and refused.stdout == b""
    assert refused.stderr.decode() == (
        f"install: error: {BIN_DIR}/static-credential-provider exists and was not written by "
        "this installer; use --force to replace it\n"
    )
    forced = run_install(installed, "--force", "static-credential-provider")
    assert lines(forced) == [f"updated: {BIN_DIR}/static-credential-provider"], forced.stderr

    gone = run_install(installed, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    out = lines(gone)
    assert out[: len(PLUGINS)] == [f"uninstalled: {BIN_DIR}/{n}" for n in PLUGINS]
    assert out[-1].startswith(f"removed: {BIN_DIR}/.credprov-plugins-")
    assert sorted(p.name for p in bin_dir.iterdir()) == ["someone-elses-provider"]


def test_tarball_layout(bundle_tarball: Path) -> None:
    from credprov.bundle.build import tarball_name

    assert bundle_tarball.name == tarball_name()
    with tarfile.open(bundle_tarball) as tar:
        names = set(tar.getnames())
    assert {"credprov-plugins/install", "credprov-plugins/image-entrypoint",
            "credprov-plugins/runtime/credprov-plugins"} <= names  # fmt: skip
    assert all(n == "credprov-plugins" or n.startswith("credprov-plugins/") for n in names)
