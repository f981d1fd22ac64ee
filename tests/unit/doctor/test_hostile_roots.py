"""The doctor on hostile node roots: bounded, confined, one line per problem.

Each row plants one fault seen in a hostile-root run (or named in the issue) on the healthy
kubeadm (or k3s) fixture node, then runs ``credprov doctor`` as a subprocess, as an operator
would, with a wall-clock guard and an address-space cap. It must exit 0 or 1 (a check may
fail, the doctor may not), print no traceback and no "internal error", keep ``-o json``
whole, never print a planted canary from outside the root, and finish well inside the guard.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import CONFIG, write

#: Never shown: the content of a host file a hostile root links to.
HOST_CANARY = "host-only-canary-7f3a"

#: Generous: a healthy node takes well under a second; a hang is what this guards against.
GUARD_SECONDS = 60
#: Address space cap of the doctor process (a 1 GB alias expansion must not fit).
MEMORY_CAP = 768 << 20
#: The DaemonSet's memory limit, for the rows of issue 32 (``/proc`` discovery).
DAEMONSET_CAP = 256 << 20

KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
K3S_CONFIG_FILE = "/etc/rancher/k3s/config.yaml"


def _kubelet_config(body: str) -> Callable[[Path, Path], None]:
    def plant(root: Path, host: Path) -> None:
        write(
            root,
            KUBELET_CONFIG,
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + body,
        )

    return plant


def _alias_bomb(key: str) -> str:
    """Nine levels of nine aliases: 9**9 (387 million) leaves from under 1 KB."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    lines.append(f"{key}: *a9")
    return "\n".join(lines) + "\n"


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _k3s(body: str) -> Callable[[Path, Path], None]:
    def plant(root: Path, host: Path) -> None:
        write(root, K3S_CONFIG_FILE, body)

    return plant


def _symlink(node_path: str, target: str) -> Callable[[Path, Path], None]:
    def plant(root: Path, host: Path) -> None:
        path = root / node_path.lstrip("/")
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target.replace("{host}", str(host)))

    return plant


def _env_file_repeated(root: Path, host: Path) -> None:
    lines = "".join("EnvironmentFile=-/etc/default/kubelet\n" for _ in range(3400))
    write(root, "/etc/systemd/system/kubelet.service.d/90-many.conf", "[Service]\n" + lines)


def _many_drop_ins(root: Path, host: Path) -> None:
    for i in range(1000):
        write(
            root,
            f"/etc/systemd/system/kubelet.service.d/{i:04d}.conf",
            f'[Service]\nEnvironment="X{i}=y"\n',
        )


def _many_proc_entries(root: Path, host: Path) -> None:
    for pid in range(1000, 2500):
        write(root, f"/proc/{pid}/comm", "sleep\n")
        (root / f"proc/{pid}/cmdline").write_bytes(b"sleep\0infinity\0")


def _stand_in_kubelet(root: Path) -> None:
    """/proc/1 is a kubelet with a 60 KB command line."""
    write(root, "/proc/1/comm", "kubelet\n")
    argv = [b"/usr/bin/kubelet", b"--config=/var/lib/kubelet/config.yaml"]
    argv += [b"--node-labels=" + b"a" * 60_000]
    (root / "proc/1/cmdline").write_bytes(b"\0".join(argv) + b"\0")


def _proc_links_to_one_kubelet(root: Path, host: Path) -> None:
    """1,500 /proc/<pid> links resolving to one stand-in kubelet (800 MB before: each was
    read and parsed again)."""
    _stand_in_kubelet(root)
    for pid in range(1000, 2500):
        (root / f"proc/{pid}").symlink_to("/proc/1")


def _many_kubelets(root: Path, host: Path) -> None:
    """200 distinct kubelet processes: at most MAX_KUBELET_CANDIDATES are read."""
    _stand_in_kubelet(root)
    data = (root / "proc/1/cmdline").read_bytes()
    for pid in range(1000, 1200):
        write(root, f"/proc/{pid}/comm", "kubelet\n")
        (root / f"proc/{pid}/cmdline").write_bytes(data)


def _config_dir_with_host_links(root: Path, host: Path) -> None:
    """The provider config is a directory whose entries link out of the root."""
    (root / CONFIG.lstrip("/")).unlink()
    directory = root / CONFIG.lstrip("/")
    directory.mkdir()
    (directory / "10-ok.yaml").write_text(nodes.provider_config())
    (directory / "20-host.yaml").symlink_to(host / "providers.yaml")
    (directory / "30-up.yaml").symlink_to("../../../../../../../.." + str(host / "providers.yaml"))


