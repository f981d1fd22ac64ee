"""The API server as one node sees it: reads through the Node authorizer, token requests
through NodeRestriction, service-account tokens from a local issuer.

This is how the kubelet emulator (``credprov get-credentials --objects … --pod …``) gets
what a real kubelet asks the API server for while resolving image credentials:

* the pod's ``imagePullSecrets`` — ``get secrets`` as ``system:node:<node>``, allowed only
  when a pod bound to the node references the secret (the Node authorizer's graph);
* for providers with ``tokenAttributes`` (KEP-4412), the pod's ServiceAccount (``get
  serviceaccounts``, gated by ``KubeletServiceAccountTokenForCredentialProviders``) and a
  token for it (``create serviceaccounts/token``): the TokenRequest carries the service
  account's UID as a precondition, one audience and a binding to the pod; it must pass the
  Node authorizer, then NodeRestriction (pod bound to this node, UID match, the audience
  restriction, with RBAC's ``request-serviceaccounts-token-audience`` as the fallback),
  then the storage checks, before the local :class:`TokenIssuer` signs it. As the kubelet,
  tokens are reused through a token manager
  (:class:`~credprov.nodeauth.tokenmanager.TokenManager`): one TokenRequest per pod,
  service account and audience until the token nears its expiry.

Authorization is the apiserver's ``Node,RBAC`` chain: the Node authorizer first, then the
RBAC rules found in the objects. Every decision, including NodeRestriction's question
about a token audience, is kept in :attr:`NodeAPI.audit_log`. Errors read like the API
server's (``secrets "x" is forbidden: User "system:node:n" cannot get resource …``) and
never contain a token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from credprov.base.clock import Clock, RealClock
from credprov.credentialprovider.chain import ServiceAccountError, ServiceAccountInfo, TokenRequest
from credprov.errors import NodeAccessError
from credprov.nodeauth.tokenmanager import (
    IssuedToken,
    TokenManager,
    TokenManagerError,
    TokenRequestKey,
)
from credprov.nodeauth.types import Attributes, Decision

__all__ = ["APIError", "NodeAPI", "PullSecrets", "TokenIssuer"]

log = logging.getLogger("credprov.nodeauth")

#: Token lifetime when a TokenRequest does not ask (the API server's default).
DEFAULT_TOKEN_SECONDS = 3600
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"


class APIError(NodeAccessError):
    """An API server error: ``reason`` is ``Forbidden``, ``NotFound`` or ``Conflict``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Signs service-account tokens shaped like the API server's bound tokens (HS256).

    The key is random per issuer unless given, so tokens from one run are worthless
    anywhere else. Claims: ``iss``, ``sub`` (``system:serviceaccount:<ns>:<name>``),
    ``aud``, ``exp``/``iat``/``nbf``, ``jti`` and the ``kubernetes.io`` block with the
    namespace, service account, pod and node.
    """

    def __init__(
        self,
        key: bytes | None = None,
        issuer: str = DEFAULT_ISSUER,
        clock: Clock | None = None,
    ) -> None:
        self._key = key if key is not None else os.urandom(32)
        self.issuer = issuer
        self._clock = clock or RealClock()
        self._lock = threading.Lock()
        #: Tokens signed so far.
        self.issued = 0

    @property
    def clock(self) -> Clock:
        """The issuer's clock: its ``time()`` is what ``iat``/``exp`` are stamped with."""
        return self._clock

    def now(self) -> float:
        """The issuer's time (Unix seconds)."""
        return self._clock.time()

    def issue_token(
        self,
        *,
        namespace: str,
        service_account: str,
        service_account_uid: str,
        audiences: Sequence[str],
        pod: tuple[str, str] | None = None,
        node: tuple[str, str] | None = None,
        expiration_seconds: int = DEFAULT_TOKEN_SECONDS,
    ) -> IssuedToken:
        """A signed token, with the expiry a TokenRequest's status reports; ``pod`` and
        ``node`` are ``(name, uid)`` bindings."""
        now = int(self._clock.time())
        k8s: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": service_account, "uid": service_account_uid},
        }
        if pod is not None:
            k8s["pod"] = {"name": pod[0], "uid": pod[1]}
        if node is not None:
            k8s["node"] = {"name": node[0], "uid": node[1]}
        claims = {
            "aud": list(audiences),
            "exp": now + expiration_seconds,
            "iat": now,
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": k8s,
            "nbf": now,
            "sub": f"system:serviceaccount:{namespace}:{service_account}",
        }
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{header}.{payload}".encode("ascii")
        signature = _b64(hmac.new(self._key, signing_input, hashlib.sha256).digest())
        with self._lock:
            self.issued += 1
        return IssuedToken(
            token=f"{header}.{payload}.{signature}",
            expires_at=float(now + expiration_seconds),
            expiration_seconds=expiration_seconds,
        )

    def verify(self, token: str, audience: str | None = None) -> dict[str, Any]:
        """The claims of a token this issuer signed, checked for signature, time and audience.

        Raises:
            ValueError: not a valid token of this issuer (the message never quotes it).
        """
        try:
            header, payload, signature = token.split(".")
        except ValueError:
            raise ValueError("not a JWT") from None
        expected = _b64(
            hmac.new(self._key, f"{header}.{payload}".encode("ascii"), hashlib.sha256).digest()
        )
        if not hmac.compare_digest(expected, signature):
            raise ValueError("bad signature")
        claims: dict[str, Any] = json.loads(_unb64(payload))
        now = self._clock.time()
        if not claims.get("nbf", 0) <= now < claims.get("exp", 0):
            raise ValueError("token expired or not yet valid")
        if audience is not None and audience not in claims.get("aud", []):
            raise ValueError("audience not accepted")
        return claims


