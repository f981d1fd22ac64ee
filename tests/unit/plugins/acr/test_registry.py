"""Login-server parsing, ``--registry-mirror`` parsing and mapping, service-principal keys.

The first table is upstream's ``TestParseACRLoginServerFromImage`` (environment suffix
``.azurecr.my.cloud``, mirror ``mcr.microsoft.com:abc.azurecr.io``); the next rows are
derived cases where upstream's substring fallback accepts non-ACR hosts and credprov does not.
"""

from __future__ import annotations

import pytest
from credprov_acr.registry import (
    CONTAINER_REGISTRY_URLS,
    Mirror,
    apply_mirror,
    login_server_of,
    parse_login_server,
    parse_registry_mirror,
    service_principal_keys,
)

UPSTREAM_MIRRORS = [Mirror("mcr.microsoft.com", "abc.azurecr.io")]

# (image, environment suffix, login server or None)
LOGIN_SERVERS = [
    # upstream TestParseACRLoginServerFromImage
    ("invalidImage", ".azurecr.my.cloud", None),
    ("docker.io/library/busybox:latest", ".azurecr.my.cloud", None),
    ("foo.azurecr.io/bar/image:version", ".azurecr.my.cloud", "foo.azurecr.io"),
    ("foo.azurecr.cn/bar/image:version", ".azurecr.my.cloud", "foo.azurecr.cn"),
    ("foo.azurecr.de/bar/image:version", ".azurecr.my.cloud", "foo.azurecr.de"),
    ("foo.azurecr.us/bar/image:version", ".azurecr.my.cloud", "foo.azurecr.us"),
    ("foo.azurecr.my.cloud/bar/image:version", ".azurecr.my.cloud", "foo.azurecr.my.cloud"),
    ("foo.azurecr.us/foo.azurecr.io/bar/image:version", ".azurecr.my.cloud", "foo.azurecr.us"),
    ("foo.azurecr.io.example/bar/image:version", ".azurecr.my.cloud", None),
    ("docker/foo.azurecr.io/bar/image:version", ".azurecr.my.cloud", None),
    ("foo.azurecr.io", ".azurecr.my.cloud", "foo.azurecr.io"),
    ("foo.azurecr.io.azurecr.cn", ".azurecr.my.cloud", None),
    ("foo-azurecr-io.azurecr.cn", ".azurecr.my.cloud", None),
    # public cloud (suffix azurecr.io): upstream's substring fallback re-accepts these
    ("foo.azurecr.io.example/bar", "azurecr.io", None),
    ("docker/foo.azurecr.io/bar", "azurecr.io", None),
    ("foo.azurecr.io.azurecr.cn", "azurecr.io", None),
    ("foo.azurecr.io:443/bar", "azurecr.io", None),
    ("evil.com/foo.azurecr.io", "azurecr.io", None),
    # ...and these it accepts as whole hosts, as credprov does (on a label boundary)
    ("foo.westus.data.azurecr.io/bar", "azurecr.io", "foo.westus.data.azurecr.io"),
    ("x.privatelink.azurecr.io/bar", "azurecr.io", "x.privatelink.azurecr.io"),
    ("foo-bar.azurecr.io/bar", "azurecr.io", "foo-bar.azurecr.io"),
    ("foo-azurecr-io.azurecr.cn", "azurecr.cn", "foo-azurecr-io.azurecr.cn"),
    # hosts are case-insensitive (upstream: not ACR)
    ("FOO.AZURECR.IO/bar", "azurecr.io", "FOO.AZURECR.IO"),
    ("Foo.azurecr.io/bar", "azurecr.io", "Foo.azurecr.io"),
    # no label before the suffix, odd labels
    ("azurecr.io/bar", "azurecr.io", None),
    (".azurecr.io/bar", "azurecr.io", None),
    ("a..azurecr.io/bar", "azurecr.io", None),
    ("-a.azurecr.io/bar", "azurecr.io", None),
    # regex only when the cloud has no suffix
    ("foo.westus.data.azurecr.io/bar", "", None),
    ("foo.azurecr.io/bar", "", "foo.azurecr.io"),
]


@pytest.mark.parametrize(("image", "suffix", "expected"), LOGIN_SERVERS)
def test_login_server(image: str, suffix: str, expected: str | None) -> None:
    assert login_server_of(image, suffix) == expected
    got = parse_login_server(image, UPSTREAM_MIRRORS, suffix)
    assert (got.server if got else None) == expected


# upstream TestProcessImageWithMirrorMapping, plus boundary cases
MIRRORED = [
    ("mcr.microsoft.com/bar/image:version", "abc.azurecr.io", "mcr.microsoft.com"),
    ("foo.azurecr.io/bar/image:version", "foo.azurecr.io", None),
    ("mcr.microsoft.com", "abc.azurecr.io", "mcr.microsoft.com"),
    ("MCR.microsoft.com/x", "abc.azurecr.io", "mcr.microsoft.com"),
    # upstream: a plain prefix, so these were "mirrored" to abc.azurecr.io.evil.io/x etc.
    ("mcr.microsoft.com.evil.io/x", None, None),
    ("mcr.microsoft.commerce/x", None, None),
]


