"""The shape of a valid ``StaticCredentials`` document, checked by hand, without pydantic.

Importing pydantic and building :mod:`credprov_static.schema`'s models costs a cold run of
the plugin several hundred milliseconds, most of its start-up, to check a document of a few
fields. :func:`check` accepts the documents those models accept, as YAML or JSON reads
them (plain ``dict``, ``list`` and ``str``), and gives the same values: the defaults, a lone
pattern as a list of one, an absent password or file as ``None``.

Only success is handled here, as in :mod:`credprov.base.fastjson`. On anything else (an
unknown or missing field, a wrong type, ``null``, a value not allowed, both or neither of
``password`` and ``passwordFile``, a ``str`` or ``dict`` subclass) :func:`check` returns
``None`` and the caller hands the document to :func:`credprov_static.schema.validate`,
which raises the one-line error it always raised, or (for types YAML never produces)
accepts it; :func:`from_model` then gives its values in these classes. So the messages
are pydantic's, and pydantic is imported only for a document that is wrong anyway.
``tests/unit/plugins/static/test_shape.py`` runs both on generated documents and compares.

Standard library only, and none of it: the allowed values and the defaults are handed in
by :mod:`credprov_static.config`, which owns them (this module imports nothing from it).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_TOP = frozenset(("apiVersion", "kind", "credentials", "cacheDuration", "cacheKeyType", "mirror"))
_CREDENTIAL = frozenset(("match", "username", "password", "passwordFile"))
_MIRROR = frozenset(("endpoint", "upstreams", "credentialsStrategy"))


class CredentialShape:
    """One ``credentials[]`` item, with the attributes of ``schema.CredentialModel``."""

    __slots__ = ("match", "password", "password_file", "username")

    def __init__(
        self, match: list[str], username: str, password: str | None, password_file: str | None
    ) -> None:
        self.match = match
        self.username = username
        self.password = password
        self.password_file = password_file


class MirrorShape:
    """The ``mirror`` section, with the attributes of ``schema.MirrorModel``."""

    __slots__ = ("credentials_strategy", "endpoint", "upstreams")

    def __init__(self, endpoint: str, upstreams: list[str] | None, strategy: str) -> None:
        self.endpoint = endpoint
        self.upstreams = upstreams
        self.credentials_strategy = strategy


class StaticCredentialsShape:
    """A whole document, with the attributes of ``schema.StaticCredentialsModel``."""

    __slots__ = (
        "api_version",
        "cache_duration",
        "cache_key_type",
        "credentials",
        "kind",
        "mirror",
    )

    def __init__(
        self,
        api_version: str,
        kind: str,
        credentials: list[CredentialShape],
        cache_duration: str,
        cache_key_type: str,
        mirror: MirrorShape | None,
    ) -> None:
        self.api_version = api_version
        self.kind = kind
        self.credentials = credentials
        self.cache_duration = cache_duration
        self.cache_key_type = cache_key_type
        self.mirror = mirror


class Vocabulary:
    """The values ``cacheKeyType`` and ``credentialsStrategy`` may take, and the defaults
    (owned by :mod:`credprov_static.config`)."""

    __slots__ = (
        "cache_key_types",
        "default_cache_duration",
        "default_cache_key_type",
        "default_strategy",
        "strategies",
    )

    def __init__(
        self,
        *,
        cache_key_types: tuple[str, ...],
        strategies: tuple[str, ...],
        default_cache_duration: str,
        default_cache_key_type: str,
        default_strategy: str,
    ) -> None:
        self.cache_key_types = cache_key_types
        self.strategies = strategies
        self.default_cache_duration = default_cache_duration
        self.default_cache_key_type = default_cache_key_type
        self.default_strategy = default_strategy


class _Unsure(Exception):
    """Not a document this module is sure pydantic accepts: let pydantic decide."""


def check(doc: Any, vocabulary: Vocabulary) -> StaticCredentialsShape | None:
    """``doc``'s values if it is plainly a valid ``StaticCredentials`` document, else None
    (pydantic's :func:`credprov_static.schema.validate` then says why, or accepts it)."""
    try:
        return _document(doc, vocabulary)
    except _Unsure:
        return None


def _fields(value: Any, allowed: frozenset[str]) -> dict[str, Any]:
    """``value`` if it is a plain mapping with known, plain string keys only."""
    if type(value) is not dict:
        raise _Unsure
    for key in value:
        if type(key) is not str or key not in allowed:
            raise _Unsure
    return value


def _string(value: Any) -> str:
    if type(value) is not str:
        raise _Unsure
    return value


def _strings(value: Any) -> list[str]:
    """A non-empty list of strings, or a lone string as a list of one (a new list)."""
    if type(value) is str:
        return [value]
    if type(value) is not list or not value:
        raise _Unsure
    for item in value:
        if type(item) is not str:
            raise _Unsure
    return list(value)


def _choice(value: Any, allowed: tuple[str, ...]) -> str:
    if type(value) is not str or value not in allowed:
        raise _Unsure
    return value


def _document(doc: Any, vocabulary: Vocabulary) -> StaticCredentialsShape:
    fields = _fields(doc, _TOP)
    if "apiVersion" not in fields or "kind" not in fields or "credentials" not in fields:
        raise _Unsure
    items = fields["credentials"]
    if type(items) is not list or not items:
        raise _Unsure
    mirror = fields.get("mirror")
    return StaticCredentialsShape(
        _string(fields["apiVersion"]),
        _string(fields["kind"]),
        [_credential(item) for item in items],
        _string(fields.get("cacheDuration", vocabulary.default_cache_duration)),
        _choice(
            fields.get("cacheKeyType", vocabulary.default_cache_key_type),
            vocabulary.cache_key_types,
        ),
        None if mirror is None else _mirror(mirror, vocabulary),
    )


def _credential(item: Any) -> CredentialShape:
    fields = _fields(item, _CREDENTIAL)
    if "match" not in fields or "username" not in fields:
        raise _Unsure
    if ("password" in fields) == ("passwordFile" in fields):
        raise _Unsure
    match = _strings(fields["match"])
    username = _string(fields["username"])
    if "password" in fields:
        return CredentialShape(match, username, _string(fields["password"]), None)
    return CredentialShape(match, username, None, _string(fields["passwordFile"]))


def _mirror(value: Any, vocabulary: Vocabulary) -> MirrorShape:
    fields = _fields(value, _MIRROR)
    if "endpoint" not in fields:
        raise _Unsure
    return MirrorShape(
        _string(fields["endpoint"]),
        _strings(fields["upstreams"]) if "upstreams" in fields else None,
        _choice(
            fields.get("credentialsStrategy", vocabulary.default_strategy), vocabulary.strategies
        ),
    )


def from_model(model: Any) -> StaticCredentialsShape:
    """The values of a ``schema.StaticCredentialsModel`` pydantic accepted (duck-typed:
    this module never imports pydantic) in this module's classes."""
    mirror = model.mirror
    return StaticCredentialsShape(
        model.api_version,
        model.kind,
        [
            CredentialShape(list(c.match), c.username, c.password, c.password_file)
            for c in model.credentials
        ],
        model.cache_duration,
        model.cache_key_type,
        None
        if mirror is None
        else MirrorShape(
            mirror.endpoint,
            None if mirror.upstreams is None else list(mirror.upstreams),
            mirror.credentials_strategy,
        ),
    )
