"""``json.loads`` and ``json.dumps`` without importing :mod:`json`, for the plugins' warm path.

Importing :mod:`json` imports :mod:`re` for its pure-Python fallbacks, and ``re`` imports
``enum``, ``functools``, ``collections`` and more: about 10 ms of a frozen plugin's start
(``benchmarks/bench_startup.py``), spent before the first byte of the request is read.
CPython's ``json`` does its work in the C functions of its accelerator, ``_json``; this
module calls those same functions with the same settings ``json.loads``/``json.dumps`` pass
them, so a result is the one ``json`` gives, byte for byte.

Only success is handled here. Whatever the accelerator refuses (bad JSON, a byte-order mark,
text after the value, an object it cannot encode, a recursion limit) is handed to :mod:`json`
itself, which is imported then and raises its own exception with its own message. So the
errors are json's too, and the cost of ``re`` is paid only on a path that fails anyway.
Standard library only; keyword arguments are the subset credprov uses.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - CPython always builds it; fall back to json
    _json = None  # type: ignore[assignment]

#: JSON's whitespace, as ``json.decoder.WHITESPACE`` matches it.
_WS = " \t\n\r"


class _Settings:
    """What ``json.JSONDecoder`` hands its scanner (``_json.make_scanner`` reads these)."""

    __slots__ = ("object_hook", "object_pairs_hook", "parse_constant", "parse_float",
                 "parse_int", "strict")  # fmt: skip

    def __init__(self, parse_constant: Callable[[str], Any] | None) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}
_scanners: dict[Any, Any] = {}


def _json_module() -> Any:
    import json

    return json


#: Byte strings ``json.loads`` would not read as UTF-8 start so (``json.detect_encoding``).
_NOT_UTF8 = (b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")


def _utf8(data: bytes | bytearray) -> str | None:
    """``data`` decoded as ``json.loads`` decodes UTF-8, or None when json would guess
    another encoding (a byte-order mark, a NUL in the first two bytes)."""
    if data.startswith(_NOT_UTF8) or (len(data) >= 2 and not (data[0] and data[1])):
        return None
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def loads(
    text: str | bytes | bytearray, *, parse_constant: Callable[[str], Any] | None = None
) -> Any:
    """``json.loads(text, parse_constant=parse_constant)``.

    Raises:
        json.JSONDecodeError, UnicodeDecodeError, RecursionError, or what
            ``parse_constant`` raises: as :func:`json.loads` does, from json itself.
    """
    raw = text
    if not isinstance(text, str):
        text = _utf8(text) or ""
    scanner = _scanners.get(parse_constant)
    if scanner is None and _json is not None:
        scanner = _scanners[parse_constant] = _json.make_scanner(_Settings(parse_constant))  # type: ignore[arg-type]
    if scanner is not None and text and not text.startswith("\ufeff"):
        start = len(text) - len(text.lstrip(_WS))
        try:
            value, end = scanner(text, start)
        except Exception:  # json itself raises the exact error below
            pass
        else:
            if len(text.rstrip(_WS)) == end:
                return value
    if parse_constant is None:
        return _json_module().loads(raw)
    return _json_module().loads(raw, parse_constant=parse_constant)


def _refuse(value: object) -> Any:
    raise TypeError(type(value).__name__)  # json.dumps gives its own message (below)


def dumps(
    value: Any,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``json.dumps(value, ensure_ascii=..., separators=..., sort_keys=...)``.

    Raises:
        TypeError, ValueError, RecursionError: as :func:`json.dumps` does, from json itself.
    """
    item_sep, key_sep = separators if separators is not None else (", ", ": ")
    if _json is not None:
        string = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        if isinstance(value, str):
            return string(value)
        encode = _json.make_encoder(
            {}, _refuse, string, None, key_sep, item_sep, sort_keys, False, True
        )
        try:
            return "".join(encode(value, 0))
        except Exception:  # json itself raises the exact error below
            pass
    return _json_module().dumps(
        value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys
    )
