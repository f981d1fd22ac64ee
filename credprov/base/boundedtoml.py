"""TOML from untrusted files (a node image's runtime configuration), with structure limits.

``tomllib`` parses any TOML, however hostile: nesting deeper than the interpreter's
recursion limit raises ``RecursionError``, an integer of more than 4,300 decimal digits
``ValueError`` (``sys.get_int_max_str_digits``), and a dotted key of N parts
(``x.a.a.a... = 1``, or a table header ``[a.a.a...]``) costs time and memory in N² (each
prefix of the key is a tuple kept in its flags: 40 KB of key took 1.6 GB). The read limit
bounds none of these. go-yaml has such limits for YAML (:mod:`credprov._go.goyaml`); no
maintained TOML library for Python has them (``tomli`` is ``tomllib``; ``tomlkit`` is
slower and recursive too), so :func:`loads` checks the text first with a one-pass
tokenizer (:func:`check_structure`) and only then hands it to ``tomllib``:

* nesting of arrays and inline tables at most :data:`MAX_DEPTH`;
* keys (dotted keys, table headers) of at most :data:`MAX_KEY_PARTS` parts;
* numbers of at most :data:`MAX_DIGITS` digits;
* at most :data:`MAX_KEYS` key/value pairs and :data:`MAX_TABLES` table headers.

The tokenizer reads strings exactly as TOML does (basic, literal, and their multi-line
forms, with up to two quotes closing the content), so nothing tomllib reads as structure
hides from it in a string. It only counts: the syntax is still tomllib's to judge, and as a
last guard the errors above are caught from ``tomllib`` too. Every error is one line.
Standard library only.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from credprov.errors import FileError

__all__ = [
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_KEYS",
    "MAX_KEY_PARTS",
    "MAX_TABLES",
    "TOMLError",
    "check_structure",
    "loads",
]

#: Arrays and inline tables nested at most this deep (containerd's deepest is 4).
MAX_DEPTH = 32
#: Parts of one dotted key or table header (``plugins."io.containerd.grpc.v1.cri".registry``
#: is 3).
MAX_KEY_PARTS = 32
#: Digits (and ``_`` separators) of one number: an int64 has 19.
MAX_DIGITS = 64
#: Key/value pairs in one file.
MAX_KEYS = 20_000
#: Table and array-of-tables headers in one file.
MAX_TABLES = 5_000


class TOMLError(FileError, ValueError):
    """Not TOML, or TOML beyond the structure limits: one line, no file name (the caller
    adds it). A :class:`~credprov.errors.FileError` (the files credprov reads) and a
    ``ValueError``, as ``tomllib``'s decode error is."""


_TOKEN = re.compile(
    r'''
    (?P<mlbasic>"""(?:[^\\"]|\\[\s\S]|"(?!""))*"{3,5})
  | (?P<mlliteral>\'\'\'(?:[^']|'(?!''))*'{3,5})
  | (?P<basic>"(?:[^"\\\n]|\\[^\n])*")
  | (?P<literal>'[^'\n]*')
  | (?P<comment>\#[^\n]*)
  | (?P<number>[0-9_]+)
  | (?P<bare>[A-Za-z-]+)
  | (?P<space>[ \t\r]+)
  | (?P<other>[\s\S])
    ''',
    re.VERBOSE,
)


def check_structure(text: str) -> None:
    """Refuse ``text`` when it is beyond the structure limits (see the module docstring).

    Raises:
        TOMLError: which limit, and on which line; or a string that does not end (TOML
            that ``tomllib`` refuses too; refused here so that the scan stays linear).
    """
    line = 1
    stack: list[str] = []  # "[" (array), "{" (inline table), "h" (a table header)
    depth = 0  # arrays and inline tables open
    in_key = True  # at a key: the start of a line, in a header, after "{" or a table's ","
    parts = 1
    keys = tables = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "number":
            if len(match.group()) > MAX_DIGITS:
                raise TOMLError(f"line {line}: a number of more than {MAX_DIGITS} digits")
            continue
        if kind in ("mlbasic", "mlliteral"):
            line += match.group().count("\n")
            in_key = False
            continue
        if kind != "other":
            continue
        token = match.group()
        if token == "\n":
            line += 1
            if not stack:
                in_key, parts = True, 1
        elif token in "\"'":
            raise TOMLError(f"line {line}: a string that does not end")
        elif token == "[":
            if not stack and in_key:  # a table header: [a.b], or [[a.b]]
                stack.append("h")
                tables += 1
                if tables > MAX_TABLES:
                    raise TOMLError(f"line {line}: more than {MAX_TABLES} tables")
            elif stack and stack[-1] == "h" and in_key:
                pass  # the second bracket of [[
            else:
                stack.append("[")
                depth += 1
                in_key = False
        elif token == "{":
            stack.append("{")
            depth += 1
            in_key, parts = True, 1
        elif token in "]}":
            if stack and stack[-1] == "h":
                if token == "]":
                    stack.pop()
            elif stack:
                stack.pop()
                depth -= 1
            in_key = False
        elif token == "," and stack and stack[-1] == "{":
            in_key, parts = True, 1
        elif token == "." and in_key:
            parts += 1
            if parts > MAX_KEY_PARTS:
                raise TOMLError(f"line {line}: a key of more than {MAX_KEY_PARTS} parts")
        elif token == "=" and in_key:
            in_key, parts = False, 1
            keys += 1
            if keys > MAX_KEYS:
                raise TOMLError(f"line {line}: more than {MAX_KEYS} keys")
        if depth > MAX_DEPTH:
            raise TOMLError(f"line {line}: nested more than {MAX_DEPTH} deep")


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)`` within the structure limits.

    Raises:
        TOMLError: invalid TOML, or beyond the limits (one line).
    """
    check_structure(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TOMLError(f"invalid TOML: {exc}") from None
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:
        raise TOMLError(f"TOML beyond what can be read ({type(exc).__name__})") from None
