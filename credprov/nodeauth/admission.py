"""NodeRestriction: what a kubelet may write, checked against the objects it writes.

The Node authorizer decides from a request's attributes alone; it cannot see a request's
body. NodeRestriction (``plugin/pkg/admission/noderestriction``) is the admission plugin
that looks at the body of every create, update and delete a node makes, so a kubelet
``system:node:<name>`` can only:

* create and update its own Node, without new taints, a new ``configSource`` or
  labels outside the kubelet's own (:mod:`credprov.nodeauth._labels`);
* create mirror pods bound to itself, owned by its Node, that reference no API object, and
  delete pods bound to itself; update the status of (and evict) pods bound to itself;
* update only the status conditions and capacity of PVCs (``persistentvolumeclaims/status``);
* request service-account tokens bound to a pod on itself and — with
  ``ServiceAccountNodeAudienceRestriction`` — only for an audience that pod uses (a
  projected token volume or a CSI driver of one of its volumes) or that RBAC grants it with
  the ``request-serviceaccounts-token-audience`` verb (KEP-4412 registry audiences; asked
  even when a volume lookup failed, as since 1.38);
* touch only its own Lease (in ``kube-node-lease``), CSINode and ResourceSlices;
* create PodCertificateRequests only for pods on itself, for a signer a ``podCertificate``
  volume of the pod names or the authorizer grants with ``request-podcertificate-signer``
  (1.37), and kubelet CSRs only with ``CN=system:node:<name>``.

Everything else, and every request not from a node, is admitted. Refusals carry
upstream's messages: :attr:`AdmissionError.message` is the bare message,
``str(error)`` the API server's ``<resource> "<name>" is forbidden: <message>``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, NoReturn

from credprov._go.fmt import go_quote
from credprov.errors import NodeAccessError
from credprov.nodeauth import _labels, _refs, _semantic
from credprov.nodeauth._audience import aggregate, pod_references_audience
from credprov.nodeauth._csitranslation import CSITranslator, InTreeCSITranslator
from credprov.nodeauth._objects import Lookup, LookupFailed
from credprov.nodeauth._objects import m as _m
from credprov.nodeauth._objects import meta as _meta
from credprov.nodeauth._objects import s as _s
from credprov.nodeauth._objects import seq as _seq
from credprov.nodeauth._objects import spec as _spec
from credprov.nodeauth._objects import status as _status
from credprov.nodeauth._refs import MIRROR_POD_ANNOTATION, is_mirror_pod
from credprov.nodeauth.types import Attributes, Decision, ObjectGetter

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "AdmissionError",
    "AdmissionRequest",
    "CSITranslator",
    "InTreeCSITranslator",
    "NodeRestriction",
]

#: The feature gates NodeRestriction reads, with their defaults (upstream names).
#:
#: * ``ServiceAccountNodeAudienceRestriction`` — on: beta and on by default since 1.33 (the
#:   website's gate table; the KEP-4412 PRR text claims "enabled by default" already in
#:   1.32, where the website says off — the newest sources agree on on).
#: * ``PodCertificateRequest`` — off: alpha in 1.34, the newest NodeRestriction source read.
#: * ``RecoverVolumeExpansionFailure`` — on: beta (on) in 1.32, GA in 1.34.
#: * ``AllowInsecureKubeletCertificateSigningRequests`` — off: the CSR CN check is on.
FEATURE_GATE_DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {
        "ServiceAccountNodeAudienceRestriction": True,
        "PodCertificateRequest": False,
        "RecoverVolumeExpansionFailure": True,
        "AllowInsecureKubeletCertificateSigningRequests": False,
    }
)

NODE_LEASE_NAMESPACE = "kube-node-lease"
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
KUBE_APISERVER_CLIENT_KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
AUDIENCE_VERB = "request-serviceaccounts-token-audience"
#: The verb an authorizer grants to let a node name a signer no podCertificate volume of
#: the pod uses (kubernetes#140006, 1.37).
SIGNER_VERB = "request-podcertificate-signer"
CERTIFICATES_GROUP = "certificates.k8s.io"

_NODE_USER_PREFIX = "system:node:"
_NODES_GROUP = "system:nodes"
_HANDLED_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE"})

# PVC fields a node may change through persistentvolumeclaims/status.
_PVC_QUANTITY_MAPS = frozenset(
    {
        ("spec", "resources", "requests"),
        ("spec", "resources", "limits"),
        ("status", "capacity"),
        ("status", "allocatedResources"),
    }
)


def _node_identity(user: str, groups: Sequence[str]) -> tuple[str, bool]:
    """``nodeidentifier``: a node is ``system:node:<name>`` in the ``system:nodes`` group."""
    if not user.startswith(_NODE_USER_PREFIX) or _NODES_GROUP not in groups:
        return "", False
    return user[len(_NODE_USER_PREFIX) :], True


@dataclass(frozen=True)
class AdmissionRequest:
    """One write request as admission sees it (``admission.Attributes``).

    ``operation`` is ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``; ``resource`` is the
    lower-case plural and ``api_group`` its group (``""`` for core). ``object`` is the new
    object (create, update), ``old_object`` the stored one (update, delete), both as
    JSON-like mappings. On create an empty ``name`` is taken from the object, as the API
    server's create handler does.
    """

    user: str
    groups: tuple[str, ...]
    operation: str
    resource: str
    subresource: str = ""
    api_group: str = ""
    api_version: str = "v1"
    namespace: str = ""
    name: str = ""
    object: Mapping[str, Any] | None = None
    old_object: Mapping[str, Any] | None = None


class AdmissionError(NodeAccessError):
    """A refused request.

    Attributes:
        reason: ``Forbidden`` (HTTP 403), ``NotFound`` (404: an object the check needs is
            missing; the message is the lister's, e.g. ``pod "x" not found``) or
            ``InternalError`` (500: upstream returns a plain error, e.g. a UID that may
            only be stale, so a retry can succeed).
        message: the bare upstream message (``node "n1" can only create pods with
            spec.nodeName set to itself``).
        resource: the group-qualified resource (``pods``, ``leases.coordination.k8s.io``).
        name: the object name the API server reports (``Unknown`` when there is none).

    ``str(error)`` is the API server's one-line message: for Forbidden
    ``<resource> "<name>" is forbidden: <message>``, otherwise the message itself.
    """

    def __init__(self, reason: str, message: str, *, resource: str = "", name: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.resource = resource
        self.name = name

    def __str__(self) -> str:
        if self.reason != "Forbidden":
            return self.message
        if not self.resource:
            return f"forbidden: {self.message}"
        return f"{self.resource} {go_quote(self.name)} is forbidden: {self.message}"


def _type_name(obj: Any) -> str:
    """What Go's ``%T`` would say about an object of the wrong type."""
    if obj is None:
        return "<nil>"
    kind = _s(_m(obj).get("kind"))
    return kind or type(obj).__name__


class NodeRestriction:
    """The NodeRestriction admission plugin.

    Args:
        objects: the cluster's objects (the plugin's listers): pods, nodes, service
            accounts, and — for the audience restriction — PVCs, PVs and CSIDrivers.
        feature_gates: upstream gate names → on/off; unset gates take
            :data:`FEATURE_GATE_DEFAULTS`, gates this plugin does not read are ignored.
        authorizer: the API server's authorizer chain, asked whether a node may request a
            token for an audience no pod volume uses, or a pod certificate from a signer no
            pod volume names. Without one, such audiences and signers are refused (upstream
            requires one whenever the audience restriction is on).
        csi_translator: finds the CSI driver of in-tree volumes
            (default :class:`InTreeCSITranslator`).
    """

    def __init__(
        self,
        objects: ObjectGetter,
        *,
        feature_gates: Mapping[str, bool] | None = None,
        authorizer: Callable[[Attributes], Decision] | None = None,
        csi_translator: CSITranslator | None = None,
    ) -> None:
        gates = dict(FEATURE_GATE_DEFAULTS)
        for name, enabled in (feature_gates or {}).items():
            if name in gates:
                gates[name] = bool(enabled)
        self._lookup = Lookup(objects)
        self._authorizer = authorizer
        self._csi_translator: CSITranslator = csi_translator or InTreeCSITranslator()
        self.feature_gates: Mapping[str, bool] = MappingProxyType(gates)
        self._audience_restriction = gates["ServiceAccountNodeAudienceRestriction"]
        self._pod_certificate_requests = gates["PodCertificateRequest"]
        self._expansion_recovery = gates["RecoverVolumeExpansionFailure"]
        self._insecure_kubelet_csrs = gates["AllowInsecureKubeletCertificateSigningRequests"]
        self._handlers: dict[tuple[str, str], Callable[[AdmissionRequest, str], None]] = {
            ("", "pods"): self._admit_pod,
            ("", "nodes"): self._admit_node,
            ("", "persistentvolumeclaims"): self._admit_pvc,
            ("", "serviceaccounts"): self._admit_service_account,
            ("certificates.k8s.io", "podcertificaterequests"): self._admit_pcr,
            ("coordination.k8s.io", "leases"): self._admit_lease,
            ("storage.k8s.io", "csinodes"): self._admit_csinode,
            ("resource.k8s.io", "resourceslices"): self._admit_resource_slice,
            ("certificates.k8s.io", "certificatesigningrequests"): self._admit_csr,
        }

    # -- entry point ---------------------------------------------------------------------

    def admit(self, request: AdmissionRequest) -> None:
        """Admit the request (return None) or raise :class:`AdmissionError`.

        Only create, update and delete are checked; requests from users that are not
        nodes are always admitted ("our job is just to restrict nodes").
        """
        operation = request.operation.upper()
        if operation not in _HANDLED_OPERATIONS:
            return
        node, is_node = _node_identity(request.user, request.groups)
        if not is_node:
            return
        name = request.name
        if not name and operation == "CREATE":
            name = _s(_meta(request.object).get("name"))
        if operation != request.operation or name != request.name:
            request = replace(request, operation=operation, name=name)
        if not node:
            self._forbid(request, f"could not determine node from user {go_quote(request.user)}")
        handler = self._handlers.get((request.api_group, request.resource))
        if handler is not None:
            handler(request, node)

    # -- errors and lookups --------------------------------------------------------------

    @staticmethod
    def _forbid(request: AdmissionRequest, message: str) -> NoReturn:
        """``admission.NewForbidden``: the resource, and a name even on create."""
        resource = request.resource
        if request.api_group:
            resource = f"{resource}.{request.api_group}"
        name = request.name
        if not name:
            meta = _meta(request.object)
            name = _s(meta.get("name")) or _s(meta.get("generateName")) or "Unknown"
        raise AdmissionError("Forbidden", message, resource=resource, name=name)

    @staticmethod
    def _fail(message: str) -> NoReturn:
        """A plain (non-status) error: the API server answers 500 with the message."""
        raise AdmissionError("InternalError", message)

    def _get_or_refuse(
        self, request: AdmissionRequest, resource: str, namespace: str, name: str
    ) -> Mapping[str, Any]:
        """A lookup whose NotFound is returned as-is and other failures are Forbidden."""
        try:
            return self._lookup.get(resource, namespace, name)
        except LookupFailed as exc:
            if exc.not_found:
                raise AdmissionError("NotFound", exc.message) from None
            self._forbid(request, exc.message)

    def _typed(
        self, request: AdmissionRequest, obj: Mapping[str, Any] | None, kind: str
    ) -> Mapping[str, Any]:
        """The object, which must be of ``kind`` (a missing ``kind`` field is accepted)."""
        if obj is None or not isinstance(obj, Mapping) or _s(obj.get("kind")) not in ("", kind):
            self._forbid(request, f"unexpected type {_type_name(obj)}")
        return obj

    # -- pods ----------------------------------------------------------------------------

    def _admit_pod(self, request: AdmissionRequest, node: str) -> None:
        sub = request.subresource
        if sub == "":
            if request.operation == "CREATE":
                self._admit_pod_create(request, node)
            elif request.operation == "DELETE":
                pod = self._get_or_refuse(request, "pods", request.namespace, request.name)
                if _s(_spec(pod).get("nodeName")) != node:
                    self._forbid(
                        request,
                        f"node {go_quote(node)} can only delete pods with spec.nodeName set "
                        "to itself",
                    )
            else:
                self._forbid(
                    request,
                    f"unexpected operation {go_quote(request.operation)}, node {go_quote(node)} "
                    "can only create and delete mirror pods",
                )
        elif sub == "status":
            self._admit_pod_status(request, node)
        elif sub == "eviction":
            self._admit_pod_eviction(request, node)
        else:
            self._forbid(
                request,
                f"unexpected pod subresource {go_quote(sub)}, only 'status' and 'eviction' "
                "are allowed",
            )

    def _admit_pod_create(self, request: AdmissionRequest, node: str) -> None:
        pod = self._typed(request, request.object, "Pod")
        meta = _meta(pod)
        q = go_quote(node)
        if not is_mirror_pod(pod):
            self._forbid(
                request,
                f"pod does not have {go_quote(MIRROR_POD_ANNOTATION)} annotation, node {q} "
                "can only create mirror pods",
            )
        if _s(_spec(pod).get("nodeName")) != node:
            self._forbid(request, f"node {q} can only create pods with spec.nodeName set to itself")
        owners = _seq(meta.get("ownerReferences"))
        if len(owners) > 1:
            self._forbid(
                request,
                f"node {q} can only create pods with a single owner reference set to itself",
            )
        if not owners:
            self._forbid(
                request, f"node {q} can only create pods with an owner reference set to itself"
            )
        owner = _m(owners[0])
        if (
            owner.get("apiVersion") != "v1"
            or owner.get("kind") != "Node"
            or owner.get("name") != node
        ):
            self._forbid(
                request, f"node {q} can only create pods with an owner reference set to itself"
            )
        if owner.get("controller") is not True:
            self._forbid(
                request,
                f"node {q} can only create pods with a controller owner reference set to itself",
            )
        if owner.get("blockOwnerDeletion") is True:
            self._forbid(request, f"node {q} must not set blockOwnerDeletion on an owner reference")
        try:
            node_obj = self._lookup.get("nodes", "", node)
        except LookupFailed as exc:
            if exc.not_found:
                raise AdmissionError("NotFound", exc.message) from None
            self._forbid(request, f"error looking up node {node} to verify uid: {exc.message}")
        owner_uid = _s(owner.get("uid"))
        node_uid = _s(_meta(node_obj).get("uid"))
        if owner_uid != node_uid:
            # Upstream's argument order: the owner's UID is "expected".
            self._forbid(request, f"node {node} UID mismatch: expected {owner_uid} got {node_uid}")
        try:
            referenced = _refs.api_object_reference(pod)
        except _refs.UnknownVolumeError as exc:
            self._forbid(request, f"error checking mirror pod for API references: {exc}")
        if referenced is not None:
            self._forbid(request, f"node {q} can not create pods that reference {referenced}")

    def _admit_pod_status(self, request: AdmissionRequest, node: str) -> None:
        if request.operation != "UPDATE":
            self._forbid(request, f"unexpected operation {go_quote(request.operation)}")
        q = go_quote(node)
        old = self._typed(request, request.old_object, "Pod")
        if _s(_spec(old).get("nodeName")) != node:
            self._forbid(
                request,
                f"node {q} can only update pod status for pods with spec.nodeName set to itself",
            )
        new = self._typed(request, request.object, "Pod")
        if dict(_m(_meta(old).get("labels"))) != dict(_m(_meta(new).get("labels"))):
            self._forbid(request, f"node {q} cannot update labels through pod status")
        if not _claim_statuses_equal(
            _seq(_status(old).get("resourceClaimStatuses")),
            _seq(_status(new).get("resourceClaimStatuses")),
        ):
            # [sic] "statues": upstream's text.
            self._forbid(request, f"node {q} cannot update resource claim statues")
        if not _extended_claim_status_equal(
            _status(old).get("extendedResourceClaimStatus"),
            _status(new).get("extendedResourceClaimStatus"),
        ):
            self._forbid(request, f"node {q} cannot update extended resource claim status")

    def _admit_pod_eviction(self, request: AdmissionRequest, node: str) -> None:
        if request.operation != "CREATE":
            self._forbid(request, f"unexpected operation {request.operation}")
        eviction = self._typed(request, request.object, "Eviction")
        # The pod named in the URL wins over the one named in the Eviction body.
        pod_name = request.name or _s(_meta(eviction).get("name"))
        if not pod_name:
            self._forbid(request, "could not determine pod from request data")
        pod = self._get_or_refuse(request, "pods", request.namespace, pod_name)
        if _s(_spec(pod).get("nodeName")) != node:
            self._forbid(
                request, f"node {node} can only evict pods with spec.nodeName set to itself"
            )

    # -- nodes ---------------------------------------------------------------------------

    def _admit_node(self, request: AdmissionRequest, node: str) -> None:
        q = go_quote(node)
        if request.name != node:
            self._forbid(
                request, f"node {q} is not allowed to modify node {go_quote(request.name)}"
            )
        if request.operation == "CREATE":
            new = self._typed(request, request.object, "Node")
            if _spec(new).get("configSource") is not None:
                # [sic] "create pods": upstream's text for a Node create.
                self._forbid(
                    request, f"node {q} is not allowed to create pods with a non-nil configSource"
                )
            modified = _labels.modified_labels(_m(_meta(new).get("labels")), None)
            forbidden = _labels.forbidden_labels(modified)
            if forbidden:
                self._forbid(
                    request,
                    f"node {q} is not allowed to set the following labels: {', '.join(forbidden)}",
                )
        elif request.operation == "UPDATE":
            new = self._typed(request, request.object, "Node")
            old = self._typed(request, request.old_object, "Node")
            config_source = _spec(new).get("configSource")
            if config_source is not None and not _semantic.equal(
                config_source, _spec(old).get("configSource")
            ):
                self._forbid(
                    request,
                    f"node {q} is not allowed to update configSource to a new non-nil configSource",
                )
            if not _semantic.equal(_spec(new).get("taints"), _spec(old).get("taints")):
                self._forbid(request, f"node {q} is not allowed to modify taints")
            modified = _labels.modified_labels(
                _m(_meta(new).get("labels")), _m(_meta(old).get("labels"))
            )
            forbidden = _labels.forbidden_labels(modified)
            if forbidden:
                # Upstream's update message has no "node %q" prefix.
                self._forbid(request, f"is not allowed to modify labels: {', '.join(forbidden)}")

    # -- persistent volume claims ----------------------------------------------------------

    def _admit_pvc(self, request: AdmissionRequest, node: str) -> None:
        if request.subresource != "status":
            self._forbid(request, "may only update PVC status")
        if request.operation != "UPDATE":
            self._forbid(request, f"unexpected operation {go_quote(request.operation)}")
        old = self._typed(request, request.old_object, "PersistentVolumeClaim")
        new = self._typed(request, request.object, "PersistentVolumeClaim")
        ignored_status = ["capacity", "conditions"]
        if self._expansion_recovery:
            ignored_status += ["allocatedResourceStatuses", "allocatedResources"]
        old_n, new_n = (self._pvc_comparable(pvc, ignored_status) for pvc in (old, new))
        if old_n != new_n:
            self._forbid(
                request,
                f"node {go_quote(node)} is not allowed to update fields other than "
                f"status.quantity and status.conditions: {_semantic.diff(old_n, new_n)}",
            )

    @staticmethod
    def _pvc_comparable(pvc: Mapping[str, Any], ignored_status: Sequence[str]) -> Any:
        """The PVC without what a node may change (and without apiVersion/kind)."""
        norm = _semantic.normalize(pvc, _PVC_QUANTITY_MAPS)
        norm.pop("apiVersion", None)
        norm.pop("kind", None)
        for section, keys in (
            ("metadata", ("resourceVersion", "managedFields")),
            ("status", ignored_status),
        ):
            part = norm.get(section)
            if isinstance(part, dict):
                for key in keys:
                    part.pop(key, None)
                if not part:
                    del norm[section]
        return norm

    # -- service account tokens ----------------------------------------------------------

    def _admit_service_account(self, request: AdmissionRequest, node: str) -> None:
        if request.operation != "CREATE" or request.subresource != "token":
            return
        token_request = self._typed(request, request.object, "TokenRequest")
        spec = _spec(token_request)
        ref = spec.get("boundObjectRef")
        if (
            not isinstance(ref, Mapping)
            or ref.get("apiVersion") != "v1"
            or ref.get("kind") != "Pod"
            or not _s(ref.get("name"))
        ):
            self._forbid(request, "node requested token not bound to a pod")
        ref_uid = _s(ref.get("uid"))
        if not ref_uid:
            self._forbid(request, "node requested token with a pod binding without a uid")
        pod = self._get_or_refuse(request, "pods", request.namespace, _s(ref["name"]))
        if ref_uid != _s(_meta(pod).get("uid")):
            self._forbid(
                request,
                f"the UID in the bound object reference ({ref_uid}) does not match the UID in "
                "record. The object might have been deleted and then recreated",
            )
        if _s(_spec(pod).get("nodeName")) != node:
            self._forbid(
                request, "node requested token bound to a pod scheduled on a different node"
            )
        if self._audience_restriction:
            self._check_audience(request, spec, pod)

    def _check_audience(
        self, request: AdmissionRequest, spec: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> None:
        """The requested audience must be used by the pod, or granted by the authorizer.

        1.38 (kubernetes#140607): a volume lookup that fails (CSIDriver, PVC or PV missing)
        no longer refuses before the authorizer is asked; an ALLOW admits the request even
        then, and only a refusal reports the lookup errors (first, ahead of the
        authorizer's answer). 1.37 (kubernetes#139046) dropped "not found in pod spec
        volume" from the messages, which sent people adding token volumes to pods.
        """
        audiences = _seq(spec.get("audiences"))
        if len(audiences) > 1:
            self._forbid(request, "node may only request 0 or 1 audiences")
        audience = _s(audiences[0]) if audiences else ""
        found, errors = pod_references_audience(
            self._lookup, self._csi_translator, pod, audience, request.namespace
        )
        if found:
            return
        allowed, failure = self._authorize_grant(
            request, AUDIENCE_VERB, "", "v1", audience, request.name
        )
        if allowed:
            return
        q_aud = go_quote(audience)
        if errors:
            self._forbid(request, f"error validating audience {q_aud}: {aggregate(errors)}")
        # The two texts below are reconstructed from kubernetes#139046's description (its
        # diff was not available): the audience moved to the end, as %q.
        if failure:
            self._forbid(
                request,
                f"error authorizing {request.user} to request tokens for audience {q_aud}: "
                f"{failure}",
            )
        self._forbid(
            request, f"{request.user} is not authorized to request tokens for audience {q_aud}"
        )

    def _authorize(self, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, the authorizer's error text or ""); no authorizer allows nothing."""
        if self._authorizer is None:
            return False, ""
        try:
            decision = self._authorizer(attrs)
        except Exception as exc:  # an authorizer error refuses, with its text
            return False, str(exc) or type(exc).__name__
        return bool(decision.allowed), ""

    def _authorize_grant(
        self,
        request: AdmissionRequest,
        verb: str,
        api_group: str,
        api_version: str,
        resource: str,
        name: str,
    ) -> tuple[bool, str]:
        """Whether the requesting node holds the RBAC grant ``verb`` on ``resource`` (an
        audience or a signer) named ``name`` in the request's namespace: ``(allowed, the
        authorizer's error or "")``, as :meth:`_authorize` answers."""
        return self._authorize(
            Attributes(
                user=request.user,
                groups=tuple(request.groups),
                verb=verb,
                api_group=api_group,
                api_version=api_version,
                resource=resource,
                name=name,
                namespace=request.namespace,
                resource_request=True,
            )
        )

    # -- pod certificate requests --------------------------------------------------------

    def _admit_pcr(self, request: AdmissionRequest, node: str) -> None:
        if not self._pod_certificate_requests:
            self._forbid(request, "PodCertificateRequest feature gate is disabled")
        if request.operation != "CREATE":
            self._forbid(request, f"unexpected operation {request.operation}")
        if request.subresource:
            self._forbid(request, f"unexpected subresource {request.subresource}")
        namespace = request.namespace
        spec = _spec(self._typed(request, request.object, "PodCertificateRequest"))
        node_name = _s(spec.get("nodeName"))
        pod_name = _s(spec.get("podName"))
        pod_key = go_quote(f"{namespace}/{pod_name}")
        if node_name != node:
            self._forbid(
                request,
                f"PodCertificateRequest.Spec.NodeName={go_quote(node_name)}, which is not the "
                f"requesting node {go_quote(node)}",
            )
        node_obj = self._pcr_lookup(request, "nodes", "", node_name, f"node {go_quote(node_name)}")
        node_uid = _s(_meta(node_obj).get("uid"))
        if _s(spec.get("nodeUID")) != node_uid:
            # Informer lag may explain it: a plain error, so that a retry can succeed.
            self._fail(
                f"PodCertificateRequest for pod {pod_key} names node UID "
                f"{go_quote(_s(spec.get('nodeUID')))}, inconsistent with the running node "
                f"({go_quote(node_uid)})"
            )
        pod = self._pcr_lookup(request, "pods", namespace, pod_name, f"pod {pod_key}")
        pod_uid = _s(_meta(pod).get("uid"))
        if _s(spec.get("podUID")) != pod_uid:
            self._fail(
                f"PodCertificateRequest for pod {pod_key} contains pod UID "
                f"({go_quote(_s(spec.get('podUID')))}) which differs from running pod "
                f"{go_quote(pod_uid)}"
            )
        if _s(_spec(pod).get("nodeName")) != node_name:
            self._forbid(
                request,
                f"pod {pod_key} is not running on node {go_quote(node_name)} named in the "
                "PodCertificateRequest",
            )
        if is_mirror_pod(pod):
            self._forbid(request, f"pod {pod_key} is a mirror pod")
        sa_name = _s(spec.get("serviceAccountName"))
        pod_sa = _s(_spec(pod).get("serviceAccountName"))
        if sa_name != pod_sa:
            self._forbid(
                request,
                f"PodCertificateRequest for pod {pod_key} contains serviceAccountName "
                f"({go_quote(sa_name)}) that differs from running pod ({go_quote(pod_sa)})",
            )
        sa = self._pcr_lookup(
            request,
            "serviceaccounts",
            namespace,
            sa_name,
            f"service account {go_quote(f'{namespace}/{sa_name}')}",
        )
        sa_uid = _s(_meta(sa).get("uid"))
        if _s(spec.get("serviceAccountUID")) != sa_uid:
            self._fail(
                f"PodCertificateRequest for pod {pod_key} names service account UID "
                f"{go_quote(_s(spec.get('serviceAccountUID')))}, which differs from the running "
                f"service account ({go_quote(sa_uid)})"
            )
        self._check_signer(request, _s(spec.get("signerName")), pod, sa_name)

    def _check_signer(
        self, request: AdmissionRequest, signer: str, pod: Mapping[str, Any], sa_name: str
    ) -> None:
        """The signer must be one a ``podCertificate`` projected volume of the pod names, or
        one the authorizer lets the node request (kubernetes#140006, 1.37).

        Upstream's release note gives the check as ``verb=request-podcertificate-signer
        resource=<signerName>``; the other attributes and both messages are reconstructed
        (the PR's diff was not available), after the token-audience check it copies: the
        request's API group and version, the pod's service account as the name (so RBAC
        ``resourceNames`` scope a grant to service accounts), the request's namespace. RBAC
        matches ``resources`` literally: ``*`` grants every signer, there is no
        ``example.com/*`` domain wildcard as for CSR signers.
        """
        if signer in _pod_certificate_signers(pod):
            return
        allowed, failure = self._authorize_grant(
            request, SIGNER_VERB, CERTIFICATES_GROUP, request.api_version, signer, sa_name
        )
        if allowed:
            return
        q_signer = go_quote(signer)
        if failure:
            self._forbid(
                request,
                f"error authorizing {request.user} to request pod certificates from signer "
                f"{q_signer}: {failure}",
            )
        self._forbid(
            request,
            f"{request.user} is not authorized to request pod certificates from signer {q_signer}",
        )

    def _pcr_lookup(
        self, request: AdmissionRequest, resource: str, namespace: str, name: str, what: str
    ) -> Mapping[str, Any]:
        """A lookup for a PCR check: NotFound is a plain (retryable) error, others Forbidden."""
        try:
            return self._lookup.get(resource, namespace, name)
        except LookupFailed as exc:
            message = f"while retrieving {what} named in the PodCertificateRequest: {exc.message}"
            if exc.not_found:
                self._fail(message)
            self._forbid(request, message)

    # -- leases, CSINodes, ResourceSlices ------------------------------------------------

    def _admit_lease(self, request: AdmissionRequest, node: str) -> None:
        if request.namespace != NODE_LEASE_NAMESPACE:
            self._forbid(
                request,
                f"can only access leases in the {go_quote(NODE_LEASE_NAMESPACE)} system namespace",
            )
        self._require_own_name(
            request,
            node,
            "node lease",
            lambda: _s(_meta(self._typed(request, request.object, "Lease")).get("name")),
        )

    def _admit_csinode(self, request: AdmissionRequest, node: str) -> None:
        def created_name() -> str:
            if not isinstance(request.object, Mapping):
                self._forbid(request, "unable to access the object name")
            return _s(_meta(request.object).get("name"))

        self._require_own_name(request, node, "CSINode", created_name)

    def _require_own_name(
        self, request: AdmissionRequest, node: str, what: str, created_name: Callable[[], str]
    ) -> None:
        """Forbid unless the object is named after the node: its name is the request's, or
        on CREATE ``created_name()`` (read from the new object)."""
        name = created_name() if request.operation == "CREATE" else request.name
        if name != node:
            self._forbid(
                request, f"can only access {what} with the same name as the requesting node"
            )

    def _admit_resource_slice(self, request: AdmissionRequest, node: str) -> None:
        # Create and (per object, also for deletecollection) delete: the authorizer cannot
        # see the slice's nodeName; updates go through its graph check instead.
        if request.operation == "CREATE":
            verb, slice_ = "create", self._typed(request, request.object, "ResourceSlice")
        elif request.operation == "DELETE":
            verb, slice_ = "delete", self._typed(request, request.old_object, "ResourceSlice")
        else:
            return
        if _spec(slice_).get("nodeName") != node:
            self._forbid(
                request,
                f"can only {verb} ResourceSlice with the same NodeName as the requesting node",
            )

    # -- certificate signing requests ----------------------------------------------------

    def _admit_csr(self, request: AdmissionRequest, node: str) -> None:
        if self._insecure_kubelet_csrs or request.operation != "CREATE":
            return
        spec = _spec(self._typed(request, request.object, "CertificateSigningRequest"))
        if spec.get("signerName") not in (
            KUBELET_SERVING_SIGNER,
            KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
        ):
            return
        from credprov.nodeauth import _csr

        try:
            common_name = _csr.csr_common_name(_csr_bytes(spec.get("request")))
        except _csr.CSRParseError as exc:
            self._forbid(request, f"unable to parse csr: {exc}")
        if common_name != f"{_NODE_USER_PREFIX}{node}":
            self._forbid(request, f"can only create a node CSR with CN={_NODE_USER_PREFIX}{node}")


def _pod_certificate_signers(pod: Mapping[str, Any]) -> set[str]:
    """``signerName`` of every ``podCertificate`` projected volume source of the pod."""
    signers: set[str] = set()
    for volume in _seq(_spec(pod).get("volumes")):
        for source in _seq(_m(_m(volume).get("projected")).get("sources")):
            cert = _m(source).get("podCertificate")
            if isinstance(cert, Mapping):
                signers.add(_s(cert.get("signerName")))
    return signers


def _csr_bytes(value: Any) -> bytes:
    """``spec.request``: raw PEM bytes, or the base64 text JSON carries ``[]byte`` as."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value.encode("utf-8", "replace")
    return b""


def _claim_statuses_equal(old: Sequence[Any], new: Sequence[Any]) -> bool:
    """Same length and, in order, the same name and ``resourceClaimName`` (nil ≠ "")."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        a, b = _m(a), _m(b)
        if _s(a.get("name")) != _s(b.get("name")):
            return False
        claim_a, claim_b = a.get("resourceClaimName"), b.get("resourceClaimName")
        if (claim_a is None) != (claim_b is None) or claim_a != claim_b:
            return False
    return True


def _extended_claim_status_equal(old: Any, new: Any) -> bool:
    """Both unset, or the same claim name and request mappings (nil equals empty)."""
    if old is None or new is None:
        return old is None and new is None
    old, new = _m(old), _m(new)
    if _s(old.get("resourceClaimName")) != _s(new.get("resourceClaimName")):
        return False

    def mappings(status: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return [
            (
                _s(_m(m).get("containerName")),
                _s(_m(m).get("resourceName")),
                _s(_m(m).get("requestName")),
            )
            for m in _seq(status.get("requestMappings"))
        ]

    return mappings(old) == mappings(new)
