"""``credprov_ecr.registry``: image → host, and host → (account, region, fips, dual-stack,
partition), table-driven from upstream's ``Test_parseHostFromImageReference``,
``Test_parseRegionFromECRPrivateHost`` and ``TestRegistryPatternMatch`` cases."""

from __future__ import annotations

import pytest
from credprov_ecr.registry import (
    ImageReferenceError,
    Registry,
    parse_host_from_image_reference,
    parse_region_from_private_host,
    parse_registry,
)

ID = "123456789012"

# host: (registry_id, region, fips, dualstack, partition); None = not an ECR private host.
PRIVATE_HOSTS: dict[str, tuple[str, str, bool, bool, str] | None] = {
    # commercial
    f"{ID}.dkr.ecr.us-west-2.amazonaws.com": (ID, "us-west-2", False, False, "aws"),
    f"{ID}.dkr.ecr.eu-central-1.amazonaws.com": (ID, "eu-central-1", False, False, "aws"),
    f"{ID}.dkr.ecr-fips.us-east-1.amazonaws.com": (ID, "us-east-1", True, False, "aws"),
    # China
    f"{ID}.dkr.ecr.cn-north-1.amazonaws.com.cn": (ID, "cn-north-1", False, False, "aws-cn"),
    f"{ID}.dkr.ecr.cn-northwest-1.amazonaws.com.cn": (
        ID,
        "cn-northwest-1",
        False,
        False,
        "aws-cn",
    ),
    # GovCloud (a region of the commercial DNS suffix)
    f"{ID}.dkr.ecr.us-gov-east-1.amazonaws.com": (ID, "us-gov-east-1", False, False, "aws-us-gov"),
    f"{ID}.dkr.ecr-fips.us-gov-west-1.amazonaws.com": (
        ID,
        "us-gov-west-1",
        True,
        False,
        "aws-us-gov",
    ),
    # EU sovereign cloud
    f"{ID}.dkr.ecr.eusc-de-east-1.amazonaws.eu": (ID, "eusc-de-east-1", False, False, "aws-eusc"),
    # ISO, ISO-B, ISO-E, ISO-F
    f"{ID}.dkr.ecr.us-iso-east-1.c2s.ic.gov": (ID, "us-iso-east-1", False, False, "aws-iso"),
    f"{ID}.dkr.ecr.us-isob-east-1.sc2s.sgov.gov": (ID, "us-isob-east-1", False, False, "aws-iso-b"),
    f"{ID}.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk": (
        ID,
        "eu-isoe-west-1",
        False,
        False,
        "aws-iso-e",
    ),
    f"{ID}.dkr.ecr.us-isof-south-1.csp.hci.ic.gov": (
        ID,
        "us-isof-south-1",
        False,
        False,
        "aws-iso-f",
    ),
    # dual-stack (IPv4 + IPv6), with and without FIPS, commercial / GovCloud / China
    f"{ID}.dkr-ecr.us-east-1.on.aws": (ID, "us-east-1", False, True, "aws"),
    f"{ID}.dkr-ecr-fips.us-east-1.on.aws": (ID, "us-east-1", True, True, "aws"),
    f"{ID}.dkr-ecr.us-gov-west-1.on.aws": (ID, "us-gov-west-1", False, True, "aws-us-gov"),
    f"{ID}.dkr-ecr-fips.us-gov-east-1.on.aws": (ID, "us-gov-east-1", True, True, "aws-us-gov"),
    f"{ID}.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn": (
        ID,
        "cn-north-1",
        False,
        True,
        "aws-cn",
    ),
    # upstream's pattern quirks, kept: "dkr-ecr" on amazonaws.com, "_" and upper case in the
    # region, a dot variant of the dual-stack name
    f"{ID}.dkr-ecr.us-east-1.amazonaws.com": (ID, "us-east-1", False, False, "aws"),
    f"{ID}.dkr.ecr.US_EAST_1.amazonaws.com": (ID, "US_EAST_1", False, False, "aws"),
    f"{ID}.dkr.ecr.us-east-1.on.aws": (ID, "us-east-1", False, True, "aws"),
    # not private ECR
    "registry.k8s.io": None,
    f"{ID}.dkr.ecr.us-east-1.amazonaws.com.": None,  # trailing-dot FQDN
    f"{ID}.DKR.ECR.us-east-1.amazonaws.com": None,  # case-sensitive, as upstream
    f"{ID}.dkr.ecr.us-east-1.amazonaws.com\n": None,  # Go's $ is end of text
    f"{ID[:-1]}.dkr.ecr.us-east-1.amazonaws.com": None,  # 11 digits
    f"{ID}0.dkr.ecr.us-east-1.amazonaws.com": None,  # 13 digits
    "١٢٣٤٥٦٧٨٩٠١٢.dkr.ecr.us-east-1.amazonaws.com": None,  # non-ASCII digits
    f"{ID}.dkr.ecr.-us-east-1.amazonaws.com": None,  # region starts with a letter/digit
    f"{ID}.dkr.ecr.us-east-1.amazonaws.org": None,
    f"{ID}.dkr.ecr.us-east-1.on.aws.example.com": None,
    f"x.{ID}.dkr.ecr.us-east-1.amazonaws.com": None,
    f"{ID}.dkr.ecr.us-east-1.amazonaws.com:443": None,  # ports are stripped before this
}


