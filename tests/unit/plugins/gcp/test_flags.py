"""auth-provider-gcp's command line: upstream's flags and spellings, errors, and environment.

Mirrors upstream's ``TestValidateAuthFlow`` (flows, ``--identity-provider`` /
``--project-id`` rules) and pflag's parsing rules, as tables.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from credprov_gcp import flags
from credprov_gcp.main import main

# -- valid command lines ----------------------------------------------------------------------

VALID: dict[str, tuple[list[str], dict[str, Any]]] = {
    "kubelet config": (["get-credentials"], {"auth_flow": "gcr", "verbosity": 0}),
    "documented args": (["get-credentials", "--v=3"], {"verbosity": 3}),
    "klog flag first": (["--v=3", "get-credentials"], {"verbosity": 3}),
    "-v N": (["get-credentials", "-v", "4"], {"verbosity": 4}),
    "-vN": (["get-credentials", "-v5"], {"verbosity": 5}),
    "--v N": (["get-credentials", "--v", "2"], {"verbosity": 2}),
    "negative level": (["get-credentials", "--v=-1"], {"verbosity": 0}),
    "go-style klog flags": (
        ["-logtostderr", "-stderrthreshold=INFO", "get-credentials", "-v=2"],
        {"verbosity": 2},
    ),
    "klog flags ignored": (
        [
            "get-credentials",
            "--logtostderr",
            "--alsologtostderr=false",
            "--log_dir",
            "/var/log",
            "--vmodule=x=2",
            "--one_output=true",
            "--legacy_stderr_threshold_behavior=false",
        ],
        {"verbosity": 0},
    ),
    "--authFlow value": (
        ["get-credentials", "--authFlow", "dockercfg"],
        {"auth_flow": "dockercfg"},
    ),
    "--authFlow=value": (
        ["get-credentials", "--authFlow=dockercfg-url"],
        {"auth_flow": "dockercfg-url"},
    ),
    "-a value": (["get-credentials", "-a", "dockercfg"], {"auth_flow": "dockercfg"}),
    "-a=value": (["get-credentials", "-a=gcr"], {"auth_flow": "gcr"}),
    "-avalue": (["get-credentials", "-adockercfg"], {"auth_flow": "dockercfg"}),
    "last one wins": (
        ["get-credentials", "-a", "dockercfg", "--authFlow=gcr"],
        {"auth_flow": "gcr"},
    ),
    "workload identity": (
        ["get-credentials", "--identity-provider=https://idp", "--project-id", "proj"],
        {"identity_provider": "https://idp", "project_id": "proj", "warnings": []},
    ),
    "project id alone is fine": (["get-credentials", "--project-id=p"], {"project_id": "p"}),
    "identity provider with dockercfg warns": (
        ["get-credentials", "-a", "dockercfg", "--identity-provider=x", "--project-id=p"],
        {
            "auth_flow": "dockercfg",
            "warnings": [
                "--identity-provider is ignored with --authFlow=dockercfg "
                "(workload identity needs --authFlow=gcr)"
            ],
        },
    ),
    "cobra ignores extra args": (["get-credentials", "extra"], {"ignored": ["extra"]}),
    "-- ends flags": (["get-credentials", "--", "--v=3"], {"verbosity": 0, "ignored": ["--v=3"]}),
    "value may start with a dash": (
        ["get-credentials", "--project-id", "-p-"],
        {"project_id": "-p-"},
    ),
    "allow non-Google registries": (
        ["get-credentials", "--allow-non-google-registries"],
        {"allow_non_google_registries": True},
    ),
    "allow=false": (
        ["get-credentials", "--allow-non-google-registries=false"],
        {"allow_non_google_registries": False},
    ),
    "sts endpoint": (
        ["get-credentials", "--sts-endpoint=https://sts.example/v1/token"],
        {"sts_endpoint": "https://sts.example/v1/token"},
    ),
    "help command": (["help"], {"help": True}),
    "--help": (["--help"], {"help": True}),
    "-h after the subcommand": (["get-credentials", "-h"], {"help": True}),
    "help wins over a bad flow": (["get-credentials", "-a", "x", "--help"], {"help": True}),
    "--version": (["--version"], {"version": True}),
    "--clear-cache": (["--clear-cache"], {"clear_cache": True}),
}


@pytest.mark.parametrize("argv, expected", VALID.values(), ids=VALID.keys())
def test_valid_command_lines(argv: list[str], expected: dict[str, Any]) -> None:
    parsed = flags.parse(argv)
    for attr, value in expected.items():
        assert getattr(parsed, attr) == value, attr


# -- refused command lines --------------------------------------------------------------------

FLOW_ERROR = '(must be one of "gcr", "dockercfg", or "dockercfg-url")'

INVALID: dict[str, tuple[list[str], str]] = {
    "no subcommand": ([], "a subcommand is required: auth-provider-gcp get-credentials [flags]"),
    "only flags": (
        ["--v=3"],
        "a subcommand is required: auth-provider-gcp get-credentials [flags]",
    ),
    "unknown command": (["get-token"], 'unknown command "get-token" for "auth-provider-gcp"'),
    "flow is case-sensitive": (
        ["get-credentials", "--authFlow=GCR"],
        f'invalid value "GCR" for authFlow {FLOW_ERROR}',
    ),
    "empty flow": (
        ["get-credentials", "--authFlow="],
        f'invalid value "" for authFlow {FLOW_ERROR}',
    ),
    "unknown flow": (
        ["get-credentials", "-a", "metadata"],
        f'invalid value "metadata" for authFlow {FLOW_ERROR}',
    ),
    "missing value": (["get-credentials", "--authFlow"], "flag needs an argument: --authFlow"),
    "missing shorthand value": (["get-credentials", "-a"], "flag needs an argument: 'a' in -a"),
    "unknown flag": (["get-credentials", "--auth-flow=gcr"], "unknown flag: --auth-flow"),
    "unknown shorthand": (["get-credentials", "-x"], "unknown shorthand flag: 'x' in -x"),
    "bad level": (
        ["get-credentials", "--v=high"],
        'invalid argument "high" for "-v, --v" flag: strconv.ParseInt: parsing "high": '
        "invalid syntax",
    ),
    "bad bool": (
        ["get-credentials", "--logtostderr=maybe"],
        'invalid argument "maybe" for "--logtostderr" flag: strconv.ParseBool: parsing '
        '"maybe": invalid syntax',
    ),
    "identity provider without project": (
        ["get-credentials", "--identity-provider=https://idp"],
        "--project-id is required when --identity-provider is set",
    ),
    "identity provider with empty project": (
        ["get-credentials", "--identity-provider=https://idp", "--project-id="],
        "--project-id is required when --identity-provider is set",
    ),
}


@pytest.mark.parametrize("argv, message", INVALID.values(), ids=INVALID.keys())
def test_invalid_command_lines(argv: list[str], message: str) -> None:
    with pytest.raises(flags.FlagError) as info:
        flags.parse(argv)
    assert str(info.value) == message


@pytest.mark.parametrize("argv, message", INVALID.values(), ids=INVALID.keys())
def test_main_refuses_with_one_line_before_reading_stdin(
    argv: list[str], message: str, tmp_path: Path
) -> None:
    out, err = io.BytesIO(), io.StringIO()
    stdin = io.BytesIO(b"never read")
    code = main(argv, {}, stdin=stdin, stdout=out, stderr=err, cache_dir=str(tmp_path))
    assert code == 2
    assert out.getvalue() == b""
    assert err.getvalue() == (
        f"auth-provider-gcp: {message} (see 'auth-provider-gcp get-credentials --help')\n"
    )
    assert stdin.tell() == 0


def test_help_lists_upstream_flags_and_environment(tmp_path: Path) -> None:
    out, err = io.BytesIO(), io.StringIO()
    assert main(["get-credentials", "--help"], {}, stdout=out, stderr=err) == 0
    text = out.getvalue().decode()
    for word in (
        "get-credentials",
        "--authFlow",
        "--identity-provider",
        "--project-id",
        "--allow-non-google-registries",
        "--sts-endpoint",
        "KUBE_SIDECAR_CACHE_DURATION",
        "KUBE_SIDECAR_CACHE_TYPE",
        "GCE_METADATA_HOST",
        "CREDPROV_GCP_STS_ENDPOINT",
    ):
        assert word in text
    assert err.getvalue() == ""


def test_warning_is_printed_and_the_run_goes_on(tmp_path: Path) -> None:
    out, err = io.BytesIO(), io.StringIO()
    code = main(
        [
            "get-credentials",
            "-a",
            "dockercfg",
            "--identity-provider=x",
            "--project-id=p",
            "--version",
        ],
        {},
        stdout=out,
        stderr=err,
        cache_dir=str(tmp_path),
    )
    assert code == 0
    assert out.getvalue().startswith(b"auth-provider-gcp ")


# -- environment → SDK options ------------------------------------------------------------------

ENV: dict[str, tuple[list[str], dict[str, str], dict[str, str]]] = {
    "nothing set": (
        [],
        {},
        {
            "--metadata-host": "",
            "--sts-endpoint": "",
            "--sidecar-cache-duration": "",
            "--sidecar-cache-type": "",
        },
    ),
    "sidecar knobs": (
        [],
        {"KUBE_SIDECAR_CACHE_DURATION": "1m", "KUBE_SIDECAR_CACHE_TYPE": "registry"},
        {"--sidecar-cache-duration": "1m", "--sidecar-cache-type": "registry"},
    ),
    "metadata host": (
        [],
        {"GCE_METADATA_HOST": "10.0.0.1:8080"},
        {"--metadata-host": "10.0.0.1:8080"},
    ),
    "google-auth's older name": (
        [],
        {"GCE_METADATA_ROOT": "10.0.0.2"},
        {"--metadata-host": "10.0.0.2"},
    ),
    "HOST wins over ROOT": (
        [],
        {"GCE_METADATA_HOST": "a", "GCE_METADATA_ROOT": "b"},
        {"--metadata-host": "a"},
    ),
    "sts endpoint from env": (
        [],
        {"CREDPROV_GCP_STS_ENDPOINT": "https://e/v1/token"},
        {"--sts-endpoint": "https://e/v1/token"},
    ),
    "the flag wins over env": (
        ["--sts-endpoint=https://flag/v1/token"],
        {"CREDPROV_GCP_STS_ENDPOINT": "https://e/v1/token"},
        {"--sts-endpoint": "https://flag/v1/token"},
    ),
}


@pytest.mark.parametrize("extra, environ, expected", ENV.values(), ids=ENV.keys())
def test_environment_becomes_options(
    extra: list[str], environ: dict[str, str], expected: dict[str, str]
) -> None:
    argv = flags.sdk_argv(flags.parse(["get-credentials", *extra]), environ)
    pairs = dict(zip(argv[::2], argv[1::2], strict=False))
    for name, value in expected.items():
        assert pairs[name] == value, name


def test_sdk_argv_round_trips_through_the_sdk_parser() -> None:
    from credprov_gcp.main import OPTIONS

    from credprov.sdk._runtime import parse_args

    parsed = flags.parse(
        ["get-credentials", "-a", "gcr", "--v=3", "--allow-non-google-registries", "--project-id=p"]
    )
    values, verbosity, actions = parse_args(
        flags.sdk_argv(parsed, {"KUBE_SIDECAR_CACHE_TYPE": "global"}), OPTIONS
    )
    assert verbosity == 3
    assert actions == set()
    assert values["authFlow"] == "gcr"
    assert values["project-id"] == "p"
    assert values["allow-non-google-registries"] is True
    assert values["sidecar-cache-type"] == "global"
