"""deploy/doctor/: the doctor DaemonSet, built as ``kubectl kustomize`` builds it
(``tests/kustomize.py``), against the installer image's interface and the doctor's own
parser: the node's ``/`` read-only at ``/host``, the periodic textfile into a hostPath that
node_exporter reads, bounded resources, every taint tolerated, and a locked-down container."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from credprov.doctor.cli import build_parser
from credprov.doctor.textfile import SUFFIX
from tests import kustomize

REPO = Path(__file__).resolve().parents[3]
DOCTOR = REPO / "deploy" / "doctor"


def pod() -> dict[str, Any]:
    spec: dict[str, Any] = kustomize.daemonset(kustomize.build(DOCTOR))["spec"]["template"]["spec"]
    return spec


def test_runs_the_images_doctor_periodically_into_the_textfile_dir() -> None:
    spec = pod()
    (container,) = spec["containers"]
    assert container["image"] == "localhost/credprov-plugins-installer:0.1.0"
    assert "command" not in container  # the image's entrypoint takes `doctor ARGS`
    assert container["args"][0] == "doctor"
    args = build_parser().parse_args(container["args"][1:])
    assert args.node_root == "/host"
    assert args.every == 10 * 60 * 10**9
    assert args.textfile.endswith(SUFFIX) and not args.npd
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    host = mounts["/host"]
    assert host["readOnly"] is True and host["mountPropagation"] == "HostToContainer"
    assert volumes[host["name"]]["hostPath"] == {"path": "/", "type": "Directory"}
    textfile_dir = str(Path(args.textfile).parent)
    out = mounts[textfile_dir]
    assert not out.get("readOnly")
    assert volumes[out["name"]]["hostPath"]["path"] == "/var/lib/node_exporter/textfile_collector"
    # The run's plugin deadline ends well inside the period that bounds the run.
    assert args.plugins_deadline < args.every


def test_runs_everywhere_bounded_and_locked_down() -> None:
    spec = pod()
    (container,) = spec["containers"]
    assert {"operator": "Exists"} in spec["tolerations"]
    assert spec["automountServiceAccountToken"] is False
    limits = container["resources"]["limits"]
    assert set(limits) >= {"cpu", "memory"} and container["resources"]["requests"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert not sc.get("privileged")
    assert sc["capabilities"]["drop"] == ["ALL"]
    # /tmp is the only writable place besides the textfile directory.
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/host-textfile", "/tmp"}


def test_image_and_textfile_dir_are_set_with_an_overlay(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        f"resources: [{DOCTOR}]\n"
        "images:\n  - {name: localhost/credprov-plugins-installer, "
        "newName: registry.example.com/credprov-plugins-installer, newTag: '0.2.0'}\n"
        "patches:\n  - target: {group: apps, version: v1, kind: DaemonSet, name: credprov-doctor}\n"
        "    patch: |-\n"
        "      - {op: test, path: /spec/template/spec/volumes/1/name, value: textfile-dir}\n"
        "      - {op: replace, path: /spec/template/spec/volumes/1/hostPath/path, "
        "value: /var/lib/prometheus/node-exporter}\n"
    )
    ds = kustomize.daemonset(kustomize.build(overlay))
    spec = ds["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "registry.example.com/credprov-plugins-installer:0.2.0"
    assert spec["volumes"][1]["hostPath"]["path"] == "/var/lib/prometheus/node-exporter"


def test_runs_on_apparmor_hosts_with_only_the_sandboxs_capabilities() -> None:
    (container,) = pod()["containers"]
    sc = container["securityContext"]
    # The sandbox mounts (unshare, bind, tmpfs): containerd's default profile denies mount.
    assert sc["appArmorProfile"] == {"type": "Unconfined"}
    # unshare+mount, chroot, reading node files; plugins run as root, nothing to switch to.
    assert sc["capabilities"]["add"] == ["SYS_ADMIN", "SYS_CHROOT", "DAC_READ_SEARCH"]


def test_single_arch_image_runs_only_on_its_architecture() -> None:
    spec = pod()
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