@pytest.mark.parametrize(("image", "server", "source"), MIRRORED)
def test_mirror_mapping(image: str, server: str | None, source: str | None) -> None:
    got = parse_login_server(image, UPSTREAM_MIRRORS, "azurecr.io")
    assert (got.server if got else None) == server
    assert (got.mirror.source if got and got.mirror else None) == source


# (spec, mirrors as (source, target), invalid entries)
MIRROR_SPECS = [
    # upstream TestProcessMirrorMapping
    ("", [], []),
    ("aaa:bbb,ccc:ddd", [("aaa", "bbb"), ("ccc", "ddd")], []),
    ("aaa: bbb, ccc:ddd", [("aaa", "bbb"), ("ccc", "ddd")], []),
    ("aaa:bbb", [("aaa", "bbb")], []),
    # dropped entries, duplicates
    ("aaa,bbb:ccc", [("bbb", "ccc")], ["aaa"]),
    ("a:b:c:d:e", [], ["a:b:c:d:e"]),
    ("aaa:bbb,aaa:ccc", [("aaa", "ccc")], []),
    (":bbb,aaa:", [], [":bbb", "aaa:"]),
    (" \t ", [], []),
    # ports on either side (upstream drops these)
    ("registry.local:5000:foo.azurecr.io", [("registry.local:5000", "foo.azurecr.io")], []),
    ("mcr.microsoft.com:mirror.local:5000", [("mcr.microsoft.com", "mirror.local:5000")], []),
    ("a.io:5000:b.io:6000", [("a.io:5000", "b.io:6000")], []),
    ("a.io:5000/team:b.azurecr.io", [("a.io:5000/team", "b.azurecr.io")], []),
    # paths, trailing slashes
    (
        "mcr.microsoft.com/oss/:foo.azurecr.io/mirror/",
        [("mcr.microsoft.com/oss", "foo.azurecr.io/mirror")],
        [],
    ),
]


@pytest.mark.parametrize(("spec", "mirrors", "invalid"), MIRROR_SPECS)
def test_parse_registry_mirror(
    spec: str, mirrors: list[tuple[str, str]], invalid: list[str]
) -> None:
    got, bad = parse_registry_mirror(spec)
    assert [(m.source, m.target) for m in got] == mirrors
    assert bad == invalid


def test_longest_source_wins_whatever_the_order() -> None:
    specs = [
        "mcr.microsoft.com:general.azurecr.io,mcr.microsoft.com/oss:oss.azurecr.io",
        "mcr.microsoft.com/oss:oss.azurecr.io,mcr.microsoft.com:general.azurecr.io",
    ]
    for spec in specs:
        mirrors, _ = parse_registry_mirror(spec)
        assert apply_mirror("mcr.microsoft.com/oss/nginx", mirrors)[0] == "oss.azurecr.io/nginx"
        assert apply_mirror("mcr.microsoft.com/ossx/a", mirrors)[0] == "general.azurecr.io/ossx/a"
        assert apply_mirror("mcr.microsoft.com/dotnet", mirrors)[0] == "general.azurecr.io/dotnet"


def test_mirror_with_paths_and_ports() -> None:
    mirrors, _ = parse_registry_mirror(
        "registry.local:5000/team:foo.azurecr.io/mirror,registry.local:foo.azurecr.io"
    )
    image, mirror = apply_mirror("registry.local:5000/team/app", mirrors)
    assert image == "foo.azurecr.io/mirror/app"
    assert mirror is not None and mirror.has_path
    assert apply_mirror("registry.local:5000/other", mirrors) == ("registry.local:5000/other", None)
    assert apply_mirror("registry.local/x", mirrors)[0] == "foo.azurecr.io/x"
    got = parse_login_server("registry.local:5000/team/app", mirrors, "azurecr.io")
    assert got is not None and got.server == "foo.azurecr.io"


def test_mirror_target_that_is_not_acr() -> None:
    mirrors, _ = parse_registry_mirror("mcr.microsoft.com:mirror.example.com")
    assert parse_login_server("mcr.microsoft.com/x", mirrors, "azurecr.io") is None


@pytest.mark.parametrize(
    ("suffix", "extra"),
    [
        ("azurecr.io", []),
        ("azurecr.cn", []),
        ("", []),
        (".azurecr.my.cloud", ["*.azurecr.my.cloud"]),
        (".azurecr.io", []),  # "*.azurecr.io" is already listed
    ],
)
def test_service_principal_keys(suffix: str, extra: list[str]) -> None:
    assert service_principal_keys(suffix) == [*CONTAINER_REGISTRY_URLS, *extra]
