"""Finding a node's effective kubelet setup, and where each value came from.

Sources, from the weakest to the strongest (a later one overrides an earlier one):

1. distribution defaults: k3s/RKE2 ``/var/lib/rancher/credentialprovider/{bin,config.yaml}``,
   EKS ``/etc/eks/image-credential-provider/``, the kubelet's ``/var/lib/kubelet``;
2. the KubeletConfiguration file (``--config``) and its drop-ins (``--config-dir``: every
   ``*.conf`` file, in name order, merged over it as the kubelet merges them: objects key by
   key, lists and scalars replaced): ``featureGates``,
   ``imagePullCredentialsVerificationPolicy``, ``preloadedImagesVerificationAllowlist``, and
   credential-provider fields when the file has them. Read as the kubelet reads them
   (:func:`credprov._go.decode.load_document`: go-yaml's limits on depth and aliases, JSON
   numbers and dates as JSON text);
3. the kubelet's command line: the running process (``/proc/<pid>/cmdline`` of
   ``kubelet``, ``k3s``, ``k3s-agent``, ``k3s-server`` or ``rke2``) when there is one,
   else the systemd unit with its drop-ins and ``EnvironmentFile=`` files (for k3s/RKE2
   also ``/etc/rancher/<k3s|rke2>/config.yaml`` and its ``--kubelet-arg`` entries);
4. what the operator gives the doctor (``--config``, ``--bin-dir``, ``--kubelet-config``,
   ``--node``).

Flavors: ``kubeadm`` (a ``kubelet.service``), ``eks`` (an EKS AL2023 node: ``nodeadm``
writes ``/etc/eks/kubelet/environment`` for the same unit), ``k3s``, ``rke2``, ``unknown``.

Hostile roots are bounded: at most :data:`MAX_DROP_INS` unit and KubeletConfiguration
drop-ins and :data:`MAX_ENV_FILES` distinct ``EnvironmentFile=`` files are read (each once,
however often it is named), at most :data:`MAX_PROCESSES` ``/proc`` entries are looked at,
each process directory once (however many ``/proc/<pid>`` links resolve to it), a process's
whole command line only when its name is a kubelet's, and at most
:data:`MAX_KUBELET_CANDIDATES` kubelet processes.

Every value is a :class:`Value` with its source, so the report can say "bin dir
/usr/libexec/... from $KUBELET_EXTRA_ARGS in /etc/default/kubelet". Problems met on the way
(an unreadable file, an unparsable config) are kept in :attr:`KubeletSetup.notes`; discovery
itself never fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from credprov._go.decode import DecodeError, load_document
from credprov.base.redact import shorten
from credprov.base.rootfs import MAX_READ_BYTES, NodeFileError, NodeRoot, describe_error
from credprov.doctor.flags import (
    UnitSettings,
    expand_exec,
    parse_env_file,
    parse_flags,
    parse_unit,
)

__all__ = [
    "ALLOWLIST",
    "BIN_DIR",
    "CONFIG",
    "KUBELET_CONFIG",
    "KUBELET_CONFIG_DIR",
    "MAX_DROP_INS",
    "MAX_ENV_FILES",
    "MAX_KUBELET_CANDIDATES",
    "MAX_PROCESSES",
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
KUBELET_CONFIG_DIR = "configDir"
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
    "config-dir": KUBELET_CONFIG_DIR,
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
#: What ``nodeadm`` (EKS AL2023) writes for ``kubelet.service``'s ``EnvironmentFile=``.
EKS_KUBELET_ENV = "/etc/eks/kubelet/environment"
DEFAULT_ROOT_DIR = "/var/lib/kubelet"

#: Unit drop-ins and KubeletConfiguration drop-ins read (a node has a handful).
MAX_DROP_INS = 256
#: Distinct ``EnvironmentFile=`` files read for one unit.
MAX_ENV_FILES = 64
#: ``/proc`` entries looked at when searching for a running kubelet.
MAX_PROCESSES = 20_000
#: Kubelet processes read at most (the lowest pid is used; a node runs one).
MAX_KUBELET_CANDIDATES = 8

_SMALL = 64 * 1024


@dataclass(frozen=True)
class Value:
    """One setting of the node's kubelet and where it came from (``source``: a file, a
    unit's ``Environment=``, a process's command line, a default, an operator option)."""

    value: Any
    source: str

    def to_dict(self) -> dict[str, Any]:
        """``{"value": ..., "source": ...}`` for the JSON report (the value as it is)."""
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
    #: The KubeletConfiguration drop-ins read (``--config-dir``), in order.
    drop_ins: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def get(self, key: str) -> str | None:
        """The setting ``key`` (one of this module's key constants, e.g. :data:`CONFIG`) as
        text, None when nothing sets it."""
        value = self.values.get(key)
        return None if value is None else str(value.value)

    def to_dict(self) -> dict[str, Any]:
        """The report's ``node`` section: root, flavor, how the kubelet was found, every
        value with its source (shown through :func:`json_safe`), the gates written and any
        notes."""
        out: dict[str, Any] = {
            "root": self.root.root,
            "flavor": self.flavor,
            "kubelet": None if self.kubelet is None else self.kubelet.to_dict(),
        }
        for key, value in self.values.items():
            out[key] = {"value": json_safe(value.value), "source": value.source}
        out["featureGates"] = {name: v.to_dict() for name, v in self.feature_gates.items()}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


#: Longest text a node value is shown with (a hostile config may hold megabytes).
_MAX_SHOWN = 512


def json_safe(value: Any, depth: int = 0) -> Any:
    """A node value as it may be printed: strings, booleans and small numbers as they are,
    lists (of at most 100) element by element, anything else (objects, 5,000-digit numbers,
    deep nesting) as a short description: the checks say what is wrong with it."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return shorten(value, _MAX_SHOWN)
    if isinstance(value, int):
        return value if abs(value) < 10**18 else "<an integer too large to show>"
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, list) and depth == 0:
        shown = [json_safe(v, depth + 1) for v in value[:100]]
        return shown + (["..."] if len(value) > 100 else [])
    return f"<{'a list' if isinstance(value, list) else 'an object'}>"


