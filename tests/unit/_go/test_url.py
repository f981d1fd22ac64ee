"""Go ``net/url.Parse`` / ``net.SplitHostPort`` parity for ``credprov._go.url``, per Go release
(``credprov._go.version``), and the CLI's ``--go-version``.

The tables without a release follow the default (``DEFAULT_GO_VERSION``); the differential
tests (``tests/differential/test_url_diff.py``) check all of this against real Go.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from credprov._go.url import AddrError, GoURL, GoURLError, go_quote, parse, split_host_port
from credprov._go.version import (
    DEFAULT_GO_VERSION,
    FAMILIES,
    GoVersionError,
    current_go,
    describe,
    go_release,
    use_go,
)
from credprov.cli.main import main

PARSE_OK = [
    pytest.param("https://registry.io", GoURL(scheme="https", host="registry.io"), id="host"),
    pytest.param(
        "https://registry.io:5000/a/b",
        GoURL(scheme="https", host="registry.io:5000", path="/a/b"),
        id="host-port-path",
    ),
    pytest.param(
        "HTTPS://Registry.IO",
        GoURL(scheme="https", host="Registry.IO"),
        id="scheme-lowered-host-kept",
    ),
    pytest.param(
        "https://user:pw@registry.io/x",
        GoURL(scheme="https", has_user=True, host="registry.io", path="/x"),
        id="userinfo-dropped",
    ),
    pytest.param(
        "https://a@b@registry.io",
        GoURL(scheme="https", has_user=True, host="registry.io"),
        id="userinfo-last-at",
    ),
    pytest.param(
        "https://registry.io/p?x=1&y=%zz",
        GoURL(scheme="https", host="registry.io", path="/p", raw_query="x=1&y=%zz"),
        id="query-raw-not-validated",
    ),
    pytest.param(
        "https://registry.io/p?",
        GoURL(scheme="https", host="registry.io", path="/p", force_query=True),
        id="force-query",
    ),
    pytest.param(
        "https://registry.io/p#frag%41",
        GoURL(scheme="https", host="registry.io", path="/p", fragment="fragA"),
        id="fragment-unescaped",
    ),
    pytest.param(
        "https://registry.io/a%2Fb%20c",
        GoURL(scheme="https", host="registry.io", path="/a/b c"),
        id="path-unescaped",
    ),
    pytest.param(
        "https://registry.io/a+b",
        GoURL(scheme="https", host="registry.io", path="/a+b"),
        id="plus-kept",
    ),
    pytest.param(
        "https://registry.io:", GoURL(scheme="https", host="registry.io:"), id="empty-port"
    ),
    pytest.param(
        "https://*.registry.io", GoURL(scheme="https", host="*.registry.io"), id="glob-host"
    ),
    pytest.param(
        "https://reg?.io/p",
        GoURL(scheme="https", host="reg", raw_query=".io/p"),
        id="question-mark-starts-query",
    ),
    pytest.param(
        "https://%c3%a9.io", GoURL(scheme="https", host="é.io"), id="host-non-ascii-escape"
    ),
    pytest.param("https://é.io", GoURL(scheme="https", host="é.io"), id="host-raw-non-ascii"),
    pytest.param("https://[::1]:5000", GoURL(scheme="https", host="[::1]:5000"), id="ipv6-port"),
    pytest.param(
        "https://[fe80::1%25en0]:80", GoURL(scheme="https", host="[fe80::1%en0]:80"), id="ipv6-zone"
    ),
    pytest.param("https://", GoURL(scheme="https"), id="empty-host"),
    pytest.param("https:///path", GoURL(scheme="https", path="/path"), id="empty-authority"),
    pytest.param("https:opaque", GoURL(scheme="https", opaque="opaque"), id="opaque"),
    pytest.param("*", GoURL(path="*"), id="star"),
    pytest.param("/rel/path", GoURL(path="/rel/path"), id="relative-path"),
    pytest.param("//host/p", GoURL(host="host", path="/p"), id="network-path"),
    pytest.param(
        "https://h/%ff", GoURL(scheme="https", host="h", path="/\udcff"), id="invalid-utf8-kept"
    ),
]


@pytest.mark.parametrize(("raw", "want"), PARSE_OK)
def test_parse_ok(raw: str, want: GoURL) -> None:
    assert parse(raw) == want


PARSE_ERRORS = [
    pytest.param(
        "https://%invalid%",
        'parse "https://%invalid%": invalid URL escape "%in"',
        id="config-test-invalid",
    ),
    pytest.param("https://a%", 'parse "https://a%": invalid URL escape "%"', id="escape-truncated"),
    pytest.param("https://a%4", 'parse "https://a%4": invalid URL escape "%4"', id="escape-short"),
    pytest.param(
        "https://%41.io", 'parse "https://%41.io": invalid URL escape "%41"', id="host-ascii-escape"
    ),
    pytest.param(
        "https://h/%zé",
        'parse "https://h/%zé": invalid URL escape "%z\\xc3"',
        id="escape-cuts-utf8",
    ),
    pytest.param(
        "https://a b", 'parse "https://a b": invalid character " " in host name', id="space-in-host"
    ),
    pytest.param(
        "https://a{b}",
        'parse "https://a{b}": invalid character "{" in host name',
        id="brace-in-host",
    ),
    pytest.param(
        "https://a\\b",
        'parse "https://a\\\\b": invalid character "\\\\" in host name',
        id="backslash",
    ),
    pytest.param(
        "https://a:x", 'parse "https://a:x": invalid port ":x" after host', id="port-alpha"
    ),
    pytest.param(
        "https://a:5000:x",
        'parse "https://a:5000:x": invalid port ":x" after host',
        id="port-last-colon",
    ),
    pytest.param(
        "https://a:-1", 'parse "https://a:-1": invalid port ":-1" after host', id="port-negative"
    ),
    pytest.param(
        "https://[::1]x", 'parse "https://[::1]x": invalid port "x" after host', id="ipv6-junk"
    ),
    pytest.param("https://[::1", "parse \"https://[::1\": missing ']' in host", id="ipv6-unclosed"),
    pytest.param(
        "https://a\tb",
        'parse "https://a\\tb": net/url: invalid control character in URL',
        id="control-tab",
    ),
    pytest.param(
        "https://a\x7f",
        'parse "https://a\\x7f": net/url: invalid control character in URL',
        id="control-del",
    ),
    pytest.param(
        "https://ü@example.com/",
        'parse "https://ü@example.com/": net/url: invalid userinfo',
        id="userinfo",
    ),
    pytest.param(
        "https://u%zz@h", 'parse "https://u%zz@h": invalid URL escape "%zz"', id="userinfo-escape"
    ),
    pytest.param(
        "https://h#%zz", 'parse "https://h#%zz": invalid URL escape "%zz"', id="fragment-whole-url"
    ),
    pytest.param(
        "https://%zz#frag",
        'parse "https://%zz": invalid URL escape "%zz"',
        id="host-error-without-fragment",
    ),
    pytest.param("://x", 'parse "://x": missing protocol scheme', id="missing-scheme"),
    pytest.param(
        "1a:b/x",
        'parse "1a:b/x": first path segment in URL cannot contain colon',
        id="colon-segment",
    ),
]


@pytest.mark.parametrize(("raw", "message"), PARSE_ERRORS)
def test_parse_error_text(raw: str, message: str) -> None:
    with pytest.raises(GoURLError) as info:
        parse(raw)
    assert str(info.value) == message


def test_parse_error_fields() -> None:
    with pytest.raises(GoURLError) as info:
        parse("https://%invalid%")
    assert (info.value.op, info.value.url, info.value.reason) == (
        "parse",
        "https://%invalid%",
        'invalid URL escape "%in"',
    )
    assert isinstance(info.value, ValueError)


# One column per URL family (credprov._go.version.FAMILIES), plus 1.26.1 whose strict colons
# still cover every scheme but postgres: the host, or the error's reason.
RELEASES = ["1.25.1", "1.25.2", "1.25.5", "1.26.0", "1.26.1", "1.26.6"]
_PORT_IO = 'invalid port "*.io" after host'
_LITERAL = "invalid IP-literal"
_IPV6 = "invalid IPv6 host"
_COLONS = 'invalid port ":1:2" after host'
_BRACKET = "missing ']' in host"
_V1X = 'invalid host: ParseAddr("v1.x"): unexpected character (at "v1.x")'
BY_RELEASE = [
    pytest.param("https://[::1]:80", ["[::1]:80"] * 6, id="ipv6"),
    pytest.param("https://[fe80::1%25en0]:80", ["[fe80::1%en0]:80"] * 6, id="ipv6-zone"),
    pytest.param(
        "https://reg.[a-z]*.io",
        ["reg.[a-z]*.io", _PORT_IO, _PORT_IO, _PORT_IO, _LITERAL, _LITERAL],
        id="glob-class-in-host",
    ),
    pytest.param(
        "https://[a-z].io",
        ['invalid port ".io" after host'] * 6,
        id="glob-class-first",
    ),
    pytest.param(
        "https://evil.com[::1]:5000",
        ["evil.com[::1]:5000", "[::1]:5000", "[::1]:5000", "[::1]:5000", _LITERAL, _LITERAL],
        id="prefix-dropped",
    ),
    pytest.param(
        "https://a[b", ["a[b", _BRACKET, _BRACKET, _BRACKET, _LITERAL, _LITERAL], id="open-only"
    ),
    pytest.param(
        "https://[1.2.3.4]",
        ["[1.2.3.4]", _IPV6, _LITERAL, _LITERAL, _LITERAL, _LITERAL],
        id="ipv4",
    ),
    pytest.param(
        "https://[::ffff:1.2.3.4]",
        ["[::ffff:1.2.3.4]", _IPV6] + ["[::ffff:1.2.3.4]"] * 4,
        id="ipv4-mapped",
    ),
    pytest.param(
        "https://[::ffff:102:304]",
        ["[::ffff:102:304]", _IPV6] + ["[::ffff:102:304]"] * 4,
        id="ipv4-mapped-hex",
    ),
    pytest.param("https://[v1.x]", ["[v1.x]"] + [_V1X] * 5, id="not-an-address"),
    pytest.param("https://a:1:2", ["a:1:2"] * 3 + [_COLONS] * 3, id="strict-colons"),
    pytest.param(
        "https://a::80",
        ["a::80"] * 3 + ['invalid port "::80" after host'] * 3,
        id="strict-colons-empty",
    ),
    pytest.param(
        "mongodb://a:1:2",
        ["a:1:2"] * 3 + [_COLONS, _COLONS, "a:1:2"],
        id="strict-colons-other-scheme",
    ),
    pytest.param("postgres://a:1:2", ["a:1:2"] * 6, id="postgres-exempt"),
]


@pytest.mark.parametrize(("raw", "wants"), BY_RELEASE)
def test_parse_by_release(raw: str, wants: list[str]) -> None:
    for release, want in zip(RELEASES, wants, strict=True):
        try:
            got = parse(raw, go_version=release).host
        except GoURLError as err:
            got = err.reason
        assert got == want, release


# net/netip.ParseAddr's texts, which every release from the CVE fix on reports.
PARSE_ADDR = [
    pytest.param(
        "https://[1::2::3]",
        'invalid host: ParseAddr("1::2::3"): multiple :: in address (at ":3")',
        id="double-ellipsis",
    ),
    pytest.param(
        "https://[12345::1]",
        'invalid host: ParseAddr("12345::1"): each group must have 4 or less digits (at "12345::1")',
        id="long-group",
    ),
    pytest.param(
        "https://[::1.2.3.256]",
        'invalid host: ParseAddr("::1.2.3.256"): IPv4 field has value >255',
        id="embedded-ipv4",
    ),
    pytest.param(
        "https://[fe80::1%25]",
        'invalid host: ParseAddr("fe80::1%"): zone must be a non-empty string',
        id="empty-zone",
    ),
    pytest.param(
        "https://[1:2]", 'invalid host: ParseAddr("1:2"): address string too short', id="short"
    ),
    pytest.param(
        "https://[1:2:3:4:5:6:7::8]",
        'invalid host: ParseAddr("1:2:3:4:5:6:7::8"): the :: must expand to at least one field '
        "of zeros",
        id="ellipsis-expands-to-nothing",
    ),
    pytest.param("https://[%25]", 'invalid host: ParseAddr("%"): missing IPv6 address', id="zone"),
    pytest.param("https://[]", 'invalid host: ParseAddr(""): unable to parse IP', id="empty"),
]


@pytest.mark.parametrize("release", ["1.25.2", "1.25.5", "1.26.6"])
@pytest.mark.parametrize(("raw", "want"), PARSE_ADDR)
def test_parse_addr_errors(release: str, raw: str, want: str) -> None:
    with pytest.raises(GoURLError) as info:
        parse(raw, go_version=release)
    assert info.value.reason == want


def test_default_release_is_documented_one() -> None:
    assert DEFAULT_GO_VERSION == "1.25.5"
    assert str(current_go()) == DEFAULT_GO_VERSION
    raw = "https://evil.com[::1]:5000"
    assert parse(raw).host == "[::1]:5000"  # family 1.25.4
    use_go("1.26.6")
    with pytest.raises(GoURLError, match="invalid IP-literal"):
        parse(raw)
    assert parse(raw, go_version="1.25.1").host == "evil.com[::1]:5000"


def test_error_text_quotes_with_the_releases_unicode() -> None:
    # U+1FAE9 is new in Unicode 16.0: Go 1.27 (Unicode 17.0.0) prints it, Go 1.26 escapes it.
    raw = "https://a b\U0001fae9"
    with pytest.raises(GoURLError) as info:
        parse(raw, go_version="1.26.6")
    assert str(info.value) == 'parse "https://a b\\U0001fae9": invalid character " " in host name'
    with pytest.raises(GoURLError) as info:
        parse(raw, go_version="1.27.3")
    assert str(info.value) == 'parse "https://a b\U0001fae9": invalid character " " in host name'


GO_RELEASE_OK = [
    # (version, str, family, unicode)
    ("1.21", "1.21.0", "1.25.0", "15.0.0"),
    ("go1.23.9", "1.23.9", "1.25.0", "15.0.0"),
    ("1.24.7", "1.24.7", "1.25.0", "15.0.0"),
    ("1.24.8", "1.24.8", "1.25.2", "15.0.0"),
    ("1.24.10", "1.24.10", "1.25.4", "15.0.0"),
    ("1.25.1", "1.25.1", "1.25.0", "15.0.0"),
    ("1.25.3", "1.25.3", "1.25.2", "15.0.0"),
    ("go1.25.5", "1.25.5", "1.25.4", "15.0.0"),
    ("1.25.9", "1.25.9", "1.25.4", "15.0.0"),  # unmeasured: as the newest measured 1.25
    ("1.26.0", "1.26.0", "1.26.0", "15.0.0"),
    ("1.26.1", "1.26.1", "1.26.1", "15.0.0"),
    (" 1.26.6 ", "1.26.6", "1.26.1", "15.0.0"),
    ("1.27", "1.27.0", "1.26.1", "17.0.0"),
    ("1.28.2", "1.28.2", "1.26.1", "17.0.0"),  # unmeasured: as the newest release
]


@pytest.mark.parametrize(("version", "name", "family", "unicode"), GO_RELEASE_OK)
def test_go_release(version: str, name: str, family: str, unicode: str) -> None:
    release = go_release(version)
    assert (str(release), release.family.name, release.unicode) == (name, family, unicode)
    # A family's name is a release of that family.
    assert go_release(release.family.name).family == release.family


GO_RELEASE_BAD = [
    pytest.param("", "invalid Go version '': want a release such as 1.25.5", id="empty"),
    pytest.param("latest", "invalid Go version 'latest'", id="word"),
    pytest.param("1.25.5rc1", "invalid Go version '1.25.5rc1'", id="rc"),
    pytest.param("2.0", "invalid Go version '2.0'", id="go2"),
    pytest.param("1.20.14", "credprov reproduces Go 1.21 and later", id="too-old"),
    pytest.param(
        "1.25",
        "Go version '1.25' is ambiguous: its patch releases parse URLs differently (1.25.0 to "
        "1.25.1, 1.25.2 to 1.25.3, 1.25.4 and later); give the full version, e.g. 1.25.5",
        id="ambiguous-1.25",
    ),
    pytest.param("1.26", "1.26.0, 1.26.1 and later", id="ambiguous-1.26"),
    pytest.param("1.24", "e.g. 1.24.11", id="ambiguous-1.24"),
]


@pytest.mark.parametrize(("version", "message"), GO_RELEASE_BAD)
def test_go_release_errors(version: str, message: str) -> None:
    with pytest.raises(GoVersionError) as info:
        go_release(version)
    assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(GoVersionError):
        parse("https://r.io", go_version=version)


def test_families_describe_their_releases() -> None:
    assert [(f.name, f.releases) for f in FAMILIES] == [
        ("1.25.0", "Go 1.21 to 1.24.7, 1.25.0 to 1.25.1"),
        ("1.25.2", "Go 1.24.8 to 1.24.9, 1.25.2 to 1.25.3"),
        ("1.25.4", "Go 1.24.10 and later 1.24, 1.25.4 and later 1.25"),
        ("1.26.0", "Go 1.26.0"),
        ("1.26.1", "Go 1.26.1 and later"),
    ]
    assert describe(FAMILIES) == "Go 1.21 and later"
    assert describe(FAMILIES[1:4]) == "Go 1.24.8 and later 1.24, 1.25.2 to 1.26.0"


SPLIT_OK = [
    pytest.param("host:80", ("host", "80"), id="host-port"),
    pytest.param("host:", ("host", ""), id="empty-port"),
    pytest.param(":80", ("", "80"), id="empty-host"),
    pytest.param("[::1]:80", ("::1", "80"), id="ipv6"),
    pytest.param("[fe80::1%en0]:80", ("fe80::1%en0", "80"), id="ipv6-zone"),
    pytest.param("host:http", ("host", "http"), id="named-port"),
]


@pytest.mark.parametrize(("hostport", "want"), SPLIT_OK)
def test_split_host_port(hostport: str, want: tuple[str, str]) -> None:
    assert split_host_port(hostport) == want


SPLIT_ERRORS = [
    pytest.param("", "missing port in address", id="empty"),
    pytest.param("host", "address host: missing port in address", id="no-port"),
    pytest.param("a:b:c", "address a:b:c: too many colons in address", id="too-many-colons"),
    pytest.param("[::1]", "address [::1]: missing port in address", id="ipv6-no-port"),
    pytest.param("[::1", "address [::1: missing ']' in address", id="ipv6-unclosed"),
    pytest.param("[::1]x:80", "address [::1]x:80: missing port in address", id="ipv6-junk"),
    pytest.param(
        "[::1]:80:90", "address [::1]:80:90: too many colons in address", id="ipv6-colons"
    ),
    pytest.param("a[b:80", "address a[b:80: unexpected '[' in address", id="stray-open"),
    pytest.param("a]b:80", "address a]b:80: unexpected ']' in address", id="stray-close"),
]


@pytest.mark.parametrize(("hostport", "message"), SPLIT_ERRORS)
def test_split_host_port_errors(hostport: str, message: str) -> None:
    with pytest.raises(AddrError) as info:
        split_host_port(hostport)
    assert str(info.value) == message


QUOTES = [
    pytest.param("abc", '"abc"', id="plain"),
    pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote-backslash"),
    pytest.param("\t\n\x00", '"\\t\\n\\x00"', id="controls"),
    pytest.param("é☺", '"é☺"', id="printable-unicode"),
    pytest.param("\u00ad", '"\\u00ad"', id="format-char"),
    pytest.param(b"%z\xc3", '"%z\\xc3"', id="invalid-utf8"),
    pytest.param("\U0001f600", '"\U0001f600"', id="emoji"),
    pytest.param("\U000e0001", '"\\U000e0001"', id="astral-nonprint"),
]


@pytest.mark.parametrize(("value", "want"), QUOTES)
def test_go_quote(value: str | bytes, want: str) -> None:
    assert go_quote(value) == want


QUOTES_BY_UNICODE = [
    # (text, Go 1.21-1.26 (Unicode 15.0.0), Go 1.27 (17.0.0)); Python 3.11 knows none of them.
    pytest.param("\U0001fae8", '"\U0001fae8"', '"\U0001fae8"', id="unicode-15"),
    pytest.param("\U0001fae9", '"\\U0001fae9"', '"\U0001fae9"', id="unicode-16"),
    pytest.param("\u0897", '"\\u0897"', '"\u0897"', id="unicode-16-bmp"),
    pytest.param("\U00016ea0", '"\\U00016ea0"', '"\U00016ea0"', id="unicode-17"),
    pytest.param("\U000e0001", '"\\U000e0001"', '"\\U000e0001"', id="format-char"),
    pytest.param("\udcd8\udca9", '"\u0629"', '"\u0629"', id="escaped-bytes-spell-a-rune"),
]


@pytest.mark.parametrize(("text", "go15", "go17"), QUOTES_BY_UNICODE)
def test_go_quote_by_unicode_version(text: str, go15: str, go17: str) -> None:
    assert go_quote(text, unicode="15.0.0") == go15
    assert go_quote(text, unicode="17.0.0") == go17
    assert go_quote(text) == go15  # the default release, Go 1.25.5
    use_go("1.27.3")
    assert go_quote(text) == go17


# --- the CLI's --go-version -------------------------------------------------------------

_CONFIG = """apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: p
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  defaultCacheDuration: 1m
  matchImages: [{pattern}]
