"""The kubelet's Docker keyring: which credentials to try for an image, in which order.

Mirrors ``pkg/credentialprovider/keyring.go`` and ``secrets/secrets.go``:

* keys are normalised like ``BasicDockerKeyring.Add`` (``https://`` prefixed, a leading
  ``/v1/`` or ``/v2/`` path reduced to ``/``, a bare ``/`` dropped);
* ``lookup`` walks the keys in reverse bytewise order and returns the credentials of
  *every* matching key (``URLsMatchStr``), falling back to ``index.docker.io`` for Docker Hub
  images;
* pod pull secrets share one keyring, then the node's docker config, then plugins
  (``UnionDockerKeyring``);
* every credential carries its source and the KEP-2535 hash of its docker-config entry.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from credprov._go import json as gojson
from credprov._go.version import GoRelease, current_go
from credprov.base.hashing import sha256
from credprov.errors import CredentialProviderError
from credprov.imageauth.images import is_default_registry_match
from credprov.imageauth.matching import (
    host_match_paths,
    split_plain_target,
    urls_match_str,
)

__all__ = [
    "DOCKERCFG_KEY",
    "DOCKERCFG_TYPE",
    "DOCKER_CONFIG_JSON_KEY",
    "DOCKER_CONFIG_JSON_TYPE",
    "CredentialOrigin",
    "DockerKeyring",
    "Keyring",
    "KeyringError",
    "SecretCoordinates",
    "ServiceAccountCoordinates",
    "TrackedAuthConfig",
    "UnionDockerKeyring",
    "hash_auth_config",
    "make_docker_keyring",
    "make_pull_secret_keyring",
    "normalize_key",
    "parse_docker_config",
    "secret_coordinates",
    "tracked_auth_configs",
    "unusable_pull_secret_reason",
]


DOCKER_CONFIG_JSON_TYPE = "kubernetes.io/dockerconfigjson"
DOCKER_CONFIG_JSON_KEY = ".dockerconfigjson"
DOCKERCFG_TYPE = "kubernetes.io/dockercfg"
DOCKERCFG_KEY = ".dockercfg"

_DOCKER_HUB_KEY = "index.docker.io"


class KeyringError(CredentialProviderError, ValueError):
    """A docker config or pull secret the kubelet could not use; never quotes a secret."""


@dataclass(frozen=True)
class SecretCoordinates:
    """The pull Secret a credential came from."""

    uid: str
    namespace: str
    name: str


@dataclass(frozen=True)
class ServiceAccountCoordinates:
    """The service account a plugin credential was obtained for (KEP-4412)."""

    uid: str
    namespace: str
    name: str


@dataclass(frozen=True)
class CredentialOrigin:
    """Where a credential came from; ``None`` everywhere means node-wide."""

    secret: SecretCoordinates | None = None
    service_account: ServiceAccountCoordinates | None = None


@dataclass(frozen=True)
class TrackedAuthConfig:
    """One credential to try (``credentialprovider.TrackedAuthConfig``)."""

    username: str
    password: str = field(repr=False)
    email: str = ""
    source: CredentialOrigin | None = None
    credential_hash: str = ""
    provider: str | None = None  # which plugin produced it, for display only
    key: str = ""  # the normalised keyring key it is stored under

    @property
    def source_label(self) -> str:
        """``secret:<ns>/<name>``, ``provider:<name>`` or ``node``."""
        if self.source is not None and self.source.secret is not None:
            return f"secret:{self.source.secret.namespace}/{self.source.secret.name}"
        if self.provider is not None:
            return f"provider:{self.provider}"
        return "node"

    def __repr__(self) -> str:
        return (
            f"TrackedAuthConfig(username={self.username!r}, password=<redacted>, "
            f"source={self.source_label!r}, credential_hash={self.credential_hash!r})"
        )


def hash_auth_config(username: str, password: str, email: str = "") -> str:
    """``hex(sha256(json.Marshal(AuthConfig)))`` with Go's omitempty and HTML escaping."""
    from credprov._go.json import go_json

    body = {}
    if username:
        body["username"] = username
    if password:
        body["password"] = password
    if email:
        body["email"] = email
    return sha256(go_json(body).encode("utf-8")).hexdigest()


