"""The block-YAML fast path answers exactly what PyYAML (the parser of record) answers, or declines.

Tables of accepted and declined documents, every YAML file the project ships, and generated
and mutated documents compared against ``goyaml`` (go-yaml's rules, the parser of record).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from credprov._go import blockyaml, goyaml
from credprov._go.decode import parse_yaml

REPO = Path(__file__).resolve().parents[3]


def goyaml_answer(text: str) -> tuple[Any, list[str]] | None:
    """goyaml's answer (go-yaml's rules), or None when it rejects the document."""
    try:
        value, _, dups = goyaml.yaml_to_json(text)
        return value, dups
    except goyaml.YAMLError:
        return None


def assert_agrees(text: str) -> Any:
    fast = blockyaml.parse(text)
    if fast is not None:
        assert goyaml_answer(text) == (fast, []), text
    return fast


ACCEPTED = [
    ("a: b\n", {"a": "b"}),
    ("---\na: b", {"a": "b"}),
    (
        "a: 1\nb: 0\nc: 922337203685477580",
        {"a": 1, "b": 0, "c": 922337203685477580},
    ),
    (
        "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: N\ng: true\nh: False",
        {
            "a": True,
            "b": False,
            "c": True,
            "d": False,
            "e": True,
            "f": False,
            "g": True,
            "h": False,
        },
    ),
    (
        "a:\nb: ~\nc: null\nd: NULL\ne: Null",
        {"a": None, "b": None, "c": None, "d": None, "e": None},
    ),
    (
        "d: 5m\ne: 1h30m\nf: 1.5h\ng: 300ms\nh: 2us",
        {"d": "5m", "e": "1h30m", "f": "1.5h", "g": "300ms", "h": "2us"},
    ),
    ('a: "x: y # z"\nb: \'it is\'  # c\nc: ""', {"a": "x: y # z", "b": "it is", "c": ""}),
    (
        "a: b#c\nb: b # c\nc: it's\nd: /x/y\ne: _u\nf: image:tag",
        {"a": "b#c", "b": "b", "c": "it's", "d": "/x/y", "e": "_u", "f": "image:tag"},
    ),
    ("a: http://x.example/y?z=[1],{2}", {"a": "http://x.example/y?z=[1],{2}"}),
    ("# c\n\n  # indented comment\na:   b   \n", {"a": "b"}),
    (
        "- a\n- 'b'\n-\n- c: d\n  e: f\n- - g\n  - h",
        ["a", "b", None, {"c": "d", "e": "f"}, ["g", "h"]],
    ),
    (
        "a:\n- x\n- w\nb:\n  - z\nc:\n    d:\n      - e: 1\n        f:\n        - g",
        {"a": ["x", "w"], "b": ["z"], "c": {"d": [{"e": 1, "f": ["g"]}]}},
    ),
    ("a:\n  -\n    b: c\n  - \n", {"a": [{"b": "c"}, None]}),
    ("a: # comment\n  b: c", {"a": {"b": "c"}}),
    ("  a: b\n  c: d", {"a": "b", "c": "d"}),
    ("k.e-y/x_1: v", {"k.e-y/x_1": "v"}),
    ("- --v=3\n- -x\n- ---\n- -- y", ["--v=3", "-x", "---", "-- y"]),
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_accepted_documents_match_goyaml(text: str, expected: Any) -> None:
    assert blockyaml.parse(text) == expected
    assert goyaml_answer(text) == (expected, [])
    assert parse_yaml(text) == (expected, [])


DECLINED = [
    "c: 123456789012345678901234567890",  # beyond int64: a float to go-yaml
    "c: 9223372036854775808",  # beyond int64: a uint64 to go-yaml
    "",  # null documents are goyaml's
    "# only a comment\n",
    "a: b\r\n",  # carriage returns
    "a:\tb",  # tabs
    "a: é",  # non-ASCII
    "a: b\na: c",  # duplicate key: a strict error
    "y: 1",  # boolean key
    "null: 1",
    '"a": b',  # quoted key
    'a: "x\\ty"',  # escapes
    "a: 'it''s'",
    "a: 'x'y",
    'a: "x"#c',
    'a: "unterminated',
    "a: -1",
    "a: -.5",
    "a: -.inf",
    "a: - x",
    "a: +1",
    "a: 012",
    "a: 0x1f",
    "a: 1_000",
    "a: 1.5",
    "a: .5",
    "a: 1e3",
    "a: .inf",
    "a: 2001-12-14",
    "a: 1:30",
    "a: 5x",
    "a: *ref",
    "a: &ref b",
    "a: !!str 1",
    "a: |\n  text",
    "a: >\n  text",
    "a: [x, y]",
    "a: {b: c}",
    "a: @x",
    "a: `x",
    "a: %x",
    "a: =",
    "a: <<",
    "a: ~x",
    "a: b: c",
    "a: b:",
    "a: multi\n  line",
    "- a\n  b",
    "a:\n  - x\n  b: y",
    "a:\n    b: 1\n  c: 2",
    "a: 1\n- b",
    "- a\nb: 1",
    "a b: c",
    "a :b",
    "scalar",
    "---\na: 1\n---\nb: 2",
    "a: 1\n...",
    "%YAML 1.1\n---\na: 1",
    "? a\n: b",
    "- # comment\n  a",
]


@pytest.mark.parametrize("text", DECLINED)
def test_declined_documents(text: str) -> None:
    assert blockyaml.parse(text) is None


def test_deep_nesting_declines_instead_of_recursing() -> None:
    text = "".join("  " * depth + f"k{depth}:\n" for depth in range(2000)) + "  " * 2000 + "v: 1"
    assert blockyaml.parse(text) is None


SHIPPED = sorted(
    p
    for pattern in ("config/*.yaml", "deploy/**/*.yaml", "tests/**/*.yaml", "plugins/**/*.yaml")
    for p in REPO.glob(pattern)
)


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(REPO)) for p in SHIPPED])
def test_shipped_yaml_agrees(path: Path) -> None:
    text = path.read_text()
    for document in text.split("\n---\n"):
        assert_agrees(document)


def test_provider_configs_take_the_fast_path() -> None:
    configs = [p for p in SHIPPED if "credential-provider-config" in p.name]
    assert configs
    for path in configs:
        assert blockyaml.parse(path.read_text()) is not None, path


# -- generated documents -----------------------------------------------------------------------

SCALARS = [
    "a",
    "b c",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "true",
    "null",
    "~",
    "",
    "0",
    "7",
    "012",
    "1.5",
    "5m",
    "1h30m",
    "1.5h",
    "-1",
    "+1",
    ".5",
    "1e3",
    "2001-12-14",
    "1:30",
    "*x",
    "&x y",
    "!t",
    "|",
    ">",
    "[a]",
    "{a: b}",
    "a#b",
    "a #b",
    "x: y",
    "x:",
    '"q"',
    '"q # r"',
    "'s'",
    "'s''t'",
    '"e\\n"',
    "http://h/p",
    "/p",
    "_u",
    "@x",
    "=",
    "<<",
    "it's",
    "a,b",
    "- z",
]
KEYS = ["a", "b", "name", "y", "on", "null", "k.e-y", "a b", '"q"', "1"]


def _render(value: Any, indent: int, style: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict):
        lines = []
        for key, sub in value.items():
            if isinstance(sub, dict | list) and sub:
                lines.append(f"{pad}{key}:")
                child = indent if isinstance(sub, list) and style % 2 else indent + 2
                lines += _render(sub, child, style // 2)
            else:
                lines.append(f"{pad}{key}: {sub if not isinstance(sub, dict | list) else ''}")
        return lines
    lines = []
    for item in value:
        if isinstance(item, dict | list) and item:
            inner = _render(item, indent + 2, style // 2)
            lines.append(pad + "- " + inner[0][indent + 2 :])
            lines += inner[1:]
        else:
            lines.append(f"{pad}- {item if not isinstance(item, dict | list) else ''}")
    return lines


trees = st.recursive(
    st.sampled_from(SCALARS),
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), children, min_size=1, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees, style=st.integers(0, 255), comment=st.booleans())
def test_generated_documents_agree(tree: Any, style: int, comment: bool) -> None:
    if not isinstance(tree, dict | list):
        tree = {"k": tree}
    lines = _render(tree, 0, style)
    if comment:
        lines.insert(len(lines) // 2, "  # a comment")
    assert_agrees("\n".join(lines) + "\n")


@settings(max_examples=400, deadline=None)
@given(
    at=st.integers(0, 10_000),
    insert=st.sampled_from([*" -:#'\"\n\tab1.*&![{|>~", "", "  ", "- ", ": "]),
    delete=st.integers(0, 3),
)
def test_mutated_config_agrees(at: int, insert: str, delete: int) -> None:
    text = (REPO / "config" / "credential-provider-config.yaml").read_text()
    at %= len(text)
    assert_agrees(text[:at] + insert + text[at + delete :])
