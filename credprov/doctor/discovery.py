"""Finding a node's effective kubelet setup, and where each value came from.

Sources, from the weakest to the strongest (a later one overrides an earlier one):

1. distribution defaults: k3s/RKE2 ``/var/lib/rancher/credentialprovider/{bin,config.yaml}``,
   EKS ``/etc/eks/image-credential-provider/``, the kubelet's ``/var/lib/kubelet``;
2. the KubeletConfiguration file (``--config``): ``featureGates``,
   ``imagePullCredentialsVerificationPolicy``, ``preloadedImagesVerificationAllowlist``, and
   credential-provider fields when the file has them;
3. the kubelet's command line: the running process (``/proc/<pid>/cmdline`` of
   ``kubelet``, ``k3s``, ``k3s-agent``, ``k3s-server`` or ``rke2``) when there is one,
   else the systemd unit with its drop-ins and ``EnvironmentFile=`` files (for k3s/RKE2
   also ``/etc/rancher/<k3s|rke2>/config.yaml`` and its ``--kubelet-arg`` entries);
4. what the operator gives the doctor (``--config``, ``--bin-dir``, ``--kubelet-config``,
   ``--node``).

Every value is a :class:`Value` with its source, so the report can say "bin dir
/usr/libexec/... from $KUBELET_EXTRA_ARGS in /etc/default/kubelet". Problems met on the way
(an unreadable file, an unparsable config) are kept in :attr:`KubeletSetup.notes`; discovery
itself never fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from credprov.doctor.flags import (
    UnitSettings,
    expand_exec,
    parse_env_file,
    parse_flags,
    parse_unit,
)
from credprov.doctor.rootfs import NodeFileError, NodeRoot, describe_error

__all__ = [
    "ALLOWLIST",
    "BIN_DIR",
    "CONFIG",
    "KUBELET_CONFIG",
    "NODE_NAME",
    "POLICY",
    "ROOT_DIR",
    "RUNTIME_ENDPOINT",
    "KubeletSetup",
    "Overrides",
    "Value",
    "discover",
]

# Keys of KubeletSetup.values (the kubelet's own names).
CONFIG = "imageCredentialProviderConfig"
BIN_DIR = "imageCredentialProviderBinDir"
KUBELET_CONFIG = "config"
ROOT_DIR = "rootDir"
NODE_NAME = "nodeName"
RUNTIME_ENDPOINT = "containerRuntimeEndpoint"
POLICY = "imagePullCredentialsVerificationPolicy"
ALLOWLIST = "preloadedImagesVerificationAllowlist"

#: Kubelet flag name -> key.
_FLAG_KEYS = {
    "image-credential-provider-config": CONFIG,
    "image-credential-provider-bin-dir": BIN_DIR,
    "config": KUBELET_CONFIG,
    "root-dir": ROOT_DIR,
    "hostname-override": NODE_NAME,
    "container-runtime-endpoint": RUNTIME_ENDPOINT,
}

_PROCESS_NAMES = {
    "kubelet": "kubelet",
    "k3s": "k3s",
    "k3s-agent": "k3s",
    "k3s-server": "k3s",
    "rke2": "rke2",
}

_UNIT_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)

_UNITS = (
    ("kubelet.service", "kubeadm"),
    ("k3s.service", "k3s"),
    ("k3s-agent.service", "k3s"),
    ("rke2-server.service", "rke2"),
    ("rke2-agent.service", "rke2"),
)

RANCHER_BIN_DIR = "/var/lib/rancher/credentialprovider/bin"
RANCHER_CONFIG = "/var/lib/rancher/credentialprovider/config.yaml"
EKS_DIR = "/etc/eks/image-credential-provider"
DEFAULT_ROOT_DIR = "/var/lib/kubelet"

_SMALL = 64 * 1024


@dataclass(frozen=True)
class Value:
    value: Any
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


@dataclass
class Overrides:
    """What the operator told the doctor; each one wins over what the node says."""

    config: str | None = None
    bin_dir: str | None = None
    kubelet_config: str | None = None
    node: str | None = None


@dataclass
class KubeletSetup:
    """The effective kubelet setup of one node root."""

    root: NodeRoot
    flavor: str = "unknown"  # kubeadm, k3s, rke2, eks, unknown
    kubelet: Value | None = None  # how the kubelet was found
    pid: int | None = None
    values: dict[str, Value] = field(default_factory=dict)
    #: Gate name -> Value(bool); only the gates written somewhere (defaults are the checks').
    feature_gates: dict[str, Value] = field(default_factory=dict)
    feature_gates_error: str | None = None
    kubelet_configuration: dict[str, Any] = field(default_factory=dict)
    kubelet_configuration_error: str | None = None
    #: KubeletConfiguration credential-provider fields (reported, see kubelet.flags).
    config_file_provider_fields: dict[str, Value] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def get(self, key: str) -> str | None:
        value = self.values.get(key)
        return None if value is None else str(value.value)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "root": self.root.root,
            "flavor": self.flavor,
            "kubelet": None if self.kubelet is None else self.kubelet.to_dict(),
        }
        for key, value in self.values.items():
            out[key] = value.to_dict()
        out["featureGates"] = {name: v.to_dict() for name, v in self.feature_gates.items()}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def discover(root: NodeRoot, overrides: Overrides | None = None) -> KubeletSetup:
    """Find the kubelet setup of the node at ``root`` (never raises)."""
    overrides = overrides or Overrides()
    setup = KubeletSetup(root=root)
    process = _find_process(root, setup)
    flags = process if process is not None else _from_systemd(root, setup)
    if setup.flavor == "unknown":
        setup.flavor = _guess_flavor(root)
    if setup.flavor in ("k3s", "rke2"):
        flags = _rancher_flags(root, setup, flags)

    # 1. defaults
    setup.values[ROOT_DIR] = Value(DEFAULT_ROOT_DIR, "kubelet default")
    if setup.flavor in ("k3s", "rke2"):
        setup.values[BIN_DIR] = Value(RANCHER_BIN_DIR, f"{setup.flavor} default")
        setup.values[CONFIG] = Value(RANCHER_CONFIG, f"{setup.flavor} default")
    elif setup.flavor == "eks":
        setup.values[BIN_DIR] = Value(EKS_DIR, "EKS default")
        setup.values[CONFIG] = Value(f"{EKS_DIR}/config.json", "EKS default")

    # 2. the KubeletConfiguration file
    if overrides.kubelet_config:
        setup.values[KUBELET_CONFIG] = Value(overrides.kubelet_config, "--kubelet-config")
    elif "config" in flags:
        value, origin = flags["config"]
        setup.values[KUBELET_CONFIG] = Value(value, origin)
    _read_kubelet_configuration(root, setup)

    # 3. flags
    for flag, key in _FLAG_KEYS.items():
        if flag in flags and key != KUBELET_CONFIG:
            value, origin = flags[flag]
            setup.values[key] = Value(value, origin)
    if "feature-gates" in flags:
        value, origin = flags["feature-gates"]
        _merge_gate_flag(setup, value, origin)

    # 4. the operator
    if overrides.config:
        setup.values[CONFIG] = Value(overrides.config, "--config")
    if overrides.bin_dir:
        setup.values[BIN_DIR] = Value(overrides.bin_dir, "--bin-dir")
    if overrides.node:
        setup.values[NODE_NAME] = Value(overrides.node.lower(), "--node")
    elif NODE_NAME in setup.values:
        override = setup.values[NODE_NAME]
        setup.values[NODE_NAME] = Value(override.value.lower(), override.source)
    else:
        _hostname(root, setup)
    return setup


# -- a running kubelet ---------------------------------------------------------------------------


def _find_process(root: NodeRoot, setup: KubeletSetup) -> dict[str, tuple[str, str]] | None:
    found: list[tuple[int, str, list[str]]] = []
    for entry in root.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = root.read(f"/proc/{entry}/comm", 256).decode("utf-8", "replace").strip()
            raw = root.read(f"/proc/{entry}/cmdline", _SMALL)
        except OSError:
            continue  # gone, or not ours to read
        argv = [a.decode("utf-8", "replace") for a in raw.split(b"\0")]
        if argv and argv[-1] == "":
            argv.pop()
        if not argv:
            continue
        name = _PROCESS_NAMES.get(comm) or _PROCESS_NAMES.get(os.path.basename(argv[0]))
        if name is None:
            continue
        found.append((int(entry), name, argv))
    if not found:
        return None
    found.sort()
    pid, name, argv = found[0]
    if len(found) > 1:
        others = ", ".join(str(p) for p, _, _ in found[1:])
        setup.notes.append(f"more than one kubelet process; using pid {pid} (also: {others})")
    setup.pid = pid
    setup.flavor = "kubeadm" if name == "kubelet" else name
    origin = f"/proc/{pid}/cmdline"
    setup.kubelet = Value(" ".join(argv[:1]), f"running process {pid} ({name})")
    args = argv[1:]
    if name != "kubelet" and args and not args[0].startswith("-"):
        args = args[1:]  # the k3s/rke2 subcommand (server, agent)
    return parse_flags((a, origin) for a in args)


# -- systemd ----------------------------------------------------------------------------------


def _from_systemd(root: NodeRoot, setup: KubeletSetup) -> dict[str, tuple[str, str]]:
    for unit, flavor in _UNITS:
        unit_path = next((f"{d}/{unit}" for d in _UNIT_DIRS if root.exists(f"{d}/{unit}")), None)
        if unit_path is None:
            continue
        settings = UnitSettings()
        for path in [unit_path, *_drop_ins(root, unit)]:
            try:
                parse_unit(root.read_text(path, _SMALL), settings, path)
            except OSError as exc:
                setup.notes.append(f"cannot read {describe_error(exc)}")
        env: dict[str, tuple[str, str]] = {}
        # Environment= first; EnvironmentFile= files override it, later files win.
        for name, value, where in settings.environment:
            env[name] = (value, f"Environment= in {where}")
        for path, optional in settings.environment_files:
            try:
                text = root.read_text(path, _SMALL)
            except FileNotFoundError:
                if not optional:
                    setup.notes.append(
                        f"{path} is missing and EnvironmentFile= has no '-': systemd refuses "
                        f"to start {unit}"
                    )
                continue
            except OSError as exc:
                setup.notes.append(f"cannot read {describe_error(exc)}")
                continue
            for name, value in parse_env_file(text):
                env[name] = (value, path)
        setup.flavor = flavor
        setup.kubelet = Value(
            " ".join(settings.exec_start[:1]), "systemd unit " + " + ".join(settings.sources)
        )
        argv = expand_exec(settings.exec_start, env, f"ExecStart= in {settings.sources[-1]}")
        args = argv[1:]
        if flavor != "kubeadm" and args and not args[0][0].startswith("-"):
            args = args[1:]
        return parse_flags(args)
    return {}


def _drop_ins(root: NodeRoot, unit: str) -> list[str]:
    """``<unit>.d/*.conf`` across the unit directories: a name in a stronger directory masks
    the same name in a weaker one; applied in lexical order of the names."""
    chosen: dict[str, str] = {}
    for directory in _UNIT_DIRS:
        for name in root.listdir(f"{directory}/{unit}.d"):
            if name.endswith(".conf") and name not in chosen:
                chosen[name] = f"{directory}/{unit}.d/{name}"
    return [chosen[name] for name in sorted(chosen)]


# -- k3s / RKE2 --------------------------------------------------------------------------------


def _rancher_flags(
    root: NodeRoot, setup: KubeletSetup, cli: dict[str, tuple[str, str]]
) -> dict[str, tuple[str, str]]:
    """k3s/RKE2 agent flags: the config file, then ``--kubelet-arg``s, then its own flags."""
    distro = setup.flavor
    merged: dict[str, tuple[str, str]] = {}
    kubelet_args: list[tuple[str, str]] = []
    config_dir = f"/etc/rancher/{distro}"
    files = [f"{config_dir}/config.yaml"] + [
        f"{config_dir}/config.yaml.d/{n}"
        for n in root.listdir(f"{config_dir}/config.yaml.d")
        if n.endswith((".yaml", ".yml"))
    ]
    for path in files:
        try:
            doc = yaml.safe_load(root.read_text(path, _SMALL))
        except FileNotFoundError:
            continue
        except (OSError, yaml.YAMLError) as exc:
            reason = describe_error(exc) if isinstance(exc, OSError) else f"{path}: not YAML"
            setup.notes.append(f"cannot read {reason}")
            continue
        if not isinstance(doc, dict):
            continue
        for key, value in doc.items():
            if key == "kubelet-arg":
                items = value if isinstance(value, list) else [value]
                kubelet_args.extend((str(v), f"kubelet-arg in {path}") for v in items)
            elif isinstance(value, str | int | float | bool):
                merged[str(key)] = (str(value), path)
    # --kubelet-arg on the command line comes after the file's.
    for name, (value, origin) in cli.items():
        if name == "kubelet-arg":
            kubelet_args.extend((v, f"--kubelet-arg in {origin}") for v in value.split("\n"))
    out: dict[str, tuple[str, str]] = {}
    for arg, origin in kubelet_args:
        name, _, value = arg.lstrip("-").partition("=")
        out[name] = (value, origin)
    out.update({k: v for k, v in merged.items() if k in _FLAG_KEYS})
    out.update({k: v for k, v in cli.items() if k != "kubelet-arg"})
    return out


def _guess_flavor(root: NodeRoot) -> str:
    if root.exists("/etc/rancher/rke2"):
        return "rke2"
    if root.exists("/etc/rancher/k3s") or root.exists("/var/lib/rancher/credentialprovider"):
        return "k3s"
    if root.exists(EKS_DIR):
        return "eks"
    return "unknown"


# -- KubeletConfiguration, feature gates, node name ----------------------------------------------


def _read_kubelet_configuration(root: NodeRoot, setup: KubeletSetup) -> None:
    path_value = setup.values.get(KUBELET_CONFIG)
    if path_value is None:
        return
    path = str(path_value.value)
    try:
        doc = yaml.safe_load(root.read_text(path))
    except OSError as exc:
        setup.kubelet_configuration_error = f"cannot read {describe_error(exc)}"
        return
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        setup.kubelet_configuration_error = f"{path}: not YAML or JSON ({first})"
        return
    if doc is None:
        doc = {}
    if not isinstance(doc, dict) or doc.get("kind", "KubeletConfiguration") != (
        "KubeletConfiguration"
    ):
        setup.kubelet_configuration_error = f"{path}: not a KubeletConfiguration"
        return
    setup.kubelet_configuration = doc
    where = f"KubeletConfiguration {path}"
    gates = doc.get("featureGates")
    if isinstance(gates, dict):
        for name, value in gates.items():
            if isinstance(value, bool):
                setup.feature_gates[str(name)] = Value(value, f"featureGates in {where}")
    for key in (POLICY, ALLOWLIST):
        if key in doc:
            setup.values[key] = Value(doc[key], where)
    for key in (CONFIG, BIN_DIR):
        if isinstance(doc.get(key), str) and doc[key]:
            setup.config_file_provider_fields[key] = Value(doc[key], where)
            setup.values[key] = Value(doc[key], where)
    if isinstance(doc.get(RUNTIME_ENDPOINT), str):
        setup.values[RUNTIME_ENDPOINT] = Value(doc[RUNTIME_ENDPOINT], where)


_TRUE = ("1", "t", "T", "true", "TRUE", "True")
_FALSE = ("0", "f", "F", "false", "FALSE", "False")


def _merge_gate_flag(setup: KubeletSetup, spec: str, origin: str) -> None:
    """``--feature-gates A=true,B=false``: every gate written, invalid values noted.

    Unlike :func:`credprov.credentialprovider.plugin.config.parse_feature_gates`, unknown gate names are kept (the
    kubelet knows hundreds; the doctor only reads a few).
    """
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if value in _TRUE:
            setup.feature_gates[name] = Value(True, f"--feature-gates from {origin}")
        elif value in _FALSE:
            setup.feature_gates[name] = Value(False, f"--feature-gates from {origin}")
        else:
            setup.feature_gates_error = (
                f"--feature-gates from {origin}: invalid value of {name}={value}"
                if sep
                else f"--feature-gates from {origin}: missing bool value for {name}"
            )


def _hostname(root: NodeRoot, setup: KubeletSetup) -> None:
    try:
        name = root.read_text("/etc/hostname", 4096).strip().lower()
    except FileNotFoundError:
        name = os.uname().nodename.lower() if root.is_host else ""
        if name:
            setup.values[NODE_NAME] = Value(name, "hostname")
        return
    except (OSError, NodeFileError) as exc:
        setup.notes.append(f"cannot read {describe_error(exc)}")
        return
    if name:
        setup.values[NODE_NAME] = Value(name, "/etc/hostname")
