"""Image pull credential verification policies, and the image-name key of pulled records.

Mirrors ``pkg/kubelet/images/pullmanager/image_pull_policies.go`` as of Kubernetes 1.36
(PR #137629 "fix the allowlisting policy"), plus the policy part of the kubelet's
``KubeletConfiguration`` validation (``pkg/kubelet/apis/config/validation/validation.go``):

* :func:`trim_image_tag_digest` is ``trimImageTagDigest``: the pod's image string with its
  tag and/or digest removed, *literally* (``nginx:1`` -> ``nginx``, not
  ``docker.io/library/nginx`` as up to 1.35). It is both the ``credentialMapping`` key of an
  ``ImagePulledRecord`` and what the allowlist is matched against.
* :func:`new_verification_policy` is ``NewImagePullCredentialVerificationPolicy``: the four
  policies, each answering "must this pod prove it may use this image?".
* :func:`validate_allowlist` is ``ValidateAllowlistImagesPatterns`` and
  :func:`validate_policy_config` is the ``KubeletEnsureSecretPulledImages`` block of
  ``ValidateKubeletConfiguration``, with the kubelet's messages (typo included).

Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from credprov._go.fmt import go_quote
from credprov.errors import PullManagerError
from credprov.imageauth.images import InvalidImageError, parse_image_name

__all__ = [
    "ALWAYS_VERIFY",
    "DEFAULT_POLICY",
    "NEVER_VERIFY",
    "NEVER_VERIFY_ALLOWLISTED_IMAGES",
    "NEVER_VERIFY_PRELOADED_IMAGES",
    "POLICIES",
    "AllowlistError",
    "AllowlistPolicy",
    "AlwaysVerifyPolicy",
    "InvalidImageNameError",
    "NeverVerifyPolicy",
    "NeverVerifyPreloadedPolicy",
    "VerificationPolicy",
    "default_policy",
    "new_verification_policy",
    "trim_image_tag_digest",
    "validate_allowlist",
    "validate_policy_config",
]

NEVER_VERIFY = "NeverVerify"
NEVER_VERIFY_PRELOADED_IMAGES = "NeverVerifyPreloadedImages"
NEVER_VERIFY_ALLOWLISTED_IMAGES = "NeverVerifyAllowlistedImages"
ALWAYS_VERIFY = "AlwaysVerify"
#: What the kubelet defaults an empty ``imagePullCredentialsVerificationPolicy`` to when the
#: feature gate is on (``pkg/kubelet/apis/config/v1beta1/defaults.go``).
DEFAULT_POLICY = NEVER_VERIFY_PRELOADED_IMAGES
#: In the order the kubelet's validation message lists them.
POLICIES = (
    NEVER_VERIFY,
    NEVER_VERIFY_PRELOADED_IMAGES,
    NEVER_VERIFY_ALLOWLISTED_IMAGES,
    ALWAYS_VERIFY,
)


class InvalidImageNameError(InvalidImageError):
    """An image string ``trimImageTagDigest`` rejects.

    ``str()`` is ``invalid image name "<image>": <reason>``, which is already the text the
    kubelet's ``writePulledRecordIfChanged`` wraps the error into, so callers need not wrap
    it again; ``reason`` is distribution/reference's own text (``invalid reference
    format``, ``... must be lowercase``).
    """

    def __init__(self, image: str, reason: str) -> None:
        super().__init__(f"invalid image name {go_quote(image)}: {reason}")
        self.image = image
        self.reason = reason


class AllowlistError(PullManagerError, ValueError):
    """A ``preloadedImagesVerificationAllowlist`` pattern the kubelet rejects."""


@functools.lru_cache(maxsize=4096)  # pure, and asked on every check
def trim_image_tag_digest(image: str) -> str:
    """The pod image string without its tag and digest, otherwise exactly as written.

    ``myimage:v1@sha256:…`` -> ``myimage``; ``localhost:5000/myimage:v1`` ->
    ``localhost:5000/myimage``; ``docker.io/taghere/image:taghere`` ->
    ``docker.io/taghere/image``. Docker Hub names are *not* normalised (1.36+).

    Raises:
        InvalidImageNameError: ``image`` is not a valid reference for
            distribution/reference's ``ParseNormalizedNamed`` (``registry.io/myorg/``,
            ``registry.io/myorg/:tag``, uppercase repositories, bare 64-hex IDs, bad
            digests, ...).
    """
    # The reference must be valid as a whole, so validate it with the same parser the
    # kubelet uses before cutting anything off; after that the cuts below are unambiguous.
    try:
        parse_image_name(image)
    except InvalidImageError as exc:
        raise InvalidImageNameError(image, str(exc)) from None
    name = image.partition("@")[0]
    # A ":" after the last "/" starts the tag; one before it belongs to the host's port.
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        name = name[:colon]
    return name


# -- policies ---------------------------------------------------------------------------------


class VerificationPolicy(Protocol):
    """``ImagePullPolicyEnforcer``: whether a pod must prove it may use a present image."""

    @property
    def name(self) -> str:
        """The ``imagePullCredentialsVerificationPolicy`` value this policy implements."""
        ...

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        """``RequireCredentialVerificationForImage``.

        ``image`` is the container's ``image`` field as written; ``image_pulled_by_kubelet``
        says a pulled record (by imageRef) or a pull intent (by exact image) exists.
        """
        ...


@dataclass(frozen=True)
class NeverVerifyPolicy:
    """``NeverVerify``: every pod may use every image present on the node."""

    name: ClassVar[str] = NEVER_VERIFY

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        """Always False: any pod may use any present image."""
        return False


@dataclass(frozen=True)
class NeverVerifyPreloadedPolicy:
    """``NeverVerifyPreloadedImages``: verify only images the kubelet itself pulled."""

    name: ClassVar[str] = NEVER_VERIFY_PRELOADED_IMAGES

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        """True for an image the kubelet pulled; False for one it found on the node."""
        return image_pulled_by_kubelet


@dataclass(frozen=True)
class AlwaysVerifyPolicy:
    """``AlwaysVerify``: verify every image, preloaded or not."""

    name: ClassVar[str] = ALWAYS_VERIFY

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        """Always True: every pod proves access to every image."""
        return True


@dataclass(frozen=True)
class AllowlistPolicy:
    """``NeverVerifyAllowlistedImages``: verify every image not on the allowlist.

    Whether the kubelet pulled the image does not matter: an allowlisted image is exempt
    even after a credentialed pull, exactly as upstream. Entries are compared literally
    with the trimmed pod image, so ``ubuntu`` matches ``ubuntu:22.04`` but
    ``docker.io/library/ubuntu`` and ``docker.io/library/*`` do not.
    """

    absolute_images: frozenset[str]
    #: Wildcard entries with their ``*`` removed; each keeps its trailing ``/``.
    prefixes: tuple[str, ...]
    name: ClassVar[str] = NEVER_VERIFY_ALLOWLISTED_IMAGES

    @classmethod
    def from_patterns(cls, patterns: Iterable[str]) -> AllowlistPolicy:
        """Raises AllowlistError for the first invalid pattern."""
        absolutes: set[str] = set()
        prefixes: list[str] = []
        for pattern in patterns:
            normalized, is_wildcard = _allowlist_pattern(pattern)
            if is_wildcard:
                prefixes.append(normalized)
            else:
                absolutes.add(normalized)
        return cls(frozenset(absolutes), tuple(prefixes))

    def matches(self, image: str) -> bool:
        """Whether the pod image ``image`` is allowlisted (False when it cannot be parsed)."""
        try:
            trimmed = trim_image_tag_digest(image)
        except InvalidImageNameError:
            return False
        return trimmed in self.absolute_images or trimmed.startswith(self.prefixes)

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        # An image that cannot be parsed is never exempt: failing safe means verifying.
        """True unless ``image`` matches the allowlist (whoever pulled it)."""
        return not self.matches(image)


def default_policy(policy: str, gate_enabled: bool = True) -> str:
    """``imagePullCredentialsVerificationPolicy`` as the kubelet defaults it (``defaults.go``).

    Args:
        policy: the configured value ("" when unset).
        gate_enabled: the ``KubeletEnsureSecretPulledImages`` feature gate.

    Returns:
        :data:`DEFAULT_POLICY` for an empty policy with the gate on, else ``policy`` as it is
        (with the gate off a set policy is left for :func:`validate_policy_config` to refuse).
    """
    return DEFAULT_POLICY if gate_enabled and not policy else policy


def new_verification_policy(policy: str, allowlist: Iterable[str] = ()) -> VerificationPolicy:
    """``NewImagePullCredentialVerificationPolicy``.

    ``allowlist`` is only read for ``NeverVerifyAllowlistedImages`` (configuration
    validation is what rejects an allowlist next to another policy).

    Raises:
        AllowlistError: an allowlist pattern is invalid.
        ValueError: ``policy`` is none of the four (an empty one must be defaulted first).
    """
    if policy == NEVER_VERIFY:
        return NeverVerifyPolicy()
    if policy == NEVER_VERIFY_PRELOADED_IMAGES:
        return NeverVerifyPreloadedPolicy()
    if policy == NEVER_VERIFY_ALLOWLISTED_IMAGES:
        return AllowlistPolicy.from_patterns(allowlist)
    if policy == ALWAYS_VERIFY:
        return AlwaysVerifyPolicy()
    raise ValueError(f"unknown image pull credential verification policy: {policy}")


# -- validation -------------------------------------------------------------------------------


def validate_allowlist(patterns: Iterable[str]) -> None:
    """``ValidateAllowlistImagesPatterns``: raises AllowlistError for the first bad pattern."""
    for pattern in patterns:
        _allowlist_pattern(pattern)


def validate_policy_config(
    policy: str, allowlist: Sequence[str], gate_enabled: bool = True
) -> list[str]:
    """Every problem with the two settings, as ``ValidateKubeletConfiguration`` words it.

    ``gate_enabled`` is the ``KubeletEnsureSecretPulledImages`` feature gate. Like the
    kubelet, this validates the *defaulted* configuration: with the gate on, an empty
    ``policy`` is an error here, so apply :data:`DEFAULT_POLICY` first. Returns an empty
    list when the settings are valid.
    """
    errors: list[str] = []
    if not gate_enabled:
        if policy:
            errors.append(
                "invalid configuration: `imagePullCredentialsVerificationPolicy` must not be "
                "set if KubeletEnsureSecretPulledImages feature gate is not enabled"
            )
        if allowlist:
            errors.append(
                "invalid configuration: `preloadedImagesVerificationAllowlist` must not be "
                "set if KubeletEnsureSecretPulledImages feature gate is not enabled"
            )
        return errors

    if policy not in POLICIES:
        quoted = [go_quote(p) for p in POLICIES]
        errors.append(
            f"invalid configuration: option {go_quote(policy)} specified for "
            "imagePullCredentialsVerificationPolicy. Valid options are "
            f"{quoted[0]}, {quoted[1]}, {quoted[2]} or {quoted[3]}"
        )
    if allowlist and policy != NEVER_VERIFY_ALLOWLISTED_IMAGES:
        # "Vertification" is the kubelet's typo; the message is kept byte for byte.
        errors.append(
            "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if "
            '`imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"'
        )
    else:
        try:
            validate_allowlist(allowlist)
        except AllowlistError as exc:
            errors.append(
                "invalid configuration: invalid image pattern in "
                f"`preloadedImagesVerificationAllowlist`: {exc}"
            )
    return errors


def _allowlist_pattern(pattern: str) -> tuple[str, bool]:
    """``getAllowlistImagePattern``: (normalized pattern, is wildcard)."""
    if pattern != _go_trim_space(pattern):
        raise AllowlistError(f"leading/trailing spaces are not allowed: {pattern}")

    is_wildcard = pattern.endswith("/*")
    # Only the "*" goes: the prefix keeps its "/", so "test.io/*" cannot match "test.io2/x".
    trimmed = pattern[:-1] if is_wildcard else pattern
    if not trimmed:
        raise AllowlistError(f"the supplied pattern is too short: {pattern}")
    if "*" in trimmed:
        raise AllowlistError(
            "not a valid wildcard pattern, only patterns ending with '/*' are allowed: " + pattern
        )
    if is_wildcard:
        # Wildcard prefixes are not syntax-checked beyond this, as upstream.
        if len(trimmed) == 1:
            raise AllowlistError("at least registry hostname is required")
        return trimmed, True

    # 1.36+: an entry must be its own trimmed form, so familiar names ("ubuntu") are
    # accepted and compared literally, like the pod images they are matched against.
    try:
        name = trim_image_tag_digest(trimmed)
    except InvalidImageNameError as exc:
        raise AllowlistError(f"failed to parse as an image name: {exc.reason}") from None
    if name != trimmed:
        raise AllowlistError(f"neither tag nor digest is accepted in an image reference: {pattern}")
    return trimmed, False


def _is_go_space(ch: str) -> bool:
    # Go's unicode.IsSpace; Python's str.isspace also counts U+001C..U+001F, Go does not.
    return ch in "\t\n\v\f\r \x85\xa0" or unicodedata.category(ch) in ("Zs", "Zl", "Zp")


def _go_trim_space(s: str) -> str:
    """``strings.TrimSpace``."""
    start, end = 0, len(s)
    while start < end and _is_go_space(s[start]):
        start += 1
    while end > start and _is_go_space(s[end - 1]):
        end -= 1
    return s[start:end]
