"""PyYAML with go-yaml's rules: the YAML parser of record behind :func:`decode.parse_yaml`.

Imported only for documents :mod:`credprov._go.blockyaml` declines (PyYAML's import costs
more than the interpreter's start): duplicate keys become strict errors with go-yaml's line
texts, go-yaml v2's extra ``y``/``n`` booleans, non-string keys in their JSON form, and
go-yaml's guard against excessive aliasing.
"""

from __future__ import annotations

import math
import re

import yaml

from credprov._go import json as gojson
from credprov._go.decode import DecodeError
from credprov._go.fmt import go_quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that records duplicate mapping keys instead of silently dropping them."""

    dup_lines: list[str]


def _go_sharp_v(key: Any) -> str:
    # fmt's %#v of a YAML key: Go syntax for strings, plain text for numbers and bools.
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, str):
        return go_quote(key)
    if key is None:
        return "interface {}(nil)"
    return str(key)


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    loader.flatten_mapping(node)
    # Keys are compared as go-yaml does (1, 1.0, true and "1" all differ) and stored in
    # their JSON (string) form, as sigs.k8s.io/yaml converts them.
    out: dict[str, Any] = {}
    seen: set[tuple[str, Any]] = set()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            tagged = (type(key).__name__, key)
            hash(tagged)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "found unhashable key", key_node.start_mark
            ) from None
        if tagged in seen:
            loader.dup_lines.append(
                f"line {key_node.start_mark.line + 1}: key {_go_sharp_v(key)} already set in map"
            )
        seen.add(tagged)
        out[_key_str(key)] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)
# go-yaml v2 (used by sigs.k8s.io/yaml) also reads y/Y/n/N as booleans.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN")
)


def _construct_go_bool(loader: _StrictLoader, node: yaml.ScalarNode) -> bool:
    value = loader.construct_scalar(node)
    return str(value).lower() in ("y", "yes", "true", "on")


_StrictLoader.add_constructor("tag:yaml.org,2002:bool", _construct_go_bool)


def _key_str(key: Any) -> str:
    # sigs.k8s.io/yaml turns non-string keys into their string form.
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _allowed_alias_ratio(decode_count: int) -> float:
    # go-yaml v2's guard against "billion laughs" documents.
    low, high = 400_000, 4_000_000
    if decode_count <= low:
        return 0.99
    if decode_count >= high:
        return 0.10
    return 0.99 - 0.89 * ((decode_count - low) / (high - low))


class _Converter:
    """YAML data to JSON-compatible data, counting alias expansion as go-yaml does."""

    def __init__(self) -> None:
        self.decode_count = 0
        self.alias_count = 0
        self.alias_depth = 0
        self.seen: set[int] = set()

    def convert(self, value: Any) -> Any:
        self.decode_count += 1
        if self.alias_depth > 0:
            self.alias_count += 1
        if (
            self.alias_count > 100
            and self.decode_count > 1000
            and self.alias_count / self.decode_count > _allowed_alias_ratio(self.decode_count)
        ):
            raise DecodeError(
                "error converting YAML to JSON: yaml: document contains excessive aliasing"
            )
        if isinstance(value, dict | list):
            alias = id(value) in self.seen
            self.seen.add(id(value))
            if alias:
                self.alias_depth += 1
            try:
                if isinstance(value, dict):
                    return {
                        gojson.replace_surrogates(_key_str(k)): self.convert(v)
                        for k, v in value.items()
                    }
                return [self.convert(v) for v in value]
            finally:
                if alias:
                    self.alias_depth -= 1
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            go = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise DecodeError(f"error converting YAML to JSON: json: unsupported value: {go}")
        if isinstance(value, str):
            return gojson.replace_surrogates(value)
        if isinstance(value, bytes | bytearray):
            return value.decode("latin-1")
        if hasattr(value, "isoformat"):  # YAML timestamps become strings in JSON
            return value.isoformat()
        return value


def parse_yaml(text: str) -> tuple[Any, list[str]]:
    """Parse the first YAML document into JSON-compatible data.

    Returns:
        ``(data, duplicate_key_lines)``.

    Raises:
        DecodeError: ``error converting YAML to JSON: yaml: ...``.
    """
    try:
        loader = _StrictLoader(text)
    except yaml.YAMLError as exc:  # the reader rejects some characters up front
        raise DecodeError(f"error converting YAML to JSON: yaml: {exc}") from None
    loader.dup_lines = []
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
            break  # sigs.k8s.io/yaml reads the first document only
        data = _Converter().convert(docs[0] if docs else None)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DecodeError(f"error converting YAML to JSON: yaml: {where}{problem}") from None
    except RecursionError:
        raise DecodeError("error converting YAML to JSON: yaml: exceeded max depth") from None
    finally:
        loader.dispose()
    return data, loader.dup_lines
