"""Which ACR login server an image belongs to, and the ``--registry-mirror`` mapping.

Pure functions, no I/O. They mirror upstream ``acr-credential-provider``
(``pkg/credentialprovider/azure_credentials.go``) where upstream is sound, and tighten it where
upstream accepts hosts that are not ACR hosts:

* **login server** (:func:`parse_login_server`): first upstream's ``acrRE``
  (``^[a-zA-Z0-9]+\\.(azurecr\\.io|azurecr\\.cn|azurecr\\.de|azurecr\\.us)``, anchored at the
  start) with the remainder rule (what follows the match must be empty or start with ``/``);
  then the cloud's ACR DNS suffix. Upstream's suffix fallback is a plain substring search
  (``foo.azurecr.io.example/x`` → ``foo.azurecr.io``, ``docker/foo.azurecr.io/x`` →
  ``docker/foo.azurecr.io``); here the suffix must end the image's *host*, on a label
  boundary, and the whole host is the login server. Hosts compare case-insensitively.
* **mirrors** (:func:`parse_registry_mirror`, :func:`apply_mirror`): upstream's syntax
  (``src:dst,src2:dst2``; spaces removed; an entry that does not split into two parts is
  dropped; a later duplicate source wins), plus ``:port`` on either side. Upstream iterates a
  Go map (random order) and takes the first source that is a plain string prefix of the image
  (``mcr.microsoft.com`` also "matches" ``mcr.microsoft.com.evil.io/x``). Here a source
  matches only on a host/path boundary, and the longest (most specific) source wins.
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: Upstream's ``acrRE``, verbatim semantics (case-sensitive suffix, one alphanumeric label).
ACR_RE = re.compile(r"^[a-zA-Z0-9]+\.(azurecr\.io|azurecr\.cn|azurecr\.de|azurecr\.us)")

#: The ACR wildcard keys of upstream's service-principal answer, in upstream order.
CONTAINER_REGISTRY_URLS = ("*.azurecr.io", "*.azurecr.cn", "*.azurecr.de", "*.azurecr.us")

#: The key of the anonymous (empty username and password) entry every ACR answer carries.
ANONYMOUS_KEY = "*.azurecr.*"

_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$")


class Mirror(NamedTuple):
    """One ``--registry-mirror`` entry: images under ``source`` are served by ``target``."""

    source: str  # host[:port][/path], as written (the auth key for the source registry)
    target: str  # host[:port][/path] that replaces ``source`` in the image

    @property
    def has_path(self) -> bool:
        """Whether the source names a repository prefix rather than a whole registry."""
        return "/" in self.source


class LoginServer(NamedTuple):
    """The outcome of :func:`parse_login_server` for an ACR image."""

    server: str  # the login server the credentials are for (an auth key)
    mirror: Mirror | None = None  # the mirror the image went through, if any


def parse_registry_mirror(spec: str) -> tuple[list[Mirror], list[str]]:
    """Parse ``--registry-mirror``: (mirrors in spec order, invalid entries).

    ``spec`` is ``SOURCE:TARGET[,SOURCE:TARGET...]``; either side may carry a ``:port``
    (``registry.local:5000:foo.azurecr.io``). Spaces are removed first, as upstream does. A
    later entry for the same source replaces the earlier one.
    """
    mirrors: dict[str, Mirror] = {}
    invalid: list[str] = []
    spec = "".join(spec.split())
    if not spec:
        return [], []
    for entry in spec.split(","):
        pair = _split_mirror_entry(entry)
        if pair is None:
            invalid.append(entry)
            continue
        source, target = pair
        mirrors.pop(source, None)  # a later duplicate wins, and takes the later position
        mirrors[source] = Mirror(source, target)
    return list(mirrors.values()), invalid


def _split_mirror_entry(entry: str) -> tuple[str, str] | None:
    parts = entry.split(":")
    if len(parts) == 2:
        source, target = parts
    elif len(parts) == 3 and _is_port(parts[1]) and not _is_port(parts[2]):
        source, target = f"{parts[0]}:{parts[1]}", parts[2]
    elif len(parts) == 3 and _is_port(parts[2]):
        source, target = parts[0], f"{parts[1]}:{parts[2]}"
    elif len(parts) == 4 and _is_port(parts[1]) and _is_port(parts[3]):
        source, target = f"{parts[0]}:{parts[1]}", f"{parts[2]}:{parts[3]}"
    else:
        return None
    source, target = source.rstrip("/"), target.rstrip("/")
    if not _split_host(source)[0] or not _split_host(target)[0]:
        return None
    return source, target


def _is_port(part: str) -> bool:
    """Whether ``part`` (what follows a ``:``) starts with a port: ``5000`` or ``5000/path``."""
    port = part.split("/", 1)[0]
    return port.isdigit() and len(port) <= 5


def _split_host(ref: str) -> tuple[str, str]:
    host, slash, path = ref.partition("/")
    return host, slash + path


def apply_mirror(image: str, mirrors: list[Mirror]) -> tuple[str, Mirror | None]:
    """The image as the mirror target serves it, and the mirror used (or ``(image, None)``).

    A source matches an image whose host equals the source's host (case-insensitively) and
    whose path equals, or continues with ``/`` after, the source's path. The longest source
    wins, so the order of ``--registry-mirror`` entries never matters.
    """
    host, path = _split_host(image)
    best: Mirror | None = None
    for mirror in mirrors:
        src_host, src_path = _split_host(mirror.source)
        if src_host.lower() != host.lower():
            continue
        if src_path and not (path == src_path or path.startswith(src_path + "/")):
            continue
        if best is None or len(mirror.source) > len(best.source):
            best = mirror
    if best is None:
        return image, None
    src_host, src_path = _split_host(best.source)
    return best.target + path[len(src_path) :], best


def _is_dns_name(host: str) -> bool:
    labels = host.split(".")
    return all(_LABEL.match(label) for label in labels)


def login_server_of(image: str, acr_suffix: str = "") -> str | None:
    """The ACR login server of ``image`` (no mirror applied), or None when it is not ACR.

    Args:
        image: the image as the kubelet sends it (``foo.azurecr.io/team/app``).
        acr_suffix: the cloud's ACR DNS suffix (``azurecr.io``, ``.azurecr.my.cloud``; a
            leading dot is ignored), for hosts the regex does not cover (geo-replicas,
            private links, custom clouds). Empty: regex only.
    """
    match = ACR_RE.match(image)
    if match is not None:
        rest = image[match.end() :]
        if rest == "" or rest.startswith("/"):
            return match.group(0)
    suffix = acr_suffix.strip().lstrip(".").lower()
    if not suffix:
        return None
    host = image.split("/", 1)[0]
    lowered = host.lower()
    if (
        lowered.endswith("." + suffix)
        and len(lowered) > len(suffix) + 1
        and _is_dns_name(host)  # no port, no empty or odd label
    ):
        return host
    return None


def parse_login_server(
    image: str, mirrors: list[Mirror], acr_suffix: str = ""
) -> LoginServer | None:
    """Map ``image`` through ``mirrors``, then find its ACR login server (None: not ACR)."""
    target, mirror = apply_mirror(image, mirrors)
    server = login_server_of(target, acr_suffix)
    if server is None:
        return None
    return LoginServer(server, mirror)


def service_principal_keys(acr_suffix: str) -> list[str]:
    """The keys of upstream's service-principal answer: the four ACR wildcards, plus
    ``"*" + suffix`` for a custom cloud whose suffix contains ``.azurecr.`` (upstream's rule,
    so ``.azurecr.my.cloud`` adds ``*.azurecr.my.cloud`` and ``azurecr.io`` adds nothing)."""
    keys = list(CONTAINER_REGISTRY_URLS)
    if ".azurecr." in acr_suffix:
        custom = "*" + acr_suffix
        if not any(custom.lower() == key.lower() for key in keys):
            keys.append(custom)
    return keys
