"""``doctor --npd`` and ``deploy/npd/``: node-problem-detector's custom plugin protocol.

Facts from kubernetes/node-problem-detector (``pkg/custompluginmonitor``): NPD runs a rule's
``path`` with its ``args``, kills it at the rule's ``timeout``, maps exit 0 to OK, 1 to a
problem and anything else to unknown, reads at most 4 KiB of stdout, trims white space and
cuts the message at ``max_output_length`` bytes (default 80). :func:`npd_call` does the same
with a real subprocess. The config is checked against the fields NPD's
``CustomPluginConfig``/``CustomRule``/``Condition`` read and the rules its ``Validate``
applies (plugin ``custom``, a permanent rule's condition among the defaults, no rule timeout
above the global one).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from credprov._go.durations import parse_duration
from credprov.doctor import Finding, Report, Status, npd
from credprov.doctor.cli import build_parser
from tests.unit.doctor import nodes

REPO = Path(__file__).resolve().parents[3]
NPD_DIR = REPO / "deploy" / "npd"
MONITOR = NPD_DIR / "credprov-doctor-monitor.json"
PATCH = NPD_DIR / "npd-daemonset-patch.yaml"

#: What NPD reads (json tags of CustomPluginConfig, pluginGlobalConfig, CustomRule, Condition).
TOP_KEYS = {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"}
PLUGIN_CONFIG_KEYS = {"invoke_interval", "timeout", "max_output_length", "concurrency",
                      "enable_message_change_based_condition_update", "skip_initial_status"}  # fmt: skip
RULE_KEYS = {"type", "condition", "reason", "path", "args", "timeout", "invoke_interval"}
CONDITION_KEYS = {"type", "reason", "message"}
#: NPD's defaults when pluginConfig leaves them out.
NPD_DEFAULT_TIMEOUT = "5s"
NPD_MAX_STDOUT = 4096

# -- the protocol as NPD calls it --------------------------------------------------------------


def npd_call(argv: list[str], timeout: float = 60) -> tuple[str, str]:
    """Run ``argv`` as NPD's custom plugin monitor does: (status, message), with status
    ``ok``, ``problem`` or ``unknown``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "unknown", "timeout"
    message = out[:NPD_MAX_STDOUT].decode("utf-8", "replace").strip()[:80]
    return {0: "ok", 1: "problem"}.get(proc.returncode, "unknown"), message


def doctor(*args: str) -> list[str]:
    return [sys.executable, "-m", "credprov.doctor.cli", "--npd", *args]


def test_a_healthy_node_is_ok_with_its_summary(tmp_path: Path) -> None:
    node = nodes.kubeadm_node(tmp_path / "node")
    status, message = npd_call(doctor("--node-root", str(node), "--no-exec"))
    assert (status, message) == ("ok", "credprov doctor: no check failed (14 pass, 0 warn, 0 fail)")


def test_a_broken_setup_is_a_problem_naming_the_check(tmp_path: Path) -> None:
    node = nodes.kubeadm_node(tmp_path / "node")
    nodes.write(node, nodes.CONFIG, "apiVersion: nope\n")
    status, message = npd_call(doctor("--node-root", str(node), "--no-exec"))
    assert status == "problem"
    assert message.startswith("provider-config.valid failed for /etc/kubernetes/")
    assert len(message) <= npd.MAX_MESSAGE


def test_a_node_that_cannot_be_judged_is_unknown_with_the_reason(tmp_path: Path) -> None:
    status, message = npd_call(doctor("--node-root", str(tmp_path / "missing")))
    assert status == "unknown"
    assert message.startswith("credprov doctor could not run: --node-")
    assert message.endswith("missing: not a directory")  # the cause, whole


def test_no_secret_reaches_stdout(tmp_path: Path) -> None:
    node = nodes.kubeadm_node(tmp_path / "node")
    proc = subprocess.run(doctor("--node-root", str(node)), capture_output=True, timeout=120,
                          check=False)  # fmt: skip
    assert nodes.CANARY.encode() not in proc.stdout + proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1


# -- the message --------------------------------------------------------------------------------


def report(*findings: Finding) -> Report:
    return Report(node={}, checks=list(findings))