ROWS: dict[str, Callable[[Path, Path], None]] = {
    "kubelet config: alias bomb": _kubelet_config(_alias_bomb("featureGates")),
    "kubelet config: 5,000-digit integer": _kubelet_config("maxPods: " + "9" * 5000 + "\n"),
    "kubelet config: 30,000-deep nesting": _kubelet_config("x: " + _deep(30_000) + "\n"),
    "kubelet config: wrong types": _kubelet_config(
        "featureGates: 5\nimagePullCredentialsVerificationPolicy: [1]\n"
        "preloadedImagesVerificationAllowlist: {a: b}\n"
    ),
    "kubelet config: date, set, binary": _kubelet_config(
        "imagePullCredentialsVerificationPolicy: 2001-01-01\n"
        "preloadedImagesVerificationAllowlist: !!set {a, b}\n"
        "containerRuntimeEndpoint: !!binary aGVsbG8=\n"
    ),
    "kubelet config: not UTF-8": _kubelet_config("x: \xff\xfe\n"),
    "k3s config: alias bomb": _k3s(_alias_bomb("kubelet-arg")),
    "k3s config: 5,000-digit integer": _k3s("node-label: " + "7" * 5000 + "\n"),
    "k3s config: 30,000-deep nesting": _k3s("kubelet-arg: " + _deep(30_000) + "\n"),
    "k3s config: date and binary": _k3s(
        "image-credential-provider-config: 2001-01-01\nkubelet-arg: !!binary aGVsbG8=\n"
    ),
    "symlink loop at the config": _symlink(CONFIG, CONFIG),
    "symlink loop at the kubelet dir": _symlink("/var/lib/kubelet", "../lib/kubelet"),
    "kubelet config links to a host file": _symlink(KUBELET_CONFIG, "{host}/secret.yaml"),
    "config dir entries link to host files": _config_dir_with_host_links,
    "EnvironmentFile= named 3,400 times": _env_file_repeated,
    "1,000 drop-ins": _many_drop_ins,
    "1,500 /proc entries": _many_proc_entries,
    "1,500 /proc links to one kubelet": _proc_links_to_one_kubelet,
    "200 kubelet processes": _many_kubelets,
}


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "credprov", "doctor", "--no-exec", *args],
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        preexec_fn=_limit_memory,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _host_files(host: Path) -> None:
    """Files outside the root that a hostile root links to: read, they would show."""
    host.mkdir()
    (host / "secret.yaml").write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"imagePullCredentialsVerificationPolicy: {HOST_CANARY}\n"
    )
    (host / "providers.yaml").write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        f"  - name: {HOST_CANARY}\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        '    matchImages: ["host.example.com"]\n    defaultCacheDuration: 1m\n'
    )


#: Text output for the rows whose values are printed; JSON (the stricter) for every row.
CASES = [(row, "json") for row in ROWS] + [
    (row, "text") for row in ROWS if "date" in row or "link" in row or "integer" in row
]


@pytest.mark.parametrize(("row", "output"), CASES)
def test_hostile_root_is_bounded(row: str, output: str, tmp_path: Path) -> None:
    k3s = row.startswith("k3s")
    root = (nodes.k3s_node if k3s else nodes.kubeadm_node)(tmp_path / "node")
    host = tmp_path / "host"
    _host_files(host)
    ROWS[row](root, host)
    proc = run_cli("--node-root", str(root), "-o", output)
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert HOST_CANARY not in proc.stdout + proc.stderr
    if output == "json":
        doc = json.loads(proc.stdout)  # whole, not cut short
        assert doc["summary"]["fail"] + doc["summary"]["pass"] > 0


@pytest.mark.parametrize("row", ["1,500 /proc links to one kubelet", "200 kubelet processes"])
def test_proc_discovery_fits_the_daemonsets_memory(row: str, tmp_path: Path) -> None:
    """Issue 32, item 4: each resolved process is read once, kubelet candidates are capped."""
    root = nodes.kubeadm_node(tmp_path / "node")
    ROWS[row](root, tmp_path / "host")

    def cap() -> None:  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_AS, (DAEMONSET_CAP, DAEMONSET_CAP))

    proc = subprocess.run(
        [sys.executable, "-m", "credprov", "doctor", "--no-exec", "--node-root", str(root),
         "-o", "json"],
        capture_output=True, text=True, timeout=GUARD_SECONDS, preexec_fn=cap,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    notes = " ".join(doc["node"].get("notes", []))
    if row.startswith("200"):
        assert "more than 8 kubelet processes" in notes
    else:
        assert "more than one kubelet process" not in notes
