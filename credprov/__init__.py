"""credprov: the kubelet's image credential providers, in Python.

The curated public API; every name here is stable. Resolving the credentials the kubelet
would try for an image is one call::

    import credprov

    res = credprov.resolve_credentials(
        "registry.example.com/team/app:v1",
        config="credential-provider-config.yaml",
        bin_dir="/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
        pull_secrets=[secret_dict],              # optional: the pod's Secrets
    )
    for cred in res.credentials:                 # in the order the kubelet tries them
        cred.username, cred.password, cred.source_label

For many lookups, build the chain once (:func:`default_chain` or :class:`Engine`) and call
its ``resolve``: it keeps the providers' caches as one kubelet does.

Names are imported lazily (PEP 562): ``import credprov`` costs nothing, so plugins built
on :mod:`credprov.sdk` keep their start-up lean.
"""

from __future__ import annotations

from credprov.base import lazy_names

# Nothing heavy at import: plugins import this package on their warm path (mypy reads
# this name as typing's TYPE_CHECKING).
TYPE_CHECKING = False

#: public name -> module that defines it
_EXPORTS = {
    # the release
    "__version__": "credprov.version",
    # one call, and the chain behind it
    "resolve_credentials": "credprov.credentialprovider.engine",
    "Engine": "credprov.credentialprovider.engine",
    "CredentialChain": "credprov.credentialprovider.chain",
    "CredentialSource": "credprov.credentialprovider.chain",
    "ImageResolution": "credprov.credentialprovider.chain",
    "PodInfo": "credprov.credentialprovider.chain",
    "PullSecrets": "credprov.credentialprovider.chain",
    "KeyringSource": "credprov.credentialprovider.chain",
    "PluginProviders": "credprov.credentialprovider.chain",
    "default_chain": "credprov.credentialprovider.chain",
    # images and matchImages
    "parse_image_name": "credprov.imageauth.images",
    "urls_match_str": "credprov.imageauth.matching",
    # the Go release the kubelet was built with (url.Parse, %q)
    "use_go": "credprov._go.version",
    # provider config and plugins
    "load_config": "credprov.credentialprovider.plugin.config",
    "register_credential_provider_plugins": "credprov.credentialprovider.plugin.registry",
    # keyring
    "DockerKeyring": "credprov.imageauth.keyring",
    "TrackedAuthConfig": "credprov.imageauth.keyring",
    # errors
    "CredprovError": "credprov.errors",
    "ConfigError": "credprov.credentialprovider.plugin.config",
}

__all__ = [
    "ConfigError",
    "CredentialChain",
    "CredentialSource",
    "CredprovError",
    "DockerKeyring",
    "Engine",
    "ImageResolution",
    "KeyringSource",
    "PluginProviders",
    "PodInfo",
    "PullSecrets",
    "TrackedAuthConfig",
    "__version__",
    "default_chain",
    "load_config",
    "parse_image_name",
    "register_credential_provider_plugins",
    "resolve_credentials",
    "urls_match_str",
    "use_go",
]


__getattr__, __dir__ = lazy_names(__name__, {n: (m, n) for n, m in _EXPORTS.items()}, __all__)


if TYPE_CHECKING:
    from credprov._go.version import use_go
    from credprov.credentialprovider.chain import (
        CredentialChain,
        CredentialSource,
        ImageResolution,
        KeyringSource,
        PluginProviders,
        PodInfo,
        PullSecrets,
        default_chain,
    )
    from credprov.credentialprovider.engine import Engine, resolve_credentials
    from credprov.credentialprovider.plugin.config import ConfigError, load_config
    from credprov.credentialprovider.plugin.registry import register_credential_provider_plugins
    from credprov.errors import CredprovError
    from credprov.imageauth.images import parse_image_name
    from credprov.imageauth.keyring import DockerKeyring, TrackedAuthConfig
    from credprov.imageauth.matching import urls_match_str
    from credprov.version import __version__
