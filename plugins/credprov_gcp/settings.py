"""The plugin's settings, validated: flags and environment as the handler sees them.

:mod:`credprov_gcp.flags` passes everything as SDK options (strings); this module checks the
values the warm path does not look at (the environment knobs and endpoints) and turns them
into typed settings. Errors quote upstream's text where upstream has one.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Mapping
from typing import Any

from credprov.sdk import DurationError, parse_duration
from credprov_gcp import flags
from credprov_gcp.errors import GCPError

DEFAULT_METADATA_HOST = "metadata.google.internal."  # upstream's (trailing-dot FQDN)
DEFAULT_STS_ENDPOINT = "https://sts.googleapis.com/v1/token"

_CACHE_TYPES = {"image": "Image", "registry": "Registry", "global": "Global"}


class Settings:
    """Typed settings of one run."""

    __slots__ = (
        "allow_non_google_registries",
        "auth_flow",
        "cache_key_type",
        "identity_provider",
        "metadata_host",
        "project_id",
        "sidecar_duration_ns",
        "sts_endpoint",
    )

    def __init__(
        self,
        auth_flow: str = "gcr",
        identity_provider: str = "",
        project_id: str = "",
        sts_endpoint: str = DEFAULT_STS_ENDPOINT,
        metadata_host: str = DEFAULT_METADATA_HOST,
        sidecar_duration_ns: int | None = None,
        cache_key_type: str = "Image",
        allow_non_google_registries: bool = False,
    ) -> None:
        self.auth_flow = auth_flow
        self.identity_provider = identity_provider
        self.project_id = project_id
        self.sts_endpoint = sts_endpoint
        self.metadata_host = metadata_host
        self.sidecar_duration_ns = sidecar_duration_ns
        self.cache_key_type = cache_key_type
        self.allow_non_google_registries = allow_non_google_registries

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Settings:
        """Settings from the SDK options built by :func:`credprov_gcp.flags.sdk_argv`.

        Raises:
            GCPError: an invalid environment value, endpoint or flag combination.
        """
        parsed = flags.Flags()
        parsed.auth_flow = str(options.get("authFlow") or "gcr")
        parsed.identity_provider = str(options.get("identity-provider") or "")
        parsed.project_id = str(options.get("project-id") or "")
        try:
            flags.validate(parsed)
        except flags.FlagError as exc:
            raise GCPError(str(exc)) from None
        return cls(
            auth_flow=parsed.auth_flow,
            identity_provider=parsed.identity_provider,
            project_id=parsed.project_id,
            sts_endpoint=sts_endpoint(str(options.get("sts-endpoint") or "")),
            metadata_host=metadata_host(str(options.get("metadata-host") or "")),
            sidecar_duration_ns=sidecar_duration(str(options.get("sidecar-cache-duration") or "")),
            cache_key_type=cache_key_type(str(options.get("sidecar-cache-type") or "")),
            allow_non_google_registries=bool(options.get("allow-non-google-registries")),
        )


def sidecar_duration(value: str) -> int | None:
    """``KUBE_SIDECAR_CACHE_DURATION`` in nanoseconds; None when unset.

    Raises:
        GCPError: not a Go duration (upstream fails too).
    """
    if not value:
        return None
    try:
        return parse_duration(value)
    except DurationError as exc:
        raise GCPError(f"{flags.ENV_CACHE_DURATION}: {exc}") from None


def cache_key_type(value: str) -> str:
    """``KUBE_SIDECAR_CACHE_TYPE`` (``image``, ``registry``, ``global``) as a cacheKeyType.

    Raises:
        GCPError: another value, upstream's ``Unknown cache key`` (lower case only, as there).
    """
    if not value:
        return "Image"
    try:
        return _CACHE_TYPES[value]
    except KeyError:
        raise GCPError(
            f"{flags.ENV_CACHE_TYPE}: Unknown cache key {flags.go_quote(value)}"
        ) from None


def metadata_host(value: str) -> str:
    """``GCE_METADATA_HOST`` (host or host:port), default upstream's host.

    Raises:
        GCPError: a URL or anything else that is not host[:port].
    """
    if not value:
        return DEFAULT_METADATA_HOST
    try:
        parts = urllib.parse.urlsplit(f"http://{value}")
        ok = parts.hostname is not None and parts.netloc == value and not parts.username
        _ = parts.port  # raises on a bad port
    except ValueError:
        ok = False
    if not ok or any(c.isspace() for c in value):
        raise GCPError(
            f"{flags.ENV_METADATA_HOST} must be host or host:port, not {flags.go_quote(value)}"
        )
    return value


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sts_endpoint(value: str) -> str:
    """The token exchange endpoint: https, or http on a loopback address (a local proxy
    or a test server), since the pod's service-account token is sent there.

    Raises:
        GCPError: not such a URL.
    """
    if not value:
        return DEFAULT_STS_ENDPOINT
    try:
        parts = urllib.parse.urlsplit(value)
        host = parts.hostname or ""
        _ = parts.port
    except ValueError:
        host = ""
        parts = urllib.parse.urlsplit("")
    if not host or parts.scheme not in ("https", "http") or parts.username is not None:
        raise GCPError(f"--sts-endpoint / {flags.ENV_STS_ENDPOINT}: not an http(s) URL")
    if parts.scheme == "http" and not _is_loopback(host):
        raise GCPError(
            f"--sts-endpoint / {flags.ENV_STS_ENDPOINT}: plain http is allowed only on a "
            "loopback address (the service-account token is sent there)"
        )
    return value
