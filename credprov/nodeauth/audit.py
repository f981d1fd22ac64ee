"""What one node can read, for security reviews (``credprov nodeauth audit``).

A pure function of the cluster's objects: the Node authorizer's graph says which secrets,
config maps, PVCs, PVs, resource claims, volume attachments, resource slices, pod
certificate requests and service accounts a node reaches (exactly the objects
``get`` would be allowed for, each with the pods or volumes it is reached through); the
static ``system:node`` rules add what any node may list cluster-wide.

Service-account tokens are listed by audience: for each service account a pod on the node
uses, the audiences NodeRestriction lets the node request a token for
(``ServiceAccountNodeAudienceRestriction``, on by default):

* the audience of each projected ``serviceAccountToken`` volume of those pods (no
  audience means the API server's, shown as ``""``: every pod with the usual
  ``kube-api-access-*`` volume has one);
* the ``tokenRequests`` audiences of the CSIDriver of each CSI volume, inline or through a
  PVC's bound PV (in-tree volumes migrated to CSI are not followed);
* audiences granted by RBAC with the ``request-serviceaccounts-token-audience`` verb
  (``resources`` are audiences, ``resourceNames`` service accounts; ``*`` is any) to the
  node's user or groups — how KEP-4412 registry audiences are allowed.

With the gate off, any audience is allowed (``"*"``).

With ``PodCertificateRequest`` on (off by default), each service account also lists the
signers the node may name in a PodCertificateRequest for its pods (NodeRestriction, 1.37,
kubernetes#140006): the ``signerName`` of each ``podCertificate`` projected volume source of
those pods, and signers RBAC grants the node with the ``request-podcertificate-signer``
verb in API group ``certificates.k8s.io`` (``resources`` are signer names, ``resourceNames``
service accounts; ``*`` is any).

Names only: no object content, so no secret value, is ever part of the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from credprov.nodeauth import graph as g
from credprov.nodeauth._objects import EMPTY as _EMPTY
from credprov.nodeauth._objects import m as _m
from credprov.nodeauth._objects import s as _str
from credprov.nodeauth.authorizer import NodeAuthorizer
from credprov.nodeauth.identity import NODE_USER_PREFIX, NODES_GROUP
from credprov.nodeauth.types import Attributes, ObjectGetter

__all__ = ["AUDIENCE_VERB", "SIGNER_VERB", "audit", "pod_certificate_signers", "token_audiences"]

#: The verb RBAC grants to let nodes request tokens for an audience no pod volume names.
AUDIENCE_VERB = "request-serviceaccounts-token-audience"
#: The verb RBAC grants to let nodes request pod certificates from a signer no pod volume names.
SIGNER_VERB = "request-podcertificate-signer"


# Graph vertex type → (result key, resource for existence checks, namespaced).
_SECTIONS: tuple[tuple[str, str, str, bool], ...] = (
    (g.SECRET, "secrets", "secrets", True),
    (g.CONFIGMAP, "configmaps", "configmaps", True),
    (g.PVC, "persistentVolumeClaims", "persistentvolumeclaims", True),
    (g.PV, "persistentVolumes", "persistentvolumes", False),
    (g.RESOURCE_CLAIM, "resourceClaims", "resourceclaims", True),
    (g.VOLUME_ATTACHMENT, "volumeAttachments", "volumeattachments", False),
    (g.RESOURCE_SLICE, "resourceSlices", "resourceslices", False),
    (g.POD_CERTIFICATE_REQUEST, "podCertificateRequests", "podcertificaterequests", True),
)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class _Lister(ObjectGetter, Protocol):
    def list(self, resource: str) -> list[Mapping[str, Any]]: ...


def audit(
    store: _Lister,
    node_name: str,
    *,
    graph: g.Graph | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    groups: Sequence[str] = (NODES_GROUP, "system:authenticated"),
) -> dict[str, Any]:
    """Everything ``system:node:<node_name>`` can read; see the module docstring.

    Args:
        store: the cluster's objects (an :class:`~credprov.nodeauth.store.ObjectStore`).
        node_name: the node.
        graph: the graph of ``store`` if already built (else it is built here).
        feature_gates: upstream gate names → on/off (the authorizer's,
            ``ServiceAccountNodeAudienceRestriction`` and ``PodCertificateRequest``).
        groups: the node's groups, for RBAC audience grants.

    Returns:
        A JSON-ready dict: ``node``, ``nodeKnown`` (some object is bound to it),
        ``nodeExists`` (a Node object exists), ``pods``, one list per object type (each
        entry ``namespace`` (when namespaced), ``name``, ``exists`` and ``via``),
        ``serviceAccounts`` (with ``get``, ``pods``, ``tokenAudiences`` and
        ``podCertificateSigners``, empty with ``PodCertificateRequest`` off) and
        ``clusterWide`` (read requests the static rules allow for every object).

    """
    if graph is None:
        graph = g.Graph.from_store(store)
    gates = dict(feature_gates or {})
    authorizer = NodeAuthorizer(graph, gates)
    user = f"{NODE_USER_PREFIX}{node_name}"
    by_kind: dict[str, list[tuple[g.Vertex, list[g.Vertex]]]] = {}
    for vertex, via in graph.readable_by(node_name).items():
        by_kind.setdefault(vertex.kind, []).append((vertex, via))
    for entries in by_kind.values():
        entries.sort(key=lambda e: (e[0].namespace, e[0].name))

    result: dict[str, Any] = {
        "node": node_name,
        "nodeKnown": graph.get_vertex(g.NODE, "", node_name) is not None,
        "nodeExists": store.get("nodes", "", node_name) is not None,
        "pods": _pods_section(store, by_kind.get(g.POD, [])),
    }
    for kind, key, resource, namespaced in _SECTIONS:
        result[key] = [
            _object_entry(store, resource, namespaced, vertex, via)
            for vertex, via in by_kind.get(kind, ())
        ]
    accounts = _AccountAudit(store, authorizer, user, tuple(groups), gates)
    result["serviceAccounts"] = [
        accounts.entry(vertex, via) for vertex, via in by_kind.get(g.SERVICE_ACCOUNT, ())
    ]
    result["clusterWide"] = _cluster_wide(authorizer, user, groups)
    return result


def _pods_section(
    store: ObjectGetter, pods: list[tuple[g.Vertex, list[g.Vertex]]]
) -> list[dict[str, Any]]:
    """The report's ``pods``: each bound pod with its service account and mirror flag."""
    section = []
    for vertex, _ in pods:
        pod = store.get("pods", vertex.namespace, vertex.name) or _EMPTY
        spec = _m(pod.get("spec"))
        section.append(
            {
                "namespace": vertex.namespace,
                "name": vertex.name,
                "serviceAccount": _str(spec.get("serviceAccountName")),
                "mirror": "kubernetes.io/config.mirror"
                in _m(_m(pod.get("metadata")).get("annotations")),
            }
        )
    return section


