"""credprov doctor on fixture node roots: a healthy kubeadm node, a k3s node, one planted
fault per check, a running stand-in kubelet, and the CLI's output contract."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from credprov.base.rootfs import NodeRoot
from credprov.cli.main import main
from credprov.doctor import DoctorOptions, Report, Status, run_doctor
from credprov.doctor.discovery import discover
from credprov.doctor.report import GROUPS
from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import BIN, CANARY, CONFIG, write


def doctor(root: Path, tmp_path: Path, *, rbac: bool = True, **kw: object) -> Report:
    options = DoctorOptions(
        root=str(root),
        objects=str(nodes.write_objects(tmp_path / "objects.json", rbac=rbac)),
        images_file=str(nodes.write_images(tmp_path / "images.json")),
        **kw,  # type: ignore[arg-type]
    )
    return run_doctor(options)


def statuses(report: Report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for check in report.checks:
        out.setdefault(check.id, set()).add(str(check.status))
    return out


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


def test_healthy_kubeadm_node_passes_every_check(node: Path, tmp_path: Path) -> None:
    # runtime.mirrors reports only on a node with mirrors: an ECR pull-through cache in
    # another region, covered by the same provider.
    nodes.write(
        node,
        "/etc/containerd/config.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
        '  config_path = "/etc/containerd/certs.d"\n',
    )
    nodes.write(
        node,
        "/etc/containerd/certs.d/111.dkr.ecr.us-east-1.amazonaws.com/hosts.toml",
        '[host."https://222.dkr.ecr.eu-west-1.amazonaws.com"]\n',
    )
    report = doctor(node, tmp_path, images=["registry-a.example.com/team/app:v1"])
    assert report.summary() == {"pass": len(report.checks), "warn": 0, "fail": 0, "skip": 0}
    assert set(statuses(report)) == set(GROUPS)  # every check id ran
    n = report.node
    assert n["flavor"] == "kubeadm"
    assert n["nodeName"] == {"value": "node-a", "source": "/etc/hostname"}
    # /etc/default/kubelet's KUBELET_EXTRA_ARGS comes last in ExecStart: it wins over the
    # bin dir in kubeadm-flags.env.
    assert n["imageCredentialProviderBinDir"] == {
        "value": BIN,
        "source": "$KUBELET_EXTRA_ARGS from /etc/default/kubelet",
    }
    assert n["config"]["source"].startswith("$KUBELET_CONFIG_ARGS from Environment= in ")
    assert n["containerRuntimeEndpoint"]["source"].endswith("kubeadm-flags.env")
    responds = report.by_id("plugin.responds")
    assert [c.subject for c in responds] == [p[0] for p in nodes.PROVIDERS]
    assert "123456789012.dkr.ecr.us-east-1.amazonaws.com" in responds[1].message


def test_k3s_node_from_process_config_file_and_defaults(tmp_path: Path) -> None:
    root = nodes.k3s_node(tmp_path / "k3s")
    report = run_doctor(DoctorOptions(root=str(root)))
    n = report.node
    assert n["flavor"] == "k3s"
    assert n["kubelet"]["source"] == "running process 4242 (k3s)"
    assert n["imageCredentialProviderBinDir"] == {"value": nodes.K3S_BIN, "source": "k3s default"}
    assert n["config"]["source"] == "kubelet-arg in /etc/rancher/k3s/config.yaml"
    assert n["featureGates"]["KubeletEnsureSecretPulledImages"]["source"].startswith(
        "--feature-gates from --kubelet-arg in /proc/4242/cmdline"
    )
    assert not report.failed, report.to_dict()
    assert {c.id for c in report.checks if c.status == Status.PASS} >= {
        "kubelet.flags",
        "provider-config.valid",
        "plugin.responds",
    }


def test_k3s_enables_providers_only_when_both_exist(tmp_path: Path) -> None:
    root = nodes.k3s_node(tmp_path / "k3s")
    (root / nodes.K3S_CONFIG.lstrip("/")).unlink()
    report = run_doctor(DoctorOptions(root=str(root)))
    (flags,) = report.by_id("kubelet.flags")
    assert flags.status == Status.FAIL
    assert "only when both" in flags.message


# -- one planted fault per check ------------------------------------------------------------------


def _extra_args(root: Path, args: str) -> None:
    write(root, "/etc/default/kubelet", f'KUBELET_EXTRA_ARGS="{args}"\n')


def _config(root: Path, text: str) -> None:
    write(root, CONFIG, text)


def _plugin(root: Path, name: str, text: str | bytes, mode: int = 0o755) -> None:
    path = root / BIN.lstrip("/") / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    path.chmod(mode)


def _aarch64_elf() -> bytes:
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4], header[5], header[6] = 2, 1, 1
    header[18:20] = (183).to_bytes(2, "little")
    return bytes(header)


def _kubelet_config(root: Path, extra: str) -> None:
    write(
        root,
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + extra,
    )


Fault = Callable[[Path], None]

FAULTS: list[tuple[str, str, Fault, dict[str, object]]] = [
    (
        "kubelet.flags",
        "fail",
        lambda r: (
            write(r, "/var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--v=2"\n')
            and _extra_args(r, f"--image-credential-provider-config={CONFIG}")
        ),
        {},
    ),
    (
        "provider-config.valid",
        "fail",
        lambda r: _config(
            r,
            (r / CONFIG.lstrip("/"))
            .read_text()
            .replace('"kubelet.config.k8s.io/v1"', '"kubelet.config.k8s.io/v2"'),
        ),
        {},
    ),
    (
        "provider-config.lint",
        "warn",
        lambda r: _config(
            r,
            (r / CONFIG.lstrip("/"))
            .read_text()
            .replace('"registry-a.example.com"', '"registry-a.example.com/*"', 1),
        ),
        {},
    ),
    (
        "bin-dir.exec",
        "fail",
        lambda r: write(
            r,
            "/proc/mounts",
            "/dev/sda1 / ext4 rw 0 0\ntmpfs /usr/libexec tmpfs rw,nosuid,noexec 0 0\n",
        ),
        {},
    ),
    (
        "plugin.present",
        "fail",
        lambda r: (r / BIN.lstrip("/") / "mirror-provider").rename(
            r / BIN.lstrip("/") / "mirror-provider.exe"
        ),
        {},
    ),
    (
        "plugin.runnable",
        "fail",
        lambda r: _plugin(r, "mirror-provider", "#!/usr/bin/env python3\nprint('{}')\n"),
        {},
    ),
    ("plugin.runnable", "fail", lambda r: _plugin(r, "mirror-provider", _aarch64_elf()), {}),
    (
        "plugin.responds",
        "fail",
        lambda r: _plugin(
            r,
            "mirror-provider",
            nodes.plugin_script("mirror.example.com:5000", "ServiceAccount"),
        ),
        {},
    ),
    ("image.match", "warn", lambda r: None, {"images": ["quay.io/other/app:v1"]}),
    (
        "feature-gates",
        "fail",
        lambda r: _extra_args(
            r,
            f"--image-credential-provider-config={CONFIG} --image-credential-provider-bin-dir "
            f"{BIN} --feature-gates=KubeletEnsureSecretPulledImages=maybe",
        ),
        {},
    ),
    (
        "pull-policy.valid",
        "fail",
        lambda r: _kubelet_config(r, "imagePullCredentialsVerificationPolicy: Sometimes\n"),
        {},
    ),
    (
        "pull-records.health",
        "warn",
        lambda r: write(r, "/var/lib/kubelet/image_manager/pulled/sha256-" + "b" * 64, "{", 0o600),
        {},
    ),
    (
        "pull-records.health",
        "warn",
        lambda r: (r / "var/lib/kubelet/image_manager").chmod(0o755),
        {},
    ),
    ("kep4412.rbac", "fail", lambda r: None, {"rbac": False}),
    (
        "kep2535.preflight",
        "fail",
        lambda r: (
            _kubelet_config(r, "imagePullCredentialsVerificationPolicy: AlwaysVerify\n")
            or (r / "var/lib/kubelet/image_manager/pulled").chmod(0o700)
            or [p.unlink() for p in (r / "var/lib/kubelet/image_manager/pulled").iterdir()]
        ),
        {},
    ),
]


@pytest.mark.parametrize(
    ("check_id", "expected", "fault", "kw"),
    FAULTS,
    ids=[f"{f[0]}-{i}" for i, f in enumerate(FAULTS)],
)
def test_planted_fault_trips_its_check_only(
    node: Path, tmp_path: Path, check_id: str, expected: str, fault: Fault, kw: dict[str, object]
) -> None:
    fault(node)
    report = doctor(node, tmp_path, **kw)
    got = statuses(report)
    assert expected in got[check_id], report.to_dict()
    others = {cid: s for cid, s in got.items() if cid != check_id and ("fail" in s)}
    assert others == {}, report.to_dict()
    finding = next(c for c in report.by_id(check_id) if str(c.status) == expected)
    assert finding.message and finding.hint
    assert report.failed == (expected == "fail")


def test_kep2535_preflight_suggests_an_allowlist(node: Path, tmp_path: Path) -> None:
    FAULTS[-1][2](node)
    report = doctor(node, tmp_path)
    (finding,) = report.by_id("kep2535.preflight")
    assert finding.subject == "team-a/app/app"
    assert "ErrImageNeverPull" in finding.message
    assert 'preloadedImagesVerificationAllowlist: ["registry-a.example.com/team/app"]' in (
        finding.hint
    )


@pytest.mark.parametrize(
    ("volumes", "containers", "expected"),
    [
        pytest.param(
            [{"name": "model", "image": {"reference": nodes.APP_IMAGE, "pullPolicy": "Never"}}],
            [],
            [("fail", "team-a/app/volume:model", "ErrImageNeverPull")],
            id="image volume that would stop the pod",
        ),
        pytest.param(
            [{"name": "model", "image": {"reference": "registry-a.example.com/team/gone:v1"}}],
            [],
            [],  # IfNotPresent by default and absent: an ordinary pull, nothing to say
            id="absent image volume is pulled",
        ),
        pytest.param(
            [
                {
                    "name": "model",
                    "image": {
                        "reference": "registry-a.example.com/team/gone:v1",
                        "pullPolicy": "Never",
                    },
                }
            ],
            [],
            [("warn", "team-a/app/volume:model", "is not on the node")],
            id="absent image volume with Never",
        ),
        pytest.param(
            [{"name": "scratch", "emptyDir": {}}],
            [{"name": "debug", "image": nodes.APP_IMAGE, "imagePullPolicy": "Never"}],
            [("fail", "team-a/app/debug", "ErrImageNeverPull")],
            id="ephemeral container",
        ),
    ],
)
def test_kep2535_preflight_checks_image_volumes(
    node: Path,
    tmp_path: Path,
    volumes: list[dict[str, object]],
    containers: list[dict[str, object]],
    expected: list[tuple[str, str, str]],
) -> None:
    """Image volumes (GA in 1.36) and ephemeral containers are pulled with the pod's
    credentials like its containers: the preflight looks at them too. The pod's own
    container is an IfNotPresent image here so that only the extra images can trip."""
    FAULTS[-1][2](node)  # AlwaysVerify, no records: every present image must be verified
    items = nodes.objects()
    app = next(o for o in items if o["kind"] == "Pod")
    app["spec"]["containers"] = [  # type: ignore[index]
        {"name": "app", "image": "registry-a.example.com/team/other:v1"}
    ]
    app["spec"]["volumes"] = volumes  # type: ignore[index]
    app["spec"]["ephemeralContainers"] = containers  # type: ignore[index]
    objects = tmp_path / "objects.json"
    objects.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    report = run_doctor(
        DoctorOptions(
            root=str(node),
            objects=str(objects),
            images_file=str(nodes.write_images(tmp_path / "images.json")),
        )
    )
    findings = report.by_id("kep2535.preflight")
    got = [(str(f.status), f.subject, f.message) for f in findings if str(f.status) != "pass"]
    assert [(status, subject) for status, subject, _ in got] == [
        (status, subject) for status, subject, _ in expected
    ]
    for (_, _, message), (_, _, needle) in zip(got, expected, strict=True):
        assert needle in message
    if not expected:
        [passed] = findings
        assert "2 image(s) of containers and image volumes" in passed.message


def test_no_exec_skips_plugin_runs(node: Path, tmp_path: Path) -> None:
    report = doctor(node, tmp_path, no_exec=True)
    assert {str(c.status) for c in report.by_id("plugin.responds")} == {"skip"}


def test_fifo_in_the_root_does_not_hang(node: Path, tmp_path: Path) -> None:
    (node / "etc/default/kubelet").unlink()
    os.mkfifo(node / "etc/default/kubelet")
    (node / "etc/hostname").unlink()
    os.mkfifo(node / "etc/hostname")
    start = time.monotonic()
    report = doctor(node, tmp_path, no_exec=True)
    assert time.monotonic() - start < 10
    assert any("not a regular file" in note for note in report.node["notes"])
    assert report.by_id("kubelet.flags")[0].status == Status.FAIL  # bin dir from kubeadm env only


def test_symlinks_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/escape").symlink_to("/etc/passwd")
    (root / "etc/up").symlink_to("../../../../../../etc/hostname")
    fs = NodeRoot(str(root))
    assert fs.host_path("/etc/escape") == str(root / "etc/passwd")
    assert fs.host_path("/etc/up") == str(root / "etc/hostname")
    with pytest.raises(FileNotFoundError):
        fs.read("/etc/escape")


def test_secrets_are_never_printed(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The canary is a provider env value and the password every plugin answers with; make
    # one plugin fail loudly with it on stderr too.
    _plugin(node, "mirror-provider", '#!/bin/sh\necho "denied: $PASSWORD" >&2\nexit 1\n')
    args = ["doctor", "--node-root", str(node), "--image", "registry-a.example.com/x:v1"]
    assert main(args) == 1
    assert main([*args, "-o", "json"]) == 1
    out = capsys.readouterr()
    assert CANARY not in out.out + out.err
    # Said which variable, not its value, in the text and the JSON.
    assert out.out.count("<env PASSWORD of provider mirror-provider>") == 2


# -- the running kubelet (/proc) ----------------------------------------------------------------------


def test_finds_a_running_kubelet_by_its_proc_cmdline(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "kubelet"
    shutil.copy2("/bin/sh", stand_in)  # comm is "kubelet"
    config = tmp_path / "cp.yaml"
    config.write_text(nodes.provider_config(token_provider=False))
    proc = subprocess.Popen(
        [
            str(stand_in),
            "-c",
            "sleep 60; :",
            f"--image-credential-provider-config={config}",
            "--image-credential-provider-bin-dir",
            str(bin_dir),
            "--hostname-override=Stand-In",
        ]
    )
    try:
        deadline = time.monotonic() + 5
        while True:
            setup = discover(NodeRoot("/"))
            if setup.pid == proc.pid or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert setup.pid == proc.pid
        origin = f"/proc/{proc.pid}/cmdline"
        assert setup.values["imageCredentialProviderConfig"].value == str(config)
        assert setup.values["imageCredentialProviderConfig"].source == origin
        assert setup.values["imageCredentialProviderBinDir"].value == str(bin_dir)
        assert setup.values["nodeName"].value == "stand-in"
        report = run_doctor(DoctorOptions(no_exec=True))
        (flags,) = report.by_id("kubelet.flags")
        assert flags.status == Status.PASS and origin in flags.message
        # plugins are missing from this bin dir: the doctor says so
        assert {str(c.status) for c in report.by_id("plugin.present")} == {"fail"}
    finally:
        proc.kill()
        proc.wait()


# -- the CLI -------------------------------------------------------------------------------------------


def test_cli_json_shape_and_exit_codes(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--node-root", str(node), "--no-exec", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"node", "checks", "summary"}
    assert set(doc["summary"]) == {"pass", "warn", "fail", "skip"}
    for check in doc["checks"]:
        assert set(check) == {"id", "status", "subject", "message", "hint"}
    assert main(["doctor", "--node-root", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["doctor", "--node-root", str(node), "--objects", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--objects" in err
    with pytest.raises(SystemExit) as exc:
        main(["doctor", "--cri", "unix:///x", "--node-images", "f"])
    assert exc.value.code == 2


def test_cli_text_colour_only_on_a_tty(
    node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from credprov.doctor import render_text

    report = run_doctor(DoctorOptions(root=str(node), no_exec=True))
    assert "\033[" in render_text(report, colour=True)
    assert main(["doctor", "--node-root", str(node), "--no-exec"]) == 0
    out = capsys.readouterr().out
    assert "\033[" not in out
    assert out.rstrip().endswith("14 pass, 0 warn, 0 fail, 5 skip")
    assert "\nplugins\n" in out and "PASS kubelet.flags" in out


def test_readme_example_is_this_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """README "Diagnose a node" shows exactly what the command prints on the fixture."""
    import re

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    block = readme.split("## Diagnose a node", 1)[1].split("```console\n", 1)[1]
    block = block.split("```", 1)[0]
    command, _, expected = block.partition("\n    --image quay.io/other/app:v1 ")
    expected = expected.split("\n", 1)[1]
    root = nodes.kubeadm_node(tmp_path / "node-a")
    nodes.write_objects(tmp_path / "cluster.json")
    nodes.write_images(tmp_path / "images.json")
    monkeypatch.chdir(tmp_path)
    args = [
        "doctor",
        "--node-root",
        str(root),
        "--image",
        "registry-a.example.com/team/app:v1",
        "--image",
        "quay.io/other/app:v1",
        "--objects",
        "cluster.json",
        "--node-images",
        "images.json",
    ]
    assert command.startswith("$ credprov doctor --node-root /mnt/node-a --image")
    assert main(args) == 0
    out = capsys.readouterr().out.replace(str(root), "/mnt/node-a")

    def norm(text: str) -> str:
        return re.sub(r"answered in \d+ms", "answered in Nms", text)

    assert norm(out) == norm(expected)
