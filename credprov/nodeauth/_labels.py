"""Which node labels a kubelet may set: NodeRestriction's label policy.

A kubelet that could label its own Node freely could steer privileged workloads to itself
(``nodeSelector: {node-restriction.kubernetes.io/secure: "true"}``). NodeRestriction
therefore refuses, on create and on every update, any *modified* label (added, removed or
changed) that is either

* in the ``node-restriction.kubernetes.io`` namespace or a subdomain of it, or
* a Kubernetes label (namespace ``kubernetes.io``, ``k8s.io`` or a subdomain of either)
  that is not one of the kubelet's own labels (``k8s.io/kubelet/pkg/apis``'s
  ``IsKubeletLabel``: the well-known list below, plus anything under
  ``kubelet.kubernetes.io`` / ``node.kubernetes.io`` and their subdomains).

Labels without a namespace and third-party namespaces (``foo``, ``example.com/foo``) are
always allowed, and so are forbidden labels that stay unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "KUBELET_LABELS",
    "KUBELET_LABEL_NAMESPACES",
    "NODE_RESTRICTION_LABEL_NAMESPACE",
    "forbidden_labels",
    "is_kubelet_label",
    "is_kubernetes_label",
    "label_namespace",
    "modified_labels",
]

#: The labels a kubelet sets on its own Node (``kubeletapis.KubeletLabels()``).
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)

#: Label namespaces (and their subdomains) reserved for kubelets.
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")

#: Labels in this namespace are for admins only: nodes can never set them.
NODE_RESTRICTION_LABEL_NAMESPACE = "node-restriction.kubernetes.io"


def label_namespace(key: str) -> str:
    """The part of a label key before the first ``/`` ("" when there is none)."""
    namespace, sep, _ = key.partition("/")
    return namespace if sep else ""


def _in_namespace(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubernetes_label(key: str) -> bool:
    """Whether the key is in the ``kubernetes.io`` or ``k8s.io`` namespaces or below."""
    namespace = label_namespace(key)
    return _in_namespace(namespace, "kubernetes.io") or _in_namespace(namespace, "k8s.io")


def is_kubelet_label(key: str) -> bool:
    """Whether the kubelet may set this Kubernetes label on its Node."""
    if key in KUBELET_LABELS:
        return True
    namespace = label_namespace(key)
    return any(_in_namespace(namespace, allowed) for allowed in KUBELET_LABEL_NAMESPACES)


def modified_labels(new: Mapping[str, str] | None, old: Mapping[str, str] | None) -> set[str]:
    """Keys added, removed or changed between two label maps (``None`` is no labels)."""
    new = new or {}
    old = old or {}
    return {k for k in new.keys() | old.keys() if k not in new or k not in old or new[k] != old[k]}


def forbidden_labels(keys: Iterable[str]) -> list[str]:
    """The keys a node may not add, remove or modify, sorted as upstream lists them."""
    forbidden = set()
    for key in keys:
        if _in_namespace(label_namespace(key), NODE_RESTRICTION_LABEL_NAMESPACE) or (
            is_kubernetes_label(key) and not is_kubelet_label(key)
        ):
            forbidden.add(key)
    return sorted(forbidden)
