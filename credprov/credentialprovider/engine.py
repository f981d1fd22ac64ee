"""Getting the credentials for an image the way the kubelet does: the library entry point.

:class:`Engine` is the kubelet's credential chain (:mod:`credprov.credentialprovider.chain`) for one node: the
image is normalised (``parsers.ParseImageName``), then ``MakeDockerKeyring(podPullSecrets,
Union{nodeKeyring, pluginKeyring})`` is asked for it, so pod pull-secret credentials come
first, then the node's docker config, then the plugins, in the order the puller tries them.
:func:`resolve_credentials` does it in one call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from credprov.credentialprovider.chain import (
    CredentialChain,
    ImageResolution,
    PodInfo,
    default_chain,
)
from credprov.credentialprovider.plugin.registry import CredentialProviders
from credprov.imageauth.keyring import DockerKeyring

__all__ = ["Engine", "ImageResolution", "resolve_credentials"]


class Engine(CredentialChain):
    """One node's credential chain: the pod's pull secrets, the node's docker config, then
    the credential provider plugins (:func:`credprov.credentialprovider.chain.default_chain`).

    Thread-safe: concurrent ``resolve`` calls share the providers' caches and
    singleflight groups, as parallel image pulls do in the kubelet.
    """

    def __init__(
        self,
        providers: CredentialProviders | None = None,
        node_keyring: DockerKeyring | None = None,
    ) -> None:
        self.providers = providers
        self.node_keyring = node_keyring or DockerKeyring()
        super().__init__(default_chain(providers, self.node_keyring).sources)


def resolve_credentials(
    image: str,
    config: str | None = None,
    bin_dir: str | None = None,
    *,
    pull_secrets: Iterable[Mapping[str, Any]] = (),
    node_docker_config: str | None = None,
    pod: PodInfo | None = None,
    feature_gates: Mapping[str, bool] | None = None,
) -> ImageResolution:
    """The credentials the kubelet would try for ``image``, in order, in one call.

    Args:
        image: as in a pod spec (``nginx:1``, ``registry.io/team/app@sha256:...``).
        config: a provider config file or directory (plugins are run when given).
        bin_dir: the plugins' directory (``--image-credential-provider-bin-dir``).
        pull_secrets: the pod's pull Secrets, as dicts.
        node_docker_config: the node's docker ``config.json``.
        pod: the pod, for KEP-4412 providers.
        feature_gates: kubelet feature gate overrides.

    Raises:
        credprov.errors.CredprovError: a bad config or bin dir (the kubelet's text), an
            unreadable docker config, or a pull secret whose payload does not parse.
    """
    from credprov.credentialprovider.objects import load_docker_config_keyring
    from credprov.credentialprovider.plugin.registry import register_credential_provider_plugins

    if (config is None) != (bin_dir is None):
        from credprov.credentialprovider.plugin.config import ConfigError

        raise ConfigError("give both config and bin_dir, or neither")
    providers = (
        register_credential_provider_plugins(config, bin_dir, feature_gates)
        if config is not None and bin_dir is not None
        else None
    )
    engine = Engine(providers, load_docker_config_keyring(node_docker_config))
    return engine.resolve(image, list(pull_secrets), pod)
