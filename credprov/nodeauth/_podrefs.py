"""Does a pod reference other API objects? (``podutil.HasAPIObjectReference``)

NodeRestriction lets a kubelet create only *mirror* pods, and a mirror pod must not
reference anything the kubelet could then read through the Node authorizer's graph. The
answer is the first reference found, named by the plural resource upstream reports, in
upstream's order: the service account, secrets (pull secrets, env, volumes), config maps,
resource claims, then each volume by type. Volume types that need no API object are
allowed; a volume or projected source of a type this code does not know is an error, so
that a new volume type is refused until someone decides it is safe.

Pods are JSON-like mappings (``core/v1``): a field is "set" when its key is present with a
non-null value, which is what a non-nil pointer is in the typed Go object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from credprov._gofmt import go_quote
from credprov.nodeauth._objects import m as _m
from credprov.nodeauth._objects import s as _s
from credprov.nodeauth._objects import seq as _seq

__all__ = [
    "UnknownVolumeError",
    "api_object_reference",
    "visit_configmap_names",
    "visit_secret_names",
]

# Volume sources that need no API object (upstream's allowed list, in its order).
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

# Volume sources that reference an API object, with the resource upstream names.
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

# Volume sources whose ``secretRef`` names a secret (VisitPodSecretNames' switch order).
_SECRET_REF_VOLUMES = ("cephfs", "cinder", "flexVolume")
_SECRET_REF_VOLUMES_AFTER_RBD = ("scaleIO", "iscsi", "storageos")


class UnknownVolumeError(ValueError):
    """A volume or projected source of a type not known to be safe."""


def _set(obj: Mapping[str, Any], key: str) -> bool:
    return obj.get(key) is not None


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    # Upstream order: init containers, containers, ephemeral containers.
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _seq(spec.get(key)):
            yield _m(container)


def _first_source(volume: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    return next((key for key in keys if _set(volume, key)), None)


def visit_secret_names(pod: Mapping[str, Any], visit: Callable[[str], bool]) -> bool:
    """Call ``visit`` with each non-empty secret name the pod references.

    Stops (and returns False) when ``visit`` returns False. Transitive references
    (pod → PVC → PV → secret) are not visited.
    """

    def named(name: Any) -> bool:
        return not _s(name) or visit(_s(name))

    spec = _m(pod.get("spec"))
    for ref in _seq(spec.get("imagePullSecrets")):
        if not named(_m(ref).get("name")):
            return False
    for container in _containers(spec):
        for env_from in _seq(container.get("envFrom")):
            ref = _m(env_from).get("secretRef")
            if ref is not None and not named(_m(ref).get("name")):
                return False
        for env in _seq(container.get("env")):
            ref = _m(_m(env).get("valueFrom")).get("secretKeyRef")
            if ref is not None and not named(_m(ref).get("name")):
                return False
    order = (
        "azureFile",
        *_SECRET_REF_VOLUMES,
        "projected",
        "rbd",
        "secret",
        *_SECRET_REF_VOLUMES_AFTER_RBD,
        "csi",
    )
    for raw in _seq(spec.get("volumes")):
        volume = _m(raw)
        kind = _first_source(volume, order)
        if kind is None:
            continue
        source = _m(volume[kind])
        if kind == "azureFile":
            names: list[Any] = [source.get("secretName")]
        elif kind == "projected":
            names = [
                _m(_m(p).get("secret")).get("name")
                for p in _seq(source.get("sources"))
                if _m(p).get("secret") is not None
            ]
        elif kind == "secret":
            names = [source.get("secretName")]
        elif kind == "csi":
            ref = source.get("nodePublishSecretRef")
            names = [_m(ref).get("name")] if ref is not None else []
        else:
            ref = source.get("secretRef")
            names = [_m(ref).get("name")] if ref is not None else []
        for name in names:
            if not named(name):
                return False
    return True


def visit_configmap_names(pod: Mapping[str, Any], visit: Callable[[str], bool]) -> bool:
    """Call ``visit`` with each non-empty config map name the pod references."""

    def named(name: Any) -> bool:
        return not _s(name) or visit(_s(name))

    spec = _m(pod.get("spec"))
    for container in _containers(spec):
        for env_from in _seq(container.get("envFrom")):
            ref = _m(env_from).get("configMapRef")
            if ref is not None and not named(_m(ref).get("name")):
                return False
        for env in _seq(container.get("env")):
            ref = _m(_m(env).get("valueFrom")).get("configMapKeyRef")
            if ref is not None and not named(_m(ref).get("name")):
                return False
    for raw in _seq(spec.get("volumes")):
        volume = _m(raw)
        kind = _first_source(volume, ("projected", "configMap"))
        if kind == "projected":
            for projection in _seq(_m(volume["projected"]).get("sources")):
                ref = _m(projection).get("configMap")
                if ref is not None and not named(_m(ref).get("name")):
                    return False
        elif kind == "configMap" and not named(_m(volume["configMap"]).get("name")):
            return False
    return True


def api_object_reference(pod: Mapping[str, Any]) -> str | None:
    """The first kind of API object the pod references, or None when there is none.

    Raises:
        UnknownVolumeError: a volume or projected source of an unknown type (the message
            is upstream's, including its double space).
    """
    spec = _m(pod.get("spec"))
    if _s(spec.get("serviceAccountName")):
        return "serviceaccounts"
    if not visit_secret_names(pod, lambda _name: False):
        return "secrets"
    if not visit_configmap_names(pod, lambda _name: False):
        return "configmaps"
    if _seq(spec.get("resourceClaims")):
        return "resourceclaims"
    for raw in _seq(spec.get("volumes")):
        volume = _m(raw)
        name = _s(volume.get("name"))
        if _first_source(volume, _SELF_CONTAINED_VOLUMES) is not None:
            continue
        found = next((what for key, what in _REFERENCING_VOLUMES if _set(volume, key)), None)
        if found is not None:
            return found
        if not _set(volume, "projected"):
            raise UnknownVolumeError(f"unknown volume type for volume  {go_quote(name)}")
        for raw_projection in _seq(_m(volume["projected"]).get("sources")):
            projection = _m(raw_projection)
            what = next((w for key, w in _REFERENCING_PROJECTIONS if _set(projection, key)), None)
            if what is not None:
                return what
            if not _set(projection, "downwardAPI"):
                raise UnknownVolumeError(f"unknown source for projected volume {go_quote(name)}")
    return None
