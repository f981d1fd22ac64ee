"""What the two halves of a credentials file's validation share: the allowed values, the
error type and the one-line message helpers.

:mod:`credprov_static.config` checks a file's meaning and :mod:`credprov_static.schema`
(pydantic, imported only for ``StaticCredentials`` documents) its shape; both word their
errors with these helpers, which live here so that neither imports the other's private
names (the schema is imported by the config on demand, never the other way round).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from credprov.sdk import ProviderError

MIRROR_ONLY = "MirrorCredentialsOnly"
MIRROR_FIRST = "MirrorCredentialsFirst"
MIRROR_LAST = "MirrorCredentialsLast"
STRATEGIES = (MIRROR_ONLY, MIRROR_FIRST, MIRROR_LAST)

CACHE_KEY_TYPES = ("Image", "Registry", "Global")
DEFAULT_CACHE_DURATION = "1h"
DEFAULT_CACHE_KEY_TYPE = "Registry"


class ConfigError(ProviderError):
    """The credentials file cannot be used; ``str()`` is one line without secrets."""


def quote(value: Any) -> str:
    """A short, quoted rendering of a non-secret value for messages."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 80 else text[:77] + '..."'


def type_name(value: Any) -> str:
    """The JSON/YAML kind of ``value`` as the messages name it (``string``, ``mapping``)."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string"}.get(
        type(value), "list" if isinstance(value, list) else "mapping"
    )


def check_fields(path: str, where: str, doc: Mapping[str, Any], allowed: frozenset[str]) -> None:
    """Refuse the fields of ``doc`` that are not in ``allowed``, naming them all."""
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if unknown:
        names = ", ".join(quote(k) for k in unknown)
        prefix = f"{where}: " if where else ""
        raise ConfigError(
            f"{path}: {prefix}unknown field{'s' if len(unknown) > 1 else ''} {names} "
            f"(allowed: {', '.join(sorted(allowed))})"
        )
