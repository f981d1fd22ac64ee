"""credprov's YAML path against real go-yaml: ``sigs.k8s.io/yaml.YAMLToJSON`` and
``YAMLToJSONStrict`` (what apimachinery runs before decoding a document) on the table in
:mod:`tests.differential.yamlgen` and on generated documents.

Accept or refuse, the decoded data and every error text must be equal. Two answers of Go's
are not deterministic and are compared loosely: which of several keys a ``map[interface{}]``
iteration meets first (the "Unsupported map key" error names one of them), and which value
wins when two keys of different types write the same JSON key (``1`` and ``"1"``).

``CREDPROV_DIFF_LONG=N`` runs N generated documents (1 means 20,000) instead of 400.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from credprov._go import goyaml
from tests.differential import gotool, yamlgen

pytestmark = pytest.mark.e2e

SEED = 20261125


def _ours(data: bytes, strict: bool) -> dict[str, Any]:
    try:
        value = goyaml.yaml_to_json_strict(data) if strict else goyaml.yaml_to_json(data)[0]
    except goyaml.YAMLError as exc:
        return {"ok": False, "err": str(exc)}
    return {"ok": True, "value": value}


def _key_collision(data: bytes) -> bool:
    """Whether two keys of one map write the same JSON key (Go's winner is random)."""
    try:
        docs, _ = goyaml._documents(data, strict=False, first_only=True)
    except goyaml.YAMLError:
        return False
    stack = list(docs)
    while stack:
        item = stack.pop()
        if isinstance(item, goyaml._GoMap):
            names = set()
            for (kind, key), sub in item.items():
                try:
                    names.add(goyaml._key_string(kind, key, sub))
                except goyaml.YAMLError:
                    return False
                stack.append(sub)
            if len(names) < len(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _as_kubelets_release(err: str) -> str:
    """The oracle's error (Debian's sigs.k8s.io/yaml v1.3.0) as the release the kubelet
    vendors words it: the pinned table of :data:`credprov._go.goyaml.UNSUPPORTED_MAP_KEY`."""
    old, new = (
        goyaml.UNSUPPORTED_MAP_KEY["v1.3.0"],
        goyaml.UNSUPPORTED_MAP_KEY[goyaml.SIGS_YAML_RELEASE],
    )
    return new + err[len(old) :] if err.startswith(old) else err


def _divergence(data: bytes, go: dict[str, Any], ours: dict[str, Any]) -> str | None:
    if go["ok"] != ours["ok"]:
        return f"go {'accepts' if go['ok'] else 'refuses: ' + go['err']!r}; credprov " + (
            "accepts" if ours["ok"] else f"refuses: {ours['err']!r}"
        )
    if go["ok"]:
        expected = json.loads(go["out"])
        if expected == ours["value"] and json.dumps(expected) == json.dumps(ours["value"]):
            return None
        if _key_collision(data):
            return None
        return (
            f"values differ: go {go['out'][:200]!r}, credprov {json.dumps(ours['value'])[:200]!r}"
        )
    go_err = _as_kubelets_release(go["err"])
    if go_err == ours["err"]:
        return None
    unsupported = goyaml.UNSUPPORTED_MAP_KEY[goyaml.SIGS_YAML_RELEASE] + ": "
    if go_err.startswith(unsupported) and ours["err"].startswith(unsupported):
        return None
    return f"texts differ: go {go['err']!r}, credprov {ours['err']!r}"


def _run(inputs: list[bytes]) -> list[str]:
    oracle = gotool.oracle("yaml")
    failures = []
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 50_000))  # json.loads of Go's 10,000-deep answers
    try:
        for chunk in gotool.chunks(inputs, 2000):
            for op, strict in (("y2j", False), ("y2js", True)):
                answers = oracle.ask([{"op": op, "in": data} for data in chunk])
                for data, go in zip(chunk, answers, strict=True):
                    problem = _divergence(data, go, _ours(data, strict))
                    if problem is not None:
                        failures.append(f"{op} {data[:120]!r}: {problem}")
    finally:
        sys.setrecursionlimit(old_limit)
    return failures


def test_table_matches_go() -> None:
    failures = _run(yamlgen.TABLE)
    assert not failures, "\n".join(failures)


def test_generated_documents_match_go() -> None:
    failures = _run(yamlgen.cases(SEED, gotool.case_count(400)))
    assert not failures, f"{len(failures)} divergences:\n" + "\n".join(failures[:30])
