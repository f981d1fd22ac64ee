"""JSON text read as Go's ``encoding/json`` (Go 1.24–1.26, what kubelets ship) reads it.

Python's ``json`` accepts a subset of what Go accepts and words its errors differently, so
:func:`loads` runs Python's C parser first (fast) and falls back to Go's rules only when
that fails or when Go would read the text differently:

* **Syntax errors** are found by :func:`syntax_error`, a byte-by-byte reproduction of
  encoding/json's scanner (``checkValid``), so the text is Go's: ``invalid character 'x'
  after array element``, ``unexpected end of JSON input``, and the scanner's end-of-input
  rule (it feeds one space at the end, so ``tru`` is ``invalid character ' ' in literal true
  (expecting 'e')``). A bad byte is quoted as Go quotes it: the *byte* as a Latin-1 rune
  (``é`` outside a string is ``'Ã'``; ``\\xa0`` is ``'\\u00a0'``).
* **Nesting**: Go stops at 10,000 levels (``invalid character '[' exceeded max depth``)
  whatever the stack; Python's parser recurses and stops near its recursion limit. Valid
  documents deeper than Python reaches are read by an iterative parser here
  (:func:`_parse_iteratively`), so acceptance does not depend on the recursion limit.
* **Invalid UTF-8 inside strings** becomes one U+FFFD per bad byte, as Go's
  ``utf8.DecodeRune`` walks it (Python's ``"replace"`` writes one per bad sequence).
* A lone UTF-16 surrogate escape (``"\\ud800"``, or a high surrogate not followed by a low
  one) decodes to U+FFFD in Go; Python keeps an unpaired surrogate code point that cannot
  be encoded or printed later. :func:`fix_surrogate_escapes` rewrites those escapes first.
* ``NaN``/``Infinity`` are refused (Go has no such literals).
* Deliberately not reproduced: Go's range error for a number decoded into a ``float64``
  (``1e400``). credprov never decodes a JSON number into a Go float (its documents are typed
  structs without numeric fields, where Go skips or type-checks the number), so such a
  number is kept as Python's ``inf``.

The scanner is our own rather than a library because no Python JSON library reproduces
encoding/json's error texts and end-of-input rule; the differential tests in
``tests/differential/test_json_diff.py`` compare it with real Go.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable

from credprov.errors import GoError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

#: encoding/json's ``maxNestingDepth``.
MAX_DEPTH = 10000


class GoFloat(float):
    """A JSON number with a fraction or exponent that keeps its literal text, which
    encoding/json's errors quote (``cannot unmarshal number 1.50 into ... int32``)."""

    literal: str

    @classmethod
    def parse(cls, text: str) -> GoFloat:
        """The number of JSON literal ``text``, remembering ``text``."""
        number = cls(text)
        number.literal = text
        return number


class JSONSyntaxError(GoError, ValueError):
    """encoding/json's ``*SyntaxError``: ``str()`` is Go's text; ``offset`` is Go's offset."""

    def __init__(self, msg: str, offset: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.offset = offset


def _go_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "\ufffd", exc.start + 1  # one U+FFFD per bad byte, then go on with the next byte


codecs.register_error("credprov.go-utf8", _go_replace)


def json_kind(value: Any) -> str:
    """The JSON kind of a decoded value as encoding/json names it in its errors (``bool``,
    ``number``, ``string``, ``array``, ``object``); ``null`` for None and anything else.

    One classification for every reader of parsed JSON or YAML: the strict decoder's
    ``cannot unmarshal <kind> into ...``, and plugins' config messages, which name the
    kinds in their own words.
    """
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


def go_decode(data: bytes) -> str:
    """``data`` as a Go string converts to runes: one U+FFFD for each byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "credprov.go-utf8")


# -- the scanner --------------------------------------------------------------------------------


def quote_char(byte: int) -> str:
    """encoding/json's ``quoteChar``: the byte as a rune, quoted like ``%q`` in single quotes."""
    if byte == 0x27:
        return "'\\''"
    if byte == 0x22:
        return "'\"'"
    from credprov._go.fmt import go_quote

    return "'" + go_quote(chr(byte))[1:-1] + "'"


_STRING_RUN = re.compile(rb'[^"\\\x00-\x1f]*')
_SPACE_RUN = re.compile(rb"[ \t\r\n]*")
_DIGITS = re.compile(rb"[0-9]*")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')
_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}

