"""YAML read as the kubelet reads it: go-yaml v2 under ``sigs.k8s.io/yaml``, to JSON data.

apimachinery turns a YAML document into JSON with ``sigs.k8s.io/yaml.YAMLToJSON`` (go-yaml
v2, then ``encoding/json``) before decoding it, and runs ``YAMLToJSONStrict`` to find
duplicate keys. :func:`yaml_to_json` returns what that JSON text decodes to, or go-yaml's
error text, byte for byte; :func:`load_all` reads every document of a stream the same way.

Why our own layer, on PyYAML's pure-Python scanner and parser:

* go-yaml and PyYAML are both ports of libyaml, so their scanners and parsers agree on
  almost everything; the differences are few and local (the depth limits, tabs after a
  value indicator, escapes of UTF-16 surrogates, when the reader checks characters, the
  error texts), and are overridden here one by one.
* What sits above the parser differs wholesale: go-yaml v2 resolves plain scalars with
  YAML 1.1 rules of its own (``0o17`` and ``1e3`` are numbers, ``12:30`` and timestamps
  stay strings, unknown tags keep the text), merges ``<<`` keys in document order, keys
  may be numbers (written as Go formats them), and ``sigs.k8s.io/yaml`` sorts keys as
  ``encoding/json`` writes them. PyYAML's composer and constructors have none of that
  and recurse once per level, so Python's recursion limit (not go-yaml's 10,000) decided
  how deep a document could nest. The composer and decoder here are iterative.
* libyaml (PyYAML's C loader) is not used: since 0.2.6 it refuses documents nested
  1,000 deep that go-yaml reads, so the answer depended on the PyYAML wheel pip picked.
  ruamel.yaml is YAML 1.2 (``0o17``, ``1e3`` and ``y`` resolve differently) and costs
  more to import; its scanner would need the same overrides.

Measured here (medians of 15 loads, side by side, on ``config/kep4412-objects.yaml``, 3 KB):
5.5 ms, against 8.1 ms for PyYAML's pure-Python ``SafeLoader`` (0.68x) and 0.9 ms for
libyaml's ``CSafeLoader``. Plain configuration files still take
:mod:`credprov._go.blockyaml`'s fast path and never import PyYAML.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Any

import yaml.error
import yaml.events as ev
import yaml.parser
import yaml.scanner
import yaml.tokens

from credprov._go.fmt import go_quote
from credprov.errors import GoError

__all__ = ["MAX_DEPTH", "YAMLError", "load_all", "yaml_to_json", "yaml_to_json_strict"]

#: go-yaml's limit on flow and block nesting (``exceeded max depth of 10000``).
MAX_DEPTH = 10_000
#: go-yaml's reader decodes its input in chunks of this many bytes and checks each chunk's
#: characters only when the scanner first needs one of them.
_CHUNK = 512

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BINARY = "tag:yaml.org,2002:binary"
_MERGE = "tag:yaml.org,2002:merge"
_RESOLVABLE = frozenset(("", _STR, _BOOL, _INT, _FLOAT, _TIMESTAMP, _NULL))


class YAMLError(GoError, ValueError):
    """A document go-yaml (or the JSON conversion after it) refuses; ``str()`` is Go's text.

    ``line`` is the 1-based line go-yaml names, or None when its text names none.
    """

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


# -- the reader -------------------------------------------------------------------------------

# Characters go-yaml's reader accepts (the YAML 1.1 printable set).
_NOT_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


class _ReaderFault(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


def _utf8_problem(data: bytes, at: int) -> str:
    """go-yaml's reader text for the invalid UTF-8 sequence starting at ``data[at]``."""
    lead = data[at]
    if lead & 0x80 == 0:
        width = 1
    elif lead & 0xE0 == 0xC0:
        width = 2
    elif lead & 0xF0 == 0xE0:
        width = 3
    elif lead & 0xF8 == 0xF0:
        width = 4
    else:
        return "invalid leading UTF-8 octet"
    if at + width > len(data):
        return "incomplete UTF-8 octet sequence"
    if any(b & 0xC0 != 0x80 for b in data[at + 1 : at + width]):
        return "invalid trailing UTF-8 octet"
    value = lead & (0x7F, 0x1F, 0x0F, 0x07)[width - 1]
    for b in data[at + 1 : at + width]:
        value = (value << 6) | (b & 0x3F)
    if width > 1 and value < (0, 0x80, 0x800, 0x10000)[width - 1]:
        return "invalid length of a UTF-8 sequence"
    return "invalid Unicode character"


