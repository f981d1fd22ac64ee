"""distribution/reference ``ParseNormalizedNamed(...).Name()`` parity for ``credprov.imageauth.images``."""

from __future__ import annotations

import pytest

from credprov.imageauth.images import (
    InvalidImageError,
    is_default_registry_match,
    parse_image_name,
    parse_registry,
)

SHA256 = "sha256:" + "a" * 64

NAMES = [
    pytest.param("nginx", "docker.io/library/nginx", id="official"),
    pytest.param("nginx:1", "docker.io/library/nginx", id="official-tag"),
    pytest.param("nginx:1.25-alpine", "docker.io/library/nginx", id="tag-dots-dashes"),
    pytest.param("foo/bar", "docker.io/foo/bar", id="hub-namespace"),
    pytest.param("foo/bar/baz:tag", "docker.io/foo/bar/baz", id="hub-nested"),
    pytest.param("docker.io/nginx", "docker.io/library/nginx", id="docker-io-official"),
    pytest.param("docker.io/foo/bar", "docker.io/foo/bar", id="docker-io-namespace"),
    pytest.param("index.docker.io/x/y", "docker.io/x/y", id="legacy-domain"),
    pytest.param("index.docker.io/nginx", "docker.io/library/nginx", id="legacy-official"),
    pytest.param("localhost/a", "localhost/a", id="localhost"),
    pytest.param("localhost:5000/a:tag", "localhost:5000/a", id="localhost-port"),
    pytest.param("localhost", "docker.io/library/localhost", id="bare-localhost"),
    pytest.param("registry.io/foo/bar", "registry.io/foo/bar", id="registry"),
    pytest.param("registry:5000/foo", "registry:5000/foo", id="host-port-no-dot"),
    pytest.param("Registry.IO/foo", "Registry.IO/foo", id="uppercase-domain"),
    pytest.param("Foo/bar", "Foo/bar", id="uppercase-first-is-domain"),
    pytest.param("127.0.0.1:5000/x", "127.0.0.1:5000/x", id="ipv4"),
    pytest.param("[::1]:5000/foo", "[::1]:5000/foo", id="ipv6"),
    pytest.param("registry.io/foo@" + SHA256, "registry.io/foo", id="digest"),
    pytest.param("registry.io/foo:tag@" + SHA256, "registry.io/foo", id="tag-and-digest"),
    pytest.param("foo@sha512:" + "b" * 128, "docker.io/library/foo", id="sha512"),
    pytest.param("foo@sha384:" + "c" * 96, "docker.io/library/foo", id="sha384"),
    pytest.param("a/b__c/d-e--f/g.h_i", "docker.io/a/b__c/d-e--f/g.h_i", id="separators"),
    pytest.param("registry.io/" + "a" * 255, "registry.io/" + "a" * 255, id="path-255"),
    pytest.param("a" * 63, "docker.io/library/" + "a" * 63, id="hex-like-63"),
    pytest.param("registry.io/x:" + "t" * 128, "registry.io/x", id="tag-128"),
]


@pytest.mark.parametrize(("image", "want"), NAMES)
def test_parse_image_name(image: str, want: str) -> None:
    assert parse_image_name(image) == want


