"""Semantic equality of JSON-like API objects, and a one-line diff when they differ.

Upstream compares typed objects with ``apiequality.Semantic.DeepEqual``: an empty map or
slice equals a nil one, an absent field equals its zero value, and resource quantities
compare by value (``10G`` == ``10000M``). Without Go's types this module approximates that
as follows, which is what credprov's objects (decoded JSON/YAML) need:

* a key that is absent, ``null``, ``{}`` or ``[]`` is the same as no key;
* scalars compare as given (``""`` is not dropped: it may be a set pointer);
* values in the quantity maps named by the caller (``spec.resources.requests`` …) compare
  as quantities when they parse as one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = ["Quantity", "diff", "equal", "normalize", "parse_quantity"]

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")


def parse_quantity(text: str) -> Fraction | None:
    """The value of a Kubernetes resource quantity (``1Gi``, ``500m``, ``1e3``), or None."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2)
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent is not None:
        return number * Fraction(10) ** int(exponent.group(1))
    return None


class Quantity:
    """A quantity that equals another of the same value, and prints as written."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Fraction) -> None:
        self.text = text
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, Mapping | list | tuple) and not value)


def normalize(
    value: Any,
    quantity_maps: frozenset[tuple[str, ...]] = frozenset(),
    path: tuple[str, ...] = (),
) -> Any:
    """A plain copy of ``value`` where semantically equal objects are equal (``==``).

    ``quantity_maps`` are paths (tuples of keys) of maps whose values are quantities.
    """
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            key = str(key)
            if path in quantity_maps and isinstance(item, str | int | float):
                parsed = parse_quantity(str(item))
                norm: Any = Quantity(str(item), parsed) if parsed is not None else item
            else:
                norm = normalize(item, quantity_maps, (*path, key))
            if not _empty(norm):
                out[key] = norm
        return out
    if isinstance(value, list | tuple):
        return [normalize(item, quantity_maps, (*path, "[]")) for item in value]
    return value


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "<absent>"
    if isinstance(value, Quantity):
        return json.dumps(value.text)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, Quantity):
        return value.text
    return repr(value)


_ABSENT = object()
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _join(path: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _walk(old: Any, new: Any, path: str, out: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(old.keys() | new.keys()):
            _walk(old.get(key, _ABSENT), new.get(key, _ABSENT), _join(path, key), out)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _walk(a, b, f"{path}[{index}]", out)
        return
    out.append(f"{path or '<object>'}: {_show(old)} -> {_show(new)}")


def diff(old: Any, new: Any) -> str:
    """``path: old -> new`` for each differing leaf of two normalized objects, ``; ``-joined."""
    out: list[str] = []
    _walk(old, new, "", out)
    return "; ".join(out)


def equal(a: Any, b: Any) -> bool:
    """Semantic equality of two values (``None`` equals ``{}`` and ``[]``)."""
    return normalize({"v": a}) == normalize({"v": b})