def _forbidden_message(attrs: Attributes, reason: str) -> str:
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    what = f'{attrs.resource} "{attrs.name}"' if attrs.name else attrs.resource
    where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
    message = (
        f'{what} is forbidden: User "{attrs.user}" cannot {attrs.verb} resource "{resource}" '
        f'in API group "{attrs.api_group}"{where}'
    )
    return f"{message}: {reason}" if reason else message


@dataclass(frozen=True)
class PullSecrets:
    """What ``getPullSecretsForPod`` found for a pod, read as its node.

    ``secrets`` are the Secrets the node could read, in the pod's order; ``missing`` the
    names it could not (the kubelet's ``FailedToRetrieveImagePullSecret`` event lists
    them); ``warnings`` one line per missing secret with the API server's reason.
    """

    secrets: list[Mapping[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


_RBAC_KINDS = frozenset({"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"})


class NodeAPI:
    """The API server's answers to one node (``system:node:<name>``).

    Args:
        store: the cluster's objects (:class:`credprov.nodeauth.store.ObjectStore`); change
            it through :meth:`apply` and :meth:`delete` so the graph and RBAC follow.
        node_name: the node the requests come from.
        feature_gates: upstream gate names → on/off, for the authorizer and admission.
        issuer: the token issuer (a fresh random-key one by default).
        groups: the node user's groups.
        populator: the :class:`~credprov.nodeauth.graph.GraphPopulator` of another
            NodeAPI over the same ``store``, to share its graph: the graph is the API
            server's, not one node's, and building it is linear in the objects, so one per
            node would make asking as every node of a cluster quadratic. Changes through
            :meth:`apply`/:meth:`delete` of one NodeAPI then reach the others' graph too.

    Thread-safe for concurrent lookups (one kubelet pulling several images at once).
    """

    def __init__(
        self,
        store: Any,
        node_name: str,
        *,
        feature_gates: Mapping[str, bool] | None = None,
        issuer: TokenIssuer | None = None,
        groups: Sequence[str] = ("system:nodes", "system:authenticated"),
        populator: Any = None,
    ) -> None:
        from credprov.nodeauth.admission import NodeRestriction
        from credprov.nodeauth.authorizer import NodeAuthorizer
        from credprov.nodeauth.graph import Graph, GraphPopulator

        self.store = store
        self.node_name = node_name
        self.user = f"system:node:{node_name}"
        self.groups = tuple(groups)
        if populator is None:
            populator = GraphPopulator(store, Graph())
        self.populator = populator
        self.graph = populator.graph
        self.node_authorizer = NodeAuthorizer(self.graph, feature_gates)
        self.rbac = self._load_rbac()
        self.admission = NodeRestriction(
            store, feature_gates=feature_gates, authorizer=self._authorize_logged
        )
        self.issuer = issuer or TokenIssuer()
        #: The kubelet's token cache in front of :meth:`create_token`.
        self.token_manager = TokenManager(self._request_token, self.issuer.clock)
        self._audit_lock = threading.Lock()
        #: Every authorization decision made, in order: (attributes, decision).
        self.audit_log: list[tuple[Attributes, Decision]] = []

    def _load_rbac(self) -> Any:
        from credprov.nodeauth.rbac import RBACAuthorizer

        return RBACAuthorizer(
            obj
            for resource in ("clusterroles", "roles", "clusterrolebindings", "rolebindings")
            for obj in self.store.list(resource)
        )

    # -- the cluster changing under the node ----------------------------------------------

    def apply(self, obj: Mapping[str, Any]) -> None:
        """Create or replace an object (a recreated pod or service account, a new grant)."""
        self.populator.apply(obj)
        if obj.get("kind") in _RBAC_KINDS:
            self.rbac = self._load_rbac()

    def delete(self, obj: Mapping[str, Any]) -> None:
        """Delete the object with ``obj``'s kind, namespace and name."""
        old = self.populator.delete(obj)
        if old is not None and old.get("kind") in _RBAC_KINDS:
            self.rbac = self._load_rbac()

    # -- authorization ----------------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> Decision:
        """The ``Node,RBAC`` chain: the first ALLOW wins; reasons of no-opinions are joined."""
        reasons = []
        for authorizer in (self.node_authorizer, self.rbac):
            decision = authorizer.authorize(attrs)
            if decision.allowed:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
        return Decision.no_opinion(", ".join(reasons))

    def _authorize_logged(self, attrs: Attributes) -> Decision:
        decision = self.authorize(attrs)
        with self._audit_lock:
            self.audit_log.append((attrs, decision))
        if log.isEnabledFor(logging.DEBUG):
            resource = (
                f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
            )
            log.debug(
                "%s %s %s/%s as %s: %s%s",
                attrs.verb,
                resource,
                attrs.namespace,
                attrs.name,
                attrs.user,
                "allowed" if decision.allowed else "refused",
                f" ({decision.reason})" if decision.reason else "",
            )
        return decision

    def _check(self, verb: str, resource: str, namespace: str, name: str, sub: str = "") -> None:
        attrs = Attributes(
            user=self.user,
            groups=self.groups,
            verb=verb,
            resource=resource,
            subresource=sub,
            namespace=namespace,
            name=name,
        )
        decision = self._authorize_logged(attrs)
        if not decision.allowed:
            raise APIError("Forbidden", _forbidden_message(attrs, decision.reason))

    # -- reads ------------------------------------------------------------------------------

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any]:
        """``GET`` one object as the node. Raises APIError (Forbidden before NotFound)."""
        self._check("get", resource, namespace, name)
        obj: Mapping[str, Any] | None = self.store.get(resource, namespace, name)
        if obj is None:
            raise APIError("NotFound", f'{resource} "{name}" not found')
        return obj

    def pull_secrets(self, pod: Mapping[str, Any]) -> PullSecrets:
        """The pod's ``imagePullSecrets`` the node may read, and the ones it may not.

        As the kubelet: a secret that cannot be read is skipped (its name in ``missing``,
        "Unable to retrieve pull secret …" in ``warnings``) and the pull goes on without
        it; entries with an empty name are ignored.
        """
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        result = PullSecrets()
        for ref in (pod.get("spec") or {}).get("imagePullSecrets") or ():
            name = str(ref.get("name") or "") if isinstance(ref, Mapping) else ""
            if not name:
                continue
            try:
                result.secrets.append(self.get("secrets", namespace, name))
            except APIError as exc:
                result.missing.append(name)
                result.warnings.append(
                    f"Unable to retrieve pull secret {namespace}/{name} for "
                    f"{namespace}/{meta.get('name', '')} due to {exc.message}.  "
                    "The image pull may not succeed."
                )
        return result

    # -- KEP-4412 callbacks for credprov.credentialprovider.plugin.provider.PluginProvider ----------------------

    def get_service_account(self, namespace: str, name: str) -> ServiceAccountInfo:
        """``GET serviceaccounts/<name>`` → ``ServiceAccountInfo`` (uid, annotations).

        Raises:
            ServiceAccountError: refused or not found, with the API server's message.
        """
        try:
            sa = self.get("serviceaccounts", namespace, name)
        except APIError as exc:
            raise ServiceAccountError(exc.message) from None
        meta = sa.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        return ServiceAccountInfo(
            uid=str(meta.get("uid", "")),
            annotations={str(k): str(v) for k, v in annotations.items()},
        )

    def get_service_account_token(self, request: TokenRequest, *, cached: bool = True) -> str:
        """A token for the pod as the kubelet gets one: from its token manager, which sends
        a TokenRequest (:meth:`create_token`) only when it has no fresh token for exactly
        this request. ``cached=False`` skips the token manager: every call is a request.

        Raises:
            ServiceAccountError: ``failed to fetch token: <the API server's message>``
                (uncached: the API server's message alone).
        """
        key = TokenRequestKey(
            namespace=request.namespace,
            service_account=request.service_account_name,
            service_account_uid=request.service_account_uid,
            audiences=(request.audience,),
            pod_name=request.pod_name,
            pod_uid=request.pod_uid,
        )
        try:
            return self.token_manager.get(key) if cached else self._request_token(key).token
        except TokenManagerError as exc:
            raise ServiceAccountError(str(exc)) from None
        except APIError as exc:
            raise ServiceAccountError(exc.message) from None

    def create_token(self, request: TokenRequest) -> str:
        """One ``POST serviceaccounts/<sa>/token`` as the kubelet sends it for a plugin,
        with the arguments of :meth:`get_service_account_token` but no token cache: every
        call is a request.

        Raises:
            ServiceAccountError: refused by the authorizer, NodeRestriction or the storage
                checks, with the API server's message.
        """
        return self.get_service_account_token(request, cached=False)

    def _request_token(self, key: TokenRequestKey) -> IssuedToken:
        """The TokenRequest of ``key`` through authorization, admission and storage.

        Raises:
            APIError: the API server's refusal.
        """
        from credprov.nodeauth.admission import AdmissionError, AdmissionRequest

        metadata: dict[str, str] = {"name": key.service_account, "namespace": key.namespace}
        if key.service_account_uid:
            metadata["uid"] = key.service_account_uid  # the UID precondition
        spec: dict[str, Any] = {
            "audiences": list(key.audiences),
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": key.pod_name,
                "uid": key.pod_uid,
            },
        }
        if key.expiration_seconds is not None:
            spec["expirationSeconds"] = key.expiration_seconds
        token_request: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": metadata,
            "spec": spec,
        }
        self._check("create", "serviceaccounts", key.namespace, key.service_account, "token")
        try:
            self.admission.admit(
                AdmissionRequest(
                    user=self.user,
                    groups=self.groups,
                    operation="CREATE",
                    resource="serviceaccounts",
                    subresource="token",
                    namespace=key.namespace,
                    name=key.service_account,
                    object=token_request,
                )
            )
        except AdmissionError as exc:
            reason = exc.reason if exc.reason in ("Forbidden", "NotFound") else "InternalError"
            raise APIError(reason, str(exc)) from None
        issued = self._issue(token_request, key.namespace, key.service_account)
        log.debug(
            "issued a token for %s/%s, audiences %s, bound to pod %s (%s), expiring in %ds",
            key.namespace,
            key.service_account,
            ",".join(key.audiences),
            key.pod_name,
            key.pod_uid,
            issued.expiration_seconds,
        )
        return issued

    def _issue(self, request: Mapping[str, Any], namespace: str, name: str) -> IssuedToken:
        """The token REST storage: the service account, its UID precondition, the bound
        pod (its UID and service account), then the signature."""
        sa = self.store.get("serviceaccounts", namespace, name)
        if sa is None:
            raise APIError("NotFound", f'serviceaccounts "{name}" not found')
        sa_uid = str((sa.get("metadata") or {}).get("uid", ""))
        want_uid = str((request.get("metadata") or {}).get("uid", ""))
        if want_uid and want_uid != sa_uid:
            raise APIError(
                "Conflict",
                f'Operation cannot be fulfilled on serviceaccounts "{name}": the UID in the '
                f"precondition ({want_uid}) does not match the UID in record ({sa_uid}). "
                "The object might have been deleted and then recreated",
            )
        spec = request["spec"]
        ref = spec["boundObjectRef"]
        pod = self.store.get("pods", namespace, ref["name"])
        if pod is None:
            raise APIError("NotFound", f'pods "{ref["name"]}" not found')
        pod_meta = pod.get("metadata") or {}
        pod_spec = pod.get("spec") or {}
        pod_sa = str(pod_spec.get("serviceAccountName") or "")
        if pod_sa != name:
            raise APIError(
                "BadRequest",
                f'cannot bind token for serviceaccount "{name}" to pod running with '
                "different serviceaccount name.",
            )
        pod_uid = str(pod_meta.get("uid", ""))
        if ref.get("uid") and ref["uid"] != pod_uid:
            raise APIError(
                "Conflict",
                f'Operation cannot be fulfilled on Pod "{ref["name"]}": the UID in the bound '
                f"object reference ({ref['uid']}) does not match the UID in record. The object "
                "might have been deleted and then recreated",
            )
        # The API server binds the token to the pod's node too (ServiceAccountTokenPodNodeInfo).
        node_name = str(pod_spec.get("nodeName") or "")
        node = self.store.get("nodes", "", node_name) if node_name else None
        node_uid = str(((node or {}).get("metadata") or {}).get("uid", ""))
        return self.issuer.issue_token(
            namespace=namespace,
            service_account=name,
            service_account_uid=sa_uid,
            audiences=list(spec["audiences"]),
            pod=(str(ref["name"]), pod_uid),
            node=(node_name, node_uid) if node is not None else None,
            expiration_seconds=int(spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS),
        )
