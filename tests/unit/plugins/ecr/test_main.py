"""``credprov_ecr.main``: upstream's (cobra) command line onto the SDK's, and the cache scope."""

from __future__ import annotations

import pytest
from credprov_ecr.main import environment_fingerprint, normalize_argv

from credprov.sdk._runtime import parse_args


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        ([], []),
        (["get-credentials"], []),  # positional arguments are ignored, as upstream
        (["get-credentials", "extra", "-"], []),
        (["--version"], ["--version"]),
        (["--version=true"], ["--version"]),
        (["--version=1"], ["--version"]),
        (["--version=false"], []),
        (["-v"], ["--version"]),  # cobra's shorthand
        (["-v", "get-credentials"], ["--version"]),
        (["-v=true"], ["--version"]),
        (["-v=false"], []),
        (["-h"], ["-h"]),
        (["--help=true"], ["--help"]),
        (["--help=false"], []),
        # klog-style verbosity, which upstream rejects
        (["-v", "4"], ["-v", "4"]),
        (["-v=1"], ["-v=1"]),
        (["-v4"], ["-v4"]),
        (["--v", "2"], ["--v", "2"]),
        (["--v=2", "get-credentials"], ["--v=2"]),
        (["--clear-cache"], ["--clear-cache"]),
        (["--", "--version"], []),  # after "--" everything is positional
        (["--bogus"], ["--bogus"]),  # refused by the SDK (exit 2), as cobra refuses it
    ],
)
def test_normalize_argv(argv: list[str], want: list[str]) -> None:
    assert normalize_argv(argv) == want


def test_normalized_verbosity_reaches_the_sdk() -> None:
    _, verbosity, actions = parse_args(normalize_argv(["get-credentials", "-v", "3"]), [])
    assert (verbosity, actions) == (3, set())


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