def _object_entry(
    store: ObjectGetter, resource: str, namespaced: bool, vertex: g.Vertex, via: list[g.Vertex]
) -> dict[str, Any]:
    """One readable object of a :data:`_SECTIONS` section: where it is, whether it exists
    and the graph vertices that make it readable."""
    entry: dict[str, Any] = {}
    if namespaced:
        entry["namespace"] = vertex.namespace
    entry["name"] = vertex.name
    entry["exists"] = store.get(resource, vertex.namespace, vertex.name) is not None
    entry["via"] = sorted(str(v) for v in via)
    return entry


@dataclass(frozen=True)
class _AccountAudit:
    """What the node may do with each service account it can reach (see :meth:`entry`)."""

    store: _Lister
    authorizer: NodeAuthorizer
    user: str
    groups: tuple[str, ...]
    gates: Mapping[str, bool]

    def entry(self, vertex: g.Vertex, via: list[g.Vertex]) -> dict[str, Any]:
        """The report's entry for one service account: may the node GET it, which token
        audiences and pod-certificate signers it may ask for, and why."""
        store, namespace, name = self.store, vertex.namespace, vertex.name
        pod_objects = [
            found for v in via if (found := store.get("pods", v.namespace, v.name)) is not None
        ]
        if self.gates.get("ServiceAccountNodeAudienceRestriction", True):
            audiences = _merge(
                token_audiences(store, namespace, name, pod_objects),
                self._grants(namespace, name, AUDIENCE_VERB, ""),
            )
        else:
            audiences = {"*": ["ServiceAccountNodeAudienceRestriction is off: any audience"]}
        get = self.authorizer.authorize(
            Attributes(
                user=self.user,
                groups=self.groups,
                verb="get",
                resource="serviceaccounts",
                namespace=namespace,
                name=name,
            )
        )
        signers: dict[str, list[str]] = {}
        if self.gates.get("PodCertificateRequest", False):
            signers = _merge(
                pod_certificate_signers(namespace, name, pod_objects),
                self._grants(namespace, name, SIGNER_VERB, "certificates.k8s.io"),
            )
        return {
            "namespace": namespace,
            "name": name,
            "exists": store.get("serviceaccounts", namespace, name) is not None,
            "get": get.allowed,
            "pods": sorted(f"{v.namespace}/{v.name}" for v in via),
            "tokenAudiences": [
                {"audience": audience, "via": sorted(set(sources))}
                for audience, sources in sorted(audiences.items())
            ],
            "podCertificateSigners": [
                {"signer": signer, "via": sorted(set(sources))}
                for signer, sources in sorted(signers.items())
            ],
        }

    def _grants(self, namespace: str, name: str, verb: str, api_group: str) -> dict[str, list[str]]:
        """The RBAC grants of ``verb`` on the account's names (audiences or signers)."""
        return _rbac_grants(self.store, self.user, self.groups, namespace, name, verb, api_group)


