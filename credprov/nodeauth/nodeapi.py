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
  then the storage checks, before the local :class:`TokenIssuer` signs it.

Authorization is the apiserver's ``Node,RBAC`` chain: the Node authorizer first, then the
RBAC rules found in the objects. Errors read like the API server's (``secrets "x" is
forbidden: User "system:node:n" cannot get resource …``) and never contain a token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from credprov.nodeauth.types import Attributes, Decision

__all__ = ["APIError", "NodeAPI", "TokenIssuer"]

#: Token lifetime when a TokenRequest does not ask (the API server's default).
DEFAULT_TOKEN_SECONDS = 3600
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"


class APIError(Exception):
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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key if key is not None else os.urandom(32)
        self.issuer = issuer
        self._clock = clock
        self.issued = 0

    def issue(
        self,
        *,
        namespace: str,
        service_account: str,
        service_account_uid: str,
        audiences: Sequence[str],
        pod: tuple[str, str] | None = None,
        node: tuple[str, str] | None = None,
        expiration_seconds: int = DEFAULT_TOKEN_SECONDS,
    ) -> str:
        """A signed token; ``pod`` and ``node`` are ``(name, uid)`` bindings."""
        now = int(self._clock())
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
        self.issued += 1
        return f"{header}.{payload}.{signature}"

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
        now = self._clock()
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


class NodeAPI:
    """The API server's answers to one node (``system:node:<name>``).

    Args:
        store: the cluster's objects (:class:`credprov.nodeauth.store.ObjectStore`).
        node_name: the node the requests come from.
        feature_gates: upstream gate names → on/off, for the authorizer and admission.
        issuer: the token issuer (a fresh random-key one by default).
    """

    def __init__(
        self,
        store: Any,
        node_name: str,
        *,
        feature_gates: Mapping[str, bool] | None = None,
        issuer: TokenIssuer | None = None,
        groups: Sequence[str] = ("system:nodes", "system:authenticated"),
    ) -> None:
        from credprov.nodeauth.admission import NodeRestriction
        from credprov.nodeauth.authorizer import NodeAuthorizer
        from credprov.nodeauth.graph import Graph
        from credprov.nodeauth.rbac import RBACAuthorizer

        self.store = store
        self.node_name = node_name
        self.user = f"system:node:{node_name}"
        self.groups = tuple(groups)
        self.graph = Graph.from_store(store)
        self.node_authorizer = NodeAuthorizer(self.graph, feature_gates)
        rbac_objects = [
            obj
            for resource in ("clusterroles", "roles", "clusterrolebindings", "rolebindings")
            for obj in store.list(resource)
        ]
        self.rbac = RBACAuthorizer(rbac_objects)
        self.admission = NodeRestriction(
            store, feature_gates=feature_gates, authorizer=self.authorize
        )
        self.issuer = issuer or TokenIssuer()
        #: Every authorization decision made, in order: (attributes, decision).
        self.audit_log: list[tuple[Attributes, Decision]] = []

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
        decision = self.authorize(attrs)
        self.audit_log.append((attrs, decision))
        if not decision.allowed:
            raise APIError("Forbidden", _forbidden_message(attrs, decision.reason))

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any]:
        """``GET`` one object as the node. Raises APIError (Forbidden before NotFound)."""
        self._check("get", resource, namespace, name)
        obj = self.store.get(resource, namespace, name)
        if obj is None:
            raise APIError("NotFound", f'{resource} "{name}" not found')
        return obj

    def pull_secrets(self, pod: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[str]]:
        """The pod's ``imagePullSecrets`` the node may read, and a warning per one it may not.

        As the kubelet: a secret that cannot be read is skipped with a warning
        ("Unable to retrieve pull secret …"), and the pull goes on without it.
        """
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        secrets: list[Mapping[str, Any]] = []
        warnings: list[str] = []
        for ref in (pod.get("spec") or {}).get("imagePullSecrets") or ():
            name = str((ref or {}).get("name", "")) if isinstance(ref, dict) else ""
            if not name:
                continue
            try:
                secrets.append(self.get("secrets", namespace, name))
            except APIError as exc:
                warnings.append(
                    f"Unable to retrieve pull secret {namespace}/{name} for "
                    f"{namespace}/{meta.get('name', '')} due to {exc.message}.  "
                    "The image pull may not succeed."
                )
        return secrets, warnings

    # -- KEP-4412 callbacks for credprov.plugin.provider.PluginProvider ----------------------

    def get_service_account(self, namespace: str, name: str) -> Any:
        """``GET serviceaccounts/<name>`` → ``ServiceAccountInfo`` (uid, annotations)."""
        from credprov.plugin.provider import ServiceAccountError, ServiceAccountInfo

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

    def create_token(
        self,
        namespace: str,
        service_account: str,
        service_account_uid: str,
        audience: str,
        pod_name: str,
        pod_uid: str,
    ) -> str:
        """``POST serviceaccounts/<sa>/token`` as the kubelet sends it for a plugin.

        Raises:
            ServiceAccountError: refused by the authorizer, NodeRestriction or the storage
                checks, with the API server's message.
        """
        from credprov.nodeauth.admission import AdmissionError, AdmissionRequest
        from credprov.plugin.provider import ServiceAccountError

        metadata: dict[str, str] = {"name": service_account, "namespace": namespace}
        if service_account_uid:
            metadata["uid"] = service_account_uid  # the UID precondition
        token_request: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": metadata,
            "spec": {
                "audiences": [audience],
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_name,
                    "uid": pod_uid,
                },
            },
        }
        try:
            self._check("create", "serviceaccounts", namespace, service_account, "token")
            try:
                self.admission.admit(
                    AdmissionRequest(
                        user=self.user,
                        groups=self.groups,
                        operation="CREATE",
                        resource="serviceaccounts",
                        subresource="token",
                        namespace=namespace,
                        name=service_account,
                        object=token_request,
                    )
                )
            except AdmissionError as exc:
                raise APIError("Forbidden", str(exc)) from None
            return self._issue(token_request, namespace, service_account)
        except APIError as exc:
            raise ServiceAccountError(exc.message) from None

    def _issue(self, request: Mapping[str, Any], namespace: str, name: str) -> str:
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
        ref = request["spec"]["boundObjectRef"]
        pod = self.store.get("pods", namespace, ref["name"])
        if pod is None:
            raise APIError("NotFound", f'pods "{ref["name"]}" not found')
        pod_meta = pod.get("metadata") or {}
        if ref.get("uid") and ref["uid"] != pod_meta.get("uid"):
            raise APIError(
                "Conflict",
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                f"in record ({pod_meta.get('uid', '')}). The object might have been deleted and "
                "then recreated",
            )
        pod_sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        if pod_sa != name:
            raise APIError(
                "BadRequest",
                f'cannot bind token for serviceaccount "{name}" to pod running with '
                f'different serviceaccount name "{pod_sa}"',
            )
        node = self.store.get("nodes", "", self.node_name)
        node_uid = str(((node or {}).get("metadata") or {}).get("uid", ""))
        return self.issuer.issue(
            namespace=namespace,
            service_account=name,
            service_account_uid=sa_uid,
            audiences=list(request["spec"]["audiences"]),
            pod=(str(ref["name"]), str(pod_meta.get("uid", ""))),
            node=(self.node_name, node_uid) if node is not None else None,
        )
