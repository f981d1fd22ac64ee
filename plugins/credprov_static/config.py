"""Loading the credentials file of ``static-credential-provider``.

Three formats, told apart by their content (never by the file name):

* a docker ``config.json`` (``{"auths": {...}}``) or a legacy ``.dockercfg``;
* a Kubernetes ``Secret`` of type ``kubernetes.io/dockerconfigjson`` or
  ``kubernetes.io/dockercfg`` (YAML or JSON, payload in ``data`` as base64 or in
  ``stringData``);
* a ``StaticCredentials`` document (``apiVersion: credprov.io/v1alpha1``): patterns →
  username/password, an optional mirror, and the answer's cache settings.

Files that start with ``{`` are read as JSON with the standard library; only other files are
handed to PyYAML, imported on demand so JSON configs never pay for it. Every error is one
line that names the file and the offending field, and never quotes a value that could be a
password.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from credprov.sdk import (
    DOCKER_CONFIG_JSON_KEY,
    DOCKER_CONFIG_JSON_TYPE,
    DOCKERCFG_KEY,
    DOCKERCFG_TYPE,
    KeyringError,
    docker_config_entry_fields,
    normalize_key,
    secret_data,
)
from credprov_static.fields import (
    CACHE_KEY_TYPES,
    DEFAULT_CACHE_DURATION,
    DEFAULT_CACHE_KEY_TYPE,
    MIRROR_ONLY,
    STRATEGIES,
    ConfigError,
)
from credprov_static.fields import check_fields as _check_fields
from credprov_static.fields import quote as _quote

if TYPE_CHECKING:
    from credprov_static.shape import CredentialShape, MirrorShape, StaticCredentialsShape

API_VERSION = "credprov.io/v1alpha1"
KIND = "StaticCredentials"

ENV_VAR = "STATIC_CREDENTIAL_PROVIDER_CONFIG"


_MAX_FILE_BYTES = 4 * 1024 * 1024

_SECRET_FIELDS = frozenset(
    ("apiVersion", "kind", "metadata", "type", "data", "stringData", "immutable")
)


@dataclass(frozen=True)
class Credential:
    """One username/password stored under a kubelet keyring key."""

    key: str  # normalised like BasicDockerKeyring.Add: what the kubelet's keyring stores
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class Mirror:
    """A registry mirror that serves the images of its upstreams."""

    endpoint: str  # as written, for messages
    host: str  # host[:port] of the mirror
    path: str  # "" or "/prefix" (no trailing slash) the mirror serves upstream paths under
    upstreams: tuple[str, ...] | None  # None: every image not on the mirror itself
    strategy: str


@dataclass(frozen=True)
class StaticConfig:
    """A parsed credentials file."""

    path: str
    format: str  # "docker-config", "dockercfg", "secret" or "StaticCredentials"
    # In the kubelet keyring's lookup order: reverse bytewise by key, first spelling wins.
    credentials: tuple[Credential, ...]
    mirror: Mirror | None = None
    cache_duration: str = DEFAULT_CACHE_DURATION  # Go duration string, canonical form
    cache_key_type: str = DEFAULT_CACHE_KEY_TYPE


def config_path(option: str | None) -> str:
    """The file named by ``--config``, else by ``$STATIC_CREDENTIAL_PROVIDER_CONFIG``."""
    path = option or os.environ.get(ENV_VAR) or ""
    if not path:
        raise ConfigError(f"no credentials file: pass --config PATH or set {ENV_VAR}")
    return path


def load(path: str) -> StaticConfig:
    """Read and validate the credentials file at ``path`` (see the module docstring).

    Raises:
        ConfigError: unreadable file, unknown format, or an invalid document.
    """
    data = _read(path, "credentials file")
    text = _decode(path, data)
    doc = _parse(path, text)
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: not a mapping (want a docker config, Secret or {KIND})")
    kind = doc.get("kind")
    if kind == KIND:
        return _static_credentials(path, doc)
    if kind == "Secret":
        return _secret(path, doc)
    if "kind" in doc or "apiVersion" in doc:
        raise ConfigError(
            f"{path}: unsupported kind {_quote(kind)} (want Secret or {KIND}, "
            "or a docker config.json)"
        )
    return _docker_config(path, doc)


# -- reading ----------------------------------------------------------------------------------


def _read(path: str, what: str) -> bytes:
    from credprov.sdk import FileTooLargeError
    from credprov.sdk import read_file as read_bounded

    try:
        return read_bounded(path, _MAX_FILE_BYTES)
    except FileTooLargeError:
        raise ConfigError(f"{what} {path} is larger than {_MAX_FILE_BYTES} bytes") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ConfigError(f"duplicate key {_quote(key)}")
        out[key] = value
    return out


def _parse(path: str, text: str) -> Any:
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text, object_pairs_hook=_no_duplicates)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except (ValueError, RecursionError):
            raise ConfigError(f"{path}: invalid JSON") from None
    return _parse_yaml(path, text)


def _parse_yaml(path: str, text: str) -> Any:
    # Imported here, not at the top: JSON files (docker configs) never need PyYAML.
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last)."""

    def construct_mapping(loader: StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                raise ConfigError("mapping keys must be scalars") from None
            if duplicate:
                line = key_node.start_mark.line + 1
                raise ConfigError(f"duplicate key {_quote(key)} at line {line}")
            seen.add(key)
        return loader.construct_mapping(node, deep=True)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    try:
        # A SafeLoader subclass: no arbitrary Python objects.
        return yaml.load(text, Loader=StrictLoader)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        # Never str(exc): PyYAML quotes the offending line, which may hold a password.
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "syntax error"
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    except (yaml.YAMLError, RecursionError):
        raise ConfigError(f"{path}: invalid YAML") from None


# -- registry patterns ------------------------------------------------------------------------


def _pattern_key(path: str, where: str, pattern: str) -> str:
    """The keyring key of ``pattern``, after checking the kubelet could ever match it."""
    from credprov.sdk import (
        GoURLError,
        MatchPatternError,
        filepath_match,
        parse_schemeless_url,
        split_url,
    )

    if not pattern or pattern != pattern.strip():
        raise ConfigError(f"{path}: {where}: pattern {_quote(pattern)} is empty or padded")
    if "?" in pattern or "#" in pattern:
        # The kubelet parses patterns as URLs: "?" would start a query and be dropped.
        raise ConfigError(f'{path}: {where}: {_quote(pattern)} holds "?" or "#"')
    key = normalize_key(pattern)
    if key is None or not key.split("/", 1)[0]:
        raise ConfigError(f"{path}: {where}: {_quote(pattern)} is not a registry pattern")
    try:
        labels, _ = split_url(parse_schemeless_url(key))
        for label in labels:
            filepath_match(label, "")  # ErrBadPattern does not depend on the name
    except (GoURLError, MatchPatternError):
        # The kubelet would silently never match it; say so now instead.
        raise ConfigError(f"{path}: {where}: {_quote(pattern)} is not a valid glob") from None
    return key


def _ordered(creds: list[Credential]) -> tuple[Credential, ...]:
    """Sorted like the kubelet keyring's index; within a key, the first one added wins
    (a response's ``auth`` map holds one credential per key)."""
    first: dict[str, Credential] = {}
    for cred in creds:
        first.setdefault(cred.key, cred)
    return tuple(
        sorted(
            first.values(),
            key=lambda c: c.key.encode("utf-8", "surrogateescape"),
            reverse=True,
        )
    )


# -- docker config and Secret -----------------------------------------------------------------


def _auths(path: str, where: str, auths: Any) -> list[Credential]:
    if auths is None:
        return []
    if not isinstance(auths, dict):
        raise ConfigError(f"{path}: {where}auths is not an object")
    creds = []
    for location, entry in auths.items():
        try:
            username, password, _ = docker_config_entry_fields(entry)
        except KeyringError as exc:
            raise ConfigError(f"{path}: {where}entry {_quote(location)}: {exc}") from None
        key = normalize_key(location)
        if key is None:  # the kubelet skips keys that are not URLs; so do we
            continue
        creds.append(Credential(key, username, password))
    return creds


def _docker_config(path: str, doc: dict[str, Any], where: str = "") -> StaticConfig:
    if "auths" in doc:
        # config.json: credsStore, credHelpers, HttpHeaders... are ignored, as by the kubelet.
        return StaticConfig(path, "docker-config", _ordered(_auths(path, where, doc["auths"])))
    if any(not isinstance(v, dict) for v in doc.values()):
        raise ConfigError(
            f'{path}: {where}not a docker config: no "auths", and not a legacy .dockercfg'
        )
    return StaticConfig(path, "dockercfg", _ordered(_auths(path, where, doc)))


def _secret(path: str, doc: dict[str, Any]) -> StaticConfig:
    _check_fields(path, "Secret", doc, _SECRET_FIELDS)
    if doc.get("apiVersion") != "v1":
        raise ConfigError(f'{path}: Secret apiVersion must be "v1"')
    kind = doc.get("type")
    if kind == DOCKER_CONFIG_JSON_TYPE:
        key = DOCKER_CONFIG_JSON_KEY
    elif kind == DOCKERCFG_TYPE:
        key = DOCKERCFG_KEY
    else:
        raise ConfigError(
            f"{path}: Secret type {_quote(kind)} is not {DOCKER_CONFIG_JSON_TYPE} "
            f"or {DOCKERCFG_TYPE}"
        )
    try:
        payload = secret_data(doc, key)
    except KeyringError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if payload is None:
        raise ConfigError(f"{path}: Secret has no {key} in data or stringData")
    try:
        inner = json.loads(payload, object_pairs_hook=_no_duplicates)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {key}: {exc}") from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{path}: {key} is not valid JSON") from None
    if not isinstance(inner, dict):
        raise ConfigError(f"{path}: {key} is not a JSON object")
    if key == DOCKER_CONFIG_JSON_KEY:
        # The kubelet reads only "auths" of a .dockerconfigjson.
        creds = _auths(path, f"{key}: ", inner.get("auths") or {})
    else:
        creds = _auths(path, f"{key}: ", inner)
    return StaticConfig(path, "secret", _ordered(creds))


