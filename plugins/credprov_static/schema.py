"""The shape of a ``StaticCredentials`` document, as pydantic models.

pydantic checks the shape (which fields exist, which are required, their types, the allowed
values of ``cacheKeyType`` and ``credentialsStrategy``, one of ``password`` or
``passwordFile``); :mod:`credprov_static.config` then checks the meaning (registry patterns,
password files, durations, the mirror's host). :func:`validate` turns pydantic's errors into
the plugin's one-line messages, which name the field by its path
(``credentials[0].match[1]``) and never quote a value that could be a password.

A document with one mistake gets the same message it always did. With several, the first in
document order is reported: unknown fields before missing ones, ``credentials`` (item by
item) before ``cacheDuration``, ``cacheKeyType`` and ``mirror``; every shape error before
any error of meaning.

Imported only for ``StaticCredentials`` documents that :mod:`credprov_static.shape` (the
same checks by hand, for valid documents) is not sure of: valid files, docker configs and
Secrets never import pydantic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from credprov_static.fields import (
    CACHE_KEY_TYPES,
    DEFAULT_CACHE_DURATION,
    DEFAULT_CACHE_KEY_TYPE,
    MIRROR_ONLY,
    STRATEGIES,
    ConfigError,
    check_fields,
    quote,
    type_name,
)

_EXACTLY_ONE = "exactly_one_password"
_NOT_NULL = "string_type"


def _no_null(value: Any) -> Any:
    """An explicit ``null`` is a wrong type, not an absent field (the default is not one)."""
    if value is None:
        raise PydanticCustomError(_NOT_NULL, "must be a string")
    return value


def _one_or_list(value: Any) -> Any:
    """A lone pattern is accepted as a list of one."""
    return [value] if isinstance(value, str) else value


def _exactly_one_error(data: Any) -> dict[str, Any]:
    return {
        "type": PydanticCustomError(_EXACTLY_ONE, "needs exactly one of password or passwordFile"),
        "loc": (),
        "input": data,
    }


class _Strict(BaseModel):
    """Unknown fields refused, no type coercion (``1`` is not ``"1"``), names as written."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)


