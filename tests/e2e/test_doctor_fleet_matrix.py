"""The fleet matrix: the doctor never cries wolf on a healthy node and never misses a broken one.

Each row is a Python-less ``debootstrap`` root (``tests/e2e/noderoot.py``) laid out as a real
node of one distribution, the bundle installed by README's own on-node lines (``mkdir -p``
then ``install``, under ``chroot``, into a bin dir that did not exist):

* **kubeadm**: ``kubelet.service`` with kubeadm's drop-in, the flags in
  ``/etc/default/kubelet``, the config *directory* ``/etc/kubernetes/credential-providers``;
* **eks-nodeadm**: nodeadm's unit and environment file, its ``config.json`` naming the AMI's
  ``ecr-credential-provider`` (here the bundle's, installed under that plain name as its
  stand-in, with the test's AWS endpoint in its ``env``), credprov's plugins as
  ``credprov-<name>`` and their config in the same directory (``deploy/profiles/eks-nodeadm``);
* **k3s** and **RKE2**: their systemd unit, ``kubelet-arg`` entries in
  ``/etc/rancher/<k3s|rke2>/config.yaml``, the rancher bin dir and a config directory.

Every row has the three providers that answer here: static (its credentials file ``0600``
root in a ``0700`` directory, as on real nodes), ECR (against moto) and Google (against a
fake metadata server); the doctor derives each sample image itself (no ``--image``). The
root's ``/proc`` is a live ``proc``. The healthy node must give 0 FAIL and 0 WARN; the
planted fault (the bin dir bind-mounted ``noexec``) its FAIL, ``bin-dir.exec``, and no other.

Each is judged four ways: the credprov CLI, the bundle's doctor unpacked on this machine,
the installer image in containerd as the doctor DaemonSet runs it (not privileged: exactly
the DaemonSet's capabilities), and the bundle's doctor as node-problem-detector calls it.
ACR is not in the rows: without Azure its plugin cannot answer (``test_bundle.py`` checks
that it fails as the venv plugin does).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import CANARY
from tests.e2e.containerd import Containerd
from tests.e2e.noderoot import chroot, inside, node_root
from tests.unit.doctor import nodes
from tests.unit.doctor.test_npd import npd_call

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
V1 = "credentialprovider.kubelet.k8s.io/v1"
STATIC_FILE = "/etc/credprov/static.yaml"
PASSWORD = f"robot-{CANARY}"
AWS_SECRET = f"node-secret-{CANARY}"
GCP_TOKEN = f"ya29.node-{CANARY}"
KUBEADM_BIN = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"
RANCHER_BIN = "/var/lib/rancher/credentialprovider/bin"
RANCHER_CONFIG = "/var/lib/rancher/credentialprovider/config.d"
ECR_PATTERNS = list(nodes.EKS_ECR_PATTERNS)
GCP_PATTERNS = ["gcr.io", "*.gcr.io", "*.pkg.dev", "container.cloud.google.com"]


@dataclass(frozen=True)
class Endpoints:
    """The fakes the cloud plugins talk to (reached from inside the sandbox: the network is
    not confined)."""

    aws: str
    gce_metadata_host: str


def provider(
    name: str, patterns: list[str], args: list[str], env: dict[str, str]
) -> dict[str, object]:
    return {
        "name": name,
        "matchImages": patterns,
        "defaultCacheDuration": "10m",
        "apiVersion": V1,
        "args": args,
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }


def ecr_env(endpoints: Endpoints) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "AKIDNODE",
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "AWS_ENDPOINT_URL": endpoints.aws,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def providers(prefix: str, endpoints: Endpoints, with_ecr: bool = True) -> str:
    """credprov's providers (names under ``prefix``) as a CredentialProviderConfig."""
    items = [
        provider(f"{prefix}static-credential-provider", ["registry-a.example.com"],
                 ["--config", STATIC_FILE], {}),
        provider(f"{prefix}auth-provider-gcp", GCP_PATTERNS, ["get-credentials"],
                 {"GCE_METADATA_HOST": endpoints.gce_metadata_host}),
    ]  # fmt: skip
    if with_ecr:
        items.append(
            provider(
                f"{prefix}ecr-credential-provider",
                ECR_PATTERNS,
                ["get-credentials"],
                ecr_env(endpoints),
            )
        )
    return json.dumps({"apiVersion": "kubelet.config.k8s.io/v1",
                       "kind": "CredentialProviderConfig", "providers": items}, indent=2)  # fmt: skip