# -- StaticCredentials ------------------------------------------------------------------------


def _password_file(path: str, where: str, name: str) -> str:
    # Relative to the credentials file, so a directory of files can move as a whole.
    full = name if os.path.isabs(name) else os.path.join(os.path.dirname(path) or ".", name)
    try:
        data = _read(full, f"{where}.passwordFile")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    try:
        password = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: {where}.passwordFile {full} is not valid UTF-8") from None
    # Files written by editors or `echo` end with a newline that is not part of the secret.
    if password.endswith("\r\n"):
        password = password[:-2]
    elif password.endswith("\n"):
        password = password[:-1]
    if not password:
        raise ConfigError(f"{path}: {where}.passwordFile {full} is empty")
    return password


def _credentials(path: str, items: list[CredentialShape]) -> list[Credential]:
    creds: list[Credential] = []
    owner: dict[str, str] = {}
    for i, item in enumerate(items):
        where = f"credentials[{i}]"
        if item.password is not None:
            password = item.password
        else:
            assert item.password_file is not None  # the model holds exactly one
            password = _password_file(path, where, item.password_file)
        for j, pattern in enumerate(item.match):
            pwhere = f"{where}.match[{j}]"
            key = _pattern_key(path, pwhere, pattern)
            if key in owner:
                # One response holds one credential per key: refuse rather than pick one.
                raise ConfigError(
                    f"{path}: {pwhere}: {_quote(pattern)} is the same registry key as {owner[key]}"
                )
            owner[key] = pwhere
            creds.append(Credential(key, item.username, password))
    return creds


