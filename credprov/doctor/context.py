"""What every check reads: the operator's options, the node's setup and what was loaded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from credprov._go.durations import MINUTE
from credprov.api import internal
from credprov.credentialprovider.plugin.exec import DEFAULT_PLUGIN_TIMEOUT
from credprov.doctor.discovery import KubeletSetup
from credprov.doctor.rootfs import NodeRoot

__all__ = ["Context", "DoctorOptions", "DoctorUsageError"]

SA_TOKEN_GATE = "KubeletServiceAccountTokenForCredentialProviders"
ENSURE_PULLED_GATE = "KubeletEnsureSecretPulledImages"

#: The gates that change credential behaviour, with the newest kubelet's defaults
#: (KEP-4412 beta on in 1.34, KEP-2535 beta on in 1.35).
GATE_DEFAULTS: dict[str, bool] = {SA_TOKEN_GATE: True, ENSURE_PULLED_GATE: True}


class DoctorUsageError(ValueError):
    """A bad option value (an unreadable ``--objects`` file, ...): exit status 2."""


@dataclass
class DoctorOptions:
    """What ``credprov doctor`` was asked (see its ``--help``)."""

    root: str = "/"
    config: str | None = None
    bin_dir: str | None = None
    kubelet_config: str | None = None
    node: str | None = None
    images: list[str] = field(default_factory=list)
    no_exec: bool = False
    objects: str | None = None
    cri: str | None = None
    images_file: str | None = None
    plugin_timeout_ns: int = DEFAULT_PLUGIN_TIMEOUT
    #: The budget all plugin runs of one doctor run share (``--plugins-deadline``).
    plugin_deadline_ns: int = 2 * MINUTE


@dataclass
class Context:
    options: DoctorOptions
    root: NodeRoot
    setup: KubeletSetup
    machine: str
    config: internal.CredentialProviderConfig | None = None
    #: The cluster's objects (``--objects``), an ObjectStore.
    store: Any = None
    #: Values never to print (provider env values, plugin passwords).
    secrets: set[str] = field(default_factory=set)
    #: Provider name -> plugin.present/plugin.runnable passed.
    runnable: dict[str, bool] = field(default_factory=dict)

    def gate(self, name: str) -> bool:
        value = self.setup.feature_gates.get(name)
        return GATE_DEFAULTS.get(name, False) if value is None else bool(value.value)

    def gates(self) -> dict[str, bool]:
        return {name: self.gate(name) for name in GATE_DEFAULTS}

    @property
    def node_name(self) -> str:
        return str(self.setup.get("nodeName") or "")
