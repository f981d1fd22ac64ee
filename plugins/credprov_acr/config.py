"""Reading ``azure.json``, the cloud-provider config the plugin's positional argument names.

Upstream decodes it with ``sigs.k8s.io/yaml`` into its ``AzureClientConfig``: JSON or YAML,
keys matched case-insensitively (``tenantID`` fills ``tenantId``; an exact spelling does
not outrank another, the later key in the file wins), unknown keys ignored, a YAML scalar
given for a string field converted to its text (``tenantId: 123`` → ``"123"``), anything
else of the wrong type an error. Only the fields the credential provider uses are read.

Files that start with ``{`` are read with the standard library; PyYAML is imported only for
the others. Errors are one line naming the file, and never quote a value (the file holds
``aadClientSecret``).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from credprov.sdk import ProviderError

_MAX_FILE_BYTES = 1024 * 1024

# Field name as upstream spells it → attribute, type.
_FIELDS: dict[str, tuple[str, type]] = {
    "cloud": ("cloud", str),
    "tenantId": ("tenant_id", str),
    "aadClientId": ("aad_client_id", str),
    "aadClientSecret": ("aad_client_secret", str),
    "useManagedIdentityExtension": ("use_managed_identity_extension", bool),
    "userAssignedIdentityID": ("user_assigned_identity_id", str),
    "resourceManagerEndpoint": ("resource_manager_endpoint", str),
}
_BY_FOLDED = {name.casefold(): name for name in _FIELDS}


class ConfigError(ProviderError):
    """``azure.json`` cannot be used; ``str()`` is one line without any value from the file."""


class AzureConfig(NamedTuple):
    """The ``azure.json`` fields the plugin uses (empty string / False when absent)."""

    path: str
    cloud: str = ""
    tenant_id: str = ""
    aad_client_id: str = ""
    aad_client_secret: str = ""
    use_managed_identity_extension: bool = False
    user_assigned_identity_id: str = ""
    resource_manager_endpoint: str = ""

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={'<redacted>' if name == 'aad_client_secret' and value else repr(value)}"
            for name, value in zip(self._fields, self, strict=True)
        )
        return f"AzureConfig({shown})"


def load(path: str) -> AzureConfig:
    """Read and decode the ``azure.json`` at ``path``.

    Raises:
        ConfigError: no path, an unreadable or oversized file, invalid JSON/YAML, a document
            that is not a mapping, or a field of the wrong type.
    """
    if not path:
        raise ConfigError("config file is not specified")
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(
            f"failed to load config: cannot read {path}: {exc.strerror or exc}"
        ) from None
    if len(data) > _MAX_FILE_BYTES:
        raise ConfigError(f"failed to load config: {path} is larger than {_MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"failed to load config: {path}: not valid UTF-8") from None
    try:
        return decode(path, text)
    except ConfigError as exc:
        raise ConfigError(f"failed to load config: {path}: {exc}") from None


def decode(path: str, text: str) -> AzureConfig:
    """Decode the text of an ``azure.json`` (see the module docstring).

    Raises:
        ConfigError: as :func:`load`, without the file name.
    """
    pairs = _parse(text)
    values: dict[str, Any] = {}
    for key, value in pairs:
        if not isinstance(key, str):
            continue
        name = _BY_FOLDED.get(key.casefold())
        if name is None or value is None:
            continue  # unknown keys are ignored; null leaves the zero value, as in Go
        attr, kind = _FIELDS[name]
        values[attr] = _convert(name, value, kind)
    return AzureConfig(path=path, **values)


def _convert(name: str, value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{name} must be a boolean, not {_type_name(value)}")
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise ConfigError(f"{name} must be a string, not {_type_name(value)}")


#: The words for the JSON kinds in this plugin's messages.
_KIND_WORDS = {
    "bool": "a boolean",
    "number": "a number",
    "string": "a string",
    "array": "a list",
    "object": "a mapping",
}


def _type_name(value: Any) -> str:
    from credprov.sdk import json_kind

    return _KIND_WORDS.get(json_kind(value)) or "a " + type(value).__name__


def _parse(text: str) -> list[tuple[Any, Any]]:
    """The top-level (key, value) pairs in file order; an empty document has none."""
    if text.lstrip().startswith("{"):
        pairs: list[tuple[Any, Any]] = []

        def hook(items: list[tuple[str, Any]]) -> dict[str, Any]:
            nonlocal pairs
            pairs = items  # the last object closed is the top-level one
            return dict(items)

        try:
            json.loads(text, object_pairs_hook=hook)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except (ValueError, RecursionError):
            raise ConfigError("invalid JSON") from None
        return pairs
    return _parse_yaml(text)


def _parse_yaml(text: str) -> list[tuple[Any, Any]]:
    import yaml  # only for YAML files: JSON ones never pay for it

    try:
        doc = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # Never str(exc): PyYAML quotes the offending line, which may hold the secret.
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"invalid YAML{where}: {exc.problem or 'syntax error'}") from None
    except (yaml.YAMLError, RecursionError, ValueError):
        raise ConfigError("invalid YAML") from None
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise ConfigError(f"not a mapping but {_type_name(doc)}")
    return list(doc.items())
