"""Registering the configured plugins, and the keyring that asks all of them.

Mirrors ``RegisterCredentialProviderPlugins`` (the bin dir must exist, the config is read,
validated and its hash recorded, then every provider's executable is looked up in config
order) and the external credential provider keyring of ``plugins.go`` (every matching
provider is asked, in config order, and the answers are merged into one fresh keyring).

A cache hit is the hot path (every pull of an image whose credentials are cached), so
``lookup`` memoises its merged answer per image when every provider either did not match
or answered from its cache. A memoised answer is used only while it is exactly what a fresh
lookup would return: no provider cache changed since (every add, expiry deletion and purge
bumps one shared :class:`~credprov.credentialprovider.cache.ChangeCounter`), none of the entries it came from
has expired, and no provider's 15-minute purge has fallen due (all three against the same
clock the providers use). Providers with ``tokenAttributes`` depend on the pod and its
service account, so a provider set with one is never memoised. ``memo`` hands that answer
to the credential chain, which memoises its own answer per image string on top of it
(:class:`credprov.credentialprovider.chain.CredentialChain`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from credprov.api import internal
from credprov.base.clock import Clock, RealClock
from credprov.credentialprovider.cache import ChangeCounter
from credprov.credentialprovider.chain import (
    GetServiceAccount,
    GetServiceAccountToken,
    PodInfo,
    ProvideResult,
    ServiceAccountAPI,
)
from credprov.credentialprovider.plugin.config import (
    SERVICE_ACCOUNT_TOKEN_GATE,
    ConfigError,
    check_bin_dir,
    check_plugin_binary,
    load_config,
    resolve_feature_gates,
)
from credprov.credentialprovider.plugin.exec import DEFAULT_PLUGIN_TIMEOUT, ExecPlugin
from credprov.credentialprovider.plugin.metrics import Metrics
from credprov.credentialprovider.plugin.provider import PluginProvider
from credprov.imageauth.keyring import DockerKeyring, TrackedAuthConfig

if TYPE_CHECKING:
    from credprov.credentialprovider.chain import SourceMemo

__all__ = [
    "CredentialProviders",
    "register_credential_provider_plugins",
]


@dataclass
class CredentialProviders:
    """The registered providers of one config, in config order."""

    config: internal.CredentialProviderConfig
    config_hash: str
    providers: list[PluginProvider]
    metrics: Metrics
    # image -> (change count, valid until, (credentials, results)); see the module
    # docstring. The results are shared templates (one per provider for "not matched", one
    # per cache entry for a hit), copied for every caller: a memoised image costs a few
    # hundred bytes. The inner pair is what ``memo`` hands the credential chain.
    _memo: dict[str, tuple[int, int, SourceMemo]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _unmatched: tuple[ProvideResult, ...] = field(default=(), init=False, repr=False, compare=False)
    _changes: ChangeCounter | None = field(default=None, init=False, repr=False, compare=False)
    _memo_for: list[PluginProvider] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self._setup_memo()

    def _setup_memo(self) -> None:
        self._memo = {}
        self._memo_for = list(self.providers)
        self._unmatched = tuple(ProvideResult(name=p.name) for p in self.providers)
        self._changes = None
        clocks = {id(p.clock) for p in self.providers}
        if len(clocks) > 1 or any(p.token_attributes is not None for p in self.providers):
            return
        changes = ChangeCounter()
        for provider in self.providers:
            provider.cache.changes = changes
        self._changes = changes

    def lookup(
        self, image: str, pod: PodInfo | None = None
    ) -> tuple[list[TrackedAuthConfig], list[ProvideResult]]:
        """Ask every provider about ``image``; returns (credentials, per-provider results).

        ``image`` must already be normalised (``parse_image_name``). Credentials come in
        keyring order: matching keys in reverse order, and for the same key the earlier
        provider first.
        """
        part = self.memo(image)
        if part is not None:
            return list(part[0]), [r.copy() for r in part[1]]
        changes = self._changes
        providers = self.providers
        if changes is None or not providers:
            return self._lookup(image, pod)
        seen = changes.value
        keyring = DockerKeyring()
        results = []
        templates = []
        valid_until: int | None = None
        memoisable = True
        for i, provider in enumerate(providers):
            res, entry = provider.provide_entry(image, pod)
            results.append(res)
            if res.credentials:
                keyring.add_tracked(res.credentials)
            if entry is not None:
                # A hit's result depends on the entry alone: one template per entry.
                template = entry.result
                if template is None:
                    template = entry.result = res.copy()
                templates.append(template)
                due = min(entry.expires_at, provider.cache.purge_due_after)
            elif res.matched:
                memoisable = False
                continue
            else:
                templates.append(self._unmatched[i])
                continue  # not matched: the provider's cache is not even looked at
            valid_until = due if valid_until is None else min(valid_until, due)
        creds = keyring.lookup(image)
        if valid_until is None:
            valid_until = _FOREVER
        if memoisable and changes.value == seen:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo = {}
            self._memo[image] = (seen, valid_until, (tuple(creds), tuple(templates)))
        return creds, results

    def memo(self, image: str) -> SourceMemo | None:
        """The memoised answer for ``image`` (credentials, result templates) while it is
        exactly what ``lookup`` would return, for any pod; None otherwise (see the module
        docstring). The same object is returned for as long as it stays exact.
        """
        providers = self.providers
        if providers != self._memo_for:  # PluginProvider compares by identity
            self._setup_memo()  # the list was changed after construction
        changes = self._changes
        if changes is None or not providers:
            return None
        memo = self._memo.get(image)
        if memo is not None and memo[0] == changes.value and providers[0].clock.now() <= memo[1]:
            return memo[2]
        return None

    def _lookup(
        self, image: str, pod: PodInfo | None
    ) -> tuple[list[TrackedAuthConfig], list[ProvideResult]]:
        keyring = DockerKeyring()
        results = []
        for provider in self.providers:
            res = provider.provide(image, pod)
            results.append(res)
            if res.credentials:
                keyring.add_tracked(res.credentials)
        return keyring.lookup(image), results

    def executions(self) -> dict[str, int]:
        """How many times each provider's plugin has run, by provider name."""
        return {p.name: p.executions for p in self.providers}


_MEMO_SIZE = 16384
_FOREVER = 1 << 126


def register_credential_provider_plugins(
    config_path: str,
    bin_dir: str,
    feature_gates: Mapping[str, bool] | None = None,
    *,
    metrics: Metrics | None = None,
    clock: Clock | None = None,
    plugin_timeout: int = DEFAULT_PLUGIN_TIMEOUT,
    service_accounts: ServiceAccountAPI | None = None,
    get_service_account: GetServiceAccount | None = None,
    get_service_account_token: GetServiceAccountToken | None = None,
    environ: Mapping[str, str] | None = None,
) -> CredentialProviders:
    """Set up the providers of ``config_path`` as the kubelet does at start-up.

    Args:
        service_accounts: where KEP-4412 providers (``tokenAttributes``) get a pod's
            service account and token: the node's view of the API server
            (:class:`credprov.nodeauth.NodeAPI`). ``get_service_account`` and
            ``get_service_account_token`` override its two methods one by one.

    Raises:
        ConfigError: the kubelet's registration errors, in its order.
    """
    if service_accounts is not None:
        get_service_account = get_service_account or service_accounts.get_service_account
        get_service_account_token = (
            get_service_account_token or service_accounts.get_service_account_token
        )
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