def discover(root: NodeRoot, overrides: Overrides | None = None) -> KubeletSetup:
    """Find the kubelet setup of the node at ``root`` (never raises)."""
    overrides = overrides or Overrides()
    setup = KubeletSetup(root=root)
    process = _find_process(root, setup)
    flags = process if process is not None else _from_systemd(root, setup)
    if setup.flavor == "unknown":
        setup.flavor = _guess_flavor(root)
    elif setup.flavor == "kubeadm" and _is_eks_nodeadm(root, setup):
        setup.flavor = "eks"
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
    if "config-dir" in flags:
        value, origin = flags["config-dir"]
        setup.values[KUBELET_CONFIG_DIR] = Value(value, origin)
    _read_kubelet_configuration(root, setup)

    # 3. flags
    for flag, key in _FLAG_KEYS.items():
        if flag in flags and key not in (KUBELET_CONFIG, KUBELET_CONFIG_DIR):
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
    pids = [e for e in root.listdir("/proc") if e.isdigit()]
    if len(pids) > MAX_PROCESSES:
        setup.notes.append(f"/proc has {len(pids)} processes; looked at the first {MAX_PROCESSES}")
    seen: set[tuple[int, int]] = set()
    for entry in pids[:MAX_PROCESSES]:
        if len(found) >= MAX_KUBELET_CANDIDATES:
            setup.notes.append(
                f"more than {MAX_KUBELET_CANDIDATES} kubelet processes; looked no further"
            )
            break
        # A hostile root's /proc/<pid> may link many pids to one directory: read each
        # process once (a real /proc has one directory per process).
        st = root.stat(f"/proc/{entry}")
        if st is None or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            comm = root.read(f"/proc/{entry}/comm", 256).decode("utf-8", "replace").strip()
            if _PROCESS_NAMES.get(comm) is None:
                # Not the kubelet by its name: only the start of argv[0] is needed, and
                # comm is cut at 15 characters ("kubelet" fits; argv[0] may be a path).
                head = root.read(f"/proc/{entry}/cmdline", 4096, head=True)
                first = head.split(b"\0", 1)[0].decode("utf-8", "replace")
                if _PROCESS_NAMES.get(os.path.basename(first)) is None:
                    continue
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
        for path in [unit_path, *_drop_ins(root, unit, setup)]:
            try:
                parse_unit(root.read_text(path, _SMALL), settings, path)
            except OSError as exc:
                setup.notes.append(f"cannot read {describe_error(exc)}")
        env: dict[str, tuple[str, str]] = {}
        # Environment= first; EnvironmentFile= files override it, later files win. A file
        # named again is read again by systemd, with the same result: read each one once.
        for name, value, where in settings.environment:
            env[name] = (value, f"Environment= in {where}")
        assignments: dict[str, list[tuple[str, str]] | None] = {}
        for path, optional in settings.environment_files:
            if path not in assignments:
                if len(assignments) >= MAX_ENV_FILES:
                    setup.notes.append(
                        f"{unit} names more than {MAX_ENV_FILES} EnvironmentFile= files; "
                        "the rest were not read"
                    )
                    break
                assignments[path] = _env_file(root, setup, unit, path, optional)
            for name, value in assignments[path] or ():
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