# What the scanner expects next (its state), and what the enclosing container expects.
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _AFTER_VALUE = range(5)
_IN_OBJECT_KEY, _IN_OBJECT_VALUE, _IN_ARRAY = range(3)


def syntax_error(data: bytes) -> JSONSyntaxError | None:
    """The error ``json.Unmarshal`` finds before decoding (``checkValid``), or None.

    Iterative: 10,000 levels of nesting cost no Python stack. ``stack`` holds what each open
    container expects next; ``state`` what the scanner expects next.
    """
    n = len(data)
    stack: list[int] = []
    state = _VALUE
    i = 0
    while True:
        i = _SPACE_RUN.match(data, i).end()  # type: ignore[union-attr]
        if state == _AFTER_VALUE:
            if not stack:
                return _error(data, i, "after top-level value") if i < n else None
            if i >= n:
                return JSONSyntaxError("unexpected end of JSON input", n)
            after = _after_value(data, i, stack)
            if isinstance(after, JSONSyntaxError):
                return after
            state = after
            i += 1
            continue
        if i >= n:
            return JSONSyntaxError("unexpected end of JSON input", n)
        c = data[i]
        if state == _KEY_OR_CLOSE and c == 0x7D:  # '}': closed below, as after a value
            stack[-1] = _IN_OBJECT_VALUE
            state = _AFTER_VALUE
            continue
        if state == _VALUE_OR_CLOSE and c == 0x5D:  # ']'
            state = _AFTER_VALUE
            continue
        if state in (_KEY, _KEY_OR_CLOSE):
            if c != 0x22:
                return _error(data, i, "looking for beginning of object key string")
        elif c == 0x7B or c == 0x5B:  # '{' or '['
            stack.append(_IN_OBJECT_KEY if c == 0x7B else _IN_ARRAY)
            if len(stack) > MAX_DEPTH:
                return _error(data, i, "exceeded max depth")
            state = _KEY_OR_CLOSE if c == 0x7B else _VALUE_OR_CLOSE
            i += 1
            continue
        end = _scalar_end(data, i)
        if isinstance(end, JSONSyntaxError):
            return end
        i = end
        state = _AFTER_VALUE


def _error(data: bytes, at: int, context: str) -> JSONSyntaxError:
    """The scanner's error for the byte at ``at`` (Go's offset is one past it)."""
    if at >= len(data):  # the space the scanner feeds at the end of the input
        return JSONSyntaxError(f"invalid character ' ' {context}", len(data))
    return JSONSyntaxError(f"invalid character {quote_char(data[at])} {context}", at + 1)


def _after_value(data: bytes, i: int, stack: list[int]) -> int | JSONSyntaxError:
    """The byte after a value inside a container (``:``, ``,`` or a close): the next state,
    with ``stack`` updated."""
    c = data[i]
    top = stack[-1]
    if top == _IN_OBJECT_KEY:
        if c != 0x3A:  # ':'
            return _error(data, i, "after object key")
        stack[-1] = _IN_OBJECT_VALUE
        return _VALUE
    if top == _IN_OBJECT_VALUE:
        if c == 0x2C:  # ','
            stack[-1] = _IN_OBJECT_KEY
            return _KEY
        if c == 0x7D:  # '}'
            stack.pop()
            return _AFTER_VALUE
        return _error(data, i, "after object key:value pair")
    if c == 0x2C:
        return _VALUE
    if c == 0x5D:  # ']'
        stack.pop()
        return _AFTER_VALUE
    return _error(data, i, "after array element")


