"""The Node authorizer's graph: which objects each node may read, kept up to date per event.

Mirrors ``plugin/pkg/auth/authorizer/node/graph.go`` (newest upstream behaviour):

* Vertices are typed and keyed ``(type, namespace, name)`` (``""`` namespace when
  cluster-scoped) and print as upstream's ``type:ns/name`` / ``type:name``.
* **Every edge points toward a node.** ``pod → node``; ``secret | configmap | pvc |
  serviceAccount | resourceclaim → pod``; ``volumeattachment | resourceslice |
  podcertificaterequest → node`` are *destination edges*: they carry the node at the end of
  the path. ``pv → pvc`` and ``secret → pv`` are *plain edges* (when the PV is added, the
  pods using its claim may not exist yet).
* Mirror pods get only ``pod → node`` (defense in depth with NodeRestriction).
* Deleting a vertex deletes its edges and every neighbour left with no edge at all (a
  secret disappears with its last pod, a node with its last pod).
* **Destination-edge index.** A vertex with at least ``index_threshold`` (default 200)
  out-edges keeps a refcounted map *node → number of paths to it*, maintained in O(1) per
  edge (PR #87688/#87696) and dropped when the degree falls below the threshold. As in the
  newest upstream, paths through PVs count (``secret → pv → pvc → pod → node``), so every
  index is complete and therefore **authoritative**: a node missing from it has no path, and
  no traversal is made (PR #127098) — which is what keeps refusals cheap for secrets and
  config maps shared by thousands of pods.
* Without an index, reachability is an iterative depth-first search from the object toward
  the node that never follows a destination edge to another node.

One lock serialises writers and readers (upstream: an RWMutex; under the GIL readers would
not run in parallel anyway).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from credprov.nodeauth._objects import m as _m
from credprov.nodeauth._objects import s as _str
from credprov.nodeauth._refs import (
    is_mirror_pod,
    pod_references,
    pv_claim_ref,
    pv_secret_refs,
)

__all__ = [
    "CONFIGMAP",
    "DEFAULT_INDEX_THRESHOLD",
    "NODE",
    "POD",
    "POD_CERTIFICATE_REQUEST",
    "PV",
    "PVC",
    "RESOURCE_CLAIM",
    "RESOURCE_SLICE",
    "SECRET",
    "SERVICE_ACCOUNT",
    "VOLUME_ATTACHMENT",
    "Graph",
    "GraphPopulator",
    "Vertex",
    "object_namespace",
]

# Vertex types, spelled as upstream's ``vertexTypes`` prints them.
CONFIGMAP = "configmap"
RESOURCE_SLICE = "resourceslice"
NODE = "node"
POD = "pod"
PVC = "pvc"
PV = "pv"
RESOURCE_CLAIM = "resourceclaim"
SECRET = "secret"
VOLUME_ATTACHMENT = "volumeattachment"
SERVICE_ACCOUNT = "serviceAccount"
POD_CERTIFICATE_REQUEST = "podcertificaterequest"

#: Out-degree from which a vertex keeps a destination index ("experimentally determined to
#: be the point at which iteration adds an order of magnitude to the authz check").
DEFAULT_INDEX_THRESHOLD = 200


def object_namespace(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, ``"default"`` when absent (where kubectl would create it)."""
    return _str(_m(obj.get("metadata")).get("namespace")) or "default"


class Vertex:
    """One object in the graph.

    ``out`` maps each successor to the node a destination edge leads to (``None`` for a
    plain edge); ``inn`` maps each predecessor to whether its edge is plain; ``index`` is
    the destination index (node → path count) or ``None``.
    """

    __slots__ = ("index", "inn", "kind", "name", "namespace", "out")

    def __init__(self, kind: str, namespace: str, name: str) -> None:
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.out: dict[Vertex, Vertex | None] = {}
        self.inn: dict[Vertex, bool] = {}
        self.index: dict[Vertex, int] | None = None

    def __str__(self) -> str:
        if self.namespace:
            return f"{self.kind}:{self.namespace}/{self.name}"
        return f"{self.kind}:{self.name}"

    def __repr__(self) -> str:
        return f"<Vertex {self}>"