class CredentialModel(_Strict):
    """One ``credentials[]`` item: patterns, a username, a password or a file holding one."""

    match: list[str] = Field(min_length=1)
    username: str
    password: str | None = None
    password_file: str | None = Field(default=None, alias="passwordFile")

    _match_list = field_validator("match", mode="before")(_one_or_list)
    _strings = field_validator("username", "password", "password_file", mode="before")(_no_null)

    @model_validator(mode="wrap")
    @classmethod
    def _exactly_one_password(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        # By presence, as written: reported with the item's other errors (validate() orders
        # them), so "password: x" beside "passwordFile: null" is this error, not a type error.
        one = not isinstance(data, dict) or ("password" in data) != ("passwordFile" in data)
        try:
            model = handler(data)
        except ValidationError as exc:
            if one:
                raise
            errors = [*exc.errors(include_url=False), _exactly_one_error(data)]
            raise ValidationError.from_exception_data(cls.__name__, errors) from None  # type: ignore[arg-type]
        if not one:
            raise PydanticCustomError(_EXACTLY_ONE, "needs exactly one of password or passwordFile")
        return model


class MirrorModel(_Strict):
    """The ``mirror`` section: an endpoint, the upstreams it serves, whose credentials."""

    endpoint: str
    upstreams: list[str] | None = Field(default=None, min_length=1)
    credentials_strategy: Literal[STRATEGIES] = Field(  # type: ignore[valid-type]
        default=MIRROR_ONLY, alias="credentialsStrategy"
    )

    _endpoint = field_validator("endpoint", mode="before")(_no_null)
    _upstreams = field_validator("upstreams", mode="before")(
        lambda value: _one_or_list(_no_null(value))
    )


class StaticCredentialsModel(_Strict):
    """A whole ``StaticCredentials`` document (``apiVersion`` is checked before)."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    credentials: list[CredentialModel] = Field(min_length=1)
    cache_duration: str = Field(default=DEFAULT_CACHE_DURATION, alias="cacheDuration")
    cache_key_type: Literal[CACHE_KEY_TYPES] = Field(  # type: ignore[valid-type]
        default=DEFAULT_CACHE_KEY_TYPE, alias="cacheKeyType"
    )
    mirror: MirrorModel | None = None

    _duration = field_validator("cache_duration", mode="before")(_no_null)


def validate(path: str, doc: dict[str, Any]) -> StaticCredentialsModel:
    """``doc`` as a :class:`StaticCredentialsModel`.

    Raises:
        ConfigError: the first shape error, as one line naming ``path`` and the field.
    """
    try:
        return StaticCredentialsModel.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
    first = min(errors, key=lambda e: _order(e["loc"], e["type"]))
    raise _message(path, doc, first) from None


# -- which error comes first ------------------------------------------------------------------

#: Field order as the document is read; unknown fields (rank -2) and missing required fields
#: (rank -1) of a mapping come before its fields' own errors.
_FIELD_RANK = {
    # top level
    "credentials": 0,
    "cacheDuration": 1,
    "cacheKeyType": 2,
    "mirror": 3,
    # credentials[i]
    "match": 0,
    "username": 1,
    "password": 3,
    "passwordFile": 4,
    # mirror
    "endpoint": 0,
    "credentialsStrategy": 1,
    "upstreams": 2,
}
#: The exactly-one check follows the types of match and username, precedes the password's.
_EXACTLY_ONE_RANK = 2


def _order(loc: tuple[int | str, ...], kind: str) -> tuple[tuple[int, int], ...]:
    key: list[tuple[int, int]] = []
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(part, int):
            key.append((0, part))
        elif last and kind == "extra_forbidden":
            key.append((-2, 0))
        elif last and kind == "missing":
            key.append((-1, _FIELD_RANK.get(part, 0)))
        else:
            key.append((0, _FIELD_RANK.get(part, 99)))
    if kind == _EXACTLY_ONE:
        key.append((0, _EXACTLY_ONE_RANK))
    return tuple(key)


# -- what it says -----------------------------------------------------------------------------


def _where(loc: tuple[int | str, ...]) -> str:
    """``credentials[0].match[1]`` for ``("credentials", 0, "match", 1)``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _at(doc: Any, loc: tuple[int | str, ...]) -> Any:
    for part in loc:
        doc = doc[part]
    return doc


def _aliases(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(f.alias or name for name, f in model.model_fields.items())


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel]:
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return StaticCredentialsModel
    return CredentialModel if names[0] == "credentials" else MirrorModel


def _message(path: str, doc: dict[str, Any], error: Any) -> ConfigError:
    loc: tuple[int | str, ...] = tuple(error["loc"])
    kind: str = error["type"]
    value = error.get("input")
    where = _where(loc)
    if kind == "extra_forbidden":
        parent = loc[:-1]
        try:
            check_fields(path, _where(parent), _at(doc, parent), _aliases(_model_at(parent)))
        except ConfigError as exc:
            return exc
    if kind == "missing":
        return ConfigError(f"{path}: {where} is required")
    if kind == _EXACTLY_ONE:
        return ConfigError(f"{path}: {where} needs exactly one of password or passwordFile")
    if kind == "literal_error":
        allowed = STRATEGIES if loc[-1] == "credentialsStrategy" else CACHE_KEY_TYPES
        return ConfigError(f"{path}: {where} {quote(value)} is not one of " + ", ".join(allowed))
    if kind == "model_type":
        return ConfigError(f"{path}: {where} must be a mapping")
    if loc == ("credentials",):
        return ConfigError(f"{path}: credentials must be a non-empty list")
    if loc[-1] in ("match", "upstreams"):
        return ConfigError(f"{path}: {where} must be a non-empty list of strings")
    # A wrong type: the value is never quoted, it may be a password.
    return ConfigError(f"{path}: {where} must be a string, not a {type_name(value)}")
