"""A faithful subset of Go's ``net/url.Parse`` and ``net.SplitHostPort``.

The kubelet validates ``matchImages`` and matches registry keys by calling
``url.Parse("https://" + s)`` (``ParseSchemelessURL``) and ``net.SplitHostPort``
(``SplitURL``). This module reproduces what those two functions accept, what they
return and the exact text of their errors, so that ``credprov`` rejects and matches the
same strings as the kubelet and reports the same messages.

Mirrored behaviour, per Go release (``parse(..., go_version=...)``; which releases differ
and how, and the default with its reasons, are in :mod:`credprov._go.version`):

* ``#fragment`` is cut first; ``?query`` is split off raw; the path is unescaped.
* ``userinfo@`` is validated and dropped from the host (only its presence is kept).
* The port must be digits or empty. It follows the **last** ``:`` of the host, except from
  Go 1.26 on (``urlstrictcolons``), where it follows the **first** one in an http(s) URL
  (1.26.0 and 1.26.1: in every URL but ``postgres://`` and ``postgresql://``), so
  ``a:1:2`` is an error.
* ``%XX`` escapes must be well formed; in the host only non-ASCII bytes (or ``%25``)
  may be escaped, and ASCII outside unreserved/sub-delims/``:[]<>"`` is rejected.
* ASCII control characters anywhere are rejected.
* Brackets: up to Go 1.24.7 and 1.25.1 they are special only at the start of the host
  (``[::1]:80``, RFC 6874 zones), so the glob ``*.[a-z]*.io`` parses. From Go 1.24.8 and
  1.25.2 (CVE-2025-47912) the IP literal runs from the **last** ``[`` of the host,
  whatever stands before it is dropped (``evil.com[::1]:5000`` has the host
  ``[::1]:5000``), and it must be an IPv6 address by ``net/netip.ParseAddr`` (its error
  texts included): IPv4 is ``invalid IP-literal``, and in 1.24.8-1.24.9 and 1.25.2-1.25.3
  IPv4 and IPv4-mapped addresses are ``invalid IPv6 host``. From Go 1.26.1 a ``[``
  anywhere but at the start of the host is ``invalid IP-literal``.
* Error texts quote with ``%q``, whose idea of a printable character follows the release's
  Unicode tables (:func:`credprov._go.fmt.go_quote`).
* ``net.SplitHostPort`` is the same in every release.

Go strings are byte strings. Parsing therefore runs on the UTF-8 bytes of the input,
and the resulting fields are decoded with ``surrogateescape`` so that bytes which are
not valid UTF-8 (for example from ``%ff``) survive a round trip.
"""

from __future__ import annotations

from dataclasses import dataclass

from credprov._go.fmt import go_quote
from credprov._go.version import GoRelease, GoVersionError, resolve
from credprov.errors import GoError

__all__ = [
    "AddrError",
    "GoURL",
    "GoURLError",
    "GoVersionError",
    "go_quote",
    "parse",
    "split_host_port",
]


class GoURLError(GoError, ValueError):
    """A ``*url.Error``: ``str()`` is Go's ``parse "<url>": <reason>``."""

    def __init__(self, op: str, url: str, reason: str, *, unicode: str | None = None) -> None:
        super().__init__(f"{op} {go_quote(url, unicode=unicode)}: {reason}")
        self.op = op
        self.url = url
        self.reason = reason


class AddrError(GoError, ValueError):
    """A ``*net.AddrError`` from ``net.SplitHostPort``; ``str()`` is Go's text."""

    def __init__(self, reason: str, addr: str) -> None:
        super().__init__(f"address {addr}: {reason}" if addr else reason)
        self.reason = reason
        self.addr = addr


@dataclass(frozen=True, slots=True)
class GoURL:
    """The fields of a Go ``url.URL`` that the kubelet reads.

    ``path`` and ``fragment`` are unescaped, ``raw_query`` is not, ``host`` keeps its
    ``:port`` and its case. ``has_user`` records whether a ``userinfo@`` was present.
    """

    scheme: str = ""
    opaque: str = ""
    has_user: bool = False
    host: str = ""
    path: str = ""
    raw_query: str = ""
    force_query: bool = False
    fragment: str = ""


class _Err(Exception):
    """An inner Go error before ``url.Parse`` wraps it into ``*url.Error``.

    ``template`` holds ``{}`` where each of ``quoted`` goes as ``%q``: quoting is left to
    :meth:`reason`, which knows the Go release (its Unicode tables decide what ``%q`` escapes).
    """

    def __init__(self, template: str, *quoted: bytes) -> None:
        super().__init__(template)
        self.template = template
        self.quoted = quoted

    def reason(self, unicode: str) -> str:
        if not self.quoted:
            return self.template
        return self.template.format(*(go_quote(q, unicode=unicode) for q in self.quoted))


