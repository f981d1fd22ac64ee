"""The Node authorizer's decisions and reasons (upstream TestNodeAuthorizer and friends).

The sample cluster is upstream's (``secret0-pod0-node0`` belongs to pod0 on node0 …, see
``nodeauth_fixtures.sample_cluster``). Each row runs with the selector gate on and off
unless it names the variant it is about.
"""

from __future__ import annotations

from typing import Any

import pytest

from credprov.nodeauth.authorizer import NodeAuthorizer, node_rules, parse_field_selector
from credprov.nodeauth.graph import Graph, GraphPopulator
from credprov.nodeauth.identity import node_identity
from credprov.nodeauth.store import ObjectStore
from credprov.nodeauth.types import Attributes, DecisionKind

from .nodeauth_fixtures import pcr, sample_cluster

NODE0 = ("system:node:node0", ("system:nodes",))
OFF = {"AuthorizeNodeWithSelectors": False}
ON = {"AuthorizeNodeWithSelectors": True}
NO_REL = "no relationship found between node 'node0' and this object"


@pytest.fixture(scope="module")
def graph() -> Graph:
    pods, pvs, attachments, slices = sample_cluster()
    graph = Graph()
    GraphPopulator(ObjectStore([*pods, *pvs, *attachments, *slices]), graph)
    return graph


def req(verb: str, resource: str, name: str = "", namespace: str = "", **kw: Any) -> Attributes:
    user, groups = kw.pop("user", NODE0)
    return Attributes(
        user=user,
        groups=groups,
        verb=verb,
        resource=resource,
        name=name,
        namespace=namespace,
        **kw,
    )


RC = {"api_group": "resource.k8s.io"}
STORAGE = {"api_group": "storage.k8s.io"}
LEASE = {"api_group": "coordination.k8s.io"}
LEASE_NS = "kube-node-lease"

