"""Inputs for the URL differential tests: a table of edge cases and generators.

Strings are ``str`` with bytes that are not valid UTF-8 held as ``surrogateescape``
surrogates (``"\\udcff"`` is the byte 0xff), as :mod:`credprov._go.url` takes them; send them
to Go with :func:`to_go`.
"""

from __future__ import annotations

import random

#: Characters new in Unicode 15.0 (Go 1.21 and later), 16.0 and 17.0 (Go 1.27), printable in
#: Go but unassigned in Python 3.11's Unicode 14.0 tables.
NEW_UNICODE = [
    "\U0001fae8",  # SHAKING FACE, 15.0
    "\U00011f00",  # KAWI SIGN CANDRABINDU, 15.0
    "\U0001e030",  # MODIFIER LETTER CYRILLIC SMALL A, 15.0
    "\U00031350",  # CJK Extension H, 15.0
    "\U0001fae9",  # FACE WITH BAGS UNDER EYES, 16.0
    "\U00010d40",  # GARAY, 16.0
    "\U0001cc00",  # Symbols for Legacy Computing Supplement, 16.0
    "\U00016ea0",  # BERIA ERFE, 17.0
    "\U0002ebf0",  # CJK Extension J, 17.0
    "\u0897",  # ARABIC PEPET, 16.0
    "\u1c89",  # CYRILLIC CAPITAL LETTER TJE, 16.0 (Lu)
]

#: Hand-picked inputs for ``url.Parse``: each class of difference between the Go releases and
#: each trap found while making credprov exact.
PARSE_TABLE: list[str] = [
    # brackets (CVE-2025-47912 and its follow-ups)
    "https://[::1]",
    "https://[::1]:5000",
    "https://[::1]:5000/p",
    "https://[::1]x",
    "https://[::1",
    "https://[]",
    "https://[]:80",
    "https://[:]",
    "https://[::]",
    "https://[1.2.3.4]",
    "https://[1.2.3.4]:80",
    "https://[::ffff:1.2.3.4]",
    "https://[::ffff:102:304]",
    "https://[::ffff:1.2.3.4%25eth0]",
    "https://[::1.2.3.4]",
    "https://[64:ff9b::1.2.3.4]",
    "https://[fe80::1%25en0]",
    "https://[fe80::1%25en0]:80",
    "https://[fe80::1%25]",
    "https://[fe80::1%25%41]",
    "https://[fe80::1%25%2541]",
    "https://[fe80::1%25en0%20x]",
    "https://[fe80::1%25en0%0a]",
    "https://[fe80::1%en0]",
    "https://[fe80::%c3%a9]",
    "https://[%41::1]",
    "https://[v1.x]",
    "https://[1::2::3]",
    "https://[12345::1]",
    "https://[::1.2.3.256]",
    "https://[::01.2.3.4]",
    "https://[1:2]",
    "https://[1:2:3:4:5:6:7:8:9]",
    "https://[1:2:3:4:5:6:7::8]",
    "https://[1:2:3:4:5:6:1.2.3.4]",
    "https://[1:2:3:4:5:6:7:1.2.3.4]",
    "https://[::1:]",
    "https://[:1]",
    "https://[%]",
    "https://[%25]",
    "https://[1.2.3]",
    "https://[1.2.3.4.5]",
    "https://[1..2.3]",
    "https://[1.2.3.]",
    "https://evil.com[::1]:5000",
    "https://evil.com[::1]",
    "https://a[b",
    "https://a]b",
    "https://a]b[::1]",
    "https://[::1]]",
    "https://[[::1]",
    "https://[::1][::2]",
    "https://[::1]:80[::2]",
    "https://reg.[a-z].io",
    "https://reg.[a-z]*.io",
    "https://*.[a-z]*.io",
    "https://[a-z].io",
    "https://[a-z]",
    "https://u@[::1]:80",
    "https://u@evil.com[::1]",
    "https://[::1]@h",
    # ports and colons (Go 1.26 strict colons for http(s))
    "https://a:1:2",
    "https://a::80",
    "https://a:5000:x",
    "https://a:x",
    "https://a:-1",
    "https://a:",
    "https://a::",
    "https://:80",
    "https://a:80/p:q",
    "http://a:1:2",
    "HTTPS://a:1:2",
    "postgres://a:1,b:2",
    "postgres://a:1:2",
    "postgresql://a:1:2",
    "mongodb://a:1,b:2",
    "mongodb://a:1:2",
    "ftp://a:1:2",
    "//a:1:2",
    "https://a%3A80",
    # userinfo
    "https://user:pw@registry.io/x",
    "https://a@b@registry.io",
    "https://u:p@ss@h",
    "https://ü@example.com/",
    "https://u%zz@h",
    "https://u%41@h",
    "https://u[x]@h",
    "https://@h",
    "https://u:@h",
    # escapes, globs, query, fragment
    "https://%invalid%",
    "https://a%",
    "https://a%4",
    "https://%41.io",
    "https://%c3%a9.io",
    "https://%25",
    "https://h/%ff",
    "https://h/%zé",
    "https://*.registry.io",
    "https://reg?.io/p",
    "https://registry.io/p?",
    "https://registry.io/p?x=1&y=%zz",
    "https://registry.io/p#frag%41",
    "https://h#%zz",
    "https://%zz#frag",
    "https://h/a%2Fb%20c",
    "https://h/a+b",
    # controls and odd characters
    "https://a\tb",
    "https://a\x7f",
    "https://a\x00",
    "https://a b",
    "https://a{b}",
    "https://a\\b",
    "https://a<b>",
    'https://a"b',
    "https://a|b",
    "https://a^b",
    "https://a`b",
    # non-ASCII and bytes that are not UTF-8
    "https://é.io",
    "https://\udcff.io",
    "https://a\udcc3",
    "https://h/\udcff",
    "https://a b\U0001fae8",
    "https://a b\u00ad",
    "https://a b\ufeff",
    "https://a b\u2028",
    "https://a b\U000e0001",
    "https://a b\U0010ffff",
    "https://a b\ue000",
    *(f"https://a b{ch}" for ch in NEW_UNICODE),
    *(f"https://h/%zz{ch}" for ch in NEW_UNICODE[:3]),
    # not https
    "",
    "*",
    "/rel/path",
    "//host/p",
    "///path",
    "https://",
    "https:///path",
    "https:opaque",
    "://x",
    "1a:b/x",
    "a:b",
    "a/b:c",
    "mailto:x@y",
]