def plant_static_credentials(root: Path) -> None:
    """static's credentials as real nodes keep them: root's alone."""
    nodes.write(
        root,
        STATIC_FILE,
        "apiVersion: credprov.io/v1alpha1\nkind: StaticCredentials\ncredentials:\n"
        f'  - match: ["registry-a.example.com"]\n    username: robot\n    password: {PASSWORD}\n',
        0o600,
    )
    inside(root, STATIC_FILE).parent.chmod(0o700)


def readme_install_lines(bin_dir: str, *args: str) -> list[str]:
    """README's on-node lines (``mkdir -p`` and ``install``) for ``bin_dir``."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("# On the node (copying the tarball there is yours), as root:", 1)[1]
    block = block.split("```", 1)[0].replace("\\\n", " ")
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
    mkdir, install = (ln for ln in lines if not ln.startswith("tar "))
    assert mkdir == f"mkdir -p {KUBEADM_BIN}"
    words = shlex.split(install)
    assert words[:3] == ["./credprov-plugins/install", "--bin-dir", KUBEADM_BIN]
    # deploy/README.md's bake line runs the same two steps.
    bake = " ".join((REPO / "deploy/README.md").read_text().split())
    assert "&& mkdir -p BIN_DIR && ./credprov-plugins/install --bin-dir BIN_DIR`" in bake
    return [shlex.join(["mkdir", "-p", bin_dir]),
            shlex.join(["./credprov-plugins/install", "--bin-dir", bin_dir, *args])]  # fmt: skip


def install(root: Path, bin_dir: str, *args: str) -> None:
    assert not inside(root, bin_dir).exists() or args  # the first install makes the bin dir
    script = " && ".join(readme_install_lines(bin_dir, *args))
    proc = chroot(root, ["sh", "-c", f"cd /opt && {script}"])
    assert proc.returncode == 0, proc.stderr


def kubeadm(root: Path, endpoints: Endpoints) -> str:
    config_dir = "/etc/kubernetes/credential-providers"
    install(root, KUBEADM_BIN)
    nodes.write(root, "/usr/lib/systemd/system/kubelet.service",
                "[Service]\nExecStart=/usr/bin/kubelet\n")  # fmt: skip
    nodes.write(
        root,
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "[Service]\n"
        'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"\n'
        "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n"
        "EnvironmentFile=-/etc/default/kubelet\n"
        "ExecStart=\n"
        "ExecStart=/usr/bin/kubelet $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS "
        "$KUBELET_EXTRA_ARGS\n",
    )
    nodes.write(
        root,
        "/etc/default/kubelet",
        f'KUBELET_EXTRA_ARGS="--image-credential-provider-config={config_dir} '
        f'--image-credential-provider-bin-dir={KUBEADM_BIN}"\n',
    )
    nodes.write(root, "/var/lib/kubelet/config.yaml",
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")  # fmt: skip
    nodes.write(root, f"{config_dir}/credprov-plugins.yaml", providers("", endpoints))
    return KUBEADM_BIN


def eks_nodeadm(root: Path, endpoints: Endpoints) -> str:
    # The profile's directory config, appended after nodeadm's own flag (the later wins).
    nodes.eks_kubelet(root, f"--image-credential-provider-config={nodes.EKS_BIN}")
    install(root, nodes.EKS_BIN, "ecr-credential-provider")  # the AMI's plugin's stand-in
    install(root, nodes.EKS_BIN, "--prefix", "credprov-", "static-credential-provider",
            "auth-provider-gcp")  # fmt: skip
    config = json.loads(nodes.nodeadm_provider_config())
    config["providers"][0]["args"] = ["get-credentials"]
    config["providers"][0]["env"] = [{"name": k, "value": v} for k, v in ecr_env(endpoints).items()]
    nodes.write(root, nodes.EKS_CONFIG, json.dumps(config, indent=2))
    nodes.write(root, f"{nodes.EKS_BIN}/credprov-plugins.yaml",
                providers("credprov-", endpoints, with_ecr=False))  # fmt: skip
    return nodes.EKS_BIN


def rancher(distro: str, unit: str) -> Callable[[Path, Endpoints], str]:
    def plant(root: Path, endpoints: Endpoints) -> str:
        install(root, RANCHER_BIN)
        nodes.write(root, f"/etc/systemd/system/{unit}",
                    f"[Service]\nExecStart=/usr/local/bin/{distro} server\n")  # fmt: skip
        nodes.write(
            root,
            f"/etc/rancher/{distro}/config.yaml",
            yaml.safe_dump({"kubelet-arg": [
                f"image-credential-provider-bin-dir={RANCHER_BIN}",
                f"image-credential-provider-config={RANCHER_CONFIG}",
            ]}),
        )  # fmt: skip
        nodes.write(root, f"{RANCHER_CONFIG}/credprov-plugins.yaml", providers("", endpoints))
        return RANCHER_BIN

    return plant


ROWS: dict[str, tuple[str, Callable[[Path, Endpoints], str]]] = {
    "kubeadm": ("kubeadm", kubeadm),
    "eks-nodeadm": ("eks", eks_nodeadm),
    "k3s": ("k3s", rancher("k3s", "k3s.service")),
    "rke2": ("rke2", rancher("rke2", "rke2-server.service")),
}


@dataclass
class Node:
    root: Path
    flavor: str
    bin_dir: str


@pytest.fixture(scope="module")
def endpoints() -> Iterator[Endpoints]:
    from tests.fakes.ecr import fake_aws
    from tests.fakes.gcp import FakeMetadataServer

    with fake_aws() as aws, FakeMetadataServer(token=GCP_TOKEN) as mds:
        yield Endpoints(aws.url, mds.host)


@pytest.fixture(scope="module", params=sorted(ROWS))
def node(
    request: pytest.FixtureRequest, bundle_tarball: Path, endpoints: Endpoints
) -> Iterator[Node]:
    flavor, plant = ROWS[request.param]
    with node_root() as root:
        os.rmdir(inside(root, nodes.BIN))  # a fresh node: no bin dir yet
        subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(inside(root, "/opt"))],
                       check=True)  # fmt: skip
        nodes.write(root, "/etc/hostname", f"{nodes.NODE}\n")
        plant_static_credentials(root)
        bin_dir = plant(root, endpoints)
        yield Node(root, flavor, bin_dir)


def _mount(stack: ExitStack, *argv: str) -> None:
    subprocess.run(["mount", *argv], check=True, capture_output=True)
    stack.callback(subprocess.run, ["umount", "-l", argv[-1]], check=False, capture_output=True)


@pytest.fixture(params=["healthy", "noexec bin dir"])
def live(request: pytest.FixtureRequest, node: Node) -> Iterator[tuple[Node, str | None]]:
    """The node with a live ``/proc`` and, for the fault, its bin dir bind-mounted noexec;
    the check that must then fail (None: none)."""
    with ExitStack() as stack:
        _mount(stack, "-t", "proc", "proc", str(inside(node.root, "/proc")))
        fault = None
        if request.param == "noexec bin dir":
            bin_dir = str(inside(node.root, node.bin_dir))
            _mount(stack, "--bind", bin_dir, bin_dir)
            _mount(stack, "-o", "remount,bind,noexec", bin_dir)
            fault = "bin-dir.exec"
        yield node, fault


# -- the four ways the doctor runs ---------------------------------------------------------------

DAEMONSET_CAPS = ("CAP_SYS_ADMIN", "CAP_SYS_CHROOT", "CAP_DAC_READ_SEARCH")
#: containerd's default container capabilities (``oci.defaultUnixCaps``): ``ctr run`` knows no
#: ``--cap-drop ALL``, so each is dropped by name.
CONTAINERD_DEFAULT_CAPS = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
)  # fmt: skip


def daemonset_caps() -> tuple[str, ...]:
    """The doctor DaemonSet's capabilities, read from deploy/doctor/daemonset.yaml."""
    doc = yaml.safe_load((REPO / "deploy/doctor/daemonset.yaml").read_text())
    assert doc["spec"]["template"]["spec"]["hostNetwork"] is True
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    caps = container["securityContext"]["capabilities"]
    assert caps["drop"] == ["ALL"]
    return tuple(f"CAP_{c}" for c in caps["add"])


