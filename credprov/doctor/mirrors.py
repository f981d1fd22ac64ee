"""``runtime.mirrors``: the node's registry mirrors and whether credentials reach them.

The runtime's mirror configuration is read inside the node's root by
:mod:`credprov.cri.mirrors` (containerd's ``config_path`` from its ``config.toml``, or
``--containerd-config-path``; CRI-O's ``registries.conf`` and drop-ins, or
``--registries-conf``). Each image checked (``--image``, a sample image of every mirrored
registry, and without ``--image`` one of every provider) is resolved to the hosts the runtime contacts, and
:func:`credprov.cri.mirrors.judge_credentials` says what reaches each: the kubelet looks
credentials up for the image as written, and the runtime offers them to every host. A mirror
with no credentials from any source while its upstream has some is the known anonymous-pull
trap, as is a mirror whose own credentials the kubelet never looks up: both WARN.

Sources of credentials known here: the providers' ``matchImages`` (the plugins are not run)
and the node's docker config (the first of the kubelet's paths that exists); pull secrets
are per pod and not seen. A node without any mirror configuration gets no finding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from credprov.base.rootfs import NodeRoot
from credprov.cri.mirrors import (
    CONTAINERD_CONFIG,
    REGISTRIES_CONF,
    ContainerdHosts,
    MirrorConfigError,
    PullRoute,
    RegistriesConf,
    RuntimeMirrors,
    containerd_config_path,
    credential_sources,
    judge_credentials,
)
from credprov.doctor.context import Context
from credprov.doctor.discovery import DEFAULT_ROOT_DIR, ROOT_DIR
from credprov.doctor.report import Finding, Status
from credprov.imageauth.keyring import DockerKeyring, KeyringError, parse_docker_config

__all__ = ["CHECK_ID", "check_runtime_mirrors", "node_docker_keyring"]

CHECK_ID = "runtime.mirrors"
#: Where k3s and RKE2 keep containerd's config.
_RANCHER_CONTAINERD = "/var/lib/rancher/{flavor}/agent/etc/containerd/config.toml"
#: The kubelet's docker config paths, in its order (``$HOME`` is root's on a node).
_DOCKER_CONFIGS = ("{root_dir}/config.json", "/root/.docker/config.json", "/.docker/config.json")
_DOCKERCFGS = ("{root_dir}/.dockercfg", "/root/.dockercfg", "/.dockercfg")
_HINT = (
    "give the mirror credentials the kubelet hands for the image as written (a provider or "
    "docker config entry for the upstream that the mirror accepts), write images with the "
    "mirror's name, or let the mirror serve anonymously; see docs/mirrors.md"
)


def check_runtime_mirrors(ctx: Context) -> list[Finding]:
    """``runtime.mirrors``: per image, the hosts the runtime contacts and the credentials
    that reach each.

    Returns:
        Nothing when the node configures no mirror; FAIL for a mirror configuration the
        runtime cannot use; per image, WARN when a mirror gets no usable credentials while
        the upstream has some (or its own are never handed), PASS otherwise.
    """
    findings: list[Finding] = []
    runtimes: list[RuntimeMirrors] = []
    for load in (_containerd, _crio):
        try:
            runtime = load(ctx)
        except MirrorConfigError as exc:
            findings.append(Finding(CHECK_ID, Status.FAIL, "", str(exc), _FIX_FILE))
            continue
        if runtime is not None:
            runtimes.append(runtime)
    providers = ctx.config.providers if ctx.config is not None else []
    sources = credential_sources(providers, node_docker_keyring(ctx))
    for runtime in runtimes:
        try:
            routes = _routes(ctx, runtime)
        except MirrorConfigError as exc:
            findings.append(Finding(CHECK_ID, Status.FAIL, runtime.runtime, str(exc), _FIX_FILE))
            continue
        findings.extend(_judge(route, sources) for route in routes)
    return findings


_FIX_FILE = "the runtime fails every pull this file governs; fix it (TOML, documented fields)"


def _containerd(ctx: Context) -> ContainerdHosts | None:
    path = ctx.options.containerd_config_path
    if path is None:
        configs = [CONTAINERD_CONFIG]
        if ctx.setup.flavor in ("k3s", "rke2"):
            configs.insert(0, _RANCHER_CONTAINERD.format(flavor=ctx.setup.flavor))
        for config in configs:
            path = containerd_config_path(ctx.root, config)
            if path is not None:
                break
    return None if path is None else ContainerdHosts(ctx.root, path)


def _crio(ctx: Context) -> RegistriesConf | None:
    path = ctx.options.registries_conf
    if path is None:
        if not ctx.root.exists(REGISTRIES_CONF):
            return None
        path = REGISTRIES_CONF
    return RegistriesConf.load(ctx.root, path)


def _routes(ctx: Context, runtime: RuntimeMirrors) -> list[PullRoute]:
    """The routes with a mirror among the images checked (see the module docstring)."""
    from credprov.doctor.checks import sample_image

    mirrored = runtime.mirrored_registries()
    if not any(hosts for _, hosts in mirrored):
        return []
    images = list(ctx.options.images)
    images += [_sample(prefix) for prefix, hosts in mirrored if hosts and prefix]
    if not ctx.options.images:
        for provider in ctx.config.providers if ctx.config is not None else []:
            image = sample_image(provider, [])
            if image is not None:
                images.append(image)
    routes: dict[tuple[str, ...], PullRoute] = {}
    for image in dict.fromkeys(i for i in images if i):
        route = runtime.route(image)
        if route.mirrors:
            routes.setdefault((route.registry, *(c.host.host for c in route.contacts)), route)
    return list(routes.values())


def _sample(prefix: str) -> str:
    """An image under a mirrored namespace or ``[[registry]]`` prefix ("" for ``_default``)."""
    if prefix == "_default":
        return ""
    if prefix.startswith("*."):
        prefix = "sample" + prefix[1:]
    name = prefix.split("@", 1)[0]
    head, slash, last = name.rpartition("/")
    if slash:  # a tag after the last "/" (a host's port has no "/" after it)
        name = head + slash + last.split(":", 1)[0]
    return name + "/credprov-doctor/sample"


def _judge(route: PullRoute, sources: Callable[[str], Iterable[str]]) -> Finding:
    verdicts = judge_credentials(route, sources)
    bad = [v for v in verdicts if not v.ok]
    where = f" ({route.source})" if route.source else ""
    head = f"{route.runtime}{where} contacts {route.describe()}"
    if bad:
        problems = "; ".join(f"{v.contact.host.host} {v.message}" for v in bad)
        return Finding(CHECK_ID, Status.WARN, route.image, f"{head}: {problems}", _HINT)
    said = "; ".join(
        f"{v.contact.host.host} {v.message}" for v in verdicts if v.contact.host.mirror
    )
    return Finding(CHECK_ID, Status.PASS, route.image, f"{head}: {said}")


def node_docker_keyring(ctx: Context) -> DockerKeyring | None:
    """The node's docker config as the kubelet finds it (``config.json`` in its root
    directory, ``/root/.docker``, ``/.docker``, then the legacy ``.dockercfg`` files), read
    inside the root; None when there is none or it cannot be parsed."""
    root_dir = str(ctx.setup.get(ROOT_DIR) or DEFAULT_ROOT_DIR)
    for pattern in (*_DOCKER_CONFIGS, *_DOCKERCFGS):
        keyring = _keyring(ctx.root, pattern.format(root_dir=root_dir))
        if keyring is not None:
            return keyring
    return None


def _keyring(root: NodeRoot, path: str) -> DockerKeyring | None:
    try:
        data = root.read(path, 1 << 20)
    except OSError:
        return None
    keyring = DockerKeyring()
    try:
        keyring.add(parse_docker_config(data))
    except (KeyringError, ValueError):
        return None
    return keyring
