"""``credprov plugin test``: the conformance harness against good and broken plugins.

The shared fake plugin (tests/fixtures/fake_plugin.py) is deliberately lax about its input,
so a strict, configurable plugin is written into tmp for the cases it cannot play.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import pytest

from credprov._go.durations import MILLISECOND, SECOND
from credprov.cli.main import CLIError
from credprov.cli.plugin_test_cmd import add_test_parser, run
from credprov.credentialprovider.plugin.conformance import (
    Check,
    Report,
    Status,
    format_line,
    normalize_api_version,
    run_conformance,
)
from credprov.credentialprovider.plugin.exec import DEFAULT_PLUGIN_TIMEOUT
from tests.conftest import CANARY, install_fake_plugin

V1 = "credentialprovider.kubelet.k8s.io/v1"
V1BETA1 = "credentialprovider.kubelet.k8s.io/v1beta1"
IMAGE = "registry.io/team/app"
GOOD_PASSWORD = "good-password-0123"

# A plugin that does everything right, and misbehaves on request (GOOD_MODE).
GOOD_PLUGIN = r"""
import json, os, sys, time

GROUP = "credentialprovider.kubelet.k8s.io"
VERSIONS = [GROUP + "/" + v for v in ("v1alpha1", "v1beta1", "v1")]
mode = os.environ.get("GOOD_MODE", "")


def die(msg):
    sys.stderr.write(msg + "\n")
    sys.exit(1)


raw = sys.stdin.read()
if not raw and mode == "hang-on-eof":
    time.sleep(60)
try:
    req = json.loads(raw)
except ValueError:
    if mode == "leak":
        die("invalid request: " + raw)
    if mode == "accept-garbage":
        req = {"apiVersion": VERSIONS[-1], "kind": "CredentialProviderRequest", "image": "x/y"}
    else:
        die("invalid request: not JSON")
if not isinstance(req, dict):
    die("invalid request: not an object")
version = req.get("apiVersion")
if version not in VERSIONS and mode == "hang-on-unknown-version":
    time.sleep(60)
if version not in VERSIONS and mode == "v1-for-unknown-version":
    version = VERSIONS[-1]
if version not in VERSIONS and mode != "echo-any-version":
    die("leaky: " + json.dumps(req) if mode == "leak" else "unsupported apiVersion")
if req.get("kind") != "CredentialProviderRequest":
    die("leaky: " + json.dumps(req) if mode == "leak" else "unexpected kind")
allowed = {"kind", "apiVersion", "image"}
if version.endswith("/v1") or version not in VERSIONS:
    allowed |= {"serviceAccountToken", "serviceAccountAnnotations"}
if set(req) - allowed:
    die("unknown fields")
image = req.get("image")
if not image:
    die("leaky: " + json.dumps(req) if mode == "leak" else "empty image")
registry = image.split("/")[0]
password = os.environ.get("GOOD_PASSWORD", "good-password-0123")
if mode == "log-secrets":
    sys.stderr.write("got password " + password + " token " + req.get("serviceAccountToken", "") + "\n")
