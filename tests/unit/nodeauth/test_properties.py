"""Property tests on random clusters and random event streams.

Whatever the order of pod and PV events and whatever the index threshold, after every
event: a node can read a secret, config map, PVC, PV or service-account token exactly
when a non-mirror pod bound to it references it (directly, or for secrets and PVs
through the PVC → PV chain), the indexes equal a recount from scratch, and the audit
lists exactly those objects. The truth is recorded by the generator while it places each
reference somewhere in the pod (pull secrets, env and envFrom of init, regular and
ephemeral containers, secret / projected / CSI / flex / azureFile volumes), so it does not
depend on the code under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from credprov.nodeauth.audit import audit
from credprov.nodeauth.authorizer import NodeAuthorizer
from credprov.nodeauth.graph import Graph, GraphPopulator
from credprov.nodeauth.store import ObjectStore
from credprov.nodeauth.types import Attributes

NODES = ("n1", "n2", "n3")
NAMESPACES = ("a", "b")
SECRETS = ("s1", "s2", "s3", "s4")
CONFIGMAPS = ("c1", "c2", "c3")
ACCOUNTS = ("sa1", "sa2")
CLAIMS = ("v1", "v2", "v3")
PVS = ("pv1", "pv2", "pv3")
POD_NAMES = ("p0", "p1", "p2", "p3", "p4")

SECRET_PLACES = (
    "pull",
    "env",
    "envFrom",
    "initEnv",
    "ephemeralEnvFrom",
    "volume",
    "projected",
    "csi",
    "flex",
    "azureFile",
)
CONFIGMAP_PLACES = ("env", "envFrom", "initEnvFrom", "volume", "projected")


@dataclass
class PodTruth:
    namespace: str
    node: str
    mirror: bool
    account: str
    secrets: set[str] = field(default_factory=set)
    configmaps: set[str] = field(default_factory=set)
    claims: set[str] = field(default_factory=set)


@dataclass
class PVTruth:
    claim: tuple[str, str] | None
    visible: set[tuple[str, str]]


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "x", "env": [], "envFrom": []}


@st.composite
def pods(draw: st.DrawFn) -> tuple[dict[str, Any], PodTruth]:
    namespace = draw(st.sampled_from(NAMESPACES))
    name = draw(st.sampled_from(POD_NAMES))
    node = draw(st.one_of(st.just(""), st.sampled_from(NODES)))
    mirror = draw(st.integers(0, 9)) == 0
    account = draw(st.sampled_from(("", *ACCOUNTS)))
    truth = PodTruth(namespace, node, mirror, account)
    init, main, ephemeral = _container("init"), _container("main"), _container("debug")
    spec: dict[str, Any] = {
        "initContainers": [init],
        "containers": [main],
        "ephemeralContainers": [ephemeral],
        "imagePullSecrets": [],
        "volumes": [],
    }
    if node:
        spec["nodeName"] = node
    if account:
        spec["serviceAccountName"] = account
    volumes: list[dict[str, Any]] = spec["volumes"]

    def volume(source: dict[str, Any]) -> None:
        volumes.append({"name": f"vol{len(volumes)}", **source})

    for secret, place in draw(
        st.lists(st.tuples(st.sampled_from(SECRETS), st.sampled_from(SECRET_PLACES)), max_size=4)
    ):
        truth.secrets.add(secret)
        if place == "pull":
            spec["imagePullSecrets"].append({"name": secret})
        elif place == "env":
            main["env"].append(
                {"name": "E", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}
            )
        elif place == "envFrom":
            main["envFrom"].append({"secretRef": {"name": secret}})
        elif place == "initEnv":
            init["env"].append(
                {"name": "E", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}
            )
        elif place == "ephemeralEnvFrom":
            ephemeral["envFrom"].append({"secretRef": {"name": secret}})
        elif place == "volume":
            volume({"secret": {"secretName": secret}})
        elif place == "projected":
            volume({"projected": {"sources": [{"secret": {"name": secret}}]}})
        elif place == "csi":
            volume({"csi": {"driver": "d", "nodePublishSecretRef": {"name": secret}}})
        elif place == "flex":
            volume({"flexVolume": {"driver": "d", "secretRef": {"name": secret}}})
        else:
            volume({"azureFile": {"secretName": secret, "shareName": "s"}})
    for configmap, place in draw(
        st.lists(
            st.tuples(st.sampled_from(CONFIGMAPS), st.sampled_from(CONFIGMAP_PLACES)), max_size=3
        )
    ):
        truth.configmaps.add(configmap)
        if place == "env":
            main["env"].append(
                {"name": "E", "valueFrom": {"configMapKeyRef": {"name": configmap, "key": "k"}}}
            )
        elif place == "envFrom":
            main["envFrom"].append({"configMapRef": {"name": configmap}})
        elif place == "initEnvFrom":
            init["envFrom"].append({"configMapRef": {"name": configmap}})
        elif place == "volume":
            volume({"configMap": {"name": configmap}})
        else:
            volume({"projected": {"sources": [{"configMap": {"name": configmap}}]}})
    for claim in draw(st.lists(st.sampled_from(CLAIMS), max_size=2)):
        truth.claims.add(claim)
        volume({"persistentVolumeClaim": {"claimName": claim}})
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"{namespace}-{name}"}
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "x"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, truth


@st.composite
def pvs(draw: st.DrawFn) -> tuple[dict[str, Any], PVTruth]:
    name = draw(st.sampled_from(PVS))
    claim = draw(
        st.one_of(st.none(), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(CLAIMS)))
    )
    spec: dict[str, Any] = {}
    visible: set[tuple[str, str]] = set()
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    if draw(st.booleans()):
        csi: dict[str, Any] = {"driver": "d"}
        for key in draw(
            st.lists(
                st.sampled_from(
                    (
                        "nodePublishSecretRef",
                        "nodeStageSecretRef",
                        "nodeExpandSecretRef",
                        "controllerPublishSecretRef",
                        "controllerExpandSecretRef",
                    )
                ),
                unique=True,
                max_size=3,
            )
        ):
            ref = (draw(st.sampled_from(NAMESPACES)), draw(st.sampled_from(SECRETS)))
            csi[key] = {"namespace": ref[0], "name": ref[1]}
            if key.startswith("node") and claim is not None:
                visible.add(ref)
        spec["csi"] = csi
    else:
        secret = draw(st.sampled_from(SECRETS))
        spec["flexVolume"] = {"driver": "d", "secretRef": {"name": secret}}
        if claim is not None:
            visible.add((claim[0], secret))  # no namespace: the claim's
    obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    return obj, PVTruth(claim if claim is not None and claim[1] else None, visible)


events = st.lists(
    st.one_of(
        st.tuples(st.just("apply"), pods()),
        st.tuples(st.just("apply"), pvs()),
        st.tuples(
            st.just("delete-pod"),
            st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(POD_NAMES)),
        ),
        st.tuples(st.just("delete-pv"), st.sampled_from(PVS)),
    ),
    min_size=1,
    max_size=20,
)


class Model:
    """What each node may read, from the generator's truth."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], PodTruth] = {}
        self.pvs: dict[str, PVTruth] = {}

    def readable(self, node: str) -> dict[str, set[tuple[str, str]]]:
        out: dict[str, set[tuple[str, str]]] = {
            k: set() for k in ("secrets", "configmaps", "pvcs", "pvs", "accounts")
        }
        for pod in self.pods.values():
            if pod.node != node or pod.mirror:
                continue
            ns = pod.namespace
            out["secrets"] |= {(ns, s) for s in pod.secrets}
            out["configmaps"] |= {(ns, c) for c in pod.configmaps}
            out["pvcs"] |= {(ns, c) for c in pod.claims}
            if pod.account:
                out["accounts"].add((ns, pod.account))
        for name, pv in self.pvs.items():
            if pv.claim is not None and pv.claim in out["pvcs"]:
                out["pvs"].add(("", name))
                out["secrets"] |= pv.visible
        return out


