"""In-tree volume → CSI driver names, the part of ``k8s.io/csi-translation-lib`` that
NodeRestriction's audience check needs.

A pod may mount an in-tree volume (``azureFile``, ``gcePersistentDisk`` …) that the cluster
serves through the CSI driver it migrated to; a token audience that driver requests
(``CSIDriver.spec.tokenRequests``) is then one the node may ask for. Only the driver name
matters here, so translation is a table lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["IN_TREE_CSI_DRIVERS", "CSITranslator", "InTreeCSITranslator"]

#: Volume source key → CSI driver it migrates to (csi-translation-lib's in-tree plugins).
IN_TREE_CSI_DRIVERS: Mapping[str, str] = {
    "awsElasticBlockStore": "ebs.csi.aws.com",
    "gcePersistentDisk": "pd.csi.storage.gke.io",
    "azureDisk": "disk.csi.azure.com",
    "azureFile": "file.csi.azure.com",
    "cinder": "cinder.csi.openstack.org",
    "vsphereVolume": "csi.vsphere.vmware.com",
    "portworxVolume": "pxd.portworx.com",
}


class CSITranslator(Protocol):
    """Finds the CSI driver behind an in-tree volume or PersistentVolume.

    ``translate_*`` return the driver name; they may raise (the message is then one of
    the audience check's lookup errors).
    """

    def is_inline_migratable(self, volume: Mapping[str, Any]) -> bool:
        """Whether a pod volume is an in-tree type with a CSI migration."""
        ...

    def translate_inline_volume(self, volume: Mapping[str, Any], namespace: str) -> str:
        """The CSI driver of a migratable pod volume."""
        ...

    def is_pv_migratable(self, pv: Mapping[str, Any]) -> bool:
        """Whether a PersistentVolume is an in-tree type with a CSI migration."""
        ...

    def translate_pv(self, pv: Mapping[str, Any]) -> str:
        """The CSI driver of a migratable PersistentVolume."""
        ...


def _source(obj: Mapping[str, Any]) -> str | None:
    return next((key for key in IN_TREE_CSI_DRIVERS if obj.get(key) is not None), None)


class InTreeCSITranslator:
    """The default :class:`CSITranslator`: :data:`IN_TREE_CSI_DRIVERS`."""

    def is_inline_migratable(self, volume: Mapping[str, Any]) -> bool:
        """Whether the volume has one of the in-tree sources."""
        return _source(volume) is not None

    def translate_inline_volume(self, volume: Mapping[str, Any], namespace: str) -> str:
        """The driver of the volume's in-tree source."""
        source = _source(volume)
        if source is None:
            raise ValueError("volume is not migratable to CSI")
        return IN_TREE_CSI_DRIVERS[source]

    def is_pv_migratable(self, pv: Mapping[str, Any]) -> bool:
        """Whether the PV's spec has one of the in-tree sources."""
        spec = pv.get("spec")
        return isinstance(spec, Mapping) and _source(spec) is not None

    def translate_pv(self, pv: Mapping[str, Any]) -> str:
        """The driver of the PV's in-tree source."""
        spec = pv.get("spec")
        source = _source(spec) if isinstance(spec, Mapping) else None
        if source is None:
            raise ValueError("persistent volume is not migratable to CSI")
        return IN_TREE_CSI_DRIVERS[source]