def judge(doc: dict[str, object], node: Node, fault: str | None) -> None:
    checks = doc["checks"]
    assert isinstance(checks, list)
    bad = [(c["id"], c["subject"], c["status"], c["message"]) for c in checks
           if c["status"] in ("fail", "warn")]  # fmt: skip
    if fault is None:
        assert bad == [], bad
        responds = [c for c in checks if c["id"] == "plugin.responds"]
        assert len(responds) == 3 and {c["status"] for c in responds} == {"pass"}, responds
    else:
        assert [(i, s) for i, _, s, _ in bad] == [(fault, "fail")], bad
    setup = doc["node"]
    assert isinstance(setup, dict)
    assert setup["flavor"] == node.flavor
    assert setup["imageCredentialProviderBinDir"]["value"] == node.bin_dir


def run_json(argv: list[str]) -> dict[str, object]:
    return once_more_after_a_fake_aws_400(lambda: _run_json(argv))


def _run_json(argv: list[str]) -> dict[str, object]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    assert CANARY not in proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def once_more_after_a_fake_aws_400(run: Callable[[], dict[str, object]]) -> dict[str, object]:
    """``run()``, and once more when its only trouble is the fake AWS endpoint answering
    ECR's GetAuthorizationToken with a bare ``HTTP 400 Bad Request`` (seen about once in 30
    doctor runs on a loaded machine, from the loopback fake, not from the plugin or the
    doctor: its cause is not found yet). Any other finding, or the same twice, stands."""
    doc = run()
    checks = doc.get("checks")
    bad = (
        [c for c in checks if c.get("status") in ("fail", "warn")]
        if isinstance(checks, list)
        else []
    )
    flaky = bool(bad) and all(
        c.get("id") == "plugin.responds"
        and "ecr-credential-provider" in str(c.get("subject"))
        and str(c.get("message", "")).endswith(
            "GetAuthorizationToken (ECR, us-east-1): HTTP 400 Bad Request"
        )
        for c in bad
    )
    return run() if flaky else doc