def _attrs(node: str, verb: str, resource: str, ns: str, name: str, sub: str = "") -> Attributes:
    return Attributes(
        user=f"system:node:{node}",
        groups=("system:nodes",),
        verb=verb,
        resource=resource,
        subresource=sub,
        namespace=ns,
        name=name,
    )


def check_node(authorizer: NodeAuthorizer, model: Model, node: str) -> None:
    want = model.readable(node)
    every = [(ns, n) for ns in NAMESPACES for n in (*SECRETS, *CONFIGMAPS, *ACCOUNTS, *CLAIMS)]
    for ns, name in every:
        if name in SECRETS:
            got = authorizer.authorize(_attrs(node, "get", "secrets", ns, name)).allowed
            assert got == ((ns, name) in want["secrets"]), ("secret", node, ns, name)
        elif name in CONFIGMAPS:
            got = authorizer.authorize(_attrs(node, "watch", "configmaps", ns, name)).allowed
            assert got == ((ns, name) in want["configmaps"]), ("configmap", node, ns, name)
        elif name in ACCOUNTS:
            token = _attrs(node, "create", "serviceaccounts", ns, name, "token")
            got = authorizer.authorize(token).allowed
            assert got == ((ns, name) in want["accounts"]), ("token", node, ns, name)
        else:
            got = authorizer.authorize(
                _attrs(node, "get", "persistentvolumeclaims", ns, name)
            ).allowed
            assert got == ((ns, name) in want["pvcs"]), ("pvc", node, ns, name)
    for name in PVS:
        got = authorizer.authorize(_attrs(node, "get", "persistentvolumes", "", name)).allowed
        assert got == (("", name) in want["pvs"]), ("pv", node, name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=events, threshold=st.sampled_from((1, 2, 3, 200)))
