"""Inputs for the YAML differential tests: a table of known divergences and generators.

Generated documents mix what configuration files hold (block maps and lists, flow
collections, quoted and plain scalars, comments, anchors and merges) with what breaks
parsers (tabs, control characters, escapes, invalid UTF-8, odd indentation, numbers at
the edges of Go's ranges). Mutations of the repository's own YAML files add realism.
"""

from __future__ import annotations

import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Hand-picked inputs: the issue's examples and each class found while making goyaml exact.
TABLE: list[bytes] = [
    # go-yaml finds a required simple key stale only once the next token is fetched: its
    # error comes first, and the line is where that token ends (the end of the input moves
    # to a new line first).
    b"x:\n[\n#",
    b"x:\n[\n# c",
    b"x:\n[\n  ",
    b"x:\n[\n\t",
    b"k: v\n[\n#\n#",
    b'x:\n[\n"a\nb"',
    b'x:\n[\n"abc',
    b"x:\n[\nfoo\n bar",
    b"x:\n[\n|\n a",
    b"x:\n{\n#",
    b'a: "\\ud800"\n',
    b'a: "\\udfff"\n',
    b'a: "\\U00110000"\n',
    b'a: "\\U0001F600"\n',
    b'a: "\\x41\\u00e9"\n',
    b'a: "\\q"\n',
    b'a: "\\u12"\n',
    b"name:\ta\n",
    b"name: \ta\n",
    b"\tname: a\n",
    b"a:\n\t- b\n",
    b"a: [b,\tc]\n",
    b"name: !x a\n",
    b"name: !x 12\n",
    b"name: !!int 12\n",
    b"name: !!int '12'\n",
    b"name: !!int 1.5\n",
    b"name: !!float 1\n",
    b"name: !!bool 1\n",
    b"name: !!str 12\n",
    b"name: !!null ''\n",
    b"name: !!timestamp 2001-02-03\n",
    b"name: !!timestamp x\n",
    b"name: !!binary aGk=\n",
    b"name: !!binary '!!'\n",
    b"name: !!binary /w==\n",
    b"name: a\x00",
    b"name: a\n\x00",
    b"a: 1\n---\n\x01",
    b"a: \x01\n",
    b"a: \xff\n",
    b"a: \xc3\n",
    b"a: \xed\xa0\x80\n",
    b"a: \xc0\xaf\n",
    b"\xef\xbb\xbfa: 1\n",
    b"a: 1e3\n",
    b"a: 0o17\n",
    b"a: 12:30\n",
    b"a: 0x1F\n",
    b"a: 0x_1F\n",
    b"a: 0b101\n",
    b"a: -0b101\n",
    b"a: 017\n",
    b"a: 09\n",
    b"a: 1_000\n",
    b"a: +1\n",
    b"a: -0\n",
    b"a: 1.0\n",
    b"a: 1e21\n",
    b"a: 1e-7\n",
    b"a: 1e400\n",
    b"a: 1e-400\n",
    b"a: .5\n",
    b"a: .5e3\n",
    b"a: ._5\n",
    b"a: .1_0\n",
    b"a: .inf\n",
    b"a: -.Inf\n",
    b"a: .nan\n",
    b"a: 9223372036854775807\n",
    b"a: 9223372036854775808\n",
    b"a: -9223372036854775809\n",
    b"a: 18446744073709551615\n",
    b"a: 18446744073709551616\n",
    b"a: +9223372036854775808\n",
    b"a: 1111111111111111111111111\n",
    b"a: " + b"1" * 5000 + b"\n",
    b"a: 2001-02-03\n",
    b"a: 2001-02-30\n",
    b"a: 2001-02-03T04:05:06Z\n",
    b"a: y\nb: n\nc: on\nd: Off\ne: yes\n",
    b"~: x\n",
    b"null: x\n",
    b"1: x\n",
    b"1.5: x\n",
    b"1e3: x\n",
    b"1e20: x\n",
    b"0.1: x\n",
    b"123456789: x\n",
    b"3.14159265358979: x\n",
    b"true: x\n",
    b".inf: x\n",
    b"18446744073709551615: x\n",
    b"? [a]\n: x\n",
    b"? {a: 1}\n: x\n",
    b"1: a\n'1': b\n",
    b"a: 1\na: 2\n",
    b"a: 1\nb: {c: 1, c: 2}\n",
    b"<<: {a: 1}\na: 2\n",
    b"a: 2\n<<: {a: 1}\n",
    b"x: &m {a: 1, b: 2}\ny:\n  <<: *m\n  b: 3\n",
    b"x: &m {a: 1}\ny:\n  <<: [*m, {a: 2, c: 3}]\n",
    b"y:\n  <<: 1\n",
    b"y:\n  <<: [1]\n",
    b"a: *x\n",
    b"a: &x [*x]\n",
    b"a: &x 1\nb: *x\n",
    b'a: b\n"c',
    b"a: b\n  c: d\n",
    b"a:\n- b\n -c\n",
    b"[a, b\n",
    b"{a: b\n",
    b"a: 'b\n",
    b"a: |\n  x\n y\n",
    b"- a\nb: c\n",
    b"",
    b"# only a comment\n",
    b"---\n",
    b"--- a\n--- b\n",
    b"a: 1\n...\nb: 2\n",
    b"%YAML 1.1\n---\na: 1\n",
    b"%YAML 2.0\n---\na: 1\n",
    b"%FOO bar\n---\na: 1\n",
    b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n",
    b"a: " + b"[" * 10000 + b"]" * 10000 + b"\n",
    b"a: " + b"[" * 10001 + b"]" * 10001 + b"\n",
    b"".join(b" " * i + b"a:\n" for i in range(300)),
    b"- " * 5000 + b"a\n",
    b"- " * 10000 + b"a\n",
    b"- " * 10001 + b"a\n",
    b"a:\n" + b"- " * 10001 + b"a\n",
    b"a: 1\n" * 100 + b"b: \x01\n",
    b"a: 1\n" * 200 + b"---\nb: \x01\n",
    b"kind: x\nkind: y\napiVersion: v1\n",
    # double-quoted escapes: go-yaml has \' and not \/
    b'a: "x\\\'y"\n',
    b'a: "x\\/y"\n',
    # a byte order mark after the stream's start is text
    b"---\n\xef\xbb\xbfa: 1\n",
    b"a: 1\n\xef\xbb\xbf\n",
    b"a: 1\n\xef\xbb\xbf b: 2\n",
    b"[1,\n\xef\xbb\xbf2]\n",
    b"- 1\n\xef\xbb\xbf- 2\n",
    # go-yaml loses the simple key of an empty flow collection's bracket
    b"[]: v\n",
    b"{}: 1\n",
    b"a: 1\n[]\n",
    b"a: 1\n{}x\n",
    b"a: \n[]x\n",
    b"a:\n[]\n",
    b"a: 1\n[ [] ]x\n",
    b"a: 1\n[b]: v\n",
    # tags: go-yaml's handle/suffix grammar, URI escapes
    b"!# x\n",
    b"!a#b x\n",
    b"!! x\n",
    b"!<#> x\n",
    b"!a!b x\n",
    b"!a\tx\n",
    b"!%4 x\n",
    b"!%c3 x\n",
    b"!%c3%a9 x\n",
    b"!%ff x\n",
    b"!%c3%41 x\n",
    b"[!a, b]\n",
    # a nil nested in a map key error's value
    b"~: [null, true]\n",
    b"~: {a: ~}\n",
    # the reader decodes 4 characters ahead of each token: a bad byte there comes first
    b"a:\n  b: 1\n" + b"#" * 1000 + b"\nc: d: e\xd5x\n",
]


