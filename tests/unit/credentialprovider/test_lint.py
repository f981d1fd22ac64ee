"""Warnings for configs that validate but cannot match (``credprov.credentialprovider.lint``)."""

from __future__ import annotations

import dataclasses

import pytest

from credprov._go.durations import MINUTE
from credprov._go.version import use_go
from credprov.api import internal
from credprov.credentialprovider.lint import lint_config
from credprov.imageauth.matching import urls_match_str


def config(*patterns: str, default: int = 10 * MINUTE) -> internal.CredentialProviderConfig:
    return internal.CredentialProviderConfig(
        providers=(
            internal.CredentialProvider(
                name="p",
                match_images=patterns,
                default_cache_duration=default,
                api_version="credentialprovider.kubelet.k8s.io/v1",
            ),
        )
    )


@pytest.mark.parametrize(
    ("pattern", "needle", "image"),
    [
        ("", "empty", "registry.io/x"),
        ("https://registry.io", "has a scheme", "registry.io/x"),
        ("registry-1?.io", "'?' starts a URL query", "registry-12.io/x"),
        ("registry.io#frag", "'#' starts a URL fragment", None),
        ("user@registry.io", "'user@' part is ignored", None),
        ("[::ffff:1.2.3.4]:5000", "Go 1.24.8 to 1.24.9, 1.25.2 to 1.25.3 refuse it", None),
        ("Registry.io", "upper-case", "registry.io/x"),
    ],
    ids=["empty", "scheme", "query", "fragment", "userinfo", "bracket-host", "uppercase"],
)
def test_warnings(pattern: str, needle: str, image: str | None) -> None:
    (warning,) = lint_config(config(pattern))
    assert needle in warning and repr(pattern) in warning
    if image is not None:  # the warning is true: the kubelet would not match this image
        assert not urls_match_str(pattern, image)


@pytest.mark.parametrize(
    "pattern",
    ["registry.io", "*.registry.io", "registry.io:5000", "registry.io/team", "r*.io/team"],
)
def test_good_patterns_are_quiet(pattern: str) -> None:
    assert lint_config(config(pattern)) == []


def test_zero_default_cache_duration() -> None:
    (warning,) = lint_config(config("registry.io", default=0))
    assert "defaultCacheDuration is 0" in warning


def test_invalid_patterns_are_left_to_validation() -> None:
    assert lint_config(config("%invalid%")) == []


@pytest.mark.parametrize(
    "pattern", ["registry.io/*", "registry.io/team/*", "r.io/[a-z]*", "r.io/a*b"]
)
def test_path_globs_never_match(pattern: str) -> None:
    (warning,) = lint_config(config(pattern))
    assert "matched as a literal prefix, not a glob" in warning


def test_nameless_provider_warns() -> None:
    cfg = internal.CredentialProviderConfig(
        providers=(dataclasses.replace(config("r.io").providers[0], name=""),)
    )
    assert lint_config(cfg) == [
        "provider #1 has no name: the kubelet accepts the config but fails at start-up, "
        "because the plugin path is the bin dir itself"
    ]


W = "provider 'p' matchImages entry "
GO_FAMILY_WARNINGS = [
    pytest.param(
        "1.25.1",
        "reg.[a-z]*.io",
        [
            W + "'reg.[a-z]*.io': kubelets built with Go 1.24.8 and later 1.24, 1.25.2 to 1.26.0 "
            "refuse it (invalid port \"*.io\" after host); avoid '[...]' in the host",
            W + "'reg.[a-z]*.io': kubelets built with Go 1.26.1 and later refuse it (invalid "
            "IP-literal); avoid '[...]' in the host",
        ],
        id="glob-class-pre-cve",
    ),
    pytest.param(
        "1.25.5",
        "evil.com[::1]:5000",
        [
            W + "'evil.com[::1]:5000': kubelets built with Go 1.21 to 1.24.7, 1.25.0 to 1.25.1 "
            "read its host as 'evil.com[::1]:5000', not '[::1]:5000'; avoid '[...]' in the host",
            W + "'evil.com[::1]:5000': kubelets built with Go 1.26.1 and later refuse it "
            "(invalid IP-literal); avoid '[...]' in the host",
        ],
        id="prefix-dropped",
    ),
    pytest.param(
        "1.26.6",
        "[::ffff:1.2.3.4]",
        [
            W + "'[::ffff:1.2.3.4]': kubelets built with Go 1.24.8 to 1.24.9, 1.25.2 to 1.25.3 "
            "refuse it (invalid IPv6 host); avoid '[...]' in the host"
        ],
        id="ipv4-mapped",
    ),
    pytest.param(
        "1.25.5",
        "a:1:2",
        [
            W + "'a:1:2': kubelets built with Go 1.26.0 and later refuse it (invalid port "
            "\":1:2\" after host); keep one ':', before the port"
        ],
        id="strict-colons",
    ),
    pytest.param("1.26.6", "[::1]:5000", [], id="ipv6-everywhere"),
]


@pytest.mark.parametrize(("release", "pattern", "warnings"), GO_FAMILY_WARNINGS)
def test_other_go_releases(release: str, pattern: str, warnings: list[str]) -> None:
    use_go(release)
    assert lint_config(config(pattern)) == warnings


def test_a_kubelet_with_urlstrictcolons_0_is_warned_about_go_defaults() -> None:
    # A go 1.24 kubelet built with Go 1.26 accepts host::5000; one with Go 1.26's own
    # defaults does not.
    from credprov._go.version import go_release

    use_go(go_release("1.26.6", "urlstrictcolons=0"))
    assert lint_config(config("host::5000")) == [
        W + "'host::5000': kubelets built with Go 1.26.0 and later (with their own GODEBUG "
        "defaults) refuse it (invalid port \"::5000\" after host); keep one ':', before the "
        "port"
    ]