@pytest.fixture(scope="module")
def unpacked(bundle_tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("unpacked")
    subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(out)], check=True)
    return out / "credprov-plugins"


def test_the_credprov_cli(live: tuple[Node, str | None]) -> None:
    node, fault = live
    credprov = REPO / ".venv/bin/credprov"
    argv = [str(credprov)] if credprov.exists() else ["python", "-m", "credprov"]
    judge(run_json([*argv, "doctor", "--node-root", str(node.root), "-o", "json"]), node, fault)


def test_the_bundles_doctor(live: tuple[Node, str | None], unpacked: Path) -> None:
    node, fault = live
    doc = run_json([str(unpacked / "doctor"), "--node-root", str(node.root), "-o", "json"])
    judge(doc, node, fault)


def test_npds_protocol(live: tuple[Node, str | None], unpacked: Path) -> None:
    node, fault = live
    argv = [str(unpacked / "doctor"), "--npd", "--node-root", str(node.root)]
    status, message = npd_call(argv, timeout=180)
    if fault is None and message.startswith("plugin.responds failed for ecr-credential-provider"):
        status, message = npd_call(argv, timeout=180)  # once_more_after_a_fake_aws_400
    if fault is None:
        assert (status, message.split(" (")[0]) == ("ok", "credprov doctor: no check failed")
    else:
        assert status == "problem" and message.startswith(f"{fault} failed for "), message


def test_the_daemonsets_image_with_its_capabilities(
    live: tuple[Node, str | None], containerd: Containerd, installer_ref: str
) -> None:
    node, fault = live
    caps = daemonset_caps()
    assert caps == DAEMONSET_CAPS
    flags = [a for c in CONTAINERD_DEFAULT_CAPS if c not in caps for a in ("--cap-drop", c)]
    flags += [a for c in caps for a in ("--cap-add", c)]
    flags.append("--net-host")  # the DaemonSet's hostNetwork: plugins reach their endpoints

    def run() -> dict[str, object]:
        proc = containerd.ctr("run", "--rm", *flags, "--snapshotter", "native",
                              "--mount", f"type=bind,src={node.root},dst=/host,options=rbind:ro",
                              installer_ref, f"credprov-matrix-{uuid.uuid4().hex[:8]}",
                              "doctor", "--node-root", "/host", "-o", "json")  # fmt: skip
        assert CANARY not in proc.stdout + proc.stderr
        assert proc.returncode in (0, 1) and proc.stdout, proc.stderr
        doc: dict[str, object] = json.loads(proc.stdout)
        return doc

    judge(once_more_after_a_fake_aws_400(run), node, fault)
