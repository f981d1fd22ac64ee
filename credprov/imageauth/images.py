"""Image-name normalisation, as the kubelet computes the image a plugin sees.

``parse_image_name`` mirrors ``distribution/reference.ParseNormalizedNamed(image)
.Name()`` (v0.6), which the kubelet's ``pkg/util/parsers.ParseImageName`` returns as
``repoToPull``: the tag and digest are validated and stripped, Docker Hub names are
canonicalised (``nginx`` -> ``docker.io/library/nginx``, ``index.docker.io/x/y`` ->
``docker.io/x/y``), and the error texts are those of distribution/reference and
opencontainers/go-digest (sha256, sha384 and sha512 are the available algorithms).

``parse_registry`` is the plugin cache's ``parseRegistry`` and
``is_default_registry_match`` is ``isDefaultRegistryMatch`` from ``keyring.go``.

Plugins import this module on their hot path, so it needs only ``re`` and
``functools``, and compiles its patterns on first use.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from credprov.errors import CredentialProviderError

__all__ = [
    "InvalidImageError",
    "image_name_error",
    "is_default_registry_match",
    "normalize_reference",
    "parse_image_name",
    "parse_registry",
    "split_reference",
]

_NAME_TOTAL_LENGTH_MAX = 255
_DEFAULT_DOMAIN = "docker.io"
_LEGACY_DEFAULT_DOMAIN = "index.docker.io"
_OFFICIAL_REPO_PREFIX = "library/"

# Digest encodings that go-digest can validate, by algorithm, as hex lengths.
_DIGEST_HEX_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}


class InvalidImageError(CredentialProviderError, ValueError):
    """An image reference distribution/reference rejects; ``str()`` is its error text."""


def image_name_error(image: str, exc: InvalidImageError) -> InvalidImageError:
    """``pkg/util/parsers.ParseImageName``'s wrapping of a reference error, as the kubelet
    reports it: ``couldn't parse image name "<image>": <reason>`` (the name as Go's ``%q``)."""
    from credprov._go.fmt import go_quote  # the error path only: plugins parse on their hot path

    return InvalidImageError(f"couldn't parse image name {go_quote(image)}: {exc}")


# Built from the same productions as distribution/reference's regexp.go. Go's RE2
# and Python's re both pick the leftmost-first submatch, and fullmatch() stands in
# for ^...$ (Python's $ would also accept a trailing newline).
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = _ALNUM + r"(?:" + _SEPARATOR + _ALNUM + r")*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_DOMAIN_AND_PORT = r"(?:" + _DOMAIN_NAME + "|" + _IPV6 + r")(?::[0-9]+)?"
_TAG = r"[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9A-Fa-f]{32,}"
_REMOTE_NAME = _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*"
_NAME = r"(?:" + _DOMAIN_AND_PORT + r"/)?" + _REMOTE_NAME


@cache
def _reference_re() -> re.Pattern[str]:
    return re.compile(r"(" + _NAME + r")(?::(" + _TAG + r"))?(?:@(" + _DIGEST + r"))?")


@cache
def _anchored_name_re() -> re.Pattern[str]:
    return re.compile(r"(?:(" + _DOMAIN_AND_PORT + r")/)?(" + _REMOTE_NAME + r")")


@cache
def _identifier_re() -> re.Pattern[str]:
    return re.compile(r"[a-f0-9]{64}")


@cache
def _go_digest_re() -> re.Pattern[str]:
    return re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")


def _validate_digest(digest: str) -> None:
    """go-digest's ``Digest.Validate``."""
    i = digest.find(":")
    if i <= 0 or i + 1 == len(digest):
        raise InvalidImageError("invalid checksum digest format")
    algorithm, encoded = digest[:i], digest[i + 1 :]
    size = _DIGEST_HEX_LENGTHS.get(algorithm)
    if size is None:
        if _go_digest_re().fullmatch(digest) is None:
            raise InvalidImageError("invalid checksum digest format")
        raise InvalidImageError("unsupported digest algorithm")
    if len(encoded) != size:
        raise InvalidImageError("invalid checksum digest length")
    if any(c not in "0123456789abcdef" for c in encoded):
        raise InvalidImageError("invalid checksum digest format")


