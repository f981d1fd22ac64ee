"""The API objects a pod or a persistent volume references: the edges of the Node graph.

Pods and persistent volumes are JSON-like mappings (``core/v1``). A field is "set" when its
key is present with a non-null value (a non-nil pointer in the typed Go object); empty
names are skipped, and each object is reported once however often the pod names it (the
newest upstream graph de-duplicates, so an edge is never counted twice).

* :func:`pod_references` mirrors what ``AddPod`` walks: ``spec.serviceAccountName``,
  ``podutil.VisitPodSecretNames`` (pull secrets; ``envFrom``/``env`` of init, regular and
  ephemeral containers; secret-bearing volumes), ``VisitPodConfigmapNames``, PVCs (including
  generic ephemeral volumes, whose claim is ``<pod>-<volume>``) and ``resourceclaim.PodClaims``
  (claims named in the spec, generated claims recorded in ``status.resourceClaimStatuses``,
  and ``status.extendedResourceClaimStatus``).
* :func:`pv_secret_refs` mirrors ``VisitPVSecretNames`` keeping only the kubelet-visible
  secrets (CSI controller secrets are used by controllers, never by the kubelet).

This is the hot path of graph building (50,000 pods), hence the plain loops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "MIRROR_POD_ANNOTATION",
    "PodRefs",
    "is_mirror_pod",
    "pod_references",
    "pv_claim_ref",
    "pv_secret_refs",
]

#: Pods created by a kubelet from a static manifest carry this annotation.
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

_EMPTY: Mapping[str, Any] = {}
# dict first: objects decoded from JSON/YAML are dicts, and the ABC check is slow.
_MAPS = (dict, Mapping)

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
_CONTAINER_KEYS = ("initContainers", "containers", "ephemeralContainers")


class PodRefs(NamedTuple):
    """What one pod references, each name once, in first-seen order."""

    service_account: str
    secrets: tuple[str, ...]
    configmaps: tuple[str, ...]
    pvcs: tuple[str, ...]
    resource_claims: tuple[str, ...]


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, _MAPS) else _EMPTY


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(ref: Any, key: str = "name") -> str:
    if isinstance(ref, _MAPS):
        name = ref.get(key)
        if isinstance(name, str):
            return name
    return ""


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """Whether the pod is a mirror pod (has the ``kubernetes.io/config.mirror`` annotation)."""
    annotations = _m(_m(pod.get("metadata")).get("annotations"))
    return MIRROR_POD_ANNOTATION in annotations


def pod_references(pod: Mapping[str, Any]) -> PodRefs:
    """The service account, secrets, config maps, PVCs and resource claims of a pod."""
    meta = _m(pod.get("metadata"))
    spec = _m(pod.get("spec"))
    secrets: dict[str, None] = {}
    configmaps: dict[str, None] = {}
    pvcs: dict[str, None] = {}
    claims: dict[str, None] = {}

    sa = spec.get("serviceAccountName")
    service_account = sa if isinstance(sa, str) else ""

    for ref in _list(spec.get("imagePullSecrets")):
        name = _name(ref)
        if name:
            secrets[name] = None

    for key in _CONTAINER_KEYS:
        for container in _list(spec.get(key)):
            if not isinstance(container, _MAPS):
                continue
            for env_from in _list(container.get("envFrom")):
                if not isinstance(env_from, _MAPS):
                    continue
                ref = env_from.get("secretRef")
                if ref is not None and (name := _name(ref)):
                    secrets[name] = None
                ref = env_from.get("configMapRef")
                if ref is not None and (name := _name(ref)):
                    configmaps[name] = None
            for env in _list(container.get("env")):
                if not isinstance(env, _MAPS):
                    continue
                value_from = env.get("valueFrom")
                if not isinstance(value_from, _MAPS):
                    continue
                ref = value_from.get("secretKeyRef")
                if ref is not None and (name := _name(ref)):
                    secrets[name] = None
                ref = value_from.get("configMapKeyRef")
                if ref is not None and (name := _name(ref)):
                    configmaps[name] = None

    pod_name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    for volume in _list(spec.get("volumes")):
        if not isinstance(volume, _MAPS):
            continue
        _volume_secrets(volume, secrets)
        # VisitPodConfigmapNames' own switch: projected first, then configMap.
        projected = volume.get("projected")
        if projected is not None:
            for source in _list(_m(projected).get("sources")):
                ref = _m(source).get("configMap")
                if ref is not None and (name := _name(ref)):
                    configmaps[name] = None
        else:
            ref = volume.get("configMap")
            if ref is not None and (name := _name(ref)):
                configmaps[name] = None
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            if name := _name(claim, "claimName"):
                pvcs[name] = None
        elif volume.get("ephemeral") is not None:
            volume_name = volume.get("name")
            if isinstance(volume_name, str):
                pvcs[f"{pod_name}-{volume_name}"] = None

    pod_claims = _list(spec.get("resourceClaims"))
    status = _m(pod.get("status"))
    if pod_claims:
        generated: dict[str, str] = {}
        for entry in _list(status.get("resourceClaimStatuses")):
            if isinstance(entry, _MAPS) and isinstance(entry.get("name"), str):
                value = entry.get("resourceClaimName")
                generated[entry["name"]] = value if isinstance(value, str) else ""
        for claim in pod_claims:
            if not isinstance(claim, _MAPS):
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
    extended = status.get("extendedResourceClaimStatus")
    if extended is not None and (name := _name(extended, "resourceClaimName")):
        claims[name] = None

    return PodRefs(
        service_account,
        tuple(secrets),
        tuple(configmaps),
        tuple(pvcs),
        tuple(claims),
    )


def _volume_secrets(volume: Mapping[str, Any], out: dict[str, None]) -> None:
    kind = ""
    for key in _SECRET_VOLUME_ORDER:
        if volume.get(key) is not None:
            kind = key
            break
    if not kind:
        return
    source = _m(volume[kind])
    if kind in _SECRET_REF_SOURCES:
        ref = source.get("secretRef")
        name = _name(ref) if ref is not None else ""
    elif kind == "secret" or kind == "azureFile":
        name = _name(source, "secretName")
    elif kind == "csi":
        ref = source.get("nodePublishSecretRef")
        name = _name(ref) if ref is not None else ""
    else:  # projected
        for projection in _list(source.get("sources")):
            ref = _m(projection).get("secret")
            if ref is not None and (secret := _name(ref)):
                out[secret] = None
        return
    if name:
        out[name] = None


def pv_claim_ref(pv: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(namespace, name)`` of the claim a PV is bound to, or None when unbound."""
    ref = _m(pv.get("spec")).get("claimRef")
    if ref is None or not isinstance(ref, _MAPS):
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