def _to_bytes(s: str) -> bytes:
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        # Lone surrogates that did not come from surrogateescape: Go strings cannot
        # hold them, so any deterministic byte form is as good as another.
        return s.encode("utf-8", "surrogatepass")


def _to_str(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


_PATH = 1
_HOST = 3
_ZONE = 4
_USER_PASSWORD = 5
_FRAGMENT = 7

_HEX = frozenset(b"0123456789abcdefABCDEF")
# Bytes that Go's shouldEscape(c, encodeHost) leaves alone: unreserved, sub-delims,
# and ":[]<>\"" which Go tolerates because the host includes the port and IP literal.
_HOST_OK = frozenset(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!$&'()*+,;=:[]<>\""
)


def _unhex(c: int) -> int:
    if c <= 0x39:
        return c - 0x30
    return (c | 0x20) - 0x61 + 10


def _unescape(s: bytes, mode: int) -> bytes:
    host_like = mode in (_HOST, _ZONE)
    if b"%" not in s and not host_like:
        return s
    n = len(s)
    i = 0
    while i < n:
        c = s[i]
        if c == 0x25:  # '%'
            if i + 2 >= n or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise _Err("invalid URL escape {}", s[i : i + 3])
            # RFC 3986 allows %-encoding in a host only for non-ASCII bytes, with
            # RFC 6874's %25 as the exception for IPv6 zone identifiers.
            if mode == _HOST and _unhex(s[i + 1]) < 8 and s[i : i + 3] != b"%25":
                raise _Err("invalid URL escape {}", s[i : i + 3])
            if mode == _ZONE:
                v = _unhex(s[i + 1]) << 4 | _unhex(s[i + 2])
                if s[i : i + 3] != b"%25" and v != 0x20 and v not in _HOST_OK:
                    raise _Err("invalid URL escape {}", s[i : i + 3])
            i += 3
        else:
            if host_like and c < 0x80 and c not in _HOST_OK:
                raise _Err("invalid character {} in host name", s[i : i + 1])
            i += 1
    if b"%" not in s:
        return s
    out = bytearray()
    i = 0
    while i < n:
        c = s[i]
        if c == 0x25:
            out.append(_unhex(s[i + 1]) << 4 | _unhex(s[i + 2]))
            i += 3
        else:
            out.append(c)
            i += 1
    return bytes(out)


# --- netip.ParseAddr (only what the IP-literal check needs) ----------------------


def _addr_error(inp: bytes, msg: str, at: bytes = b"") -> _Err:
    if at:
        return _Err(f"invalid host: ParseAddr({{}}): {msg} (at {{}})", inp, at)
    return _Err(f"invalid host: ParseAddr({{}}): {msg}", inp)


def _parse_ipv4_fields(inp: bytes, off: int, end: int) -> bytes:
    s = inp[off:end]
    fields = bytearray(4)
    val = pos = dig_len = 0
    for i, c in enumerate(s):
        if 0x30 <= c <= 0x39:
            if dig_len == 1 and val == 0:
                raise _addr_error(inp, "IPv4 field has octet with leading zero")
            val = val * 10 + c - 0x30
            dig_len += 1
            if val > 255:
                raise _addr_error(inp, "IPv4 field has value >255")
        elif c == 0x2E:
            if i == 0 or i == len(s) - 1 or s[i - 1] == 0x2E:
                raise _addr_error(inp, "IPv4 field must have at least one digit", s[i:])
            if pos == 3:
                raise _addr_error(inp, "IPv4 address too long")
            fields[pos] = val
            pos += 1
            val = dig_len = 0
        else:
            raise _addr_error(inp, "unexpected character", s[i:])
    if pos < 3:
        raise _addr_error(inp, "IPv4 address too short")
    fields[3] = val
    return bytes(fields)


def _parse_ipv6(inp: bytes) -> bytes:
    """``netip.parseIPv6``: the 16 bytes of the address (the zone is checked, not kept)."""
    s = inp
    zone = b""
    pct = s.find(b"%")
    if pct != -1:
        s, zone = s[:pct], s[pct + 1 :]
        if not zone:
            raise _addr_error(inp, "zone must be a non-empty string")
    ip = bytearray(16)
    ellipsis = -1
    if len(s) >= 2 and s[0] == 0x3A and s[1] == 0x3A:
        ellipsis = 0
        s = s[2:]
        if not s:
            return bytes(ip)
    i = 0
    while i < 16:
        off = 0
        acc = 0
        while off < len(s):
            c = s[off]
            if 0x30 <= c <= 0x39 or 0x61 <= c <= 0x66 or 0x41 <= c <= 0x46:
                acc = (acc << 4) + _unhex(c)
            else:
                break
            if off > 3:
                raise _addr_error(inp, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise _addr_error(inp, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise _addr_error(inp, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == 0x2E:
            if ellipsis < 0 and i != 12:
                raise _addr_error(
                    inp,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                )
            if i + 4 > 16:
                raise _addr_error(
                    inp,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                )
            end = len(inp) - (len(zone) + 1 if zone else 0)
            ip[i : i + 4] = _parse_ipv4_fields(inp, end - len(s), end)
            s = b""
            i += 4
            break
        ip[i] = acc >> 8
        ip[i + 1] = acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != 0x3A:
            raise _addr_error(inp, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(inp, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == 0x3A:
            if ellipsis >= 0:
                raise _addr_error(inp, "multiple :: in address", s)
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        raise _addr_error(inp, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(inp, "address string too short")
        n = 16 - i
        ip[ellipsis + n : 16] = ip[ellipsis:i]
        ip[ellipsis : ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _addr_error(inp, "the :: must expand to at least one field of zeros")
    return bytes(ip)


_V4_IN_V6_PREFIX = bytes(10) + b"\xff\xff"


def _parse_addr(s: bytes) -> tuple[bool, bool]:
    """``netip.ParseAddr(s)``: raise on error, else ``(Is4(), Is4In6())``."""
    for c in s:
        if c == 0x2E:
            _parse_ipv4_fields(s, 0, len(s))
            return True, False
        if c == 0x3A:
            return False, _parse_ipv6(s)[:12] == _V4_IN_V6_PREFIX
        if c == 0x25:
            raise _addr_error(s, "missing IPv6 address")
    raise _addr_error(s, "unable to parse IP")


# --- url.Parse ------------------------------------------------------------------


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    return port[0] == 0x3A and all(0x30 <= c <= 0x39 for c in port[1:])


def _invalid_port(colon_port: bytes) -> _Err:
    return _Err("invalid port {} after host", colon_port)


def _parse_ip_literal(host: bytes, open_idx: int, release: GoRelease) -> bytes:
    # Go 1.24.8 / 1.25.2 and later (CVE-2025-47912): the literal runs from the last '['
    # (what stands before it is dropped) and must be an IPv6 address.
    close_idx = host.rfind(b"]")
    if close_idx < 0:
        raise _Err("missing ']' in host")
    colon_port = host[close_idx + 1 :]
    if not _valid_optional_port(colon_port):
        raise _invalid_port(colon_port)
    port = _unescape(colon_port, _HOST)
    hostname = host[open_idx + 1 : close_idx]
    zone = hostname.find(b"%25")
    if zone >= 0:
        unescaped = _unescape(hostname[:zone], _HOST) + _unescape(hostname[zone:], _ZONE)
    else:
        unescaped = _unescape(hostname, _HOST)
    is4, is4in6 = _parse_addr(unescaped)
    if release.ipv4_mapped:
        if is4:
            raise _Err("invalid IP-literal")
    elif is4 or is4in6:
        raise _Err("invalid IPv6 host")
    return b"[" + unescaped + b"]" + port


def _strict_colons(release: GoRelease, scheme: str) -> bool:
    mode = release.strict_colons
    if mode == "http":
        return scheme in ("http", "https")
    if mode == "not-postgres":
        return scheme not in ("postgres", "postgresql")
    return False


def _parse_host(host: bytes, scheme: str, release: GoRelease) -> bytes:
    if release.brackets == "start":
        if host.startswith(b"["):
            close_idx = host.rfind(b"]")
            if close_idx < 0:
                raise _Err("missing ']' in host")
            colon_port = host[close_idx + 1 :]
            if not _valid_optional_port(colon_port):
                raise _invalid_port(colon_port)
            # RFC 6874: from "%25" on, the zone may escape more than a host may.
            zone = host.find(b"%25", 0, close_idx)
            if zone >= 0:
                return (
                    _unescape(host[:zone], _HOST)
                    + _unescape(host[zone:close_idx], _ZONE)
                    + _unescape(host[close_idx:], _HOST)
                )
            return _unescape(host, _HOST)
    else:
        open_idx = host.rfind(b"[")
        if open_idx > 0 and release.brackets == "strict":
            raise _Err("invalid IP-literal")
        if open_idx >= 0:
            return _parse_ip_literal(host, open_idx, release)
    colon = host.find(b":")
    if colon != -1:
        if not _strict_colons(release, scheme):
            colon = host.rfind(b":")
        colon_port = host[colon:]
        if not _valid_optional_port(colon_port):
            raise _invalid_port(colon_port)
    return _unescape(host, _HOST)


_USERINFO_OK = frozenset(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:~!$&'()*+,;=%@"
)


def _parse_authority(authority: bytes, scheme: str, release: GoRelease) -> tuple[bool, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(authority[at + 1 :] if at >= 0 else authority, scheme, release)
    if at < 0:
        return False, host
    userinfo = authority[:at]
    # Go ranges over runes here; any non-ASCII rune is outside the allowed set, so
    # checking bytes gives the same answer.
    if any(c not in _USERINFO_OK for c in userinfo):
        raise _Err("net/url: invalid userinfo")
    username, _, password = userinfo.partition(b":")
    _unescape(username, _USER_PASSWORD)
    _unescape(password, _USER_PASSWORD)
    return True, host


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in (0x2B, 0x2D, 0x2E):
            if i == 0:
                return b"", raw
            continue
        if c == 0x3A:
            if i == 0:
                raise _Err("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


def _parse(raw: bytes, release: GoRelease) -> GoURL:
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise _Err("net/url: invalid control character in URL")
    if raw == b"*":
        return GoURL(path="*")
    scheme_b, rest = _get_scheme(raw)
    scheme = _to_str(scheme_b).lower()
    force_query = False
    raw_query = b""
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        force_query = True
        rest = rest[:-1]
    else:
        rest, _, raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if scheme:
            # A rootless path after a scheme is opaque (RFC 3986).
            return GoURL(
                scheme=scheme,
                opaque=_to_str(rest),
                raw_query=_to_str(raw_query),
                force_query=force_query,
            )
        if b":" in rest.partition(b"/")[0]:
            raise _Err("first path segment in URL cannot contain colon")
    has_user = False
    host = b""
    if (scheme or not rest.startswith(b"///")) and rest.startswith(b"//"):
        authority, slash, tail = rest[2:].partition(b"/")
        rest = slash + tail
        has_user, host = _parse_authority(authority, scheme, release)
    path = _unescape(rest, _PATH)
    return GoURL(
        scheme=scheme,
        has_user=has_user,
        host=_to_str(host),
        path=_to_str(path),
        raw_query=_to_str(raw_query),
        force_query=force_query,
    )


def parse(rawurl: str, *, go_version: str | GoRelease | None = None) -> GoURL:
    """Go's ``url.Parse(rawurl)`` as the Go release ``go_version`` runs it.

    ``go_version`` is a version (``"1.25.5"``, see :func:`credprov._go.version.go_release`)
    or a :class:`~credprov._go.version.GoRelease`; None follows the process's choice
    (:func:`credprov._go.version.use_go`, :data:`~credprov._go.version.DEFAULT_GO_VERSION`
    unless changed). The releases differ on brackets and colons in the host and on which
    characters ``%q`` prints as they are (see :mod:`credprov._go.version`).

    Raises:
        GoURLError: with the exact ``*url.Error`` text, e.g.
            ``parse "https://%invalid%": invalid URL escape "%in"``.
        GoVersionError: ``go_version`` is not a version credprov reproduces.
    """
    release = resolve(go_version)
    u, _, frag = rawurl.partition("#")
    try:
        url = _parse(_to_bytes(u), release)
    except _Err as err:
        uv = release.unicode
        raise GoURLError("parse", u, err.reason(uv), unicode=uv) from None
    if not frag:
        return url
    try:
        fragment = _unescape(_to_bytes(frag), _FRAGMENT)
    except _Err as err:
        # Go reports fragment errors against the whole input, fragment included.
        uv = release.unicode
        raise GoURLError("parse", rawurl, err.reason(uv), unicode=uv) from None
    return GoURL(
        scheme=url.scheme,
        opaque=url.opaque,
        has_user=url.has_user,
        host=url.host,
        path=url.path,
        raw_query=url.raw_query,
        force_query=url.force_query,
        fragment=_to_str(fragment),
    )


def split_host_port(hostport: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort``: split ``host:port``, ``[host]:port``.

    Raises:
        AddrError: with Go's ``*net.AddrError`` text, e.g.
            ``address example.com: missing port in address``.
    """
    missing_port = "missing port in address"
    too_many_colons = "too many colons in address"
    last = hostport.rfind(":")
    if last < 0:
        raise AddrError(missing_port, hostport)
    open_from, close_from = 0, 0
    if hostport[0] == "[":
        end = hostport.find("]")
        if end < 0:
            raise AddrError("missing ']' in address", hostport)
        if end + 1 == len(hostport):
            raise AddrError(missing_port, hostport)
        if end + 1 != last:
            # Either ']' is not followed by a colon, or that colon is not the last.
            if hostport[end + 1] == ":":
                raise AddrError(too_many_colons, hostport)
            raise AddrError(missing_port, hostport)
        host = hostport[1:end]
        open_from, close_from = 1, end + 1
    else:
        host = hostport[:last]
        if ":" in host:
            raise AddrError(too_many_colons, hostport)
    if "[" in hostport[open_from:]:
        raise AddrError("unexpected '[' in address", hostport)
    if "]" in hostport[close_from:]:
        raise AddrError("unexpected ']' in address", hostport)
    return host, hostport[last + 1 :]