"""

CLI_CASES = [
    # (pattern, --go-version or None, CREDPROV_GO_VERSION, exit code, stderr lines' starts)
    pytest.param("'*.[a-z]*.io'", "1.25.1", None, 0, ["warning: ", "warning: "], id="pre-cve"),
    pytest.param(
        "'*.[a-z]*.io'",
        None,
        None,
        1,
        [
            "credprov: error: failed to validate credential provider config: providers."
            'matchImages: Invalid value: "*.[a-z]*.io": match image is invalid: parse '
            '"https://*.[a-z]*.io": invalid port "*.io" after host',
            "credprov: hint: matchImages entry '*.[a-z]*.io' is valid for kubelets built with "
            "Go 1.21 to 1.24.7, 1.25.0 to 1.25.1; credprov follows Go 1.25.5, give the "
            "kubelet's with --go-version",
        ],
        id="default",
    ),
    pytest.param(
        "'*.[a-z]*.io'", "1.26.6", None, 1, ["credprov: error: ", "credprov: hint: "], id="strict"
    ),
    pytest.param("'*.[a-z]*.io'", None, "1.25.1", 0, ["warning: ", "warning: "], id="env"),
    pytest.param(
        "'*.[a-z]*.io'",
        "1.26.6",
        "1.25.1",
        1,
        ["credprov: error: ", "credprov: hint: "],
        id="option-beats-env",
    ),
    pytest.param(
        "'a:1:2'",
        "go1.26.2",
        None,
        1,
        [
            "credprov: error: ",
            "credprov: hint: matchImages entry 'a:1:2' is valid for kubelets built with Go 1.21 "
            "to the last 1.25; credprov follows Go 1.26.2, give the kubelet's with --go-version",
        ],
        id="colons",
    ),
    pytest.param(
        "r.io",
        "1.25",
        None,
        2,
        [
            "credprov: error: --go-version: Go version '1.25' is ambiguous: its patch releases "
            "parse URLs differently (1.25.0 to 1.25.1, 1.25.2 to 1.25.3, 1.25.4 and later); "
            "give the full version, e.g. 1.25.5"
        ],
        id="bad-option",
    ),
    pytest.param(
        "r.io",
        None,
        "nope",
        2,
        [
            "credprov: error: CREDPROV_GO_VERSION: invalid Go version 'nope': want a release "
            "such as 1.25.5 or go1.26.2 (`go version -m <kubelet binary>` prints the kubelet's)"
        ],
        id="bad-env",
    ),
]


@pytest.mark.parametrize(("pattern", "option", "env", "code", "stderr"), CLI_CASES)
def test_cli_go_version(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    pattern: str,
    option: str | None,
    env: str | None,
    code: int,
    stderr: list[str],
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(_CONFIG.format(pattern=pattern))
    if env is None:
        monkeypatch.delenv("CREDPROV_GO_VERSION", raising=False)
    else:
        monkeypatch.setenv("CREDPROV_GO_VERSION", env)
    argv = ["config", "validate", str(config)] + (["--go-version", option] if option else [])
    assert main(argv) == code
    _, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == len(stderr), err
    for line, start in zip(lines, stderr, strict=True):
        assert line.startswith(start), line


@pytest.mark.parametrize(
    "command",
    [
        ["config", "validate", "X"],
        ["get-credentials", "--config", "X", "--bin-dir", "X", "r.io/a"],
        ["explain", "--config", "X", "r.io/a"],
        ["simulate", "X"],
        ["doctor"],
        ["ensure-image", "--cri", "X", "--root-dir", "X", "--pod", "X"],
        ["plugin", "exec", "p", "--config", "X", "--bin-dir", "X", "--image", "r.io/a"],
        ["plugin", "test", "X", "--image", "r.io/a"],
    ],
    ids=lambda argv: " ".join(argv[:2]) if argv[0] == "plugin" else argv[0],
)
def test_cli_commands_take_go_version(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Every command that parses matchImages or image names takes --go-version, and a bad
    one is a usage error of one line before anything runs."""
    assert main([*command, "--go-version", "1.x"]) == 2
    _, err = capsys.readouterr()
    assert err == (
        "credprov: error: --go-version: invalid Go version '1.x': want a release such as "
        "1.25.5 or go1.26.2 (`go version -m <kubelet binary>` prints the kubelet's)\n"
    )


def test_cli_go_version_in_a_fresh_process(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(_CONFIG.format(pattern="'evil.com[::1]:5000'"))
    proc = subprocess.run(
        [sys.executable, "-m", "credprov.cli.main", "config", "validate", str(config),
         "--go-version", "1.26.6"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0].endswith(
        'parse "https://evil.com[::1]:5000": invalid IP-literal'
    )
