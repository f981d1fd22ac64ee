"""Objects and helpers shared by the NodeRestriction tests.

The scenario is upstream admission_test's: node ``mynode`` (UID ``mynode-uid``) makes the
requests; ``othernode`` is someone else; pods live in namespace ``ns``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from credprov.nodeauth.admission import AdmissionError, AdmissionRequest, NodeRestriction

NODE = "mynode"
NODE_USER = "system:node:mynode"
NODE_GROUPS = ("system:nodes", "system:authenticated")
MIRROR = "kubernetes.io/config.mirror"

_RESOURCES = {
    "Pod": "pods",
    "Node": "nodes",
    "ServiceAccount": "serviceaccounts",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "CSIDriver": "csidrivers",
}


class Objects:
    """A dict-backed ``ObjectGetter`` over objects indexed by their kind, namespace, name."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._objects: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        self.lookups: list[tuple[str, str, str]] = []
        for obj in objects:
            meta = obj["metadata"]
            key = (_RESOURCES[obj["kind"]], meta.get("namespace", ""), meta["name"])
            self._objects[key] = obj

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object, or None."""
        self.lookups.append((resource, namespace, name))
        return self._objects.get((resource, namespace, name))


class BrokenObjects:
    """An ``ObjectGetter`` whose every read fails."""

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """Always raises."""
        raise RuntimeError("boom")


def node(name: str = NODE, uid: str | None = None, **spec: Any) -> dict[str, Any]:
    """A Node; ``labels=`` goes to metadata, anything else to spec."""
    labels = spec.pop("labels", None)
    meta: dict[str, Any] = {"name": name, "uid": uid or f"{name}-uid"}
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}


def pod(
    name: str,
    node_name: str = NODE,
    *,
    mirror: bool = False,
    namespace: str = "ns",
    uid: str = "pod-uid",
    **spec: Any,
) -> dict[str, Any]:
    """A pod bound to ``node_name``; a mirror pod also gets upstream's default owner."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if mirror:
        meta["annotations"] = {MIRROR: "true"}
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "name": node_name,
                "uid": f"{node_name}-uid",
                "controller": True,
            }
        ]
    body = {"nodeName": node_name, "containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def with_changes(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy with ``value`` at the dotted ``path`` (``None`` removes the key)."""
    out = copy.deepcopy(dict(obj))
    *parents, last = path.split(".")
    target = out
    for key in parents:
        target = target.setdefault(key, {})
    if value is None:
        target.pop(last, None)
    else:
        target[last] = value
    return out


def request(
    operation: str,
    resource: str,
    *,
    obj: Mapping[str, Any] | None = None,
    old: Mapping[str, Any] | None = None,
    name: str = "",
    namespace: str = "",
    subresource: str = "",
    group: str = "",
    user: str = NODE_USER,
    groups: tuple[str, ...] = NODE_GROUPS,
) -> AdmissionRequest:
    """An admission request, by default from ``mynode``."""
    return AdmissionRequest(
        user=user,
        groups=groups,
        operation=operation,
        resource=resource,
        subresource=subresource,
        api_group=group,
        namespace=namespace,
        name=name,
        object=obj,
        old_object=old,
    )


def outcome(plugin: NodeRestriction, req: AdmissionRequest) -> tuple[str, str] | None:
    """None when admitted, else ``(reason, message)``."""
    try:
        plugin.admit(req)
    except AdmissionError as exc:
        return exc.reason, exc.message
    return None


def forbidden(message: str) -> tuple[str, str]:
    """The expected outcome of a Forbidden refusal."""
    return "Forbidden", message