def _mirror(path: str, value: MirrorShape, creds: tuple[Credential, ...]) -> Mirror:
    from credprov.sdk import urls_match_str

    endpoint = value.endpoint
    key = _pattern_key(path, "mirror.endpoint", endpoint)
    host, _, rest = key.partition("/")
    if any(c in host for c in "*[\\"):
        raise ConfigError(f"{path}: mirror.endpoint {_quote(endpoint)} must be host[:port][/path]")
    upstreams: tuple[str, ...] | None = None
    if value.upstreams is not None:
        upstreams = tuple(
            _pattern_key(path, f"mirror.upstreams[{i}]", p) for i, p in enumerate(value.upstreams)
        )
    if not any(urls_match_str(c.key.split("/", 1)[0], host) for c in creds):
        raise ConfigError(
            f"{path}: mirror.endpoint {_quote(endpoint)}: no credentials match its host"
        )
    path_prefix = ("/" + rest).rstrip("/") if rest else ""
    return Mirror(endpoint, host, path_prefix, upstreams, value.credentials_strategy)


def _shape(path: str, doc: dict[str, Any]) -> StaticCredentialsShape:
    """The document's fields: checked by hand if it is plainly valid, else by pydantic,
    which raises the one-line error (imported only then: see :mod:`credprov_static.shape`)."""
    from credprov_static import shape

    vocabulary = shape.Vocabulary(
        cache_key_types=CACHE_KEY_TYPES,
        strategies=STRATEGIES,
        default_cache_duration=DEFAULT_CACHE_DURATION,
        default_cache_key_type=DEFAULT_CACHE_KEY_TYPE,
        default_strategy=MIRROR_ONLY,
    )
    found = shape.check(doc, vocabulary)
    if found is not None:
        return found
    from credprov_static.schema import validate

    return shape.from_model(validate(path, doc))


def _static_credentials(path: str, doc: dict[str, Any]) -> StaticConfig:
    if doc.get("apiVersion") != API_VERSION:
        raise ConfigError(
            f"{path}: {KIND} apiVersion {_quote(doc.get('apiVersion'))} is not {API_VERSION}"
        )
    model = _shape(path, doc)
    creds = _ordered(_credentials(path, model.credentials))

    from credprov.sdk import DurationError, format_duration, parse_duration

    try:
        ns = parse_duration(model.cache_duration)
    except DurationError as exc:
        raise ConfigError(f"{path}: cacheDuration: {exc}") from None
    if ns < 0:
        raise ConfigError(f"{path}: cacheDuration must not be negative")
    key_type = model.cache_key_type
    mirror = _mirror(path, model.mirror, creds) if model.mirror is not None else None
    if mirror is not None and key_type == "Global":
        # A Global answer would also be served for mirrored images, without the mirror.
        raise ConfigError(f"{path}: cacheKeyType Global cannot be used with a mirror")
    return StaticConfig(path, KIND, creds, mirror, format_duration(ns), key_type)