def _env_file(
    root: NodeRoot, setup: KubeletSetup, unit: str, path: str, optional: bool
) -> list[tuple[str, str]] | None:
    try:
        text = root.read_text(path, _SMALL)
    except FileNotFoundError:
        if not optional:
            setup.notes.append(
                f"{path} is missing and EnvironmentFile= has no '-': systemd refuses "
                f"to start {unit}"
            )
        return None
    except OSError as exc:
        setup.notes.append(f"cannot read {describe_error(exc)}")
        return None
    return parse_env_file(text)


def _drop_ins(root: NodeRoot, unit: str, setup: KubeletSetup | None = None) -> list[str]:
    """``<unit>.d/*.conf`` across the unit directories: a name in a stronger directory masks
    the same name in a weaker one; applied in lexical order of the names (at most
    :data:`MAX_DROP_INS`)."""
    chosen: dict[str, str] = {}
    for directory in _UNIT_DIRS:
        for name in root.listdir(f"{directory}/{unit}.d"):
            if name.endswith(".conf") and name not in chosen:
                chosen[name] = f"{directory}/{unit}.d/{name}"
    names = sorted(chosen)
    if len(names) > MAX_DROP_INS and setup is not None:
        setup.notes.append(
            f"{unit} has {len(names)} drop-ins; read the first {MAX_DROP_INS} (a later one "
            "may change what is reported)"
        )
    return [chosen[name] for name in names[:MAX_DROP_INS]]


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
    for path in files[:MAX_DROP_INS]:
        try:
            doc = _load(root, path, _SMALL)
        except FileNotFoundError:
            continue
        except (OSError, DecodeError) as exc:
            reason = describe_error(exc) if isinstance(exc, OSError) else f"{path}: {exc}"
            setup.notes.append(f"cannot read {_first_line(reason)}")
            continue
        if not isinstance(doc, dict):
            continue
        for key, value in doc.items():
            if key == "kubelet-arg":
                items = value if isinstance(value, list) else [value]
                kubelet_args.extend(
                    (v, f"kubelet-arg in {path}") for v in items if isinstance(v, str)
                )
            elif isinstance(value, str | bool):
                merged[str(key)] = (str(value).lower() if isinstance(value, bool) else value, path)
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


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text