def _parse_name(s: str) -> str:
    """``reference.Parse(s).Name()``, for an ``s`` that already has a domain."""
    if not s:
        raise InvalidImageError("repository name must have at least one component")
    m = _reference_re().fullmatch(s)
    if m is None:
        lowered = s.lower()
        if lowered != s and _reference_re().fullmatch(lowered) is not None:
            raise InvalidImageError("repository name must be lowercase")
        raise InvalidImageError("invalid reference format")
    name = m.group(1)
    name_match = _anchored_name_re().fullmatch(name)
    path = name_match.group(2) if name_match is not None else name
    if len(path) > _NAME_TOTAL_LENGTH_MAX:
        raise InvalidImageError(
            f"repository name must not be more than {_NAME_TOTAL_LENGTH_MAX} characters"
        )
    digest = m.group(3)
    if digest:
        _validate_digest(digest)
    return name


def _split_docker_domain(name: str) -> tuple[str, str]:
    maybe_domain, slash, maybe_remote = name.partition("/")
    if not slash:
        # A single element is always a Docker Hub official image, even "localhost".
        return _DEFAULT_DOMAIN, _OFFICIAL_REPO_PREFIX + name
    if maybe_domain == "localhost":
        domain, remote = maybe_domain, maybe_remote
    elif maybe_domain == _LEGACY_DEFAULT_DOMAIN:
        domain, remote = _DEFAULT_DOMAIN, maybe_remote
    elif "." in maybe_domain or ":" in maybe_domain:
        domain, remote = maybe_domain, maybe_remote
    elif maybe_domain.lower() != maybe_domain:
        # Namespaces must be lowercase, so an uppercase first element is a host.
        domain, remote = maybe_domain, maybe_remote
    else:
        domain, remote = _DEFAULT_DOMAIN, name
    if domain == _DEFAULT_DOMAIN and "/" not in remote:
        remote = _OFFICIAL_REPO_PREFIX + remote
    return domain, remote


# A node sees thousands of distinct images at most; 16,384 names cost about 4 MB.
@lru_cache(maxsize=16384)
def parse_image_name(image: str) -> str:
    """The repository the kubelet pulls: ``ParseNormalizedNamed(image).Name()``.

    Raises:
        InvalidImageError: with distribution/reference's message, for example
            ``invalid reference format: repository name (library/Nginx) must be
            lowercase`` or ``invalid checksum digest length``.
    """
    if _identifier_re().fullmatch(image) is not None:
        raise InvalidImageError(
            f"invalid repository name ({image}), cannot specify 64-byte hexadecimal strings"
        )
    domain, remainder = _split_docker_domain(image)
    remote = remainder.partition(":")[0]
    if remote.lower() != remote:
        raise InvalidImageError(
            f"invalid reference format: repository name ({remote}) must be lowercase"
        )
    return _parse_name(domain + "/" + remainder)


def parse_registry(image: str) -> str:
    """``parseRegistry``: the part before the first ``/`` (host[:port])."""
    return image.split("/", 1)[0]


def is_default_registry_match(image: str) -> bool:
    """``isDefaultRegistryMatch``: whether ``image`` pulls from Docker Hub by its name."""
    first, slash, _ = image.partition("/")
    if not first:
        return False
    if not slash:
        return True
    if first in (_DEFAULT_DOMAIN, _LEGACY_DEFAULT_DOMAIN):
        return True
    # Docker reads a "." (domain) or ":" (port) in the first part as a registry host.
    return "." not in first and ":" not in first


# -- references as the container runtime stores them ------------------------------------------


def split_reference(image: str) -> tuple[str, str, str]:
    """(normalised repository, tag or "", digest or "") of an image reference.

    Raises:
        InvalidImageError: not a reference distribution/reference accepts.
    """
    repo = parse_image_name(image)  # validates the whole reference
    name, _, digest = image.partition("@")
    colon = name.rfind(":")
    # A ":" after the last "/" starts the tag; before it, it is the registry's port.
    tag = name[colon + 1 :] if colon > name.rfind("/") else ""
    return repo, tag, digest


def normalize_reference(image: str) -> str:
    """The fully qualified name containerd stores: ``repo:tag``, ``repo@digest`` or both;
    no tag and no digest means ``:latest``.

    Raises:
        InvalidImageError: not a valid reference.
    """
    repo, tag, digest = split_reference(image)
    if digest:
        return f"{repo}:{tag}@{digest}" if tag else f"{repo}@{digest}"
    return f"{repo}:{tag or 'latest'}"
