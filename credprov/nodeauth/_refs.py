"""The API objects a pod or a persistent volume references (``pkg/api/v1/pod`` and friends).

Pods and persistent volumes are JSON-like mappings (``core/v1``). A field is "set" when its
key is present with a non-null value (a non-nil pointer in the typed Go object); empty
names are skipped. Two checks walk a pod for what it references, and share the walk here:

* :func:`pod_object_names` is ``podutil.VisitPodSecretNames`` and ``VisitPodConfigmapNames``
  in one lazy pass: every non-empty secret and config map name, tagged with its resource,
  each resource in upstream's order (pull secrets; ``envFrom``/``env`` of init, regular and
  ephemeral containers; volumes, the first set source of each winning), repeats included.
  One pass, not one per resource, because the graph needs both on every pod event.
* :func:`pod_references` is what the Node authorizer's ``AddPod`` turns into graph edges:
  ``spec.serviceAccountName``, the names above, PVCs (including generic
  ephemeral volumes, whose claim is ``<pod>-<volume>``) and ``resourceclaim.PodClaims``
  (claims named in the spec, generated claims recorded in ``status.resourceClaimStatuses``,
  and ``status.extendedResourceClaimStatus``), each object once however often the pod names
  it (the newest upstream graph de-duplicates, so an edge is never counted twice).
* :func:`api_object_reference` is ``podutil.HasAPIObjectReference``, NodeRestriction's
  check that a mirror pod references nothing: the first kind of reference found, named as
  upstream reports it, and an error for a volume type not known to be safe.
* :func:`pv_secret_refs` mirrors ``VisitPVSecretNames`` keeping only the kubelet-visible
  secrets (CSI controller secrets are used by controllers, never by the kubelet).

Graph building (50,000 pods) runs :func:`pod_references` once per pod event, hence the
plain loops and the hand-inlined type checks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from credprov._go.fmt import go_quote
from credprov.errors import NodeAccessError
from credprov.nodeauth._objects import MAPPINGS
from credprov.nodeauth._objects import m as _m
from credprov.nodeauth._objects import seq as _seq

__all__ = [
    "CONFIGMAPS",
    "MIRROR_POD_ANNOTATION",
    "SECRETS",
    "PodRefs",
    "UnknownVolumeError",
    "api_object_reference",
    "is_mirror_pod",
    "pod_object_names",
    "pod_references",
    "pv_claim_ref",
    "pv_secret_refs",
]

#: The ``resource`` of a name from :func:`pod_object_names` (the plural resource names).
SECRETS = "secrets"
CONFIGMAPS = "configmaps"

#: Pods created by a kubelet from a static manifest carry this annotation.
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


# Upstream's AllContainers order.
_CONTAINER_KEYS = ("initContainers", "containers", "ephemeralContainers")

# VisitPodSecretNames' volume switch, in upstream order: the first set source wins.
_SECRET_VOLUME_ORDER = (
    "azureFile",
    "cephfs",
    "cinder",
    "flexVolume",
    "projected",
    "rbd",
    "secret",
    "scaleIO",
    "iscsi",
    "storageos",
    "csi",
)
# Volume sources whose secret is ``secretRef.name``.
_SECRET_REF_SOURCES = frozenset(
    {"cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"}
)

# HasAPIObjectReference: volume sources that need no API object (upstream's list and order).
_SELF_CONTAINED_VOLUMES = (
    "awsElasticBlockStore",
    "azureDisk",
    "cephfs",
    "cinder",
    "downwardAPI",
    "emptyDir",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
)
# HasAPIObjectReference: volume sources that reference an API object, as upstream names it.
_REFERENCING_VOLUMES = (
    ("configMap", "configmaps (via configmap volumes)"),
    ("secret", "secrets (via secret volumes)"),
    ("csi", "csidrivers (via CSI volumes)"),
    ("glusterfs", "endpoints (via glusterFS volumes)"),
    ("persistentVolumeClaim", "persistentvolumeclaims"),
    ("ephemeral", "persistentvolumeclaims (via ephemeral volumes)"),
    ("azureFile", "secrets (via azureFile volumes)"),
)
_REFERENCING_PROJECTIONS = (
    ("configMap", "configmaps (via projected volumes)"),
    ("secret", "secrets (via projected volumes)"),
    ("serviceAccountToken", "serviceaccounts (via projected volumes)"),
    ("clusterTrustBundle", "clustertrustbundles"),
    ("podCertificate", "podcertificates"),
)


class PodRefs(NamedTuple):
    """What one pod references, each name once, in first-seen order."""

    service_account: str
    secrets: tuple[str, ...]
    configmaps: tuple[str, ...]
    pvcs: tuple[str, ...]
    resource_claims: tuple[str, ...]


class UnknownVolumeError(NodeAccessError, ValueError):
    """A volume or projected source of a type not known to be safe."""


def _name(ref: Any, key: str = "name") -> str:
    """``ref[key]`` when ``ref`` is a mapping and the value a string, else ``""``."""
    if ref is not None and isinstance(ref, MAPPINGS):
        name = ref.get(key)
        if isinstance(name, str):
            return name
    return ""


def _projections(volume: Mapping[str, Any]) -> Sequence[Any]:
    """The ``sources`` of a projected volume (the caller checked ``projected`` is set)."""
    return _seq(_m(volume["projected"]).get("sources"))


def _first_set(obj: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The first of ``keys`` set in ``obj`` (upstream's ``switch`` over sources), or ``""``."""
    for key in keys:
        if obj.get(key) is not None:
            return key
    return ""


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """Whether the pod is a mirror pod (has the ``kubernetes.io/config.mirror`` annotation)."""
    annotations = _m(_m(pod.get("metadata")).get("annotations"))
    return MIRROR_POD_ANNOTATION in annotations


