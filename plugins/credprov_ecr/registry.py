"""Image → ECR registry: host, account, region, partition and endpoint variant.

Mirrors ``ecr-credential-provider`` (kubernetes/cloud-provider-aws): the host is Go's
``url.Parse("https://" + image).Hostname()`` (port and IPv6 brackets stripped, case kept);
``public.ecr.aws`` and its dual-stack name ``ecr-public.aws.com`` are ECR Public; every other
host is matched against upstream's private-registry pattern, whose third group is the region.
A host that matches nothing is *not* refused: upstream asks ECR in the SDK's default region
and returns the token for that host (containerd mirrors and CNAMEs in front of ECR).

What upstream parses but ignores, and this plugin uses: the ``-fips`` marker and the
dual-stack domains (``dkr-ecr.<region>.on.aws``, ``.on.amazonwebservices.com.cn``), which select
the FIPS and dual-stack API endpoints, and the partition, which only makes messages clearer.

Standard library only: no AWS SDK here, so the parsing is testable and cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from credprov.sdk import CredprovError

__all__ = [
    "ECR_PRIVATE_HOST_PATTERN",
    "ECR_PUBLIC_DUALSTACK_HOST",
    "ECR_PUBLIC_HOST",
    "ECR_PUBLIC_HOSTS",
    "ECR_PUBLIC_REGION",
    "ImageReferenceError",
    "Registry",
    "parse_host_from_image_reference",
    "parse_region_from_private_host",
    "parse_registry",
]

#: ECR Public lives in one region of the ``aws`` partition.
ECR_PUBLIC_REGION = "us-east-1"
ECR_PUBLIC_HOST = "public.ecr.aws"
ECR_PUBLIC_DUALSTACK_HOST = "ecr-public.aws.com"
ECR_PUBLIC_HOSTS = frozenset((ECR_PUBLIC_HOST, ECR_PUBLIC_DUALSTACK_HOST))

#: Upstream's ``ecrPrivateHostPattern``, group for group: 1 account, 2 ``-fips``, 3 region,
#: 4 DNS suffix. ``re.ASCII`` because Go's ``\d`` is ASCII-only; ``\Z`` because Go's ``$``
#: does not match before a trailing newline, Python's does.
ECR_PRIVATE_HOST_PATTERN = re.compile(
    r"^(\d{12})\.dkr[.\-]ecr(-fips)?\.([a-zA-Z0-9][a-zA-Z0-9_-]*)\."
    r"(amazonaws\.(?:com(?:\.cn)?|eu)|on\.(?:aws|amazonwebservices\.com\.cn)"
    r"|sc2s\.sgov\.gov|c2s\.ic\.gov|cloud\.adc-e\.uk|csp\.hci\.ic\.gov)\Z",
    re.ASCII,
)

# DNS suffix → partition; ``None`` means "aws, or aws-us-gov for a us-gov-* region".
_PARTITIONS: dict[str, str | None] = {
    "amazonaws.com": None,
    "on.aws": None,
    "amazonaws.com.cn": "aws-cn",
    "on.amazonwebservices.com.cn": "aws-cn",
    "amazonaws.eu": "aws-eusc",
    "c2s.ic.gov": "aws-iso",
    "sc2s.sgov.gov": "aws-iso-b",
    "cloud.adc-e.uk": "aws-iso-e",
    "csp.hci.ic.gov": "aws-iso-f",
}
_DUALSTACK_SUFFIXES = frozenset(("on.aws", "on.amazonwebservices.com.cn"))


class ImageReferenceError(CredprovError, ValueError):
    """The image does not parse as a URL; ``str()`` is upstream's text."""


@dataclass(frozen=True, slots=True)
class Registry:
    """What the plugin needs to know about an image's registry.

    Attributes:
        host: the auth key of the answer (the image's host, port stripped, case kept).
        public: ECR Public (``ecr-public`` API in :data:`ECR_PUBLIC_REGION`).
        registry_id: the 12-digit account of a private registry, else ``""``.
        region: from a private host, :data:`ECR_PUBLIC_REGION` for ECR Public, else ``""``
            (unknown: the SDK's default region applies).
        fips: the host names the FIPS registry endpoint (``dkr.ecr-fips``).
        dualstack: the host is a dual-stack (IPv4 + IPv6) name.
        partition: ``aws``, ``aws-cn``, ``aws-us-gov``, ``aws-eusc``, ``aws-iso``,
            ``aws-iso-b``, ``aws-iso-e``, ``aws-iso-f``; ``""`` when not an ECR host.
    """

    host: str
    public: bool = False
    registry_id: str = ""
    region: str = ""
    fips: bool = False
    dualstack: bool = False
    partition: str = ""

    @property
    def is_ecr(self) -> bool:
        """Whether the host is an ECR registry name (private or public)."""
        return bool(self.partition)


def _valid_optional_port(port: str) -> bool:
    # Go's validOptionalPort: "" or ":" followed by ASCII digits only.
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


def _hostname(host: str) -> str:
    """Go's ``url.URL.Hostname()``: drop a numeric ``:port``, then IPv6 brackets."""
    colon = host.rfind(":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host = host[:colon]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def parse_host_from_image_reference(image: str) -> str:
    """The image's host as upstream's ``parseHostFromImageReference`` computes it.

    Raises:
        ImageReferenceError: ``error parsing image reference https://<image>: <Go error>``.
    """
    from credprov.sdk import GoURLError, parse_url

    if "://" not in image:
        image = "https://" + image
    try:
        url = parse_url(image)
    except GoURLError as exc:
        raise ImageReferenceError(f"error parsing image reference {image}: {exc}") from None
    return _hostname(url.host)


def parse_region_from_private_host(host: str) -> str:
    """The region of a private ECR host, or ``""`` when the host is not one."""
    match = ECR_PRIVATE_HOST_PATTERN.match(host)
    return match.group(3) if match else ""


def parse_registry(host: str) -> Registry:
    """Classify ``host`` (from :func:`parse_host_from_image_reference`)."""
    if host in ECR_PUBLIC_HOSTS:
        return Registry(
            host=host,
            public=True,
            region=ECR_PUBLIC_REGION,
            dualstack=host == ECR_PUBLIC_DUALSTACK_HOST,
            partition="aws",
        )
    match = ECR_PRIVATE_HOST_PATTERN.match(host)
    if match is None:
        return Registry(host=host)
    registry_id, fips, region, suffix = match.groups()
    partition = _PARTITIONS[suffix]
    if partition is None:
        partition = "aws-us-gov" if region.startswith("us-gov-") else "aws"
    return Registry(
        host=host,
        registry_id=registry_id,
        region=region,
        fips=bool(fips),
        dualstack=suffix in _DUALSTACK_SUFFIXES,
        partition=partition,
    )
