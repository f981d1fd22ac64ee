"""Registry mirrors: which hosts the container runtime contacts for an image, and whether
the credentials the kubelet hands it can work there.

The kubelet looks credentials up for the image *as written* in the pod
(``docker.io/library/nginx``) and passes them in ``PullImage``; the runtime may then send the
pull to other hosts: containerd through ``certs.d/<host>/hosts.toml``, CRI-O through
``registries.conf`` and its drop-ins. This module reads both from a node's filesystem
(:class:`credprov.base.rootfs.NodeRoot`: every path inside the root, bounded reads, no FIFOs,
errors of one line) and resolves an image to a :class:`PullRoute`, the ordered hosts the
runtime will contact; :func:`judge_credentials` says, per host, which credentials reach it.

containerd, from its ``docs/hosts.md`` (containerd/containerd):

* CRI reads host namespaces from ``[plugins."io.containerd.grpc.v1.cri".registry]
  config_path`` (containerd 1.x, ``version = 2``) or ``[plugins."io.containerd.cri.v1.images"
  .registry] config_path`` (2.x, ``version = 3``); files there are read on every pull.
* The namespace of an image is ``host[:port]``; with a port the directories tried are
  ``host_port_``, ``host:port``, then ``_default``, "if no other namespace matches".
* ``[host."URL"]`` entries "will be tried first in the order listed", then ``server``; with
  no ``server`` "the image's registry host namespace will automatically be used".
* ``capabilities``: ``pull`` fetches manifests and blobs by digest, ``resolve`` fetches
  manifests by name (tag to digest), ``push``; all three when not set. So a pull by tag
  resolves only at hosts with ``resolve`` (containerd also needs ``pull`` there), and a
  pull-only mirror serves content by digest.
* ``skip_verify``, ``ca`` (a path or a list, relative to the ``hosts.toml``),
  ``override_path`` (the URL path is the API root, no ``/v2`` appended); a host other than
  the namespace gets ``?ns=<namespace>`` on each request.
* "the containerd CRI plugin receives authentication credentials from kubelet": the
  kubelet's credential carries no server address (see :mod:`credprov.cri.client`), so
  containerd offers it to every host it tries, mirror or not (measured by
  ``tests/e2e/test_mirrors.py``: the mirror sees the kubelet's username).

CRI-O, from containers-registries.conf(5) and containers-registries.conf.d(5)
(containers/image):

* ``[[registry]]`` tables; the one whose ``prefix`` is the longest match of the image name
  (followed by ``/``, ``:``, ``@`` or the end) is used; ``*.example.com`` matches any number
  of subdomains; a missing ``prefix`` defaults to ``location``.
* ``location`` replaces the prefix; ``[[registry.mirror]]`` entries "are attempted in the
  specified order", then the primary location "is tried last".
* ``mirror-by-digest-only = true``: mirrors only for references with a digest;
  ``pull-from-mirror`` per mirror (``all``, ``digest-only``, ``tag-only``), "allowed only
  when mirror-by-digest-only is not configured"; ``blocked`` refuses the pull; ``insecure``.
* ``docker.io`` names are normalised with ``/library`` before matching.
* ``unqualified-search-registries`` are tried in order for a short name; ``short-name-mode``
  ``enforcing`` refuses an ambiguous one outside a terminal, ``permissive`` (the default)
  and ``disabled`` try them all.
* Drop-ins: ``registries.conf.d/*.conf`` "loaded in alpha-numerical order" after the main
  file; "specified fields ... overwrite any previous setting"; ``[[registry]]`` tables with
  an identical prefix are overwritten, new ones added.

CRI-O's use of the kubelet's credential for mirrors is not measured here (no CRI-O in
Debian bookworm); containers/image applies the credential of a request to every source it
tries, which is what :func:`judge_credentials` assumes for both runtimes.

Not modelled: containerd's deprecated ``registry.mirrors`` tables in ``config.toml`` (named in
a note), ``config.toml`` ``imports``, containerd's static ``registry.configs`` credentials and
CRI-O's global auth file (both used only when the kubelet sends no credential).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from credprov.base import boundedtoml
from credprov.base.rootfs import NodeRoot, describe_error
from credprov.errors import UsageError

__all__ = [
    "CONTAINERD",
    "CONTAINERD_CONFIG",
    "CRIO",
    "REGISTRIES_CONF",
    "Contact",
    "ContainerdHosts",
    "HostVerdict",
    "MirrorConfigError",
    "PullRoute",
    "RegistriesConf",
    "RegistryHost",
    "RuntimeMirrors",
    "containerd_config_path",
    "judge_credentials",
    "load_runtime_mirrors",
]

CONTAINERD = "containerd"
CRIO = "cri-o"
#: containerd's configuration file on a node (k3s/RKE2 keep theirs under /var/lib/rancher).
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
#: CRI-O's (containers/image's) registries configuration; drop-ins in ``<it>.d/``.
REGISTRIES_CONF = "/etc/containers/registries.conf"
#: A hosts.toml or registries.conf is a few KiB; refuse anything beyond this.
MAX_CONFIG_BYTES = 256 * 1024
#: Drop-ins, namespace directories and hosts per file considered at most.
MAX_ENTRIES = 512

_CAPABILITIES = ("pull", "resolve", "push")
_DEFAULT_NAMESPACE = "_default"
_PULL_FROM_MIRROR = ("", "all", "digest-only", "tag-only")
_LOCALHOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


class MirrorConfigError(UsageError):
    """A runtime's registry configuration that cannot be used: one line naming the file
    (a :class:`~credprov.errors.UsageError`: the CLI exits 2; the doctor reports it)."""


# -- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryHost:
    """One host a runtime may contact for a namespace, as configured.

    ``url`` is ``scheme://host[:port][/path]`` (containerd) or the rewritten location prefix
    (CRI-O, no scheme); ``host`` is ``host[:port]``; ``mirror`` is true for any host other
    than the registry the image names.
    """

    url: str
    host: str
    capabilities: tuple[str, ...] = _CAPABILITIES
    mirror: bool = False
    insecure: bool = False
    #: CRI-O's per-mirror ``pull-from-mirror`` ("" when unset).
    pull_from_mirror: str = ""
    #: CRI-O's primary ``location`` when it rewrites the image's registry (not a mirror, but
    #: another host all the same).
    relocated: bool = False

    @property
    def role(self) -> str:
        """``registry`` (the image's own), ``mirror`` or ``location`` (CRI-O's rewrite)."""
        return "location" if self.relocated else "mirror" if self.mirror else "registry"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {
            "host": self.host,
            "url": self.url,
            "capabilities": list(self.capabilities),
            "mirror": self.mirror,
            "role": self.role,
        }
        if self.insecure:
            out["insecure"] = True
        return out


@dataclass(frozen=True)
class Contact:
    """A host the runtime contacts for one pull: what for and what it asks there."""

    host: RegistryHost
    #: ``resolve`` (the tag to a digest) and/or ``pull`` (content by digest).
    purposes: tuple[str, ...]
    #: The reference (CRI-O) or first URL (containerd) requested at the host.
    request: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {**self.host.to_dict(), "purposes": list(self.purposes), "request": self.request}

    def describe(self) -> str:
        """``mirror.local (mirror; resolve, pull)``."""
        return f"{self.host.host} ({self.host.role}; {', '.join(self.purposes)})"


@dataclass(frozen=True)
class PullRoute:
    """Where one image's pull goes: the hosts in the order the runtime tries them."""

    image: str
    runtime: str
    #: The registry as the kubelet sees it (``docker.io``): credentials are looked up for it.
    registry: str
    #: The repository as the kubelet normalises it (``docker.io/library/nginx``).
    repository: str
    contacts: tuple[Contact, ...]
    #: The file (display form) that decided, "" for the runtime's defaults.
    source: str = ""
    #: Configured hosts this pull does not use, with why.
    skipped: tuple[tuple[RegistryHost, str], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def mirrors(self) -> tuple[Contact, ...]:
        """The contacts that are not the image's own registry."""
        return tuple(c for c in self.contacts if c.host.mirror)

    def describe(self) -> str:
        """``mirror.local (mirror; resolve, pull) then docker.io (registry; ...)``."""
        if not self.contacts:
            return "no host (the pull is refused)"
        return " then ".join(c.describe() for c in self.contacts)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "image": self.image,
            "runtime": self.runtime,
            "registry": self.registry,
            "repository": self.repository,
            "source": self.source,
            "contacts": [c.to_dict() for c in self.contacts],
            "skipped": [{**h.to_dict(), "reason": why} for h, why in self.skipped],
            "notes": list(self.notes),
        }


