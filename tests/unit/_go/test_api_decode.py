"""The apimachinery-style decoder: recognition, Interpret, YAML quirks, strict decoding."""

from __future__ import annotations

import pytest

from credprov._go.decode import (
    BOOL,
    MAX_STRICT_ERRORS,
    STRING,
    DecodeError,
    Map,
    Ptr,
    Slice,
    StrictDecodingError,
    Struct,
    decode_typed,
    interpret_gvk,
    is_json,
    load_document,
    parse_group_version,
)


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (b"{}", True),
        (b" \t\r\n{", True),
        (b"---\n{}", False),
        (b"[1]", False),
        (b"\xef\xbb\xbf{}", False),  # a BOM is not space: the YAML path is used
        (b"", False),
    ],
    ids=["brace", "leading-space", "yaml-marker", "array", "bom", "empty"],
)
def test_is_json(data: bytes, want: bool) -> None:
    assert is_json(data) is want


@pytest.mark.parametrize(
    ("gv", "want"),
    [("", ("", "")), ("/", ("", "")), ("v1", ("", "v1")), ("g/v1", ("g", "v1")), ("g/", ("g", ""))],
    ids=["empty", "slash", "version-only", "group-version", "empty-version"],
)
def test_parse_group_version(gv: str, want: tuple[str, str]) -> None:
    assert parse_group_version(gv) == want


@pytest.mark.parametrize(
    ("data", "want"),
    [
        ('{"kind":"K","apiVersion":"g/v"}', ("g", "v", "K")),
        ('{"KIND":"K","ApiVersion":"g/v"}', ("g", "v", "K")),
        ('{"kind":"A","Kind":"B","apiVersion":"v"}', ("", "v", "B")),
        ('{"kind":null,"kind":"K","apiVersion":"v"}', ("", "v", "K")),
        ("kind: K\napiVersion: g/v\n", ("g", "v", "K")),
        ('{"\u212aind":"K","apiVersion":"v"}', ("", "v", "K")),  # Kelvin sign folds to k
    ],
    ids=["exact", "any-case", "last-wins", "null-ignored", "yaml", "unicode-fold"],
)
def test_interpret_gvk(data: str, want: tuple[str, str, str]) -> None:
    assert interpret_gvk(load_document(data.encode())) == want


_SPEC = Struct(
    "T",
    "v1",
    {
        "s": STRING,
        "b": Ptr(BOOL),
        "l": Slice(STRING),
        "m": Map(STRING),
        "o": Ptr(Struct("Inner", "v1", {"x": STRING})),
    },
)


def _decode(text: str) -> dict[str, object]:
    return decode_typed(_SPEC, load_document(text.encode()))


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            '{"s":"a","b":true,"l":["x"],"m":{"k":"v"},"o":{"x":"y"}}',
            {"s": "a", "b": True, "l": ["x"], "m": {"k": "v"}, "o": {"x": "y"}},
        ),
        ('{"s":null,"l":[null],"m":{"k":null},"o":null}', {"l": [""], "m": {"k": ""}, "o": None}),
        ("b: y\nl: [n, Y]\n", "type-error"),
        ("b: yes\n", {"b": True}),
        ("b: off\n", {"b": False}),
        ("m: {1: a, true: b}\n", {"m": {"1": "a", "true": "b"}}),
        ("a: &x {x: z}\no: *x\n", "strict"),
        ("o: &x {x: z}\n", {"o": {"x": "z"}}),
    ],
    ids=[
        "all-fields",
        "nulls",
        "go-yaml-reads-y-as-bool",
        "yes-is-bool",
        "off-is-bool",
        "non-string-keys-become-strings",
        "alias-in-unknown-field",
        "anchor",
    ],
)
def test_decode_typed(text: str, want: object) -> None:
    if want == "type-error":
        with pytest.raises(DecodeError, match=r"cannot unmarshal bool into Go struct field T\.l"):
            _decode(text)
    elif want == "strict":
        with pytest.raises(StrictDecodingError, match='unknown field "a"'):
            _decode(text)
    else:
        assert _decode(text) == want


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        ('{"s":"a","s":"b"}', ['duplicate field "s"']),
        ('{"o":{"x":"a","x":"b","z":1}}', ['duplicate field "o.x"', 'unknown field "o.z"']),
        ('{"m":{"k":"a","k":"b"}}', ['duplicate field "m.k"']),
        ('{"z":1,"z":2}', ['unknown field "z"']),
        ('{"a\\"b":1}', ['unknown field "a\\"b"']),
        (
            "s: a\ns: b\nm:\n  k: x\n  k: z\n",
            [
                "yaml: unmarshal errors:\n"
                '  line 2: key "s" already set in map\n'
                '  line 5: key "k" already set in map'
            ],
        ),
        (
            "1: a\n1: b\n",
            [
                "yaml: unmarshal errors:\n  line 2: key 1 already set in map",
                'unknown field "1"',
            ],
        ),
    ],
    ids=[
        "json-duplicate",
        "nested-duplicate-then-unknown",
        "duplicate-map-key",
        "unknown-deduplicated",
        "path-is-go-quoted",
        "yaml-duplicates-reported-by-line",
        "yaml-int-key-duplicate",
    ],
)
def test_strict_errors(text: str, errors: list[str]) -> None:
    with pytest.raises(StrictDecodingError) as info:
        _decode(text)
    assert info.value.errors == errors


def test_strict_errors_are_capped() -> None:
    text = "{" + ",".join(f'"u{i}":1' for i in range(150)) + "}"
    with pytest.raises(StrictDecodingError) as info:
        _decode(text)
    assert len(info.value.errors) == MAX_STRICT_ERRORS


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "couldn't get version/kind; json parse error: unexpected end of JSON input"),
        (
            b'{"a":1,}',
            "couldn't get version/kind; json parse error: invalid character '}' looking for "
            "beginning of object key string",
        ),
        (
            b'{"a":NaN}',
            "couldn't get version/kind; json parse error: invalid character 'N' looking for "
            "beginning of value",
        ),
        (
            b"a: [",
            "yaml: line 1: ",
        ),
        (
            b"a: .nan\n",
            "json: unsupported value: NaN",
        ),
    ],
    ids=["truncated-json", "trailing-comma", "nan-json", "bad-yaml", "nan-yaml"],
)
def test_load_document_errors(data: bytes, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        load_document(data)
    # YAML syntax errors keep go-yaml's prefix and line only; PyYAML words the problem.
    assert str(info.value).startswith(message) if data == b"a: [" else str(info.value) == message


def test_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(DecodeError, match="excessive aliasing"):
        load_document("\n".join(lines).encode())
