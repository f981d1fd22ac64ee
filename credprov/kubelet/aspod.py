"""``--objects FILE --pod NS/NAME [--node NAME]``: a pod of a cluster, and the API server as
its node sees it. Shared by ``get-credentials`` and ``ensure-image``.

The objects file is the cluster as the API server stores it (``kubectl get … -o yaml``):
the pod is read as it is there, so a pod without ``spec.serviceAccountName`` has no
service account, as a static pod (the API server's ServiceAccount admission sets
``default`` on every other pod, and ``kubectl`` output always shows it). Everything the
kubelet would ask the API server goes through :class:`credprov.nodeauth.nodeapi.NodeAPI`
as ``system:node:<node>``: the pod's pull secrets (``get secrets``, Node authorizer) and,
for KEP-4412 providers, the service account and a token bound to the pod (Node
authorizer, NodeRestriction, RBAC for the registry audience).

Errors are :class:`credprov.kubelet.KubeletError`, one line each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from credprov.kubelet import KubeletError
from credprov.kubelet.podspec import pod_images

__all__ = ["AsPod", "load_as_pod", "split_pod_ref"]


def split_pod_ref(value: str, flag: str = "--pod") -> tuple[str, str]:
    """``NS/NAME`` → ``(NS, NAME)``.

    Raises:
        KubeletError: not exactly two non-empty parts.
    """
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise KubeletError(f"{flag} {value!r}: want NAMESPACE/NAME")
    return namespace, name


@dataclass
class AsPod:
    """A pod of the objects file, its node, and that node's view of the API server.

    ``secrets``/``missing_secrets``/``warnings`` are the pod's pull secrets as the node
    could read them (:meth:`credprov.nodeauth.nodeapi.NodeAPI.pull_secrets`).
    """

    api: Any  # credprov.nodeauth.nodeapi.NodeAPI
    pod: Mapping[str, Any]
    node: str
    namespace: str
    name: str
    uid: str
    service_account_name: str
    images: list[str] = field(default_factory=list)
    secrets: list[Mapping[str, Any]] = field(default_factory=list)
    missing_secrets: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def info(self) -> Any:
        """The :class:`credprov.credentialprovider.chain.PodInfo` providers are asked for."""
        from credprov.credentialprovider.chain import PodInfo

        return PodInfo(
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            service_account_name=self.service_account_name,
        )

    @property
    def service_accounts(self) -> Any:
        """``register_credential_provider_plugins(service_accounts=...)``: where KEP-4412
        providers get the pod's service account and token, through the node's API."""
        return self.api

    def to_dict(self) -> dict[str, Any]:
        """The pod, the node, the warnings and every authorization made (for ``-o json``);
        never a token."""
        return {
            "pod": {
                "namespace": self.namespace,
                "name": self.name,
                "uid": self.uid,
                "serviceAccountName": self.service_account_name,
            },
            "node": self.node,
            "warnings": list(self.warnings),
            "tokensIssued": self.api.issuer.issued,
            "authorizations": [
                {
                    "verb": a.verb,
                    "resource": a.resource,
                    **({"subresource": a.subresource} if a.subresource else {}),
                    "namespace": a.namespace,
                    "name": a.name,
                    "allowed": d.allowed,
                    "reason": d.reason,
                }
                for a, d in list(self.api.audit_log)
            ],
        }


def _pod_images(spec: Mapping[str, Any]) -> list[str]:
    """Every image the kubelet pulls for the pod, each once, in :func:`pod_images` order."""
    images: list[str] = []
    for _, image, _ in pod_images(spec):
        if image and image not in images:
            images.append(image)
    return images


def load_as_pod(
    objects_path: str,
    pod_ref: str,
    node: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
) -> AsPod:
    """Load ``objects_path``, find the pod ``pod_ref`` (``NS/NAME``) and read its pull
    secrets as ``node`` (default: the pod's ``spec.nodeName``).

    Raises:
        KubeletError: a bad ``NS/NAME``, an unreadable or invalid objects file, a pod that is
            not there, or an unbound pod without ``node``.
    """
    from credprov.nodeauth.nodeapi import NodeAPI
    from credprov.nodeauth.store import NodeAuthError, load_objects_file

    namespace, name = split_pod_ref(pod_ref)
    try:
        store = load_objects_file(objects_path)
    except NodeAuthError as exc:
        raise KubeletError(str(exc)) from None
    pod = store.get("pods", namespace, name)
    if pod is None:
        raise KubeletError(f"pod {namespace}/{name} is not in {objects_path}")
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        raise KubeletError(
            f"pod {namespace}/{name} in {objects_path}: metadata and spec must be objects"
        )
    node_name = node or str(spec.get("nodeName") or "")
    if not node_name:
        raise KubeletError(f"pod {namespace}/{name} is not bound to a node: pass --node")
    api = NodeAPI(store, node_name, feature_gates=dict(feature_gates) if feature_gates else None)
    sa = spec.get("serviceAccountName")
    as_pod = AsPod(
        api=api,
        pod=pod,
        node=node_name,
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        service_account_name=sa if isinstance(sa, str) else "",
        images=_pod_images(spec),
    )
    found = api.pull_secrets(pod)
    # A Secret stored without a namespace lives in the pod's: record its real coordinates.
    as_pod.secrets = [
        secret
        if (secret.get("metadata") or {}).get("namespace")
        else {**secret, "metadata": {**(secret.get("metadata") or {}), "namespace": namespace}}
        for secret in found.secrets
    ]
    as_pod.missing_secrets = list(found.missing)
    as_pod.warnings = list(found.warnings)
    return as_pod
