"""KEP-4412 end to end in the kubelet emulator: NodeAPI (Node authorizer, NodeRestriction,
RBAC, the token issuer and the kubelet's token manager) behind providers registered from a
config, run as real fake-plugin subprocesses through the Engine.

Cluster and helpers: ``kep4412_fixtures.py``.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from credprov.credentialprovider.chain import ServiceAccountError, TokenRequest
from credprov.credentialprovider.engine import Engine
from credprov.credentialprovider.plugin.config import (
    SERVICE_ACCOUNT_TOKEN_GATE,
    ConfigError,
    load_config,
)
from credprov.credentialprovider.plugin.exec import ExecPlugin
from credprov.credentialprovider.plugin.provider import PluginProvider
from credprov.credentialprovider.plugin.registry import register_credential_provider_plugins
from credprov.kubelet.ensure import Container, EnsureImage
from credprov.nodeauth.nodeapi import NodeAPI
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.pullmanager.manager import ImagePullManager
from credprov.pullmanager.types import record_to_json
from credprov.testing import FakeRegistry, FakeRuntime, RegistryGrant
from tests.conftest import CANARY
from tests.unit.nodeauth.kep4412_fixtures import (
    ABSENT,
    AUDIENCE,
    IMAGE,
    NODE_UIDS,
    PULL_USER,
    REPO,
    ROLE,
    SA_UIDS,
    TEAM,
    PluginNode,
    cluster,
    node_api,
    pod_info,
    service_account,
    token_attributes,
    write_objects,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def plugin_node(tmp_path: Path) -> PluginNode:
    return PluginNode(tmp_path)


def resolve(engine: Engine, api: NodeAPI, pod: str, image: str = IMAGE) -> Any:
    res = engine.resolve(image, [], pod_info(api, pod))
    [provider_result] = res.providers
    return provider_result


# -- the token the plugin gets ------------------------------------------------------------


def test_token_is_bound_to_the_pod_for_the_configured_audience(plugin_node: PluginNode) -> None:
    api = node_api()
    engine, _ = plugin_node.engine(api, token_attributes())
    result = resolve(engine, api, "app")
    assert result.error is None and result.executed

    request = plugin_node.last_request()
    token = request["serviceAccountToken"]
    claims = api.issuer.verify(token, audience=AUDIENCE)  # signed by this API server
    assert claims["aud"] == [AUDIENCE]
    assert claims["sub"] == "system:serviceaccount:team-a:builder"
    k8s = claims["kubernetes.io"]
    assert k8s["namespace"] == "team-a"
    assert k8s["serviceaccount"] == {"name": "builder", "uid": SA_UIDS["builder"]}
    assert k8s["pod"] == {"name": "app", "uid": "uid-app"}
    assert k8s["node"] == {"name": "node-1", "uid": NODE_UIDS["node-1"]}
    assert claims["exp"] - claims["iat"] == 3600  # the API default: no expirationSeconds
    # Required and present optional annotations only; never the pod's own annotations.
    assert request["serviceAccountAnnotations"] == {ROLE: "puller", TEAM: "a"}
    assert api.issuer.issued == 1

    # The credentials carry the service account's coordinates (for KEP-2535 records).
    [cred] = result.credentials
    sa = cred.source.service_account
    assert (sa.namespace, sa.name, sa.uid) == ("team-a", "builder", SA_UIDS["builder"])
    assert (result.service_account.namespace, result.service_account.name) == (
        "team-a",
        "builder",
    )

    # The requests, in the kubelet's order, each allowed by the right authorizer.
    log = [(a.verb, a.resource, a.subresource, a.name, d.allowed) for a, d in api.audit_log]
    assert log == [
        ("get", "serviceaccounts", "", "builder", True),
        ("create", "serviceaccounts", "token", "builder", True),
        ("request-serviceaccounts-token-audience", AUDIENCE, "", "builder", True),
    ]
    assert api.audit_log[-1][1].reason.startswith(
        'RBAC: allowed by ClusterRoleBinding "registry-audience"'
    )


# Each row: who asks (node), for which pod, with which audience; what goes wrong before a
# token is issued (None: a token is issued and the plugin runs).
REFUSALS = [
    pytest.param(
        "node-2",
        "web",
        AUDIENCE,
        None,
        'serviceaccounts "other" is forbidden: User "system:node:node-2" cannot get resource '
        '"serviceaccounts" in API group "" in the namespace "team-a": no relationship found '
        "between node 'node-2' and this object",
        id="not-the-pods-node",
    ),
    pytest.param(
        "node-2",
        "app",
        AUDIENCE,
        None,
        # node-2 runs another pod of "builder": the Node authorizer allows the request,
        # NodeRestriction refuses a token bound to a pod of another node.
        'serviceaccounts "builder" is forbidden: node requested token bound to a pod '
        "scheduled on a different node",
        id="sa-shared-with-a-pod-of-the-node",
    ),
    pytest.param(
        "node-1",
        "app",
        "unlisted.example.com",
        None,
        'system:node:node-1 is not authorized to request tokens for audience "unlisted.example.com"',
        id="no-rbac-grant-for-the-audience",
    ),
    pytest.param(
        "node-1",
        "app",
        "scoped.example.com",
        None,
        'system:node:node-1 is not authorized to request tokens for audience "scoped.example.com"',
        id="rbac-grant-for-another-service-account",
    ),
    pytest.param("node-1", "web", "scoped.example.com", None, None, id="rbac-grant-by-name"),
    pytest.param("node-1", "vault", "vault.example.com", None, None, id="audience-in-pod-volume"),
    pytest.param(
        "node-1",
        "app",
        "vault.example.com",
        None,
        'system:node:node-1 is not authorized to request tokens for audience "vault.example.com"',
        id="audience-in-another-pods-volume",
    ),
    pytest.param(
        "node-1",
        "app",
        AUDIENCE,
        "service-account-recreated",
        f"the UID in the precondition ({SA_UIDS['builder']}) does not match the UID in record "
        "(sa-uid-new). The object might have been deleted and then recreated",
        id="sa-uid-precondition",
    ),
    pytest.param(
        "node-1",
        "app",
        AUDIENCE,
        "pod-recreated",
        "the UID in the bound object reference (uid-app) does not match the UID in record. "
        "The object might have been deleted and then recreated",
        id="pod-uid-mismatch",
    ),
]


@pytest.mark.parametrize(("node", "pod", "audience", "race", "error"), REFUSALS)
def test_token_request_chain(
    plugin_node: PluginNode,
    node: str,
    pod: str,
    audience: str,
    race: str | None,
    error: str | None,
) -> None:
    api = node_api(node)
    attrs = token_attributes(audience=audience, required=(), optional=())
    callbacks: dict[str, Any] = {"service_accounts": api}
    if race == "service-account-recreated":
        # Deleted and recreated between the kubelet's GET and its TokenRequest.
        def get_sa(ns: str, name: str) -> Any:
            info = api.get_service_account(ns, name)
            api.apply(service_account(name, uid="sa-uid-new"))
            return info

        callbacks["get_service_account"] = get_sa
    elif race == "pod-recreated":
        recreated = api.store.get("pods", "team-a", pod)
        assert recreated is not None
        api.apply({**recreated, "metadata": {**recreated["metadata"], "uid": "uid-new"}})
    providers = register_credential_provider_plugins(
        str(plugin_node.config(attrs)), str(plugin_node.bin_dir), **callbacks
    )
    info = pod_info(api, pod)
    if race == "pod-recreated":
        info = dataclasses.replace(info, uid="uid-app")  # the kubelet still knows the old pod
    [result] = Engine(providers).resolve(IMAGE, [], info).providers
    if error is None:
        assert result.error is None and plugin_node.executions() == 1
        claims = api.issuer.verify(plugin_node.last_request()["serviceAccountToken"], audience)
        assert claims["kubernetes.io"]["pod"]["name"] == pod
        return
    assert result.error is not None and error in result.error
    assert result.error.startswith(("failed to fetch token: ", 'serviceaccounts "'))
    assert not result.executed and plugin_node.executions() == 0
    assert api.issuer.issued == 0 and result.credentials == []


def test_node_restriction_sees_the_exact_token_request() -> None:
    """A TokenRequest without the pod UID is refused by NodeRestriction, not signed."""
    api = node_api()
    with pytest.raises(ServiceAccountError, match="pod binding without a uid"):
        api.create_token(TokenRequest("team-a", "builder", SA_UIDS["builder"], AUDIENCE, "app", ""))
    token = api.create_token(TokenRequest("team-a", "builder", "", AUDIENCE, "app", "uid-app"))
    claims = api.issuer.verify(token, AUDIENCE)
    assert claims["kubernetes.io"]["serviceaccount"]["uid"] == SA_UIDS["builder"]


# -- annotations and requireServiceAccount ------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "attrs", "executed", "annotations", "token", "sa_gets"),
    [
        pytest.param(
            "app", token_attributes(), True, {ROLE: "puller", TEAM: "a"}, True, 1, id="optional-present"
        ),
        pytest.param(
            "web", token_attributes(), True, {ROLE: "pusher"}, True, 1, id="optional-absent"
        ),
        pytest.param("lean", token_attributes(), False, None, False, 1, id="required-missing"),
        pytest.param(
            "lean", token_attributes(required=(), optional=(ABSENT,)), True, None, True, 1,
            id="no-annotations-at-all",
        ),
        pytest.param(
            "static", token_attributes(require=True), False, None, False, 0,
            id="require-sa-pod-without-sa",
        ),
        pytest.param(
            "static", token_attributes(require=False, required=()), True, None, False, 0,
            id="optional-sa-pod-without-sa",
        ),
    ],
)  # fmt: skip
def test_annotations_and_require_service_account(
    plugin_node: PluginNode,
    pod: str,
    attrs: dict[str, Any],
    executed: bool,
    annotations: dict[str, str] | None,
    token: bool,
    sa_gets: int,
) -> None:
    api = node_api()
    engine, _ = plugin_node.engine(api, attrs)
    result = resolve(engine, api, pod)
    assert result.error is None
    assert plugin_node.executions() == (1 if executed else 0)
    assert bool(result.skipped) is not executed
    gets = [a for a, _ in api.audit_log if a.resource == "serviceaccounts" and a.verb == "get"]
    assert len(gets) == sa_gets
    assert api.issuer.issued == (1 if token else 0)
    if executed:
        request = plugin_node.last_request()
        assert request.get("serviceAccountAnnotations") == annotations
        assert ("serviceAccountToken" in request) is token
        assert (result.service_account is not None) is token
        assert result.credentials  # the plugin's answer is used either way


def test_gate_off_config_with_token_attributes_is_refused(plugin_node: PluginNode) -> None:
    api = node_api(feature_gates={SERVICE_ACCOUNT_TOKEN_GATE: False})
    with pytest.raises(
        ConfigError,
        match="tokenAttributes is not supported when "
        "KubeletServiceAccountTokenForCredentialProviders feature gate is disabled",
    ):
        plugin_node.providers(api, token_attributes(), gates={SERVICE_ACCOUNT_TOKEN_GATE: False})
    # The Node authorizer no longer lets the node read service accounts either.
    with pytest.raises(ServiceAccountError, match="not allowed to get service accounts"):
        api.get_service_account("team-a", "builder")  # fmt: skip


def test_gate_off_provider_runs_without_service_account(plugin_node: PluginNode) -> None:
    """A provider built with the gate off (``serviceAccountProvider`` nil) never asks the
    API server: no service-account GET, no token, the plugin runs with the image only."""
    api = node_api(feature_gates={SERVICE_ACCOUNT_TOKEN_GATE: False})
    config, _ = load_config(str(plugin_node.config(token_attributes())), {})
    [entry] = config.providers
    plugin = ExecPlugin("fake", str(plugin_node.bin_dir / "fake"), entry.api_version, env=entry.env)
    provider = PluginProvider(
        entry,
        plugin,
        service_account_token_gate=False,
        get_service_account=api.get_service_account,
        get_service_account_token=api.get_service_account_token,
    )
    result = provider.provide(REPO, pod_info(api, "app"))
    assert result.error is None and result.credentials
    assert "serviceAccountToken" not in plugin_node.last_request()
    assert api.audit_log == [] and api.issuer.issued == 0


# -- cache keys and singleflight ----------------------------------------------------------


@pytest.mark.parametrize(
    ("cache_type", "pods", "cached", "executions", "tokens"),
    [
        pytest.param("ServiceAccount", ["app", "app2"], [False, True], 1, 2, id="sa-shared"),
        pytest.param("ServiceAccount", ["app", "web"], [False, False], 2, 2, id="sa-two-sas"),
        pytest.param("Token", ["app", "app2"], [False, False], 2, 2, id="token-per-pod"),
        pytest.param("Token", ["app", "app", "app"], [False, True, True], 1, 1, id="token-reused"),
    ],
)
def test_cache_type_keys(
    plugin_node: PluginNode,
    cache_type: str,
    pods: list[str],
    cached: list[bool],
    executions: int,
    tokens: int,
) -> None:
    api = node_api()
    engine, providers = plugin_node.engine(
        api, token_attributes(cache_type, required=(), optional=())
    )
    results = [resolve(engine, api, p) for p in pods]
    assert all(r.error is None and r.credentials for r in results)
    assert [r.cached for r in results] == cached
    assert plugin_node.executions() == executions == providers.executions()["fake"]
    # The kubelet gets a token before it looks at its cache: one per pod (the token
    # manager reuses a pod's token), so pod name and UID never need to be in the key.
    assert api.issuer.issued == tokens


@pytest.mark.parametrize("cache_type", ["ServiceAccount", "Token"])
def test_concurrent_lookups_for_one_pod_run_the_plugin_once(
    plugin_node: PluginNode, cache_type: str
) -> None:
    api = node_api()
    # cacheDuration 0: nothing is cached, so only singleflight can save the executions.
    engine, providers = plugin_node.engine(
        api,
        token_attributes(cache_type, required=(), optional=()),
        FAKE_MODE="sleep",
        FAKE_SLEEP="0.3",
        FAKE_CACHE_DURATION="0s",
    )
    threads = 6
    barrier = threading.Barrier(threads)
    results: list[Any] = []

    def lookup() -> None:
        barrier.wait()
        results.append(resolve(engine, api, "app"))

    workers = [threading.Thread(target=lookup) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
    assert len(results) == threads
    assert all(r.error is None and r.credentials for r in results)
    assert plugin_node.executions() == 1 == providers.executions()["fake"]
    assert api.issuer.issued == 1  # one TokenRequest for the pod, shared


# -- the token-echo check -----------------------------------------------------------------


@pytest.mark.parametrize(("cache_type", "accepted"), [("ServiceAccount", False), ("Token", True)])
def test_token_echo(plugin_node: PluginNode, cache_type: str, accepted: bool) -> None:
    api = node_api()
    engine, _ = plugin_node.engine(
        api, token_attributes(cache_type, required=(), optional=()), FAKE_MODE="echo-token"
    )
    res = engine.resolve(IMAGE, [], pod_info(api, "app"))
    [result] = res.providers
    token = plugin_node.last_request()["serviceAccountToken"]
    if accepted:
        assert result.error is None
        [cred] = res.credentials
        assert cred.password == token  # a pass-through registry gets the pod's token
    else:
        assert result.error == (
            "credential provider plugin returned the service account token as the password, "
            "which is not allowed when cacheType is not Token"
        )
        assert res.credentials == []
        assert token not in result.error


# -- the token never leaves the plugin's stdin --------------------------------------------


@pytest.mark.parametrize(
    ("cache_type", "mode", "extra", "code"),
    [
        pytest.param("Token", "echo-token", ["-o", "json"], 0, id="token-as-password-json"),
        pytest.param("Token", "echo-token", [], 0, id="token-as-password-text"),
        pytest.param("ServiceAccount", "echo-token", [], 1, id="echo-refused"),
    ],
)
def test_token_never_printed_or_logged(
    plugin_node: PluginNode, tmp_path: Path, cache_type: str, mode: str, extra: list[str], code: int
) -> None:
    objects = write_objects(tmp_path / "objects.yaml")
    config = plugin_node.config(token_attributes(cache_type), FAKE_MODE=mode, FAKE_PASSWORD=CANARY)
    proc = subprocess.run(
        [
            sys.executable, "-m", "credprov", "get-credentials",
            "--config", str(config), "--bin-dir", str(plugin_node.bin_dir),
            "--objects", str(objects), "--pod", "team-a/app", "-v", "4", *extra,
        ],
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    token = plugin_node.last_request()["serviceAccountToken"]
    _header, payload, signature = token.split(".")
    for text in (proc.stdout, proc.stderr):
        assert token not in text and signature not in text and payload not in text
        assert CANARY not in text
    assert proc.returncode == code, proc.stderr
    # -v 4 did log the token request chain (and the refusal, when there is one).
    assert "create serviceaccounts/token team-a/builder as system:node:node-1" in proc.stderr
    assert "issued a token for team-a/builder" in proc.stderr
    if code:
        assert "returned the service account token as the password" in proc.stderr


# -- the verification manager (KEP-2535 with KEP-4412) ------------------------------------


def test_pulled_record_keeps_service_account_coordinates(
    plugin_node: PluginNode, tmp_path: Path
) -> None:
    registry = FakeRegistry(
        grants=[RegistryGrant(repos=(f"{REPO}",), username=PULL_USER, password=CANARY)]
    )
    registry.add_image(IMAGE, image_id="sha256:" + "a" * 64)
    runtime = FakeRuntime(registry)
    root = tmp_path / "kubelet"
    root.mkdir()
    api = node_api()
    engine, providers = plugin_node.engine(
        api, token_attributes(required=(), optional=()), FAKE_PASSWORD=CANARY
    )
    manager = ImagePullManager(str(root), "NeverVerifyPreloadedImages", runtime=runtime)
    ensure = EnsureImage(runtime, manager, credentials=engine)

    def run(pod: str) -> Any:
        return ensure.ensure_image_exists(pod_info(api, pod), Container(IMAGE, "IfNotPresent"), [])

    first = run("app")
    assert first.error is None and first.decision == "pulled"
    records, errors = FSPullRecordsAccessor(str(root), migrate=False).list_image_pulled_records()
    assert errors == []
    [record] = [record_to_json(r) for r in records]
    assert record["credentialMapping"][REPO] == {
        "kubernetesServiceAccounts": [
            {"uid": SA_UIDS["builder"], "namespace": "team-a", "name": "builder"}
        ]
    }
    pulls = len(runtime.pulls)

    # Same service account (same UID), another pod: no pull, no new plugin execution.
    second = run("app2")
    assert (second.error, second.decision) == (None, "present")
    assert len(runtime.pulls) == pulls and providers.executions()["fake"] == 1

    # Another service account must prove itself to the registry.
    third = run("web")
    assert (third.error, third.decision) == (None, "pulled")
    assert len(runtime.pulls) == pulls + 1
    records, _ = FSPullRecordsAccessor(str(root), migrate=False).list_image_pulled_records()
    [record] = [record_to_json(r) for r in records]
    names = [sa["name"] for sa in record["credentialMapping"][REPO]["kubernetesServiceAccounts"]]
    assert names == ["builder", "other"]


def test_recreated_service_account_must_pull_again(plugin_node: PluginNode, tmp_path: Path) -> None:
    """Records match on (namespace, name, uid): recreating the SA revokes its access."""
    registry = FakeRegistry(
        grants=[RegistryGrant(repos=(f"{REPO}",), username=PULL_USER, password="p")]
    )
    registry.add_image(IMAGE, image_id="sha256:" + "b" * 64)
    runtime = FakeRuntime(registry)
    root = tmp_path / "kubelet"
    root.mkdir()
    api = node_api()
    engine, _ = plugin_node.engine(
        api, token_attributes(required=(), optional=()), FAKE_PASSWORD="p"
    )
    ensure = EnsureImage(
        runtime,
        ImagePullManager(str(root), "NeverVerifyPreloadedImages", runtime=runtime),
        credentials=engine,
    )
    assert (
        ensure.ensure_image_exists(
            pod_info(api, "app"), Container(IMAGE, "IfNotPresent"), []
        ).decision
        == "pulled"
    )
    api.apply(service_account("builder", uid="sa-uid-recreated"))
    again = ensure.ensure_image_exists(pod_info(api, "app"), Container(IMAGE, "IfNotPresent"), [])
    assert (again.error, again.decision) == (None, "pulled")


def test_objects_example_is_the_documented_cluster() -> None:
    """config/kep4412-objects.yaml loads and its pod may get a registry token."""
    from credprov.nodeauth.store import load_objects_file

    store = load_objects_file(str(REPO_ROOT / "config" / "kep4412-objects.yaml"))
    api = NodeAPI(store, "node-1")
    info = api.get_service_account("team-a", "builder")
    token = api.get_service_account_token(
        TokenRequest(
            "team-a", "builder", info.uid, "registry.example.com", "app",
            "9c8b7a6d-0000-4000-8000-00000000000a",
        )
    )  # fmt: skip
    assert api.issuer.verify(token, "registry.example.com")["sub"].endswith(":team-a:builder")
    assert cluster()  # the fixture cluster stays buildable
