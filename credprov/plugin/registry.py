"""Registering the configured plugins, and the keyring that asks all of them.

Mirrors ``RegisterCredentialProviderPlugins`` (the bin dir must exist, the config is read,
validated and its hash recorded, then every provider's executable is looked up in config
order) and the external credential provider keyring of ``plugins.go`` (every matching
provider is asked, in config order, and the answers are merged into one fresh keyring).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from credprov.api import internal
from credprov.clock import Clock, RealClock
from credprov.config import (
    SERVICE_ACCOUNT_TOKEN_GATE,
    ConfigError,
    check_bin_dir,
    check_plugin_binary,
    load_config,
    resolve_feature_gates,
)
from credprov.keyring import DockerKeyring, TrackedAuthConfig
from credprov.metrics import Metrics
from credprov.plugin.exec import DEFAULT_PLUGIN_TIMEOUT, ExecPlugin
from credprov.plugin.provider import (
    GetServiceAccount,
    GetServiceAccountToken,
    PluginProvider,
    PodInfo,
    ProvideResult,
)


@dataclass
class CredentialProviders:
    """The registered providers of one config, in config order."""

    config: internal.CredentialProviderConfig
    config_hash: str
    providers: list[PluginProvider]
    metrics: Metrics

    def lookup(
        self, image: str, pod: PodInfo | None = None
    ) -> tuple[list[TrackedAuthConfig], list[ProvideResult]]:
        """Ask every provider about ``image``; returns (credentials, per-provider results).

        ``image`` must already be normalised (``parse_image_name``). Credentials come in
        keyring order: matching keys in reverse order, and for the same key the earlier
        provider first.
        """
        keyring = DockerKeyring()
        results = []
        for provider in self.providers:
            res = provider.provide(image, pod)
            results.append(res)
            if res.credentials:
                keyring.add_tracked(res.credentials)
        return keyring.lookup(image), results

    def executions(self) -> dict[str, int]:
        return {p.name: p.executions for p in self.providers}


def register_credential_provider_plugins(
    config_path: str,
    bin_dir: str,
    feature_gates: Mapping[str, bool] | None = None,
    *,
    metrics: Metrics | None = None,
    clock: Clock | None = None,
    plugin_timeout: int = DEFAULT_PLUGIN_TIMEOUT,
    get_service_account: GetServiceAccount | None = None,
    get_service_account_token: GetServiceAccountToken | None = None,
    environ: Mapping[str, str] | None = None,
) -> CredentialProviders:
    """Set up the providers of ``config_path`` as the kubelet does at start-up.

    Raises:
        ConfigError: the kubelet's registration errors, in its order.
    """
    gates = resolve_feature_gates(feature_gates)
    check_bin_dir(bin_dir)
    config, config_hash = load_config(config_path, gates)
    metrics = metrics or Metrics()
    metrics.record_config_hash(config_hash)
    clock = clock or RealClock()
    providers = []
    for provider in config.providers:
        path = check_plugin_binary(bin_dir, provider.name)
        if provider.api_version not in internal.EXEC_API_VERSIONS:
            raise ConfigError(
                f"error initializing plugin provider {provider.name}: "
                f'invalid apiVersion: "{provider.api_version}"'
            )
        plugin = ExecPlugin(
            name=provider.name,
            path=path,
            api_version=provider.api_version,
            args=provider.args,
            env=provider.env,
            timeout_ns=plugin_timeout,
            metrics=metrics,
            base_environ=environ,
        )
        providers.append(
            PluginProvider(
                provider,
                plugin,
                clock=clock,
                service_account_token_gate=gates[SERVICE_ACCOUNT_TOKEN_GATE],
                get_service_account=get_service_account,
                get_service_account_token=get_service_account_token,
            )
        )
    return CredentialProviders(config, config_hash, providers, metrics)