def _decode(data: bytes | str) -> tuple[str, int | None, str]:
    """The text go-yaml reads, where its reader would fail (a character index), and why.

    go-yaml decodes 512-byte chunks as the scanner asks for characters, so a bad byte is
    found only once the scanner needs a character of its chunk: the index returned is the
    first character of that chunk (a character cut by a chunk's end belongs to the next).
    """
    if isinstance(data, str):
        match = _NOT_PRINTABLE.search(data)
        if match is None:
            return data, None, ""
        data = data.encode("utf-8", "surrogatepass")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return _decode_utf16(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data[: exc.start].decode("utf-8")
        match = _NOT_PRINTABLE.search(text)
        if match is None:  # the first fault is the bad byte (the reader reads in order)
            return text, _chunk_start(data, exc.start, text), _utf8_problem(data, exc.start)
        text = data.decode("utf-8", "replace")  # only the part before the fault is read
    else:
        match = _NOT_PRINTABLE.search(text)
        if match is None:
            return text, None, ""
    bad_char = match.start()
    bad_byte = len(text[:bad_char].encode("utf-8"))
    return text, _chunk_start(data, bad_byte, text), "control characters are not allowed"


def _decode_utf16(data: bytes) -> tuple[str, int | None, str]:
    codec = "utf-16-le" if data.startswith(b"\xff\xfe") else "utf-16-be"
    try:
        text = data[2:].decode(codec)
    except UnicodeDecodeError:
        return "", 0, "incomplete UTF-16 character"
    match = _NOT_PRINTABLE.search(text)
    if match is None:
        return text, None, ""
    return text, 0, "control characters are not allowed"


def _utf8_width(lead: int) -> int:
    """The length of the UTF-8 sequence ``lead`` starts (0 for a byte no sequence starts with)."""
    if lead < 0x80:
        return 1
    if lead & 0xE0 == 0xC0:
        return 2
    if lead & 0xF0 == 0xE0:
        return 3
    if lead & 0xF8 == 0xF0:
        return 4
    return 0


def _chunk_start(data: bytes, bad: int, text: str) -> int:
    """The index (in ``text``) of the first character go-yaml decodes in the round that finds
    the fault at byte ``bad``: the scanner's first need of a character from there fails.

    go-yaml's raw buffer holds 512 bytes; each round decodes every whole character in it,
    and a character cut by its end (or a bad sequence that needs bytes not yet read) waits
    for the next round, whose buffer starts with those bytes.
    """
    size = len(data)
    width = _utf8_width(data[bad])
    begin, end = 0, min(_CHUNK, size)
    while not (bad < end and (width == 0 or bad + width <= end)):
        if end == size:  # cut by the end of the input: found once the reader sees the end
            return len(text)
        lead = end - 1
        while lead > begin and data[lead] & 0xC0 == 0x80:
            lead -= 1
        begin = lead if lead + max(_utf8_width(data[lead]), 1) > end else end
        end = min(begin + _CHUNK, size)
    return len(data[:begin].decode("utf-8")) if begin else 0


class _Reader:
    """The reader interface PyYAML's scanner uses, over a whole text."""

    def __init__(self, text: str, limit: int | None, reason: str) -> None:
        self.name = "<go-yaml>"
        self.stream = None
        self.stream_pointer = 0
        self.eof = True
        self.buffer = text + "\0"
        self.pointer = 0
        self.raw_buffer = None
        self.raw_decode = None
        self.encoding = "utf-8"
        self.index = 0
        self.line = 0
        self.column = 0
        self._limit = limit
        self._reason = reason
        if limit is not None:
            self.peek = self._checked_peek  # type: ignore[method-assign]
            self.prefix = self._checked_prefix  # type: ignore[method-assign]
            if limit == 0:
                raise _ReaderFault(reason)

    def _check(self, end: int) -> None:
        assert self._limit is not None
        if end >= self._limit:
            raise _ReaderFault(self._reason)

    def peek(self, index: int = 0) -> str:
        return self.buffer[self.pointer + index]

    def _checked_peek(self, index: int = 0) -> str:
        self._check(self.pointer + index)
        return self.buffer[self.pointer + index]

    def prefix(self, length: int = 1) -> str:
        return self.buffer[self.pointer : self.pointer + length]

    def _checked_prefix(self, length: int = 1) -> str:
        self._check(self.pointer + length - 1)
        return self.buffer[self.pointer : self.pointer + length]

    def forward(self, length: int = 1) -> None:
        buffer = self.buffer
        while length:
            ch = buffer[self.pointer]
            self.pointer += 1
            self.index += 1
            if ch in "\n\x85\u2028\u2029" or (ch == "\r" and buffer[self.pointer] != "\n"):
                self.line += 1
                self.column = 0
            else:  # go-yaml counts a byte order mark as a column too
                self.column += 1
            length -= 1

    def get_mark(self) -> yaml.error.Mark:
        return yaml.error.Mark(self.name, self.index, self.line, self.column, None, None)  # type: ignore[arg-type]


# -- the scanner: go-yaml's differences from PyYAML -------------------------------------------


class _Scanner(_Reader, yaml.scanner.Scanner):
    # go-yaml's double-quoted escapes are libyaml's older set: ``\'`` is one, ``\/`` is not.
    ESCAPE_REPLACEMENTS = {  # type: ignore[misc]
        k: v for k, v in yaml.scanner.Scanner.ESCAPE_REPLACEMENTS.items() if k != "/"
    } | {"'": "'"}

    # PyYAML walks every flow level's possible simple key before each token, which made a
    # document nested 5,000 deep take seconds. Keys are saved in order (a level's old key
    # is removed first), so the first is the oldest: when it is neither on an earlier line
    # nor 1,024 characters back, none is stale, and it holds the lowest token number.
    def stale_possible_simple_keys(self) -> None:
        keys = self.possible_simple_keys
        if keys:
            oldest = next(iter(keys.values()))
            if oldest.line == self.line and self.index - oldest.index <= 1024:
                return
            # PyYAML's walk, except that go-yaml checks staleness through its token index
            # only, so a key it has lost from that index (_untracked, below) stays.
            for level, key in list(keys.items()):
                if key.token_number in self._untracked:
                    continue
                if key.line != self.line or self.index - key.index > 1024:
                    if key.required:
                        # go-yaml finds it only once the next token is fetched (that token's
                        # own error comes first), and names where that token ends.
                        if self._stale_required is None:
                            self._stale_required = key
                        continue
                    del keys[level]

    # go-yaml checks a possible simple key's staleness lazily: before fetching a token and
    # once it is fetched, with the mark where the scanner then stands. A required key gone
    # stale is kept here and refused at the next check, so an error in the token fetched
    # meanwhile comes first (``x:\n[\n"abc`` is "found unexpected end of stream"), and the
    # line named is where that token ends: after a multi-line scalar, or on the line
    # go-yaml moves to at the end of the input (``x:\n[\n#`` names line 4).
    _stale_required: Any

    def _refuse_stale(self) -> None:
        key = self._stale_required
        if key is not None:
            raise yaml.scanner.ScannerError(
                "while scanning a simple key", key.mark,
                "could not find expected ':'", self.get_mark(),
            )  # fmt: skip

    def need_more_tokens(self) -> bool:
        self._refuse_stale()
        need = bool(super().need_more_tokens())
        if not need:
            self._refuse_stale()
        return need

    def fetch_more_tokens(self) -> None:
        self._refuse_stale()
        super().fetch_more_tokens()

    # go-yaml quirk: its index from token number to possible simple key loses the key saved
    # at an opening bracket when the collection closes with no key saved inside it (``[]``,
    # ``{}``): the key stays possible but no longer holds the parser back. So ``a: 1\n[]x``
    # is "did not find expected key" at the bracket (not a scanner error a line later), and
    # in ``[]: v`` the ':' files its KEY token after tokens already parsed (appended, as
    # go-yaml's insert does for a negative position), so the document is ``[]``.
    _untracked: set[int]
    _flow_opened: list[list[Any]]

    def next_possible_simple_key(self) -> int | None:
        for key in self.possible_simple_keys.values():
            if not self._untracked or key.token_number not in self._untracked:
                return int(key.token_number)
        return None

    def save_possible_simple_key(self) -> None:
        if self.allow_simple_key and self._flow_opened:
            self._flow_opened[-1][1] = True  # a key saved inside the innermost collection
        super().save_possible_simple_key()

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level + 1 > MAX_DEPTH:
            mark = self.possible_simple_keys.get(self.flow_level)
            raise yaml.scanner.ScannerError(
                "while increasing flow level",
                mark.mark if mark is not None else self.get_mark(),
                f"exceeded max depth of {MAX_DEPTH}",
                self.get_mark(),
            )
        number = self.tokens_taken + len(self.tokens)
        super().fetch_flow_collection_start(TokenClass)
        self._flow_opened.append([number, False])

    def fetch_flow_collection_end(self, TokenClass: Any) -> None:
        number, saved = self._flow_opened.pop() if self._flow_opened else (None, True)
        super().fetch_flow_collection_end(TokenClass)
        if not saved:
            key = self.possible_simple_keys.get(self.flow_level)
            if key is not None and key.token_number == number:
                self._untracked.add(number)

    def fetch_value(self) -> None:
        key = self.possible_simple_keys.get(self.flow_level)
        if key is None or key.token_number >= self.tokens_taken:
            super().fetch_value()
            return
        # The key's token was already parsed: go-yaml appends KEY (and BLOCK-MAPPING-START).
        del self.possible_simple_keys[self.flow_level]
        self.tokens.append(yaml.tokens.KeyToken(key.mark, key.mark))
        if not self.flow_level and self.add_indent(key.column):
            self.tokens.append(yaml.tokens.BlockMappingStartToken(key.mark, key.mark))
        self.allow_simple_key = False
        start_mark = self.get_mark()
        self.forward()
        end_mark = self.get_mark()
        self.tokens.append(yaml.tokens.ValueToken(start_mark, end_mark))

    def unwind_indent(self, column: int) -> None:
        super().unwind_indent(column)
        if self._limit is not None and column >= 0:
            # Before each token go-yaml's fetch makes the reader decode 4 characters ahead,
            # so a bad byte up to 3 characters on is found before the token's own errors.
            self._check(self.pointer + 3)

    def add_indent(self, column: int) -> bool:
        if self.indent < column and len(self.indents) + 1 > MAX_DEPTH:
            key = self.possible_simple_keys.get(self.flow_level)
            raise yaml.scanner.ScannerError(
                "while increasing indent level",
                key.mark if key is not None else self.get_mark(),
                f"exceeded max depth of {MAX_DEPTH}",
                self.get_mark(),
            )
        return bool(super().add_indent(column))

    def scan_to_next_token(self) -> None:
        # go-yaml also skips tabs where a simple key cannot start (after a value indicator
        # on the same line, in flow context), where PyYAML skips only spaces.
        while True:
            if self.index == 0 and self.peek() == "\ufeff":  # only the stream's own BOM: later
                self.forward()  # ones are text (a plain scalar, or an error), as in go-yaml
            while self.peek() == " " or (
                self.peek() == "\t" and (self.flow_level or not self.allow_simple_key)
            ):
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0\r\n\x85\u2028\u2029":
                    self.forward()
            if self.scan_line_break():
                if not self.flow_level:
                    self.allow_simple_key = True
            else:
                return

    def scan_flow_scalar_non_spaces(self, double: bool, start_mark: Any) -> list[str]:
        if not double:
            return list(super().scan_flow_scalar_non_spaces(double, start_mark))
        chunks: list[str] = []
        while True:
            length = 0
            while self.peek(length) not in "'\"\\\0 \t\r\n\x85\u2028\u2029":
                length += 1
            if length:
                chunks.append(self.prefix(length))
                self.forward(length)
            ch = self.peek()
            if ch == "'":
                chunks.append(ch)
                self.forward()
            elif ch == "\\":
                self.forward()
                ch = self.peek()
                if ch in self.ESCAPE_REPLACEMENTS:
                    chunks.append(self.ESCAPE_REPLACEMENTS[ch])
                    self.forward()
                elif ch in self.ESCAPE_CODES:
                    width = self.ESCAPE_CODES[ch]
                    self.forward()
                    for k in range(width):
                        if self.peek(k) not in "0123456789ABCDEFabcdef":
                            raise yaml.scanner.ScannerError(
                                "while parsing a quoted scalar",
                                start_mark,
                                "did not find expected hexdecimal number",
                                self.get_mark(),
                            )
                    code = int(self.prefix(width), 16)
                    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                        raise yaml.scanner.ScannerError(
                            "while parsing a quoted scalar",
                            start_mark,
                            "found invalid Unicode character escape code",
                            self.get_mark(),
                        )
                    chunks.append(chr(code))
                    self.forward(width)
                elif ch in "\r\n\x85\u2028\u2029":
                    self.scan_line_break()
                    chunks.extend(self.scan_flow_scalar_breaks(double, start_mark))
                else:
                    raise yaml.scanner.ScannerError(
                        "while parsing a quoted scalar",
                        start_mark,
                        "found unknown escape character",
                        self.get_mark(),
                    )
            else:
                return chunks

    def fetch_stream_end(self) -> None:
        # go-yaml moves the mark to a new line first, so errors at the end name the next line,
        # and it drops only the current flow level's possible simple key: a required one left
        # on an earlier line at another level is then stale, which it refuses.
        if self.column != 0:
            self.column = 0
            self.line += 1
        self.unwind_indent(-1)
        self.remove_possible_simple_key()
        self.allow_simple_key = False
        self.stale_possible_simple_keys()
        self.possible_simple_keys = {}
        mark = self.get_mark()
        self.tokens.append(yaml.tokens.StreamEndToken(mark, mark))
        self.done = True

    def scan_block_scalar_indicators(self, start_mark: Any) -> Any:
        # go-yaml leaves what follows the indicators to the ignored-line check (so "|#c" is
        # a comment), where PyYAML wants a blank first.
        chomping = increment = None
        for _ in range(2):
            ch = self.peek()
            if ch in "+-" and chomping is None:
                chomping = ch == "+"
            elif ch in "0123456789" and increment is None:
                if ch == "0":
                    raise yaml.scanner.ScannerError(
                        "while scanning a block scalar",
                        start_mark,
                        "found an indentation indicator equal to 0",
                        self.get_mark(),
                    )
                increment = int(ch)
            else:
                break
            self.forward()
        return chomping, increment

    def scan_block_scalar_ignored_line(self, start_mark: Any) -> None:
        while self.peek() in " \t":
            self.forward()
        if self.peek() == "#":
            while self.peek() not in "\0\r\n\x85\u2028\u2029":
                self.forward()
        if self.peek() not in "\0\r\n\x85\u2028\u2029":
            raise yaml.scanner.ScannerError(
                "while scanning a block scalar",
                start_mark,
                "did not find expected comment or line break",
                self.get_mark(),
            )
        self.scan_line_break()

    _URI_CHARS = frozenset(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_;/?:@&=+$,.!~*'()[]%"
    )

    def scan_tag(self) -> Any:
        # go-yaml's tag grammar: a handle is '!' and word characters, closed by '!' when one
        # follows; otherwise those characters begin the suffix, which may then be empty ('!a'
        # and the non-specific '!'). A tag must end at a blank ('#' is no URI character).
        start_mark = self.get_mark()
        handle: str | None
        if self.peek(1) == "<":
            self.forward(2)
            suffix = self._go_tag_uri(None, start_mark)
            if self.peek() != ">":
                raise yaml.scanner.ScannerError(
                    "while scanning a tag", start_mark, "did not find the expected '>'",
                    self.get_mark(),
                )  # fmt: skip
            self.forward()
            handle = None
        else:
            length = 1
            while self.peek(length).isascii() and (
                self.peek(length).isalnum() or self.peek(length) in "-_"
            ):
                length += 1
            if self.peek(length) == "!":
                handle = self.prefix(length + 1)
                self.forward(length + 1)
                suffix = self._go_tag_uri(None, start_mark)
            else:
                head = self.prefix(length)
                self.forward(length)
                suffix = self._go_tag_uri(head, start_mark)
                handle = "!"
                if not suffix:
                    handle, suffix = None, "!"
        if self.peek() not in "\0 \t\r\n\x85\u2028\u2029":
            raise yaml.scanner.ScannerError(
                "while scanning a tag", start_mark,
                "did not find expected whitespace or line break", self.get_mark(),
            )  # fmt: skip
        return yaml.tokens.TagToken((handle, suffix), start_mark, self.get_mark())

    def scan_uri_escapes(self, name: str, start_mark: Any) -> str:
        # go-yaml: one UTF-8 sequence of %XX octets, its length read off the first octet.
        octets = bytearray()
        want = None
        while want is None or len(octets) < want:
            hexa = self.prefix(3)[1:]
            if (
                self.peek() != "%"
                or len(hexa) < 2
                or not all(c in "0123456789abcdefABCDEF" for c in hexa)
            ):
                self._uri_fault(start_mark, "did not find URI escaped octet")
            octet = int(hexa, 16)
            if want is None:
                want = (
                    1
                    if octet < 0x80
                    else 2
                    if 0xC0 <= octet < 0xE0
                    else (3 if 0xE0 <= octet < 0xF0 else 4 if 0xF0 <= octet < 0xF8 else 0)
                )
                if not want:
                    self._uri_fault(start_mark, "found an incorrect leading UTF-8 octet")
            elif octet & 0xC0 != 0x80:
                self._uri_fault(start_mark, "found an incorrect trailing UTF-8 octet")
            octets.append(octet)
            self.forward(3)
        return octets.decode("utf-8", "surrogateescape")

    def _uri_fault(self, start_mark: Any, problem: str) -> None:
        raise yaml.scanner.ScannerError("while parsing a tag", start_mark, problem, self.get_mark())

    def _go_tag_uri(self, head: str | None, start_mark: Any) -> str:
        chunks = [head[1:]] if head else []
        found = bool(head)
        while self.peek() in self._URI_CHARS:
            if self.peek() == "%":
                chunks.append(self.scan_uri_escapes("tag", start_mark))
            else:
                chunks.append(self.peek())
                self.forward()
            found = True
        if not found:
            raise yaml.scanner.ScannerError(
                "while parsing a tag", start_mark, "did not find expected tag URI", self.get_mark()
            )
        return "".join(chunks)

    def scan_directive(self) -> Any:
        start_mark = self.get_mark()
        token = super().scan_directive()
        if token.name not in ("YAML", "TAG"):
            raise yaml.scanner.ScannerError(
                "while scanning a directive", start_mark, "found unknown directive name", start_mark
            )
        return token

    def scan_directive_name(self, start_mark: Any) -> str:
        length = 0
        ch = self.peek(length)
        while "0" <= ch <= "9" or "A" <= ch <= "Z" or "a" <= ch <= "z" or ch in "-_":
            length += 1
            ch = self.peek(length)
        if not length:
            problem = "could not find expected directive name"
        elif ch not in "\0 \r\n\x85\u2028\u2029":
            problem = "found unexpected non-alphabetical character"
        else:
            value = self.prefix(length)
            self.forward(length)
            return value
        raise yaml.scanner.ScannerError(
            "while scanning a directive", start_mark, problem, self.get_mark()
        )

    def scan_plain(self) -> Any:
        # go-yaml's plain scalars: tabs are blanks inside them (PyYAML stops at a tab), a
        # tab indenting a continuation line is an error, and ':' ends one only before a
        # blank, in flow context too.
        chunks: list[str] = []
        start_mark = self.get_mark()
        end_mark = start_mark
        indent = self.indent + 1
        leading_blanks = False
        whitespaces = ""
        leading_break = ""
        trailing_breaks: list[str] = []
        blankz = "\0 \t\r\n\x85\u2028\u2029"
        while True:
            if self.column == 0 and self.prefix(3) in ("---", "...") and self.peek(3) in blankz:
                break
            if self.peek() == "#":
                break
            length = 0
            while True:
                ch = self.peek(length)
                if ch in blankz:
                    break
                if (ch == ":" and self.peek(length + 1) in blankz) or (
                    self.flow_level and ch in ",?[]{}"
                ):
                    break
                length += 1
            if length:
                if leading_blanks:
                    if leading_break == "\n":
                        chunks.append("".join(trailing_breaks) if trailing_breaks else " ")
                    else:
                        chunks.append(leading_break)
                        chunks.extend(trailing_breaks)
                    trailing_breaks = []
                    leading_break = ""
                    leading_blanks = False
                elif whitespaces:
                    chunks.append(whitespaces)
                    whitespaces = ""
                chunks.append(self.prefix(length))
                self.forward(length)
                end_mark = self.get_mark()
            ch = self.peek()
            if ch not in " \t\r\n\x85\u2028\u2029":
                break
            while ch in " \t\r\n\x85\u2028\u2029":
                if ch in " \t":
                    if leading_blanks and self.column < indent and ch == "\t":
                        raise yaml.scanner.ScannerError(
                            "while scanning a plain scalar",
                            start_mark,
                            "found a tab character that violates indentation",
                            self.get_mark(),
                        )
                    if not leading_blanks:
                        whitespaces += ch
                    self.forward()
                elif not leading_blanks:
                    whitespaces = ""
                    leading_break = self.scan_line_break()
                    leading_blanks = True
                else:
                    trailing_breaks.append(self.scan_line_break())
                ch = self.peek()
            if not self.flow_level and self.column < indent:
                break
        if leading_blanks:
            self.allow_simple_key = True
        return yaml.tokens.ScalarToken("".join(chunks), True, start_mark, end_mark)

    def _tab_in_indentation(self, indent: int) -> None:
        if (not indent or self.column < indent) and self.peek() == "\t":
            raise yaml.scanner.ScannerError(
                "while scanning a block scalar",
                self._block_start,
                "found a tab character where an indentation space is expected",
                self.get_mark(),
            )

    def scan_block_scalar(self, style: Any) -> Any:
        self._block_start = self.get_mark()
        return super().scan_block_scalar(style)

    def scan_block_scalar_indentation(self) -> Any:
        # go-yaml refuses a tab where the indentation of a block scalar is still being found.
        chunks = []
        max_indent = 0
        end_mark = self.get_mark()
        while True:
            while self.peek() == " ":
                self.forward()
            max_indent = max(max_indent, self.column)
            self._tab_in_indentation(0)
            if self.peek() not in "\r\n\x85\u2028\u2029":
                break
            chunks.append(self.scan_line_break())
            end_mark = self.get_mark()
        return chunks, max_indent, end_mark

    def scan_block_scalar_breaks(self, indent: int) -> Any:
        chunks = []
        end_mark = self.get_mark()
        while self.column < indent and self.peek() == " ":
            self.forward()
        self._tab_in_indentation(indent)
        while self.peek() in "\r\n\x85\u2028\u2029":
            chunks.append(self.scan_line_break())
            end_mark = self.get_mark()
            while self.column < indent and self.peek() == " ":
                self.forward()
            self._tab_in_indentation(indent)
        return chunks, end_mark


class _Loader(_Scanner, yaml.parser.Parser):
    def __init__(self, text: str, limit: int | None, reason: str) -> None:
        _Reader.__init__(self, text, limit, reason)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        self._untracked = set()
        self._flow_opened = []
        self._stale_required = None

    def process_directives(self) -> Any:
        # go-yaml takes %YAML 1.1 only (PyYAML any 1.x) and words the duplicates its way.
        self.yaml_version = None
        self.tag_handles: dict[str, str] = {}
        while self.check_token(yaml.tokens.DirectiveToken):
            token = self.get_token()
            if token.name == "YAML":
                if self.yaml_version is not None:
                    raise yaml.parser.ParserError(
                        None, None, "found duplicate %YAML directive", token.start_mark
                    )
                if tuple(token.value) != (1, 1):
                    raise yaml.parser.ParserError(
                        None, None, "found incompatible YAML document", token.start_mark
                    )
                self.yaml_version = token.value
            elif token.name == "TAG":
                handle, prefix = token.value
                if handle in self.tag_handles:
                    raise yaml.parser.ParserError(
                        None, None, "found duplicate %TAG directive", token.start_mark
                    )
                self.tag_handles[handle] = prefix
        value = self.yaml_version, (self.tag_handles.copy() if self.tag_handles else None)
        for key, prefix in self.DEFAULT_TAGS.items():
            self.tag_handles.setdefault(key, prefix)
        return value


# -- composing nodes (iterative) --------------------------------------------------------------

_SCALAR, _MAPPING, _SEQUENCE, _ALIAS = 0, 1, 2, 3


class _Node:
    __slots__ = ("children", "implicit", "kind", "line", "tag", "target", "value")

    def __init__(self, kind: int, tag: str, line: int) -> None:
        self.kind = kind
        self.tag = tag
        self.line = line
        self.value = ""
        self.implicit = False
        self.children: list[_Node] = []
        self.target: _Node | None = None


def _line(event: Any) -> int:
    return int(event.start_mark.line)


def _compose(loader: _Loader) -> _Node | None:
    """The next document's root node (None at the end of the stream)."""
    if loader.check_event(ev.StreamStartEvent):
        loader.get_event()
    if loader.check_event(ev.StreamEndEvent):
        return None
    loader.get_event()  # DocumentStartEvent
    anchors: dict[str, _Node] = {}
    stack: list[_Node] = []
    root: _Node | None = None
    while True:
        event = loader.get_event()
        if isinstance(event, ev.AliasEvent):
            node = _Node(_ALIAS, "", _line(event))
            node.value = str(event.anchor)
            target = anchors.get(node.value)
            if target is None:
                raise YAMLError(f"yaml: unknown anchor '{event.anchor}' referenced")
            node.target = target
        elif isinstance(event, ev.ScalarEvent):
            node = _Node(_SCALAR, event.tag or "", _line(event))
            node.value = event.value
            node.implicit = bool(event.implicit[0])
        elif isinstance(event, ev.SequenceStartEvent | ev.MappingStartEvent):
            kind = _SEQUENCE if isinstance(event, ev.SequenceStartEvent) else _MAPPING
            node = _Node(kind, event.tag or "", _line(event))
            node.implicit = bool(event.implicit)
        elif isinstance(event, ev.SequenceEndEvent | ev.MappingEndEvent):
            node = stack.pop()
            if not stack:
                root = node
                break
            continue
        else:  # pragma: no cover - the parser emits nothing else inside a document
            raise YAMLError("yaml: unexpected event")
        anchor = getattr(event, "anchor", None)
        if anchor is not None and not isinstance(event, ev.AliasEvent):
            anchors[anchor] = node
        if stack:
            stack[-1].children.append(node)
        if node.kind in (_SEQUENCE, _MAPPING):
            stack.append(node)
        elif not stack:
            root = node
            break
    loader.get_event()  # DocumentEndEvent
    return root


# -- decoding into Go values, then JSON data ----------------------------------------------------


class _GoUint(int):
    """A uint64 go-yaml decoded (above int64's range): a different map key type in Go."""


class _GoFloat(float):
    """A float64 go-yaml decoded (integral floats are distinct from ints as Go map keys)."""


_BASE_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _parse_go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``, then ``ParseUint(text, 0, 64)``; None if neither.

    ``text`` has no underscores (go-yaml removes them first).
    """
    body = text[1:] if text[:1] in ("+", "-") else text
    prefix = body[:2].lower()
    if prefix in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[prefix], body[2:]
    elif body[:1] == "0" and len(body) > 1:
        base, digits = 8, body[1:]
    else:
        base, digits = 10, body
    if not digits or digits.strip(_BASE_DIGITS[base]) or len(digits) > 70:
        return None
    value = int(digits, base)
    if text[:1] == "-":
        value = -value
    if -(1 << 63) <= value < (1 << 63):
        return value
    if text[:1] not in ("+", "-") and value < (1 << 64):
        return _GoUint(value)  # ParseUint takes no sign
    return None


_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_GO_FLOAT = re.compile(
    r"^[+-]?(?:(?:[0-9](?:_?[0-9])*)?\.?(?:[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?"
    r"|inf(?:inity)?|nan)$",
    re.IGNORECASE,
)

_RESOLVE_MAP: dict[str, tuple[str, Any]] = {}
for _words, _tag, _value in (
    (("y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"), _BOOL, True),
    (("n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"), _BOOL, False),
    (("", "~", "null", "Null", "NULL"), _NULL, None),
    ((".nan", ".NaN", ".NAN"), _FLOAT, _GoFloat(math.nan)),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), _FLOAT, _GoFloat(math.inf)),
    (("-.inf", "-.Inf", "-.INF"), _FLOAT, _GoFloat(-math.inf)),
    (("<<",), _MERGE, "<<"),
):
    for _word in _words:
        _RESOLVE_MAP[_word] = (_tag, _value)


def _hint(ch: str) -> str:
    if ch in "+-":
        return "S"
    if "0" <= ch <= "9":
        return "D"
    if ch in "yYnNtTfFoO~":
        return "M"
    if ch == ".":
        return "."
    return ""


def _go_parse_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)`` for decimal text, None on any error (range too)."""
    if not _GO_FLOAT.match(text) or not any(c.isdigit() for c in text):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isinf(value):
        return None  # ErrRange
    return value


def _resolve_implicit(text: str) -> tuple[str, Any]:
    hint = _hint(text[0]) if text else "M"
    if not hint:
        return _STR, text
    if text in _RESOLVE_MAP:
        return _RESOLVE_MAP[text]
    if hint == ".":
        value = _go_parse_float(text)
        if value is not None:
            return _FLOAT, _GoFloat(value)
    elif hint in ("D", "S"):
        if _looks_like_timestamp(text) and _parse_timestamp(text):
            return _TIMESTAMP, text
        plain = text.replace("_", "")
        as_int = _parse_go_int(plain)
        if as_int is not None:
            return _INT, as_int
        if _YAML_FLOAT.match(plain):
            value = _go_parse_float(plain)
            if value is not None:
                return _FLOAT, _GoFloat(value)
        if plain.startswith(("0b", "-0b")):
            neg = plain[0] == "-"
            digits = plain[3:] if neg else plain[2:]
            if digits and set(digits) <= {"0", "1"}:
                value_i = int(digits, 2) * (-1 if neg else 1)
                if -(1 << 63) <= value_i < (1 << 63):
                    return _INT, value_i
                if not neg and value_i < (1 << 64):
                    return _INT, _GoUint(value_i)
    return _STR, text


def _resolve(tag: str, text: str) -> tuple[str, Any]:
    """go-yaml v2's ``resolve``: the tag and Go value of a scalar."""
    if tag not in _RESOLVABLE:
        return tag, text
    if tag in (_STR, _BINARY):
        rtag, out = _STR, text
    else:
        rtag, out = _resolve_implicit(text)
        if rtag == _TIMESTAMP and tag not in ("", _TIMESTAMP):
            rtag, out = _STR, text
    if tag in ("", rtag, _STR, _BINARY):
        return rtag, out
    if tag == _FLOAT and rtag == _INT and not isinstance(out, _GoUint):
        return _FLOAT, _GoFloat(out)
    raise YAMLError(f"yaml: cannot decode {_short_tag(rtag)} `{text}` as a {_short_tag(tag)}")


def _short_tag(tag: str) -> str:
    prefix = "tag:yaml.org,2002:"
    return "!!" + tag[len(prefix) :] if tag.startswith(prefix) else tag


def _looks_like_timestamp(text: str) -> bool:
    return len(text) > 4 and text[:4].isdigit() and text[4] == "-"


_TS_FULL = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?P<sep>[Tt ])(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d+))?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})?)?$"
)


