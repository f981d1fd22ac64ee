"""``kubelet.go``: the doctor reads the node's kubelet binary and follows its Go, unless an
option chose one; a ``host::5000`` entry is valid exactly when that kubelet accepts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from credprov._go.version import current_go
from credprov.doctor import DoctorOptions, Status, run_doctor
from tests import goelf
from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import CONFIG, write

_COLONS_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: registry-a-provider
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    matchImages: ["host::5000"]
    defaultCacheDuration: 1m
"""


def _k3s_process_env(root: Path, environ: bytes) -> None:
    (root / "proc/4242/environ").write_bytes(environ)


#: (name, how the node's kubelet is planted, DoctorOptions extras,
#:  kubelet.go status, words in its message, provider-config.valid status, Go followed)
CASES = [
    ("1.34-style kubelet rebuilt with Go 1.26",
     lambda r: nodes.write_kubelet(r, "go1.26.6", "urlstrictcolons=0"), {},
     Status.PASS, "GODEBUG urlstrictcolons=0 (from its DefaultGODEBUG", Status.PASS,
     "1.26.6 with GODEBUG urlstrictcolons=0"),
    ("Go 1.26 kubelet with its own defaults",
     lambda r: nodes.write_kubelet(r, "go1.26.6", ""), {},
     Status.PASS, "no GODEBUG setting changes what it accepts", Status.FAIL, "1.26.6"),
    ("--go-debug over the binary",
     lambda r: nodes.write_kubelet(r, "go1.26.6", "urlstrictcolons=0"),
     {"go_debug": "urlstrictcolons=1"}, Status.PASS, "no GODEBUG setting", Status.FAIL,
     "1.26.6"),
    ("an operator's choice that contradicts the binary",
     lambda r: nodes.write_kubelet(r, "go1.26.6", "urlstrictcolons=0"),
     {"go_choice": "--go-version"}, Status.WARN, "but credprov follows Go 1.25.5 (--go-version)",
     Status.PASS, "1.25.5"),
    ("a kubelet that is a shell script",
     lambda r: write(r, "/usr/bin/kubelet", "#!/bin/sh\nexec /opt/kubelet \"$@\"\n", 0o755), {},
     Status.WARN, "(not an ELF file (not a Go binary for Linux)); credprov follows Go 1.25.5 "
     "(the default)", Status.PASS, "1.25.5"),
    ("no kubelet binary in the root",
     lambda r: (r / "usr/bin/kubelet").unlink(), {},
     Status.SKIP, "the kubelet's binary /usr/bin/kubelet is not in the node's root",
     Status.PASS, "1.25.5"),
    ("a FIFO where the kubelet should be",
     lambda r: ((r / "usr/bin/kubelet").unlink(), __import__("os").mkfifo(r / "usr/bin/kubelet")),
     {}, Status.WARN, "not a regular file", Status.PASS, "1.25.5"),
]  # fmt: skip


@pytest.mark.parametrize(
    "plant, extra, status, words, config_status, follows",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_kubelet_go(
    tmp_path: Path,
    plant: object,
    extra: dict[str, str],
    status: Status,
    words: str,
    config_status: Status,
    follows: str,
) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    write(root, CONFIG, _COLONS_CONFIG)
    plant(root)  # type: ignore[operator]
    report = run_doctor(DoctorOptions(root=str(root), no_exec=True, **extra))  # type: ignore[arg-type]
    (finding,) = report.by_id("kubelet.go")
    assert finding.status == status, finding
    assert words in finding.message, finding.message
    assert "\n" not in finding.message
    assert report.by_id("provider-config.valid")[0].status == config_status
    assert str(current_go()) == follows


def test_the_running_process_godebug_wins_over_the_binary(tmp_path: Path) -> None:
    # k3s: the kubelet runs inside /usr/local/bin/k3s; its environment's GODEBUG overrides
    # the binary's defaults, and nothing else of the environment is read into the report.
    root = nodes.k3s_node(tmp_path / "k3s")
    path = root / "usr/local/bin/k3s"
    path.parent.mkdir(parents=True, exist_ok=True)
    goelf.write(
        path, goelf.elf(goelf.blob("go1.26.6", goelf.modinfo(module="github.com/k3s-io/k3s")))
    )
    _k3s_process_env(
        root, b"HOME=/root\0AWS_SECRET_ACCESS_KEY=hunter2\0GODEBUG=urlstrictcolons=1\0"
    )
    report = run_doctor(DoctorOptions(root=str(root), no_exec=True))
    (finding,) = report.by_id("kubelet.go")
    assert finding.status == Status.PASS
    assert "module github.com/k3s-io/k3s" in finding.message
    assert "no GODEBUG setting changes" in finding.message
    assert "hunter2" not in str(report.to_dict())
    assert str(current_go()) == "1.26.6"
    _k3s_process_env(root, b"GODEBUG=panicnil=1\0")
    report = run_doctor(DoctorOptions(root=str(root), no_exec=True))
    assert str(current_go()) == "1.26.6 with GODEBUG urlstrictcolons=0"
