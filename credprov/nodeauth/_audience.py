"""Does a pod use a token audience? (NodeRestriction's ServiceAccountNodeAudienceRestriction)

A node may request a service-account token for an audience only when the pod the token is
bound to uses that audience through one of its volumes:

* a projected ``serviceAccountToken`` source with that ``audience`` ("" is the API
  server's default audience);
* a volume served by a CSI driver whose ``CSIDriver.spec.tokenRequests`` lists it: an
  inline ``csi`` volume, a ``persistentVolumeClaim`` (PVC → PV → ``spec.csi.driver``), a
  generic ephemeral volume (its PVC ``<pod>-<volume>``), or an in-tree volume or PV that
  migrated to CSI.

Volumes are tried in order and the first that uses the audience wins, even after lookup
errors on earlier ones; when none does, the lookup errors met are the answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from credprov.nodeauth._csitranslation import CSITranslator
from credprov.nodeauth._objects import Lookup, LookupFailed, m, meta, s, seq, spec

__all__ = ["aggregate", "pod_references_audience"]


def aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b]`` de-duplicated."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def pod_references_audience(
    lookup: Lookup,
    translator: CSITranslator,
    pod: Mapping[str, Any],
    audience: str,
    default_namespace: str = "",
) -> tuple[bool, list[str]]:
    """Whether a volume of the pod uses the audience; if not, the lookup errors met."""
    errors: list[str] = []
    pod_meta = meta(pod)
    namespace = s(pod_meta.get("namespace")) or default_namespace
    for raw in seq(spec(pod).get("volumes")):
        volume = m(raw)
        for projection in seq(m(volume.get("projected")).get("sources")):
            token = m(projection).get("serviceAccountToken")
            if token is not None and s(m(token).get("audience")) == audience:
                return True, []
        try:
            driver = _volume_csi_driver(
                lookup, translator, volume, s(pod_meta.get("name")), namespace
            )
            if driver and _csi_driver_has_audience(lookup, driver, audience):
                return True, []
        except LookupFailed as exc:
            errors.append(exc.message)
    return False, errors


def _volume_csi_driver(
    lookup: Lookup,
    translator: CSITranslator,
    volume: Mapping[str, Any],
    pod_name: str,
    namespace: str,
) -> str:
    """The CSI driver behind a pod volume ("" when there is none)."""
    ephemeral = volume.get("ephemeral")
    if ephemeral is not None and m(ephemeral).get("volumeClaimTemplate") is not None:
        claim = f"{pod_name}-{s(volume.get('name'))}"  # ephemeral.VolumeClaimName
        return _pvc_csi_driver(lookup, translator, namespace, claim)
    if volume.get("persistentVolumeClaim") is not None:
        claim = s(m(volume["persistentVolumeClaim"]).get("claimName"))
        return _pvc_csi_driver(lookup, translator, namespace, claim)
    if volume.get("csi") is not None:
        return s(m(volume["csi"]).get("driver"))
    if translator.is_inline_migratable(volume):
        try:
            return translator.translate_inline_volume(volume, namespace)
        except Exception as exc:
            raise LookupFailed(str(exc)) from None
    return ""


def _pvc_csi_driver(lookup: Lookup, translator: CSITranslator, namespace: str, claim: str) -> str:
    pvc = lookup.get("persistentvolumeclaims", namespace, claim)
    # Upstream looks the PV up even for an unbound claim (and fails on the name "").
    pv = lookup.get("persistentvolumes", "", s(spec(pvc).get("volumeName")))
    csi = spec(pv).get("csi")
    if csi is not None:
        return s(m(csi).get("driver"))
    if translator.is_pv_migratable(pv):
        try:
            return translator.translate_pv(pv)
        except Exception as exc:
            raise LookupFailed(str(exc)) from None
    return ""


def _csi_driver_has_audience(lookup: Lookup, driver: str, audience: str) -> bool:
    csi_driver = lookup.get("csidrivers", "", driver)
    return any(
        s(m(token_request).get("audience")) == audience
        for token_request in seq(spec(csi_driver).get("tokenRequests"))
    )
