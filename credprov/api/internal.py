"""The internal (unversioned) form of every credprov wire type.

Each versioned API module converts to and from these. They mirror the kubelet's
internal types (``pkg/kubelet/apis/config`` and ``pkg/credentialprovider/apis``):
plain data, no I/O, durations as ``int`` nanoseconds, absent optional values as ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CONFIG_GROUP = "kubelet.config.k8s.io"
CONFIG_KIND = "CredentialProviderConfig"
CONFIG_VERSIONS = ("v1alpha1", "v1beta1", "v1")

EXEC_GROUP = "credentialprovider.kubelet.k8s.io"
EXEC_VERSIONS = ("v1alpha1", "v1beta1", "v1")
EXEC_API_VERSIONS = tuple(f"{EXEC_GROUP}/{v}" for v in EXEC_VERSIONS)
REQUEST_KIND = "CredentialProviderRequest"
RESPONSE_KIND = "CredentialProviderResponse"

CACHE_KEY_IMAGE = "Image"
CACHE_KEY_REGISTRY = "Registry"
CACHE_KEY_GLOBAL = "Global"
CACHE_KEY_TYPES = (CACHE_KEY_IMAGE, CACHE_KEY_REGISTRY, CACHE_KEY_GLOBAL)

TOKEN_CACHE_TYPE_TOKEN = "Token"
TOKEN_CACHE_TYPE_SERVICE_ACCOUNT = "ServiceAccount"


@dataclass(frozen=True)
class ExecEnvVar:
    """One ``env`` entry of a provider: ``NAME=VALUE`` appended to the plugin's environment."""

    name: str
    value: str


@dataclass(frozen=True)
class ServiceAccountTokenAttributes:
    """A provider's ``tokenAttributes`` (KEP-4412, v1 only)."""

    service_account_token_audience: str = ""
    cache_type: str = ""
    require_service_account: bool | None = None
    required_service_account_annotation_keys: tuple[str, ...] = ()
    optional_service_account_annotation_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class CredentialProvider:
    """One provider of a ``CredentialProviderConfig``, version-independent."""

    name: str
    match_images: tuple[str, ...] = ()
    default_cache_duration: int | None = None  # nanoseconds; None when absent
    api_version: str = ""
    args: tuple[str, ...] = ()
    env: tuple[ExecEnvVar, ...] = ()
    token_attributes: ServiceAccountTokenAttributes | None = None


@dataclass(frozen=True)
class CredentialProviderConfig:
    """The providers of one or more config files, in file order."""

    providers: tuple[CredentialProvider, ...] = ()


@dataclass(frozen=True)
class CredentialProviderRequest:
    """What the kubelet sends a plugin (internal form of every version)."""

    image: str
    service_account_token: str = ""
    service_account_annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AuthConfig:
    """One username/password pair of a plugin response."""

    username: str = ""
    password: str = ""

    def __repr__(self) -> str:  # never let a password reach a log through repr()
        return f"AuthConfig(username={self.username!r}, password=<redacted>)"


@dataclass(frozen=True)
class CredentialProviderResponse:
    """A plugin's answer (the same in every version)."""

    cache_key_type: str
    cache_duration: int | None = None  # nanoseconds; None when absent
    auth: dict[str, AuthConfig] = field(default_factory=dict)