# (name, request, allowed, reason, gates or None for both selector variants)
CASES: list[tuple[str, Attributes, bool, str, dict[str, bool] | None]] = [
    ("allowed configmap", req("get", "configmaps", "configmap0-pod0-node0", "ns0"), True, "", None),
    ("allowed secret via pod", req("get", "secrets", "secret0-pod0-node0", "ns0"), True, "", None),
    (
        "list allowed secret via pod",
        req("list", "secrets", "secret0-pod0-node0", "ns0"),
        True,
        "",
        None,
    ),
    (
        "watch allowed secret via pod",
        req("watch", "secrets", "secret0-pod0-node0", "ns0"),
        True,
        "",
        None,
    ),
    (
        "disallowed list many secrets",
        req("list", "secrets", "", "ns0"),
        False,
        "No Object name found",
        None,
    ),
    (
        "disallowed watch many secrets",
        req("watch", "secrets", "", "ns0"),
        False,
        "No Object name found",
        None,
    ),
    (
        "disallowed list secrets from all namespaces with name",
        req("list", "secrets", "secret0-pod0-node0", ""),
        False,
        "can only read namespaced object of this type",
        None,
    ),
    (
        "disallowed secret write",
        req("update", "secrets", "secret0-pod0-node0", "ns0"),
        False,
        "can only read resources of this type",
        None,
    ),
    (
        "disallowed secret subresource",
        req("get", "secrets", "secret0-pod0-node0", "ns0", subresource="x"),
        False,
        "cannot read subresource",
        None,
    ),
    (
        "allowed shared secret via pod",
        req("get", "secrets", "secret0-shared", "ns0"),
        True,
        "",
        None,
    ),
    (
        "allowed shared secret via pvc",
        req("get", "secrets", "secret-pv0-pod0-node0-ns0", "ns0"),
        True,
        "",
        None,
    ),
    ("allowed pvc", req("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0"), True, "", None),
    (
        "allowed resource claim",
        req("get", "resourceclaims", "claim0-pod0-node0-ns0", "ns0", **RC),
        True,
        "",
        None,
    ),
    (
        "allowed resource claim with template",
        req("get", "resourceclaims", "generated-claim-pod0-node0-ns0-0", "ns0", **RC),
        True,
        "",
        None,
    ),
    ("allowed pv", req("get", "persistentvolumes", "pv0-pod0-node0-ns0"), True, "", None),
    (
        "disallowed configmap",
        req("get", "configmaps", "configmap0-pod0-node1", "ns0"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed secret via pod",
        req("get", "secrets", "secret0-pod0-node1", "ns0"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed shared secret via pvc",
        req("get", "secrets", "secret-pv0-pod0-node1-ns0", "ns0"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed pvc",
        req("get", "persistentvolumeclaims", "pvc0-pod0-node1", "ns0"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed pvc list",
        req("list", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0"),
        False,
        "can only get individual resources of this type",
        None,
    ),
    (
        "disallowed pvc subresource",
        req("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0", subresource="x"),
        False,
        "cannot get subresource",
        None,
    ),
    (
        "allowed pvc status update",
        req("update", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0", subresource="status"),
        True,
        "",
        None,
    ),
    (
        "disallowed pvc status get",
        req("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0", subresource="status"),
        False,
        "can only get/update/patch this type",
        None,
    ),
    (
        "disallowed unrelated pvc status patch",
        req("patch", "persistentvolumeclaims", "pvc0-pod0-node1", "ns0", subresource="status"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed resource claim, other node",
        req("get", "resourceclaims", "claim0-pod0-node1-ns0", "ns0", **RC),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed resource claim with template",
        req("get", "resourceclaims", "pod0-node1-claimtemplate0", "ns0", **RC),
        False,
        NO_REL,
        None,
    ),
    ("disallowed pv", req("get", "persistentvolumes", "pv0-pod0-node1-ns0"), False, NO_REL, None),
    (
        "allowed attachment",
        req("get", "volumeattachments", "attachment0-node0", **STORAGE),
        True,
        "",
        None,
    ),
    (
        "disallowed attachment - no relationship",
        req("get", "volumeattachments", "attachment0-node1", **STORAGE),
        False,
        NO_REL,
        None,
    ),
    (
        "allowed svcacct token create",
        req("create", "serviceaccounts", "svcacct0-node0", "ns0", subresource="token"),
        True,
        "",
        None,
    ),
    (
        "disallowed svcacct token create - not attached to node",
        req("create", "serviceaccounts", "svcacct0-node1", "ns0", subresource="token"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed svcacct token create - no subresource",
        req("create", "serviceaccounts", "svcacct0-node0", "ns0"),
        False,
        "can only create token subresource of serviceaccount",
        None,
    ),
    (
        "disallowed svcacct token create - non create",
        req("update", "serviceaccounts", "svcacct0-node0", "ns0", subresource="token"),
        False,
        "can only create tokens for individual service accounts",
        None,
    ),
    (
        "disallowed svcacct token create - no name",
        req("create", "serviceaccounts", "", "ns0", subresource="token"),
        False,
        "can only create tokens for individual service accounts",
        None,
    ),
    (
        "allowed svcacct get (KEP-4412)",
        req("get", "serviceaccounts", "svcacct0-node0", "ns0"),
        True,
        "",
        None,
    ),
    (
        "disallowed svcacct get - not attached",
        req("get", "serviceaccounts", "svcacct0-node1", "ns0"),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed svcacct get - gate off",
        req("get", "serviceaccounts", "svcacct0-node0", "ns0"),
        False,
        "not allowed to get service accounts",
        {"KubeletServiceAccountTokenForCredentialProviders": False},
    ),
    (
        "svcacct get - PodCertificateRequest gate suffices",
        req("get", "serviceaccounts", "svcacct0-node0", "ns0"),
        True,
        "",
        {"KubeletServiceAccountTokenForCredentialProviders": False, "PodCertificateRequest": True},
    ),
    (
        "disallowed svcacct get - no namespace",
        req("get", "serviceaccounts", "svcacct0-node0"),
        False,
        "can only read namespaced object of this type",
        None,
    ),
    (
        "disallowed svcacct list",
        req("list", "serviceaccounts", "", "ns0"),
        False,
        "can only create tokens for individual service accounts",
        None,
    ),
    # leases
    (
        "disallowed get lease in other namespace",
        req("get", "leases", "node0", "foo", **LEASE),
        False,
        'can only access leases in the "kube-node-lease" system namespace',
        None,
    ),
    (
        "disallowed create lease in other namespace",
        req("create", "leases", "node0", "foo", **LEASE),
        False,
        'can only access leases in the "kube-node-lease" system namespace',
        None,
    ),
    (
        "disallowed get another node's lease",
        req("get", "leases", "node1", LEASE_NS, **LEASE),
        False,
        "can only access node lease with the same name as the requesting node",
        None,
    ),
    (
        "disallowed delete another node's lease",
        req("delete", "leases", "node1", LEASE_NS, **LEASE),
        False,
        "can only access node lease with the same name as the requesting node",
        None,
    ),
    (
        "disallowed list node leases",
        req("list", "leases", "", LEASE_NS, **LEASE),
        False,
        "can only get, create, update, patch, or delete a node lease",
        None,
    ),
    (
        "disallowed watch node leases",
        req("watch", "leases", "", LEASE_NS, **LEASE),
        False,
        "can only get, create, update, patch, or delete a node lease",
        None,
    ),
    ("allowed get node lease", req("get", "leases", "node0", LEASE_NS, **LEASE), True, "", None),
    (
        "allowed create node lease",
        req("create", "leases", "node0", LEASE_NS, **LEASE),
        True,
        "",
        None,
    ),
    (
        "allowed create lease without name",
        req("create", "leases", "", LEASE_NS, **LEASE),
        True,
        "",
        None,
    ),
    (
        "allowed update node lease",
        req("update", "leases", "node0", LEASE_NS, **LEASE),
        True,
        "",
        None,
    ),
    (
        "allowed patch node lease",
        req("patch", "leases", "node0", LEASE_NS, **LEASE),
        True,
        "",
        None,
    ),
    (
        "allowed delete node lease",
        req("delete", "leases", "node0", LEASE_NS, **LEASE),
        True,
        "",
        None,
    ),
    # CSINodes
    (
        "disallowed CSINode with subresource",
        req("get", "csinodes", "node0", subresource="csiDrivers", **STORAGE),
        False,
        "cannot authorize CSINode subresources",
        None,
    ),
    (
        "disallowed get another node's CSINode",
        req("get", "csinodes", "node1", **STORAGE),
        False,
        "can only access CSINode with the same name as the requesting node",
        None,
    ),
    (
        "disallowed patch another node's CSINode",
        req("patch", "csinodes", "node1", **STORAGE),
        False,
        "can only access CSINode with the same name as the requesting node",
        None,
    ),
    (
        "disallowed list CSINodes",
        req("list", "csinodes", **STORAGE),
        False,
        "can only get, create, update, patch, or delete a CSINode",
        None,
    ),
    ("allowed get CSINode", req("get", "csinodes", "node0", **STORAGE), True, "", None),
    ("allowed create CSINode", req("create", "csinodes", "node0", **STORAGE), True, "", None),
    ("allowed delete CSINode", req("delete", "csinodes", "node0", **STORAGE), True, "", None),
    # ResourceSlices
    (
        "disallowed ResourceSlice with subresource",
        req("get", "resourceslices", "slice0-node0", subresource="status", **RC),
        False,
        "cannot authorize ResourceSlice subresources",
        None,
    ),
    (
        "disallowed get another node's ResourceSlice",
        req("get", "resourceslices", "slice0-node1", **RC),
        False,
        NO_REL,
        None,
    ),
    (
        "disallowed delete another node's ResourceSlice",
        req("delete", "resourceslices", "slice0-node1", **RC),
        False,
        NO_REL,
        None,
    ),
    (
        "allowed filtered list ResourceSlices",
        req("list", "resourceslices", field_selector="spec.nodeName==node0", **RC),
        True,
        "",
        None,
    ),
    (
        "allowed filtered watch ResourceSlices",
        req("watch", "resourceslices", field_selector="spec.nodeName=node0", **RC),
        True,
        "",
        None,
    ),
    (
        "allowed filtered deletecollection ResourceSlices",
        req("deletecollection", "resourceslices", field_selector="spec.nodeName=node0", **RC),
        True,
        "",
        None,
    ),
    (
        "disallowed other node's ResourceSlices",
        req("list", "resourceslices", field_selector="spec.nodeName=node1", **RC),
        False,
        "can only list/watch/deletecollection resourceslices with nodeName field selector",
        ON,
    ),
    (
        "disallowed != selector",
        req("list", "resourceslices", field_selector="spec.nodeName!=node0", **RC),
        False,
        "can only list/watch/deletecollection resourceslices with nodeName field selector",
        ON,
    ),
    (
        "allowed unfiltered list ResourceSlices - selector authz disabled",
        req("list", "resourceslices", **RC),
        True,
        "",
        OFF,
    ),
    (
        "disallowed unfiltered list ResourceSlices - selector authz enabled",
        req("list", "resourceslices", **RC),
        False,
        "can only list/watch/deletecollection resourceslices with nodeName field selector",
        ON,
    ),
    (
        "allowed unfiltered watch ResourceSlices - selector authz disabled",
        req("watch", "resourceslices", **RC),
        True,
        "",
        OFF,
    ),
    (
        "disallowed unfiltered watch ResourceSlices - selector authz enabled",
        req("watch", "resourceslices", **RC),
        False,
        "can only list/watch/deletecollection resourceslices with nodeName field selector",
        ON,
    ),
    (
        "allowed get ResourceSlice",
        req("get", "resourceslices", "slice0-node0", **RC),
        True,
        "",
        None,
    ),
    (
        "allowed create ResourceSlice",
        req("create", "resourceslices", "slice0-node0", **RC),
        True,
        "",
        None,
    ),
    (
        "allowed update ResourceSlice",
        req("update", "resourceslices", "slice0-node0", **RC),
        True,
        "",
        None,
    ),
    (
        "allowed delete ResourceSlice",
        req("delete", "resourceslices", "slice0-node0", **RC),
        True,
        "",
        None,
    ),
    (
        "disallowed ResourceSlice verb",
        req("escalate", "resourceslices", "slice0-node0", **RC),
        False,
        "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
        None,
    ),
    # pods
    ("get related pod", req("get", "pods", "pod0-node0", "ns0"), True, "", None),
    (
        "get unrelated pod - selector disabled",
        req("get", "pods", "pod0-node1", "ns0"),
        True,
        "",
        OFF,
    ),
    (
        "get unrelated pod - selector enabled",
        req("get", "pods", "pod0-node1", "ns0"),
        False,
        NO_REL,
        ON,
    ),
    (
        "list related pods",
        req("list", "pods", field_selector="spec.nodeName=node0"),
        True,
        "",
        None,
    ),
    (
        "list related pods - alternate selector",
        req("list", "pods", field_selector="spec.nodeName==node0"),
        True,
        "",
        None,
    ),
    (
        "list related pods - among other requirements",
        req("list", "pods", field_selector="metadata.namespace=ns0,spec.nodeName=node0"),
        True,
        "",
        None,
    ),
    ("list single related pod", req("list", "pods", "pod0-node0", "ns0"), True, "", None),
    ("list unrelated pods - selector disabled", req("list", "pods"), True, "", OFF),
    (
        "list unrelated pods - selector enabled",
        req("list", "pods"),
        False,
        "can only list/watch pods with spec.nodeName field selector",
        ON,
    ),
    (
        "list other node's pods - selector enabled",
        req("list", "pods", field_selector="spec.nodeName=node1"),
        False,
        "can only list/watch pods with spec.nodeName field selector",
        ON,
    ),
    (
        "watch related pods",
        req("watch", "pods", field_selector="spec.nodeName=node0"),
        True,
        "",
        None,
    ),
    ("watch single related pod", req("watch", "pods", "pod0-node0", "ns0"), True, "", None),
    ("watch unrelated pods - selector disabled", req("watch", "pods"), True, "", OFF),
    (
        "watch unrelated pods - selector enabled",
        req("watch", "pods"),
        False,
        "can only list/watch pods with spec.nodeName field selector",
        ON,
    ),
    ("create unnamed pod", req("create", "pods", "", "ns0"), True, "", None),
    (
        "create pod proxy subresource forbidden",
        req("create", "pods", "", "ns0", subresource="proxy"),
        False,
        "",
        None,
    ),
    ("delete related pod", req("delete", "pods", "pod0-node0", "ns0"), True, "", None),
    ("delete unrelated pod", req("delete", "pods", "pod0-node1", "ns0"), True, "", None),
    (
        "delete pod proxy subresource forbidden",
        req("delete", "pods", "pod0-node0", "ns0", subresource="proxy"),
        False,
        "",
        None,
    ),
    (
        "update related pod status",
        req("update", "pods", "pod0-node0", "ns0", subresource="status"),
        True,
        "",
        None,
    ),
    (
        "update unrelated pod status",
        req("update", "pods", "pod0-node1", "ns0", subresource="status"),
        True,
        "",
        None,
    ),
    (
        "patch unrelated pod status",
        req("patch", "pods", "pod0-node1", "ns0", subresource="status"),
        True,
        "",
        None,
    ),
    (
        "get pod status",
        req("get", "pods", "pod0-node0", "ns0", subresource="status"),
        False,
        "",
        None,
    ),
    (
        "create related pod eviction",
        req("create", "pods", "pod0-node0", "ns0", subresource="eviction"),
        True,
        "",
        None,
    ),
    (
        "create unrelated pod eviction",
        req("create", "pods", "pod0-node1", "ns0", subresource="eviction"),
        True,
        "",
        None,
    ),
    # nodes
    (
        "get related unregistered node",
        req(
            "get",
            "nodes",
            "nodeunregistered",
            user=("system:node:nodeunregistered", ("system:nodes",)),
        ),
        True,
        "",
        None,
    ),
    ("get related node", req("get", "nodes", "node0"), True, "", None),
    ("get unrelated node - selector disabled", req("get", "nodes", "node1"), True, "", OFF),
    (
        "get unrelated node - selector enabled",
        req("get", "nodes", "node1"),
        False,
        "node 'node0' cannot read 'node1', only its own Node object",
        ON,
    ),
    ("list single related node", req("list", "nodes", "node0"), True, "", None),
    (
        "list single unrelated node - selector disabled",
        req("list", "nodes", "node1"),
        True,
        "",
        OFF,
    ),
    (
        "list single unrelated node - selector enabled",
        req("list", "nodes", "node1"),
        False,
        "node 'node0' cannot read 'node1', only its own Node object",
        ON,
    ),
    ("list all nodes - selector disabled", req("list", "nodes"), True, "", OFF),
    (
        "list all nodes - selector enabled",
        req("list", "nodes"),
        False,
        "node 'node0' cannot read all nodes, only its own Node object",
        ON,
    ),
    ("watch single related node", req("watch", "nodes", "node0"), True, "", None),
    (
        "watch all nodes - selector enabled",
        req("watch", "nodes"),
        False,
        "node 'node0' cannot read all nodes, only its own Node object",
        ON,
    ),
    ("create node", req("create", "nodes"), True, "", None),
    ("update unrelated node", req("update", "nodes", "node1"), True, "", None),
    ("patch unrelated node", req("patch", "nodes", "node1"), True, "", None),
    (
        "update unrelated node status",
        req("update", "nodes", "node1", subresource="status"),
        True,
        "",
        None,
    ),
    (
        "patch related node status",
        req("patch", "nodes", "node0", subresource="status"),
        True,
        "",
        None,
    ),
    ("delete own node", req("delete", "nodes", "node0"), False, "", None),
    ("get node status", req("get", "nodes", "node0", subresource="status"), False, "", ON),
    # the system:node rules for everything else
    ("list services", req("list", "services"), True, "", None),
    ("get endpoints", req("get", "endpoints", "ep", "ns0"), True, "", None),
    ("list endpoints", req("list", "endpoints"), False, "", None),
    ("create events", req("create", "events", namespace="ns0"), True, "", None),
    (
        "create events.k8s.io events",
        req("create", "events", namespace="ns0", api_group="events.k8s.io"),
        True,
        "",
        None,
    ),
    ("delete events", req("delete", "events", "e", "ns0"), False, "", None),
    (
        "create tokenreviews",
        req("create", "tokenreviews", api_group="authentication.k8s.io"),
        True,
        "",
        None,
    ),
    (
        "create subjectaccessreviews",
        req("create", "subjectaccessreviews", api_group="authorization.k8s.io"),
        True,
        "",
        None,
    ),
    ("list csidrivers", req("list", "csidrivers", **STORAGE), True, "", None),
    (
        "watch runtimeclasses",
        req("watch", "runtimeclasses", api_group="node.k8s.io"),
        True,
        "",
        None,
    ),
    (
        "create CSRs",
        req("create", "certificatesigningrequests", api_group="certificates.k8s.io"),
        True,
        "",
        None,
    ),
    (
        "clustertrustbundles off by default",
        req("list", "clustertrustbundles", api_group="certificates.k8s.io"),
        False,
        "",
        None,
    ),
    (
        "clustertrustbundles with the projection gate",
        req("list", "clustertrustbundles", api_group="certificates.k8s.io"),
        True,
        "",
        {"ClusterTrustBundleProjection": True},
    ),
    (
        "secrets in another API group are not secrets",
        req("get", "secrets", "secret0-pod0-node1", "ns0", api_group="example.com"),
        False,
        "",
        None,
    ),
    ("list deployments", req("list", "deployments", api_group="apps"), False, "", None),
    ("non-resource URL", req("get", "", resource_request=False, path="/healthz"), False, "", None),
    # identities
    (
        "not a node: no group",
        req("get", "secrets", "secret0-pod0-node0", "ns0", user=("system:node:node0", ())),
        False,
        "",
        None,
    ),
    (
        "not a node: wrong prefix",
        req("list", "services", user=("node0", ("system:nodes",))),
        False,
        "",
        None,
    ),
    (
        "unknown node",
        req(
            "get", "secrets", "secret0-pod0-node0", "ns0", user=("system:node:", ("system:nodes",))
        ),
        False,
        'unknown node for user "system:node:"',
        None,
    ),
    (
        "unknown node that would be in the graph",
        req(
            "get", "secrets", "secret0-shared", "ns0", user=("system:node:nodeX", ("system:nodes",))
        ),
        False,
        "no relationship found between node 'nodeX' and this object",
        None,
    ),
]


def _variants(gates: dict[str, bool] | None) -> list[dict[str, bool]]:
    return [OFF, ON] if gates is None else [gates]


@pytest.mark.parametrize(
    ("attrs", "allowed", "reason", "gates"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decisions(
    graph: Graph, attrs: Attributes, allowed: bool, reason: str, gates: dict[str, bool] | None
) -> None:
    for variant in _variants(gates):
        decision = NodeAuthorizer(graph, variant).authorize(attrs)
        assert decision.kind is (DecisionKind.ALLOW if allowed else DecisionKind.NO_OPINION)
        assert decision.reason == reason, variant


def test_never_denies(graph: Graph) -> None:
    authorizer = NodeAuthorizer(graph)
    for _, attrs, *_ in CASES:
        assert authorizer.authorize(attrs).kind is not DecisionKind.DENY


def test_pod_certificate_requests() -> None:
    store = ObjectStore(
        [pcr("ns0", "pcr0", "pod0", "sa", "node0"), pcr("ns0", "pcr1", "p", "sa", "node1")]
    )
    graph = Graph.from_store(store)
    group = {"api_group": "certificates.k8s.io"}
    on = NodeAuthorizer(graph, {"PodCertificateRequest": True})
    off = NodeAuthorizer(graph)
    table = [
        (req("get", "podcertificaterequests", "pcr0", "ns0", **group), True, ""),
        (req("get", "podcertificaterequests", "pcr1", "ns0", **group), False, NO_REL),
        (req("create", "podcertificaterequests", "", "ns0", **group), True, ""),
        (
            req("list", "podcertificaterequests", field_selector="spec.nodeName=node0", **group),
            True,
            "",
        ),
        (
            req("list", "podcertificaterequests", **group),
            False,
            "can only list/watch podcertificaterequests with nodeName field selector",
        ),
        (
            req("update", "podcertificaterequests", "pcr0", "ns0", subresource="status", **group),
            False,
            "nodes may not access the status subresource of PodCertificateRequests",
        ),
        (
            req("delete", "podcertificaterequests", "pcr0", "ns0", **group),
            False,
            "nodes may not delete podcertificaterequests",
        ),
    ]
    for attrs, allowed, reason in table:
        decision = on.authorize(attrs)
        assert (decision.allowed, decision.reason) == (allowed, reason), attrs
        assert not off.authorize(attrs).allowed  # gate off: no static rule either


def test_unknown_gates_are_ignored(graph: Graph) -> None:
    authorizer = NodeAuthorizer(graph, {"ServiceAccountNodeAudienceRestriction": False})
    assert "ServiceAccountNodeAudienceRestriction" not in authorizer.feature_gates


def test_explain(graph: Graph) -> None:
    authorizer = NodeAuthorizer(graph)
    allowed = authorizer.explain(req("get", "secrets", "secret-pv0-pod0-node0-ns0", "ns0"))
    assert allowed.route == "graph"
    assert allowed.path == (
        "secret:ns0/secret-pv0-pod0-node0-ns0",
        "pv:pv0-pod0-node0-ns0",
        "pvc:ns0/pvc0-pod0-node0",
        "pod:ns0/pod0-node0",
        "node:node0",
    )
    refused = authorizer.explain(req("get", "secrets", "secret0-pod0-node1", "ns0"))
    assert refused.route == "graph" and refused.path == ()
    assert "no relationship to this object was found" in refused.detail
    rule = authorizer.explain(req("list", "services"))
    assert rule.route == "node-rules"
    assert rule.rule == {
        "verbs": ["get", "list", "watch"],
        "apiGroups": [""],
        "resources": ["services"],
    }
    lease = authorizer.explain(req("get", "leases", "node0", LEASE_NS, **LEASE))
    assert lease.route == "node-authorizer" and lease.decision.allowed
    stranger = authorizer.explain(req("get", "secrets", "x", "ns0", user=("alice", ())))
    assert stranger.route == "not-a-node"


@pytest.mark.parametrize(
    ("user", "groups", "expected"),
    [
        ("", (), ("", False)),
        ("system:node:foo", (), ("", False)),
        ("foo", ("system:nodes",), ("", False)),
        ("system:node:foo", ("system:nodes",), ("foo", True)),
        ("system:node:", ("system:nodes",), ("", True)),
        ("system:node:a:b", ("system:authenticated", "system:nodes"), ("a:b", True)),
        ("System:node:foo", ("system:nodes",), ("", False)),
    ],
)
def test_node_identity(user: str, groups: tuple[str, ...], expected: tuple[str, bool]) -> None:
    assert node_identity(user, groups) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", []),
        ("spec.nodeName=n", [("spec.nodeName", "=", "n")]),
        ("spec.nodeName==n", [("spec.nodeName", "=", "n")]),
        ("spec.nodeName!=n", [("spec.nodeName", "!=", "n")]),
        ("a=1,b==2", [("a", "=", "1"), ("b", "=", "2")]),
        (r"a=x\,y", [("a", "=", "x,y")]),
        ("a=", [("a", "=", "")]),
        ("nonsense", None),
        (r"a=bad\escape", None),
    ],
)
def test_parse_field_selector(selector: str, expected: list[tuple[str, str, str]] | None) -> None:
    assert parse_field_selector(selector) == expected


def test_node_rules_follow_gates() -> None:
    default = node_rules()
    resources = {r for rule in default for r in rule["resources"]}
    assert "serviceaccounts" in resources and "resourceclaims" in resources
    assert "clustertrustbundles" not in resources and "podcertificaterequests" not in resources
    off = node_rules(
        {
            "KubeletServiceAccountTokenForCredentialProviders": False,
            "DynamicResourceAllocation": False,
        }
    )
    off_resources = {r for rule in off for r in rule["resources"]}
    assert "serviceaccounts" not in off_resources and "resourceclaims" not in off_resources
