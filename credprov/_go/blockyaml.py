"""A fast path for the plain block YAML that kubelet configuration files are written in.

Why we keep our own: importing PyYAML costs 13-18 ms here (its reader compiles a large
Unicode class at import, its resolver a dozen more patterns), against a 25 ms interpreter
start, and every ``credprov`` command and ``docker-credential-credprov`` call that reads a
``CredentialProviderConfig`` paid it. No maintained library parses YAML faster to import.
So this module parses a deliberately small subset and answers ``None`` for anything outside
it; :mod:`credprov._go.decode` then parses with :mod:`credprov._go.goyaml` (go-yaml's rules
on PyYAML's scanner), the parser of record and the source of every error text. Keys come
back sorted, as in the JSON ``sigs.k8s.io/yaml`` writes. The fast path either returns exactly what the goyaml
path returns or declines: ``tests/unit/_go/test_blockyaml.py`` checks that differentially
against :mod:`credprov._go.goyaml` (go-yaml's rules), itself checked against real Go.

The subset, everything else declines:

* printable ASCII, ``\\n`` line ends, space indentation, ``#`` comments (whole-line, or
  after a space), one optional leading ``---`` line;
* block mappings whose keys are plain words (``[A-Za-z_][A-Za-z0-9_./-]*``, not a YAML 1.1
  boolean or null word), no duplicate keys;
* block sequences (``- item``, nested or "indentless" under a key), including mappings
  that start on the ``-`` line;
* scalars on one line: double-quoted without escapes, single-quoted without ``''``, or
  plain, resolved as the loader does: ``null``/``~``/empty, YAML 1.1 and go-yaml booleans
  (``yes``, ``on``, ``y``, ...), decimal integers without sign, underscore or leading zero,
  and strings that start with a letter, ``/``, ``_``, ``--`` or ``-`` and a letter (command
  line flags), or that are Go durations (``5m``,
  ``1h30m``). Any other plain scalar (floats, octal, timestamps, indicators) declines.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["parse"]

# go-yaml v2 reads these as booleans (YAML 1.1 plus y/n); the loader maps them the same way.
_TRUE = frozenset(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"))
_FALSE = frozenset(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"))
_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_KEY_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_KEY_CHARS = _KEY_START | frozenset("0123456789./-")
_STR_START = _KEY_START | frozenset("/")
_DIGITS = frozenset("0123456789")
_DASH_STR = _KEY_START | frozenset("-")
_DURATION_UNITS = ("ns", "us", "ms", "s", "m", "h")


class _Decline(Exception):
    """The document is outside the subset: let PyYAML parse it."""


def parse(text: str) -> Any:
    """The first YAML document of ``text`` as JSON-compatible data, or None to decline.

    A document that parses to ``null`` also declines (PyYAML answers those cheaply enough,
    and ``None`` is the decline signal).
    """
    if not text.isascii():
        return None
    lines = []
    for number, raw in enumerate(text.split("\n"), 1):
        if not raw.isprintable():  # tabs, carriage returns and other controls
            return None
        body = raw.lstrip(" ")
        if not body or body[0] == "#":
            continue
        lines.append((number, len(raw) - len(body), body))
    if lines and lines[0][2] == "---":
        del lines[0]
    if not lines:
        return None
    try:
        value, end = _Parser(lines).node(0, lines[0][1])
    except (_Decline, RecursionError):
        return None
    if end != len(lines):
        return None
    return value


class _Parser:
    def __init__(self, lines: list[tuple[int, int, str]]) -> None:
        self.lines = lines

    def node(self, at: int, indent: int) -> tuple[Any, int]:
        """The block node whose first line is ``lines[at]`` at column ``indent``."""
        body = self.lines[at][2]
        if body == "-" or body.startswith("- "):
            return self.sequence(at, indent)
        return self.mapping(at, indent)

    def sequence(self, at: int, indent: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        lines = self.lines
        while at < len(lines):
            _, col, body = lines[at]
            if col != indent or not (body == "-" or body.startswith("- ")):
                if col > indent:
                    raise _Decline
                break
            rest = body[1:].lstrip(" ")
            if not rest:
                at += 1
                if at < len(lines) and lines[at][1] > indent:
                    value, at = self.node(at, lines[at][1])
                else:
                    value = None
                out.append(value)
                continue
            if rest[0] == "#":
                raise _Decline
            item_col = indent + len(body) - len(rest)
            if rest.startswith("- ") or rest == "-" or _split_key(rest) is not None:
                # "- - x" (nested sequence) or "- key: value" (a mapping on the "-" line)
                # Parsing only moves forward: the line becomes its own remainder in place.
                lines[at] = (lines[at][0], item_col, rest)
                value, at = self.node(at, item_col)
            else:
                value = _scalar(rest)
                at += 1
            out.append(value)
        return out, at

    def mapping(self, at: int, indent: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        lines = self.lines
        while at < len(lines):
            _, col, body = lines[at]
            if col != indent:
                if col > indent:
                    raise _Decline
                break
            split = _split_key(body)
            if split is None:
                if body == "-" or body.startswith("- "):
                    break  # the parent's indentless sequence goes on (or ends the map)
                raise _Decline
            key, rest = split
            if key in out:
                raise _Decline  # PyYAML reports duplicates as strict errors
            at += 1
            if rest:
                out[key] = _scalar(rest)
                continue
            nxt = lines[at] if at < len(lines) else None
            if nxt is not None and nxt[1] > indent:
                out[key], at = self.node(at, nxt[1])
            elif (
                nxt is not None and nxt[1] == indent and (nxt[2] == "-" or nxt[2].startswith("- "))
            ):
                out[key], at = self.sequence(at, indent)  # an indentless sequence
            else:
                out[key] = None
        # sigs.k8s.io/yaml hands the decoder JSON written from a Go map: keys sorted.
        return dict(sorted(out.items())), at


def _split_key(body: str) -> tuple[str, str] | None:
    """``key: rest`` as (key, rest without its comment) when the key is a plain word."""
    if body[0] not in _KEY_START:
        return None
    colon = body.find(":")
    if colon <= 0:
        return None
    key = body[:colon]
    if not all(ch in _KEY_CHARS for ch in key):
        return None
    after = body[colon + 1 :]
    if after and after[0] != " ":
        return None  # "image:tag" is a plain scalar, not a key
    if key in _TRUE or key in _FALSE or key in _NULL:
        raise _Decline  # a boolean or null key: PyYAML stringifies it its own way
    rest = after.lstrip(" ")
    if rest.startswith("#"):
        rest = ""
    return key, rest


def _check_tail(tail: str) -> None:
    """Decline unless only spaces, then optionally a comment, follow a quoted scalar."""
    stripped = tail.lstrip(" ")
    if stripped and (stripped[0] != "#" or stripped == tail):
        raise _Decline


def _scalar(rest: str) -> Any:
    first = rest[0]
    if first == '"':
        end = rest.find('"', 1)
        if end < 0 or "\\" in rest[1:end]:
            raise _Decline
        _check_tail(rest[end + 1 :])
        return rest[1:end]
    if first == "'":
        end = rest.find("'", 1)
        if end < 0 or rest[end + 1 : end + 2] == "'":
            raise _Decline
        _check_tail(rest[end + 1 :])
        return rest[1:end]
    hash_at = rest.find(" #")
    value = (rest if hash_at < 0 else rest[:hash_at]).rstrip(" ")
    if ": " in value or value.endswith(":"):
        raise _Decline
    if value in _NULL:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    first = value[0]
    if first in _STR_START or (first == "-" and value[1:2] in _DASH_STR):
        return value  # "--v=3" and "-x" are strings; "-1" and "-.5" are numbers
    if first in _DIGITS:
        if value == "0" or (first != "0" and len(value) < 19 and value.isdigit()):
            return int(value)  # within int64 (longer ones are uint64s or floats to go-yaml)
        if _is_duration(value):
            return value
    raise _Decline


def _is_duration(value: str) -> bool:
    """``time.ParseDuration`` shapes without sign (``5m``, ``1.5h``, ``1h30m``)."""
    at = 0
    while at < len(value):
        start = at
        while at < len(value) and value[at] in _DIGITS:
            at += 1
        if at < len(value) and value[at] == ".":
            at += 1
            while at < len(value) and value[at] in _DIGITS:
                at += 1
        if at == start or value[start] == ".":
            return False
        for unit in _DURATION_UNITS:
            if value.startswith(unit, at):
                at += len(unit)
                break
        else:
            return False
    return True
