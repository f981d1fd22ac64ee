"""The image ``plugin.responds`` asks a plugin about when the operator named none.

A sample must be one a real pull could ask *and* the provider's own plugin accepts:
credprov's ECR plugin (like upstream's) refuses ``sample.dkr.ecr.sample.amazonaws.com``
before any network call (no account, no region), so a sample made by filling ``*`` with a
word would FAIL every healthy ECR node. So each ``*`` of a ``matchImages`` host is filled
from the plugin's own words (an account and a region for ECR, a location for Google, a
name for ACR), trying combinations in order, and the first host its rule accepts wins:

* :data:`HOST_RULES` holds the rules of the plugins the doctor knows by name (credprov's,
  which carry upstream's names, also under the ``credprov-`` prefix): the ECR private
  host pattern with a region that looks like one, or ECR Public; Google's registry keys;
  ACR's login server pattern (``tests/unit/doctor/test_samples.py`` compares each with the
  plugin's own table). No acceptable host: no sample (``plugin.responds`` skips, "pass
  --image").
* Another plugin: the first host any known rule accepts (an ECR-shaped pattern gets an ECR
  host), else the plain fill. When that host was made up (a wildcard filled), the plugin's
  refusal of it is no verdict on the node: ``plugin.responds`` says WARN, not FAIL.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from credprov.api import internal
from credprov.imageauth.images import InvalidImageError, parse_image_name
from credprov.imageauth.matching import urls_match_str

__all__ = ["HOST_RULES", "Sample", "derive_sample", "plugin_kind"]

#: Wildcards filled by combination (more are filled with the first word).
_MAX_COMBINED = 4
#: The prefix credprov's installer gives its plugins on nodes with their own (EKS).
_PREFIX = "credprov-"

#: Upstream's ECR private host pattern (``credprov_ecr.registry.ECR_PRIVATE_HOST_PATTERN``).
ECR_PRIVATE_HOST = re.compile(
    r"^(\d{12})\.dkr[.\-]ecr(-fips)?\.([a-zA-Z0-9][a-zA-Z0-9_-]*)\."
    r"(amazonaws\.(?:com(?:\.cn)?|eu)|on\.(?:aws|amazonwebservices\.com\.cn)"
    r"|sc2s\.sgov\.gov|c2s\.ic\.gov|cloud\.adc-e\.uk|csp\.hci\.ic\.gov)\Z",
    re.ASCII,
)
ECR_PUBLIC_HOSTS = ("public.ecr.aws", "ecr-public.aws.com")
_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+\Z")
#: ``credprov_gcp.registries.GOOGLE_REGISTRY_KEYS``.
GOOGLE_REGISTRY_KEYS = ("container.cloud.google.com", "gcr.io", "*.gcr.io", "*.pkg.dev")
#: ``credprov_acr.registry.ACR_RE``, which must end the host.
ACR_LOGIN_SERVER = re.compile(r"^[a-zA-Z0-9]+\.(azurecr\.io|azurecr\.cn|azurecr\.de|azurecr\.us)")


def _ecr(host: str) -> bool:
    if host in ECR_PUBLIC_HOSTS:
        return True
    match = ECR_PRIVATE_HOST.match(host)
    return match is not None and _AWS_REGION.match(match.group(3)) is not None


def _gcp(host: str) -> bool:
    return any(urls_match_str(key, host) for key in GOOGLE_REGISTRY_KEYS)


def _acr(host: str) -> bool:
    match = ACR_LOGIN_SERVER.match(host)
    return match is not None and match.end() == len(host)


#: Plugin name -> (whether it serves an image of this host, port stripped; what a ``*``
#: label may become, in the order tried).
HOST_RULES: dict[str, tuple[Callable[[str], bool], tuple[str, ...]]] = {
    "ecr-credential-provider": (_ecr, ("123456789012", "us-east-1")),
    "auth-provider-gcp": (_gcp, ("us", "sample")),
    "acr-credential-provider": (_acr, ("sample", "io")),
}


def plugin_kind(provider_name: str) -> str | None:
    """The known plugin a provider runs (:data:`HOST_RULES`' key), or None."""
    name = provider_name.removeprefix(_PREFIX)
    return name if name in HOST_RULES else None


@dataclass(frozen=True)
class Sample:
    """An image to ask about; ``made_up`` when a wildcard was filled for a plugin whose
    rules the doctor does not know (its refusal is then no verdict)."""

    image: str
    made_up: bool = False


def derive_sample(provider: internal.CredentialProvider, images: list[str]) -> Sample | None:
    """One of ``images`` the provider matches, else one derived from its ``matchImages``
    (see the module docstring), else None."""
    for image in images:
        try:
            repo = parse_image_name(image)
        except InvalidImageError:
            continue
        if any(urls_match_str(p, repo) for p in provider.match_images):
            return Sample(image)
    kind = plugin_kind(provider.name)
    # A known plugin: its own rule. Another: any known rule (an ECR-shaped pattern gets an
    # ECR host), else the plain fill, made up.
    rules = [HOST_RULES[kind]] if kind is not None else list(HOST_RULES.values())
    for pattern in provider.match_images:
        for accepts, fillers in rules:
            for candidate in _candidates(pattern, fillers):
                derived = _image(pattern, candidate)
                if derived is not None and accepts(_host(derived)):
                    return Sample(derived)
    if kind is not None:
        return None
    for pattern in provider.match_images:
        derived = _image(pattern, _fill(pattern, []))
        if derived is not None:
            wild = any(ch in pattern.partition("/")[0] for ch in "*?[")
            return Sample(derived, made_up=wild)
    return None


def _host(image: str) -> str:
    host = image.partition("/")[0]
    head, colon, port = host.rpartition(":")
    return head if colon and port.isdigit() else host


def _image(pattern: str, candidate: str) -> str | None:
    host, _, path = candidate.partition("/")
    image = f"{host}/{path.rstrip('/') or 'credprov-doctor/sample'}"
    try:
        repo = parse_image_name(image)
    except InvalidImageError:
        return None
    return image if urls_match_str(pattern, repo) else None


def _candidates(pattern: str, fillers: tuple[str, ...]) -> list[str]:
    """``pattern`` with its ``*`` filled by every combination of ``fillers``, ``?`` by
    ``x`` and ``[...]`` by its first letter."""
    stars = pattern.count("*")
    combined = min(stars, _MAX_COMBINED)
    out = []
    for combo in itertools.product(fillers, repeat=combined):
        out.append(_fill(pattern, list(combo) + [fillers[0]] * (stars - combined)))
    return out


def _fill(pattern: str, words: list[str]) -> str:
    out = []
    i = 0
    stars = iter(words)
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(next(stars, "sample"))
        elif ch == "?":
            out.append("x")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            body = pattern[i + 1 : end] if end > 0 else ""
            first = body.lstrip("^!")[:1]
            out.append(first if first.isalnum() else "x")
            i = end if end > 0 else i
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(pattern[i])
        else:
            out.append(ch)
        i += 1
    return "".join(out)