@pytest.mark.parametrize("host", list(PRIVATE_HOSTS), ids=repr)
def test_private_host_parsing(host: str) -> None:
    want = PRIVATE_HOSTS[host]
    reg = parse_registry(host)
    assert not reg.public
    assert reg.host == host
    if want is None:
        assert reg == Registry(host=host)
        assert not reg.is_ecr
        assert parse_region_from_private_host(host) == ""
        return
    assert (reg.registry_id, reg.region, reg.fips, reg.dualstack, reg.partition) == want
    assert reg.is_ecr
    assert parse_region_from_private_host(host) == reg.region


PUBLIC_HOSTS = {
    "public.ecr.aws": Registry("public.ecr.aws", True, "", "us-east-1", False, False, "aws"),
    "ecr-public.aws.com": Registry("ecr-public.aws.com", True, "", "us-east-1", False, True, "aws"),
}


@pytest.mark.parametrize("host", list(PUBLIC_HOSTS))
def test_public_hosts(host: str) -> None:
    assert parse_registry(host) == PUBLIC_HOSTS[host]


@pytest.mark.parametrize(
    ("host", "public"),
    [("public.ecr.aws", True), ("PUBLIC.ECR.AWS", False), ("x.public.ecr.aws", False)],
)
def test_public_membership_is_exact(host: str, public: bool) -> None:
    assert parse_registry(host).public is public


# image → host, as Go's url.Parse("https://" + image).Hostname()
HOSTS = {
    f"{ID}.dkr.ecr.us-east-1.amazonaws.com/app": f"{ID}.dkr.ecr.us-east-1.amazonaws.com",
    f"{ID}.dkr.ecr.us-east-1.amazonaws.com:443/app": f"{ID}.dkr.ecr.us-east-1.amazonaws.com",
    "public.ecr.aws/nginx/nginx": "public.ecr.aws",
    # a private image whose path mentions public.ecr.aws stays private
    f"{ID}.dkr.ecr.us-east-1.amazonaws.com/public.ecr.aws/nginx": (
        f"{ID}.dkr.ecr.us-east-1.amazonaws.com"
    ),
    "registry.k8s.io/foo": "registry.k8s.io",
    "Registry.Example.COM:5000/x": "Registry.Example.COM",  # case kept, port stripped
    "[::1]:5000/x": "::1",
    "https://registry.example.com/x": "registry.example.com",  # a scheme is kept as given
    "registry.example.com:/x": "registry.example.com",  # empty port
}


@pytest.mark.parametrize("image", list(HOSTS))
def test_host_from_image_reference(image: str) -> None:
    assert parse_host_from_image_reference(image) == HOSTS[image]


@pytest.mark.parametrize(
    ("image", "error"),
    [
        (
            "public.ecr.aws  ",
            'error parsing image reference https://public.ecr.aws  : parse "https://public.ecr'
            '.aws  ": invalid character " " in host name',
        ),
        (
            "repo@sha256:abc",  # a digest without a "/": Go reads "repo@" as userinfo
            'error parsing image reference https://repo@sha256:abc: parse "https://repo@sha256'
            ':abc": invalid port ":abc" after host',
        ),
    ],
)
def test_host_parse_errors_use_upstream_text(image: str, error: str) -> None:
    with pytest.raises(ImageReferenceError) as info:
        parse_host_from_image_reference(image)
    assert str(info.value) == error
