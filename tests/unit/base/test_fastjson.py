"""credprov.base.fastjson gives exactly what json gives: values, text and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from credprov.base import fastjson

REPO = Path(__file__).resolve().parents[3]


def no_constant(name: str) -> Any:
    raise ValueError(name)


def outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as exc:  # the comparison is the point
        return type(exc).__name__, str(exc)


def same_loads(text: str | bytes, parse_constant: Any = None) -> None:
    kwargs = {} if parse_constant is None else {"parse_constant": parse_constant}
    want = outcome(json.loads, text, **kwargs)
    got = outcome(fastjson.loads, text, **kwargs)
    assert repr(got) == repr(want)  # repr: NaN != NaN


LOADS = [
    '{"kind":"CredentialProviderRequest","image":"r.example.com/a"}',
    '  {"a": [1, 2.5, -3e10, true, false, null]} \n',
    '"\\ud800 lone surrogate"',
    '{"a": 1, "a": 2}',
    "[NaN, Infinity, -Infinity]",
    "",
    "   ",
    "\ufeff{}",
    "{} x",
    "{}{}",
    '{"a": }',
    "[1,]",
    '"\x01"',
    "1" * 5000,
    "[" * 100_000 + "]" * 100_000,
    '{"\u00e9": "caf\u00e9 \u2028"}',
    "\t\r\n[]\t\r\n",
    "\x0b[]",
]


@pytest.mark.parametrize("text", LOADS, ids=range(len(LOADS)))
def test_loads_table(text: str) -> None:
    same_loads(text)
    same_loads(text, no_constant)


DUMPS: list[Any] = [
    {"kind": "CredentialProviderResponse", "auth": {"r": {"username": "u", "password": "p"}}},
    ["a", 1, 2.5, float("nan"), float("inf"), True, None, {"b": []}],
    "caf\u00e9 <&> \u2028 \x00 \ud800",
    {2: "int key", 1.5: "float key", True: "bool key", None: "none key"},
    {"z": 1, "a": 2},
    ("tuple", "is", "a list"),
    {"x": object()},
    {(1, 2): "tuple key"},
    [10**5000],
]


@pytest.mark.parametrize("value", DUMPS, ids=range(len(DUMPS)))
@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("separators", [None, (",", ":")])
@pytest.mark.parametrize("sort_keys", [False, True])
def test_dumps_table(
    value: Any, ensure_ascii: bool, separators: tuple[str, str] | None, sort_keys: bool
) -> None:
    kwargs = {"ensure_ascii": ensure_ascii, "separators": separators, "sort_keys": sort_keys}
    assert outcome(fastjson.dumps, value, **kwargs) == outcome(json.dumps, value, **kwargs)


BYTES = [
    b'{"a": "caf\xc3\xa9"}',
    b"\xef\xbb\xbf{}",
    b"\xff\xfe{\x00}\x00",
    b"\x00{\x00}",
    b'"\xed\xa0\x80"',  # a surrogate in UTF-8: json reads it (surrogatepass)
    b'"\xff"',
    b"",
    b"1",
    b"{}\x00\x00",
]


@pytest.mark.parametrize("data", BYTES, ids=range(len(BYTES)))
def test_loads_bytes_table(data: bytes) -> None:
    same_loads(data)
    same_loads(bytearray(data))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12))
def test_generated_bytes_load_as_json(data: bytes) -> None:
    same_loads(data)


def test_circular_values_fail_as_json_does() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert outcome(fastjson.dumps, loop) == outcome(json.dumps, loop)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans(), st.booleans())
def test_generated_values_round_trip_as_json(value: Any, ensure_ascii: bool, compact: bool) -> None:
    separators = (",", ":") if compact else None
    text = fastjson.dumps(value, ensure_ascii=ensure_ascii, separators=separators)
    assert text == json.dumps(value, ensure_ascii=ensure_ascii, separators=separators)
    same_loads(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=' \t\n\r{}[]",:0123456789.eE+-truefalsnNIiy\\u\ufeff\x00', max_size=40))
def test_generated_text_loads_as_json(text: str) -> None:
    same_loads(text)
    same_loads(text, no_constant)


def test_the_module_imports_neither_json_nor_re() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from credprov.base import fastjson; "
        "fastjson.loads(fastjson.dumps({'a': [1, 'b']})); "
        "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "[]"
