"""One escaping rule for everything printed from a file (issue 32, item 6).

A registry host in a node's ``hosts.toml`` may hold what Go's ``url.Parse`` lets through
(bidirectional controls, C1 codes: non-ASCII bytes in a host are not refused), a scenario's
step name anything YAML can write. ``explain``, ``simulate`` and the doctor print them in
their text output, and errors quote them: each shows every control as an escape
(:func:`credprov.base.report.text`), so no line is forged, recoloured or reordered. Before,
``explain`` and ``simulate`` printed mirror hosts raw.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from credprov.base.redact import UNSAFE_CHARACTERS
from credprov.cli.main import main
from credprov.doctor.cli import main as doctor_main
from tests.unit.doctor import nodes

ROOT = Path(__file__).resolve().parents[2]
UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]")


def raw_controls(output: str) -> list[str]:
    """The lines of ``output`` holding a raw control (the newlines ending lines aside)."""
    return [line for line in output.split("\n") if UNSAFE.search(line)]


#: What a hostile file holds: bidi override, NEL (C1), CSI (C1), ESC, a zero-width joiner
#: would be harmless; these are not.
HOSTILE = {
    "bidi": "\u202e",
    "nel": "\u0085",
    "csi": "\u009b31m",
    "isolate": "\u2066",
}
CONFIG = """apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: hub
  matchImages: ["registry.example.com", "docker.io"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
"""


def _certs(tmp_path: Path, namespace: str, evil: str) -> Path:
    certs = tmp_path / "certs.d"
    (certs / namespace).mkdir(parents=True)
    host = json.dumps(f"https://mirror{evil}.example", ensure_ascii=False)
    (certs / namespace / "hosts.toml").write_text(f"[host.{host}]\n", encoding="utf-8")
    return certs


def _explain(tmp_path: Path, evil: str) -> list[str]:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    certs = _certs(tmp_path, "docker.io", evil)
    return ["explain", "nginx", "--config", str(config), "--containerd-config-path", str(certs)]


def _simulate(tmp_path: Path, evil: str) -> list[str]:
    scenario = ROOT / "config" / "simulate-blog-pod-a-pod-b.yaml"
    text = scenario.read_text().replace(
        "name: Pod A pulls image Foo with Secret 1", f"name: {json.dumps('Pod A' + evil)}"
    )
    hostile = tmp_path / "scenario.yaml"
    hostile.write_text(text, encoding="utf-8")
    certs = _certs(tmp_path, "registry.example.com", evil)
    return ["simulate", str(hostile), "--containerd-config-path", str(certs)]


COMMANDS = {"explain": _explain, "simulate": _simulate}


@pytest.mark.parametrize("evil", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_text_output_escapes_what_files_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, evil: str
) -> None:
    code = main(COMMANDS[command](tmp_path, evil))
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert "mirror" in out
    assert raw_controls(out + err) == []
    assert f"\\u{ord(evil[0]):04x}" in out or f"\\x{ord(evil[0]):02x}" in out


@pytest.mark.parametrize("evil", list(HOSTILE.values()), ids=list(HOSTILE))
def test_doctor_text_output_escapes_what_files_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], evil: str
) -> None:
    node = nodes.kubeadm_node(tmp_path / "node")
    nodes.write(
        node,
        "/etc/containerd/config.toml",
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
        '  config_path = "/etc/containerd/certs.d"\n',
    )
    host = json.dumps(f"https://mirror{evil}.example", ensure_ascii=False)
    nodes.write(node, "/etc/containerd/certs.d/docker.io/hosts.toml", f"[host.{host}]\n")
    code = doctor_main(["--node-root", str(node), "--no-exec", "--image", "nginx"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert "runtime.mirrors" in out
    assert raw_controls(out + err) == []


@pytest.mark.parametrize(
    ("hosts_toml", "says"),
    [
        ('[host."https://a\\nPASS.example"]\n', "invalid control character in URL"),
        ('server = "https://a\\u001b[31m.example"\n', "invalid control character in URL"),
        ('[host."https://a\\u202e b.example"]\n', "invalid character"),
    ],
)
def test_errors_quoting_a_file_escape_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hosts_toml: str, says: str
) -> None:
    """A newline in a TOML key forged PASS lines before; now the host is refused (Go's
    url.Parse) and the error is one escaped line."""
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    certs = tmp_path / "certs.d"
    (certs / "docker.io").mkdir(parents=True)
    (certs / "docker.io" / "hosts.toml").write_text(hosts_toml, encoding="utf-8")
    code = main(
        ["explain", "nginx", "--config", str(config), "--containerd-config-path", str(certs)]
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert says in err and err.count("\n") == 1 and raw_controls(out + err) == []