# -- reading files inside a root ----------------------------------------------------------------


def _read_toml(root: NodeRoot, path: str) -> dict[str, Any]:
    """A TOML file under the root, bounded; ``FileNotFoundError`` passes through.

    Raises:
        MirrorConfigError: unreadable, not a regular file, too big, not UTF-8, bad TOML or
            TOML beyond :mod:`credprov.base.boundedtoml`'s structure limits.
    """
    where = root.display(path)
    try:
        data = root.read(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise MirrorConfigError(f"{where}: {_reason(exc)}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MirrorConfigError(f"{where}: not UTF-8 text") from None
    try:
        return boundedtoml.loads(text)
    except boundedtoml.TOMLError as exc:
        raise MirrorConfigError(f"{where}: {exc}") from None


def _reason(exc: OSError) -> str:
    line = describe_error(exc)
    return line.split(": ", 1)[1] if exc.filename and ": " in line else line


def _is_dir(root: NodeRoot, path: str) -> bool:
    try:
        return root.is_dir(path)
    except OSError:
        return False


def _want(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if not isinstance(value, kind):
        raise MirrorConfigError(f"{where}: {what}: want {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", bool: "true or false", list: "a list", dict: "a table"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _image_parts(image: str) -> tuple[str, str, str, str]:
    """(registry, repository, tag, digest) as the kubelet normalises ``image``.

    Raises:
        MirrorConfigError: not a valid image reference.
    """
    from credprov.imageauth.images import InvalidImageError, split_reference

    try:
        repo, tag, digest = split_reference(image)
    except InvalidImageError as exc:
        raise MirrorConfigError(f"invalid image {image!r}: {exc}") from None
    return repo.split("/", 1)[0], repo, tag, digest


# -- containerd: certs.d/<host>/hosts.toml ------------------------------------------------------


def containerd_config_path(root: NodeRoot, config: str = CONTAINERD_CONFIG) -> str | None:
    """The CRI plugin's ``registry.config_path`` in containerd's ``config.toml`` (1.x
    ``version = 2`` or 2.x ``version = 3``); None when the file or the setting is absent.

    Raises:
        MirrorConfigError: the file cannot be read or is not valid TOML.
    """
    try:
        doc = _read_toml(root, config)
    except FileNotFoundError:
        return None
    plugins = doc.get("plugins")
    if not isinstance(plugins, dict):
        return None
    for name in ("io.containerd.cri.v1.images", "io.containerd.grpc.v1.cri"):
        registry = (
            plugins.get(name, {}).get("registry") if isinstance(plugins.get(name), dict) else None
        )
        if isinstance(registry, dict) and isinstance(registry.get("config_path"), str):
            return str(registry["config_path"]) or None
    return None


def _url_parts(raw: str, where: str) -> tuple[str, str, str]:
    """(scheme, host[:port], path) of a ``server`` or ``[host."..."]`` URL; no scheme means
    https, as containerd reads it; the URL must pass Go's ``url.Parse``, as containerd
    parses it (``parseHostConfig``: a space or a control character in the host, a bad
    port or escape make containerd refuse the file)."""
    from credprov._go.url import GoURLError
    from credprov._go.url import parse as go_parse

    url = raw if "://" in raw else "https://" + raw
    scheme = url.partition("://")[0]
    if scheme not in ("http", "https"):
        raise MirrorConfigError(f"{where}: {raw!r}: unsupported scheme {scheme!r}")
    try:
        parsed = go_parse(url)
    except GoURLError as exc:
        raise MirrorConfigError(f"{where}: containerd cannot parse it: {exc}") from None
    if not parsed.host:
        raise MirrorConfigError(f"{where}: {raw!r}: no host")
    return scheme, parsed.host, parsed.path.rstrip("/")


def _capabilities(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return _CAPABILITIES
    items = _want(value, list, where, "capabilities")
    for item in items:
        if item not in _CAPABILITIES:
            raise MirrorConfigError(f"{where}: capabilities: unknown capability {item!r}")
    return tuple(c for c in _CAPABILITIES if c in items)


@dataclass
class _Namespace:
    """One host namespace: its directory, its hosts (mirrors first, then the server)."""

    directory: str
    hosts: list[tuple[RegistryHost, str]]  # host, its API root URL
    source: str


class ContainerdHosts:
    """containerd's registry hosts directory (``config_path``) on a node.

    ``config_path`` may list several directories separated by ``:``; the first holding a
    directory for the namespace wins.
    """

    runtime = CONTAINERD

    def __init__(self, root: NodeRoot, config_path: str) -> None:
        self.root = root
        self.roots = [p for p in config_path.split(":") if p]
        self.config_path = config_path

    def namespaces(self) -> list[str]:
        """Namespace directory names holding a ``hosts.toml`` (for the doctor), at most
        :data:`MAX_ENTRIES`."""
        out: list[str] = []
        for base in self.roots:
            for name in self.root.listdir(base)[:MAX_ENTRIES]:
                if self.root.exists(f"{base}/{name}/hosts.toml") and name not in out:
                    out.append(name)
        return out

    def _directory(self, registry: str) -> str | None:
        """The namespace directory for ``registry``, in the documented order."""
        names = [registry]
        host, colon, port = registry.rpartition(":")
        if colon and port.isdigit() and "]" not in port:
            names = [f"{host}_{port}_", registry]
        for base in self.roots:
            for name in [*names, _DEFAULT_NAMESPACE]:
                if _is_dir(self.root, f"{base}/{name}"):
                    return f"{base}/{name}"
        return None

    def _load(self, registry: str) -> _Namespace:
        directory = self._directory(registry)
        default = _default_server(registry)
        if directory is None:
            return _Namespace("", [default], "")
        path = f"{directory}/hosts.toml"
        try:
            doc = _read_toml(self.root, path)
        except FileNotFoundError:
            return _Namespace(directory, [default], "")
        where = self.root.display(path)
        return _Namespace(directory, _parse_hosts_toml(doc, registry, where), where)

    def route(self, image: str) -> PullRoute:
        """The hosts containerd contacts to pull ``image``, in order.

        Raises:
            MirrorConfigError: an invalid image or ``hosts.toml``.
        """
        registry, repo, tag, digest = _image_parts(image)
        namespace = self._load(registry)
        path = repo.split("/", 1)[1]
        obj = f"manifests/{digest}" if digest else f"manifests/{tag or 'latest'}"
        need = ("pull",) if digest else ("resolve", "pull")
        contacts: list[Contact] = []
        skipped: list[tuple[RegistryHost, str]] = []
        for host, api in namespace.hosts:
            if "pull" not in host.capabilities:
                skipped.append((host, "no pull capability: never used to pull"))
                continue
            purposes = tuple(p for p in need if p in host.capabilities)
            what = obj if digest or "resolve" in purposes else "blobs/<digest>"
            request = f"{api}/{path}/{what}"
            if host.mirror:
                request += f"?ns={registry}"
            contacts.append(Contact(host, purposes, request))
        notes = []
        if namespace.directory.endswith("/" + _DEFAULT_NAMESPACE):
            notes.append(f"no namespace directory for {registry}: _default applies")
        return PullRoute(
            image, CONTAINERD, registry, repo, tuple(contacts), namespace.source,
            tuple(skipped), tuple(notes),
        )  # fmt: skip

    def mirrored_registries(self) -> list[tuple[str, list[RegistryHost]]]:
        """Each namespace with a ``hosts.toml`` and the mirrors it names (for the doctor).

        Raises:
            MirrorConfigError: an invalid ``hosts.toml``.
        """
        out = []
        for name in self.namespaces():
            registry = "" if name == _DEFAULT_NAMESPACE else _namespace_registry(name)
            hosts = [h for h, _ in self._load(registry or name).hosts if h.mirror]
            out.append((registry or _DEFAULT_NAMESPACE, hosts))
        return out


def _namespace_registry(name: str) -> str:
    """``host_port_`` back to ``host:port``."""
    if name.endswith("_") and "_" in name[:-1]:
        host, _, port = name[:-1].rpartition("_")
        if port.isdigit():
            return f"{host}:{port}"
    return name


def _default_server(registry: str) -> tuple[RegistryHost, str]:
    """The namespace's own registry: ``registry-1.docker.io`` for docker.io; plain HTTP for
    localhost (what containerd 1.6 does with no hosts.toml, measured in
    real-components.md)."""
    host = "registry-1.docker.io" if registry == "docker.io" else registry
    scheme = "http" if registry.rsplit(":", 1)[0] in _LOCALHOSTS else "https"
    return RegistryHost(f"{scheme}://{host}", host), f"{scheme}://{host}/v2"


def _parse_hosts_toml(
    doc: Mapping[str, Any], registry: str, where: str
) -> list[tuple[RegistryHost, str]]:
    """The hosts of one ``hosts.toml``: ``[host."..."]`` in file order, then ``server``."""
    out: list[tuple[RegistryHost, str]] = []
    tables = doc.get("host", {})
    _want(tables, dict, where, "host")
    for i, (raw, table) in enumerate(tables.items()):
        if i >= MAX_ENTRIES:
            break
        entry = _want(table, dict, where, f"host.{raw!r}")
        out.append(_host_entry(raw, entry, registry, f"{where}: host.{raw!r}"))
    server = doc.get("server")
    if server is None:
        server = _default_server(registry)[0].url
    out.append(_host_entry(_want(server, str, where, "server"), doc, registry, f"{where}: server"))
    return out


def _host_entry(
    raw: str, table: Mapping[str, Any], registry: str, where: str
) -> tuple[RegistryHost, str]:
    """One host and its API root: ``/v2`` appended unless ``override_path``."""
    scheme, host, path = _url_parts(raw, where)
    override = bool(_want(table.get("override_path", False), bool, where, "override_path"))
    skip = bool(_want(table.get("skip_verify", False), bool, where, "skip_verify"))
    caps = _capabilities(table.get("capabilities"), where)
    own = {registry, "registry-1.docker.io" if registry == "docker.io" else registry}
    mirror = bool(registry) and host not in own
    api = path if override or path.endswith("/v2") else path + "/v2"
    return RegistryHost(
        f"{scheme}://{host}{path}", host, caps, mirror, skip
    ), f"{scheme}://{host}{api}"


# -- CRI-O: registries.conf and registries.conf.d -----------------------------------------------


@dataclass
class _Registry:
    prefix: str
    location: str
    insecure: bool
    blocked: bool
    mirror_by_digest_only: bool
    mirrors: list[RegistryHost]
    source: str


@dataclass
class RegistriesConf:
    """containers-registries.conf(5) as CRI-O reads it: the main file, then its drop-ins."""

    registries: dict[str, _Registry] = field(default_factory=dict)
    unqualified_search: list[str] = field(default_factory=list)
    short_name_mode: str = ""
    aliases: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    runtime: str = CRIO

    @classmethod
    def load(
        cls, root: NodeRoot, path: str = REGISTRIES_CONF, dropins: str | None = None
    ) -> RegistriesConf:
        """Read ``path`` (which must exist) and ``dropins`` (default ``<path>.d``) in
        alpha-numerical order; only ``*.conf`` regular names count.

        Raises:
            MirrorConfigError: a file that cannot be read or is invalid.
        """
        conf = cls()
        try:
            conf._merge(root, path)
        except FileNotFoundError:
            raise MirrorConfigError(f"{root.display(path)}: no such file") from None
        directory = dropins if dropins is not None else path + ".d"
        names = [n for n, is_dir in _entries(root, directory) if n.endswith(".conf") and not is_dir]
        for name in sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape"))[:MAX_ENTRIES]:
            try:
                conf._merge(root, f"{directory}/{name}")
            except FileNotFoundError:
                continue
        return conf

    def _merge(self, root: NodeRoot, path: str) -> None:
        doc = _read_toml(root, path)
        where = root.display(path)
        self.sources.append(where)
        if "unqualified-search-registries" in doc:
            items = _want(
                doc["unqualified-search-registries"], list, where, "unqualified-search-registries"
            )
            self.unqualified_search = [
                str(_want(i, str, where, "unqualified-search-registries")) for i in items
            ]
        if "short-name-mode" in doc:
            mode = _want(doc["short-name-mode"], str, where, "short-name-mode")
            if mode not in ("", "enforcing", "permissive", "disabled"):
                raise MirrorConfigError(f"{where}: short-name-mode: unknown mode {mode!r}")
            self.short_name_mode = mode
        for name, value in _want(doc.get("aliases", {}), dict, where, "aliases").items():
            self.aliases[name] = str(_want(value, str, where, f"aliases.{name!r}"))
        for i, table in enumerate(
            _want(doc.get("registry", []), list, where, "registry")[:MAX_ENTRIES]
        ):
            entry = _registry_entry(
                _want(table, dict, where, f"registry[{i}]"), f"{where}: registry[{i}]"
            )
            self.registries[entry.prefix] = entry

    def _match(self, ref: str) -> _Registry | None:
        best: _Registry | None = None
        for prefix, entry in self.registries.items():
            if _prefix_matches(ref, prefix) and (best is None or len(prefix) > len(best.prefix)):
                best = entry
        return best

    def route(self, image: str) -> PullRoute:
        """The sources CRI-O tries for ``image``, in order (short names: see the notes).

        Raises:
            MirrorConfigError: an invalid image.
        """
        registry, repo, tag, digest = _image_parts(image)
        notes: list[str] = []
        refs = [_qualified(repo, tag, digest)]
        if _is_short_name(image):
            refs, note = self._short_name(image, repo, tag, digest)
            notes.append(note)
        contacts: list[Contact] = []
        skipped: list[tuple[RegistryHost, str]] = []
        sources: list[str] = []
        for ref in refs:
            entry = self._match(ref)
            found, lost = _crio_contacts(ref, entry, bool(digest), registry)
            contacts.extend(found)
            skipped.extend(lost)
            if entry is not None:
                sources.append(entry.source)
                if entry.blocked:
                    notes.append(f"{ref}: blocked by prefix {entry.prefix!r}")
        source = ", ".join(dict.fromkeys(sources))
        return PullRoute(
            image, CRIO, registry, repo, tuple(contacts), source, tuple(skipped), tuple(notes)
        )

    def _short_name(self, image: str, repo: str, tag: str, digest: str) -> tuple[list[str], str]:
        short = _short_name(image)
        alias = self.aliases.get(short)
        if alias:
            return [_qualified(alias, tag, digest)], f"short name {short!r}: alias {alias!r}"
        if not self.unqualified_search:
            return [_qualified(repo, tag, digest)], (
                f"short name {short!r}: no unqualified-search-registries; docker.io assumed"
            )
        refs = [_qualified(_search_repo(r, short), tag, digest) for r in self.unqualified_search]
        if (self.short_name_mode or "permissive") == "enforcing" and len(refs) > 1:
            return [], (
                f"short name {short!r}: short-name-mode enforcing with {len(refs)} "
                "unqualified-search-registries and no terminal: the pull is refused"
            )
        return refs, (
            f"short name {short!r}: tried at each of unqualified-search-registries "
            f"({', '.join(self.unqualified_search)}); the kubelet looks credentials up for {repo}"
        )

    def mirrored_registries(self) -> list[tuple[str, list[RegistryHost]]]:
        """Each ``[[registry]]`` prefix with mirrors, and the mirrors (for the doctor)."""
        return [(p, list(e.mirrors)) for p, e in self.registries.items() if e.mirrors]


def _entries(root: NodeRoot, path: str) -> list[tuple[str, bool]]:
    try:
        return root.entries(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return []
        raise MirrorConfigError(f"{root.display(path)}: {_reason(exc)}") from None


def _location(value: str, where: str, what: str) -> str:
    """A CRI-O ``location`` (containers/image's ``parseLocation``: no URL scheme, trailing
    ``/`` dropped) whose host is a registry host by the reference grammar (one that is not
    can never be pulled from: containers/image builds a reference of it)."""
    from credprov.base.hostname import is_domain_and_port

    location = value.rstrip("/")
    if location.startswith(("http://", "https://")):
        raise MirrorConfigError(f"{where}: {what} {value!r}: URI schemes are not supported")
    host = location.split("/", 1)[0]
    if location and not (host.startswith("*.") or is_domain_and_port(host)):
        raise MirrorConfigError(f"{where}: {what} {value!r}: {host!r} is not a registry host")
    return location


def _registry_entry(table: Mapping[str, Any], where: str) -> _Registry:
    location = _location(
        str(_want(table.get("location", ""), str, where, "location")), where, "location"
    )
    prefix = str(_want(table.get("prefix", ""), str, where, "prefix")) or location
    if not prefix:
        raise MirrorConfigError(f"{where}: neither prefix nor location is set")
    if prefix.startswith("*.") and ("/" in prefix or ":" in prefix):
        raise MirrorConfigError(f"{where}: prefix {prefix!r}: a wildcard prefix is only *.host")
    by_digest = bool(
        _want(table.get("mirror-by-digest-only", False), bool, where, "mirror-by-digest-only")
    )
    insecure = bool(_want(table.get("insecure", False), bool, where, "insecure"))
    mirrors = []
    for i, raw in enumerate(_want(table.get("mirror", []), list, where, "mirror")[:MAX_ENTRIES]):
        m = _want(raw, dict, where, f"mirror[{i}]")
        mloc = _location(
            str(_want(m.get("location", ""), str, where, f"mirror[{i}].location")),
            where,
            f"mirror[{i}].location",
        )
        if not mloc:
            raise MirrorConfigError(f"{where}: mirror[{i}]: location is required")
        mode = str(
            _want(m.get("pull-from-mirror", ""), str, where, f"mirror[{i}].pull-from-mirror")
        )
        if mode not in _PULL_FROM_MIRROR:
            raise MirrorConfigError(
                f"{where}: mirror[{i}]: pull-from-mirror: unknown value {mode!r}"
            )
        if mode and by_digest:
            raise MirrorConfigError(
                f"{where}: mirror[{i}]: pull-from-mirror is allowed only when "
                "mirror-by-digest-only is not set"
            )
        minsecure = bool(_want(m.get("insecure", False), bool, where, f"mirror[{i}].insecure"))
        host = mloc.split("/", 1)[0]
        mirrors.append(RegistryHost(mloc, host, ("pull", "resolve"), True, minsecure, mode))
    blocked = bool(_want(table.get("blocked", False), bool, where, "blocked"))
    return _Registry(prefix, location, insecure, blocked, by_digest, mirrors, where)


def _prefix_matches(ref: str, prefix: str) -> bool:
    if prefix.startswith("*."):
        host = ref.split("/", 1)[0].rsplit(":", 1)[0]
        return host.endswith(prefix[1:])
    if not ref.startswith(prefix):
        return False
    return len(ref) == len(prefix) or ref[len(prefix)] in "/:@"


def _rewrite(ref: str, prefix: str, location: str) -> str:
    if not location:
        return ref
    if prefix.startswith("*."):
        return location + "/" + ref.split("/", 1)[1]
    return location + ref[len(prefix) :]


def _crio_contacts(
    ref: str, entry: _Registry | None, by_digest: bool, registry: str
) -> tuple[list[Contact], list[tuple[RegistryHost, str]]]:
    """The sources of one fully qualified reference: usable mirrors, then the primary."""
    purposes = ("pull",) if by_digest else ("resolve", "pull")
    if entry is None:
        return [Contact(_primary(ref, ref.split("/", 1)[0], registry, False), purposes, ref)], []
    if entry.blocked:
        return [], []
    contacts, skipped = [], []
    for mirror in entry.mirrors:
        why = _mirror_unused(entry, mirror, by_digest)
        if why:
            skipped.append((mirror, why))
            continue
        contacts.append(Contact(mirror, purposes, _rewrite(ref, entry.prefix, mirror.url)))
    primary = _rewrite(ref, entry.prefix, entry.location)
    location = entry.location or primary.split("/", 1)[0]
    contacts.append(
        Contact(_primary(primary, location, registry, entry.insecure), purposes, primary)
    )
    return contacts, skipped


def _primary(ref: str, location: str, registry: str, insecure: bool) -> RegistryHost:
    """The primary source: the image's own registry, or another host (``location``, a
    search registry) that is the kubelet's registry in name only."""
    host = ref.split("/", 1)[0]
    other = host != registry
    return RegistryHost(location, host, mirror=other, insecure=insecure, relocated=other)


def _mirror_unused(entry: _Registry, mirror: RegistryHost, by_digest: bool) -> str:
    if not by_digest and entry.mirror_by_digest_only:
        return "mirror-by-digest-only: not used for a pull by tag"
    if not by_digest and mirror.pull_from_mirror == "digest-only":
        return "pull-from-mirror digest-only: not used for a pull by tag"
    if by_digest and mirror.pull_from_mirror == "tag-only":
        return "pull-from-mirror tag-only: not used for a pull by digest"
    return ""


def _qualified(repo: str, tag: str, digest: str) -> str:
    if digest:
        return f"{repo}@{digest}"
    return f"{repo}:{tag or 'latest'}"


def _short_name(image: str) -> str:
    """The name without its tag or digest (``nginx:1`` -> ``nginx``)."""
    name = image.split("@", 1)[0]
    head, slash, last = name.rpartition("/")
    return head + slash + last.split(":", 1)[0]


def _search_repo(registry: str, short: str) -> str:
    """``registry/short``, with docker.io's ``library/`` for a one-component name."""
    if registry == "docker.io" and "/" not in short:
        return f"docker.io/library/{short}"
    return f"{registry}/{short}"


def _is_short_name(image: str) -> bool:
    """Whether the image names no registry (``nginx``, ``library/nginx``)."""
    first, slash, _ = image.partition("/")
    if not slash:
        return True
    return not ("." in first or ":" in first or first == "localhost" or first.lower() != first)


# -- both runtimes ------------------------------------------------------------------------------


RuntimeMirrors = ContainerdHosts | RegistriesConf


def load_runtime_mirrors(
    root: NodeRoot,
    *,
    containerd_config_path: str | None = None,
    registries_conf: str | None = None,
) -> list[RuntimeMirrors]:
    """The runtimes' mirror configurations named (paths inside ``root``).

    Raises:
        MirrorConfigError: a named directory that is not one, or a file that cannot be used.
    """
    out: list[RuntimeMirrors] = []
    if containerd_config_path is not None:
        for base in [p for p in containerd_config_path.split(":") if p]:
            if not _is_dir(root, base):
                raise MirrorConfigError(f"{root.display(base)}: not a directory")
        out.append(ContainerdHosts(root, containerd_config_path))
    if registries_conf is not None:
        out.append(RegistriesConf.load(root, registries_conf))
    return out


# -- credentials --------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostVerdict:
    """What reaches one contacted host: the kubelet's credentials for the image as written
    (``handed``: the sources that have some) and the host's own (``own``), which the kubelet
    never looks up for this image."""

    contact: Contact
    handed: tuple[str, ...]
    own: tuple[str, ...]
    ok: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "host": self.contact.host.host,
            "mirror": self.contact.host.mirror,
            "handed": list(self.handed),
            "own": list(self.own),
            "ok": self.ok,
            "message": self.message,
        }


def judge_credentials(
    route: PullRoute, sources: Callable[[str], Iterable[str]]
) -> list[HostVerdict]:
    """For each contact of ``route``: which credentials reach it and whether they can work.

    ``sources(repository)`` names the sources with credentials for a repository (a
    provider whose ``matchImages`` match it, the node's docker config, a pull secret).
    The kubelet asks for ``route.repository`` only and the runtime offers that answer to
    every host; a mirror's own credentials are never used for this image.
    """
    handed = tuple(sources(route.repository))
    out = []
    for contact in route.contacts:
        if not contact.host.mirror:
            message = (
                f"gets the kubelet's credentials for {route.registry} ({', '.join(handed)})"
                if handed
                else f"gets no credentials: nothing matches {route.repository}; anonymous pull"
            )
            out.append(HostVerdict(contact, handed, handed, True, message))
            continue
        path = route.repository.split("/", 1)[1]
        own = tuple(sources(f"{contact.host.host}/{path}"))
        out.append(_mirror_verdict(route, contact, handed, own))
    return out


def _mirror_verdict(
    route: PullRoute, contact: Contact, handed: tuple[str, ...], own: tuple[str, ...]
) -> HostVerdict:
    host = contact.host.host
    shared = set(handed) & set(own)
    if handed and shared:
        message = f"gets the credentials for {route.registry} from {', '.join(sorted(shared))}, which also cover {host}"
        return HostVerdict(contact, handed, own, True, message)
    if handed and not own:
        message = (
            f"gets the credentials for {route.registry} ({', '.join(handed)}); no source has "
            f"credentials for {host}: if the {contact.host.role} needs its own, the pull there is refused and the runtime tries the next host"
        )
        return HostVerdict(contact, handed, own, False, message)
    if handed:
        message = (
            f"gets the credentials for {route.registry} ({', '.join(handed)}), not its own "
            f"({', '.join(own)}): the kubelet looks up the image as written"
        )
        return HostVerdict(contact, handed, own, False, message)
    if own:
        message = (
            f"gets none: its credentials ({', '.join(own)}) are never looked up for an image "
            f"written as {route.registry}/...; the pull there is anonymous"
        )
        return HostVerdict(contact, handed, own, False, message)
    return HostVerdict(
        contact,
        handed,
        own,
        True,
        "gets none (no source has credentials for it or the registry): anonymous",
    )


def credential_sources(
    providers: Iterable[Any] = (), keyring: Any = None, keyring_name: str = "node docker config"
) -> Callable[[str], list[str]]:
    """``sources(repository)`` for :func:`judge_credentials`: each provider whose
    ``matchImages`` match the repository (``provider NAME``), and ``keyring_name`` when
    ``keyring`` (a :class:`~credprov.imageauth.keyring.DockerKeyring`) has an
    entry for it. Plugins are not run: a match says the kubelet would ask them."""
    from credprov.imageauth.matching import urls_match_str

    listed = list(providers)

    def sources(repository: str) -> list[str]:
        out = [
            f"provider {p.name}"
            for p in listed
            if any(urls_match_str(pattern, repository) for pattern in p.match_images)
        ]
        if keyring is not None and keyring.lookup(repository):
            out.append(keyring_name)
        return out

    return sources