def docker_config_entry_fields(entry: Any) -> tuple[str, str, str]:
    """(username, password, email) of a docker-config entry, decoding ``auth`` like Go."""
    if hasattr(entry, "username") and hasattr(entry, "password"):
        return entry.username or "", entry.password or "", getattr(entry, "email", "") or ""
    if not isinstance(entry, Mapping):
        raise KeyringError("docker config entry is not an object")
    username = entry.get("username") or ""
    password = entry.get("password") or ""
    email = entry.get("email") or ""
    for name, value in (("username", username), ("password", password), ("email", email)):
        if not isinstance(value, str):
            raise KeyringError(f"docker config entry field {name!r} is not a string")
    auth = entry.get("auth") or ""
    if auth:
        if not isinstance(auth, str):
            raise KeyringError("docker config entry field 'auth' is not a string")
        try:
            decoded = base64.b64decode(auth, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise KeyringError("illegal base64 data in docker config 'auth' field") from None
        user, sep, pw = decoded.partition(":")
        if not sep:
            raise KeyringError(
                "unable to parse auth field, must be formatted as base64(username:password)"
            )
        username, password = user, pw.strip("\x00")
    return username, password, email


def normalize_key(location: str) -> str | None:
    """The index key ``BasicDockerKeyring.Add`` stores ``location`` under, or None to skip,
    as the Go release the process follows parses it (:mod:`credprov._go.version`)."""
    return _normalize_key(location, current_go())


@functools.lru_cache(maxsize=4096)
def _normalize_key(location: str, release: GoRelease) -> str | None:
    from credprov._go.url import GoURLError
    from credprov._go.url import parse as go_url_parse

    value = location
    if not (value.startswith("https://") or value.startswith("http://")):
        value = "https://" + value
    try:
        parsed = go_url_parse(value, go_version=release)
    except GoURLError:
        return None
    path = parsed.path
    if path.startswith("/v2/") or path.startswith("/v1/"):
        path = path[3:]
    if path and path != "/":
        return parsed.host + path
    return parsed.host


def tracked_auth_configs(
    auths: Mapping[str, Any],
    source: CredentialOrigin | None = None,
    provider: str | None = None,
) -> list[TrackedAuthConfig]:
    """The credentials ``BasicDockerKeyring.Add`` would store for ``auths``, in order,
    each with its normalised key and KEP-2535 hash. Unparsable keys are skipped.

    Raises:
        KeyringError: an entry is malformed.
    """
    out = []
    for location, entry in auths.items():
        username, password, email = docker_config_entry_fields(entry)
        key = normalize_key(location)
        if key is None:
            continue
        out.append(
            TrackedAuthConfig(
                username=username,
                password=password,
                email=email,
                source=source,
                credential_hash=hash_auth_config(username, password, email),
                provider=provider,
                key=key,
            )
        )
    return out


class Keyring(Protocol):
    """Anything that answers ``lookup(image)`` with credentials in try order."""

    def lookup(self, image: str) -> list[TrackedAuthConfig]:
        """The credentials for a normalised ``image``, in the order they are tried."""


class DockerKeyring:
    """``BasicDockerKeyring``: docker-config entries indexed by normalised registry key."""

    def __init__(self) -> None:
        self._index: list[str] = []  # deduplicated, reverse bytewise order
        self._creds: dict[str, list[TrackedAuthConfig]] = {}
        # authority -> ((key path, key), ...) of the keys whose host part matches it, in
        # index order (see matching.split_plain_target); rebuilt when keys are added.
        self._by_host: dict[str, tuple[tuple[str, str], ...]] = {}

    def add(
        self,
        auths: Mapping[str, Any],
        source: CredentialOrigin | None = None,
        provider: str | None = None,
    ) -> None:
        """Add the entries of a docker config's ``auths`` (key → ``{username, password,
        email, auth}`` or an object with ``username``/``password``).

        Entries whose key does not parse as a URL are skipped, as the kubelet does.

        Raises:
            KeyringError: an entry is malformed (the kubelet fails the whole config).
        """
        self.add_tracked(tracked_auth_configs(auths, source, provider))

    def add_tracked(self, creds: Iterable[TrackedAuthConfig]) -> None:
        """Add credentials already normalised by :func:`tracked_auth_configs` (under
        ``cred.key``); the fast path for cached plugin answers."""
        new_keys = []
        for cred in creds:
            bucket = self._creds.get(cred.key)
            if bucket is None:
                self._creds[cred.key] = [cred]
                new_keys.append(cred.key)
            else:
                bucket.append(cred)
        if new_keys:
            # Go's sort.Reverse(sort.StringSlice): reverse bytewise order. A new list is
            # assigned, never sorted in place, so concurrent lookups only ever read.
            self._index = sorted(
                [*self._index, *new_keys],
                key=lambda k: k.encode("utf-8", "surrogateescape"),
                reverse=True,
            )
            self._by_host = {}

    def lookup(self, image: str) -> list[TrackedAuthConfig]:
        """Every credential whose key matches ``image``, in the kubelet's order."""
        found: list[TrackedAuthConfig] = []
        # _by_host before _index: add_tracked assigns them in the other order, so a memo
        # read here never holds candidates of an older index.
        by_host = self._by_host
        index = self._index
        split = split_plain_target(image) if index else None
        if split is not None:
            host, path = split
            candidates = by_host.get(host)
            if candidates is None:
                candidates = _host_candidates(index, host)
                if len(by_host) >= _HOST_MEMO_SIZE:
                    by_host = self._by_host = {}
                by_host[host] = candidates
            creds = self._creds
            for prefix, key in candidates:
                if path.startswith(prefix):
                    found.extend(creds[key])
        else:
            for key in index:
                if urls_match_str(key, image):
                    found.extend(self._creds[key])
        if found:
            return found
        if is_default_registry_match(image):
            return list(self._creds.get(_DOCKER_HUB_KEY, ()))
        return []

    def keys(self) -> list[str]:
        """The registry keys indexed, in lookup order (reverse bytewise)."""
        return list(self._index)

    def __len__(self) -> int:
        return len(self._index)


_HOST_MEMO_SIZE = 4096


def _host_candidates(index: list[str], host: str) -> tuple[tuple[str, str], ...]:
    out = []
    for key in index:
        paths = host_match_paths((key,), host)
        if paths:
            out.append((paths[0], key))
    return tuple(out)


class UnionDockerKeyring:
    """Concatenates the lookups of several keyrings, in order."""

    def __init__(self, keyrings: Sequence[Keyring]) -> None:
        self.keyrings = list(keyrings)

    def lookup(self, image: str) -> list[TrackedAuthConfig]:
        """Each keyring's credentials for ``image``, keyring by keyring."""
        out: list[TrackedAuthConfig] = []
        for keyring in self.keyrings:
            out.extend(keyring.lookup(image))
        return out


# -- docker config files and pull secrets -----------------------------------------------------


def parse_docker_config(data: bytes | str) -> dict[str, Any]:
    """The ``auths`` of a ``config.json`` (``{"auths": {...}}``) or a legacy ``.dockercfg``.

    Raises:
        KeyringError: not JSON, or not an object of entries.
    """
    try:
        doc = gojson.loads(data)
    except ValueError:  # UnicodeDecodeError too
        raise KeyringError("docker config is not valid JSON") from None
    if not isinstance(doc, dict):
        raise KeyringError("docker config is not a JSON object")
    auths = doc.get("auths", doc) if "auths" in doc else doc
    if auths is None:
        return {}
    if not isinstance(auths, dict):
        raise KeyringError("docker config 'auths' is not an object")
    for entry in auths.values():
        docker_config_entry_fields(entry)  # validate every entry now, as json.Unmarshal would
    return auths


def secret_data(secret: Mapping[str, Any], key: str) -> bytes | None:
    """The bytes of ``key`` in a Secret's ``data`` (base64-decoded) or ``stringData``
    (``stringData`` wins, as the API server merges it); None when neither holds it.

    Raises:
        KeyringError: ``data``/``stringData`` are not objects, or the value is not base64.
    """
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    if not isinstance(data, Mapping) or not isinstance(string_data, Mapping):
        raise KeyringError("secret data is not an object")
    if key in string_data:  # the API server merges stringData over data
        value = string_data[key]
        return value.encode("utf-8") if isinstance(value, str) else None
    if key in data:
        value = data[key]
        if not isinstance(value, str):
            raise KeyringError(f"secret data {key!r} is not a base64 string")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise KeyringError(f"secret data {key!r} is not valid base64") from None
    return None


def secret_coordinates(secret: Mapping[str, Any]) -> SecretCoordinates:
    """The Secret's uid, namespace and name (empty when absent).

    Raises:
        KeyringError: ``metadata`` is not an object.
    """
    meta = secret.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise KeyringError("secret metadata is not an object")
    return SecretCoordinates(
        uid=str(meta.get("uid") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
    )


def unusable_pull_secret_reason(secret: Mapping[str, Any]) -> str | None:
    """Why the kubelet would silently skip ``secret`` as a pull secret, or None if it is used.

    The kubelet uses only ``kubernetes.io/dockerconfigjson`` (key ``.dockerconfigjson``)
    and ``kubernetes.io/dockercfg`` (key ``.dockercfg``) Secrets and ignores anything else;
    tools that load pull secrets from files use this to say so instead.
    """
    if "kind" not in secret and ("auths" in secret or "credHelpers" in secret):
        return "is a docker config.json, not a Secret (use --node-docker-config for that)"
    kind = secret.get("type")
    key = {DOCKER_CONFIG_JSON_TYPE: DOCKER_CONFIG_JSON_KEY, DOCKERCFG_TYPE: DOCKERCFG_KEY}.get(
        kind if isinstance(kind, str) else ""
    )
    if key is None:
        return (
            f"has type {json.dumps(kind) if kind is not None else '(none)'}: only "
            f"{DOCKER_CONFIG_JSON_TYPE} and {DOCKERCFG_TYPE} Secrets carry pull credentials"
        )
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    if not (isinstance(data, Mapping) and key in data) and not (
        isinstance(string_data, Mapping) and key in string_data
    ):
        return f"has no {key} key in data or stringData"
    return None


def make_pull_secret_keyring(secrets: Iterable[Mapping[str, Any]]) -> DockerKeyring:
    """One keyring holding every usable pull secret (``secrets.MakeDockerKeyring``).

    Secrets of other types, or without their data key, are ignored as the kubelet does.

    Raises:
        KeyringError: a docker-config secret whose payload does not parse.
    """
    keyring = DockerKeyring()
    for secret in secrets:
        coords = secret_coordinates(secret)
        source = CredentialOrigin(secret=coords)
        kind = secret.get("type")
        where = f"secret {coords.namespace}/{coords.name}"
        if kind == DOCKER_CONFIG_JSON_TYPE:
            payload = secret_data(secret, DOCKER_CONFIG_JSON_KEY)
            if payload:
                try:
                    doc = gojson.loads(payload)
                except ValueError:
                    raise KeyringError(
                        f"{where}: {DOCKER_CONFIG_JSON_KEY} is not valid JSON"
                    ) from None
                if not isinstance(doc, dict):
                    raise KeyringError(f"{where}: {DOCKER_CONFIG_JSON_KEY} is not a JSON object")
                auths = doc.get("auths") or {}
                if not isinstance(auths, dict):
                    raise KeyringError(f"{where}: auths is not an object")
                try:
                    keyring.add(auths, source=source)
                except KeyringError as exc:
                    raise KeyringError(f"{where}: {exc}") from None
        elif kind == DOCKERCFG_TYPE:
            payload = secret_data(secret, DOCKERCFG_KEY)
            if payload:
                try:
                    auths = gojson.loads(payload)
                except ValueError:
                    raise KeyringError(f"{where}: {DOCKERCFG_KEY} is not valid JSON") from None
                if not isinstance(auths, dict):
                    raise KeyringError(f"{where}: {DOCKERCFG_KEY} is not a JSON object")
                try:
                    keyring.add(auths, source=source)
                except KeyringError as exc:
                    raise KeyringError(f"{where}: {exc}") from None
    return keyring


def make_docker_keyring(
    pull_secrets: Iterable[Mapping[str, Any]], default_keyring: Keyring
) -> UnionDockerKeyring:
    """Pod pull secrets first, then the node's default keyring (node config, plugins)."""
    return UnionDockerKeyring([make_pull_secret_keyring(pull_secrets), default_keyring])