class Graph:
    """The Node authorizer's graph (see the module docstring).

    Args:
        index_threshold: out-degree from which a vertex keeps a destination index
            (upstream: 200; upstream's tests use 1 and 3).
    """

    def __init__(self, index_threshold: int = DEFAULT_INDEX_THRESHOLD) -> None:
        if index_threshold < 1:
            raise ValueError("index_threshold must be at least 1")
        self.index_threshold = index_threshold
        self._vertices: dict[tuple[str, str, str], Vertex] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_store(
        cls, store: _ObjectLister, index_threshold: int = DEFAULT_INDEX_THRESHOLD
    ) -> Graph:
        """A graph of every pod, PV, volume attachment, resource slice and PCR in ``store``."""
        graph = cls(index_threshold)
        GraphPopulator(store, graph)
        return graph

    # -- vertices and edges (callers hold the lock) ---------------------------------------

    def _get_or_create(self, kind: str, namespace: str, name: str) -> Vertex:
        key = (kind, namespace, name)
        vertex = self._vertices.get(key)
        if vertex is None:
            vertex = self._vertices[key] = Vertex(kind, namespace, name)
        return vertex

    def _dests(self, vertex: Vertex) -> dict[Vertex, int]:
        """Node → number of paths from ``vertex`` (its index when it has one: do not mutate)."""
        if vertex.index is not None:
            return vertex.index
        found: dict[Vertex, int] = {}
        for to, dest in vertex.out.items():
            if dest is not None:
                found[dest] = found.get(dest, 0) + 1
            else:
                for node, count in self._dests(to).items():
                    found[node] = found.get(node, 0) + count
        return found

    @staticmethod
    def _adjust_ancestors(vertex: Vertex, node: Vertex, delta: int) -> None:
        """Add ``delta`` paths to ``node`` in the indexes of everything reaching ``vertex``
        through plain edges (a PVC's PVs and their secrets)."""
        stack = [parent for parent, plain in vertex.inn.items() if plain]
        while stack:
            current = stack.pop()
            index = current.index
            if index is not None:
                count = index.get(node, 0) + delta
                if count > 0:
                    index[node] = count
                else:
                    index.pop(node, None)
            stack.extend(parent for parent, plain in current.inn.items() if plain)

    def _add_destination_edge(self, frm: Vertex, to: Vertex, node: Vertex) -> None:
        out = frm.out
        if to in out:
            return
        out[to] = node
        to.inn[frm] = False
        index = frm.index
        if index is not None:
            index[node] = index.get(node, 0) + 1
        elif len(out) >= self.index_threshold:
            frm.index = self._dests(frm)
        if frm.inn:
            self._adjust_ancestors(frm, node, 1)

    def _add_plain_edge(self, frm: Vertex, to: Vertex) -> None:
        if to in frm.out:
            return
        frm.out[to] = None
        to.inn[frm] = True
        delta = self._dests(to)
        index = frm.index
        if index is not None:
            for node, count in delta.items():
                index[node] = index.get(node, 0) + count
        elif len(frm.out) >= self.index_threshold:
            frm.index = self._dests(frm)
        if frm.inn:
            for node, count in list(delta.items()):
                self._adjust_ancestors(frm, node, count)

    def _remove_edge(self, frm: Vertex, to: Vertex) -> None:
        node = frm.out.pop(to)
        del to.inn[frm]
        # Paths through a plain edge are counted before anything below ``to`` changes.
        delta = {node: 1} if node is not None else dict(self._dests(to))
        index = frm.index
        if index is not None:
            if len(frm.out) < self.index_threshold:
                frm.index = None
            else:
                for dest, count in delta.items():
                    left = index.get(dest, 0) - count
                    if left > 0:
                        index[dest] = left
                    else:
                        index.pop(dest, None)
        if frm.inn:
            for dest, count in delta.items():
                self._adjust_ancestors(frm, dest, -count)

    def _remove_vertex_if_orphan(self, vertex: Vertex) -> None:
        if not vertex.out and not vertex.inn:
            self._vertices.pop((vertex.kind, vertex.namespace, vertex.name), None)

    def _delete_vertex(self, vertex: Vertex) -> None:
        # In-edges first, while the paths below this vertex still exist to be counted.
        for parent in list(vertex.inn):
            self._remove_edge(parent, vertex)
            self._remove_vertex_if_orphan(parent)
        for child in list(vertex.out):
            self._remove_edge(vertex, child)
            self._remove_vertex_if_orphan(child)
        self._vertices.pop((vertex.kind, vertex.namespace, vertex.name), None)

    def _delete(self, kind: str, namespace: str, name: str) -> None:
        vertex = self._vertices.get((kind, namespace, name))
        if vertex is not None:
            self._delete_vertex(vertex)

    # -- upstream's mutators ------------------------------------------------------------------

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """``AddPod``: replace the pod's vertex and edges (only bound pods have any)."""
        meta = _m(pod.get("metadata"))
        name = _str(meta.get("name"))
        namespace = object_namespace(pod)
        node_name = _str(_m(pod.get("spec")).get("nodeName"))
        refs = None if not node_name or is_mirror_pod(pod) else pod_references(pod)
        with self._lock:
            self._delete(POD, namespace, name)
            if not node_name:
                return
            pod_vertex = self._get_or_create(POD, namespace, name)
            node = self._get_or_create(NODE, "", node_name)
            self._add_destination_edge(pod_vertex, node, node)
            if refs is None:  # mirror pods reference nothing the node could then read
                return
            add = self._add_destination_edge
            get = self._get_or_create
            if refs.service_account:
                add(get(SERVICE_ACCOUNT, namespace, refs.service_account), pod_vertex, node)
            for secret in refs.secrets:
                add(get(SECRET, namespace, secret), pod_vertex, node)
            for configmap in refs.configmaps:
                add(get(CONFIGMAP, namespace, configmap), pod_vertex, node)
            for claim in refs.pvcs:
                add(get(PVC, namespace, claim), pod_vertex, node)
            for claim in refs.resource_claims:
                add(get(RESOURCE_CLAIM, namespace, claim), pod_vertex, node)

    def delete_pod(self, name: str, namespace: str) -> None:
        """``DeletePod``."""
        with self._lock:
            self._delete(POD, namespace, name)

    def add_pv(self, pv: Mapping[str, Any]) -> None:
        """``AddPV``: ``pv → pvc`` for a bound PV, and ``secret → pv`` per kubelet-visible secret."""
        name = _str(_m(pv.get("metadata")).get("name"))
        claim = pv_claim_ref(pv)
        secrets = pv_secret_refs(pv) if claim is not None else ()
        with self._lock:
            self._delete(PV, "", name)
            if claim is None:
                return
            pv_vertex = self._get_or_create(PV, "", name)
            self._add_plain_edge(pv_vertex, self._get_or_create(PVC, claim[0], claim[1]))
            for namespace, secret in secrets:
                self._add_plain_edge(self._get_or_create(SECRET, namespace, secret), pv_vertex)

    def delete_pv(self, name: str) -> None:
        """``DeletePV``."""
        with self._lock:
            self._delete(PV, "", name)

    def _add_to_node(self, kind: str, namespace: str, name: str, node_name: str) -> None:
        with self._lock:
            self._delete(kind, namespace, name)
            if node_name:
                node = self._get_or_create(NODE, "", node_name)
                self._add_destination_edge(self._get_or_create(kind, namespace, name), node, node)

    def add_volume_attachment(self, name: str, node_name: str) -> None:
        """``AddVolumeAttachment``: ``volumeattachment → node`` when it names a node."""
        self._add_to_node(VOLUME_ATTACHMENT, "", name, node_name)

    def delete_volume_attachment(self, name: str) -> None:
        """``DeleteVolumeAttachment``."""
        with self._lock:
            self._delete(VOLUME_ATTACHMENT, "", name)

    def add_resource_slice(self, name: str, node_name: str) -> None:
        """``AddResourceSlice``: ``resourceslice → node`` for node-local slices."""
        self._add_to_node(RESOURCE_SLICE, "", name, node_name)

    def delete_resource_slice(self, name: str) -> None:
        """``DeleteResourceSlice``."""
        with self._lock:
            self._delete(RESOURCE_SLICE, "", name)

    def add_pod_certificate_request(self, pcr: Mapping[str, Any]) -> None:
        """``AddPodCertificateRequest``: only ``pcr → node`` (NodeRestriction checked the
        pod and service account when the node created it)."""
        meta = _m(pcr.get("metadata"))
        node_name = _str(_m(pcr.get("spec")).get("nodeName"))
        self._add_to_node(
            POD_CERTIFICATE_REQUEST, object_namespace(pcr), _str(meta.get("name")), node_name
        )

    def delete_pod_certificate_request(self, namespace: str, name: str) -> None:
        """``DeletePodCertificateRequest``."""
        with self._lock:
            self._delete(POD_CERTIFICATE_REQUEST, namespace, name)

    # -- queries --------------------------------------------------------------------------

    def has_path_from(self, node_name: str, kind: str, namespace: str, name: str) -> bool:
        """``hasPathFrom``: is there a path from the object to the node?"""
        with self._lock:
            vertices = self._vertices
            node = vertices.get((NODE, "", node_name))
            if node is None:
                return False
            start = vertices.get((kind, namespace, name))
            if start is None:
                return False
            index = start.index
            if index is not None:  # complete, hence authoritative
                return node in index
            plain = False
            for dest in start.out.values():  # most objects have destination edges only
                if dest is node:
                    return True
                if dest is None:
                    plain = True
            if not plain:
                return False
            stack = [start]
            seen: set[Vertex] | None = None
            while stack:
                for to, dest in stack.pop().out.items():
                    if dest is not None:
                        if dest is node:
                            return True
                        continue  # never follow a destination edge to another node
                    index = to.index
                    if index is not None:
                        if node in index:
                            return True
                        continue
                    if seen is None:
                        seen = set()
                    if to not in seen:
                        seen.add(to)
                        stack.append(to)
            return False

    def explain_path(
        self, node_name: str, kind: str, namespace: str, name: str
    ) -> tuple[list[str] | None, str]:
        """One path from the object to the node (vertex names, object first), or ``None``
        with upstream's internal explanation (what ``NODE DENY`` logs)."""
        where = f"{kind} {namespace}/{name}"
        with self._lock:
            node = self._vertices.get((NODE, "", node_name))
            if node is None:
                return None, f"unknown node '{node_name}' cannot get {where}"
            start = self._vertices.get((kind, namespace, name))
            if start is None:
                return None, f"node '{node_name}' cannot get unknown {where}"
            parents: dict[Vertex, Vertex | None] = {start: None}
            queue = [start]
            for current in queue:  # breadth first: the shortest path
                for to, dest in current.out.items():
                    if dest is not None and dest is not node:
                        continue
                    if to not in parents:
                        parents[to] = current
                        if to is node or dest is node:
                            path = [str(to)] if to is node else [str(to), str(node)]
                            walk = parents[to]
                            while walk is not None:
                                path.insert(0, str(walk))
                                walk = parents[walk]
                            return path, ""
                        queue.append(to)
        return None, (
            f"node '{node_name}' cannot get {where}, no relationship to this object was "
            "found in the node authorizer graph"
        )

    def readable_by(self, node_name: str) -> dict[Vertex, list[Vertex]]:
        """Every vertex with a path to the node, mapped to the successors it reaches it through.

        The node's own vertex is not included; an unknown node can read nothing.
        """
        with self._lock:
            node = self._vertices.get((NODE, "", node_name))
            if node is None:
                return {}
            found: dict[Vertex, list[Vertex]] = {}
            queue = [node]
            for current in queue:
                for parent in current.inn:
                    dest = parent.out[current]
                    if dest is not None and dest is not node:
                        continue
                    via = found.get(parent)
                    if via is None:
                        found[parent] = [current]
                        queue.append(parent)
                    else:
                        via.append(current)
            return found

    def get_vertex(self, kind: str, namespace: str, name: str) -> Vertex | None:
        """The vertex, if the graph has it (for inspection)."""
        return self._vertices.get((kind, namespace, name))

    def vertices(self) -> Iterator[Vertex]:
        """Every vertex (a snapshot)."""
        with self._lock:
            return iter(list(self._vertices.values()))

    def edges(self) -> dict[str, list[str]]:
        """Every vertex and its sorted successors (upstream graph_test's ``expectGraph``)."""
        with self._lock:
            return {str(v): sorted(str(to) for to in v.out) for v in self._vertices.values()}

    def indexes(self) -> dict[str, list[str]]:
        """Every destination index as sorted ``node:<name>=<count>`` (``expectIndex``)."""
        with self._lock:
            return {
                str(v): sorted(f"{node}={count}" for node, count in v.index.items())
                for v in self._vertices.values()
                if v.index is not None
            }

    def stats(self) -> dict[str, int]:
        """Sizes: vertices, edges, indexed vertices and index entries."""
        with self._lock:
            values = self._vertices.values()
            return {
                "vertices": len(self._vertices),
                "edges": sum(len(v.out) for v in values),
                "indexedVertices": sum(1 for v in values if v.index is not None),
                "indexEntries": sum(len(v.index) for v in values if v.index is not None),
            }

    def verify(self) -> list[str]:
        """Consistency problems (none expected): edge symmetry, orphans, and every index
        against a recount from scratch. For tests and benchmarks; O(graph)."""
        problems: list[str] = []
        with self._lock:
            for key, v in self._vertices.items():
                if key != (v.kind, v.namespace, v.name):
                    problems.append(f"{v} stored under {key}")
                if not v.out and not v.inn:
                    problems.append(f"{v} has no edges")
                for to, dest in v.out.items():
                    if to.inn.get(v) is not (dest is None):
                        problems.append(f"edge {v} -> {to} missing on its target")
                for parent in v.inn:
                    if v not in parent.out:
                        problems.append(f"edge {parent} -> {v} missing on its source")
                want_index = len(v.out) >= self.index_threshold
                if want_index != (v.index is not None):
                    problems.append(f"{v}: index presence wrong at degree {len(v.out)}")
                if v.index is not None:
                    saved, v.index = v.index, None
                    recount = self._dests(v)
                    v.index = saved
                    if recount != saved:
                        problems.append(f"{v}: index {self._fmt(saved)} != {self._fmt(recount)}")
        return problems

    @staticmethod
    def _fmt(index: Mapping[Vertex, int]) -> str:
        return "{" + ", ".join(sorted(f"{k}={c}" for k, c in index.items())) + "}"