def test_nodes_read_exactly_what_their_pods_reference(stream: list[Any], threshold: int) -> None:
    store = ObjectStore()
    graph = Graph(index_threshold=threshold)
    populator = GraphPopulator(store, graph)
    authorizer = NodeAuthorizer(graph)
    model = Model()
    for kind, payload in stream:
        if kind == "apply":
            obj, truth = payload
            populator.apply(obj)
            if isinstance(truth, PodTruth):
                model.pods[(truth.namespace, obj["metadata"]["name"])] = truth
            else:
                model.pvs[obj["metadata"]["name"]] = truth
        elif kind == "delete-pod":
            namespace, name = payload
            populator.delete({"kind": "Pod", "metadata": {"name": name, "namespace": namespace}})
            model.pods.pop((namespace, name), None)
        else:
            populator.delete({"kind": "PersistentVolume", "metadata": {"name": payload}})
            model.pvs.pop(payload, None)
        assert graph.verify() == []
        for node in NODES:
            check_node(authorizer, model, node)
    # A graph rebuilt from the final objects answers the same.
    rebuilt = Graph.from_store(store, index_threshold=threshold)
    assert rebuilt.edges() == graph.edges()
    assert rebuilt.indexes() == graph.indexes()
    for node in NODES:
        want = model.readable(node)
        report = audit(store, node, graph=graph)
        assert {(s["namespace"], s["name"]) for s in report["secrets"]} == want["secrets"]
        assert {(c["namespace"], c["name"]) for c in report["configmaps"]} == want["configmaps"]
        assert {(c["namespace"], c["name"]) for c in report["persistentVolumeClaims"]} == want[
            "pvcs"
        ]
        assert {("", p["name"]) for p in report["persistentVolumes"]} == want["pvs"]
        accounts = {(a["namespace"], a["name"]) for a in report["serviceAccounts"]}
        assert accounts == want["accounts"]