def _load(root: NodeRoot, path: str, limit: int = MAX_READ_BYTES) -> Any:
    """A JSON or YAML file read as the kubelet reads one (go-yaml's depth and alias limits;
    dates, sets and binary as JSON text; numbers exact), as plain data.

    Raises:
        OSError: the file cannot be read inside the root.
        DecodeError: it does not parse.
    """
    try:
        return load_document(root.read(path, limit)).data
    except RecursionError:  # belt and braces: the decoders are iterative
        raise DecodeError("exceeded max depth") from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A drop-in over the KubeletConfiguration: objects merged key by key (recursively),
    lists and scalars replaced (the kubelet's ``--config-dir`` merge)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _kubelet_configuration(root: NodeRoot, path: str) -> tuple[dict[str, Any] | None, str]:
    """One KubeletConfiguration document, or ``(None, why the kubelet refuses it)``."""
    try:
        doc = _load(root, path)
    except OSError as exc:
        return None, f"cannot read {describe_error(exc)}"
    except DecodeError as exc:
        return None, f"{path}: not YAML or JSON ({_first_line(str(exc))})"
    if doc is None:
        doc = {}
    if not isinstance(doc, dict) or doc.get("kind", "KubeletConfiguration") != (
        "KubeletConfiguration"
    ):
        return None, f"{path}: not a KubeletConfiguration"
    return doc, ""


def _read_kubelet_configuration(root: NodeRoot, setup: KubeletSetup) -> None:
    """The KubeletConfiguration file, then its ``--config-dir`` drop-ins merged over it."""
    path_value = setup.values.get(KUBELET_CONFIG)
    dir_value = setup.values.get(KUBELET_CONFIG_DIR)
    sources: list[tuple[str, str]] = []  # (path, where)
    if path_value is not None:
        path = str(path_value.value)
        sources.append((path, f"KubeletConfiguration {path}"))
    if dir_value is not None:
        directory = str(dir_value.value).rstrip("/") or "/"
        try:
            entries = root.entries(directory)
        except FileNotFoundError:
            entries = []
            setup.notes.append(f"--config-dir {directory} does not exist")
        except OSError as exc:
            setup.kubelet_configuration_error = f"cannot read {describe_error(exc)}"
            return
        names = [n for n, is_dir in entries if not is_dir and n.endswith(".conf")]
        if len(names) > MAX_DROP_INS:
            setup.notes.append(
                f"{directory} has {len(names)} drop-ins; read the first {MAX_DROP_INS}"
            )
        for name in names[:MAX_DROP_INS]:
            drop_in = f"{directory.rstrip('/')}/{name}"
            setup.drop_ins.append(drop_in)
            sources.append((drop_in, f"KubeletConfiguration drop-in {drop_in}"))
    merged: dict[str, Any] = {}
    where_of: dict[str, str] = {}  # top-level key -> the last file that set it
    gate_where: dict[str, str] = {}
    for path, where in sources:
        doc, error = _kubelet_configuration(root, path)
        if doc is None:
            setup.kubelet_configuration_error = error
            return
        merged = _merge(merged, doc)
        for key in doc:
            where_of[str(key)] = where
        gates = doc.get("featureGates")
        if isinstance(gates, dict):
            for name in gates:
                gate_where[str(name)] = where
    if not sources:
        return
    setup.kubelet_configuration = merged
    gates = merged.get("featureGates")
    if isinstance(gates, dict):
        for name, value in gates.items():
            if isinstance(value, bool):
                setup.feature_gates[str(name)] = Value(
                    value, f"featureGates in {gate_where[str(name)]}"
                )
    for key in (POLICY, ALLOWLIST):
        if key in merged:
            setup.values[key] = Value(merged[key], where_of[key])
    for key in (CONFIG, BIN_DIR):
        if isinstance(merged.get(key), str) and merged[key]:
            setup.config_file_provider_fields[key] = Value(merged[key], where_of[key])
            setup.values[key] = Value(merged[key], where_of[key])
    if isinstance(merged.get(RUNTIME_ENDPOINT), str):
        setup.values[RUNTIME_ENDPOINT] = Value(merged[RUNTIME_ENDPOINT], where_of[RUNTIME_ENDPOINT])


def _is_eks_nodeadm(root: NodeRoot, setup: KubeletSetup) -> bool:
    """An EKS AL2023 node: nodeadm's environment file for ``kubelet.service`` is there, or
    ``nodeadm`` itself with the ``/etc/eks`` credential provider directory."""
    if root.exists(EKS_KUBELET_ENV):
        return True
    has_nodeadm = any(root.exists(p) for p in ("/usr/bin/nodeadm", "/usr/local/bin/nodeadm"))
    return has_nodeadm and root.exists(EKS_DIR)


def _merge_gate_flag(setup: KubeletSetup, spec: str, origin: str) -> None:
    """``--feature-gates A=true,B=false``: every gate written, invalid values noted.

    Each entry is parsed by the config loader's
    :func:`~credprov.credentialprovider.plugin.config.parse_feature_gates` (Go's
    ``strconv.ParseBool``), but unknown gate names are kept (the kubelet knows hundreds; the
    doctor only reads a few) and an invalid entry becomes
    :attr:`KubeletSetup.feature_gates_error` (the last one wins) instead of an exception.
    """
    from credprov.credentialprovider.plugin.config import ConfigError, parse_feature_gates

    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        try:
            parsed = parse_feature_gates(item, known=(name,))
        except ConfigError:
            setup.feature_gates_error = (
                f"--feature-gates from {origin}: invalid value of {name}={value}"
                if sep
                else f"--feature-gates from {origin}: missing bool value for {name}"
            )
            continue
        for gate, enabled in parsed.items():
            setup.feature_gates[gate] = Value(enabled, f"--feature-gates from {origin}")


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