resp = {
    "kind": "CredentialProviderResponse",
    "apiVersion": version,
    "cacheKeyType": "Registry",
    "cacheDuration": "5m",
    "auth": {registry: {"username": "user", "password": password}},
}
sys.stdout.write(json.dumps(resp) + "\n")
"""


def write_plugin(directory: Path, name: str, source: str, shebang: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!{shebang or sys.executable + ' -IS'}\n{source}")
    path.chmod(0o755)
    return path


@pytest.fixture
def good(bin_dir: Path) -> Path:
    return write_plugin(bin_dir, "good", GOOD_PLUGIN)


@pytest.fixture
def fake(bin_dir: Path) -> Path:
    return install_fake_plugin(bin_dir, "fake")


def statuses(report: Report, name: str, version: str | None = V1) -> set[Status]:
    found = {c.status for c in report.checks if c.name == name and c.version == version}
    assert found, f"no check {name!r} for {version}: {[c.name for c in report.checks]}"
    return found


def report_text(report: Report) -> str:
    return "\n".join(format_line(c) for c in report.checks) + json.dumps(report.to_dict())


# -- a correct plugin -----------------------------------------------------------------------------


def test_correct_plugin_passes_everything(good: Path) -> None:
    report = run_conformance(str(good), [IMAGE, "other.registry.io/x"], [])
    assert report.ok, report_text(report)
    assert {c.status for c in report.checks} == {Status.PASS}, report_text(report)
    assert report.api_versions == [
        f"credentialprovider.kubelet.k8s.io/{v}" for v in ("v1alpha1", "v1beta1", "v1")
    ]
    for version in report.api_versions:
        assert statuses(report, "strict decode", version) == {Status.PASS}
    names = {c.name for c in report.checks}
    for case in (
        "malformed stdin",
        "closed stdin",
        "empty image",
        "unknown apiVersion",
        "wrong kind",
    ):
        assert f"{case}: rejected" in names
    assert "service-account fields accepted" in names
    assert GOOD_PASSWORD not in report_text(report)


def test_images_are_normalised_as_the_kubelet_sends_them(good: Path) -> None:
    report = run_conformance(str(good), ["nginx:1.25"], [V1])
    assert report.images == ["docker.io/library/nginx"]
    assert statuses(report, "auth matches image") == {Status.PASS}


def test_real_token_is_sent_in_v1_and_never_shown(good: Path) -> None:
    report = run_conformance(
        str(good), [IMAGE], [V1], service_account_token=CANARY, annotations={"a": "b"}
    )
    assert report.ok, report_text(report)
    # With a real token the dummy-token probe is not needed.
    assert "service-account fields accepted" not in {c.name for c in report.checks}
    assert statuses(report, "token not echoed") == {Status.PASS}


# -- one broken behaviour at a time ------------------------------------------------------------

V2 = "credentialprovider.kubelet.k8s.io/v2"
FAIL, WARN, SKIP = Status.FAIL, Status.WARN, Status.SKIP
Expect = list[tuple[str, str | None, Status]]

# id, plugin, env, timeout, [(check, apiVersion of the check, expected status)]; v1 requests.
CASES: list[tuple[str, str, dict[str, str], int | None, Expect]] = [
    (
        "wrong-apiVersion-echo",
        "fake",
        {"FAKE_API_VERSION": V1BETA1},
        None,
        [("apiVersion echoed", V1, FAIL)],
    ),
    (
        "invalid-cacheKeyType",
        "fake",
        {"FAKE_CACHE_KEY_TYPE": "Repository"},
        None,
        [("cacheKeyType", V1, FAIL)],
    ),
    ("empty-cacheKeyType", "fake", {"FAKE_CACHE_KEY_TYPE": ""}, None, [("cacheKeyType", V1, FAIL)]),
    (
        "bad-duration",
        "fake",
        {"FAKE_CACHE_DURATION": "5 minutes"},
        None,
        [("cacheDuration", V1, FAIL), ("strict decode", V1, FAIL)],
    ),
    ("absent-duration", "fake", {}, None, [("cacheDuration", V1, WARN)]),
    ("zero-duration", "fake", {"FAKE_CACHE_DURATION": "0s"}, None, [("cacheDuration", V1, WARN)]),
    ("unknown-field", "fake", {"FAKE_MODE": "unknown-field"}, None, [("strict decode", V1, FAIL)]),
    ("no-kind", "fake", {"FAKE_MODE": "no-kind"}, None, [("strict decode", V1, FAIL)]),
    (
        "not-json",
        "fake",
        {"FAKE_MODE": "bad-json"},
        None,
        [("apiVersion echoed", V1, FAIL), ("strict decode", V1, FAIL)],
    ),
    (
        "auth-key-not-matching",
        "fake",
        {"FAKE_AUTH_KEY": "other.io"},
        None,
        [("auth matches image", V1, FAIL), ("auth key other.io", V1, WARN)],
    ),
    (
        "auth-key-does-not-parse",
        "fake",
        {"FAKE_AUTH_KEY": "%zz.io"},
        None,
        [("auth key %zz.io", V1, FAIL), ("auth matches image", V1, FAIL)],
    ),
    (
        "no-credentials",
        "fake",
        {"FAKE_MODE": "empty-auth"},
        None,
        [("auth matches image", V1, WARN)],
    ),
    (
        "exit-1",
        "fake",
        {"FAKE_MODE": "exit1"},
        None,
        [("exit", V1, FAIL), ("cacheKeyType", V1, SKIP), ("strict decode", V1, SKIP)],
    ),
    (
        "hang-past-deadline",
        "fake",
        {"FAKE_MODE": "hang"},
        400 * MILLISECOND,
        # Judged within one deadline: the later cases are not run.
        [
            ("deadline", V1, FAIL),
            ("exit", V1, FAIL),
            ("service-account fields accepted", V1, SKIP),
            ("empty image: rejected", V1, SKIP),
        ],
    ),
    (
        "slow",
        "fake",
        {"FAKE_MODE": "sleep", "FAKE_SLEEP": "0.25"},
        2 * SECOND,
        [("deadline", V1, WARN)],
    ),
    # No kubelet sends v2: answering it (even with v2) is a warning, not a failure.
    ("answers-unknown-apiVersion", "fake", {}, None, [("unknown apiVersion: rejected", V2, WARN)]),
    (
        "lax-about-input",
        "fake",
        {},
        None,
        [
            ("malformed stdin: stderr", None, WARN),
            ("empty image: rejected", V1, WARN),
            ("wrong kind: rejected", V1, WARN),
        ],
    ),
    (
        "canary-in-stderr",
        "good",
        {"GOOD_MODE": "leak"},
        None,
        [
            ("malformed stdin: no secret in stderr", None, FAIL),
            ("unknown apiVersion: no secret in stderr", V2, FAIL),
            ("empty image: no secret in stderr", V1, FAIL),
            ("wrong kind: no secret in stderr", V1, FAIL),
        ],
    ),
    (
        "secrets-in-stderr",
        "good",
        {"GOOD_MODE": "log-secrets"},
        None,
        [("secrets not in stderr", V1, FAIL), ("token not in stderr", V1, FAIL)],
    ),
    (
        "accepts-malformed-stdin",
        "good",
        {"GOOD_MODE": "accept-garbage"},
        None,
        [("malformed stdin: rejected", None, FAIL)],
    ),
    (
        "hangs-on-closed-stdin",
        "good",
        {"GOOD_MODE": "hang-on-eof"},
        400 * MILLISECOND,
        [("closed stdin: rejected", None, FAIL)],
    ),
]


@pytest.mark.parametrize(
    ("plugin", "env", "timeout", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_broken_plugin_gives_expected_status(
    good: Path,
    fake: Path,
    plugin: str,
    env: dict[str, str],
    timeout: int | None,
    expected: Expect,
) -> None:
    binary = good if plugin == "good" else fake
    report = run_conformance(
        str(binary), [IMAGE], [V1], env=env, timeout_ns=timeout or DEFAULT_PLUGIN_TIMEOUT
    )
    for check, version, want in expected:
        assert statuses(report, check, version) == {want}, (check, report_text(report))
    if any(want == FAIL for _, _, want in expected):
        assert not report.ok
    # Whatever went wrong, no password and no token is ever shown.
    text = report_text(report)
    for secret in (GOOD_PASSWORD, "secret-password"):
        assert secret not in text


# GOOD_MODE, the status of "unknown apiVersion: rejected", whether the whole report passes.
UNKNOWN_VERSION_CASES = [
    ("", Status.PASS, True),  # rejects it
    ("echo-any-version", Status.WARN, True),  # answers v2 with v2: the kubelet never sends v2
    ("v1-for-unknown-version", Status.WARN, True),  # answers v2 with v1
    ("hang-on-unknown-version", Status.FAIL, False),  # a hang is still a failure
]


@pytest.mark.parametrize(("mode", "want", "ok"), UNKNOWN_VERSION_CASES, ids=lambda v: str(v))
def test_unknown_api_version_answer(good: Path, mode: str, want: Status, ok: bool) -> None:
    report = run_conformance(
        str(good), [IMAGE], [V1], env={"GOOD_MODE": mode}, timeout_ns=2 * SECOND
    )
    assert statuses(report, "unknown apiVersion: rejected", V2) == {want}, report_text(report)
    assert report.ok is ok, report_text(report)


def test_every_version_answered_with_v1_fails_older_versions(bin_dir: Path) -> None:
    response = json.dumps(
        {
            "kind": "CredentialProviderResponse",
            "apiVersion": V1,
            "cacheKeyType": "Image",
            "cacheDuration": "1m",
            "auth": {"*.registry.io": {"username": "u", "password": "sh-password-42"}},
        }
    )
    plugin = write_plugin(bin_dir, "sh", f"cat >/dev/null\necho '{response}'\n", "/bin/sh")
    report = run_conformance(str(plugin), ["team.registry.io/app"], [V1BETA1, V1])
    assert statuses(report, "apiVersion echoed", V1) == {Status.PASS}
    assert statuses(report, "apiVersion echoed", V1BETA1) == {Status.FAIL}
    # Strictness is judged in the declared version, apart from the echo.
    assert statuses(report, "strict decode", V1BETA1) == {Status.PASS}
    assert statuses(report, "auth matches image", V1BETA1) == {Status.PASS}
    # It never reads the request: it answers garbage and v2 alike.
    assert statuses(report, "malformed stdin: rejected", None) == {Status.FAIL}
    assert not report.ok
    assert "sh-password-42" not in report_text(report)


def test_decode_details_redact_passwords(fake: Path) -> None:
    # The duration error quotes the (password-valued) duration: it must be redacted. The
    # value is an env value too: the label names the variable, not the value.
    env = {"FAKE_PASSWORD": "hunter2-secret", "FAKE_CACHE_DURATION": "hunter2-secret"}
    report = run_conformance(str(fake), [IMAGE], [V1], env=env)
    decode = [c for c in report.checks if c.name == "strict decode"]
    assert decode[0].status == Status.FAIL
    assert 'invalid duration "<env FAKE_PASSWORD of provider fake>"' in decode[0].detail
    assert "hunter2-secret" not in report_text(report)


def test_echoed_token_warns_and_is_redacted(fake: Path) -> None:
    report = run_conformance(
        str(fake), [IMAGE], [V1], env={"FAKE_MODE": "echo-token"}, service_account_token=CANARY
    )
    assert statuses(report, "token not echoed") == {Status.WARN}
    assert CANARY not in report_text(report)


def test_dummy_token_echo_warns(fake: Path) -> None:
    report = run_conformance(str(fake), [IMAGE], [V1], env={"FAKE_MODE": "echo-token"})
    assert statuses(report, "token not echoed") == {Status.WARN}


def test_missing_binary_fails_exit_check(tmp_path: Path) -> None:
    report = run_conformance(str(tmp_path / "nope"), [IMAGE], [V1])
    assert statuses(report, "exit") == {Status.FAIL}
    assert not report.ok


@pytest.mark.parametrize(
    ("images", "versions", "timeout", "message"),
    [
        ([], [V1], SECOND, "at least one image"),
        (["registry.io/Upper"], [V1], SECOND, "invalid image"),
        ([IMAGE], ["v2"], SECOND, "unknown apiVersion"),
        ([IMAGE], [V1], 0, "positive"),
    ],
)
def test_caller_errors(
    good: Path, images: list[str], versions: list[str], timeout: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        run_conformance(str(good), images, versions, timeout_ns=timeout)


def test_normalize_api_version() -> None:
    assert normalize_api_version("v1") == V1
    assert normalize_api_version(V1BETA1) == V1BETA1
    with pytest.raises(ValueError):
        normalize_api_version("kubelet.config.k8s.io/v1")


def test_report_summary_and_line_format() -> None:
    report = Report("plugin", [IMAGE], [V1], SECOND)
    report.checks = [
        Check("exit", Status.PASS, "exit status 0", 0.01, V1, IMAGE),
        Check("empty image: rejected", Status.WARN, "exit status 0", 0.01, V1, ""),
        Check("closed stdin: rejected", Status.FAIL, "hangs", 1.0, None, None),
        Check("auth matches image", Status.SKIP, "", None, V1, IMAGE),
    ]
    lines = [format_line(c) for c in report.checks]
    assert lines == [
        f"PASS  v1 {IMAGE}  exit: exit status 0",
        'WARN  v1 ""  empty image: rejected: exit status 0',
        "FAIL  - -  closed stdin: rejected: hangs",
        f"SKIP  v1 {IMAGE}  auth matches image",
    ]
    assert not report.ok
    assert report.summary().startswith("FAIL: 4 checks: 1 passed, 1 failed, 1 warnings, 1 skipped")
    data = report.to_dict()
    assert data["counts"] == {"pass": 1, "fail": 1, "warn": 1, "skip": 1}
    assert data["timeout"] == "1s"


# -- the CLI, through a small argparse harness ---------------------------------------------------


def cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="credprov plugin")
    sub = parser.add_subparsers(dest="plugin_command")
    add_test_parser(sub)
    return parser.parse_args(["test", *argv])


def test_cli_good_plugin_exits_0(good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = cli([str(good), "--image", IMAGE, "--api-version", "v1", "--plugin-timeout", "30s"])
    assert run(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"PASS  v1 {IMAGE}  exit: exit status 0"
    assert out[-1].startswith("PASS: ")
    assert all(line.split()[0] in ("PASS", "FAIL", "WARN", "SKIP") for line in out[:-1])


def test_cli_failure_exits_1_and_json(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = cli(
        [
            str(fake),
            "--image",
            IMAGE,
            "--api-version",
            "v1",
            "--env",
            "FAKE_CACHE_KEY_TYPE=X",
            "-o",
            "json",
        ]
    )
    assert run(args) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert data["apiVersions"] == [V1]
    failed = {c["name"] for c in data["checks"] if c["status"] == "fail"}
    assert "cacheKeyType" in failed


def test_cli_args_and_token_file(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "token"
    token.write_text(CANARY + "\n")
    args = cli(
        [
            str(good),
            "--image",
            IMAGE,
            "--api-version",
            "v1",
            "--arg=--verbose",
            "--arg",
            "x",
            "--service-account-token-file",
            str(token),
            "--annotation",
            "k=v",
        ]
    )
    assert args.plugin_args == ["--verbose", "x"]
    assert args.annotations == [("k", "v")]
    assert run(args) == 0
    out = capsys.readouterr().out
    assert "token not echoed" in out
    assert CANARY not in out


def test_cli_binary_on_path(
    good: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(good.parent))
    assert run(cli(["good", "--image", IMAGE, "--api-version", "v1"])) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["plugin"],  # no --image
        ["plugin", "--image", IMAGE, "--api-version", "v9"],
        ["plugin", "--image", IMAGE, "--plugin-timeout", "0s"],
        ["plugin", "--image", IMAGE, "--plugin-timeout", "soon"],
        ["plugin", "--image", IMAGE, "--env", "NOEQUALS"],
        [
            "plugin",
            "--image",
            IMAGE,
            "--service-account-token",
            "t",
            "--service-account-token-file",
            "f",
        ],
    ],
)
def test_cli_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli(argv)
    assert exc.value.code == 2


def test_cli_errors(good: Path, tmp_path: Path) -> None:
    with pytest.raises(CLIError, match="not found"):
        run(cli([str(tmp_path / "missing"), "--image", IMAGE]))
    not_exec = tmp_path / "plain"
    not_exec.write_text("")
    with pytest.raises(CLIError, match="not executable"):
        run(cli([str(not_exec), "--image", IMAGE]))
    with pytest.raises(CLIError, match="invalid image"):
        run(cli([str(good), "--image", "Bad/Image"]))
    with pytest.raises(CLIError, match="cannot read"):
        run(
            cli(
                [
                    str(good),
                    "--image",
                    IMAGE,
                    "--service-account-token-file",
                    str(tmp_path / "none"),
                ]
            )
        )


def test_logged_real_token_fails_and_is_redacted(good: Path) -> None:
    report = run_conformance(
        str(good), [IMAGE], [V1], env={"GOOD_MODE": "log-secrets"}, service_account_token=CANARY
    )
    check = next(c for c in report.checks if c.name == "secrets not in stderr")
    assert check.status == Status.FAIL
    assert "service-account token" in check.detail
    assert CANARY not in report_text(report)


# -- a hung plugin is judged within one deadline ----------------------------------------------

HUNG_PLUGIN = "sleep 1000\n"


@pytest.mark.parametrize("output", ["text", "json"])
def test_hung_plugin_is_judged_within_one_deadline(
    bin_dir: Path, output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = write_plugin(bin_dir, "hung", HUNG_PLUGIN, "/bin/sh")
    # 3 versions x 2 images + the token probe + 5 negative cases: 12 runs, 12s if each
    # waited for its deadline.
    args = cli([str(plugin), "--image", IMAGE, "--image", "other.io/x", "--plugin-timeout", "1s"])
    args.output = output
    start = time.monotonic()
    assert run(args) == 1
    elapsed = time.monotonic() - start
    assert elapsed < 3 * 1 + 3, elapsed  # three deadlines and generous slack
    first = "the v1alpha1 request for registry.io/team/app overran the 1s deadline"
    out = capsys.readouterr().out
    if output == "json":
        checks = json.loads(out)["checks"]
        rows = [(c["name"], c["status"], c["detail"], c["apiVersion"], c["image"]) for c in checks]
    else:
        lines = out.splitlines()[:-1]
        assert lines[0].startswith(f"FAIL  v1alpha1 {IMAGE}  exit: ")
        rows = [(line, line.split()[0].lower(), line, None, None) for line in lines]
    # Only the first run was made (its exit and deadline FAIL); every later run is one SKIP
    # naming that first overrun.
    not_run = [r for r in rows if r[1] == "skip" and "not run: " in r[2]]
    assert all(first in r[2] for r in not_run)
    assert len(not_run) == 11
    if output == "json":
        assert [(r[0], r[1]) for r in rows[:2]] == [("exit", "fail"), ("deadline", "fail")]
        assert rows[1][2] == "killed at the 1s deadline"
        assert [(r[0], r[3], r[4]) for r in not_run] == [
            ("exit", V1BETA1, IMAGE),
            ("exit", V1, IMAGE),
            ("exit", "credentialprovider.kubelet.k8s.io/v1alpha1", "other.io/x"),
            ("exit", V1BETA1, "other.io/x"),
            ("exit", V1, "other.io/x"),
            ("service-account fields accepted", V1, IMAGE),
            ("malformed stdin: rejected", None, None),
            ("closed stdin: rejected", None, None),
            ("empty image: rejected", V1, ""),
            ("unknown apiVersion: rejected", V2, IMAGE),
            ("wrong kind: rejected", V1, IMAGE),
        ]
    else:
        assert lines[1] == f"FAIL  v1alpha1 {IMAGE}  deadline: killed at the 1s deadline"
        assert lines[-1] == (
            f"SKIP  v1 {IMAGE}  wrong kind: rejected: not run: {first}; a hung plugin is "
            "judged within one deadline"
        )


# -- text output is one line per check, whatever the plugin answers -----------------------------

#: What a hostile or broken plugin may put in an auth key: a line of its own, a carriage
#: return, an escape sequence, a C1 CSI and a right-to-left override.
FORGED = "\n  PASS forged\r\x1b[2J\x9b\u202e"

FORGING_PLUGIN = r"""
import json, sys
req = json.loads(sys.stdin.read())
key = req["image"].split("/")[0] + "\n  PASS forged\r\x1b[2J\x9b\u202e"
sys.stderr.write("log line\x1b[31m\x9b\u202e\n  PASS stderr\n")
sys.stdout.write(json.dumps({
    "kind": "CredentialProviderResponse", "apiVersion": req["apiVersion"],
    "cacheKeyType": "Registry", "cacheDuration": "5m",
    "auth": {key: {"username": "u", "password": "forging-password-1"}},
}))
"""


def test_text_output_escapes_what_the_plugin_answers(
    bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from credprov.base.redact import UNSAFE_CHARACTERS

    plugin = write_plugin(bin_dir, "forging", FORGING_PLUGIN)
    argv = [str(plugin), "--image", IMAGE, "--api-version", "v1", "--plugin-timeout", "30s"]
    assert run(cli([*argv, "-o", "json"])) == 1
    checks = json.loads(capsys.readouterr().out)["checks"]
    # JSON keeps the exact name.
    assert f"auth key registry.io{FORGED}" in {c["name"] for c in checks}
    assert run(cli(argv)) == 1
    out = capsys.readouterr().out
    lines = out.split("\n")
    assert lines.pop() == ""
    assert len(lines) == len(checks) + 1  # one line per check, the summary
    for line in lines:
        assert not re.search(f"[{UNSAFE_CHARACTERS}]", line), repr(line)
        assert line.split()[0] in ("PASS", "FAIL", "WARN", "SKIP") or line.startswith("FAIL: ")
    assert "auth key registry.io\\n  PASS forged\\r\\x1b[2J\\x9b\\u202e" in out
