"""JSON text read as Go's ``encoding/json`` reads it, where Python's ``json`` differs.

* A lone UTF-16 surrogate escape (``"\\ud800"``, or a high surrogate not followed by a low
  one) decodes to U+FFFD in Go; Python keeps an unpaired surrogate code point that cannot
  be encoded or printed later. :func:`fix_surrogate_escapes` rewrites those escapes before
  parsing, leaving valid pairs and escaped backslashes alone.
* Nesting deeper than Python's recursion limit raises ``RecursionError`` in ``json``; Go
  stops at 10,000 levels with ``exceeded max depth``. :func:`loads` reports it as a
  ``ValueError`` so callers that handle bad JSON handle this too.
* Integers longer than Python's 4,300-digit conversion limit raise ``ValueError`` (Go's
  ``interface{}`` decoding fails on them as well): callers already treat that as bad JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

_SURROGATE_ESCAPE = re.compile(
    r"(\\+)u([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|(\\+)u([dD][c-fC-F][0-9a-fA-F]{2})"
)


def _replace(match: re.Match[str]) -> str:
    slashes = match.group(1) if match.group(1) is not None else match.group(4)
    if len(slashes) % 2 == 0:  # an escaped backslash followed by a literal "u..."
        return match.group(0)
    if match.group(1) is not None and match.group(3) is not None:
        return match.group(0)  # a valid high+low pair
    return slashes[:-1] + "\\ufffd"


def fix_surrogate_escapes(text: str) -> str:
    """``text`` with every lone surrogate escape replaced by ``\\ufffd`` (as Go decodes it)."""
    if "\\u" not in text and "\\U" not in text:
        return text
    return _SURROGATE_ESCAPE.sub(_replace, text)


def replace_surrogates(value: str) -> str:
    """``value`` with lone surrogate code points (from any decoder) replaced by U+FFFD."""
    if not any("\ud800" <= ch <= "\udfff" for ch in value):
        return value
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)


def loads(
    data: str | bytes,
    *,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """``json.loads`` with Go's surrogate handling and a ``ValueError`` for deep nesting.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``), nested too deeply, or an integer
            too long to convert.
        UnicodeDecodeError: ``bytes`` that are not UTF-8.
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    text = fix_surrogate_escapes(text)
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook, parse_constant=parse_constant)
    except RecursionError:
        raise ValueError("exceeded max depth") from None


def _fix_tree(root: Any) -> Any:
    """``root`` with lone surrogates in every string (keys too) replaced, without recursion."""

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            return replace_surrogates(value)
        if isinstance(value, dict):
            fixed = {
                replace_surrogates(k) if isinstance(k, str) else k: v for k, v in value.items()
            }
            value.clear()
            value.update(fixed)
            stack.append(value)
        elif isinstance(value, list):
            stack.append(value)
        return value

    stack: list[Any] = []
    root = fix(root)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                node[key] = fix(item)
        else:
            for i, item in enumerate(node):
                node[i] = fix(item)
    return root


class YAMLError(ValueError):
    """Text that is not YAML (or JSON); ``line`` is 1-based, or None when unknown."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason if line is None else f"{reason} (line {line})")
        self.reason = reason
        self.line = line


def load_yaml_all(data: bytes | str) -> list[Any]:
    """Every YAML document in ``data`` (JSON is YAML), each read as go-yaml reads one.

    Raises:
        YAMLError: not YAML (or nested deeper than go-yaml's 10,000 levels); one line.
    """
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if text.lstrip()[:1] in ("{", "["):
        try:  # JSON first: it is what Go reads it as, surrogate escapes included
            return [loads(text)]
        except ValueError:
            pass  # not JSON after all: YAML may still read it (and says where it fails)
    from credprov._go import goyaml

    try:
        return goyaml.load_all(data)
    except goyaml.YAMLError as exc:
        if str(exc).startswith("yaml: exceeded max depth") or "exceeded max depth" in str(exc):
            raise YAMLError("not valid YAML or JSON: nested too deeply", exc.line) from None
        raise YAMLError("not valid YAML or JSON", exc.line) from None
