"""The cluster's objects, as the apiserver's listers hold them, loaded from kubectl output.

:class:`ObjectStore` keeps full objects keyed by ``(resource, namespace, name)`` —
``resource`` the lower-case plural (``pods``, ``persistentvolumeclaims``), ``namespace``
``""`` for cluster-scoped kinds and ``"default"`` for a namespaced object that names none
(where ``kubectl create`` would put it). It implements
:class:`~credprov.nodeauth.types.ObjectGetter` for the authorizer's neighbours
(NodeRestriction, the kubelet emulator) and takes add/update/delete events one object at
a time (:class:`~credprov.nodeauth.graph.GraphPopulator` forwards them to the graph).

:func:`load_objects_file` reads what ``kubectl get … -o json|yaml`` prints: a ``List`` (or
a typed list such as ``PodList``, whose items may omit ``kind``), a single object, several
YAML documents, or a JSON array. Errors are one line naming the file and the object's
position, never quoting the file (a Secret's data is a secret).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from credprov._go.decode import DecodeError
from credprov._go.json import YAMLError, load_yaml_all
from credprov.api.objects import decode_object
from credprov.base.fileio import InputReadError, read_input
from credprov.errors import NodeAccessError

__all__ = [
    "CLUSTER_SCOPED_RESOURCES",
    "KIND_RESOURCES",
    "MAX_OBJECTS_FILE_BYTES",
    "NodeAuthError",
    "ObjectStore",
    "load_objects_file",
    "parse_objects",
    "resource_for",
]

#: Kinds whose plural is not simply the lower-case kind plus ``s``, and the common ones.
KIND_RESOURCES: Mapping[str, str] = {
    "Pod": "pods",
    "Secret": "secrets",
    "ConfigMap": "configmaps",
    "ServiceAccount": "serviceaccounts",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "Node": "nodes",
    "Namespace": "namespaces",
    "Service": "services",
    "Endpoints": "endpoints",
    "EndpointSlice": "endpointslices",
    "Event": "events",
    "StorageClass": "storageclasses",
    "CSIDriver": "csidrivers",
    "CSINode": "csinodes",
    "VolumeAttachment": "volumeattachments",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses",
    "PodCertificateRequest": "podcertificaterequests",
    "ClusterTrustBundle": "clustertrustbundles",
    "CertificateSigningRequest": "certificatesigningrequests",
    "Lease": "leases",
    "RuntimeClass": "runtimeclasses",
    "PriorityClass": "priorityclasses",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "NetworkPolicy": "networkpolicies",
    "Ingress": "ingresses",
    "IngressClass": "ingressclasses",
}

#: Resources without a namespace.
CLUSTER_SCOPED_RESOURCES = frozenset(
    {
        "nodes",
        "namespaces",
        "persistentvolumes",
        "storageclasses",
        "csidrivers",
        "csinodes",
        "volumeattachments",
        "resourceslices",
        "deviceclasses",
        "clustertrustbundles",
        "certificatesigningrequests",
        "runtimeclasses",
        "priorityclasses",
        "clusterroles",
        "clusterrolebindings",
        "ingressclasses",
    }
)
_NAMESPACED = frozenset(KIND_RESOURCES.values()) - CLUSTER_SCOPED_RESOURCES

#: Refuse objects files larger than this (a 50,000-pod ``kubectl get -o json`` is ~200 MB).
MAX_OBJECTS_FILE_BYTES = 1024 * 1024 * 1024


_StrList = list[str]


class NodeAuthError(NodeAccessError, ValueError):
    """Bad objects or a bad request; ``str()`` is one line and quotes no object content."""


def _plural(kind: str) -> str:
    known = KIND_RESOURCES.get(kind)
    if known is not None:
        return known
    lower = kind.lower()
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + "s"


def resource_for(obj: Mapping[str, Any]) -> str:
    """The resource (lower-case plural) of an object, from its ``kind``.

    Raises:
        NodeAuthError: no ``kind``.
    """
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise NodeAuthError("object has no kind")
    return _plural(kind)


def _key(obj: Any) -> tuple[str, str, str]:
    if not isinstance(obj, Mapping):
        raise NodeAuthError(f"not an object but a {type(obj).__name__}")
    resource = resource_for(obj)
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise NodeAuthError(f"{obj['kind']} has no metadata.name")
    namespace = meta.get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    if resource in CLUSTER_SCOPED_RESOURCES:
        namespace = ""
    elif not namespace and resource in _NAMESPACED:
        namespace = "default"
    return resource, namespace, name


class ObjectStore:
    """Objects by ``(resource, namespace, name)``; see the module docstring.

    Args:
        objects: initial objects, applied in order (a later duplicate replaces an earlier).

    Raises:
        NodeAuthError: an object without ``kind`` or ``metadata.name``.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._objects: dict[str, dict[tuple[str, str], Mapping[str, Any]]] = {}
        for obj in objects:
            self.apply(obj)

    @staticmethod
    def key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
        """``(resource, namespace, name)`` of an object (raises NodeAuthError when invalid)."""
        return _key(obj)

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object, or None (``ObjectGetter``)."""
        by_name = self._objects.get(resource)
        return None if by_name is None else by_name.get((namespace, name))

    def list(self, resource: str) -> list[Mapping[str, Any]]:
        """Every object of a resource, in the order first added."""
        by_name = self._objects.get(resource)
        return [] if by_name is None else list(by_name.values())

    def resources(self) -> _StrList:
        """The resources that have objects, sorted."""
        return sorted(r for r, objs in self._objects.items() if objs)

    def apply(self, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Add or replace ``obj``; returns the object it replaced, or None."""
        resource, namespace, name = _key(obj)
        by_name = self._objects.setdefault(resource, {})
        old = by_name.get((namespace, name))
        by_name[(namespace, name)] = obj
        return old

    def delete(self, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Remove the object with ``obj``'s kind, namespace and name; returns it, or None."""
        resource, namespace, name = _key(obj)
        by_name = self._objects.get(resource)
        return None if by_name is None else by_name.pop((namespace, name), None)

    def __len__(self) -> int:
        return sum(len(objs) for objs in self._objects.values())

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for objs in list(self._objects.values()):
            yield from list(objs.values())


def _documents(data: bytes, where: str) -> list[Any]:
    try:
        docs = load_yaml_all(data)
    except YAMLError as exc:
        raise NodeAuthError(f"{where} is {exc}") from None
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, list):  # a sequence of objects, as a JSON array
            out.extend(doc)
        elif doc is not None:
            out.append(doc)
    return out


