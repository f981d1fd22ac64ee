"""The doctor's report: one model with ``plugin test``, text that a node file cannot forge,
secrets shown by label, and usage errors under credprov's error root."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from credprov.base import report as base
from credprov.base.redact import UNSAFE_CHARACTERS
from credprov.cli import doctor_cmd
from credprov.cli.main import main
from credprov.credentialprovider.plugin import conformance
from credprov.doctor import DoctorUsageError, Finding, Report, Status, render_text
from credprov.doctor.report import GROUPS
from credprov.errors import CredprovError, UsageError
from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import BIN, CONFIG, write

# -- text output: what a node holds cannot add a line or reach the terminal raw -----------------

#: A line of its own, a carriage return, an escape sequence (clear screen), a C1 CSI and a
#: right-to-left override.
FORGED = "\n  PASS forged\r\x1b[2J\x9b\u202e"
#: What a flag word in an EnvironmentFile can carry: its line ends at LF or CR, its word at
#: whitespace (systemd's rules), so not the first part.
FORGED_WORD = "\x1b[2J\x9b\u202e"
#: A provider name: the kubelet refuses U+0020 only (strings.Contains(name, " ")).
FORGED_NAME = "mirror-provider\n\tPASS\rforged\x1b[2J\x9b\u202e"

_RAW = re.compile(f"[{UNSAFE_CHARACTERS}]")
_IDS = "|".join(re.escape(i) for i in GROUPS)
_LINE = re.compile(
    "|".join(
        [
            "",
            "node",
            *(re.escape(g) for g in dict.fromkeys(GROUPS.values())),
            r"  [\w.-]+: .*",  # a node value (keys have no spaces)
            rf"  (PASS|WARN|FAIL|SKIP) ({_IDS})( \[.*\])?: .*",
            r"       hint: .*",
            r"\d+ pass, \d+ warn, \d+ fail(, \d+ skip)?",
        ]
    )
)


def _kubeadm_files(root: Path) -> list[str]:
    """The hostname, a flag in /etc/default/kubelet and a provider name carry the forgery."""
    nodes.kubeadm_node(root)
    write(root, "/etc/hostname", f"Node-A{FORGED}\n")
    write(
        root,
        "/etc/default/kubelet",
        f'KUBELET_EXTRA_ARGS="--image-credential-provider-config={CONFIG} '
        f"--image-credential-provider-bin-dir {BIN} "
        f'--container-runtime-endpoint=unix:///run/c.sock{FORGED_WORD}"\n',
    )
    config = json.loads((root / CONFIG.lstrip("/")).read_text())
    config["providers"][2]["name"] = FORGED_NAME
    write(root, CONFIG, json.dumps(config))
    return [
        "node-a\\n  pass forged\\r\\x1b[2j\\x9b\\u202e",  # the hostname, lower-cased
        "unix:///run/c.sock\\x1b[2J\\x9b\\u202e",
        "[mirror-provider\\n\\tPASS\\rforged\\x1b[2J\\x9b\\u202e]",
    ]


def _kubelet_process(root: Path) -> list[str]:
    """A running kubelet whose /proc/<pid>/cmdline arguments carry the forgery."""
    nodes.kubeadm_node(root)
    write(root, "/proc/77/comm", "kubelet\n")
    args = [
        "/usr/bin/kubelet",
        f"--image-credential-provider-config={CONFIG}{FORGED}",
        f"--image-credential-provider-bin-dir={BIN}",
        f"--hostname-override=Node-C{FORGED}",
    ]
    (root / "proc/77/cmdline").write_bytes("\0".join(args).encode() + b"\0")
    return [
        f"[{CONFIG}\\n  PASS forged\\r\\x1b[2J\\x9b\\u202e]",  # a finding's subject
        "node-c\\n  pass forged\\r\\x1b[2j\\x9b\\u202e",
    ]


@pytest.mark.parametrize("forge", [_kubeadm_files, _kubelet_process])
def test_node_values_cannot_forge_lines_or_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], forge: Callable[[Path], list[str]]
) -> None:
    root = tmp_path / "node"
    shown = forge(root)
    args = ["doctor", "--node-root", str(root), "--no-exec"]
    main([*args, "-o", "json"])
    document = capsys.readouterr().out
    assert not _RAW.search(document.replace("\n", "")), "raw control in the JSON"
    doc = json.loads(document)
    # JSON keeps the values exact.
    assert FORGED.lower() in doc["node"]["nodeName"]["value"]
    main(args)
    out = capsys.readouterr().out
    lines = out.split("\n")
    assert lines.pop() == ""
    for line in lines:
        assert not _RAW.search(line), repr(line)
        assert _LINE.fullmatch(line), f"not a line the doctor prints: {line!r}"
    findings = [line for line in lines if re.match(r"  (PASS|WARN|FAIL|SKIP) ", line)]
    assert len(findings) == len(doc["checks"])  # one finding, one line
    for text in shown:
        assert text in out


def test_plugin_test_and_doctor_render_through_one_sanitiser() -> None:
    report = Report(node={"nodeName": {"value": f"a{FORGED}", "source": f"s{FORGED}"}})
    report.checks = [
        Finding("kubelet.flags", Status.FAIL, f"subj{FORGED}", f"msg{FORGED}", f"hint{FORGED}"),
        Finding("a.check.not.in.groups", Status.WARN, "", "still printed"),
    ]
    out = render_text(report, colour=True)
    escaped = base.text(FORGED)
    assert escaped == "\\n  PASS forged\\r\\x1b[2J\\x9b\\u202e"
    for field in ("a", "s", "[subj", "msg", "hint: hint"):
        assert f"{field}{escaped}" in out
    # Only the colour codes are escape sequences.
    assert not _RAW.search(re.sub(r"\x1b\[\d+m", "", out).replace("\n", ""))
    # A check missing from GROUPS is printed last, under "other", not dropped.
    assert (
        out.split("\n\n")[-2] == "other\n  \x1b[33mWARN\x1b[0m a.check.not.in.groups: still printed"
    )
    line = conformance.format_line(conformance.Check(f"auth key r.io{FORGED}", Status.FAIL))
    assert line == f"FAIL  - -  auth key r.io{escaped}"


# -- secrets: labelled by what they are, never printed -------------------------------------------

#: The value of a provider's AWS_CONFIG_FILE, a file that does not exist on the node.
CONFIG_FILE_CANARY = "/etc/aws/canary-7f3e9-config"


def test_env_value_is_shown_by_its_label(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin names the file of its env's AWS_CONFIG_FILE in its error: the doctor says
    which variable it was. A one-character env value is not scrubbed (it would garble every
    word holding it)."""
    config = json.loads((node / CONFIG.lstrip("/")).read_text())
    mirror = config["providers"][2]
    mirror["env"] = [
        {"name": "AWS_CONFIG_FILE", "value": CONFIG_FILE_CANARY},
        {"name": "SHORT", "value": "e"},
    ]
    write(node, CONFIG, json.dumps(config))
    plugin = node / BIN.lstrip("/") / "mirror-provider"
    plugin.write_text(
        '#!/bin/sh\necho "open $AWS_CONFIG_FILE: no such file or directory" >&2\nexit 1\n'
    )
    args = ["doctor", "--node-root", str(node), "-o", "json"]
    assert main(args) == 1
    document = capsys.readouterr().out
    (responds,) = [
        c
        for c in json.loads(document)["checks"]
        if c["id"] == "plugin.responds" and c["subject"] == "mirror-provider"
    ]
    label = "<env AWS_CONFIG_FILE of provider mirror-provider>"
    assert f"open {label}: no such file or directory" in responds["message"]
    assert main(args[:-2]) == 1
    out = capsys.readouterr().out
    assert f"open {label}: no such file or directory" in out
    for printed in (document, out):
        assert CONFIG_FILE_CANARY not in printed
        assert "<env SHORT" not in printed


