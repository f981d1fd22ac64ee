"""NodeRestriction: node identity, pods, nodes, PVC status, leases, CSINodes, ResourceSlices.

Tables of named cases after upstream's admission_test, with the exact upstream messages
(``AdmissionError.message``) and reasons. Token requests are in test_admission_tokens.py,
CSRs and PodCertificateRequests in test_admission_certs.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from credprov.nodeauth.admission import (
    FEATURE_GATE_DEFAULTS,
    AdmissionError,
    AdmissionRequest,
    NodeRestriction,
)
from tests.conftest import CANARY
from tests.unit.nodeauth.admission_fixtures import (
    MIRROR,
    NODE,
    Objects,
    forbidden,
    node,
    outcome,
    pod,
    request,
    with_changes,
)

Q = '"mynode"'

MY_MIRROR = pod("mymirrorpod", mirror=True)
OTHER_MIRROR = pod("othermirrorpod", "othernode", mirror=True)
UNBOUND_MIRROR = pod("unboundmirrorpod", "", mirror=True)
MY_POD = pod("mypod")
OTHER_POD = pod("otherpod", "othernode")
UNBOUND_POD = pod("unboundpod", "")

OBJECTS = Objects([node(), MY_MIRROR, OTHER_MIRROR, UNBOUND_MIRROR, MY_POD, OTHER_POD, UNBOUND_POD])


def plugin(objects: Objects = OBJECTS, **gates: bool) -> NodeRestriction:
    return NodeRestriction(objects, feature_gates=gates)


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}


def create_pod(obj: dict[str, Any]) -> AdmissionRequest:
    return request("CREATE", "pods", obj=obj, namespace="ns", name=obj["metadata"]["name"])


# -- node identity and what is not checked ---------------------------------------------------


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(
            request("CREATE", "pods", obj=UNBOUND_POD, user="system:node:", namespace="ns"),
            forbidden('could not determine node from user "system:node:"'),
            id="node user without a name",
        ),
        pytest.param(
            request("CREATE", "pods", obj=UNBOUND_POD, user="bob", groups=()),
            None,
            id="non-node user creates an unbound pod",
        ),
        pytest.param(
            request("CREATE", "pods", obj=UNBOUND_POD, groups=("system:authenticated",)),
            None,
            id="node name without the system:nodes group is not a node",
        ),
        pytest.param(
            request("CREATE", "pods", obj=UNBOUND_POD, user="mynode"),
            None,
            id="system:nodes group without the name prefix is not a node",
        ),
        pytest.param(
            request("DELETE", "pods", name="otherpod", namespace="ns", user="bob", groups=()),
            None,
            id="non-node user deletes another node's pod",
        ),
        pytest.param(
            request("CONNECT", "pods", name="otherpod", namespace="ns", subresource="exec"),
            None,
            id="connect is not handled",
        ),
        pytest.param(
            request("CREATE", "configmaps", obj={"kind": "ConfigMap"}, name="cm", namespace="x"),
            None,
            id="create of an unrelated object",
        ),
        pytest.param(
            request("DELETE", "configmaps", name="cm", namespace="x"),
            None,
            id="delete of an unrelated object",
        ),
        pytest.param(
            request("CREATE", "pods", obj=MY_MIRROR, group="example.com", name="x"),
            None,
            id="same resource name in another group",
        ),
    ],
)
def test_identity_and_unchecked(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


# -- pods ------------------------------------------------------------------------------------

UNEXPECTED_UPDATE = forbidden(
    f'unexpected operation "UPDATE", node {Q} can only create and delete mirror pods'
)


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(create_pod(MY_MIRROR), None, id="create mirror pod bound to self"),
        pytest.param(
            request("UPDATE", "pods", obj=MY_MIRROR, old=MY_MIRROR, name="mymirrorpod"),
            UNEXPECTED_UPDATE,
            id="update mirror pod bound to self",
        ),
        pytest.param(
            request("DELETE", "pods", name="mymirrorpod", namespace="ns"),
            None,
            id="delete mirror pod bound to self",
        ),
        pytest.param(
            request("DELETE", "pods", name="mypod", namespace="ns"),
            None,
            id="delete normal pod bound to self",
        ),
        pytest.param(
            create_pod(OTHER_MIRROR),
            forbidden(f"node {Q} can only create pods with spec.nodeName set to itself"),
            id="create mirror pod bound to another node",
        ),
        pytest.param(
            create_pod(UNBOUND_MIRROR),
            forbidden(f"node {Q} can only create pods with spec.nodeName set to itself"),
            id="create unbound mirror pod",
        ),
        pytest.param(
            request("UPDATE", "pods", obj=OTHER_MIRROR, old=OTHER_MIRROR, name="othermirrorpod"),
            UNEXPECTED_UPDATE,
            id="update mirror pod bound to another node",
        ),
        pytest.param(
            request("DELETE", "pods", name="othermirrorpod", namespace="ns"),
            forbidden(f"node {Q} can only delete pods with spec.nodeName set to itself"),
            id="delete mirror pod bound to another node",
        ),
        pytest.param(
            request("DELETE", "pods", name="otherpod", namespace="ns"),
            forbidden(f"node {Q} can only delete pods with spec.nodeName set to itself"),
            id="delete normal pod bound to another node",
        ),
        pytest.param(
            request("DELETE", "pods", name="unboundpod", namespace="ns"),
            forbidden(f"node {Q} can only delete pods with spec.nodeName set to itself"),
            id="delete unbound pod",
        ),
        pytest.param(
            request("DELETE", "pods", name="nopod", namespace="ns"),
            ("NotFound", 'pod "nopod" not found'),
            id="delete a pod that does not exist",
        ),
        pytest.param(
            create_pod(MY_POD),
            forbidden(
                f'pod does not have "{MIRROR}" annotation, node {Q} can only create mirror pods'
            ),
            id="create normal pod bound to self",
        ),
        pytest.param(
            create_pod(OTHER_POD),
            forbidden(
                f'pod does not have "{MIRROR}" annotation, node {Q} can only create mirror pods'
            ),
            id="create normal pod bound to another node",
        ),
        pytest.param(
            request("CREATE", "pods", obj=None, name="x", namespace="ns"),
            forbidden("unexpected type <nil>"),
            id="create without an object",
        ),
        pytest.param(
            request("CREATE", "pods", obj={"kind": "Secret"}, name="x", namespace="ns"),
            forbidden("unexpected type Secret"),
            id="create with an object of another kind",
        ),
        pytest.param(
            request("CREATE", "pods", obj=MY_POD, name="mypod", subresource="binding"),
            forbidden(
                "unexpected pod subresource \"binding\", only 'status' and 'eviction' are allowed"
            ),
            id="other pod subresource",
        ),
    ],
)
def test_pods(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


VALID_OWNER = {
    "apiVersion": "v1",
    "kind": "Node",
    "name": NODE,
    "uid": "mynode-uid",
    "controller": True,
}


def owned_by(*owners: dict[str, Any]) -> dict[str, Any]:
    return with_changes(MY_MIRROR, "metadata.ownerReferences", list(owners))


@pytest.mark.parametrize(
    ("obj", "objects", "expected"),
    [
        pytest.param(owned_by(VALID_OWNER), OBJECTS, None, id="valid owner"),
        pytest.param(
            with_changes(MY_MIRROR, "metadata.ownerReferences", None),
            OBJECTS,
            forbidden(f"node {Q} can only create pods with an owner reference set to itself"),
            id="no owner",
        ),
        pytest.param(
            owned_by(VALID_OWNER, VALID_OWNER),
            OBJECTS,
            forbidden(f"node {Q} can only create pods with a single owner reference set to itself"),
            id="duplicate owner",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "name": "other"}),
            OBJECTS,
            forbidden(f"node {Q} can only create pods with an owner reference set to itself"),
            id="invalid name",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "kind": "Pod"}),
            OBJECTS,
            forbidden(f"node {Q} can only create pods with an owner reference set to itself"),
            id="invalid kind",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "apiVersion": "v2"}),
            OBJECTS,
            forbidden(f"node {Q} can only create pods with an owner reference set to itself"),
            id="invalid API version",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "controller": None}),
            OBJECTS,
            forbidden(
                f"node {Q} can only create pods with a controller owner reference set to itself"
            ),
            id="nil controller",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "controller": False}),
            OBJECTS,
            forbidden(
                f"node {Q} can only create pods with a controller owner reference set to itself"
            ),
            id="false controller",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "blockOwnerDeletion": True}),
            OBJECTS,
            forbidden(f"node {Q} must not set blockOwnerDeletion on an owner reference"),
            id="blockOwnerDeletion true",
        ),
        pytest.param(
            owned_by({**VALID_OWNER, "blockOwnerDeletion": False}),
            OBJECTS,
            None,
            id="blockOwnerDeletion false",
        ),
        pytest.param(
            owned_by(VALID_OWNER),
            Objects([node(uid="mynode-unexpected-uid")]),
            forbidden("node mynode UID mismatch: expected mynode-uid got mynode-unexpected-uid"),
            id="invalid UID",
        ),
        pytest.param(
            owned_by(VALID_OWNER),
            Objects([]),
            ("NotFound", 'node "mynode" not found'),
            id="node not found",
        ),
    ],
)
def test_mirror_pod_owner_reference(
    obj: dict[str, Any], objects: Objects, expected: tuple[str, str] | None
) -> None:
    assert outcome(plugin(objects), create_pod(obj)) == expected


def _vol(name: str = "v", **source: Any) -> dict[str, Any]:
    return {"name": name, **source}


def _projected(*sources: dict[str, Any], name: str = "p") -> dict[str, Any]:
    return _vol(name, projected={"sources": list(sources)})


def mirror_with(**spec: Any) -> dict[str, Any]:
    return pod("mymirrorpod", mirror=True, **spec)


def refs(what: str) -> tuple[str, str]:
    return forbidden(f"node {Q} can not create pods that reference {what}")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"serviceAccountName": "foo"}, refs("serviceaccounts"), id="service account"),
        pytest.param(
            {"imagePullSecrets": [{"name": "pull"}]}, refs("secrets"), id="image pull secret"
        ),
        pytest.param({"imagePullSecrets": [{"name": ""}]}, None, id="empty pull secret name"),
        pytest.param(
            {
                "initContainers": [
                    {
                        "name": "i",
                        "env": [
                            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                        ],
                    }
                ]
            },
            refs("secrets"),
            id="init container env secret",
        ),
        pytest.param(
            {"ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "s"}}]}]},
            refs("secrets"),
            id="ephemeral container envFrom secret",
        ),
        pytest.param(
            {"volumes": [_vol(secret={"secretName": "foo"})]}, refs("secrets"), id="secret volume"
        ),
        pytest.param(
            {"volumes": [_vol(secret={})]},
            refs("secrets (via secret volumes)"),
            id="secret volume without a name",
        ),
        pytest.param(
            {"volumes": [_vol(flexVolume={"driver": "d", "secretRef": {"name": "s"}})]},
            refs("secrets"),
            id="flexVolume with a secretRef",
        ),
        pytest.param(
            {"volumes": [_vol(csi={"driver": "d", "nodePublishSecretRef": {"name": "s"}})]},
            refs("secrets"),
            id="csi volume with a publish secret",
        ),
        pytest.param(
            {"volumes": [_vol(azureFile={"secretName": "s", "shareName": "x"})]},
            refs("secrets"),
            id="azureFile volume",
        ),
        pytest.param(
            {"volumes": [_vol(azureFile={"shareName": "x"})]},
            refs("secrets (via azureFile volumes)"),
            id="azureFile volume without a secret name",
        ),
        pytest.param(
            {"volumes": [_projected({"secret": {"name": "s"}})]},
            refs("secrets"),
            id="projected secret",
        ),
        pytest.param(
            {"volumes": [_projected({"secret": {}})]},
            refs("secrets (via projected volumes)"),
            id="projected secret without a name",
        ),
        pytest.param(
            {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}}]}]},
            refs("configmaps"),
            id="container envFrom config map",
        ),
        pytest.param(
            {"volumes": [_vol(configMap={"name": "foo"})]},
            refs("configmaps"),
            id="config map volume",
        ),
        pytest.param(
            {"volumes": [_vol(configMap={})]},
            refs("configmaps (via configmap volumes)"),
            id="config map volume without a name",
        ),
        pytest.param(
            {"volumes": [_projected({"configMap": {}})]},
            refs("configmaps (via projected volumes)"),
            id="projected config map without a name",
        ),
        pytest.param(
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
            refs("resourceclaims"),
            id="resource claim",
        ),
        pytest.param(
            {"volumes": [_vol(csi={"driver": "d"})]},
            refs("csidrivers (via CSI volumes)"),
            id="csi volume",
        ),
        pytest.param(
            {"volumes": [_vol(glusterfs={"endpoints": "e", "path": "p"})]},
            refs("endpoints (via glusterFS volumes)"),
            id="glusterfs volume",
        ),
        pytest.param(
            {"volumes": [_vol(persistentVolumeClaim={"claimName": "foo"})]},
            refs("persistentvolumeclaims"),
            id="persistent volume claim",
        ),
        pytest.param(
            {"volumes": [_vol(ephemeral={"volumeClaimTemplate": {}})]},
            refs("persistentvolumeclaims (via ephemeral volumes)"),
            id="ephemeral volume",
        ),
        pytest.param(
            {"volumes": [_projected({"serviceAccountToken": {"path": "t"}})]},
            refs("serviceaccounts (via projected volumes)"),
            id="projected service account token",
        ),
        pytest.param(
            {"volumes": [_projected({"clusterTrustBundle": {"name": "foo", "path": "b"}})]},
            refs("clustertrustbundles"),
            id="cluster trust bundle",
        ),
        pytest.param(
            {"volumes": [_projected({"podCertificate": {"signerName": "x/y"}})]},
            refs("podcertificates"),
            id="pod certificate",
        ),
        pytest.param(
            {"volumes": [_projected({"downwardAPI": {}}, {"secret": {}})]},
            refs("secrets (via projected volumes)"),
            id="downward API then secret in one projected volume",
        ),
        pytest.param(
            {"volumes": [_vol("v", somethingNew={})]},
            forbidden(
                'error checking mirror pod for API references: unknown volume type for volume  "v"'
            ),
            id="unknown volume type",
        ),
        pytest.param(
            {"volumes": [_projected({"somethingNew": {}})]},
            forbidden(
                'error checking mirror pod for API references: unknown source for projected volume "p"'
            ),
            id="unknown projected source",
        ),
        pytest.param(
            {
                "volumes": [
                    _vol("a", hostPath={"path": "/etc/kubernetes"}),
                    _vol("b", emptyDir={}),
                    _vol("c", image={"reference": "busybox"}),
                    _vol("d", cephfs={"monitors": ["m"]}),
                    _vol("e", downwardAPI={"items": []}),
                    _projected({"downwardAPI": {"items": []}}),
                ]
            },
            None,
            id="self-contained volumes are allowed",
        ),
    ],
)
def test_mirror_pod_api_references(spec: dict[str, Any], expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), create_pod(mirror_with(**spec))) == expected


def _status_update(old: dict[str, Any], new: dict[str, Any] | None = None) -> AdmissionRequest:
    return request(
        "UPDATE",
        "pods",
        obj=new if new is not None else old,
        old=old,
        name=old["metadata"]["name"],
        namespace="ns",
        subresource="status",
    )


CLAIMS = [{"name": "gpu", "resourceClaimName": "claim-1"}]


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(_status_update(MY_MIRROR), None, id="update mirror pod status, own node"),
        pytest.param(_status_update(MY_POD), None, id="update pod status, own node"),
        pytest.param(
            _status_update(MY_POD, with_changes(MY_POD, "status", {"phase": "Running"})),
            None,
            id="status fields change",
        ),
        pytest.param(
            _status_update(OTHER_MIRROR),
            forbidden(
                f"node {Q} can only update pod status for pods with spec.nodeName set to itself"
            ),
            id="update pod status, other node",
        ),
        pytest.param(
            _status_update(UNBOUND_POD),
            forbidden(
                f"node {Q} can only update pod status for pods with spec.nodeName set to itself"
            ),
            id="update pod status, unbound",
        ),
        pytest.param(
            request("CREATE", "pods", obj=MY_MIRROR, name="mymirrorpod", subresource="status"),
            forbidden('unexpected operation "CREATE"'),
            id="create pod status",
        ),
        pytest.param(
            request("DELETE", "pods", name="mymirrorpod", namespace="ns", subresource="status"),
            forbidden('unexpected operation "DELETE"'),
            id="delete pod status",
        ),
        pytest.param(
            _status_update(MY_POD, with_changes(MY_POD, "metadata.labels", {"a": "b"})),
            forbidden(f"node {Q} cannot update labels through pod status"),
            id="add labels",
        ),
        pytest.param(
            _status_update(
                with_changes(MY_POD, "metadata.labels", {"a": "b"}),
                with_changes(MY_POD, "metadata.labels", {"a": "b", "c": "d"}),
            ),
            forbidden(f"node {Q} cannot update labels through pod status"),
            id="change labels",
        ),
        pytest.param(
            _status_update(MY_POD, with_changes(MY_POD, "metadata.labels", {})),
            None,
            id="empty labels equal no labels",
        ),
        pytest.param(
            _status_update(MY_POD, with_changes(MY_POD, "status.resourceClaimStatuses", CLAIMS)),
            forbidden(f"node {Q} cannot update resource claim statues"),
            id="add resource claim status",
        ),
        pytest.param(
            _status_update(
                with_changes(MY_POD, "status.resourceClaimStatuses", CLAIMS),
                with_changes(MY_POD, "status.resourceClaimStatuses", [{"name": "gpu"}]),
            ),
            forbidden(f"node {Q} cannot update resource claim statues"),
            id="drop a claim name",
        ),
        pytest.param(
            _status_update(
                with_changes(MY_POD, "status.resourceClaimStatuses", [{"name": "gpu"}]),
                with_changes(
                    MY_POD,
                    "status.resourceClaimStatuses",
                    [{"name": "gpu", "resourceClaimName": ""}],
                ),
            ),
            forbidden(f"node {Q} cannot update resource claim statues"),
            id="nil claim name differs from empty",
        ),
        pytest.param(
            _status_update(
                with_changes(MY_POD, "status.resourceClaimStatuses", CLAIMS),
                with_changes(MY_POD, "status.resourceClaimStatuses", list(CLAIMS)),
            ),
            None,
            id="resource claim statuses unchanged",
        ),
        pytest.param(
            _status_update(
                MY_POD,
                with_changes(
                    MY_POD, "status.extendedResourceClaimStatus", {"resourceClaimName": "x"}
                ),
            ),
            forbidden(f"node {Q} cannot update extended resource claim status"),
            id="add extended resource claim status",
        ),
        pytest.param(
            _status_update(
                with_changes(
                    MY_POD,
                    "status.extendedResourceClaimStatus",
                    {
                        "resourceClaimName": "x",
                        "requestMappings": [
                            {"containerName": "c", "resourceName": "r", "requestName": "q"}
                        ],
                    },
                ),
                with_changes(
                    MY_POD, "status.extendedResourceClaimStatus", {"resourceClaimName": "x"}
                ),
            ),
            forbidden(f"node {Q} cannot update extended resource claim status"),
            id="change extended request mappings",
        ),
        pytest.param(
            _status_update(
                with_changes(
                    MY_POD,
                    "status.extendedResourceClaimStatus",
                    {"resourceClaimName": "x", "requestMappings": []},
                ),
                with_changes(
                    MY_POD, "status.extendedResourceClaimStatus", {"resourceClaimName": "x"}
                ),
            ),
            None,
            id="empty request mappings equal none",
        ),
    ],
)
def test_pod_status(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


def _evict(pod_name: str, body: str, op: str = "CREATE") -> AdmissionRequest:
    return request(
        op, "pods", obj=eviction(body), name=pod_name, namespace="ns", subresource="eviction"
    )


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(_evict("mymirrorpod", "mymirrorpod"), None, id="evict mirror pod, own node"),
        pytest.param(_evict("mypod", "mypod"), None, id="evict pod, own node"),
        pytest.param(_evict("mypod", ""), None, id="unnamed eviction of own pod"),
        pytest.param(_evict("", "mypod"), None, id="pod name from the eviction body"),
        pytest.param(
            _evict("othermirrorpod", "othermirrorpod"),
            forbidden("node mynode can only evict pods with spec.nodeName set to itself"),
            id="evict mirror pod of another node",
        ),
        pytest.param(
            _evict("otherpod", ""),
            forbidden("node mynode can only evict pods with spec.nodeName set to itself"),
            id="unnamed eviction of another node's pod",
        ),
        pytest.param(
            _evict("unboundpod", "unboundpod"),
            forbidden("node mynode can only evict pods with spec.nodeName set to itself"),
            id="evict unbound pod",
        ),
        pytest.param(
            _evict("mymirrorpod", "mymirrorpod", "UPDATE"),
            forbidden("unexpected operation UPDATE"),
            id="update eviction",
        ),
        pytest.param(
            _evict("mymirrorpod", "mymirrorpod", "DELETE"),
            forbidden("unexpected operation DELETE"),
            id="delete eviction",
        ),
        pytest.param(
            _evict("", ""),
            forbidden("could not determine pod from request data"),
            id="no pod name anywhere",
        ),
        pytest.param(
            _evict("nopod", "nopod"),
            ("NotFound", 'pod "nopod" not found'),
            id="evict a pod that does not exist",
        ),
    ],
)
def test_pod_eviction(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


# -- nodes -----------------------------------------------------------------------------------

ALLOWED_LABELS = [
    "foo",
    "example.com/foo",
    "kubernetes.io/hostname",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "kubelet.kubernetes.io/foo",
    "foo.kubelet.kubernetes.io/foo",
    "node.kubernetes.io/foo",
    "foo.node.kubernetes.io/foo",
]
FORBIDDEN_LABELS = [
    "node-restriction.kubernetes.io/foo",
    "foo.node-restriction.kubernetes.io/foo",
    "other.kubernetes.io/foo",
    "other.k8s.io/foo",
]
FORBIDDEN_LIST = (
    "foo.node-restriction.kubernetes.io/foo, node-restriction.kubernetes.io/foo, "
    "other.k8s.io/foo, other.kubernetes.io/foo"
)


def labelled(
    keys: list[str], value: str = "value", base: dict[str, Any] | None = None
) -> dict[str, Any]:
    obj = base or node()
    labels = dict(obj["metadata"].get("labels") or {})
    labels.update(dict.fromkeys(keys, value))
    return with_changes(obj, "metadata.labels", labels)


MY_NODE = node()
CONFIG_A = node(
    configSource={
        "configMap": {
            "name": "foo",
            "namespace": "bar",
            "uid": "fooUID",
            "kubeletConfigKey": "kubelet",
        }
    }
)
CONFIG_B = node(
    configSource={
        "configMap": {
            "name": "qux",
            "namespace": "bar",
            "uid": "quxUID",
            "kubeletConfigKey": "kubelet",
        }
    }
)
TAINT_A = node(taints=[{"key": "mykey", "value": "A", "effect": "NoSchedule"}])
TAINT_B = node(taints=[{"key": "mykey", "value": "B", "effect": "NoSchedule"}])
OTHER_NODE = node("othernode")
ALL_LABELS = labelled(ALLOWED_LABELS + FORBIDDEN_LABELS)


def update_node(new: dict[str, Any], old: dict[str, Any], sub: str = "") -> AdmissionRequest:
    return request(
        "UPDATE", "nodes", obj=new, old=old, name=old["metadata"]["name"], subresource=sub
    )


MODIFY_OTHER = forbidden(f'node {Q} is not allowed to modify node "othernode"')
MODIFY_LABELS = forbidden(f"is not allowed to modify labels: {FORBIDDEN_LIST}")


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(request("CREATE", "nodes", obj=MY_NODE, name=NODE), None, id="create my node"),
        pytest.param(
            request("CREATE", "nodes", obj=MY_NODE), None, id="create my node, name from object"
        ),
        pytest.param(
            request("CREATE", "nodes", obj=TAINT_A, name=NODE), None, id="create with taints"
        ),
        pytest.param(
            request("CREATE", "nodes", obj=labelled(ALLOWED_LABELS), name=NODE),
            None,
            id="create with allowed labels",
        ),
        pytest.param(
            request("CREATE", "nodes", obj=labelled(FORBIDDEN_LABELS), name=NODE),
            forbidden(f"node {Q} is not allowed to set the following labels: {FORBIDDEN_LIST}"),
            id="create with forbidden labels",
        ),
        pytest.param(
            request("CREATE", "nodes", obj=CONFIG_A, name=NODE),
            forbidden(f"node {Q} is not allowed to create pods with a non-nil configSource"),
            id="create with a configSource",
        ),
        pytest.param(update_node(MY_NODE, MY_NODE), None, id="update my node"),
        pytest.param(update_node(MY_NODE, MY_NODE, "status"), None, id="update my node status"),
        pytest.param(request("DELETE", "nodes", name=NODE), None, id="delete my node"),
        pytest.param(
            update_node(CONFIG_A, MY_NODE),
            forbidden(
                f"node {Q} is not allowed to update configSource to a new non-nil configSource"
            ),
            id="nil configSource to non-nil",
        ),
        pytest.param(
            update_node(CONFIG_B, CONFIG_A),
            forbidden(
                f"node {Q} is not allowed to update configSource to a new non-nil configSource"
            ),
            id="configSource to another configSource",
        ),
        pytest.param(update_node(CONFIG_A, CONFIG_A), None, id="configSource unchanged"),
        pytest.param(update_node(MY_NODE, CONFIG_A), None, id="configSource to nil"),
        pytest.param(update_node(TAINT_A, TAINT_A), None, id="taints unchanged"),
        pytest.param(
            update_node(node(taints=[]), MY_NODE), None, id="empty taints equal no taints"
        ),
        pytest.param(
            update_node(TAINT_A, MY_NODE),
            forbidden(f"node {Q} is not allowed to modify taints"),
            id="add taints",
        ),
        pytest.param(
            update_node(MY_NODE, TAINT_A),
            forbidden(f"node {Q} is not allowed to modify taints"),
            id="remove taints",
        ),
        pytest.param(
            update_node(TAINT_A, TAINT_B),
            forbidden(f"node {Q} is not allowed to modify taints"),
            id="change taints",
        ),
        pytest.param(update_node(labelled(ALLOWED_LABELS), MY_NODE), None, id="add allowed labels"),
        pytest.param(
            update_node(MY_NODE, labelled(ALLOWED_LABELS)), None, id="remove allowed labels"
        ),
        pytest.param(
            update_node(labelled(ALLOWED_LABELS, "b"), labelled(ALLOWED_LABELS, "a")),
            None,
            id="modify allowed labels",
        ),
        pytest.param(update_node(ALL_LABELS, ALL_LABELS), None, id="labels unchanged"),
        pytest.param(
            update_node(ALL_LABELS, labelled(FORBIDDEN_LABELS)),
            None,
            id="add allowed labels while forbidden ones stay",
        ),
        pytest.param(
            update_node(labelled(FORBIDDEN_LABELS), ALL_LABELS),
            None,
            id="remove allowed labels while forbidden ones stay",
        ),
        pytest.param(
            update_node(labelled(FORBIDDEN_LABELS), MY_NODE), MODIFY_LABELS, id="add labels"
        ),
        pytest.param(
            update_node(MY_NODE, labelled(FORBIDDEN_LABELS)), MODIFY_LABELS, id="remove labels"
        ),
        pytest.param(
            update_node(labelled(FORBIDDEN_LABELS, "new"), labelled(FORBIDDEN_LABELS, "old")),
            MODIFY_LABELS,
            id="change labels",
        ),
        pytest.param(
            request("CREATE", "nodes", obj=OTHER_NODE, name="othernode"),
            MODIFY_OTHER,
            id="create other node",
        ),
        pytest.param(
            request("CREATE", "nodes", obj=OTHER_NODE),
            MODIFY_OTHER,
            id="create other node, name from object",
        ),
        pytest.param(update_node(OTHER_NODE, OTHER_NODE), MODIFY_OTHER, id="update other node"),
        pytest.param(
            update_node(OTHER_NODE, OTHER_NODE, "status"),
            MODIFY_OTHER,
            id="update other node status",
        ),
        pytest.param(
            request("DELETE", "nodes", name="othernode"), MODIFY_OTHER, id="delete other node"
        ),
        pytest.param(
            request("UPDATE", "nodes", obj=MY_NODE, old=None, name=NODE),
            forbidden("unexpected type <nil>"),
            id="update without the old object",
        ),
    ],
)
def test_nodes(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


# -- persistent volume claims ------------------------------------------------------------------


def pvc(condition: str = "", allocated: str = "10G", resize_status: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": "Bound",
        "capacity": {"storage": allocated},
        "allocatedResources": {"storage": allocated},
    }
    if resize_status:
        status["allocatedResourceStatuses"] = {"storage": resize_status}
    if condition:
        status["conditions"] = [{"type": condition, "status": "True"}]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "foo", "namespace": "default", "resourceVersion": "1"},
        "spec": {"volumeName": "volume1", "resources": {"requests": {"storage": "10G"}}},
        "status": status,
    }


def pvc_status(new: dict[str, Any], old: dict[str, Any], sub: str = "status") -> AdmissionRequest:
    return request(
        "UPDATE",
        "persistentvolumeclaims",
        obj=new,
        old=old,
        name="foo",
        namespace="default",
        subresource=sub,
    )


PVC_PREFIX = (
    f"node {Q} is not allowed to update fields other than status.quantity and status.conditions: "
)


@pytest.mark.parametrize(
    ("req", "recovery", "expected"),
    [
        pytest.param(
            pvc_status(pvc(), pvc("Resizing"), sub=""),
            True,
            forbidden("may only update PVC status"),
            id="full pvc update",
        ),
        pytest.param(
            request(
                "CREATE", "persistentvolumeclaims", obj=pvc(), name="foo", subresource="status"
            ),
            True,
            forbidden('unexpected operation "CREATE"'),
            id="create pvc status",
        ),
        pytest.param(
            pvc_status(pvc("FileSystemResizePending"), pvc("Resizing")),
            False,
            None,
            id="capacity and condition updates",
        ),
        pytest.param(
            pvc_status(pvc("FileSystemResizePending", "15G"), pvc("Resizing")),
            False,
            forbidden(PVC_PREFIX + 'status.allocatedResources.storage: "10G" -> "15G"'),
            id="allocatedResources without recovery",
        ),
        pytest.param(
            pvc_status(pvc("FileSystemResizePending", "15G"), pvc("Resizing")),
            True,
            None,
            id="allocatedResources with recovery",
        ),
        pytest.param(
            pvc_status(pvc("Resizing", "10G", "NodeResizeInfeasible"), pvc("Resizing")),
            True,
            None,
            id="resize status with recovery",
        ),
        pytest.param(
            pvc_status(pvc("Resizing", "10G", "NodeResizeInfeasible"), pvc("Resizing")),
            False,
            forbidden(
                PVC_PREFIX
                + 'status.allocatedResourceStatuses: <absent> -> {"storage": "NodeResizeInfeasible"}'
            ),
            id="resize status without recovery",
        ),
        pytest.param(
            pvc_status(with_changes(pvc(), "metadata.resourceVersion", "7"), pvc()),
            True,
            None,
            id="resourceVersion is ignored",
        ),
        pytest.param(
            pvc_status(
                with_changes(pvc(), "metadata.managedFields", [{"manager": "kubelet"}]), pvc()
            ),
            True,
            None,
            id="managedFields are ignored",
        ),
        pytest.param(
            pvc_status(
                with_changes(pvc(), "spec.resources.requests", {"storage": "10000M"}), pvc()
            ),
            True,
            None,
            id="quantities compare by value",
        ),
        pytest.param(
            pvc_status(with_changes(pvc(), "metadata.labels", {"a": "b"}), pvc()),
            True,
            forbidden(PVC_PREFIX + 'metadata.labels: <absent> -> {"a": "b"}'),
            id="labels added",
        ),
        pytest.param(
            pvc_status(
                with_changes(pvc(), "metadata.labels", {"a": "b", "example.com/c": "d"}),
                with_changes(pvc(), "metadata.labels", {"a": "x"}),
            ),
            True,
            forbidden(
                PVC_PREFIX
                + 'metadata.labels.a: "x" -> "b"; metadata.labels["example.com/c"]: <absent> -> "d"'
            ),
            id="labels changed",
        ),
        pytest.param(
            pvc_status(
                with_changes(pvc(), "metadata.finalizers", ["example.com/x"]),
                with_changes(pvc(), "spec.volumeName", "volume2"),
            ),
            True,
            forbidden(
                PVC_PREFIX
                + 'metadata.finalizers: <absent> -> ["example.com/x"]; '
                + 'spec.volumeName: "volume2" -> "volume1"'
            ),
            id="several fields change",
        ),
        pytest.param(
            pvc_status(with_changes(pvc(), "status.phase", "Lost"), pvc()),
            True,
            forbidden(PVC_PREFIX + 'status.phase: "Bound" -> "Lost"'),
            id="phase change",
        ),
    ],
)
def test_pvc_status(
    req: AdmissionRequest, recovery: bool, expected: tuple[str, str] | None
) -> None:
    assert outcome(plugin(RecoverVolumeExpansionFailure=recovery), req) == expected


# -- leases, CSINodes, ResourceSlices ---------------------------------------------------------


def lease(name: str, namespace: str = "kube-node-lease") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": NODE, "leaseDurationSeconds": 40},
    }


def lease_req(op: str, obj: dict[str, Any]) -> AdmissionRequest:
    meta = obj["metadata"]
    return request(
        op,
        "leases",
        obj=obj if op != "DELETE" else None,
        old=obj if op == "UPDATE" else None,
        name=meta["name"],
        namespace=meta["namespace"],
        group="coordination.k8s.io",
    )


WRONG_NS = forbidden('can only access leases in the "kube-node-lease" system namespace')
WRONG_LEASE = forbidden("can only access node lease with the same name as the requesting node")


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        *[
            pytest.param(
                lease_req(op, lease(NODE, "foo")), WRONG_NS, id=f"{op} in another namespace"
            )
            for op in ("CREATE", "UPDATE", "DELETE")
        ],
        *[
            pytest.param(lease_req(op, lease("foo")), WRONG_LEASE, id=f"{op} another node's lease")
            for op in ("CREATE", "UPDATE", "DELETE")
        ],
        *[
            pytest.param(lease_req(op, lease(NODE)), None, id=f"{op} own lease")
            for op in ("CREATE", "UPDATE", "DELETE")
        ],
        pytest.param(
            request(
                "CREATE",
                "leases",
                obj=lease("foo"),
                name=NODE,
                namespace="kube-node-lease",
                group="coordination.k8s.io",
            ),
            WRONG_LEASE,
            id="create checks the object's name, not the request's",
        ),
    ],
)
def test_leases(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


def csinode(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {
            "drivers": [{"name": "com.example.csi/mydriver", "nodeID": f"com.example.csi/{name}"}]
        },
    }


def csinode_req(op: str, name: str, obj: Any = "default") -> AdmissionRequest:
    body = csinode(name) if obj == "default" else obj
    return request(
        op,
        "csinodes",
        obj=body if op != "DELETE" else None,
        old=body if op == "UPDATE" else None,
        name=name,
        group="storage.k8s.io",
    )


WRONG_CSINODE = forbidden("can only access CSINode with the same name as the requesting node")


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        *[
            pytest.param(csinode_req(op, "foo"), WRONG_CSINODE, id=f"{op} another node's CSINode")
            for op in ("CREATE", "UPDATE", "DELETE")
        ],
        *[
            pytest.param(csinode_req(op, NODE), None, id=f"{op} own CSINode")
            for op in ("CREATE", "UPDATE", "DELETE")
        ],
        pytest.param(
            csinode_req("CREATE", NODE, obj=None),
            forbidden("unable to access the object name"),
            id="create without an object",
        ),
    ],
)
def test_csinodes(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


def resource_slice(node_name: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "gpu.example.com", "pool": {"name": "p"}}
    if node_name is not None:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "something"},
        "spec": spec,
    }


def slice_req(op: str, node_name: str | None) -> AdmissionRequest:
    body = resource_slice(node_name)
    return request(
        op,
        "resourceslices",
        obj=body if op != "DELETE" else None,
        old=body if op != "CREATE" else None,
        name="something",
        group="resource.k8s.io",
    )


CREATE_SLICE = forbidden(
    "can only create ResourceSlice with the same NodeName as the requesting node"
)
DELETE_SLICE = forbidden(
    "can only delete ResourceSlice with the same NodeName as the requesting node"
)


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(slice_req("CREATE", NODE), None, id="create own"),
        pytest.param(slice_req("CREATE", "mynode-other"), CREATE_SLICE, id="create other node's"),
        pytest.param(slice_req("CREATE", ""), CREATE_SLICE, id="create with empty node name"),
        pytest.param(slice_req("CREATE", None), CREATE_SLICE, id="create without node name"),
        pytest.param(slice_req("UPDATE", NODE), None, id="update own"),
        pytest.param(
            slice_req("UPDATE", "mynode-other"), None, id="update is left to the authorizer"
        ),
        pytest.param(slice_req("UPDATE", None), None, id="update without node name"),
        pytest.param(slice_req("DELETE", NODE), None, id="delete own"),
        pytest.param(slice_req("DELETE", "mynode-other"), DELETE_SLICE, id="delete other node's"),
        pytest.param(slice_req("DELETE", None), DELETE_SLICE, id="delete without node name"),
    ],
)
def test_resource_slices(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(plugin(), req) == expected


# -- the API server's form of the errors, gates, secrets ----------------------------------------


@pytest.mark.parametrize(
    ("req", "text"),
    [
        pytest.param(
            create_pod(with_changes(MY_MIRROR, "metadata.ownerReferences", None)),
            f'pods "mymirrorpod" is forbidden: node {Q} can only create pods with an owner '
            "reference set to itself",
            id="core resource",
        ),
        pytest.param(
            lease_req("UPDATE", lease("foo")),
            'leases.coordination.k8s.io "foo" is forbidden: can only access node lease with the '
            "same name as the requesting node",
            id="group-qualified resource",
        ),
        pytest.param(
            request("DELETE", "leases", namespace="foo", group="coordination.k8s.io"),
            'leases.coordination.k8s.io "Unknown" is forbidden: can only access leases in the '
            '"kube-node-lease" system namespace',
            id="no name",
        ),
        pytest.param(
            request(
                "CREATE",
                "pods",
                obj=with_changes(
                    with_changes(MY_POD, "metadata.name", None), "metadata.generateName", "web-"
                ),
                namespace="ns",
            ),
            f'pods "web-" is forbidden: pod does not have "{MIRROR}" annotation, node {Q} can only '
            "create mirror pods",
            id="generateName",
        ),
        pytest.param(
            request("DELETE", "pods", name="nopod", namespace="ns"),
            'pod "nopod" not found',
            id="not found",
        ),
    ],
)
def test_apiserver_message(req: AdmissionRequest, text: str) -> None:
    with pytest.raises(AdmissionError) as info:
        plugin().admit(req)
    assert str(info.value) == text


def test_feature_gates() -> None:
    assert dict(FEATURE_GATE_DEFAULTS) == {
        "ServiceAccountNodeAudienceRestriction": True,
        "PodCertificateRequest": False,
        "RecoverVolumeExpansionFailure": True,
        "AllowInsecureKubeletCertificateSigningRequests": False,
    }
    gates = NodeRestriction(
        OBJECTS, feature_gates={"PodCertificateRequest": True, "SomeOtherGate": True}
    ).feature_gates
    assert gates["PodCertificateRequest"] is True
    assert "SomeOtherGate" not in gates
    assert NodeRestriction(OBJECTS).feature_gates == FEATURE_GATE_DEFAULTS


def test_operation_case_is_normalized() -> None:
    assert outcome(
        plugin(), request("delete", "pods", name="otherpod", namespace="ns")
    ) == forbidden(f"node {Q} can only delete pods with spec.nodeName set to itself")


def test_broken_object_store_refuses() -> None:
    class Broken:
        def get(self, resource: str, namespace: str, name: str) -> None:
            raise RuntimeError("store down")

    req = request("DELETE", "pods", name="mypod", namespace="ns")
    assert outcome(NodeRestriction(Broken()), req) == forbidden("RuntimeError: store down")
    assert outcome(NodeRestriction(Broken()), create_pod(MY_MIRROR)) == forbidden(
        "error looking up node mynode to verify uid: RuntimeError: store down"
    )


def test_errors_do_not_quote_object_contents() -> None:
    secret_pod = with_changes(MY_POD, "metadata.annotations", {"token": CANARY})
    secret_pod["spec"]["containers"][0]["env"] = [{"name": "PASSWORD", "value": CANARY}]
    with pytest.raises(AdmissionError) as info:
        plugin().admit(create_pod(secret_pod))
    assert CANARY not in str(info.value)
    assert CANARY not in repr(info.value.args)
