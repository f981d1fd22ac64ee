"""Getting the credentials for an image the way the kubelet does: the library entry point,
and the one place a node's credential chain is assembled from its settings.

:class:`Engine` is the kubelet's credential chain (:mod:`credprov.credentialprovider.chain`)
for one node: the image is normalised (``parsers.ParseImageName``), then
``MakeDockerKeyring(podPullSecrets, Union{nodeKeyring, pluginKeyring})`` is asked for it, so
pod pull-secret credentials come first, then the node's docker config, then the plugins, in
the order the puller tries them.

:class:`NodeSettings` is what a node says about its credentials (the kubelet's
``--image-credential-provider-config`` and ``--image-credential-provider-bin-dir``, its
docker ``config.json``, pull secrets) and :func:`node_engine` builds the engine from them:
``get-credentials``, ``ensure-image``, :func:`resolve_credentials` and the Docker credential
helper all call it, so a new credential source is added in one place and reaches all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from credprov.credentialprovider.chain import (
    CredentialChain,
    ImageResolution,
    PodInfo,
    ServiceAccountAPI,
    default_chain,
)
from credprov.credentialprovider.plugin.registry import CredentialProviders
from credprov.imageauth.keyring import DockerKeyring

__all__ = ["Engine", "ImageResolution", "NodeSettings", "node_engine", "resolve_credentials"]


class Engine(CredentialChain):
    """One node's credential chain: the pod's pull secrets, the node's docker config, then
    the credential provider plugins (:func:`credprov.credentialprovider.chain.default_chain`).

    ``pull_secrets`` are the Secrets a lookup uses when it is given none of its own (the
    node's settings; a pod's own are passed to :meth:`resolve`).

    Thread-safe: concurrent ``resolve`` calls share the providers' caches and
    singleflight groups, as parallel image pulls do in the kubelet.
    """

    def __init__(
        self,
        providers: CredentialProviders | None = None,
        node_keyring: DockerKeyring | None = None,
        pull_secrets: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.providers = providers
        self.node_keyring = node_keyring if node_keyring is not None else DockerKeyring()
        self.pull_secrets = pull_secrets
        super().__init__(default_chain(providers, self.node_keyring).sources)

    def resolve(
        self,
        image: str,
        pull_secrets: Sequence[Mapping[str, Any]] | None = None,
        pod: PodInfo | None = None,
    ) -> ImageResolution:
        """:meth:`CredentialChain.resolve`, with the engine's pull secrets when none are given."""
        secrets = self.pull_secrets if pull_secrets is None else pull_secrets
        return super().resolve(image, secrets, pod)

    def resolve_registry(
        self,
        registry: str,
        pull_secrets: Sequence[Mapping[str, Any]] | None = None,
        pod: PodInfo | None = None,
    ) -> ImageResolution:
        """:meth:`CredentialChain.resolve_registry`, with the engine's pull secrets when none
        are given."""
        secrets = self.pull_secrets if pull_secrets is None else pull_secrets
        return super().resolve_registry(registry, secrets, pod)


@dataclass(frozen=True)
class NodeSettings:
    """What a node says about its image credentials.

    Attributes:
        config: the provider config file or directory
            (``--image-credential-provider-config``); plugins are run when it is given.
        bin_dir: the plugins' directory (``--image-credential-provider-bin-dir``).
        node_docker_config: the node's docker ``config.json`` (or ``.dockercfg``).
        pull_secrets: pull Secrets (dicts) every lookup uses unless it brings its own.
        feature_gates: kubelet feature gate overrides.
        plugin_timeout: a plugin run's deadline in nanoseconds (None: the kubelet's 1m).
        service_accounts: where KEP-4412 providers get a pod's service account and token.
        environ: the plugins' environment (None: this process's).
    """

    config: str | None = None
    bin_dir: str | None = None
    node_docker_config: str | None = None
    pull_secrets: Sequence[Mapping[str, Any]] = ()
    feature_gates: Mapping[str, bool] | None = None
    plugin_timeout: int | None = None
    service_accounts: ServiceAccountAPI | None = None
    environ: Mapping[str, str] | None = None


def node_engine(settings: NodeSettings) -> Engine:
    """The node's credential chain, assembled from ``settings``: the one assembly.

    Raises:
        credprov.credentialprovider.objects.ObjectsError: an unreadable or invalid docker
            config.
        credprov.credentialprovider.plugin.config.ConfigError: ``config`` without
            ``bin_dir`` (or the reverse), or the kubelet's plugin registration errors.
    """
    from credprov.credentialprovider.objects import load_docker_config_keyring

    if (settings.config is None) != (settings.bin_dir is None):
        from credprov.credentialprovider.plugin.config import ConfigError

        raise ConfigError("give both config and bin_dir, or neither")
    node_keyring = load_docker_config_keyring(settings.node_docker_config)
    providers = None
    if settings.config is not None and settings.bin_dir is not None:
        from credprov.credentialprovider.plugin.exec import DEFAULT_PLUGIN_TIMEOUT
        from credprov.credentialprovider.plugin.registry import (
            register_credential_provider_plugins,
        )

        providers = register_credential_provider_plugins(
            settings.config,
            settings.bin_dir,
            settings.feature_gates,
            plugin_timeout=(
                DEFAULT_PLUGIN_TIMEOUT
                if settings.plugin_timeout is None
                else settings.plugin_timeout
            ),
            service_accounts=settings.service_accounts,
            environ=settings.environ,
        )
    return Engine(providers, node_keyring, list(settings.pull_secrets))


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
    settings = NodeSettings(
        config=config,
        bin_dir=bin_dir,
        node_docker_config=node_docker_config,
        pull_secrets=list(pull_secrets),
        feature_gates=feature_gates,
    )
    return node_engine(settings).resolve(image, pod=pod)
