"""Warnings about configs the kubelet accepts but that cannot do what their author meant.

The kubelet validates ``matchImages`` only by parsing each entry as a URL, so several
mistakes pass validation and then silently never match. credprov reports them (``config
validate`` prints them as warnings, exit status unchanged), one line each, naming the
provider and the entry. Pure: no I/O.
"""

from __future__ import annotations

from credprov._go.url import GoURLError, parse
from credprov.api import internal
from credprov.credentialprovider.matching import parse_schemeless_url


def _match_image_warnings(provider: str, pattern: str) -> list[str]:
    where = f"provider {provider!r} matchImages entry {pattern!r}"
    try:
        url = parse_schemeless_url(pattern)
    except GoURLError:
        return []  # an error, reported by validation
    warnings = []
    if pattern == "":
        warnings.append(f"{where}: empty, it never matches an image")
    if "://" in pattern:
        warnings.append(
            f"{where}: has a scheme; matchImages take none, so this never matches an image"
        )
    if url.raw_query or url.force_query:
        before = pattern.split("?", 1)[0]
        warnings.append(
            f"{where}: '?' starts a URL query, so this matches as {before!r}; use '[...]' or "
            "'*' for a single character"
        )
    if "#" in pattern:
        before = pattern.split("#", 1)[0]
        warnings.append(f"{where}: '#' starts a URL fragment, so this matches as {before!r}")
    if url.has_user:
        warnings.append(f"{where}: the 'user@' part is ignored when matching")
    if "[" in url.host:
        try:
            parse("https://" + pattern, strict_ip_literals=True)
        except GoURLError as exc:
            warnings.append(
                f"{where}: kubelets built with Go 1.24.8, 1.25.2 or later reject this "
                f"host ({exc.reason}); avoid '[...]' in the host"
            )
    if any(ch in url.path for ch in "*?["):
        warnings.append(
            f"{where}: the path part is matched as a literal prefix, not a glob, so "
            f"{url.path!r} matches no image; drop it (e.g. {url.host!r}) to match every "
            "repository of the registry"
        )
    if url.host != url.host.lower():
        warnings.append(
            f"{where}: upper-case letters in the host never match a normalised image name"
        )
    return warnings


def lint_config(config: internal.CredentialProviderConfig) -> list[str]:
    """Warnings for a config that validation accepts, in config order."""
    warnings: list[str] = []
    for number, provider in enumerate(config.providers, 1):
        if not provider.name:
            warnings.append(
                f"provider #{number} has no name: the kubelet accepts the config but fails "
                "at start-up, because the plugin path is the bin dir itself"
            )
        for pattern in provider.match_images:
            warnings.extend(_match_image_warnings(provider.name, pattern))
        if provider.default_cache_duration == 0:
            warnings.append(
                f"provider {provider.name!r}: defaultCacheDuration is 0, so responses without "
                "cacheDuration are never cached and the plugin runs on every image pull"
            )
    return warnings
