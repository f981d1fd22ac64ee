"""Getting the credentials for an image the way the kubelet does: the library entry point.

Mirrors the kubelet's image path up to the pull: the image is normalised
(``parsers.ParseImageName``), then the keyring ``MakeDockerKeyring(podPullSecrets,
Union{nodeKeyring, pluginKeyring})`` is asked for it, so pod pull-secret credentials come
first, then the node's docker config, then the plugins, in the order the puller tries them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from credprov._gofmt import go_quote
from credprov.images import InvalidImageError, parse_image_name
from credprov.keyring import DockerKeyring, TrackedAuthConfig, make_pull_secret_keyring
from credprov.plugin.provider import PodInfo, ProvideResult
from credprov.plugin.registry import CredentialProviders


@dataclass
class ImageResolution:
    """The credentials for one image, in the order the kubelet would try them."""

    image: str
    repo: str | None = None
    credentials: list[TrackedAuthConfig] = field(default_factory=list)
    providers: list[ProvideResult] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> bool:
        """True when the image is invalid or a matching provider failed."""
        return self.error is not None or any(p.error for p in self.providers)


class Engine:
    """One node's credential sources: its docker config and its plugin providers.

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

    def resolve(
        self,
        image: str,
        pull_secrets: Iterable[Mapping[str, Any]] = (),
        pod: PodInfo | None = None,
    ) -> ImageResolution:
        """Resolve ``image`` for a pod with ``pull_secrets`` (Secret objects as dicts).

        Raises:
            credprov.keyring.KeyringError: a pull secret whose payload does not parse.
        """
        resolution = ImageResolution(image=image)
        try:
            repo = parse_image_name(image)
        except InvalidImageError as exc:
            # pkg/util/parsers.ParseImageName's wrapping.
            resolution.error = f"couldn't parse image name {go_quote(image)}: {exc}"
            return resolution
        resolution.repo = repo
        if isinstance(pull_secrets, (tuple, list)) and not pull_secrets:
            creds = self.node_keyring.lookup(repo)  # no pull secrets: an empty keyring
        else:
            creds = make_pull_secret_keyring(pull_secrets).lookup(repo)
            creds += self.node_keyring.lookup(repo)
        if self.providers is not None:
            plugin_creds, results = self.providers.lookup(repo, pod)
            creds += plugin_creds
            resolution.providers = results
        resolution.credentials = creds
        return resolution


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
    from credprov.objects import load_docker_config_keyring
    from credprov.plugin.registry import register_credential_provider_plugins

    if (config is None) != (bin_dir is None):
        from credprov.config import ConfigError

        raise ConfigError("give both config and bin_dir, or neither")
    providers = (
        register_credential_provider_plugins(config, bin_dir, feature_gates)
        if config is not None and bin_dir is not None
        else None
    )
    engine = Engine(providers, load_docker_config_keyring(node_docker_config))
    return engine.resolve(image, list(pull_secrets), pod)