def pod_object_names(pod: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Each non-empty secret and config map name the pod references, as ``(resource, name)``.

    ``VisitPodSecretNames`` and ``VisitPodConfigmapNames`` in one lazy pass (the graph needs
    both on every pod event): ``resource`` is :data:`SECRETS` or :data:`CONFIGMAPS`, and the
    names of one resource come in upstream's order, repeats included: pull secrets; per
    container (init, regular, then ephemeral) ``envFrom`` then ``env``; then the volumes,
    where only a volume's first set source in upstream's switch order names a secret and a
    projected volume's sources shadow a ``configMap`` source. The two resources interleave
    (a container's or volume's secret comes before its config map). Transitive references
    (pod → PVC → PV → secret) are not followed. A caller that stops early walks no further.
    """
    spec = _m(pod.get("spec"))
    for ref in _seq(spec.get("imagePullSecrets")):
        if name := _name(ref):
            yield SECRETS, name
    for key in _CONTAINER_KEYS:
        for container in _seq(spec.get(key)):
            if not isinstance(container, MAPPINGS):
                continue
            for env_from in _seq(container.get("envFrom")):
                if not isinstance(env_from, MAPPINGS):
                    continue
                if name := _name(env_from.get("secretRef")):
                    yield SECRETS, name
                if name := _name(env_from.get("configMapRef")):
                    yield CONFIGMAPS, name
            for env in _seq(container.get("env")):
                # Most variables are literal values: skip them before any further lookup.
                if not isinstance(env, MAPPINGS) or (value_from := env.get("valueFrom")) is None:
                    continue
                value_from = _m(value_from)
                if name := _name(value_from.get("secretKeyRef")):
                    yield SECRETS, name
                if name := _name(value_from.get("configMapKeyRef")):
                    yield CONFIGMAPS, name
    for volume in _seq(spec.get("volumes")):
        if not isinstance(volume, MAPPINGS):
            continue
        kind = _first_set(volume, _SECRET_VOLUME_ORDER)
        if kind == "projected":
            for projection in _projections(volume):
                if name := _name(_m(projection).get("secret")):
                    yield SECRETS, name
        elif kind:
            source = _m(volume[kind])
            if kind in _SECRET_REF_SOURCES:
                name = _name(source.get("secretRef"))
            elif kind == "csi":
                name = _name(source.get("nodePublishSecretRef"))
            else:  # secret, azureFile
                name = _name(source, "secretName")
            if name:
                yield SECRETS, name
        if volume.get("projected") is not None:  # VisitPodConfigmapNames' own switch
            for projection in _projections(volume):
                if name := _name(_m(projection).get("configMap")):
                    yield CONFIGMAPS, name
        elif name := _name(volume.get("configMap")):
            yield CONFIGMAPS, name


def pod_references(pod: Mapping[str, Any]) -> PodRefs:
    """The service account, secrets, config maps, PVCs and resource claims of a pod."""
    meta = _m(pod.get("metadata"))
    spec = _m(pod.get("spec"))

    secrets: dict[str, None] = {}
    configmaps: dict[str, None] = {}
    for resource, name in pod_object_names(pod):
        if resource == SECRETS:
            secrets[name] = None
        else:
            configmaps[name] = None

    pvcs: dict[str, None] = {}
    pod_name = _name(meta)
    for volume in _seq(spec.get("volumes")):
        if not isinstance(volume, MAPPINGS):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if pvc is not None:
            if name := _name(pvc, "claimName"):
                pvcs[name] = None
        elif volume.get("ephemeral") is not None:
            volume_name = volume.get("name")
            if isinstance(volume_name, str):
                pvcs[f"{pod_name}-{volume_name}"] = None

    claims: dict[str, None] = {}
    pod_claims = _seq(spec.get("resourceClaims"))
    status = _m(pod.get("status"))
    if pod_claims:
        generated: dict[str, str] = {}
        for entry in _seq(status.get("resourceClaimStatuses")):
            if isinstance(entry, MAPPINGS) and isinstance(entry.get("name"), str):
                generated[entry["name"]] = _name(entry, "resourceClaimName")
        for claim in pod_claims:
            if not isinstance(claim, MAPPINGS):
                continue
            direct = claim.get("resourceClaimName")
            if direct is not None:
                if isinstance(direct, str) and direct:
                    claims[direct] = None
            elif claim.get("resourceClaimTemplateName") is not None:
                # A claim generated from a template is known only once the controller
                # recorded it in the status; until then there is nothing to authorize.
                name = generated.get(_name(claim), "")
                if name:
                    claims[name] = None
    if name := _name(status.get("extendedResourceClaimStatus"), "resourceClaimName"):
        claims[name] = None

    return PodRefs(
        _name(spec, "serviceAccountName"),
        tuple(secrets),
        tuple(configmaps),
        tuple(pvcs),
        tuple(claims),
    )


def api_object_reference(pod: Mapping[str, Any]) -> str | None:
    """The first kind of API object the pod references, or None (``HasAPIObjectReference``).

    Upstream's order: the service account, any secret, any config map, any resource claim,
    then each volume by type (so a secret volume without a ``secretName`` is still refused,
    as ``secrets (via secret volumes)``). Volume types that need no API object are allowed.

    Raises:
        UnknownVolumeError: a volume or projected source of an unknown type, so that a new
            volume type is refused until someone decides it is safe (the message is
            upstream's, including its double space).
    """
    spec = _m(pod.get("spec"))
    if _name(spec, "serviceAccountName"):
        return "serviceaccounts"
    configmaps = False
    for resource, _ in pod_object_names(pod):
        if resource == SECRETS:
            return "secrets"  # any secret outranks config maps named earlier in the pod
        configmaps = True
    if configmaps:
        return "configmaps"
    if _seq(spec.get("resourceClaims")):
        return "resourceclaims"
    for raw in _seq(spec.get("volumes")):
        volume = _m(raw)
        if _first_set(volume, _SELF_CONTAINED_VOLUMES):
            continue
        for key, what in _REFERENCING_VOLUMES:
            if volume.get(key) is not None:
                return what
        if volume.get("projected") is None:
            raise UnknownVolumeError(f"unknown volume type for volume  {go_quote(_name(volume))}")
        for raw_projection in _projections(volume):
            projection = _m(raw_projection)
            for key, what in _REFERENCING_PROJECTIONS:
                if projection.get(key) is not None:
                    return what
            if projection.get("downwardAPI") is None:
                raise UnknownVolumeError(
                    f"unknown source for projected volume {go_quote(_name(volume))}"
                )
    return None


def pv_claim_ref(pv: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(namespace, name)`` of the claim a PV is bound to, or None when unbound."""
    ref = _m(pv.get("spec")).get("claimRef")
    if ref is None or not isinstance(ref, MAPPINGS):
        return None
    namespace = ref.get("namespace")
    name = ref.get("name")
    return (
        namespace if isinstance(namespace, str) else "",
        name if isinstance(name, str) else "",
    )


def pv_secret_refs(pv: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The kubelet-visible secrets a PV references, as ``(namespace, name)``, each once.

    Secret references without a namespace fall back to the claim's namespace for the
    volume types that did so before ``secretRef.namespace`` existed (azureFile, cephfs,
    flexVolume, rbd, scaleIO, iscsi); CSI ``nodePublish``/``nodeStage``/``nodeExpand``
    secrets are kubelet-visible, CSI ``controllerPublish``/``controllerExpand`` are not.
    """
    spec = _m(pv.get("spec"))
    claim = pv_claim_ref(pv)
    claim_ns = claim[0] if claim else ""
    found: dict[tuple[str, str], None] = {}

    def add(namespace: Any, name: Any) -> None:
        if isinstance(name, str) and name:
            found[(namespace if isinstance(namespace, str) else "", name)] = None

    if spec.get("azureFile") is not None:
        source = _m(spec["azureFile"])
        namespace = source.get("secretNamespace")
        add(
            namespace if isinstance(namespace, str) and namespace else claim_ns,
            source.get("secretName"),
        )
        return tuple(found)
    for kind in ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos", "csi"):
        if spec.get(kind) is None:
            continue
        source = _m(spec[kind])
        if kind == "csi":
            for key in ("nodePublishSecretRef", "nodeStageSecretRef", "nodeExpandSecretRef"):
                ref = source.get(key)
                if ref is not None:
                    add(_m(ref).get("namespace"), _m(ref).get("name"))
        else:
            ref = source.get("secretRef")
            if ref is not None:
                namespace = _m(ref).get("namespace")
                if kind not in ("cinder", "storageos") and not namespace:
                    namespace = claim_ns  # previously persisted PVs use the claim's namespace
                add(namespace, _m(ref).get("name"))
        break
    return tuple(found)