def _merge(a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, list[str]]:
    for audience, sources in b.items():
        a.setdefault(audience, []).extend(sources)
    return a


def token_audiences(
    objects: ObjectGetter,
    namespace: str,
    service_account: str,
    pods: Iterable[Mapping[str, Any]],
) -> dict[str, list[str]]:
    """Audiences the pods' volumes let a node request for their service account.

    Returns audience → where it comes from (``pod ns/name volume v: projected token`` or
    ``… CSI driver d``). Pods running as another service account are skipped.
    """
    found: dict[str, list[str]] = {}
    for pod_name, volume, sources in _account_volumes(service_account, pods):
        where = f"pod {namespace}/{pod_name} volume {_str(volume.get('name'))}"
        for source in sources:
            token = source.get("serviceAccountToken")
            if token is not None:
                audience = _str(_m(token).get("audience"))
                found.setdefault(audience, []).append(f"{where}: projected token")
        driver = _volume_csi_driver(objects, namespace, pod_name, volume)
        if driver:
            csi_driver = objects.get("csidrivers", "", driver) or _EMPTY
            for request in _list(_m(csi_driver.get("spec")).get("tokenRequests")):
                audience = _str(_m(request).get("audience"))
                found.setdefault(audience, []).append(f"{where}: CSI driver {driver}")
    return found


