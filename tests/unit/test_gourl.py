"""Go ``net/url.Parse`` / ``net.SplitHostPort`` parity for ``credprov._go.url``."""

from __future__ import annotations

import pytest

from credprov._go.url import AddrError, GoURL, GoURLError, go_quote, parse, split_host_port

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
        "https://reg.[a-z]*.io", GoURL(scheme="https", host="reg.[a-z]*.io"), id="class-host"
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


STRICT = [
    pytest.param("https://[::1]:80", "[::1]:80", id="ipv6-ok"),
    pytest.param("https://[::ffff:1.2.3.4]", "[::ffff:1.2.3.4]", id="ipv4-mapped-ok"),
    pytest.param("https://[1.2.3.4]", "invalid IP-literal", id="ipv4-rejected"),
    pytest.param("https://reg.[a-z].io", "invalid IP-literal", id="bracket-not-first"),
    pytest.param(
        "https://[v1.x]",
        'invalid host: ParseAddr("v1.x"): unexpected character (at "v1.x")',
        id="not-an-address",
    ),
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
]


@pytest.mark.parametrize(("raw", "want"), STRICT)
def test_strict_ip_literals(raw: str, want: str) -> None:
    try:
        got = parse(raw, strict_ip_literals=True).host
    except GoURLError as err:
        got = err.reason
    assert got == want


def test_lenient_ip_literal_is_default() -> None:
    assert parse("https://[1.2.3.4]").host == "[1.2.3.4]"


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