@pytest.mark.parametrize(
    "findings, status, message",
    [
        (
            [Finding("kubelet.flags", Status.PASS)],
            npd.OK,
            "credprov doctor: no check failed (1 pass, 0 warn, 0 fail)",
        ),
        (
            [Finding("kubelet.flags", Status.PASS), Finding("image.match", Status.WARN, "x")],
            npd.OK,
            "credprov doctor: no check failed (1 pass, 1 warn, 0 fail)",
        ),
        (
            [Finding("plugin.responds", Status.FAIL, "ecr", "pw=hunter2", "hint")],
            npd.PROBLEM,
            "plugin.responds failed for ecr",
        ),
        (
            [Finding("kubelet.flags", Status.FAIL), Finding("plugin.present", Status.FAIL, "a")],
            npd.PROBLEM,
            "kubelet.flags failed (+1 more)",
        ),
    ],
    ids=["pass", "warn-is-ok", "fail-subject-no-message", "fail-more"],
)
def test_verdict(findings: list[Finding], status: int, message: str) -> None:
    assert npd.verdict(report(*findings)) == (status, message)


def test_a_long_or_strange_subject_gives_way_and_stays_ascii() -> None:
    subject = "registry.example.com/" + "ü\n\x1b" * 100
    findings = [Finding("image.match", Status.FAIL, subject)] * 3
    status, message = npd.verdict(report(*findings))
    assert status == npd.PROBLEM
    assert len(message) <= npd.MAX_MESSAGE and message.isascii() and message.isprintable()
    assert message.startswith("image.match failed for registry.example.com")
    assert message.endswith(" (+2 more)") and "..." in message


def test_unknown_is_bounded() -> None:
    status, message = npd.unknown("x" * 500)
    assert status == npd.UNKNOWN and len(message) == npd.MAX_MESSAGE


# -- deploy/npd ---------------------------------------------------------------------------------


def monitor() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(MONITOR.read_text())
    return doc


def test_monitor_config_has_only_the_fields_npd_reads() -> None:
    doc = monitor()
    assert set(doc) <= TOP_KEYS
    assert doc["plugin"] == "custom"
    assert doc["source"]
    assert set(doc["pluginConfig"]) <= PLUGIN_CONFIG_KEYS
    for condition in doc["conditions"]:
        assert set(condition) == CONDITION_KEYS
    for rule in doc["rules"]:
        assert set(rule) <= RULE_KEYS and {"type", "reason", "path"} <= set(rule)
        assert rule["type"] in ("temporary", "permanent")


def test_monitor_config_passes_npds_validation() -> None:
    doc = monitor()
    config = doc["pluginConfig"]
    global_timeout = parse_duration(config.get("timeout", NPD_DEFAULT_TIMEOUT))
    parse_duration(config["invoke_interval"])
    assert config["max_output_length"] >= npd.MAX_MESSAGE
    conditions = {c["type"] for c in doc["conditions"]}
    assert conditions == {"CredentialProviderProblem"}
    types = {r["type"] for r in doc["rules"]}
    assert types == {"temporary", "permanent"}
    for rule in doc["rules"]:
        if rule["type"] == "permanent":
            assert rule["condition"] in conditions
        assert parse_duration(rule["timeout"]) <= global_timeout


def test_monitor_rules_run_the_doctor_as_npd_and_within_npds_timeout() -> None:
    for rule in monitor()["rules"]:
        args = build_parser().parse_args(rule["args"])
        assert args.npd and args.every is None and args.node_root == "/host"
        timeout = parse_duration(rule["timeout"])
        if not args.no_exec:
            # The doctor's own plugin deadline ends before NPD would kill it.
            assert args.plugins_deadline < timeout
        assert rule["path"] == "/credprov/credprov-plugins/doctor"


