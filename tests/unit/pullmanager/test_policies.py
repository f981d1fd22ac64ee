"""Credential verification policies, allowlists and the trimmed image-name key (1.36+).

Tables from upstream's ``image_pull_policies_test.go`` (``TestTrimImageTagDigest``,
``TestNewNeverVerifyAllowListedPullPolicy``, ``TestNeverVerifyPreloadedPullPolicy``) plus
the exact messages of ``getAllowlistImagePattern`` and ``ValidateKubeletConfiguration``.
"""

from __future__ import annotations

import re

import pytest

from credprov.imageauth.images import InvalidImageError
from credprov.pullmanager.policies import (
    ALWAYS_VERIFY,
    DEFAULT_POLICY,
    NEVER_VERIFY,
    NEVER_VERIFY_ALLOWLISTED_IMAGES,
    NEVER_VERIFY_PRELOADED_IMAGES,
    AllowlistError,
    AllowlistPolicy,
    InvalidImageNameError,
    new_verification_policy,
    trim_image_tag_digest,
    validate_allowlist,
    validate_policy_config,
)

DIGEST = "sha256:38a8906435c4dd5f4258899d46621bfd8eea3ad6ff494ee3c2f17ef0321625bd"
HEX = DIGEST.removeprefix("sha256:")

# -- trim_image_tag_digest --------------------------------------------------------------------

TRIM_CASES = [
    # (name, image, want)
    ("familiar, no tag or digest", "myimage", "myimage"),
    ("familiar with tag", "myimage:latest", "myimage"),
    ("familiar with digest", f"myimage@{DIGEST}", "myimage"),
    ("familiar with tag and digest", f"myimage:v1@{DIGEST}", "myimage"),
    ("single path segment, no tag", "registry.io/myimage", "registry.io/myimage"),
    ("single path segment with tag", "registry.io/myimage:v1.0", "registry.io/myimage"),
    ("single path segment with digest", f"registry.io/myimage@{DIGEST}", "registry.io/myimage"),
    (
        "single path segment with tag and digest",
        f"registry.io/myimage:latest@{DIGEST}",
        "registry.io/myimage",
    ),
    ("domain, two segments, no tag", "registry.io/myorg/myimage", "registry.io/myorg/myimage"),
    ("domain, two segments, tag", "registry.io/myorg/myimage:v2", "registry.io/myorg/myimage"),
    (
        "domain, two segments, digest",
        f"registry.io/myorg/myimage@{DIGEST}",
        "registry.io/myorg/myimage",
    ),
    (
        "domain, two segments, tag and digest",
        f"registry.io/myorg/myimage:v2@{DIGEST}",
        "registry.io/myorg/myimage",
    ),
    ("deep path and tag", "registry.io/a/b/c/myimage:latest", "registry.io/a/b/c/myimage"),
    ("domain with port and tag", "localhost:5000/myimage:v1", "localhost:5000/myimage"),
    ("domain with port, no tag", "localhost:5000/myimage", "localhost:5000/myimage"),
    (
        "domain with port, org, and tag",
        "myregistry:5000/myorg/myimage:v1",
        "myregistry:5000/myorg/myimage",
    ),
    ("multiple occurrences of tag", "docker.io/taghere/image:taghere", "docker.io/taghere/image"),
    (
        "multiple occurrences of digest",
        f"registry.io/{HEX}/myorg/image@{DIGEST}",
        f"registry.io/{HEX}/myorg/image",
    ),
    # 1.36+: no Docker Hub normalisation in either direction.
    ("docker hub user repo kept literal", "user/repo:tag", "user/repo"),
    ("docker.io/library kept literal", "docker.io/library/nginx:1", "docker.io/library/nginx"),
    ("index.docker.io kept literal", "index.docker.io/x/y:1", "index.docker.io/x/y"),
]


@pytest.mark.parametrize(("name", "image", "want"), TRIM_CASES, ids=[c[0] for c in TRIM_CASES])
def test_trim_image_tag_digest(name: str, image: str, want: str) -> None:
    assert trim_image_tag_digest(image) == want