def _parse_timestamp(text: str) -> bool:
    """Whether go-yaml's timestamp layouts accept ``text`` (Go's ``time.Parse`` rules)."""
    match = _TS_FULL.match(text)
    if match is None:
        return False
    sep, zone = match.group("sep"), match.group("zone")
    if sep is not None and sep in "Tt" and zone is None:
        return False  # the T/t layouts need a zone; the space layout takes none
    if sep == " " and zone is not None:
        return False
    year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3))
    if not 1 <= month <= 12 or day < 1:
        return False
    days = (31, 29 if _leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if day > days:
        return False
    if sep is not None:
        hour, minute, second = int(match.group(5)), int(match.group(6)), int(match.group(7))
        if hour > 23 or minute > 59 or second > 59:
            return False
        if zone not in (None, "Z") and (int(zone[1:3]) > 23 or int(zone[4:6]) > 59):
            return False
        frac = match.group(8)
        if frac is not None and len(frac) > 9:
            return False
    return True


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _allowed_alias_ratio(decode_count: int) -> float:
    # go-yaml v2's guard against "billion laughs" documents.
    low, high = 400_000, 4_000_000
    if decode_count <= low:
        return 0.99
    if decode_count >= high:
        return 0.10
    return 0.99 - 0.89 * ((decode_count - low) / (high - low))


class _GoMap(dict[tuple[str, Any], Any]):
    """A ``map[interface{}]interface{}``: keys are ``(type, value)`` pairs, in insertion order."""


def _key_of(value: Any) -> tuple[str, Any]:
    if value is None:
        return ("nil", None)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, _GoUint):
        return ("uint64", int(value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float64", "nan" if math.isnan(value) else float(value))
    if isinstance(value, str):
        return ("string", value)
    raise YAMLError(f"yaml: invalid map key: {_go_sharp_v(value)}")


class _Decoder:
    """go-yaml v2's ``decoder`` into ``interface{}``, without recursion."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.terrors: list[str] = []
        self.decode_count = 0
        self.alias_count = 0

    def _count(self, alias_depth: int) -> None:
        self.decode_count += 1
        if alias_depth > 0:
            self.alias_count += 1
        if (
            self.alias_count > 100
            and self.decode_count > 1000
            and self.alias_count / self.decode_count > _allowed_alias_ratio(self.decode_count)
        ):
            raise YAMLError("yaml: document contains excessive aliasing")

    def scalar(self, node: _Node) -> Any:
        if node.tag == "" and not node.implicit:
            return node.value
        tag, resolved = _resolve(node.tag, node.value)
        if tag == _BINARY:
            try:
                raw = base64.b64decode(resolved, validate=True)
            except (binascii.Error, ValueError):
                raise YAMLError("yaml: !!binary value contains invalid base64 data") from None
            return _go_bytes_to_str(raw)
        if tag == _TIMESTAMP:
            return node.value
        return resolved

    def decode(self, root: _Node) -> Any:
        """The Go value of ``root`` (maps as :class:`_GoMap`)."""
        # Work items: (node, alias_depth, setter) where setter stores the decoded value.
        result: list[Any] = [None]
        active_aliases: set[int] = set()
        work: list[Any] = [("node", root, 0, result, 0)]
        while work:
            item = work.pop()
            op = item[0]
            if op == "node":
                _, node, depth, holder, slot = item
                self._count(depth)
                if node.kind == _ALIAS:
                    target = node.target
                    if id(target) in active_aliases:
                        raise YAMLError(f"yaml: anchor '{node.value}' value contains itself")
                    active_aliases.add(id(target))
                    # go-yaml counts the alias, then its target as one decode under an alias
                    work.append(("unalias", id(target)))
                    work.append(("node", target, depth + 1, holder, slot))
                elif node.kind == _SCALAR:
                    holder[slot] = self.scalar(node)
                elif node.kind == _SEQUENCE:
                    out: list[Any] = [None] * len(node.children)
                    holder[slot] = out
                    for i in range(len(node.children) - 1, -1, -1):
                        work.append(("node", node.children[i], depth, out, i))
                else:
                    mapping = holder[slot] if isinstance(holder[slot], _GoMap) else _GoMap()
                    holder[slot] = mapping
                    work.append(("map", node, depth, mapping, 0))
            elif op == "unalias":
                active_aliases.discard(item[1])
            elif op == "map":
                _, node, depth, mapping, index = item
                children = node.children
                if index >= len(children):
                    continue
                key_node, value_node = children[index], children[index + 1]
                work.append(("map", node, depth, mapping, index + 2))
                if _is_merge(key_node):
                    self._merge(value_node, depth, mapping, work)
                    continue
                box: list[Any] = [None, None]
                work.append(("setitem", mapping, box, value_node))
                work.append(("node", value_node, depth, box, 1))
                work.append(("key", box))
                work.append(("node", key_node, depth, box, 0))
            elif op == "key":
                _key_of(item[1][0])  # refuses sequence and mapping keys before the value
            elif op == "setitem":
                _, mapping, box, value_node = item
                key = _key_of(box[0])
                if self.strict and key in mapping:
                    # YAMLToJSONStrict's error; the value still replaces the earlier one, as
                    # in YAMLToJSON, whose data the caller decodes.
                    self.terrors.append(
                        f"line {value_node.line + 1}: key {_go_sharp_v(box[0])} already set in map"
                    )
                mapping[key] = box[1]
        return result[0]

    def _merge(self, node: _Node, depth: int, mapping: _GoMap, work: list[Any]) -> None:
        def want_map() -> YAMLError:
            return YAMLError("yaml: map merge requires map or sequence of maps as the value")

        if node.kind == _MAPPING:
            work.append(("node", node, depth, [mapping], 0))
        elif node.kind == _ALIAS:
            assert node.target is not None
            if node.target.kind != _MAPPING:
                raise want_map()
            work.append(("node", node, depth, [mapping], 0))
        elif node.kind == _SEQUENCE:
            for child in node.children:  # later entries first: earlier ones take precedence
                target = child.target if child.kind == _ALIAS else child
                if target is None or target.kind != _MAPPING:
                    raise want_map()
            for child in node.children:
                work.append(("node", child, depth, [mapping], 0))
        else:
            raise want_map()


def _is_merge(node: _Node) -> bool:
    return node.kind == _SCALAR and node.value == "<<" and (node.implicit or node.tag == _MERGE)


def _go_bytes_to_str(raw: bytes) -> str:
    """A Go string holding ``raw`` as ``encoding/json`` writes it: U+FFFD per invalid byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out = []
    i = 0
    while i < len(raw):
        for width in (1, 2, 3, 4):
            chunk = raw[i : i + width]
            try:
                out.append(chunk.decode("utf-8"))
            except UnicodeDecodeError:
                continue
            i += width
            break
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


# -- Go's fmt %#v and strconv, for keys and error texts ---------------------------------------


def _go_format_g(value: float, bits: int) -> str:
    """``strconv.FormatFloat(value, 'g', -1, bits)``: the shortest text naming the float."""
    if bits == 64:
        f32 = value
    else:
        try:
            f32 = struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            f32 = math.copysign(math.inf, value)
    if math.isnan(f32):
        return "NaN"
    if math.isinf(f32):
        return "+Inf" if f32 > 0 else "-Inf"
    if f32 == 0:
        return "-0" if math.copysign(1.0, f32) < 0 else "0"
    for precision in range(0, 17):
        text = f"{abs(f32):.{precision}e}"
        back = float(text)
        if bits == 32:
            back = struct.unpack("<f", struct.pack("<f", back))[0]
        if back == abs(f32):
            break
    mantissa, exp_text = text.split("e")
    exponent = int(exp_text)
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    sign = "-" if f32 < 0 else ""
    if exponent < -4 or exponent >= 6:  # shortest %g decides with precision 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent >= len(digits) - 1:
        return sign + digits + "0" * (exponent - len(digits) + 1)
    if exponent >= 0:
        return sign + digits[: exponent + 1] + "." + digits[exponent + 1 :]
    return sign + "0." + "0" * (-exponent - 1) + digits


def _go_float64_sharp_v(value: float) -> str:
    """``fmt.Sprintf("%#v", float64)``: ``strconv.FormatFloat(value, 'g', -1, 64)``."""
    return _go_format_g(value, 64)


def _go_sharp_v(value: Any, nested: bool = False) -> str:
    """Go's ``%#v`` of a decoded YAML value (as ``%+#v`` prints the same for these types).

    A nil interface prints ``<nil>`` on its own and ``interface {}(nil)`` inside a slice or map.
    """
    if value is None:
        return "interface {}(nil)" if nested else "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _GoUint):
        return f"0x{int(value):x}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float64_sharp_v(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp_v(v, True) for v in value) + "}"
    if isinstance(value, _GoMap):
        items = sorted(value.items(), key=lambda kv: _go_key_order(kv[0]))
        inner = ", ".join(
            f"{'interface {}(nil)' if k[0] == 'nil' else _go_sharp_v(_GoUint(k[1]) if k[0] == 'uint64' else k[1], True)}:{_go_sharp_v(v, True)}"
            for k, v in items
        )
        return "map[interface {}]interface {}{" + inner + "}"
    return str(value)


def _go_key_order(key: tuple[str, Any]) -> tuple[Any, ...]:
    # fmt sorts interface keys by type first (in a fixed order), then by value.
    kind, value = key
    # Go orders by the address of each type's descriptor; this is the order seen in
    # sigs.k8s.io/yaml's errors.
    order = {"nil": 0, "string": 1, "int": 2, "float64": 3, "bool": 4, "uint64": 5}
    return (order.get(kind, 9), "" if value is None else value)


# -- YAMLToJSON ---------------------------------------------------------------------------------


#: sigs.k8s.io/yaml's text for a map key JSON cannot hold (``convertToJSONableObject`` in
#: kubernetes-sigs/yaml ``yaml.go``), by release: capitalised up to v1.3.0 (Debian's
#: golang-k8s-sigs-yaml-dev, which ``tests/differential`` builds its oracle against), lower
#: case in the release Kubernetes 1.34 and later vendor (Go's error-string style; read in
#: kubernetes-sigs/yaml's source, not run here).
UNSUPPORTED_MAP_KEY = {
    "v1.3.0": "Unsupported map key of type",
    "kubernetes-1.34": "unsupported map key of type",
}
#: The release credprov words errors as: the one current kubelets vendor.
SIGS_YAML_RELEASE = "kubernetes-1.34"


def _key_string(kind: str, value: Any, raw_value: Any) -> str:
    if kind == "string":
        return str(value)
    if kind == "int":
        return str(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float64":
        text = _go_format_g(float("nan") if value == "nan" else value, 32)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    type_name = "%!s(<nil>)" if kind == "nil" else kind
    key_text = "<nil>" if kind == "nil" else _go_sharp_v(_GoUint(value))
    raise YAMLError(
        f"{UNSUPPORTED_MAP_KEY[SIGS_YAML_RELEASE]}: {type_name}, key: {key_text}, "
        f"value: {_go_sharp_v(raw_value)}"
    )


def _json_int(value: float) -> int:
    """The integer ``encoding/json`` writes for an integral float: its shortest digits."""
    text = repr(value)
    if "e" not in text:
        return int(value)
    mantissa, exponent = text.split("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    return int(digits + "0" * (int(exponent) - len(frac)))


def _to_json(value: Any) -> tuple[Any, int]:
    """``convertToJSONableObject``, ``json.Marshal``, then decoding: JSON data and its depth.

    Keys become strings (numbers written as Go writes them) and are sorted as
    ``encoding/json`` writes a ``map[string]interface{}``; floats that Go writes without a
    fraction or exponent come back as ints, as a JSON decoder reads them. A key of another
    type fails the conversion before anything is written; then NaN and infinities fail
    ``json.Marshal``, the first one in the written order.
    """
    max_depth = 0
    unsupported: str | None = None
    result: list[Any] = [None]
    work: list[tuple[Any, Any, Any, int]] = [(value, result, 0, 0)]
    while work:
        item, holder, slot, depth = work.pop()
        if isinstance(item, _GoMap):
            depth += 1
            max_depth = max(max_depth, depth)
            converted: dict[str, Any] = {}
            for (kind, key), sub in item.items():
                converted[_key_string(kind, key, sub)] = sub
            out = dict.fromkeys(sorted(converted))
            holder[slot] = out
            for key in reversed(list(out)):
                work.append((converted[key], out, key, depth))
        elif isinstance(item, list):
            depth += 1
            max_depth = max(max_depth, depth)
            seq: list[Any] = [None] * len(item)
            holder[slot] = seq
            for i in range(len(item) - 1, -1, -1):
                work.append((item[i], seq, i, depth))
        elif isinstance(item, float):
            if math.isnan(item) or math.isinf(item):
                if unsupported is None:
                    unsupported = "NaN" if math.isnan(item) else ("+Inf" if item > 0 else "-Inf")
                holder[slot] = None
            elif item == int(item) and abs(item) < 1e21:
                holder[slot] = _json_int(item)
            else:
                holder[slot] = float(item)
        elif isinstance(item, _GoUint):
            holder[slot] = int(item)
        else:
            holder[slot] = item
    if unsupported is not None:
        raise YAMLError(f"json: unsupported value: {unsupported}")
    return result[0], max_depth


# PyYAML's problem texts where libyaml's (and so go-yaml's) differ, by PyYAML's text up to
# the first quote or comma.
_PROBLEMS = {
    "found character %r that cannot start any token": "found character that cannot start any token",
    "mapping values are not allowed here": "mapping values are not allowed in this context",
    "mapping keys are not allowed here": "mapping keys are not allowed in this context",
    "block sequence entries are not allowed here": (
        "block sequence entries are not allowed in this context"
    ),
    "found unexpected document separator": "found unexpected document indicator",
    "sequence entries are not allowed here": "block sequence entries are not allowed in this context",
    "expected '<document start>', but found %r": "did not find expected <document start>",
    "expected the node content, but found %r": "did not find expected node content",
    "expected ',' or ']', but got %r": "did not find expected ',' or ']'",
    "expected ',' or '}', but got %r": "did not find expected ',' or '}'",
    "expected chomping or indentation indicators, but found %r": (
        "did not find expected comment or line break"
    ),
    "expected indentation indicator in the range 1-9, but found 0": (
        "found an indentation indicator equal to 0"
    ),
    "expected ' ', but found %r": "did not find expected whitespace or line break",
    "expected alphabetic or numeric character, but found %r": (
        "did not find expected alphabetic or numeric character"
    ),
    "expected a comment or a line break, but found %r": (
        "did not find expected comment or line break"
    ),
    "found undefined tag handle %r": "found undefined tag handle",
    "expected URI escape sequence of 2 hexadecimal numbers, but found %r": (
        "did not find URI escaped octet"
    ),
}
_BLOCK_END = {
    "while parsing a block collection": "did not find expected '-' indicator",
    "while parsing a block mapping": "did not find expected key",
}
_PATTERNS = [
    (re.compile(pyyaml.replace("%r", "(?:'.*'|\".*\")")), go) for pyyaml, go in _PROBLEMS.items()
]


def _go_problem(exc: yaml.error.MarkedYAMLError) -> str:
    problem = exc.problem or "unknown problem parsing YAML content"
    if problem.startswith("expected <block end>, but found"):
        return _BLOCK_END.get(exc.context or "", problem)
    for pattern, go in _PATTERNS:
        if pattern.fullmatch(problem):
            return go
    return problem


def _fault(exc: yaml.error.MarkedYAMLError) -> YAMLError:
    """go-yaml's ``yaml: line N: <problem>`` for a scanner or parser error.

    go-yaml names the problem's line (one more for scanner errors, whose marks have not
    moved past the line yet), else the context's, and no line when that is the first.
    """
    scanner = isinstance(exc, yaml.scanner.ScannerError)
    line = 0
    if exc.problem_mark is not None and exc.problem_mark.line != 0:
        line = exc.problem_mark.line + (1 if scanner else 0)
    elif exc.context_mark is not None and exc.context_mark.line != 0:
        line = exc.context_mark.line
    problem = _go_problem(exc)
    if line:
        return YAMLError(f"yaml: line {line}: {problem}", line)
    return YAMLError(f"yaml: {problem}")


def _documents(data: bytes | str, strict: bool, first_only: bool) -> tuple[list[Any], list[str]]:
    text, limit, reason = _decode(data)
    out: list[Any] = []
    terrors: list[str] = []
    try:
        loader = _Loader(text, limit, reason)
        while True:
            root = _compose(loader)
            if root is None:
                if not out:
                    out.append(None)
                break
            decoder = _Decoder(strict)
            out.append(decoder.decode(root))
            terrors.extend(decoder.terrors)
            if first_only:
                break
    except _ReaderFault as exc:
        raise YAMLError(f"yaml: {exc.message}") from None
    except yaml.error.MarkedYAMLError as exc:
        raise _fault(exc) from None
    return out, terrors


def yaml_to_json(data: bytes | str) -> tuple[Any, int, list[str]]:
    """``sigs.k8s.io/yaml.YAMLToJSON`` of the first document, decoded back to JSON data.

    Returns:
        ``(data, depth, duplicate_key_lines)``: ``depth`` is the JSON text's nesting (the
        caller's JSON decoder refuses more than 10,000); the duplicate keys are what
        ``YAMLToJSONStrict`` reports (``line N: key "k" already set in map``), which
        apimachinery's strict decoding adds to its strict errors.

    Raises:
        YAMLError: go-yaml's or the JSON conversion's error text, as ``YAMLToJSON`` returns
            it (``yaml: line 2: found unexpected end of stream``; no prefix).
    """
    docs, terrors = _documents(data, strict=True, first_only=True)
    value, depth = _to_json(docs[0])
    return value, depth, terrors


def yaml_to_json_strict(data: bytes | str) -> Any:
    """``sigs.k8s.io/yaml.YAMLToJSONStrict``: as :func:`yaml_to_json`, duplicates refused.

    Raises:
        YAMLError: ``yaml: unmarshal errors:`` and a line per duplicate key, or any error
            :func:`yaml_to_json` raises (go-yaml's before the conversion's).
    """
    docs, terrors = _documents(data, strict=True, first_only=True)
    if terrors:
        raise YAMLError("yaml: unmarshal errors:\n  " + "\n  ".join(terrors))
    return _to_json(docs[0])[0]


def load_all(data: bytes | str) -> list[Any]:
    """Every document of a YAML stream, each converted as :func:`yaml_to_json` converts one.

    Raises:
        YAMLError: as :func:`yaml_to_json`; ``line`` says where when go-yaml knows.
    """
    docs, _ = _documents(data, strict=False, first_only=False)
    return [_to_json(doc)[0] for doc in docs]