class _ObjectLister(Protocol):
    def list(self, resource: str) -> list[Mapping[str, Any]]: ...


class _ObjectStore(_ObjectLister, Protocol):
    def apply(self, obj: Mapping[str, Any]) -> Mapping[str, Any] | None: ...

    def delete(self, obj: Mapping[str, Any]) -> Mapping[str, Any] | None: ...


def _pod_edges(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of a pod decides its edges (upstream compares nodeName, UID, ephemeral
    containers and claim statuses, since the rest of a pod's spec is immutable)."""
    spec = _m(pod.get("spec"))
    node_name = _str(spec.get("nodeName"))
    if not node_name:
        return ("",)
    uid = _m(pod.get("metadata")).get("uid")
    if is_mirror_pod(pod):
        return (node_name, uid, True)
    return (node_name, uid, False, pod_references(pod))


class GraphPopulator:
    """Keeps a :class:`Graph` in step with an object store, one event at a time.

    The graph's part of the apiserver's informers: pods (bound ones only), persistent
    volumes, volume attachments, resource slices and pod certificate requests. Other
    objects (secrets, config maps, service accounts, nodes) only go to the store: the
    graph learns of them from the pods that reference them.

    Args:
        store: an :class:`~credprov.nodeauth.store.ObjectStore` (anything with ``list``,
            ``apply`` and ``delete``); its current objects are added to the graph now.
        graph: the graph to keep up to date.
    """

    def __init__(self, store: _ObjectLister, graph: Graph) -> None:
        self.store = store
        self.graph = graph
        # The initial load only creates live objects: pausing the cyclic garbage collector
        # (whose full passes would walk the growing graph again and again) halves it.
        paused = gc.isenabled()
        gc.disable()
        try:
            for pod in store.list("pods"):
                graph.add_pod(pod)
            for resource in (
                "persistentvolumes",
                "volumeattachments",
                "resourceslices",
                "podcertificaterequests",
            ):
                for obj in store.list(resource):
                    self._added(resource, None, obj)
        finally:
            if paused:
                gc.enable()

    def apply(self, obj: Mapping[str, Any]) -> None:
        """Add or update ``obj`` in the store and the graph."""
        from credprov.nodeauth.store import resource_for

        old = self._store().apply(obj)
        self._added(resource_for(obj), old, obj)

    def delete(self, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Delete ``obj`` (its kind, namespace and name) from the store and the graph.

        Returns the object that was stored, or None when there was none.
        """
        from credprov.nodeauth.store import resource_for

        old = self._store().delete(obj)
        if old is not None:
            self._deleted(resource_for(old), old)
        return old

    def _store(self) -> _ObjectStore:
        store = self.store
        if not hasattr(store, "apply") or not hasattr(store, "delete"):
            raise TypeError("this store cannot be changed: it has no apply/delete")
        return store  # type: ignore[return-value]

    def _added(self, resource: str, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        graph = self.graph
        spec = _m(new.get("spec"))
        name = _str(_m(new.get("metadata")).get("name"))
        if resource == "pods":
            edges = _pod_edges(new)
            if old is not None and _pod_edges(old) == edges:
                return  # nothing that decides an edge changed (upstream's updatePod)
            if edges == ("",):
                if old is not None:
                    graph.delete_pod(name, object_namespace(new))
                return
            graph.add_pod(new)
        elif resource == "persistentvolumes":
            graph.add_pv(new)
        elif resource == "volumeattachments":
            node_name = _str(spec.get("nodeName"))
            if old is None or _str(_m(old.get("spec")).get("nodeName")) != node_name:
                graph.add_volume_attachment(name, node_name)
        elif resource == "resourceslices":
            graph.add_resource_slice(name, _str(spec.get("nodeName")))
        elif resource == "podcertificaterequests":
            graph.add_pod_certificate_request(new)

    def _deleted(self, resource: str, old: Mapping[str, Any]) -> None:
        graph = self.graph
        name = _str(_m(old.get("metadata")).get("name"))
        if resource == "pods":
            graph.delete_pod(name, object_namespace(old))
        elif resource == "persistentvolumes":
            graph.delete_pv(name)
        elif resource == "volumeattachments":
            graph.delete_volume_attachment(name)
        elif resource == "resourceslices":
            graph.delete_resource_slice(name)
        elif resource == "podcertificaterequests":
            graph.delete_pod_certificate_request(object_namespace(old), name)
