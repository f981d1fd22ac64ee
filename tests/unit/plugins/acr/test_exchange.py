"""The ACR challenge parser (upstream ``TestParseAssignments``,
``TestReceiveChallengeFromLoginServer``) and refresh-token lifetimes."""

from __future__ import annotations

import pytest
from credprov_acr.exchange import (
    AuthDirective,
    ExchangeError,
    parse_assignments,
    parse_challenge,
    refresh_token_lifetime,
)

from tests.fakes.acr import make_jwt

ASSIGNMENTS = [
    ('realm="https://x.azurecr.io/oauth2/token",service="x.azurecr.io"',
     {"realm": "https://x.azurecr.io/oauth2/token", "service": "x.azurecr.io"}),
    ('key1 = value1, key2 = "value 2", key3 = ""',
     {"key1": "value1", "key2": "value 2", "key3": ""}),
    ('a="x, y",b=z', {"a": "x, y", "b": "z"}),
    ("a=b", {"a": "b"}),  # an unquoted last value: upstream panics
    ("a= b ,c=d", {"a": "b", "c": "d"}),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), ASSIGNMENTS)
def test_parse_assignments(text: str, expected: dict[str, str]) -> None:
    assert parse_assignments(text) == expected


@pytest.mark.parametrize("text", ["", "novalue", 'a="unterminated', 'a="x" b="y"', "a=,b=c", "a= "])
def test_parse_assignments_malformed(text: str) -> None:
    with pytest.raises(ExchangeError, match="malformed"):
        parse_assignments(text)


CHALLENGES = [
    (['Bearer realm="https://r/oauth2/token",service="s"'], AuthDirective("s", "https://r/oauth2/token")),
    (['bearer realm="r",service="s"'], AuthDirective("s", "r")),
    (['BEARER service="s", realm="r"'], AuthDirective("s", "r")),
    ([], "challenge response does not contain header 'Www-Authenticate'"),
    (['Bearer realm="r",service="s"'] * 2, "registry did not issue a valid AAD challenge"),
    (['Basic realm="r"'], "Www-Authenticate: expected realm: Bearer, actual: basic"),
    (['Bearer realm="r"'], 'Www-Authenticate: missing header "service"'),
    (['Bearer service="s"'], 'Www-Authenticate: missing header "realm"'),
    (['Bearer realm="",service="s"'], 'Www-Authenticate: missing header "realm"'),
    (["Bearer"], "malformed"),
]  # fmt: skip


@pytest.mark.parametrize(("headers", "expected"), CHALLENGES)
def test_parse_challenge(headers: list[str], expected: AuthDirective | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(ExchangeError) as err:
            parse_challenge(headers)
        assert str(err.value).startswith(expected)
    else:
        assert parse_challenge(headers) == expected


@pytest.mark.parametrize(
    ("token", "lifetime"),
    [
        (make_jwt({"exp": 1_000_000 + 10_800}, "rt"), 10_800.0),
        (make_jwt({"exp": 999_000}, "rt"), -1_000.0),
        (make_jwt({"exp": "soon"}, "rt"), None),
        (make_jwt({"exp": True}, "rt"), None),
        (make_jwt({}, "rt"), None),
        ("not-a-jwt", None),
        ("a.!!!.c", None),
        ("a.bnVsbA.c", None),  # "null"
    ],
)
def test_refresh_token_lifetime(token: str, lifetime: float | None) -> None:
    assert refresh_token_lifetime(token, 1_000_000.0) == lifetime