def test_npd_daemonset_patch_mounts_what_the_rules_need() -> None:
    import jsonpatch

    npd_ds = {  # the shape of upstream's deployment/node-problem-detector.yaml
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-problem-detector", "namespace": "kube-system"},
        "spec": {"template": {"spec": {
            "containers": [{"name": "node-problem-detector",
                            "command": ["/node-problem-detector", "--logtostderr"],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "log", "mountPath": "/var/log"}]}],
            "volumes": [{"name": "log", "hostPath": {"path": "/var/log/"}}]}}},
    }  # fmt: skip
    ops = yaml.safe_load(PATCH.read_text())
    pod = jsonpatch.apply_patch(npd_ds, ops)["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["command"] == ["/bin/cp", "-a", "/credprov-plugins", "/credprov/"]
    npd_container = pod["containers"][0]
    mounts = {m["mountPath"]: m for m in npd_container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/host"]["name"]]["hostPath"]["path"] == "/"
    assert mounts["/host"]["readOnly"] is True
    assert "emptyDir" in volumes[mounts["/credprov"]["name"]]
    flag = npd_container["command"][-1]
    assert flag == f"--config.custom-plugin-monitor=/credprov-config/{MONITOR.name}"
    # NPD's stock limits (10m, 80Mi) make a run take over a minute and time plugins out
    # (benchmarks/bench_doctor_limits.py): the patch sets what a run needs.
    resources = npd_container["resources"]
    assert parse_cpu(resources["limits"]["cpu"]) >= 0.5
    assert parse_mib(resources["limits"]["memory"]) >= 256
    assert parse_mib(resources["requests"]["memory"]) >= 100
    # The doctor's sandbox mounts: containerd's default AppArmor profile denies mount.
    assert npd_container["securityContext"]["appArmorProfile"] == {"type": "Unconfined"}
    assert npd_container["securityContext"]["privileged"] is True  # upstream's, kept


def parse_cpu(value: str) -> float:
    return int(value[:-1]) / 1000 if value.endswith("m") else float(value)


def parse_mib(value: str) -> int:
    units = {"Mi": 1, "Gi": 1024}
    return int(value[:-2]) * units[value[-2:]]


# -- NPD's protocol on every path (issue 32, item 5) ----------------------------------------


def _enospc(fd: int) -> None:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize(
    ("row", "extra", "status", "starts"),
    [
        ("healthy", [], 0, "credprov doctor: no check failed"),
        ("textfile cannot be written", ["--textfile", "{dir}/d.prom", "enospc"], 0,
         "credprov doctor: no check failed"),
        ("textfile not .prom", ["--textfile", "{dir}/d.txt"], 2,
         "credprov doctor could not run: --textfile "),
        ("textfile is a directory", ["--textfile", "{dir}"], 2,
         "credprov doctor could not run: --textfile "),
        ("with --every", ["--every", "1m", "--textfile", "{dir}/d.prom"], 2,
         "credprov doctor could not run: --npd runs once per call"),
        ("unknown option", ["--bogus"], 2,
         "credprov doctor could not run: usage: unrecognized arguments: --bogus"),
        ("bad duration", ["--plugin-timeout", "\x1b[31mforever\u202e"], 2,
         "credprov doctor could not run: usage: argument --plugin-timeout"),
        ("missing root", ["--node-root", "{dir}/missing\n\u0085PASS"], 2,
         "credprov doctor could not run: --node-root "),
    ],
)  # fmt: skip
def test_every_path_prints_one_bounded_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    row: str,
    extra: list[str],
    status: int,
    starts: str,
) -> None:
    """Before: a textfile that could not be written was exit 1 with nothing on stdout (NPD
    set the problem condition with no message on a healthy node), usage errors printed
    nothing on stdout."""
    from credprov.base import fileio
    from credprov.doctor.cli import main

    node = nodes.kubeadm_node(tmp_path / "node")
    argv = ["--npd", "--node-root", str(node), "--no-exec"]
    for word in extra:
        if word == "enospc":
            monkeypatch.setattr(fileio.os, "fsync", _enospc)
        else:
            argv.append(word.format(dir=tmp_path))
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr().out
    assert code == status, out
    assert out.endswith("\n") and out.count("\n") == 1, out
    line = out[:-1]
    # A long line is shortened in the middle (its cause, at the end, is kept).
    head, cut, _tail = line.partition("...")
    assert line.startswith(starts) or (cut and starts.startswith(head)), line
    assert len(line.encode()) <= npd.MAX_MESSAGE and line.isascii() and line.isprintable()


@pytest.mark.parametrize(
    "argv",
    [["--npd", "--bogus"], ["--npd", "--every", "99999999h"], ["--npd", "--textfile", "x.txt"]],
)
def test_usage_errors_through_credprov_doctor_print_npds_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    from credprov.cli.main import main as credprov_main

    try:
        code = credprov_main(["doctor", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr().out
    assert code == 2
    assert out.count("\n") == 1 and out.startswith("credprov doctor could not run: ")
    assert len(out[:-1].encode()) <= npd.MAX_MESSAGE
