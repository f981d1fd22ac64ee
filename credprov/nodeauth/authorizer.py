"""The Node authorizer (``plugin/pkg/auth/authorizer/node/node_authorizer.go``).

Requests from a node identity (``system:node:<name>`` in ``system:nodes``) are sorted by
API group and resource:

* secrets, config maps, PVCs, PVs, resource claims, volume attachments, service accounts
  (``get`` for KEP-4412, ``create …/token``), resource slices, pods and pod certificate
  requests are allowed only when the graph links the object to the requesting node;
* leases and CSINodes only under the node's own name; nodes (read) only the node's own;
  pods and resource slices listed only with a ``spec.nodeName=<node>`` field selector;
* everything else by the fixed rules of the ``system:node`` ClusterRole
  (``bootstrappolicy.NodeRules``).

The authorizer never denies: a refusal is ``NoOpinion`` with upstream's reason, so that a
later authorizer (RBAC) may still allow. Preconditions are checked in upstream's order,
since the order decides the reason. Non-nodes get ``NoOpinion`` with no reason.

Feature gates go by upstream name, with upstream's defaults (:data:`FEATURE_GATE_DEFAULTS`);
gates this authorizer does not read are ignored, so one mapping can serve NodeRestriction
too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from credprov._go.fmt import go_quote
from credprov.nodeauth import graph as g
from credprov.nodeauth.identity import node_identity
from credprov.nodeauth.types import Attributes, Decision

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "Explanation",
    "NodeAuthorizer",
    "node_rules",
    "parse_field_selector",
]

_log = logging.getLogger("credprov.nodeauth")

#: The feature gates the Node authorizer reads, with their defaults (upstream names).
#:
#: * ``AuthorizeNodeWithSelectors`` — on: beta (on) in 1.32, GA since; off restores reads of
#:   every node and pod through the static rules.
#: * ``KubeletServiceAccountTokenForCredentialProviders`` — on: beta (on) since 1.34; lets a
#:   node ``get`` the service accounts its pods use (KEP-4412).
#: * ``DynamicResourceAllocation`` — on (GA): the static ``get resourceclaims`` rule.
#: * ``ClusterTrustBundleProjection`` — off (beta, off): the static clustertrustbundles rule.
#: * ``PodCertificateRequest`` — off (alpha in 1.34): podcertificaterequests via the graph.
FEATURE_GATE_DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {
        "AuthorizeNodeWithSelectors": True,
        "KubeletServiceAccountTokenForCredentialProviders": True,
        "DynamicResourceAllocation": True,
        "ClusterTrustBundleProjection": False,
        "PodCertificateRequest": False,
    }
)

_NO_OPINION = Decision.no_opinion()
_ALLOW = Decision.allow()


def _no(reason: str) -> Decision:
    return Decision.no_opinion(reason)


# Refusals whose reason does not depend on the request.
_CAN_ONLY_READ = _no("can only read resources of this type")
_CANNOT_READ_SUB = _no("cannot read subresource")
_NAMESPACED_ONLY = _no("can only read namespaced object of this type")
_NO_NAME = _no("No Object name found")
_GET_ONLY = _no("can only get individual resources of this type")
_CANNOT_GET_SUB = _no("cannot get subresource")
_STATUS_VERBS = _no("can only get/update/patch this type")
_TOKEN_VERBS = _no("can only create tokens for individual service accounts")
_TOKEN_ONLY = _no("can only create token subresource of serviceaccount")
_NO_SA_GET = _no("not allowed to get service accounts")
_LEASE_VERBS = _no("can only get, create, update, patch, or delete a node lease")
_LEASE_NAMESPACE = _no('can only access leases in the "kube-node-lease" system namespace')
_LEASE_NAME = _no("can only access node lease with the same name as the requesting node")
_CSINODE_VERBS = _no("can only get, create, update, patch, or delete a CSINode")
_CSINODE_SUB = _no("cannot authorize CSINode subresources")
_CSINODE_NAME = _no("can only access CSINode with the same name as the requesting node")
_SLICE_SUB = _no("cannot authorize ResourceSlice subresources")
_SLICE_SELECTOR = _no(
    "can only list/watch/deletecollection resourceslices with nodeName field selector"
)
_SLICE_VERBS = _no(
    "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, "
    "update, patch, delete, deletecollection"
)
_POD_SELECTOR = _no("can only list/watch pods with spec.nodeName field selector")
_PCR_SUB = _no("nodes may not access the status subresource of PodCertificateRequests")
_PCR_SELECTOR = _no("can only list/watch podcertificaterequests with nodeName field selector")

_READ_VERBS = frozenset({"get", "list", "watch"})
_UPDATE_VERBS = frozenset({"update", "patch"})
_OWN_OBJECT_VERBS = frozenset({"get", "create", "update", "patch", "delete"})
_NODE_LEASE_NAMESPACE = "kube-node-lease"
_NODE_NAME_FIELD = "spec.nodeName"
#: Refusal decisions kept per node name (the upstream scalability limit is 5,000 nodes).
_MAX_CACHED_REFUSALS = 20_000


def node_rules(feature_gates: Mapping[str, bool] | None = None) -> list[dict[str, list[str]]]:
    """``bootstrappolicy.NodeRules()``: the ``system:node`` ClusterRole's rules.

    Each rule is ``{"verbs", "apiGroups", "resources"}`` (``resource/subresource`` for
    subresources), in upstream's order, with the gated rules of ``feature_gates``.
    """
    gates = dict(FEATURE_GATE_DEFAULTS)
    gates.update({k: bool(v) for k, v in (feature_gates or {}).items() if k in gates})

    def rule(verbs: str, groups: str, resources: str) -> dict[str, list[str]]:
        return {
            "verbs": verbs.split(),
            "apiGroups": ["" if grp == "core" else grp for grp in groups.split()],
            "resources": resources.split(),
        }

    rules = [
        rule("create", "authentication.k8s.io", "tokenreviews"),
        rule(
            "create",
            "authorization.k8s.io",
            "subjectaccessreviews localsubjectaccessreviews",
        ),
        rule("get list watch", "core", "services"),
        rule("create get list watch", "core", "nodes"),
        rule("update patch", "core", "nodes/status"),
        rule("update patch", "core", "nodes"),
        rule("create update patch", "core events.k8s.io", "events"),
        rule("get list watch", "core", "pods"),
        rule("create delete", "core", "pods"),
        rule("update patch", "core", "pods/status"),
        rule("create", "core", "pods/eviction"),
        rule("get list watch", "core", "secrets configmaps"),
        rule("get", "core", "persistentvolumeclaims persistentvolumes"),
        rule("get", "core", "endpoints"),
        rule("create get list watch", "certificates.k8s.io", "certificatesigningrequests"),
        rule("get create update patch delete", "coordination.k8s.io", "leases"),
        rule("get", "storage.k8s.io", "volumeattachments"),
        rule("create", "core", "serviceaccounts/token"),
        rule("get update patch", "core", "persistentvolumeclaims/status"),
        rule("get watch list", "storage.k8s.io", "csidrivers"),
        rule("get create update patch delete", "storage.k8s.io", "csinodes"),
        rule("get list watch", "node.k8s.io", "runtimeclasses"),
    ]
    if gates["DynamicResourceAllocation"]:
        rules.append(rule("get", "resource.k8s.io", "resourceclaims"))
        rules.append(rule("deletecollection", "resource.k8s.io", "resourceslices"))
    if gates["ClusterTrustBundleProjection"]:
        rules.append(rule("get list watch", "certificates.k8s.io", "clustertrustbundles"))
    if gates["KubeletServiceAccountTokenForCredentialProviders"]:
        rules.append(rule("get", "core", "serviceaccounts"))
    if gates["PodCertificateRequest"]:
        rules.append(rule("create get list watch", "certificates.k8s.io", "podcertificaterequests"))
    return rules


def parse_field_selector(selector: str) -> list[tuple[str, str, str]] | None:
    """``fields.ParseSelector``: ``[(field, operator, value)]`` with operator ``=`` (for
    both ``=`` and ``==``) or ``!=``; ``[]`` for an empty selector, None when invalid.

    Terms are separated by unescaped commas; values may escape ``\\``, ``,`` and ``=``.
    """
    if not selector:
        return []
    terms: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in selector:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    requirements: list[tuple[str, str, str]] = []
    for term in terms:
        if not term:
            continue
        for i in range(len(term)):
            op = next((o for o in ("!=", "==", "=") if term.startswith(o, i)), None)
            if op is not None:
                value = _unescape(term[i + len(op) :])
                if value is None:
                    return None
                requirements.append((term[:i], "!=" if op == "!=" else "=", value))
                break
        else:
            return None
    return requirements


def _unescape(value: str) -> str | None:
    if "\\" not in value:
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in ("\\", ",", "="):
                return None
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return None if escaped else "".join(out)


def _selects_node(attrs: Attributes, field: str, node_name: str) -> bool:
    requirements = parse_field_selector(attrs.field_selector) or ()
    return any(f == field and op == "=" and v == node_name for f, op, v in requirements)


@dataclass(frozen=True)
class Explanation:
    """Why a decision was made, for people (``credprov nodeauth check``).

    ``route`` is ``not-a-node``, ``unknown-node``, ``graph`` (``path`` is the object's path
    to the node, or ``detail`` says why there is none), ``node-authorizer`` (a rule of the
    authorizer itself: own lease, own Node, field selector, mirror pods …) or
    ``node-rules`` (the ``system:node`` rules; ``rule`` is the one that matched).
    """

    decision: Decision
    node_name: str
    route: str
    path: tuple[str, ...] = ()
    detail: str = ""
    rule: Mapping[str, Any] | None = None


_Handler = Callable[[str, Attributes], Decision]


class NodeAuthorizer:
    """The Node authorizer over a :class:`~credprov.nodeauth.graph.Graph`.

    Args:
        graph: the object graph (kept up to date by a ``GraphPopulator``).
        feature_gates: upstream gate names → on/off; see :data:`FEATURE_GATE_DEFAULTS`.
    """

    def __init__(self, graph: g.Graph, feature_gates: Mapping[str, bool] | None = None) -> None:
        gates = dict(FEATURE_GATE_DEFAULTS)
        for name, enabled in (feature_gates or {}).items():
            if name in gates:
                gates[name] = bool(enabled)
        self.graph = graph
        self.feature_gates: Mapping[str, bool] = MappingProxyType(gates)
        self._selectors = gates["AuthorizeNodeWithSelectors"]
        self._sa_get = (
            gates["KubeletServiceAccountTokenForCredentialProviders"]
            or gates["PodCertificateRequest"]
        )
        self.rules = node_rules(gates)
        self._allowed = frozenset(
            (verb, group, resource)
            for rule in self.rules
            for verb in rule["verbs"]
            for group in rule["apiGroups"]
            for resource in rule["resources"]
        )
        by_kind: dict[str, _Handler] = {
            g.SECRET: self._secret,
            g.CONFIGMAP: self._configmap,
            g.PVC: self._pvc,
            g.PV: self._pv,
            g.RESOURCE_CLAIM: self._resource_claim,
            g.VOLUME_ATTACHMENT: self._volume_attachment,
            g.SERVICE_ACCOUNT: self._service_account,
            g.RESOURCE_SLICE: self._resource_slice,
        }
        handlers = {key: by_kind[kind] for key, kind in _GRAPH_KINDS.items() if kind in by_kind}
        handlers[("coordination.k8s.io", "leases")] = self._lease
        handlers[("storage.k8s.io", "csinodes")] = self._csinode
        if self._selectors:
            handlers[("", "nodes")] = self._node
            handlers[("", "pods")] = self._pod
        if gates["PodCertificateRequest"]:
            handlers[("certificates.k8s.io", "podcertificaterequests")] = self._pcr
        self._handlers = handlers
        self._refusals: dict[str, Decision] = {}

    # -- the decision -------------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> Decision:
        """``Authorize``: ALLOW, or NO_OPINION with upstream's reason; never DENY."""
        node_name, is_node = node_identity(attrs.user, attrs.groups)
        if not is_node:
            return _NO_OPINION
        if not node_name:
            return _no(f"unknown node for user {go_quote(attrs.user)}")
        if attrs.resource_request:
            handler = self._handlers.get((attrs.api_group, attrs.resource))
            if handler is not None:
                decision = handler(node_name, attrs)
                if not decision.allowed and _log.isEnabledFor(logging.INFO):
                    _log.info("NODE DENY: '%s' %s", node_name, _describe(attrs))
                return decision
        return self._static(attrs)

    def _static(self, attrs: Attributes) -> Decision:
        if not attrs.resource_request:
            return _NO_OPINION  # the node rules grant no non-resource URL
        resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        if (attrs.verb, attrs.api_group, resource) in self._allowed:
            return _ALLOW
        return _NO_OPINION

    def _related(self, node_name: str, kind: str, attrs: Attributes) -> Decision:
        """upstream ``authorize``: a name, then a path in the graph."""
        if not attrs.name:
            return _NO_NAME
        if self.graph.has_path_from(node_name, kind, attrs.namespace, attrs.name):
            return _ALLOW
        return self._no_relationship(node_name)

    def _no_relationship(self, node_name: str) -> Decision:
        # One decision per node, made once: refusals then cost what allowances do.
        decision = self._refusals.get(node_name)
        if decision is None:
            decision = _no(f"no relationship found between node '{node_name}' and this object")
            if len(self._refusals) < _MAX_CACHED_REFUSALS:
                self._refusals[node_name] = decision
        return decision

    def _read_namespaced(self, node_name: str, kind: str, attrs: Attributes) -> Decision:
        if attrs.verb not in _READ_VERBS:
            return _CAN_ONLY_READ
        if attrs.subresource:
            return _CANNOT_READ_SUB
        if not attrs.namespace:
            return _NAMESPACED_ONLY
        return self._related(node_name, kind, attrs)

    def _get(self, node_name: str, kind: str, attrs: Attributes) -> Decision:
        if attrs.verb != "get":
            return _GET_ONLY
        if attrs.subresource:
            return _CANNOT_GET_SUB
        return self._related(node_name, kind, attrs)

    def _secret(self, node_name: str, attrs: Attributes) -> Decision:
        return self._read_namespaced(node_name, g.SECRET, attrs)

    def _configmap(self, node_name: str, attrs: Attributes) -> Decision:
        return self._read_namespaced(node_name, g.CONFIGMAP, attrs)

    def _pvc(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.subresource == "status":
            if attrs.verb not in _UPDATE_VERBS:
                return _STATUS_VERBS
            return self._related(node_name, g.PVC, attrs)
        return self._get(node_name, g.PVC, attrs)

    def _pv(self, node_name: str, attrs: Attributes) -> Decision:
        return self._get(node_name, g.PV, attrs)

    def _resource_claim(self, node_name: str, attrs: Attributes) -> Decision:
        return self._get(node_name, g.RESOURCE_CLAIM, attrs)

    def _volume_attachment(self, node_name: str, attrs: Attributes) -> Decision:
        return self._get(node_name, g.VOLUME_ATTACHMENT, attrs)

    def _service_account(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.verb == "get" and not attrs.subresource:
            # KEP-4412: the kubelet reads the UID and annotations of a pod's service
            # account before asking for a token for a credential provider.
            if not self._sa_get:
                return _NO_SA_GET
            return self._read_namespaced(node_name, g.SERVICE_ACCOUNT, attrs)
        if attrs.verb != "create" or not attrs.name:
            return _TOKEN_VERBS
        if attrs.subresource != "token":
            return _TOKEN_ONLY
        return self._related(node_name, g.SERVICE_ACCOUNT, attrs)

    def _lease(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.verb not in _OWN_OBJECT_VERBS:
            return _LEASE_VERBS
        if attrs.namespace != _NODE_LEASE_NAMESPACE:
            return _LEASE_NAMESPACE
        # On create the name is in the body: NodeRestriction checks it.
        if attrs.verb != "create" and attrs.name != node_name:
            return _LEASE_NAME
        return _ALLOW

    def _csinode(self, node_name: str, attrs: Attributes) -> Decision:
        if attrs.verb not in _OWN_OBJECT_VERBS:
            return _CSINODE_VERBS
        if attrs.subresource:
            return _CSINODE_SUB
        if attrs.verb != "create" and attrs.name != node_name:
            return _CSINODE_NAME
        return _ALLOW

    def _resource_slice(self, node_name: str, attrs: Attributes) -> Decision:
        return self._node_scoped(
            node_name,
            attrs,
            g.RESOURCE_SLICE,
            related=("get", "update", "patch", "delete"),
            listing=("watch", "list", "deletecollection"),
            refusals=(_SLICE_SUB, _SLICE_SELECTOR, _SLICE_VERBS),
            selector_required=self._selectors,
        )

    def _node_scoped(
        self,
        node_name: str,
        attrs: Attributes,
        kind: str,
        *,
        related: tuple[str, ...],
        listing: tuple[str, ...],
        refusals: tuple[Decision, Decision, Decision],
        selector_required: bool = True,
    ) -> Decision:
        """A resource whose objects each belong to one node (ResourceSlices,
        PodCertificateRequests): no subresource; ``create`` is left to NodeRestriction (it
        checks the body); ``related`` verbs need a graph path to the named object;
        ``listing`` verbs need the ``spec.nodeName`` field selector (when
        ``selector_required``). ``refusals`` are (subresource, selector, other verb)."""
        no_subresource, no_selector, other_verb = refusals
        if attrs.subresource:
            return no_subresource
        verb = attrs.verb
        if verb == "create":
            return _ALLOW
        if verb in related:
            return self._related(node_name, kind, attrs)
        if verb in listing:
            if not selector_required or _selects_node(attrs, _NODE_NAME_FIELD, node_name):
                return _ALLOW
            return no_selector
        return other_verb

    def _node(self, node_name: str, attrs: Attributes) -> Decision:
        verb = attrs.verb
        if not attrs.subresource:
            if verb in ("create", "update", "patch"):
                return _ALLOW  # NodeRestriction limits writes to the node's own object
            if verb in _READ_VERBS:
                # By name, not through the graph: a kubelet reads its Node before creating it.
                if attrs.name == node_name:
                    return _ALLOW
                if not attrs.name:
                    return _no(
                        f"node '{node_name}' cannot read all nodes, only its own Node object"
                    )
                return _no(
                    f"node '{node_name}' cannot read '{attrs.name}', only its own Node object"
                )
        elif attrs.subresource == "status" and verb in _UPDATE_VERBS:
            return _ALLOW
        return _NO_OPINION

    def _pod(self, node_name: str, attrs: Attributes) -> Decision:
        verb = attrs.verb
        subresource = attrs.subresource
        if not subresource:
            if verb == "get":
                return self._get(node_name, g.POD, attrs)
            if verb in ("list", "watch"):
                if _selects_node(attrs, _NODE_NAME_FIELD, node_name):
                    return _ALLOW
                if attrs.name:
                    return self._related(node_name, g.POD, attrs)
                return _POD_SELECTOR
            if verb in ("create", "delete"):
                return _ALLOW  # mirror pods; NodeRestriction guards them
        elif subresource == "status":
            if verb in _UPDATE_VERBS:
                return _ALLOW
        elif subresource == "eviction" and verb == "create":
            return _ALLOW
        return _NO_OPINION

    def _pcr(self, node_name: str, attrs: Attributes) -> Decision:
        # create: NodeRestriction checks node, pod and service account.
        return self._node_scoped(
            node_name,
            attrs,
            g.POD_CERTIFICATE_REQUEST,
            related=("get",),
            listing=("list", "watch"),
            refusals=(
                _PCR_SUB,
                _PCR_SELECTOR,
                _no(f"nodes may not {attrs.verb} podcertificaterequests"),
            ),
        )

    # -- explanation ----------------------------------------------------------------------

    def explain(self, attrs: Attributes) -> Explanation:
        """The decision, with the route that made it and the graph path (or its absence)."""
        decision = self.authorize(attrs)
        node_name, is_node = node_identity(attrs.user, attrs.groups)
        if not is_node:
            return Explanation(
                decision,
                "",
                "not-a-node",
                detail="not a node identity: a node is user system:node:<name> in group "
                "system:nodes",
            )
        if not node_name:
            return Explanation(decision, "", "unknown-node")
        handled = attrs.resource_request and (attrs.api_group, attrs.resource) in self._handlers
        if handled:
            kind = self._graph_kind(attrs)
            if kind is not None and (
                decision.allowed or decision.reason.startswith("no relationship found")
            ):
                path, detail = self.graph.explain_path(node_name, kind, attrs.namespace, attrs.name)
                return Explanation(
                    decision, node_name, "graph", tuple(path or ()), "" if path else detail
                )
            return Explanation(decision, node_name, "node-authorizer")
        rule = None
        if decision.allowed:
            resource = (
                f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
            )
            rule = next(
                r
                for r in self.rules
                if attrs.verb in r["verbs"]
                and attrs.api_group in r["apiGroups"]
                and resource in r["resources"]
            )
        return Explanation(decision, node_name, "node-rules", rule=rule)

    @staticmethod
    def _graph_kind(attrs: Attributes) -> str | None:
        """The graph kind of a named object's resource (None: not in the graph, or no name)."""
        return _GRAPH_KINDS.get((attrs.api_group, attrs.resource)) if attrs.name else None


#: (API group, resource) -> the graph's vertex kind for the resources the graph holds.
_GRAPH_KINDS: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("", "secrets"): g.SECRET,
        ("", "configmaps"): g.CONFIGMAP,
        ("", "persistentvolumeclaims"): g.PVC,
        ("", "persistentvolumes"): g.PV,
        ("resource.k8s.io", "resourceclaims"): g.RESOURCE_CLAIM,
        ("storage.k8s.io", "volumeattachments"): g.VOLUME_ATTACHMENT,
        ("", "serviceaccounts"): g.SERVICE_ACCOUNT,
        ("resource.k8s.io", "resourceslices"): g.RESOURCE_SLICE,
        ("", "pods"): g.POD,
        ("certificates.k8s.io", "podcertificaterequests"): g.POD_CERTIFICATE_REQUEST,
    }
)


def _describe(attrs: Attributes) -> str:
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    group = attrs.api_group or "core"
    where = f"{attrs.namespace}/{attrs.name}" if attrs.namespace else attrs.name
    return f"{attrs.verb} {resource}.{group} {where}".rstrip()
