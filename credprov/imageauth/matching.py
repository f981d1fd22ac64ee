"""Registry/image URL matching, as the kubelet's ``pkg/credentialprovider/keyring.go``.

Mirrors ``ParseSchemelessURL``, ``SplitURL``, ``URLsMatch`` and ``URLsMatchStr``:

* a string is parsed as Go's ``url.Parse("https://" + s)`` with the scheme cleared;
* the host is split with ``net.SplitHostPort`` (falling back to ``(host, "")``) and
  then on ``.`` into labels;
* a glob matches a target when the ports are equal (in both directions), the label
  counts are equal, the target path starts with the glob path (plain string prefix,
  so ``/pong`` matches ``/pongz``), and every glob label matches its target label
  under Go's ``path/filepath.Match`` (``*``, ``?``, ``[...]``, ``[^...]``, ``\\``;
  case-sensitive). A malformed label pattern is ``filepath.ErrBadPattern``.

``urls_match_str`` runs for every (key, image) pair of a keyring lookup, so parsed
strings are cached and glob labels are compiled once to regular expressions that
are equivalent to ``filepath.Match``. ``filepath_match`` is the literal port of the
Go algorithm, kept as the reference the compiled form is tested against.

Strings are parsed as the Go release the process follows (:func:`credprov._go.version.use_go`)
parses them: brackets and colons in a host depend on it.

Non-ASCII labels are matched per code point where Go matches per byte or rune; the
two agree on valid UTF-8, which is all an image name can hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from credprov._go import version as _go_version
from credprov._go.fmt import go_quote
from credprov._go.url import AddrError, GoURL, GoURLError, parse, split_host_port
from credprov._go.version import GoRelease
from credprov.errors import CredentialProviderError

#: Go's ``url.Parse``, public for plugins that must parse image references as upstream does.
parse_url = parse

__all__ = [
    "GoURLError",
    "MatchExplanation",
    "MatchPatternError",
    "explain_match",
    "filepath_match",
    "host_match_paths",
    "parse_schemeless_url",
    "parse_url",
    "split_plain_target",
    "split_url",
    "urls_match",
    "urls_match_str",
]

_SEPARATOR = "/"


class MatchPatternError(CredentialProviderError, ValueError):
    """Go's ``filepath.ErrBadPattern``."""

    def __init__(self) -> None:
        super().__init__("syntax error in pattern")


@dataclass(frozen=True, slots=True)
class MatchExplanation:
    """Whether a glob matches an image, and if not, the first reason why."""

    matched: bool
    reason: str


def parse_schemeless_url(s: str, *, go_version: str | GoRelease | None = None) -> GoURL:
    """``ParseSchemelessURL``: Go ``url.Parse("https://" + s)``, scheme cleared, as the Go
    release ``go_version`` parses it (None: the one the process follows; see
    :mod:`credprov._go.version`).

    Raises:
        GoURLError: e.g. ``parse "https://%invalid%": invalid URL escape "%in"``.
    """
    return replace(parse("https://" + s, go_version=go_version), scheme="")


def split_url(u: GoURL) -> tuple[list[str], str]:
    """``SplitURL``: the host's ``.``-separated labels and the port."""
    try:
        host, port = split_host_port(u.host)
    except AddrError:
        host, port = u.host, ""
    return host.split("."), port


# --- path/filepath.Match ---------------------------------------------------------


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    star = False
    while pattern.startswith("*"):
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            # A trailing backslash is left for matchChunk to reject.
            if i + 1 < n:
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _is_escaped_byte(ch: str) -> bool:
    # surrogateescape stores a byte that is not valid UTF-8 as U+DC80..U+DCFF.
    return "\udc80" <= ch <= "\udcff"


def _get_esc(chunk: str) -> tuple[str, str]:
    if not chunk or chunk[0] in "-]":
        raise MatchPatternError
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise MatchPatternError
    r = chunk[0]
    rest = chunk[1:]
    if _is_escaped_byte(r) or not rest:
        raise MatchPatternError
    return r, rest


def _match_chunk(chunk: str, s: str) -> tuple[str, bool]:
    # Once the match has failed, keep walking the chunk so that a malformed pattern
    # is reported whatever the name is.
    failed = False
    while chunk:
        if not failed and not s:
            failed = True
        c = chunk[0]
        if c == "[":
            r = ""
            if not failed:
                r = s[0]
                s = s[1:]
                if _is_escaped_byte(r):
                    r = "\ufffd"  # Go decodes an invalid byte as RuneError.
            chunk = chunk[1:]
            negated = False
            if chunk.startswith("^"):
                negated = True
                chunk = chunk[1:]
            matched = False
            nrange = 0
            while True:
                if chunk.startswith("]") and nrange > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk = _get_esc(chunk)
                hi = lo
                if chunk[0] == "-":
                    hi, chunk = _get_esc(chunk[1:])
                if r and lo <= r <= hi:
                    matched = True
                nrange += 1
            if matched == negated:
                failed = True
        elif c == "?":
            if not failed:
                if s[0] == _SEPARATOR:
                    failed = True
                s = s[1:]
            chunk = chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise MatchPatternError
            if not failed:
                if chunk[0] != s[0]:
                    failed = True
                s = s[1:]
            chunk = chunk[1:]
    if failed:
        return "", False
    return s, True