def parse_objects(data: bytes, where: str = "objects") -> list[Mapping[str, Any]]:
    """The objects in JSON or YAML text, ``List`` items unpacked (see the module docstring).

    Raises:
        NodeAuthError: not JSON/YAML, or something that is not an object with a kind and
            a name; the message names ``where`` and the object's position.
    """
    objects: list[Mapping[str, Any]] = []
    for number, doc in enumerate(_documents(data, where), 1):
        if not isinstance(doc, Mapping):
            raise NodeAuthError(
                f"{where}: document {number} is a {type(doc).__name__}, not an object"
            )
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise NodeAuthError(f"{where}: document {number}: {kind} items must be a list")
            item_kind = kind[: -len("List")]
            for position, item in enumerate(items, 1):
                if isinstance(item, Mapping) and "kind" not in item and item_kind:
                    # Typed lists (PodList from the API) leave the kind to the list.
                    item = {"kind": item_kind, "apiVersion": doc.get("apiVersion"), **item}
                objects.append(_checked(item, f"{where}: document {number} item {position}"))
        else:
            objects.append(_checked(doc, f"{where}: document {number}"))
    return objects


def _checked(obj: Any, where: str) -> Mapping[str, Any]:
    """``obj`` if it has a kind and a name and its metadata has the API's types.

    The API server would refuse an object whose ``metadata`` is not an object or whose
    labels/annotations are not string maps; refusing them here keeps every later reader
    (graph, authorizer, token requests) free of type checks.
    """
    try:
        _key(obj)
    except NodeAuthError as exc:
        raise NodeAuthError(f"{where}: {exc}") from None
    try:
        decode_object(obj)  # what the API server's decoding refuses, it never stored
    except DecodeError as exc:
        raise NodeAuthError(f"{where}: {exc}") from None
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise NodeAuthError(f"{where}: {obj['kind']} metadata is not an object")
    meta = meta or {}
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not (
            isinstance(value, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        ):
            raise NodeAuthError(
                f"{where}: {obj['kind']} {meta.get('name')}: metadata.{field} must be a map of "
                "strings to strings"
            )
    return obj


def load_objects_file(path: str) -> ObjectStore:
    """An :class:`ObjectStore` of the objects in a file (``-`` reads standard input).

    Raises:
        NodeAuthError: unreadable, too large, not JSON/YAML, or not objects (one line).
    """
    try:
        data, where = read_input(path, MAX_OBJECTS_FILE_BYTES, "objects file")
    except InputReadError as exc:
        raise NodeAuthError(str(exc)) from None
    return ObjectStore(parse_objects(data, where))