TRIM_ERRORS = [
    # (name, image, reason from distribution/reference)
    ("image name ends with slash", "registry.io/myorg/", "invalid reference format"),
    ("last segment is only a tag", "registry.io/myorg/:tag", "invalid reference format"),
    ("last segment is only a digest", f"registry.io/myorg/@{DIGEST}", "invalid reference format"),
    (
        "uppercase repository",
        "MyImage:latest",
        "invalid reference format: repository name (library/MyImage) must be lowercase",
    ),
    ("scheme", "http://root", "invalid reference format"),
    (
        "bare 64-hex identifier",
        HEX,
        f"invalid repository name ({HEX}), cannot specify 64-byte hexadecimal strings",
    ),
    ("short digest", "myimage@sha256:abc", "invalid reference format"),
    ("empty", "", "invalid reference format"),
]


@pytest.mark.parametrize(("name", "image", "reason"), TRIM_ERRORS, ids=[c[0] for c in TRIM_ERRORS])
def test_trim_image_tag_digest_errors(name: str, image: str, reason: str) -> None:
    with pytest.raises(InvalidImageNameError) as info:
        trim_image_tag_digest(image)
    err = info.value
    assert err.image == image
    assert err.reason == reason
    assert str(err) == f'invalid image name "{image}": {reason}'
    assert isinstance(err, InvalidImageError)
    assert isinstance(err, ValueError)


# -- allowlist validation ---------------------------------------------------------------------

