"""Replaying a scenario on a simulated node: fake registry and runtime, real pull records.

Mirrors the kubelet's ``EnsureImageExists`` with the ``KubeletEnsureSecretPulledImages``
pull manager (:mod:`credprov.kubelet.ensure`, :mod:`credprov.pullmanager.manager`):
each pod step yields what the kubelet would decide (pulled / used the present image /
``ErrImageNeverPull`` / pull failed), its events and the
``kubelet_image_manager_ensure_image_requests_total`` labels. The node's runtime and
registry are fakes (:mod:`credprov.testing.runtime`); the pull records are real files
under the root the caller gives, so ``credprov pull-records`` can inspect them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from credprov.credentialprovider.chain import (
    CredentialChain,
    CredentialRequest,
    KeyringSource,
    PullSecrets,
    SourceAnswer,
)
from credprov.imageauth.keyring import DockerKeyring
from credprov.kubelet.node import KubeletNode, ensure_result_to_dict
from credprov.kubelet.scenario import PodStep, Scenario, SecretSpec, Step

# -- running ----------------------------------------------------------------------------------


class _ServiceAccountPlugin:
    """A KEP-4412-style plugin of the scenario: credentials per service account, as the
    chain's last source (after pull secrets and the node's docker config)."""

    def __init__(self, keyrings: Mapping[tuple[str, str], DockerKeyring]) -> None:
        self.keyrings = keyrings

    def lookup(self, request: CredentialRequest) -> SourceAnswer:
        pod = request.pod
        keyring = (
            None if pod is None else self.keyrings.get((pod.namespace, pod.service_account_name))
        )
        return SourceAnswer(keyring.lookup(request.repo) if keyring is not None else [])


class Simulation:
    """A node built from a scenario: runtime, registry, manager, image manager."""

    def __init__(self, scenario: Scenario, root: str, mirrors: Any = None) -> None:
        from credprov.imageauth.keyring import CredentialOrigin, ServiceAccountCoordinates
        from credprov.pullmanager.metrics import PullManagerMetrics
        from credprov.testing import FakeRegistry, FakeRuntime, RegistryGrant

        self.scenario = scenario
        self.root = root
        #: Runtimes' mirror configs (:mod:`credprov.cri.mirrors`): each pull's route.
        self.mirrors = list(mirrors or [])
        self.metrics = PullManagerMetrics()
        grants = [
            RegistryGrant(
                repos=tuple(u["repos"]),
                username=u.get("username"),
                password=u.get("password"),
                credential_hash=u.get("credentialHash"),
            )
            for u in scenario.users
        ]
        self.registry = FakeRegistry(anonymous=scenario.anonymous, grants=grants)
        for ri in scenario.registry_images:
            self.registry.add_image(ri.names[0], ri.id or None, ri.digest, ri.size)
        self.runtime = FakeRuntime(self.registry, pull_ref_mismatch=scenario.cri_image_ref_mismatch)
        for img in scenario.images:
            self.runtime.add_image(img.id, img.names, img.digest, img.size)
        node = DockerKeyring()
        if scenario.node_auths:
            node.add(scenario.node_auths)
        sa_keyrings = {}
        for key, sa in scenario.service_accounts.items():
            keyring = DockerKeyring()
            source = CredentialOrigin(
                service_account=ServiceAccountCoordinates(sa.uid, sa.namespace, sa.name)
            )
            keyring.add(sa.auths, source=source, provider="service-account-plugin")
            sa_keyrings[key] = keyring
        self.credentials = CredentialChain(
            [PullSecrets(), KeyringSource(node), _ServiceAccountPlugin(sa_keyrings)]
        )
        # A kubelet start: the pull manager's housekeeping runs against the runtime.
        self.node = KubeletNode(
            self.runtime,
            self.root,
            scenario.policy,
            scenario.allowlist,
            credentials=self.credentials,
            metrics=self.metrics,
            feature_gate=scenario.feature_gate,
            verify_image_ref=scenario.verify_image_ref,
            track_preloaded=scenario.track_preloaded,
        )

    @property
    def manager(self) -> Any:
        """The node's ``ImagePullManager`` (None with the feature gate off)."""
        return self.node.manager

    @property
    def ensure(self) -> Any:
        """The node's image manager (:class:`credprov.kubelet.ensure.EnsureImage`)."""
        return self.node.ensure

    def run_step(self, step: Step) -> dict[str, Any]:
        """Run ``step`` and return what it did as JSON: for a pod step the decision, events,
        attempts, recorded credentials, metric labels and, with ``expect``, ``ok``.
        """
        out: dict[str, Any] = {"step": step.index, "action": step.action}
        if step.name:
            out["name"] = step.name
        if step.action == "pod":
            out.update(self._pod(step.value))
            if step.expect is not None:
                out["expect"] = step.expect
                out["ok"] = out["decision"] == step.expect
        elif step.action == "restart":
            self.node.restart()
            out["detail"] = "kubelet restarted: in-memory state dropped, dangling intents settled"
        elif step.action == "removeImage":
            removed = self.runtime.remove_image(step.value)
            out["detail"] = f"image {step.value} " + ("removed" if removed else "was not present")
        elif step.action == "addImage":
            img = step.value
            self.runtime.add_image(img.id, img.names, img.digest, img.size)
            out["detail"] = f"image {img.id} side-loaded as {', '.join(img.names)}"
        elif step.action == "rotateSecret":
            key, auths = step.value
            self.scenario.secrets[key].auths = auths
            out["detail"] = f"secret {key[0]}/{key[1]} rotated (same uid, new credentials)"
        elif step.action == "pruneRecords":
            out["detail"] = self._prune()
        elif step.action == "registryAvailable":
            self.registry.available = step.value
            out["detail"] = "registry " + ("available" if step.value else "unavailable")
        return out

    def _prune(self) -> str:
        if self.manager is None:
            return "feature gate off: no records to prune"
        # The image GC hook: "until" is taken before listing the runtime's images.
        until = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
        refs = [i.id for i in self.runtime.list_images()]
        self.manager.prune_unknown_records(refs, until)
        return f"records of images the runtime no longer has pruned ({len(refs)} images kept)"

    def _pod(self, pod: PodStep) -> dict[str, Any]:
        from credprov.credentialprovider.chain import PodInfo
        from credprov.kubelet.ensure import Container

        info = PodInfo(
            namespace=pod.namespace,
            name=pod.name,
            uid=pod.uid,
            service_account_name=pod.service_account,
        )
        secrets = [
            (s if isinstance(s, SecretSpec) else self.scenario.secrets[s]).to_object()
            for s in pod.secrets
        ]
        res = self.ensure.ensure_image_exists(
            info, Container(image=pod.image, image_pull_policy=pod.pull_policy), secrets
        )
        out: dict[str, Any] = {"pod": f"{pod.namespace}/{pod.name}"}
        if self.mirrors and res.attempts:  # the runtime was asked to pull
            out["runtimeRoutes"] = [m.route(pod.image).to_dict() for m in self.mirrors]
        if pod.image_volume:
            out["imageVolume"] = pod.image_volume
        return {**out, **ensure_result_to_dict(res)}

    def records(self) -> tuple[list[dict[str, Any]], list[str]]:
        """(every pull record under the root as the kubelet's JSON, one error line per file that
        does not decode).
        """
        from credprov.pullmanager.fsstore import FSPullRecordsAccessor
        from credprov.pullmanager.types import record_to_json

        store = FSPullRecordsAccessor(self.root, migrate=False)
        records, errors = store.list_image_pulled_records()
        return [record_to_json(r) for r in records], errors
