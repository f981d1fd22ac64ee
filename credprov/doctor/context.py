"""What every check reads: the operator's options, the node's setup and what was loaded.

:class:`Context` is built once by :func:`credprov.doctor.run_doctor` and handed to every
check in report order; checks that load something later checks need (the provider config,
the cluster's objects) keep it here, and checks that meet a secret register it with a label
(:meth:`Context.redact_env`, :meth:`Context.redact_token`), so the report can name it
without printing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from credprov._go.durations import MINUTE
from credprov.api import internal
from credprov.base.redact import TOKEN_LABEL, env_label
from credprov.base.rootfs import NodeRoot
from credprov.credentialprovider.plugin.config import (
    DEFAULT_FEATURE_GATES,
    SERVICE_ACCOUNT_TOKEN_GATE,
)
from credprov.credentialprovider.plugin.exec import DEFAULT_PLUGIN_TIMEOUT
from credprov.doctor.discovery import KubeletSetup
from credprov.errors import UsageError

TYPE_CHECKING = False  # nodeauth costs start-up; the annotation needs it only when checked
if TYPE_CHECKING:
    from credprov.nodeauth.store import ObjectStore

__all__ = ["Context", "DoctorOptions", "DoctorUsageError"]

#: KEP-4412's gate, by the config loader's name for it.
SA_TOKEN_GATE = SERVICE_ACCOUNT_TOKEN_GATE
#: KEP-2535's gate (beta, on by default since 1.35).
ENSURE_PULLED_GATE = "KubeletEnsureSecretPulledImages"

#: The gates that change credential behaviour, with the newest kubelet's defaults: the
#: config loader's (:data:`~credprov.credentialprovider.plugin.config.DEFAULT_FEATURE_GATES`,
#: KEP-4412 beta on in 1.34) and KEP-2535's.
GATE_DEFAULTS: dict[str, bool] = {**DEFAULT_FEATURE_GATES, ENSURE_PULLED_GATE: True}


class DoctorUsageError(UsageError):
    """A doctor option that cannot be used (an unreadable ``--objects`` file, a root that is
    not a directory): one line, which every CLI prints with exit status 2, like any
    :class:`~credprov.errors.UsageError`."""


@dataclass
class DoctorOptions:
    """What ``credprov doctor`` was asked (see its ``--help``).

    Paths are as the operator gave them: ``root`` on this machine, ``config``, ``bin_dir``
    and ``kubelet_config`` inside the node's root; ``objects`` and ``images_file`` on this
    machine. ``cri`` and ``images_file`` are mutually exclusive sources of the node's images.
    """

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
    #: containerd's registry ``config_path`` inside the root (default: from its config.toml).
    containerd_config_path: str | None = None
    #: CRI-O's ``registries.conf`` inside the root (default: the usual path when present).
    registries_conf: str | None = None
    #: The option that chose the Go behaviour credprov follows (``--go-version``,
    #: ``--kubelet-version``, ``--kubelet-binary``, ``$CREDPROV_GO_VERSION``); None: the
    #: node's kubelet binary decides (:mod:`credprov.doctor.kubelet_go`).
    go_choice: str | None = None
    #: ``--go-debug``: GODEBUG settings over the kubelet binary's and process's.
    go_debug: str | None = None


@dataclass
class Context:
    """The state every check reads and a few write (see the module docstring)."""

    #: What the doctor was asked.
    options: DoctorOptions
    #: The node's filesystem, read inside its root.
    root: NodeRoot
    #: The kubelet's effective setup and where each value came from.
    setup: KubeletSetup
    #: The node's machine architecture (``uname -m`` spelling), for plugin binaries.
    machine: str
    #: The provider config, once ``provider-config.valid`` has loaded it.
    config: internal.CredentialProviderConfig | None = None
    #: The cluster's objects (``--objects``), once loaded.
    store: ObjectStore | None = None
    #: Values never to print, each with the label printed in its place.
    secrets: dict[str, str] = field(default_factory=dict)
    #: Provider name -> plugin.present/plugin.runnable passed.
    runnable: dict[str, bool] = field(default_factory=dict)
    #: Why the kubelet runs no plugin at all (k3s/RKE2 without both provider paths); the
    #: provider and plugin checks are skipped with this reason.
    providers_off: str | None = None
    #: Why no plugin can start: the bin dir is on a ``noexec`` mount (``bin-dir.exec``).
    bin_dir_noexec: str | None = None

    def gate(self, name: str) -> bool:
        """The feature gate's effective value on the node (its kubelet default if unset)."""
        value = self.setup.feature_gates.get(name)
        return GATE_DEFAULTS.get(name, False) if value is None else bool(value.value)

    def gates(self) -> dict[str, bool]:
        """Every gate of :data:`GATE_DEFAULTS` with its effective value."""
        return {name: self.gate(name) for name in GATE_DEFAULTS}

    @property
    def node_name(self) -> str:
        """The node's name as the kubelet would register it ("" when unknown)."""
        return str(self.setup.get("nodeName") or "")

    def redact_env(self, provider: internal.CredentialProvider) -> None:
        """Never print ``provider``'s ``env`` values: each shows as
        ``<env NAME of provider P>``."""
        for var in provider.env:
            self._add_secret(var.value, env_label(var.name, provider.name))

    def redact_token(self, token: str) -> None:
        """Never print ``token``: it shows as ``<service-account token>``."""
        self._add_secret(token, TOKEN_LABEL)

    def _add_secret(self, value: str, label: str) -> None:
        # The first label a value gets stays: it names where the doctor first met it.
        if value:
            self.secrets.setdefault(value, label)