ALLOWLIST_ERRORS = [
    ("wildcard in the middle", "image.repo/pokus*/imagename", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: image.repo/pokus*/imagename"),
    ("trailing non-segment wildcard", "image.repo/pokus*", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: image.repo/pokus*"),
    ("wildcard path segment in the middle", "image.repo/*/imagename", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: image.repo/*/imagename"),
    ("double wildcard segment", "image.repo/*/*", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: image.repo/*/*"),
    ("only wildcard segment", "/*", "at least registry hostname is required"),
    ("ends with a '/'", "image.repo/", "failed to parse as an image name: invalid reference format"),
    ("empty", "", "the supplied pattern is too short: "),
    ("asterisk", "*", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: *"),
    ("image with a tag", "test.io/test/image1:tagged", "neither tag nor digest is accepted in an image reference: test.io/test/image1:tagged"),
    ("image with a digest", f"test.io/test/image1@{DIGEST}", f"neither tag nor digest is accepted in an image reference: test.io/test/image1@{DIGEST}"),
    ("familiar name with a tag", "ubuntu:22.04", "neither tag nor digest is accepted in an image reference: ubuntu:22.04"),
    ("trailing whitespace", "test.io/test/image1 ", "leading/trailing spaces are not allowed: test.io/test/image1 "),
    ("leading tab", "\ttest.io/x", "leading/trailing spaces are not allowed: \ttest.io/x"),
    ("trailing no-break space", "test.io/x\xa0", "leading/trailing spaces are not allowed: test.io/x\xa0"),
    # Go's TrimSpace does not count U+001C as space, so this reaches the parser.
    ("leading U+001C", "\x1ctest.io/x", "failed to parse as an image name: invalid reference format"),
    ("uppercase", "test.io/Test", "failed to parse as an image name: invalid reference format: repository name (Test) must be lowercase"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "pattern", "message"), ALLOWLIST_ERRORS, ids=[c[0] for c in ALLOWLIST_ERRORS]
)
def test_validate_allowlist_errors(name: str, pattern: str, message: str) -> None:
    with pytest.raises(AllowlistError) as info:
        validate_allowlist(["test.io/ok", pattern])
    assert str(info.value) == message
    with pytest.raises(AllowlistError, match=f"^{re.escape(message)}$"):
        new_verification_policy(NEVER_VERIFY_ALLOWLISTED_IMAGES, [pattern])


@pytest.mark.parametrize(
    "pattern",
    [
        "test.io/test/image1",
        "test.io/*",
        "test.io/test/*",
        "localhost:5000/img",
        # 1.36+: familiar names are accepted (≤1.35 rejected them as "tagged").
        "ubuntu",
        "library/ubuntu",
        "docker.io/ubuntu",
        "docker.io/library/ubuntu",
        "docker.io/library/*",
    ],
)
def test_validate_allowlist_accepts(pattern: str) -> None:
    validate_allowlist([pattern])


def test_validate_allowlist_reports_first_error_only() -> None:
    with pytest.raises(AllowlistError, match="too short"):
        validate_allowlist(["", "*"])


# -- matching ---------------------------------------------------------------------------------

BASIC = "test.io/test/test-image:tag"

MATCH_CASES = [
    # (name, allowlist, image, want require-verification, absolutes, wildcards)
    ("not in allowlist", ["test.io/test/image1", "test.io/test/image2", "test.io/test/image3"], BASIC, True, 3, 0),
    ("duplicates collapse", ["test.io/test/image1", "test.io/test/image3", "test.io/test/image2", "test.io/test/image3"], BASIC, True, 3, 0),
    ("appears in allowlist (tagged pod image)", ["test.io/test/image1", "test.io/test/test-image"], BASIC, False, 2, 0),
    ("different repo wildcard", ["test.io/test/image1", "different.repo/test/*"], BASIC, True, 1, 1),
    ("matches org wildcard", ["test.io/test/image1", "test.io/test/*"], BASIC, False, 1, 1),
    ("matches repo wildcard", ["test.io/test/image1", "test.io/*"], BASIC, False, 1, 1),
    ("wildcard keeps its slash", ["test.io/*"], "test.io2/a/b:c", True, 0, 1),
    ("wildcard matches deep paths", ["test.io/*"], "test.io/a/b:c", False, 0, 1),
    ("absolute entry is exact, not a prefix", ["test.io/test/img"], "test.io/test/img2", True, 1, 0),
    ("absolute entry does not cover sub-paths", ["test.io/test"], "test.io/test/img", True, 1, 0),
    ("digest pod image", ["test.io/test/test-image"], f"test.io/test/test-image@{DIGEST}", False, 1, 0),
    ("familiar vs fully qualified entry", ["docker.io/library/ubuntu"], "ubuntu", True, 1, 0),
    ("familiar vs docker.io/library/*", ["docker.io/library/*"], "ubuntu", True, 0, 1),
    ("familiar vs familiar", ["ubuntu"], "ubuntu", False, 1, 0),
    ("familiar with tag vs familiar", ["ubuntu"], "ubuntu:tagged", False, 1, 0),
    ("familiar with digest vs familiar", ["ubuntu"], f"ubuntu@{DIGEST}", False, 1, 0),
    ("fully qualified pod image vs familiar entry", ["ubuntu"], "docker.io/library/ubuntu:1", True, 1, 0),
    ("untrimmable pod image is verified", ["test.io/*"], "test.io/Bad:1", True, 0, 1),
    ("empty allowlist verifies everything", [], BASIC, True, 0, 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "allowlist", "image", "want", "absolutes", "wildcards"),
    MATCH_CASES,
    ids=[c[0] for c in MATCH_CASES],
)
@pytest.mark.parametrize("pulled_by_kubelet", [False, True])
def test_allowlist_matching(
    name: str,
    allowlist: list[str],
    image: str,
    want: bool,
    absolutes: int,
    wildcards: int,
    pulled_by_kubelet: bool,
) -> None:
    policy = new_verification_policy(NEVER_VERIFY_ALLOWLISTED_IMAGES, allowlist)
    assert isinstance(policy, AllowlistPolicy)
    assert len(policy.absolute_images) == absolutes
    assert len(policy.prefixes) == wildcards
    # Whether the kubelet pulled the image does not matter to the allowlist policy.
    assert policy.require_credential_verification(image, pulled_by_kubelet) is want


def test_wildcard_prefix_keeps_trailing_slash() -> None:
    policy = AllowlistPolicy.from_patterns(["test.io/org/*"])
    assert policy.prefixes == ("test.io/org/",)


# -- the four policies ------------------------------------------------------------------------

POLICY_CASES = [
    # (policy, pulled_by_kubelet, want)
    (NEVER_VERIFY, False, False),
    (NEVER_VERIFY, True, False),
    (NEVER_VERIFY_PRELOADED_IMAGES, False, False),
    (NEVER_VERIFY_PRELOADED_IMAGES, True, True),
    (ALWAYS_VERIFY, False, True),
    (ALWAYS_VERIFY, True, True),
]


@pytest.mark.parametrize(("policy", "pulled_by_kubelet", "want"), POLICY_CASES)
@pytest.mark.parametrize("image", ["test-image:sometag", "ubuntu", "test.io/Bad:1"])
def test_policies(policy: str, pulled_by_kubelet: bool, want: bool, image: str) -> None:
    enforcer = new_verification_policy(policy)
    assert enforcer.name == policy
    assert enforcer.require_credential_verification(image, pulled_by_kubelet) is want


@pytest.mark.parametrize(
    ("allowlist", "image", "pulled_by_kubelet", "want"),
    [
        (["test.io/*"], "test.io/a:1", False, False),
        (["test.io/*"], "test.io/a:1", True, False),
        (["test.io/*"], "other.io/a:1", False, True),
        (["test.io/*"], "other.io/a:1", True, True),
    ],
)
def test_allowlist_policy_ignores_pulled_by_kubelet(
    allowlist: list[str], image: str, pulled_by_kubelet: bool, want: bool
) -> None:
    enforcer = new_verification_policy(NEVER_VERIFY_ALLOWLISTED_IMAGES, allowlist)
    assert enforcer.name == NEVER_VERIFY_ALLOWLISTED_IMAGES
    assert enforcer.require_credential_verification(image, pulled_by_kubelet) is want


def test_other_policies_ignore_allowlist() -> None:
    enforcer = new_verification_policy(ALWAYS_VERIFY, ["test.io/*"])
    assert enforcer.require_credential_verification("test.io/a", False) is True


@pytest.mark.parametrize("policy", ["", "neververify", "Bogus"])
def test_unknown_policy(policy: str) -> None:
    with pytest.raises(ValueError) as info:
        new_verification_policy(policy)
    assert str(info.value) == f"unknown image pull credential verification policy: {policy}"


def test_default_policy() -> None:
    assert DEFAULT_POLICY == NEVER_VERIFY_PRELOADED_IMAGES == "NeverVerifyPreloadedImages"
    assert (NEVER_VERIFY, NEVER_VERIFY_ALLOWLISTED_IMAGES, ALWAYS_VERIFY) == (
        "NeverVerify",
        "NeverVerifyAllowlistedImages",
        "AlwaysVerify",
    )


# -- KubeletConfiguration validation ----------------------------------------------------------

OPTIONS = (
    'Valid options are "NeverVerify", "NeverVerifyPreloadedImages", '
    '"NeverVerifyAllowlistedImages" or "AlwaysVerify"'
)
ALLOWLIST_NEEDS_POLICY = (
    "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if "
    '`imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"'
)

CONFIG_CASES = [
    # (name, policy, allowlist, gate, want)
    ("default policy", NEVER_VERIFY_PRELOADED_IMAGES, [], True, []),
    ("each valid policy: NeverVerify", NEVER_VERIFY, [], True, []),
    ("each valid policy: AlwaysVerify", ALWAYS_VERIFY, [], True, []),
    ("allowlist policy without a list", NEVER_VERIFY_ALLOWLISTED_IMAGES, [], True, []),
    ("allowlist policy with a list", NEVER_VERIFY_ALLOWLISTED_IMAGES, ["ubuntu", "test.io/*"], True, []),
    ("unknown policy", "Sometimes", [], True, [f'invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy. {OPTIONS}']),
    ("empty policy (not defaulted)", "", [], True, [f'invalid configuration: option "" specified for imagePullCredentialsVerificationPolicy. {OPTIONS}']),
    ("allowlist with another policy", NEVER_VERIFY, ["ubuntu"], True, [ALLOWLIST_NEEDS_POLICY]),
    ("unknown policy and allowlist", "x", ["*"], True, [f'invalid configuration: option "x" specified for imagePullCredentialsVerificationPolicy. {OPTIONS}', ALLOWLIST_NEEDS_POLICY]),
    ("bad pattern", NEVER_VERIFY_ALLOWLISTED_IMAGES, ["ok.io/a", "ubuntu:1"], True, ["invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: ubuntu:1"]),
    ("gate off, nothing set", "", [], False, []),
    ("gate off, policy set", NEVER_VERIFY, [], False, ["invalid configuration: `imagePullCredentialsVerificationPolicy` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled"]),
    ("gate off, both set", NEVER_VERIFY_ALLOWLISTED_IMAGES, ["*"], False, [
        "invalid configuration: `imagePullCredentialsVerificationPolicy` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled",
        "invalid configuration: `preloadedImagesVerificationAllowlist` must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled",
    ]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "policy", "allowlist", "gate", "want"),
    CONFIG_CASES,
    ids=[c[0] for c in CONFIG_CASES],
)
def test_validate_policy_config(
    name: str, policy: str, allowlist: list[str], gate: bool, want: list[str]
) -> None:
    assert validate_policy_config(policy, allowlist, gate_enabled=gate) == want


def test_validate_policy_config_quotes_like_go() -> None:
    (message,) = validate_policy_config('a"b\n', [])
    assert message.startswith('invalid configuration: option "a\\"b\\n" specified for ')
