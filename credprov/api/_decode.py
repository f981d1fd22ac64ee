"""Strict decoding of Kubernetes-style versioned documents, as apimachinery does it.

Mirrors ``serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()``:

* a document whose first non-space byte is ``{`` is JSON, anything else is YAML
  (``sigs.k8s.io/yaml``: YAML is turned into JSON first);
* ``kind`` and ``apiVersion`` are read before anything else (missing ones are errors that
  quote the document);
* field names are case-sensitive, unknown and duplicated fields are *strict decoding
  errors*, reported together after the type errors;
* a wrong JSON type is Go's ``json: cannot unmarshal ... into Go struct field ...``.

The pydantic models of each API version do the type checking; this module turns their
errors into apimachinery's text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pydantic
import yaml


class DecodeError(ValueError):
    """A document the kubelet's decoder would reject; ``str()`` is apimachinery's text."""


class StrictDecodingError(DecodeError):
    """Unknown or duplicate fields (``strict decoding error: ...``)."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("strict decoding error: " + ", ".join(errors))


class _DuplicateKeys:
    """Collects duplicate keys while a document is parsed (the last value wins, as in Go)."""

    def __init__(self) -> None:
        self.json_paths: list[str] = []
        self.yaml_lines: list[str] = []


# -- JSON -------------------------------------------------------------------------------------


def _json_go_error(exc: json.JSONDecodeError) -> str:
    # encoding/json's syntax errors read "invalid character 'x' looking for beginning of
    # value"; the Python reasons differ, so keep Go's shape with the offending character.
    if exc.pos >= len(exc.doc):
        return "unexpected end of JSON input"
    ch = exc.doc[exc.pos]
    if exc.msg.startswith("Expecting value"):
        return f"invalid character {_go_char(ch)} looking for beginning of value"
    if exc.msg.startswith("Extra data"):
        return f"invalid character {_go_char(ch)} after top-level value"
    if exc.msg.startswith("Expecting property name"):
        return f"invalid character {_go_char(ch)} looking for beginning of object key string"
    if exc.msg.startswith("Expecting ':'"):
        return f"invalid character {_go_char(ch)} after object key"
    if exc.msg.startswith("Expecting ','"):
        return f"invalid character {_go_char(ch)} after object key:value pair"
    return f"invalid character {_go_char(ch)} in JSON: {exc.msg}"


def _go_char(ch: str) -> str:
    if ch == "'":
        return "'\\''"
    if ch.isprintable():
        return f"'{ch}'"
    return "'" + ch.encode("unicode_escape").decode("ascii") + "'"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _parse_json(text: str, dups: _DuplicateKeys | None) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out and dups is not None:
                dups.json_paths.append(key)
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=hook, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise DecodeError(_json_go_error(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise DecodeError(str(exc)) from None


# -- YAML -------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that records duplicate mapping keys instead of silently dropping them."""

    dups: _DuplicateKeys


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "found unhashable key", key_node.start_mark
            ) from None
        if key in out:
            loader.dups.yaml_lines.append(
                f"line {key_node.start_mark.line + 1}: key {json.dumps(_key_str(key))} "
                "already set in map"
            )
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,  # type: ignore[arg-type]
)