def _scalar_end(data: bytes, i: int) -> int | JSONSyntaxError:
    """The end of the string, number or literal starting at ``i``."""
    c = data[i]
    if c == 0x22:
        return _string_end(data, i + 1)
    if c == 0x2D or 0x30 <= c <= 0x39:
        return _number_end(data, i)
    literal = _LITERALS.get(c)
    if literal is None:
        return _error(data, i, "looking for beginning of value")
    name = literal.decode()
    for k in range(1, len(literal)):
        if i + k >= len(data) or data[i + k] != literal[k]:
            return _error(data, i + k, f"in literal {name} (expecting {chr(literal[k])!r})")
    return i + len(literal)


def _string_end(data: bytes, i: int) -> int | JSONSyntaxError:
    """The end of a string whose opening quote is just before ``i``."""
    n = len(data)
    while True:
        i = _STRING_RUN.match(data, i).end()  # type: ignore[union-attr]
        if i >= n:
            return JSONSyntaxError("unexpected end of JSON input", n)
        c = data[i]
        if c == 0x22:
            return i + 1
        if c < 0x20:
            return _error(data, i, "in string literal")
        i += 1  # a backslash (at the end, the scanner's space is a bad escape)
        if i < n and data[i] in _ESCAPES:
            i += 1
        elif i < n and data[i] == 0x75:  # 'u'
            for k in range(1, 5):
                if i + k >= n or data[i + k] not in _HEX:
                    return _error(data, i + k, "in \\u hexadecimal character escape")
            i += 5
        else:
            return _error(data, i, "in string escape code")


def _number_end(data: bytes, i: int) -> int | JSONSyntaxError:
    """The end of the number starting at ``i`` (a ``-`` or a digit)."""
    n = len(data)
    if data[i] == 0x2D:
        i += 1
        if i >= n or not 0x30 <= data[i] <= 0x39:
            return _error(data, i, "in numeric literal")
    if data[i] == 0x30:
        i += 1
    else:
        i = _DIGITS.match(data, i).end()  # type: ignore[union-attr]
    if i < n and data[i] == 0x2E:  # '.'
        i += 1
        if i >= n or not 0x30 <= data[i] <= 0x39:
            return _error(data, i, "after decimal point in numeric literal")
        i = _DIGITS.match(data, i).end()  # type: ignore[union-attr]
    if i < n and data[i] in (0x65, 0x45):  # 'e' 'E'
        i += 1
        if i < n and data[i] in (0x2B, 0x2D):
            i += 1
        if i >= n or not 0x30 <= data[i] <= 0x39:
            return _error(data, i, "in exponent of numeric literal")
        i = _DIGITS.match(data, i).end()  # type: ignore[union-attr]
    return i


# -- decoding -----------------------------------------------------------------------------------

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


def _reject_constant(name: str) -> Any:
    raise ValueError(name)  # Go has no NaN/Infinity literals; syntax_error words it


_TOKEN = re.compile(r'[ \t\r\n]*(?:([\[{\]}:,])|(")|([^ \t\r\n\[{\]}:,"]+))')


def _parse_iteratively(
    text: str,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
    parse_float: Callable[[str], Any] | None = None,
    parse_int: Callable[[str], Any] | None = None,
) -> Any:
    """Parse ``text``, already known to be valid JSON, without recursion (any depth)."""
    scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
    decoder = json.JSONDecoder(parse_float=parse_float, parse_int=parse_int)
    # Each frame: [is_object, items, the pending key of an object (None: a key comes next)]
    stack: list[list[Any]] = []
    root: Any = None
    i = 0
    while True:
        m = _TOKEN.match(text, i)
        assert m is not None
        i = m.end()
        punct, quote, scalar = m.group(1), m.group(2), m.group(3)
        if punct in (":", ","):
            continue
        if punct == "{" or punct == "[":
            stack.append([punct == "{", [], None])
            continue
        if punct in ("}", "]"):
            is_object, items, _ = stack.pop()
            if is_object:
                value = object_pairs_hook(items) if object_pairs_hook else dict(items)
            else:
                value = items
        elif quote:
            value, i = scanstring(text, i, True)
        else:
            value, _ = decoder.raw_decode(scalar)
        if not stack:
            root = value
            break
        frame = stack[-1]
        if frame[0]:
            if frame[2] is None:
                frame[2] = value  # a key; its value comes next
                continue
            frame[1].append((frame[2], value))
            frame[2] = None
        else:
            frame[1].append(value)
    return root


