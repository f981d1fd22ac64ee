"""NodeRestriction's helpers: the kubelet label policy, semantic equality and quantities."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from credprov.nodeauth import _labels, _semantic


@pytest.mark.parametrize(
    ("new", "old", "want"),
    [
        pytest.param(None, None, set(), id="empty"),
        pytest.param({"x": "1", "y": "2"}, {"x": "1", "y": "2"}, set(), id="no change"),
        pytest.param({}, {"a": "0"}, {"a"}, id="added"),
        pytest.param({"z": "3"}, {}, {"z"}, id="removed"),
        pytest.param({"z": "3"}, {"z": "4"}, {"z"}, id="changed"),
        pytest.param({}, {"a": ""}, {"a"}, id="added empty"),
        pytest.param({"z": ""}, {}, {"z"}, id="removed empty"),
        pytest.param({"z": "3"}, {"z": ""}, {"z"}, id="changed to empty"),
        pytest.param({"z": ""}, {"z": "3"}, {"z"}, id="changed from empty"),
        pytest.param(
            {"a": "1", "b": "2"},
            {"a": "2", "c": "3"},
            {"a", "b", "c"},
            id="added, removed, changed",
        ),
    ],
)
def test_modified_labels(
    new: dict[str, str] | None, old: dict[str, str] | None, want: set[str]
) -> None:
    assert _labels.modified_labels(new, old) == want


@pytest.mark.parametrize(
    ("key", "forbidden"),
    [
        ("foo", False),
        ("example.com/foo", False),
        ("kubernetes.io/hostname", False),
        ("kubernetes.io/os", False),
        ("kubernetes.io/arch", False),
        ("beta.kubernetes.io/os", False),
        ("beta.kubernetes.io/arch", False),
        ("beta.kubernetes.io/instance-type", False),
        ("node.kubernetes.io/instance-type", False),
        ("topology.kubernetes.io/zone", False),
        ("topology.kubernetes.io/region", False),
        ("failure-domain.beta.kubernetes.io/zone", False),
        ("failure-domain.beta.kubernetes.io/region", False),
        ("kubelet.kubernetes.io/foo", False),
        ("foo.kubelet.kubernetes.io/foo", False),
        ("node.kubernetes.io/foo", False),
        ("foo.node.kubernetes.io/foo", False),
        ("node-restriction.kubernetes.io/foo", True),
        ("foo.node-restriction.kubernetes.io/foo", True),
        ("kubernetes.io/foo", True),
        ("other.kubernetes.io/foo", True),
        ("k8s.io/foo", True),
        ("other.k8s.io/foo", True),
        ("beta.kubernetes.io/foo", True),
        ("node-role.kubernetes.io/control-plane", True),
        ("notkubernetes.io/foo", False),
        ("xnode.kubernetes.io/foo", True),
        ("kubernetes.io", False),
    ],
)
def test_forbidden_labels(key: str, forbidden: bool) -> None:
    assert _labels.forbidden_labels([key]) == ([key] if forbidden else [])


def test_forbidden_labels_are_sorted() -> None:
    keys = ["other.kubernetes.io/foo", "node-restriction.kubernetes.io/foo", "foo", "k8s.io/a"]
    assert _labels.forbidden_labels(keys) == [
        "k8s.io/a",
        "node-restriction.kubernetes.io/foo",
        "other.kubernetes.io/foo",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10G", Fraction(10**10)),
        ("10000M", Fraction(10**10)),
        ("1Gi", Fraction(2**30)),
        ("1.5Ki", Fraction(1536)),
        ("500m", Fraction(1, 2)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("-2", Fraction(-2)),
        (".5", Fraction(1, 2)),
        ("12", Fraction(12)),
        ("1Gb", None),
        ("", None),
        ("G", None),
    ],
)
def test_parse_quantity(text: str, value: Fraction | None) -> None:
    assert _semantic.parse_quantity(text) == value


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (None, [], True),
        (None, {}, True),
        ({"a": None}, {}, True),
        ({"a": {"b": []}}, {}, True),
        ({"a": ""}, {}, False),
        ({"a": 0}, {}, False),
        ([{"k": "v"}], [{"k": "v", "x": None}], True),
        ([1, 2], [2, 1], False),
    ],
)
def test_semantic_equal(a: Any, b: Any, equal: bool) -> None:
    assert _semantic.equal(a, b) is equal


def test_quantity_maps_compare_by_value() -> None:
    maps = frozenset({("spec", "requests")})
    a = _semantic.normalize({"spec": {"requests": {"storage": "1Gi"}}}, maps)
    b = _semantic.normalize({"spec": {"requests": {"storage": "1024Mi"}}}, maps)
    c = _semantic.normalize({"spec": {"requests": {"storage": "1G"}}}, maps)
    assert a == b
    assert a != c
    assert _semantic.diff(a, c) == 'spec.requests.storage: "1Gi" -> "1G"'


def test_diff_paths() -> None:
    old = {"a": {"b.c": 1, "d": [1, 2]}, "e": "x"}
    new = {"a": {"b.c": 2, "d": [1, 3]}, "f": True}
    assert _semantic.diff(old, new) == (
        'a["b.c"]: 1 -> 2; a.d[1]: 2 -> 3; e: "x" -> <absent>; f: <absent> -> true'
    )