def pod_certificate_signers(
    namespace: str, service_account: str, pods: Iterable[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Signers the pods' ``podCertificate`` volumes let a node name for their service account.

    Returns signer → where it comes from (``pod ns/name volume v: podCertificate``). Pods
    running as another service account are skipped.
    """
    found: dict[str, list[str]] = {}
    for pod_name, volume, sources in _account_volumes(service_account, pods):
        where = f"pod {namespace}/{pod_name} volume {_str(volume.get('name'))}"
        for source in sources:
            cert = source.get("podCertificate")
            if cert is not None:
                signer = _str(_m(cert).get("signerName"))
                found.setdefault(signer, []).append(f"{where}: podCertificate")
    return found


def _account_volumes(
    service_account: str, pods: Iterable[Mapping[str, Any]]
) -> Iterator[tuple[str, Mapping[str, Any], list[Mapping[str, Any]]]]:
    """``(pod name, volume, projected sources)`` of every volume of the pods that run as
    ``service_account`` (fields of the wrong type read as absent)."""
    for pod in pods:
        spec = _m(pod.get("spec"))
        if _str(spec.get("serviceAccountName")) != service_account:
            continue
        pod_name = _str(_m(pod.get("metadata")).get("name"))
        for raw in _list(spec.get("volumes")):
            volume = _m(raw)
            sources = [_m(src) for src in _list(_m(volume.get("projected")).get("sources"))]
            yield pod_name, volume, sources


def _volume_csi_driver(
    objects: ObjectGetter, namespace: str, pod_name: str, volume: Mapping[str, Any]
) -> str:
    if volume.get("csi") is not None:
        return _str(_m(volume["csi"]).get("driver"))
    claim = ""
    if volume.get("persistentVolumeClaim") is not None:
        claim = _str(_m(volume["persistentVolumeClaim"]).get("claimName"))
    elif volume.get("ephemeral") is not None:
        claim = f"{pod_name}-{_str(volume.get('name'))}"
    if not claim:
        return ""
    pvc = objects.get("persistentvolumeclaims", namespace, claim) or _EMPTY
    pv_name = _str(_m(pvc.get("spec")).get("volumeName"))
    pv = objects.get("persistentvolumes", "", pv_name) if pv_name else None
    return _str(_m(_m(_m(pv).get("spec")).get("csi")).get("driver"))


def _subject_matches(subject: Mapping[str, Any], user: str, groups: Sequence[str]) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    return False


def _rbac_grants(
    store: _Lister,
    user: str,
    groups: Sequence[str],
    namespace: str,
    service_account: str,
    verb: str,
    api_group: str,
) -> dict[str, list[str]]:
    """The ``resources`` RBAC grants ``verb`` on in ``api_group`` for one service account
    (``resourceNames``): audiences for ``request-serviceaccounts-token-audience``, signers
    for ``request-podcertificate-signer``."""
    cluster_roles = {_str(_m(r.get("metadata")).get("name")): r for r in store.list("clusterroles")}
    roles = {
        (_str(_m(r.get("metadata")).get("namespace")), _str(_m(r.get("metadata")).get("name"))): r
        for r in store.list("roles")
    }
    found: dict[str, list[str]] = {}
    bindings = [("ClusterRoleBinding", b) for b in store.list("clusterrolebindings")]
    bindings += [("RoleBinding", b) for b in store.list("rolebindings")]
    for kind, binding in bindings:
        meta = _m(binding.get("metadata"))
        binding_ns = _str(meta.get("namespace"))
        if kind == "RoleBinding" and binding_ns != namespace:
            continue
        if not any(_subject_matches(_m(s), user, groups) for s in _list(binding.get("subjects"))):
            continue
        ref = _m(binding.get("roleRef"))
        role_name = _str(ref.get("name"))
        role = (
            cluster_roles.get(role_name)
            if ref.get("kind") == "ClusterRole"
            else roles.get((binding_ns, role_name))
        )
        if role is None:
            continue
        via = f'RBAC {kind} "{_str(meta.get("name"))}" of {ref.get("kind")} "{role_name}"'
        for rule in _list(role.get("rules")):
            rule = _m(rule)
            verbs = _list(rule.get("verbs"))
            api_groups = _list(rule.get("apiGroups"))
            names = _list(rule.get("resourceNames"))
            if verb not in verbs and "*" not in verbs:
                continue
            if api_group not in api_groups and "*" not in api_groups:
                continue
            if names and service_account not in names:
                continue
            for resource in _list(rule.get("resources")):
                if isinstance(resource, str):
                    found.setdefault(resource, []).append(via)
    return found


def _cluster_wide(authorizer: NodeAuthorizer, user: str, groups: Sequence[str]) -> list[str]:
    """Read requests without a name (so for every object) that the node is allowed."""
    allowed = []
    for rule in authorizer.rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                verbs = [
                    verb
                    for verb in rule["verbs"]
                    if verb in ("get", "list", "watch")
                    and authorizer.authorize(
                        Attributes(
                            user=user,
                            groups=tuple(groups),
                            verb=verb,
                            api_group=group,
                            resource=name,
                            subresource=sub,
                        )
                    ).allowed
                ]
                if verbs:
                    verbs.sort(key=("get", "list", "watch").index)
                    allowed.append(f"{','.join(verbs)} {resource}.{group or 'core'}")
    return sorted(set(allowed))
