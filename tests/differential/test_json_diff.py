"""credprov's JSON reading against real Go (``encoding/json`` and ``sigs.k8s.io/json`` as the
kubelet's Go 1.24–1.26 builds run them), on a table of edge cases and mutated documents.

For every input the answers must be equal:

* ``json``: accept or refuse, the decoded value (strings with one U+FFFD per bad byte,
  numbers by their literal) and the syntax error text;
* ``offset``: the byte offset Go's ``*SyntaxError`` carries;
* ``kjson``: the error text of sigs.k8s.io/json (the strict decoder's reader);
* ``interpret``: what ``json.DefaultMetaFactory.Interpret`` reads or refuses (apiVersion, kind);
* ``isjson``: apimachinery's recognizer (``unicode.IsSpace`` before ``{``).

One divergence is deliberate (see ``credprov._go.json``): Go refuses a number beyond float64
range when it decodes into ``interface{}``; credprov keeps ``inf`` because none of its
documents decodes a number into a Go float. ``CREDPROV_DIFF_LONG=N`` runs N mutated
documents (1 means 20,000) instead of 1,500.
"""

from __future__ import annotations

import random

import pytest

from credprov._go import json as gojson
from credprov._go.decode import DecodeError, interpret_meta, parse_json
from tests.differential import gotool

pytestmark = pytest.mark.e2e

TABLE: list[bytes] = [
    b"", b" ", b"tru", b"nul", b"fals", b"-", b"1.", b"1e", b"1e+", b"01", b"-01", b"1.5e3",
    b"-0", b"1e400", b"[1e400]", b'{"kind":1e400}', b"NaN", b"-Infinity", b"Infinity",
    b'"\\', b'"\\u12', b'"\\u12g4"', b'"\\x"', b'"\\ud800"', b'"\\ud800\\u0041"',
    b'"\\ud83d\\ude00"', b'"\\udc00"', b'"\\\\ud800"', b'"a\x01"', b'"\x7f"', b"'a'",
    b'["\xe2\x82"]', b'["\xed\xa0\x80"]', b'["\xc0\x80"]', b'["\xf4\x90\x80\x80"]', b"\xc3\xa9",
    b"\xa0{}", b"\xc2\xa0{}", b"\xe2\x80\x83{}", b"\x0b{}", b"\x1c{}", b"\xef\xbb\xbf{}",
    b"\x85{}", b"\xc2\x85{}", b" " * 5000 + b"{}", b"\n" * 4095 + b"\xc2\xa0{}",
    "\u3000\u1680\u205f\u202f\u2028{}".encode(), "\u180e{}".encode(), "\u200b{}".encode(),
    b"{}", b"{} ", b"{}x", b"{} {}", b"[1 2]", b"[1,]", b"[,1]",
    b'{"a" 1}', b'{"a":1,}', b'{"a":1 x', b'{"a":1}x', b'{"a"}', b"{1:2}", b'{"a":}',
    b'{"apiVersion":"v1","kind":"Pod"}', b'{"APIVERSION":"v1","Kind":"Pod"}',
    b'{"apiVersion":1}', b'{"kind":null}', b'{"kind":"a","kind":"b"}', b'{"kind":["a"]}',
    b"null", b"[]", b'"s"', b"true", b"[" * 10000 + b"]" * 10000,
    b"[" * 10001 + b"]" * 10001, b"{" * 10001, b'{"a":' * 9999 + b"1" + b"}" * 9999,
    b"[" * 3000, b'{"k":"v"\n', b"\t\r\n{}\t\r\n", b"\x00", b"\xff", b"\xad", b"\x80",
]  # fmt: skip

_SEEDS = [
    b'{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse",'
    b'"cacheKeyType":"Image","cacheDuration":"5m","auth":{"r.io":{"username":"u","password":"p"}}}',
    b'{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw","email":"a@b"}},"x":[1,-2.5e3,null]}',
    b'[true,false,null,"\\u00e9\\n\\"",0.5,{"":[]}]',
    b'{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"image":"nginx"}]}}',
]
_ALPHABET = [
    b"{", b"}", b"[", b"]", b":", b",", b'"', b"\\", b"\\u", b"\\ud800", b" ", b"\t", b"\n",
    b"\x00", b"\x1f", b"\x7f", b"\x80", b"\xc3", b"\xe2\x82", b"\xff", b"\xc2\xa0", b"-", b"0",
    b"1", b".", b"e", b"E", b"+", b"t", b"n", b"f", b"true", b"null", b"N", b"x", b"'", b"\xe9",
    b"\xf0\x9f\x98\x80", b"1e400", b'"kind"', b'"apiVersion"',
]  # fmt: skip


