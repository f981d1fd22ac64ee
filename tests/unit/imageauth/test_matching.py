"""keyring.go ``URLsMatch`` / ``filepath.Match`` parity for ``credprov.imageauth.matching``.

The tables follow Go 1.25.1 (``pre_cve_go``), whose ``url.Parse`` still accepts ``[...]`` globs
in a host, so that they test the glob matching itself; what later Go releases make of such
patterns is tested at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from credprov._go.url import GoURL, GoURLError
from credprov._go.version import use_go
from credprov.imageauth.matching import (
    MatchExplanation,
    MatchPatternError,
    _label,
    explain_match,
    filepath_match,
    parse_schemeless_url,
    split_url,
    urls_match,
    urls_match_str,
)

pytestmark = pytest.mark.usefixtures("pre_cve_go")

# keyring_test.go TestURLsMatch.
UPSTREAM_URLS_MATCH = [
    pytest.param("*.kubernetes.io", "prefix.kubernetes.io", True, id="star-first-label"),
    pytest.param("prefix.*.io", "prefix.kubernetes.io", True, id="star-middle-label"),
    pytest.param("prefix.kubernetes.*", "prefix.kubernetes.io", True, id="star-last-label"),
    pytest.param("*-good.kubernetes.io", "prefix-good.kubernetes.io", True, id="star-prefix"),
    pytest.param("*.kubernetes.io/blah", "prefix.kubernetes.io/blah", True, id="path"),
    pytest.param("prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", True, id="path-prefix"),
    pytest.param(
        "*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1111/blah", True, id="port-path"
    ),
    pytest.param(
        "prefix.*.io:1111/foo", "prefix.kubernetes.io:1111/foo/bar", True, id="port-path-prefix"
    ),
    pytest.param("*.kubernetes.io", "kubernetes.io", False, id="fewer-labels"),
    pytest.param("*.*.kubernetes.io", "prefix.kubernetes.io", False, id="more-labels"),
    pytest.param("*.*.kubernetes.io", "kubernetes.io", False, id="two-more-labels"),
    pytest.param("kubernetes.io", "kubernetes.com", False, id="tld-differs"),
    pytest.param("k*.io", "quay.io", False, id="star-prefix-differs"),
    pytest.param("*.kubernetes.io:1234/blah", "prefix.kubernetes.io:1111/blah", False, id="ports"),
    pytest.param("prefix.*.io/foo", "prefix.kubernetes.io:1111/foo/bar", False, id="target-port"),
]

# keyring_test.go TestDockerKeyringForGlob / TestKeyringMiss, with keys as Add stores
# them (scheme gone, /v1/ and /v2/ reduced) and the "/foo/bar" the tests append.
UPSTREAM_KEYRING = [
    pytest.param("hello.kubernetes.io", "hello.kubernetes.io/foo/bar", True, id="glob-exact"),
    pytest.param("*.docker.io", "prefix.docker.io/foo/bar", True, id="glob-first"),
    pytest.param("prefix.*.io/path", "prefix.docker.io/path/subpath/foo/bar", True, id="glob-path"),
    pytest.param("prefix.docker.*:8888", "prefix.docker.io:8888/foo/bar", True, id="glob-port"),
    pytest.param(
        "*.docker.io/path:1111", "prefix.docker.io/path:1111/foo/bar", True, id="colon-path"
    ),
    pytest.param(
        "*.docker.io:1111", "prefix.docker.io:1111/path/foo/bar", True, id="port-any-path"
    ),
    pytest.param("hello.kubernetes.io", "world.mesos.org/foo/bar", False, id="miss-host"),
    pytest.param("*.docker.com", "prefix.docker.io/foo/bar", False, id="miss-tld"),
    pytest.param("suffix.*.io", "prefix.docker.io/foo/bar", False, id="miss-first"),
    pytest.param("prefix.docker.c*", "prefix.docker.io/foo/bar", False, id="miss-glob-tld"),
    pytest.param(
        "prefix.*.io/path:1111", "prefix.docker.io/path/subpath:1111/foo/bar", False, id="miss-path"
    ),
]

# keyring_test.go TestDockerKeyringLookup and TestIssue3797.
UPSTREAM_LOOKUP = [
    pytest.param("bar.example.com", "bar.example.com", True, id="direct"),
    pytest.param("bar.example.com/pong", "bar.example.com/pong", True, id="deeper-direct"),
    pytest.param("bar.example.com", "bar.example.com/pong", True, id="host-key-deeper-image"),
    pytest.param("bar.example.com/pong", "bar.example.com/ping", False, id="path-differs"),
    pytest.param("bar.example.com/pong", "bar.example.com/pongz", True, id="pong-matches-pongz"),
    pytest.param("bar.example.com/pong", "bar.example.com/pong/pang", True, id="sub-path"),
    pytest.param("bar.example.com", "example.com", False, id="no-host-match"),
    pytest.param("bar.example.com", "foo.example.com", False, id="other-host"),
    pytest.param("quay.io", "quay.io/foo/bar", True, id="issue-3797"),
]

# plugin_test.go provide/isImageAllowed cases: matchImages vs the image.
UPSTREAM_PLUGIN = [
    pytest.param("test.registry.io", "test.registry.io/foo/bar", True, id="exact-registry"),
    pytest.param("test.registry.io/foo/bar", "test.registry.io/foo/bar", True, id="exact-image"),
    pytest.param("test.registry.io", "test.registry.io", True, id="exact-host"),
    pytest.param("*.registry.io:8080", "test.registry.io:8080/foo", True, id="wildcard-port"),
    pytest.param("*.*.registry.io", "foo.bar.registry.io/foo/bar", True, id="two-wildcards"),
    pytest.param("*.registry.io", "test.registry.io", True, id="wildcard-host"),
    pytest.param("*.registry.io", "test.registry.io/foo/bar", True, id="wildcard-path"),
    pytest.param("*.registry.io", "registry.io/foo", False, id="wildcard-needs-label"),
]

# Spec bullets (section 4, URL helpers).
SPEC = [
    pytest.param("registry.io", "registry.io:5000/foo", False, id="glob-no-port-target-port"),
    pytest.param("registry.io:5000", "registry.io/foo", False, id="glob-port-target-no-port"),
    pytest.param("registry.io:5000", "registry.io:5000/foo", True, id="same-port"),
    pytest.param("registry.io:", "registry.io/foo", True, id="empty-port-is-no-port"),
    pytest.param("*.registry.io", "registry.io", False, id="label-count"),
    pytest.param("reg.[a-z]*.io", "reg.abc.io", True, id="class-range"),
    pytest.param("reg.[a-z]*.io", "reg.1bc.io", False, id="class-range-miss"),
    pytest.param("reg.[^a-z]*.io", "reg.1bc.io", False, id="caret-invalid-in-host"),
    pytest.param("reg.[!a]*.io", "reg.abc.io", True, id="bang-class-is-a-set"),
    pytest.param("reg.[!a]*.io", "reg.bbc.io", False, id="bang-is-not-negation"),
    pytest.param("reg.[!a]*.io", "reg.!bc.io", True, id="bang-matches-bang"),
    pytest.param("reg.\\x*.io", "reg.xyz.io", False, id="backslash-invalid-in-host"),
    pytest.param("reg?.io", "rega.io", False, id="question-mark-starts-query"),
    pytest.param("*.io?x=1", "docker.io", True, id="query-ignored"),
    pytest.param("Registry.io", "registry.io", False, id="case-sensitive-host"),
    pytest.param("registry.io/Foo", "registry.io/foo", False, id="case-sensitive-path"),
    pytest.param("user:pw@registry.io", "registry.io/foo", True, id="userinfo-dropped"),
    pytest.param("registry.io#frag", "registry.io/foo", True, id="fragment-ignored"),
    pytest.param("registry.io/foo#x", "registry.io/foo", True, id="fragment-after-path"),
    pytest.param("registry.io/p%6fng", "registry.io/pong", True, id="path-unescaped"),
    pytest.param("registry.io/", "registry.io/foo", True, id="slash-path"),
    pytest.param("registry.io/", "registry.io", False, id="slash-path-needs-slash"),
    pytest.param("%invalid%", "registry.io", False, id="glob-unparseable"),
    pytest.param("registry.io", "registry.io/%zz", False, id="target-unparseable"),
    pytest.param("reg.[a.io", "reg.a.io", False, id="bad-pattern-no-match"),
    pytest.param("[::1]:5000", "[::1]:5000/foo", True, id="ipv6"),
    pytest.param("*", "localhost", True, id="single-star"),
    pytest.param("*", "docker.io/library/nginx", False, id="single-star-vs-dotted"),
    pytest.param("*.io", "docker.io/library/nginx", True, id="hub-image"),
]


@pytest.mark.parametrize(
    ("glob", "target", "want"), UPSTREAM_URLS_MATCH + UPSTREAM_KEYRING + UPSTREAM_LOOKUP
)
def test_urls_match_str_upstream(glob: str, target: str, want: bool) -> None:
    assert urls_match_str(glob, target) is want


@pytest.mark.parametrize(("glob", "target", "want"), UPSTREAM_PLUGIN + SPEC)
def test_urls_match_str(glob: str, target: str, want: bool) -> None:
    assert urls_match_str(glob, target) is want


@pytest.mark.parametrize(
    ("glob", "target", "want"),
    UPSTREAM_URLS_MATCH + UPSTREAM_LOOKUP + UPSTREAM_PLUGIN,
)
def test_urls_match_on_parsed(glob: str, target: str, want: bool) -> None:
    assert urls_match(parse_schemeless_url(glob), parse_schemeless_url(target)) is want


def test_explain_agrees_with_match() -> None:
    for case in UPSTREAM_URLS_MATCH + UPSTREAM_KEYRING + UPSTREAM_LOOKUP + UPSTREAM_PLUGIN + SPEC:
        glob, target, want = case.values
        assert explain_match(str(glob), str(target)).matched is want, case.id


def test_urls_match_bad_pattern_raises() -> None:
    with pytest.raises(MatchPatternError, match=r"^syntax error in pattern$"):
        urls_match(parse_schemeless_url("reg.[a.io"), parse_schemeless_url("reg.a.io"))


def test_urls_match_bad_pattern_after_mismatch_is_not_reached() -> None:
    # URLsMatch stops at the first label that does not match.
    assert not urls_match(parse_schemeless_url("x.[a.io"), parse_schemeless_url("y.a.io"))


SCHEMELESS = [
    pytest.param("registry.io", GoURL(host="registry.io"), id="host"),
    pytest.param(
        "u:p@registry.io:5000/a/b?q#f",
        GoURL(has_user=True, host="registry.io:5000", path="/a/b", raw_query="q", fragment="f"),
        id="all-parts",
    ),
    pytest.param("registry.io/a%20b", GoURL(host="registry.io", path="/a b"), id="unescaped-path"),
]


@pytest.mark.parametrize(("value", "want"), SCHEMELESS)
def test_parse_schemeless_url(value: str, want: GoURL) -> None:
    assert parse_schemeless_url(value) == want


# config_test.go: matchImages that fail validation, and the message the kubelet shows.
SCHEMELESS_ERRORS = [
    pytest.param(
        "%invalid%", 'parse "https://%invalid%": invalid URL escape "%in"', id="config-test"
    ),
    pytest.param(
        "registry.io:x", 'parse "https://registry.io:x": invalid port ":x" after host', id="port"
    ),
    pytest.param(
        "my registry.io",
        'parse "https://my registry.io": invalid character " " in host name',
        id="space",
    ),
]


@pytest.mark.parametrize(("value", "message"), SCHEMELESS_ERRORS)
def test_parse_schemeless_url_errors(value: str, message: str) -> None:
    with pytest.raises(GoURLError) as info:
        parse_schemeless_url(value)
    assert str(info.value) == message


SPLIT = [
    pytest.param("registry.io", (["registry", "io"], ""), id="no-port"),
    pytest.param("registry.io:5000", (["registry", "io"], "5000"), id="port"),
    pytest.param("registry.io:", (["registry", "io"], ""), id="empty-port"),
    pytest.param("[::1]:5000", (["::1"], "5000"), id="ipv6-port"),
    pytest.param("[::1]", (["[::1]"], ""), id="ipv6-fallback"),
    pytest.param("", ([""], ""), id="empty"),
]


@pytest.mark.parametrize(("value", "want"), SPLIT)
def test_split_url(value: str, want: tuple[list[str], str]) -> None:
    assert split_url(parse_schemeless_url(value)) == want


EXPLAIN = [
    pytest.param(
        "%invalid%",
        "registry.io",
        'pattern is invalid: parse "https://%invalid%": invalid URL escape "%in"',
        id="glob-invalid",
    ),
    pytest.param(
        "registry.io",
        "registry.io/%zz",
        'image is invalid: parse "https://registry.io/%zz": invalid URL escape "%zz"',
        id="target-invalid",
    ),
    pytest.param(
        "registry.io:5000", "registry.io/foo", 'port "5000" in pattern, "" in image', id="port"
    ),
    pytest.param(
        "*.registry.io", "registry.io", "pattern has 3 host labels, image has 2", id="labels"
    ),
    pytest.param(
        "registry.io/bar",
        "registry.io/foo",
        'image path "/foo" does not start with pattern path "/bar"',
        id="path",
    ),
    pytest.param(
        "k*.io", "quay.io", 'host label 1 pattern "k*" does not match "quay"', id="label-mismatch"
    ),
    pytest.param(
        "reg.[a.io",
        "reg.a.io",
        'host label 2 pattern "[a": syntax error in pattern',
        id="bad-pattern",
    ),
    pytest.param("*.registry.io", "a.registry.io/x", "pattern matches image", id="matched"),
]


@pytest.mark.parametrize(("glob", "target", "reason"), EXPLAIN)
def test_explain_match(glob: str, target: str, reason: str) -> None:
    want = MatchExplanation(reason == "pattern matches image", reason)
    assert explain_match(glob, target) == want


# path/filepath match_test.go, plus ErrBadPattern cases.
FILEPATH_MATCH = [
    ("abc", "abc", True),
    ("*", "abc", True),
    ("*c", "abc", True),
    ("a*", "a", True),
    ("a*", "abc", True),
    ("a*", "ab/c", False),
    ("a*/b", "abc/b", True),
    ("a*/b", "a/c/b", False),
    ("a*b*c*d*e*/f", "axbxcxdxe/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", False),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", False),
    ("a*b?c*x", "abxbbxdbxebxczzx", True),
    ("a*b?c*x", "abxbbxdbxebxczzy", False),
    ("ab[c]", "abc", True),
    ("ab[b-d]", "abc", True),
    ("ab[e-g]", "abc", False),
    ("ab[^c]", "abc", False),
    ("ab[^b-d]", "abc", False),
    ("ab[^e-g]", "abc", True),
    ("a\\*b", "a*b", True),
    ("a\\*b", "ab", False),
    ("a?b", "a☺b", True),
    ("a[^a]b", "a☺b", True),
    ("a???b", "a☺b", False),
    ("a[^a][^a][^a]b", "a☺b", False),
    ("[a-ζ]*", "α", True),
    ("*[a-ζ]", "A", False),
    ("a?b", "a/b", False),
    ("a*b", "a/b", False),
    ("[\\]a]", "]", True),
    ("[\\-]", "-", True),
    ("[x\\-]", "x", True),
    ("[x\\-]", "-", True),
    ("[x\\-]", "z", False),
    ("[\\-x]", "x", True),
    ("[\\-x]", "-", True),
    ("[\\-x]", "a", False),
    ("[]a]", "]", MatchPatternError),
    ("[-]", "-", MatchPatternError),
    ("[x-]", "x", MatchPatternError),
    ("[x-]", "-", MatchPatternError),
    ("[x-]", "z", MatchPatternError),
    ("[-x]", "x", MatchPatternError),
    ("[-x]", "-", MatchPatternError),
    ("[-x]", "a", MatchPatternError),
    ("\\", "a", MatchPatternError),
    ("[a-b-c]", "a", MatchPatternError),
    ("[", "a", MatchPatternError),
    ("[^", "a", MatchPatternError),
    ("[^bc", "a", MatchPatternError),
    ("a[", "a", MatchPatternError),
    ("a[", "ab", MatchPatternError),
    ("a[", "x", MatchPatternError),
    ("a/b[", "x", MatchPatternError),
    ("*x", "xxx", True),
    ("[z-a]", "m", False),
    ("[^z-a]", "m", True),
    ("[!a]", "b", False),
    ("[!a]", "!", True),
    ("x*[", "y", MatchPatternError),
    ("", "", True),
    ("", "a", False),
]


@pytest.mark.parametrize(
    ("pattern", "name", "want"),
    [pytest.param(*case, id=f"{case[0]!r}-{case[1]!r}") for case in FILEPATH_MATCH],
)
def test_filepath_match(pattern: str, name: str, want: bool | type[Exception]) -> None:
    if want is MatchPatternError:
        with pytest.raises(MatchPatternError, match=r"^syntax error in pattern$"):
            filepath_match(pattern, name)
    else:
        assert filepath_match(pattern, name) is want


def _outcome(fn: Callable[[str, str], bool], pattern: str, name: str) -> bool | str:
    try:
        return fn(pattern, name)
    except MatchPatternError:
        return "bad"


def test_compiled_labels_agree_with_reference() -> None:
    patterns = [case[0] for case in FILEPATH_MATCH] + [
        "".join(p) for p in itertools.product(["a", "*", "?", "[a-c]", "[^b]", "\\*"], repeat=3)
    ]
    names = ["", "a", "b", "ab", "abc", "aaa", "cba", "*", "a*", "ba", "a/b", "é", "abcabc"]
    for pattern in patterns:
        for name in names:
            want = _outcome(filepath_match, pattern, name)
            got = _outcome(lambda p, n: _label(p).match(n), pattern, name)
            assert got == want, (pattern, name)


GO_RELEASES = [
    # (release, glob, target, matches)
    ("1.25.1", "*.[a-z]*.io", "a.b.io/x", True),
    ("1.25.5", "*.[a-z]*.io", "a.b.io/x", False),  # invalid port "*.io" after host
    ("1.26.6", "*.[a-z]*.io", "a.b.io/x", False),  # invalid IP-literal
    ("1.25.1", "evil.com[::1]:5000", "[::1]:5000/x", False),
    ("1.25.5", "evil.com[::1]:5000", "[::1]:5000/x", True),  # the host is "[::1]:5000"
    ("1.26.6", "evil.com[::1]:5000", "[::1]:5000/x", False),
    ("1.25.1", "a:1:2", "a:1:2/x", True),
    ("1.26.6", "a:1:2", "a:1:2/x", False),  # invalid port ":1:2" after host
]


@pytest.mark.parametrize(("release", "glob", "target", "want"), GO_RELEASES)
def test_matching_follows_the_go_release(release: str, glob: str, target: str, want: bool) -> None:
    use_go(release)
    assert urls_match_str(glob, target) is want
    assert explain_match(glob, target).matched is want


def test_parse_caches_are_per_release() -> None:
    use_go("1.25.1")
    assert urls_match_str("reg.[a-z].io", "reg.a.io")
    use_go("1.26.6")
    assert not urls_match_str("reg.[a-z].io", "reg.a.io")
    assert "invalid IP-literal" in explain_match("reg.[a-z].io", "reg.a.io").reason
    use_go("1.25.1")
    assert urls_match_str("reg.[a-z].io", "reg.a.io")