#: Python converts at most this many digits to an int (``sys.get_int_max_str_digits``).
_INT_DIGITS = 4300


def _parse_int(text: str) -> Any:
    """A JSON integer; one with more digits than Python converts stays a number that
    keeps its literal (:class:`GoFloat`, infinite as a float), as Go's decoder sees a number
    it then names by that literal (``cannot unmarshal number 999... into ... int32``)."""
    if len(text) <= _INT_DIGITS:
        return int(text)
    return GoFloat.parse(text)


def loads(
    data: str | bytes,
    *,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_float: Callable[[str], Any] | None = None,
    big_ints: bool = False,
) -> Any:
    """``json.Unmarshal`` into ``interface{}``, as Go reads the text (see the module notes).

    ``big_ints``: an integer of more digits than Python converts is a number that keeps its
    literal (:func:`_parse_int`) instead of a ``ValueError``.

    Raises:
        JSONSyntaxError: Go's syntax error text (a ``ValueError``).
    """
    text = go_decode(data) if isinstance(data, bytes) else data
    fixed = fix_surrogate_escapes(text)
    try:
        return json.loads(
            fixed,
            object_pairs_hook=object_pairs_hook,
            parse_constant=_reject_constant,
            parse_float=parse_float,
            parse_int=_parse_int if big_ints else None,
        )
    except (ValueError, RecursionError):
        pass
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
    error = syntax_error(raw)
    if error is not None:
        raise error
    # Valid, but deeper than Python's parser reads.
    return _parse_iteratively(
        fixed, object_pairs_hook, parse_float, _parse_int if big_ints else None
    )


#: ``unicode.IsSpace``: the Latin-1 spaces and the other White_Space runes (Python's
#: ``str.isspace`` also counts U+001C..U+001F, which Go does not).
_GO_SPACES = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def has_json_prefix(data: bytes | str) -> bool:
    """apimachinery's ``IsJSONBuffer``: the first rune that is not ``unicode.IsSpace`` is ``{``.

    A leading U+00A0 or U+2003 is skipped here (and then refused by the JSON scanner, as the
    kubelet refuses it); an invalid UTF-8 byte stops the scan.
    """
    text = go_decode(data) if isinstance(data, bytes) else data
    return text.lstrip(_GO_SPACES).startswith("{")


class YAMLError(GoError, ValueError):
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
            return [loads(data, big_ints=True)]
        except ValueError:
            pass  # not JSON after all: YAML may still read it (and says where it fails)
    from credprov._go import goyaml

    try:
        return goyaml.load_all(data)
    except goyaml.YAMLError as exc:
        if "exceeded max depth" in str(exc):
            raise YAMLError("not valid YAML or JSON: nested too deeply", exc.line) from None
        raise YAMLError("not valid YAML or JSON", exc.line) from None


# -- JSON exactly as Go's json.Marshal writes it (the exec API and the keyring's hashes) --


def go_json(value: object) -> str:
    """Compact JSON with Go's HTML escaping (``json.Marshal``), no trailing newline.

    Text that is not valid UTF-8 (lone surrogates, e.g. from ``surrogateescape``) is
    written as ``\\ufffd``, as encoding/json does for invalid bytes.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _GO_ESCAPES.sub(lambda m: _GO_ESCAPE_MAP.get(m.group(), "\\ufffd"), text)


_GO_ESCAPE_MAP = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_GO_ESCAPES = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
