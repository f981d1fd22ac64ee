"""Warnings about configs the kubelet accepts but that cannot do what their author meant.

The kubelet validates ``matchImages`` only by parsing each entry as a URL, so several
mistakes pass validation and then silently never match. credprov reports them (``config
validate`` prints them as warnings, exit status unchanged), one line each, naming the
provider and the entry. An entry that the kubelet's Go release (the one credprov follows,
:mod:`credprov._go.version`) accepts but that kubelets built with other Go releases refuse,
or read as another host, is reported too, naming those releases. Pure: no I/O.
"""

from __future__ import annotations

from credprov._go.url import GoURL, GoURLError, parse
from credprov._go.version import FAMILIES, GoURLFamily, current_go, describe, go_release
from credprov.api import internal
from credprov.imageauth.matching import parse_schemeless_url


def _other_go_warnings(where: str, pattern: str, url: GoURL) -> list[str]:
    """What kubelets built with other Go releases make of a pattern this one accepts: one
    warning per different outcome, naming the Go releases (families) it comes from."""
    release = current_go()
    current = release.family
    outcomes: dict[str, list[GoURLFamily]] = {}
    for family in FAMILIES:
        # A release with GODEBUG settings of its own (urlstrictcolons=0) is not its
        # family: the family's releases with their own defaults are another kubelet.
        if family == current and not release.godebug:
            continue
        try:
            host = parse("https://" + pattern, go_version=go_release(family.name)).host
        except GoURLError as exc:
            outcome = f"refuse it ({exc.reason})"
        else:
            if host == url.host:
                continue
            outcome = f"read its host as {host!r}, not {url.host!r}"
        outcomes.setdefault(outcome, []).append(family)
    fix = "avoid '[...]' in the host" if "[" in url.host else "keep one ':', before the port"
    defaults = " (with their own GODEBUG defaults)" if release.godebug else ""
    return [
        f"{where}: kubelets built with {describe(families)}{defaults} {outcome}; {fix}"
        for outcome, families in outcomes.items()
    ]


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
    warnings.extend(_other_go_warnings(where, pattern, url))
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


def go_version_hint(config: internal.CredentialProviderConfig) -> str:
    """For a config that fails validation: the first ``matchImages`` entry that the Go
    release credprov follows refuses but kubelets built with other Go releases accept, and
    which releases those are; ``""`` when there is none."""
    current = current_go()
    for provider in config.providers:
        for pattern in provider.match_images:
            try:
                parse("https://" + pattern, go_version=current)
                continue
            except GoURLError:
                pass
            accepting = []
            for family in FAMILIES:
                if family == current.family and not current.godebug:
                    continue
                try:
                    parse("https://" + pattern, go_version=go_release(family.name))
                except GoURLError:
                    continue
                accepting.append(family)
            if accepting:
                return (
                    f"matchImages entry {pattern!r} is valid for kubelets built with "
                    f"{describe(accepting)}; credprov follows Go {current}, give the "
                    "kubelet's with --go-version"
                )
    return ""


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