#: Hand-picked inputs for ``net.SplitHostPort``.
SPLIT_TABLE: list[str] = [
    "", "host", "host:80", "host:", ":80", ":", "a:b:c", "[::1]", "[::1]:80", "[::1]:",
    "[::1", "[::1]x:80", "[::1]:80:90", "a[b:80", "a]b:80", "[a]b]:80", "[a[b]:80",
    "[fe80::1%en0]:80", "host:http", "[]:80", "[::1]]:80", "é:80", "\udcff:80",
]  # fmt: skip

_HOSTS = [
    "registry.io", "*.io", "*.[a-z]*.io", "reg.[a-z]*.io", "[::1]", "[fe80::1%25en0]",
    "[1.2.3.4]", "[::ffff:1.2.3.4]", "a[b", "a]b", "[a-z]", "evil.com[::1]", "%41", "%c3%a9",
    "é", "\U0001fae8", "[", "]", "[]", "[::]", "", "a.b.c", "gcr.io", "*", "?.io", "[^a]",
    "[::1]%41", "h\udcff", "[1::]", "[%25]",
]  # fmt: skip
_PORTS = ["", "", "", ":5000", ":", ":x", ":1:2", "::", "%3A80", ":80]", ":8%30"]
_PATHS = ["", "", "/", "/a/b", "/*", "/%41", "/%zz", "/a?b", "/a#b", "/:", "/[x]"]
_USERS = ["", "", "", "", "u@", "u:p@", "ü@", "u%zz@", "a@b@", "[x]@"]
_PREFIXES = ["https://"] * 8 + ["http://", "HTTPS://", "postgres://", "//", "", "x:", "1:"]
_ALPHABET = (
    list("abcXYZ019.-_~*?[]^\\:@/%#!$&'()+,;= <>\"{}|`")
    + list("%25%41%c3%a9%zz")
    + ["\t", "\x00", "\x7f", "é", "\udcff", "\u00ad", "\u2028"]
    + NEW_UNICODE
)


def _noise(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(n))


def generated_urls(count: int, seed: int) -> list[str]:
    """``count`` strings for ``url.Parse``: structured ``scheme://user@host:port/path`` with
    pieces that matter to the Go releases, plus random noise."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if rng.random() < 0.2:
            out.append(rng.choice(_PREFIXES) + _noise(rng, rng.randint(0, 16)))
            continue
        host = rng.choice(_HOSTS)
        if rng.random() < 0.3:
            host += rng.choice(_HOSTS)
        if rng.random() < 0.2:
            cut = rng.randint(0, len(host))
            host = host[:cut] + _noise(rng, rng.randint(1, 3)) + host[cut:]
        parts = [
            rng.choice(_PREFIXES),
            rng.choice(_USERS),
            host,
            rng.choice(_PORTS),
            rng.choice(_PATHS),
        ]
        if rng.random() < 0.1:
            parts.append(rng.choice(["?", "?q=1", "#", "#f%41", "#%zz"]))
        out.append("".join(parts))
    return out


def generated_hostports(count: int, seed: int) -> list[str]:
    """``count`` strings for ``net.SplitHostPort``."""
    rng = random.Random(seed)
    pieces = ["[", "]", ":", "::", "a", "h.io", "80", "::1", "%en0", "é", "x"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(count)]


def generated_texts(count: int, seed: int) -> list[str]:
    """``count`` strings for ``strconv.Quote``: code points from every plane, the newest
    Unicode characters and bytes that are not UTF-8."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(0, 8)):
            roll = rng.random()
            if roll < 0.2:
                chars.append(rng.choice(NEW_UNICODE))
            elif roll < 0.3:
                chars.append(chr(rng.randint(0xDC80, 0xDCFF)))  # a byte that is not UTF-8
            elif roll < 0.5:
                chars.append(chr(rng.randint(0, 0x7F)))
            else:
                ch = rng.randint(0x80, 0x3FFFF if roll < 0.8 else 0x10FFFF)
                chars.append("\ufffd" if 0xD800 <= ch <= 0xDFFF else chr(ch))
        out.append("".join(chars))
    return out


def to_go(s: str) -> bytes:
    """The Go string (bytes) that credprov's ``str`` stands for."""
    return s.encode("utf-8", "surrogateescape")