ATOMS = [
    "a",
    "b",
    "name",
    "kind",
    "apiVersion",
    "providers",
    "matchImages",
    "-",
    "- ",
    ": ",
    ":",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "#",
    " #c",
    "'",
    "''",
    '"',
    '\\"',
    "\\",
    "\\u",
    "\\ud800",
    "\\x4",
    "\\t",
    "[",
    "]",
    "{",
    "}",
    ",",
    "?",
    "&a",
    "*a",
    "!x",
    "!!str",
    "!!int",
    "!!binary",
    "<<",
    "|",
    ">",
    "|-",
    "~",
    "null",
    "yes",
    "no",
    "y",
    "on",
    "true",
    "1",
    "0",
    "-1",
    "1e3",
    "0o17",
    "0x1F",
    "017",
    "08",
    "1_0",
    "12:30",
    ".5",
    ".inf",
    ".nan",
    "1.0",
    "2001-02-03",
    "9223372036854775808",
    "18446744073709551616",
    "%",
    "@",
    "`",
    "---",
    "...",
    "\x00",
    "\x01",
    "\x7f",
    "\x85",
    "\u00a0",
    "\u2028",
    "\ufeff",
    "é",
    "😀",
    "\x1b",
]


def _scalar(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        return rng.choice(ATOMS[:6] + ATOMS[44:70])
    if kind < 0.6:
        return "'" + rng.choice([*ATOMS[:6], " ", "''", "x y"]) + "'"
    if kind < 0.75:
        body = "".join(
            rng.choice(["a", " ", "\\t", "\\u00e9", "\\ud800", "\\x41", "é", "\\n"])
            for _ in range(rng.randint(0, 3))
        )
        return '"' + body + '"'
    if kind < 0.85:
        return "[" + ", ".join(_scalar(rng) for _ in range(rng.randint(0, 3))) + "]"
    if kind < 0.95:
        return (
            "{" + ", ".join(f"{_key(rng)}: {_scalar(rng)}" for _ in range(rng.randint(0, 3))) + "}"
        )
    return str(
        rng.choice([rng.randint(-(10**20), 10**20), rng.random() * 10 ** rng.randint(-8, 25)])
    )


def _key(rng: random.Random) -> str:
    return rng.choice(
        ["a", "b", "c", "name", "kind", "1", "1.5", "true", "~", "'x'", '"y"', "<<", "0x10", "1e3"]
    )


def _block(rng: random.Random, indent: int, depth: int) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    if rng.random() < 0.3 and depth > 0:
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.3 and depth < 4:
                lines.append(f"{pad}-")
                lines.extend(_block(rng, indent + 2, depth + 1))
            else:
                lines.append(f"{pad}- {_scalar(rng)}")
        return lines
    for _ in range(rng.randint(1, 4)):
        key = _key(rng)
        anchor = rng.choice(["", "", "", " &a", " &b"])
        if rng.random() < 0.35 and depth < 4:
            lines.append(f"{pad}{key}:{anchor}")
            lines.extend(_block(rng, indent + rng.choice([0, 2, 2, 4]), depth + 1))
        elif rng.random() < 0.1:
            lines.append(f"{pad}{key}: {rng.choice(['*a', '*b'])}")
        elif rng.random() < 0.1:
            lines.append(f"{pad}{key}: |")
            lines.append(f"{pad}  text {rng.randint(0, 9)}")
        else:
            lines.append(f"{pad}{key}:{anchor} {_scalar(rng)}")
    return lines


def generated(rng: random.Random) -> bytes:
    """One document: a generated block structure, often mutated."""
    text = "\n".join(_block(rng, 0, 0)) + rng.choice(["\n", "", "\n\n", "\n---\nx: 1\n"])
    return _mutate(rng, text.encode()) if rng.random() < 0.5 else text.encode()


def _seed_files() -> list[bytes]:
    files = sorted(ROOT.glob("config/**/*.yaml")) + sorted(ROOT.glob("deploy/**/*.yaml"))
    return [p.read_bytes()[:4000] for p in files if p.stat().st_size < 200_000]


_SEEDS: list[bytes] | None = None


def mutated(rng: random.Random) -> bytes:
    """A repository YAML file with a few random edits."""
    global _SEEDS
    if _SEEDS is None:
        _SEEDS = _seed_files() or [b"a: 1\n"]
    return _mutate(rng, rng.choice(_SEEDS))


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        pos = rng.randint(0, len(out))
        op = rng.random()
        if op < 0.5:
            atom = rng.choice(ATOMS).encode("utf-8", "surrogatepass")
            out[pos:pos] = atom
        elif op < 0.75:
            del out[pos : pos + rng.randint(1, 4)]
        elif op < 0.9:
            out[pos:pos] = bytes([rng.randint(0, 255)])
        else:
            line_start = out.rfind(b"\n", 0, pos) + 1
            out[line_start:line_start] = rng.choice([b" ", b"  ", b"\t", b"- "])
    return bytes(out)


def cases(seed: int, count: int) -> list[bytes]:
    """``count`` generated inputs, reproducible from ``seed``."""
    rng = random.Random(seed)
    return [generated(rng) if rng.random() < 0.6 else mutated(rng) for _ in range(count)]