def _key_str(key: Any) -> str:
    # sigs.k8s.io/yaml turns non-string keys into their string form.
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _to_json_compatible(value: Any) -> Any:
    if isinstance(value, dict):
        return {_key_str(k): _to_json_compatible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json_compatible(v) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise DecodeError("error converting YAML to JSON: json: unsupported value: " + str(value))
    if isinstance(value, bytes | bytearray):
        return value.decode("latin-1")
    if hasattr(value, "isoformat"):  # YAML timestamps become strings in JSON
        return value.isoformat()
    return value


def _parse_yaml(text: str, dups: _DuplicateKeys) -> Any:
    loader = _StrictLoader(text)
    loader.dups = dups
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DecodeError(f"error converting YAML to JSON: yaml: {where}{problem}") from None
    except RecursionError:
        raise DecodeError("error converting YAML to JSON: yaml: document nested too deeply") from None
    finally:
        loader.dispose()
    # sigs.k8s.io/yaml reads the first document only.
    return _to_json_compatible(docs[0] if docs else None)


# -- documents --------------------------------------------------------------------------------


class Document:
    """A parsed document and the duplicate keys found while parsing it."""

    def __init__(self, data: Any, original: str, strict_errors: list[str]) -> None:
        self.data = data
        self.original = original
        self.strict_errors = strict_errors


def is_json(data: bytes | str) -> bool:
    """The recognizer apimachinery uses: JSON iff the first non-space byte is ``{``."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text.lstrip(" \t\r\n").startswith("{")


def load_document(data: bytes | str) -> Document:
    """Parse JSON or YAML into plain data, noting duplicate keys as strict errors."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    dups = _DuplicateKeys()
    if is_json(text):
        parsed = _parse_json(text, dups)
        errors = [f'duplicate field "{k}"' for k in dups.json_paths]
    else:
        parsed = _parse_yaml(text, dups)
        errors = []
        if dups.yaml_lines:
            errors.append("yaml: unmarshal errors:\n  " + "\n  ".join(dups.yaml_lines))
    return Document(parsed, text, errors)


def interpret_gvk(doc: Document) -> tuple[str, str, str]:
    """Return (group, version, kind), raising apimachinery's missing-kind/version errors."""
    data = doc.data
    if not isinstance(data, dict):
        kind = "array" if isinstance(data, list) else _json_kind(data)
        raise DecodeError(
            f"couldn't get version/kind; json parse error: json: cannot unmarshal {kind} "
            "into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; "
            'Kind string "json:\\"kind,omitempty\\"" }'
        )
    kind = data.get("kind")
    api_version = data.get("apiVersion")
    for name, value in (("kind", kind), ("apiVersion", api_version)):
        if value is not None and not isinstance(value, str):
            raise DecodeError(
                f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{_json_kind(value)} into Go struct field .{name} of type string"
            )
    if not kind:
        raise DecodeError(f"Object 'Kind' is missing in '{doc.original}'")
    if not api_version:
        raise DecodeError(f"Object 'apiVersion' is missing in '{doc.original}'")
    group, _, version = api_version.rpartition("/")
    return group, version, kind


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _path(loc: tuple[int | str, ...], *, with_index: bool) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            if with_index:
                out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def validate_model(
    model: type[pydantic.BaseModel],
    doc: Document,
    go_type_of: Callable[[tuple[int | str, ...]], tuple[str, str]],
) -> pydantic.BaseModel:
    """Validate ``doc.data`` against ``model`` with Go's decoding errors.

    ``go_type_of(loc)`` names the Go struct and type at a location, for
    ``json: cannot unmarshal`` messages.

    Raises:
        DecodeError: a type error (first one, as encoding/json stops there) or a
            :class:`StrictDecodingError` carrying every unknown and duplicate field.
    """
    data = doc.data
    try:
        obj = model.model_validate(data)
    except pydantic.ValidationError as exc:
        unknown: list[str] = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                unknown.append(f'unknown field "{_path(loc, with_index=True)}"')
                continue
            if err["type"] in ("value_error", "assertion_error"):
                ctx_error = err.get("ctx", {}).get("error")
                raise DecodeError(str(ctx_error) if ctx_error else err["msg"]) from None
            struct, go_type = go_type_of(loc)
            value = _lookup(data, loc)
            field = _path(loc, with_index=False)
            raise DecodeError(
                f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                f"{struct}.{field} of type {go_type}"
            ) from None
        raise StrictDecodingError(doc.strict_errors + unknown) from None
    if doc.strict_errors:
        raise StrictDecodingError(doc.strict_errors)
    return obj


def _lookup(data: Any, loc: tuple[int | str, ...]) -> Any:
    cur = data
    for part in loc:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return None
    return cur