def _mutated(count: int) -> list[bytes]:
    rng = random.Random(20261125)
    out = []
    for _ in range(count):
        doc = bytearray(rng.choice(_SEEDS))
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(doc))
            roll = rng.random()
            if roll < 0.4:
                doc[at:at] = rng.choice(_ALPHABET)
            elif roll < 0.7:
                del doc[at : at + rng.randint(1, 3)]
            elif roll < 0.9:
                doc[at : at + 1] = rng.choice(_ALPHABET)
            else:
                doc = doc[:at]
        out.append(bytes(doc))
    return out


def _ours(op: str, data: bytes) -> dict[str, object]:
    try:
        if op == "isjson":
            return {"ok": gojson.has_json_prefix(data)}
        if op == "interpret":
            try:
                api_version, kind = interpret_meta(parse_json(data))
            except DecodeError as exc:
                return {"ok": False, "err": str(exc).removeprefix(_PREFIX)}
            return {"ok": True, "out": f"{api_version}\x00{kind}"}
        value = gojson.loads(data)
    except gojson.JSONSyntaxError as exc:
        if op == "offset":
            return {"ok": True, "out": str(exc.offset)}
        return {"ok": False, "err": str(exc)}
    if op == "offset":
        return {"ok": False}
    return {"ok": True, "value": value}


_PREFIX = "couldn't get version/kind; json parse error: "
_OPS = ["json", "offset", "kjson", "interpret", "isjson"]


_END = ("end",)


def _tokens(root: object) -> list[object]:
    """A value as a flat token list (iteratively: values may nest 10,000 deep)."""
    out: list[object] = []
    stack = [root]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            out.append("{")
            stack.append(_END)
            for key in sorted(value, reverse=True):
                stack.extend([value[key], ("key", key)])
        elif isinstance(value, list):
            out.append("[")
            stack.append(_END)
            stack.extend(reversed(value))
        else:
            out.append(value if value is _END else (type(value).__name__, value))
    return out


def _range_error(answer: dict[str, object]) -> bool:
    return str(answer.get("err", "")).startswith("json: cannot unmarshal number ")


@pytest.mark.parametrize("source", ["table", "mutated"])
def test_json_matches_go(source: str) -> None:
    inputs = TABLE if source == "table" else _mutated(gotool.case_count(1500))
    requests = [{"op": op, "in": data} for data in inputs for op in _OPS]
    answers = gotool.oracle("json").ask(requests)
    failures = []
    for req, go in zip(requests, answers, strict=True):
        op, data = str(req["op"]), bytes(req["in"])  # type: ignore[arg-type]
        if str(go.get("err", "")).startswith(("PANIC", "ORACLE", "BAD REQUEST")):
            pytest.fail(f"oracle trouble on {data[:80]!r}: {go}")
        ours = _ours("json" if op == "kjson" else op, data)
        if op in ("json", "kjson") and _range_error(go):
            if not ours["ok"]:  # the deliberate difference: credprov keeps inf
                failures.append((op, data, go, ours))
            continue
        if go["ok"] != ours["ok"]:
            failures.append((op, data, go, ours))
        elif not go["ok"]:
            if op != "isjson" and go.get("err") != ours.get("err"):
                failures.append((op, data, go, ours))
        elif op in ("json", "kjson"):
            if op == "json" and _tokens(gojson.loads(str(go["out"]))) != _tokens(ours["value"]):
                failures.append((op, data, go, ours))
        elif op in ("offset", "interpret") and go.get("out") != ours.get("out"):
            failures.append((op, data, go, ours))
    shown = "\n".join(
        f"  {op} {data[:100]!r}:\n    go:   {go}\n    ours: {str(ours)[:200]}"
        for op, data, go, ours in failures[:15]
    )
    assert not failures, f"{len(failures)} of {len(requests)} answers differ from Go:\n{shown}"