ERRORS = [
    pytest.param(
        "Nginx",
        "invalid reference format: repository name (library/Nginx) must be lowercase",
        id="uppercase-official",
    ),
    pytest.param(
        "registry.io/Foo/bar:Tag",
        "invalid reference format: repository name (Foo/bar) must be lowercase",
        id="uppercase-path",
    ),
    pytest.param(
        "foo@SHA256:" + "a" * 64,
        "invalid reference format: repository name (library/foo@SHA256) must be lowercase",
        id="uppercase-digest-algorithm",
    ),
    pytest.param(
        "a" * 64,
        f"invalid repository name ({'a' * 64}), cannot specify 64-byte hexadecimal strings",
        id="identifier",
    ),
    pytest.param("", "invalid reference format", id="empty"),
    pytest.param("foo bar", "invalid reference format", id="space"),
    pytest.param("registry.io/foo/", "invalid reference format", id="trailing-slash"),
    pytest.param("registry.io//foo", "invalid reference format", id="empty-component"),
    pytest.param("-foo", "invalid reference format", id="leading-dash"),
    pytest.param("foo:", "invalid reference format", id="empty-tag"),
    pytest.param("foo:-tag", "invalid reference format", id="tag-leading-dash"),
    pytest.param("registry.io/x:" + "t" * 129, "invalid reference format", id="tag-129"),
    pytest.param("foo@sha256:abc", "invalid reference format", id="digest-too-short-for-regex"),
    pytest.param("foo\n", "invalid reference format", id="trailing-newline"),
    pytest.param("foo@sha256:" + "a" * 32, "invalid checksum digest length", id="digest-length"),
    pytest.param(
        "foo@sha256:" + "A" * 64, "invalid checksum digest format", id="digest-uppercase-hex"
    ),
    pytest.param("foo@md5:" + "a" * 32, "unsupported digest algorithm", id="digest-unsupported"),
    pytest.param(
        "foo@sha256+b64:" + "a" * 64, "unsupported digest algorithm", id="digest-algorithm-plus"
    ),
    pytest.param(
        "registry.io/" + "a" * 256,
        "repository name must not be more than 255 characters",
        id="path-too-long",
    ),
]


@pytest.mark.parametrize(("image", "message"), ERRORS)
def test_parse_image_name_errors(image: str, message: str) -> None:
    with pytest.raises(InvalidImageError) as info:
        parse_image_name(image)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


REGISTRIES = [
    pytest.param("test.registry.io/foo/bar", "test.registry.io", id="host"),
    pytest.param("registry.io:5000/foo", "registry.io:5000", id="host-port"),
    pytest.param("docker.io/library/nginx", "docker.io", id="hub"),
    pytest.param("nginx", "nginx", id="single-element"),
    pytest.param("", "", id="empty"),
]


@pytest.mark.parametrize(("image", "want"), REGISTRIES)
def test_parse_registry(image: str, want: str) -> None:
    assert parse_registry(image) == want


# keyring_test.go TestIsDefaultRegistryMatch.
DEFAULT_REGISTRY = [
    pytest.param("foo/bar", True, id="namespace"),
    pytest.param("docker.io/foo/bar", True, id="docker-io"),
    pytest.param("index.docker.io/foo/bar", True, id="index-docker-io"),
    pytest.param("foo", True, id="single"),
    pytest.param("", False, id="empty"),
    pytest.param("registry.tld/foo/bar", False, id="dotted-host"),
    pytest.param("registry:5000/foo/bar", False, id="host-port"),
    pytest.param("myhostdocker.io/foo/bar", False, id="suffix-lookalike"),
    pytest.param("/foo", False, id="leading-slash"),
    pytest.param("localhost/foo", True, id="localhost-no-dot"),
]


@pytest.mark.parametrize(("image", "want"), DEFAULT_REGISTRY)
def test_is_default_registry_match(image: str, want: bool) -> None:
    assert is_default_registry_match(image) is want


@pytest.mark.parametrize(
    ("image", "message"),
    [
        pytest.param(
            "app:bad tag",
            """couldn't parse image name "app:bad tag": invalid reference format""",
            id="space",
        ),
        pytest.param(
            'a"b', """couldn't parse image name "a\\"b": invalid reference format""", id="quoted"
        ),
        pytest.param(
            "app@sha256:abc",
            """couldn't parse image name "app@sha256:abc": invalid reference format""",
            id="short-digest",
        ),
    ],
)
def test_couldnt_parse_image_name_is_one_text(image: str, message: str) -> None:
    """The chain and the kubelet's default-tag step wrap a bad reference the same way
    (``pkg/util/parsers.ParseImageName``), through one helper."""
    from credprov.credentialprovider.chain import default_chain
    from credprov.kubelet.ensure import apply_default_image_tag

    assert default_chain().resolve(image).error == message
    with pytest.raises(InvalidImageError) as info:
        apply_default_image_tag(image)
    assert str(info.value) == message
