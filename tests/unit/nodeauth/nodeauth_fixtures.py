"""Object builders for the Node authorizer tests (JSON-like ``core/v1`` objects)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def pod(
    name: str,
    node: str = "",
    *,
    namespace: str = "ns",
    sa: str = "",
    volumes: list[Obj] | None = None,
    claims: list[Obj] | None = None,
    extended_claim: str = "",
    claim_statuses: list[Obj] | None = None,
    mirror: bool = False,
    **spec: Any,
) -> Obj:
    """A pod; ``spec`` adds raw spec fields (containers, imagePullSecrets, …)."""
    body: Obj = dict(spec)
    if node:
        body["nodeName"] = node
    if sa:
        body["serviceAccountName"] = sa
    if volumes is not None:
        body["volumes"] = volumes
    if claims is not None:
        body["resourceClaims"] = claims
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"pod{name}uid"}
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
    status: Obj = {}
    if extended_claim:
        status["extendedResourceClaimStatus"] = {"resourceClaimName": extended_claim}
    if claim_statuses is not None:
        status["resourceClaimStatuses"] = claim_statuses
    if status:
        obj["status"] = status
    return obj


def cm_vol(name: str, volume: str = "") -> Obj:
    return {"name": volume or name, "configMap": {"name": name}}


def secret_vol(name: str, volume: str = "") -> Obj:
    return {"name": volume or name, "secret": {"secretName": name}}


def pvc_vol(name: str, volume: str = "") -> Obj:
    return {"name": volume or name, "persistentVolumeClaim": {"claimName": name}}


def pv(
    name: str,
    claim: str | None,
    secret: str = "",
    *,
    claim_ns: str = "ns",
    secret_ns: str = "ns",
    source: Obj | None = None,
) -> Obj:
    """A PV bound to ``claim_ns/claim`` whose CSI node stage and publish secret is ``secret``."""
    spec: Obj = {}
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim_ns, "name": claim}
    if secret:
        ref = {"name": secret, "namespace": secret_ns}
        spec["csi"] = {"driver": "foo", "nodeStageSecretRef": ref, "nodePublishSecretRef": ref}
    if source is not None:
        spec.update(source)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
    }


def pcr(namespace: str, name: str, pod_name: str, sa: str, node: str) -> Obj:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "PodCertificateRequest",
        "metadata": {"namespace": namespace, "name": name, "uid": f"pcr{name}uid"},
        "spec": {"podName": pod_name, "serviceAccountName": sa, "nodeName": node},
    }


def sample_cluster(
    nodes: int = 2, namespaces: int = 2, pods_per_node: int = 2
) -> tuple[list[Obj], list[Obj], list[Obj], list[Obj]]:
    """Upstream TestNodeAuthorizer's sample data, named the same way.

    ``secret0-pod0-node0`` is a secret of pod0 on node0; every pod also mounts
    ``secret0-shared``, a unique config map and a PVC whose PV has a flex secret
    (``secret-pv0-pod0-node0-ns0``), a resource claim, a template claim without status and
    one with a generated claim; each node has one volume attachment and three resource
    slices. Returns (pods, pvs, attachments, slices).
    """
    pods: list[Obj] = []
    pvs: list[Obj] = []
    attachments: list[Obj] = []
    slices: list[Obj] = []
    for n in range(nodes):
        node = f"node{n}"
        for p in range(pods_per_node):
            name = f"pod{p}-{node}"
            namespace = f"ns{p % namespaces}"
            pv_name = f"pv0-{name}-{namespace}"
            pvs.append(
                {
                    "kind": "PersistentVolume",
                    "metadata": {"name": pv_name},
                    "spec": {
                        "flexVolume": {"driver": "x", "secretRef": {"name": f"secret-{pv_name}"}},
                        "claimRef": {"name": f"pvc0-{name}", "namespace": namespace},
                    },
                }
            )
            pods.append(
                pod(
                    name,
                    node,
                    namespace=namespace,
                    sa=f"svcacct{p}-{node}",
                    volumes=[
                        secret_vol(f"secret0-{name}", "v0"),
                        secret_vol("secret0-shared", "v1"),
                        cm_vol(f"configmap0-{name}", "v2"),
                        pvc_vol(f"pvc0-{name}", "v3"),
                    ],
                    claims=[
                        {"name": "claim0", "resourceClaimName": f"claim0-{name}-{namespace}"},
                        {
                            "name": "claimtemplate0",
                            "resourceClaimTemplateName": f"claimtemplate0-{name}-{namespace}",
                        },
                        {
                            "name": "claimtemplate-with-claim0",
                            "resourceClaimTemplateName": f"claimtemplate0-{name}-{namespace}",
                        },
                    ],
                    claim_statuses=[
                        {
                            "name": "claimtemplate-with-claim0",
                            "resourceClaimName": f"generated-claim-{name}-{namespace}-0",
                        }
                    ],
                )
            )
        attachments.append(
            {
                "kind": "VolumeAttachment",
                "metadata": {"name": f"attachment0-{node}"},
                "spec": {"nodeName": node},
            }
        )
        for s in range(3):
            slices.append(
                {
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"slice{s}-{node}"},
                    "spec": {"nodeName": node},
                }
            )
    return pods, pvs, attachments, slices