def test_report_redacts_by_label_in_every_spelling() -> None:
    token = "eyJhbGciOi.canary-token.sig"
    report = Report(node={})
    report.checks = [
        Finding("kep4412.rbac", Status.FAIL, token, f'got "{token}"', f"token\\u0026{token}"),
    ]
    report.redact({token: "<service-account token>", "x": "<env X of provider p>"})
    (finding,) = report.checks
    assert finding.subject == "<service-account token>"
    assert finding.message == 'got "<service-account token>"'
    assert token not in json.dumps(report.to_dict())


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


# -- one model, one error root -------------------------------------------------------------------


def test_doctor_and_plugin_test_share_one_model() -> None:
    assert conformance.Status is Status is base.Status
    assert issubclass(conformance.Check, base.Finding) and Finding is base.Finding
    assert issubclass(conformance.Report, base.Report) and issubclass(Report, base.Report)
    check = conformance.Check("exit", Status.PASS, "exit status 0", 0.01, "v", "img")
    assert (check.id, check.name, check.message, check.detail) == (
        "exit",
        "exit",
        *["exit status 0"] * 2,
    )
    scrubbed = check.scrubbed(lambda t: t.replace("0", "<zero>"))
    assert scrubbed == conformance.Check(
        "exit", Status.PASS, "exit status <zero>", 0.01, "v", "img"
    )
    doctor = Report(node={}, checks=[Finding("x", Status.FAIL), Finding("y", Status.SKIP)])
    plugin = conformance.Report("p", [], [], 1, checks=[check])
    assert (doctor.failed, doctor.ok, plugin.failed, plugin.ok) == (True, False, False, True)
    assert doctor.summary() == {"pass": 0, "warn": 0, "fail": 1, "skip": 1}
    assert plugin.to_dict()["counts"] == {"pass": 1, "fail": 0, "warn": 0, "skip": 0}


def test_usage_errors_are_credprov_errors_that_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert issubclass(DoctorUsageError, UsageError)
    assert issubclass(UsageError, CredprovError) and issubclass(UsageError, ValueError)

    def run(args: object) -> int:
        raise DoctorUsageError("--objects cluster.yaml: no such file\n  PASS forged")

    # The CLI maps the error itself, whichever command raises it.
    monkeypatch.setattr(doctor_cmd, "run", run)
    assert main(["doctor"]) == 2
    assert capsys.readouterr().err == (
        "credprov: error: --objects cluster.yaml: no such file PASS forged\n"
    )