def filepath_match(pattern: str, name: str) -> bool:
    """Go's ``path/filepath.Match`` on Unix, step for step.

    Raises:
        MatchPatternError: the pattern is malformed (``filepath.ErrBadPattern``).
    """
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            # A trailing star matches the rest of the name unless it holds a '/'.
            return _SEPARATOR not in name
        rest, ok = _match_chunk(chunk, name)
        # The last chunk must use up the name; otherwise try again after the star.
        if ok and (not rest or pattern):
            name = rest
            continue
        if star:
            found = False
            i = 0
            while i < len(name) and name[i] != _SEPARATOR:
                rest, ok = _match_chunk(chunk, name[i + 1 :])
                if ok and (pattern or not rest):
                    name = rest
                    found = True
                    break
                i += 1
            if found:
                continue
        # Report a malformed remainder of the pattern rather than a plain "no".
        while pattern:
            _, chunk, pattern = _scan_chunk(pattern)
            _match_chunk(chunk, "")
        return False
    return not name


# --- compiled label matchers -----------------------------------------------------


def _class_char(ch: str) -> str:
    return f"\\U{ord(ch):08x}"


def _chunk_regex(chunk: str) -> str:
    """Translate one well-formed chunk to a regex, token for token."""
    out: list[str] = []
    i = 0
    while i < len(chunk):
        c = chunk[i]
        if c == "[":
            i += 1
            negated = chunk.startswith("^", i)
            if negated:
                i += 1
            ranges: list[str] = []
            nrange = 0
            while not (chunk[i] == "]" and nrange > 0):
                if chunk[i] == "\\":
                    i += 1
                lo = chunk[i]
                i += 1
                hi = lo
                if chunk[i] == "-":
                    i += 1
                    if chunk[i] == "\\":
                        i += 1
                    hi = chunk[i]
                    i += 1
                # Go silently ignores an inverted range; Python's re would reject it.
                if lo <= hi:
                    ranges.append(f"{_class_char(lo)}-{_class_char(hi)}")
                nrange += 1
            i += 1
            body = "".join(ranges)
            if not body:
                out.append("[\\s\\S]" if negated else "(?!)")
            else:
                out.append(f"[^{body}]" if negated else f"[{body}]")
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            if c == "\\":
                i += 1
            out.append(re.escape(chunk[i]))
            i += 1
    return "".join(out)


def _glob_regex(pattern: str) -> str:
    parts: list[str] = []
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star:
            parts.append("[^/]*")
        parts.append(_chunk_regex(chunk))
    return "".join(parts)


_GLOB_CHARS = frozenset("*?[\\")


@dataclass(frozen=True, slots=True)
class _Label:
    """One glob host label, ready to test many target labels."""

    pattern: str
    bad: bool
    literal: bool
    fullmatch: Callable[[str], re.Match[str] | None] | None

    def match(self, name: str) -> bool:
        if self.bad:
            raise MatchPatternError
        if self.literal:
            return self.pattern == name
        if self.fullmatch is None or not name.isascii() or _SEPARATOR in name:
            # The regex is exact only for ASCII names without '/': Go places chunks
            # leftmost and lets a class consume '/', which a regex would backtrack
            # over. Host labels never hold '/', so this is the cold path.
            return filepath_match(self.pattern, name)
        return self.fullmatch(name) is not None


@lru_cache(maxsize=8192)
def _label(pattern: str) -> _Label:
    if _GLOB_CHARS.isdisjoint(pattern):
        return _Label(pattern, bad=False, literal=True, fullmatch=None)
    try:
        # ErrBadPattern does not depend on the name, so one probe settles it.
        filepath_match(pattern, "")
    except MatchPatternError:
        return _Label(pattern, bad=True, literal=False, fullmatch=None)
    if any(_is_escaped_byte(ch) for ch in pattern):
        return _Label(pattern, bad=False, literal=False, fullmatch=None)
    compiled = re.compile(_glob_regex(pattern), re.DOTALL)
    return _Label(pattern, bad=False, literal=False, fullmatch=compiled.fullmatch)


# --- URLsMatch -------------------------------------------------------------------


def _has_prefix(s: str, prefix: str) -> bool:
    if prefix.isascii():
        return s.startswith(prefix)
    # Go compares bytes; a prefix can end inside a UTF-8 sequence.
    return s.encode("utf-8", "surrogateescape").startswith(
        prefix.encode("utf-8", "surrogateescape")
    )


def urls_match(glob_url: GoURL, target_url: GoURL) -> bool:
    """``URLsMatch``: whether ``target_url`` matches ``glob_url``.

    Raises:
        MatchPatternError: a glob host label reached during matching is malformed.
    """
    glob_parts, glob_port = split_url(glob_url)
    target_parts, target_port = split_url(target_url)
    if glob_port != target_port:
        return False
    if len(glob_parts) != len(target_parts):
        return False
    if not _has_prefix(target_url.path, glob_url.path):
        return False
    return all(_label(g).match(t) for g, t in zip(glob_parts, target_parts, strict=True))


