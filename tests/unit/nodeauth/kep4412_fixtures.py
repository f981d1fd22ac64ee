"""A small cluster and a fake-plugin node for the KEP-4412 emulator tests.

Node ``node-1`` runs ``team-a`` pods with the service accounts ``builder`` (two pods),
``other`` and ``bare`` (no annotations), a pod without a service account, and a pod whose
projected volume already asks for the ``vault.example.com`` audience; ``node-2`` runs
``far``, which also uses ``builder``. RBAC lets every node request tokens for
``registry.example.com`` (any service account) and for ``scoped.example.com`` (only for
``other``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from credprov.credentialprovider.chain import PodInfo
from credprov.credentialprovider.engine import Engine
from credprov.credentialprovider.plugin.registry import (
    CredentialProviders,
    register_credential_provider_plugins,
)
from credprov.nodeauth.nodeapi import NodeAPI
from credprov.nodeauth.store import ObjectStore
from tests.conftest import install_fake_plugin, provider, write_config

Obj = dict[str, Any]

AUDIENCE = "registry.example.com"
REGISTRY = "registry.example.com"
IMAGE = f"{REGISTRY}/team-a/app:v1"
REPO = f"{REGISTRY}/team-a/app"
ROLE = "registry.example.com/role"
TEAM = "registry.example.com/team"
ABSENT = "registry.example.com/absent"
NODE_UIDS = {"node-1": "node-uid-1", "node-2": "node-uid-2"}
SA_UIDS = {"builder": "sa-uid-builder", "other": "sa-uid-other", "bare": "sa-uid-bare"}
PULL_USER = "robot"


def pod(
    name: str,
    sa: str | None = "builder",
    node: str = "node-1",
    *,
    image: str = IMAGE,
    volumes: list[Obj] | None = None,
    **spec: Any,
) -> Obj:
    """A bound ``team-a`` pod (uid ``uid-<name>``); ``sa=None`` leaves the name unset."""
    body: Obj = {"nodeName": node, "containers": [{"name": "app", "image": image}], **spec}
    if sa is not None:
        body["serviceAccountName"] = sa
    if volumes is not None:
        body["volumes"] = volumes
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}"},
        "spec": body,
    }


def service_account(name: str, annotations: dict[str, str] | None = None, uid: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": "team-a", "uid": uid or SA_UIDS[name]}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def audience_grant(name: str, audience: str, resource_names: list[str] | None = None) -> list[Obj]:
    """A ClusterRole allowing ``request-serviceaccounts-token-audience`` on ``audience``,
    bound to the group ``system:nodes``."""
    rule: Obj = {
        "verbs": ["request-serviceaccounts-token-audience"],
        "apiGroups": [""],
        "resources": [audience],
    }
    if resource_names:
        rule["resourceNames"] = resource_names
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [rule],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}
            ],
        },
    ]


def projected_token_volume(audience: str) -> Obj:
    return {
        "name": "token",
        "projected": {"sources": [{"serviceAccountToken": {"audience": audience, "path": "t"}}]},
    }


def cluster() -> list[Obj]:
    """The cluster of the module docstring."""
    return [
        *({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "uid": u}}
          for n, u in NODE_UIDS.items()),
        service_account("builder", {ROLE: "puller", TEAM: "a"}),
        service_account("other", {ROLE: "pusher"}),
        service_account("bare"),
        pod("app"),
        pod("app2"),
        pod("web", "other"),
        pod("lean", "bare"),
        pod("static", None),
        pod("vault", volumes=[projected_token_volume("vault.example.com")]),
        pod("far", node="node-2"),
        *audience_grant("registry-audience", AUDIENCE),
        *audience_grant("scoped-audience", "scoped.example.com", ["other"]),
    ]  # fmt: skip


def pod_info(api: NodeAPI, name: str) -> PodInfo:
    """What the kubelet knows about a ``team-a`` pod (from its own pod cache)."""
    obj = api.store.get("pods", "team-a", name)
    assert obj is not None, name
    return PodInfo(
        namespace="team-a",
        name=name,
        uid=obj["metadata"]["uid"],
        service_account_name=obj["spec"].get("serviceAccountName", ""),
    )


def token_attributes(
    cache_type: str = "ServiceAccount",
    audience: str = AUDIENCE,
    *,
    require: bool = True,
    required: tuple[str, ...] = (ROLE,),
    optional: tuple[str, ...] = (TEAM, ABSENT),
) -> Obj:
    attrs: Obj = {
        "serviceAccountTokenAudience": audience,
        "cacheType": cache_type,
        "requireServiceAccount": require,
    }
    if required:
        attrs["requiredServiceAccountAnnotationKeys"] = list(required)
    if optional:
        attrs["optionalServiceAccountAnnotationKeys"] = list(optional)
    return attrs


@dataclass
class PluginNode:
    """A fake plugin in a bin dir, its config, and the files it reports through."""

    tmp: Path
    bin_dir: Path = field(init=False)
    stdin_out: Path = field(init=False)
    counter: Path = field(init=False)

    def __post_init__(self) -> None:
        self.bin_dir = self.tmp / "bin"
        install_fake_plugin(self.bin_dir, "fake")
        self.stdin_out = self.tmp / "request.json"
        self.counter = self.tmp / "executions"

    def config(self, attrs: Obj | None = None, **env: str) -> Path:
        """A v1 config with one provider ``fake`` for ``registry.example.com``."""
        base = {
            "FAKE_STDIN_OUT": str(self.stdin_out),
            "FAKE_COUNTER": str(self.counter),
            "FAKE_USERNAME": PULL_USER,
        }
        extra: Obj = {"tokenAttributes": attrs} if attrs is not None else {}
        return write_config(
            self.tmp / "providers.json",
            [provider("fake", match_images=[REGISTRY], env={**base, **env}, **extra)],
        )

    def providers(
        self,
        api: NodeAPI,
        attrs: Obj | None = None,
        gates: dict[str, bool] | None = None,
        env: dict[str, str] | None = None,
    ) -> CredentialProviders:
        return register_credential_provider_plugins(
            str(self.config(attrs, **(env or {}))),
            str(self.bin_dir),
            gates,
            service_accounts=api,
        )

    def engine(
        self, api: NodeAPI, attrs: Obj | None = None, **env: str
    ) -> tuple[Engine, CredentialProviders]:
        providers = self.providers(api, attrs, env=env)
        return Engine(providers), providers

    def executions(self) -> int:
        return len(self.counter.read_text().splitlines()) if self.counter.exists() else 0

    def last_request(self) -> Obj:
        request: Obj = json.loads(self.stdin_out.read_text())
        return request


def node_api(node: str = "node-1", objects: list[Obj] | None = None, **kw: Any) -> NodeAPI:
    return NodeAPI(ObjectStore(cluster() if objects is None else objects), node, **kw)


def write_objects(path: Path, objects: list[Obj] | None = None) -> Path:
    path.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects or cluster()})
    )
    return path
