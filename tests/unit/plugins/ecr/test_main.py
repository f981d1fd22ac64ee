"""``credprov_ecr.main``: upstream's (cobra) command line onto the SDK's, and the cache scope."""

from __future__ import annotations

import pytest
from credprov_ecr.main import OPTIONS, SCOPE_OPTION, environment_fingerprint, normalize_argv

from credprov.sdk._runtime import parse_args
from credprov.sdk.flags import FlagError

NO_ACTION: set[str] = set()

ARGV = {
    "nothing": ([], 0, NO_ACTION),
    "positional ignored, as upstream": (["get-credentials"], 0, NO_ACTION),
    "several positionals": (["get-credentials", "extra", "-"], 0, NO_ACTION),
    "--version": (["--version"], 0, {"version"}),
    "--version=true": (["--version=true"], 0, {"version"}),
    "--version=1": (["--version=1"], 0, {"version"}),
    "--version=false": (["--version=false"], 0, NO_ACTION),
    "cobra's -v": (["-v"], 0, {"version"}),
    "-v before a word": (["-v", "get-credentials"], 0, {"version"}),
    "-v=true": (["-v=true"], 0, {"version"}),
    "-v=false": (["-v=false"], 0, NO_ACTION),
    "-h": (["-h"], 0, {"help"}),
    "--help=true": (["--help=true"], 0, {"help"}),
    "--help=false": (["--help=false"], 0, NO_ACTION),
    # klog-style verbosity, which upstream rejects
    "-v N": (["-v", "4"], 4, NO_ACTION),
    "-v=N": (["-v=1"], 1, NO_ACTION),
    "-vN": (["-v4"], 4, NO_ACTION),
    "--v N": (["--v", "2"], 2, NO_ACTION),
    "--v=N and a positional": (["--v=2", "get-credentials"], 2, NO_ACTION),
    "--clear-cache": (["--clear-cache"], 0, {"clear-cache"}),
    "after -- everything is positional": (["--", "--version"], 0, NO_ACTION),
}


@pytest.mark.parametrize(("argv", "verbosity", "actions"), ARGV.values(), ids=ARGV.keys())
def test_command_line(argv: list[str], verbosity: int, actions: set[str]) -> None:
    values, got_verbosity, got_actions = parse_args(normalize_argv(argv), OPTIONS, allow_args=True)
    assert (got_verbosity, got_actions) == (verbosity, actions)
    assert values == {SCOPE_OPTION: None}


def test_unknown_flags_are_refused_as_cobra_does() -> None:
    with pytest.raises(FlagError) as info:
        parse_args(normalize_argv(["--bogus"]), OPTIONS, allow_args=True)
    assert str(info.value) == "unknown flag: --bogus"


def test_fingerprint_covers_every_aws_variable_only() -> None:
    base = {"AWS_REGION": "us-east-1", "PATH": "/bin"}
    same = environment_fingerprint(base)
    assert environment_fingerprint({**base, "PATH": "/usr/bin", "HOME": "/root"}) == same
    for change in (
        {"AWS_REGION": "eu-west-1"},
        {"AWS_ECR_ROLE_ARN": "arn:aws:iam::1:role/x"},
        {"AWS_PROFILE": "other"},
        {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"},
    ):
        assert environment_fingerprint({**base, **change}) != same
    assert len(same) == 32