@dataclass(frozen=True, slots=True)
class _Parsed:
    """A parsed, split string with its host labels compiled as glob patterns."""

    url: GoURL | None
    error: GoURLError | None
    parts: tuple[str, ...]
    port: str
    path: str
    path_ascii: bool
    labels: tuple[_Label, ...]


def _parsed(s: str) -> _Parsed:
    # current_go() without the call: this runs twice per (key, image) pair of a lookup.
    return _parsed_as(s, _go_version._current)


@lru_cache(maxsize=65536)
def _parsed_as(s: str, release: GoRelease) -> _Parsed:
    try:
        url = parse_schemeless_url(s, go_version=release)
    except GoURLError as err:
        return _Parsed(None, err, (), "", "", True, ())
    parts, port = split_url(url)
    labels = tuple(_label(p) for p in parts)
    return _Parsed(url, None, tuple(parts), port, url.path, url.path.isascii(), labels)


def urls_match_str(glob: str, target: str) -> bool:
    """``URLsMatchStr`` as callers use it: parse errors and bad patterns are no match."""
    g = _parsed(glob)
    t = _parsed(target)
    if g.url is None or t.url is None or g.port != t.port:
        return False
    parts = t.parts
    if len(g.labels) != len(parts):
        return False
    prefix = g.path
    if prefix and not (t.path.startswith(prefix) if g.path_ascii else _has_prefix(t.path, prefix)):
        return False
    try:
        for label, part in zip(g.labels, parts, strict=True):
            if not (label.pattern == part if label.literal else label.match(part)):
                return False
    except MatchPatternError:
        return False
    return True


# Characters that make Go's url.Parse treat a target other than "authority, then a verbatim
# path": a fragment, a query, an escape, spaces, controls and anything non-ASCII.
_NOT_PLAIN = re.compile(r"[^\x21-\x7e]|[#%?]")


def split_plain_target(target: str) -> tuple[str, str] | None:
    """``(authority, path)`` of a target whose parse is plain, else None.

    For such a target ``url.Parse("https://" + target)`` reads everything up to the first
    ``/`` as the authority and the rest, verbatim, as the path. So ``urls_match_str(glob,
    target)`` is ``host_match_paths((glob,), authority)`` holding a prefix of the path: the
    host part of a match can be worked out once per registry instead of once per image.
    Every normalised image name (``parse_image_name``) is plain.
    """
    if _NOT_PLAIN.search(target) is not None:
        return None
    slash = target.find("/")
    if slash < 0:
        return target, ""
    return target[:slash], target[slash:]


def host_match_paths(globs: tuple[str, ...] | list[str], authority: str) -> tuple[str, ...]:
    """The paths of the ``globs`` whose host and port match ``authority``, in order.

    ``urls_match_str(glob, target)`` for a plain target (see :func:`split_plain_target`)
    is true exactly when the glob's path is in this tuple and is a prefix of the target's
    path (``""`` is a prefix of everything). Parse errors and bad patterns never match.
    """
    t = _parsed(authority)
    if t.url is None:
        return ()
    out = []
    for glob in globs:
        g = _parsed(glob)
        if g.url is None or g.port != t.port or len(g.labels) != len(t.parts):
            continue
        try:
            if all(
                label.pattern == part if label.literal else label.match(part)
                for label, part in zip(g.labels, t.parts, strict=True)
            ):
                out.append(g.path)
        except MatchPatternError:
            continue
    return tuple(out)


def explain_match(glob: str, target: str) -> MatchExplanation:
    """Match like ``urls_match_str`` and say why not, checking in ``URLsMatch`` order."""
    g = _parsed(glob)
    if g.error is not None:
        return MatchExplanation(False, f"pattern is invalid: {g.error}")
    t = _parsed(target)
    if t.error is not None:
        return MatchExplanation(False, f"image is invalid: {t.error}")
    if g.port != t.port:
        return MatchExplanation(
            False, f"port {go_quote(g.port)} in pattern, {go_quote(t.port)} in image"
        )
    if len(g.parts) != len(t.parts):
        return MatchExplanation(
            False, f"pattern has {len(g.parts)} host labels, image has {len(t.parts)}"
        )
    if not _has_prefix(t.path, g.path):
        return MatchExplanation(
            False,
            f"image path {go_quote(t.path)} does not start with pattern path {go_quote(g.path)}",
        )
    for n, (label, part) in enumerate(zip(g.labels, t.parts, strict=True), 1):
        try:
            ok = label.match(part)
        except MatchPatternError as err:
            return MatchExplanation(
                False, f"host label {n} pattern {go_quote(label.pattern)}: {err}"
            )
        if not ok:
            return MatchExplanation(
                False,
                f"host label {n} pattern {go_quote(label.pattern)} does not match {go_quote(part)}",
            )
    return MatchExplanation(True, "pattern matches image")
