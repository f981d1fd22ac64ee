"""``kep4412 wire``'s YAML read back by real go-yaml (``sigs.k8s.io/yaml.YAMLToJSON``, what
``kubectl apply`` and the kubelet run): every string the wiring writes must come back as
the same string (issue 32, item 8).

Before: PyYAML wrote U+0085 raw inside a single-quoted scalar and go-yaml read it as a line
break, folded to a space (an annotation value, or the ClusterRole's audience, changed on
the way to the cluster). Each row is one string through :func:`render_yaml`, alone and as
an annotation value of a generated ServiceAccount.
"""

from __future__ import annotations

import json

import pytest

from credprov.nodeauth import wiring as w
from tests.differential import gotool

pytestmark = pytest.mark.e2e

ROLE_KEY = "registry.example.com/role"

STRINGS = [
    "plain",
    "",
    "a\u0085b",  # NEL: a line break to YAML 1.1
    "\u0085",
    "a\u2028b",  # LS
    "a\u2029b",  # PS
    "\ufeffbom",
    "a\nb",
    "a\r\nb",
    "a\rb",
    "\ttab",
    "tab\t",
    " leading",
    "trailing ",
    "a  b",
    "a \u0085 b",
    "x: y",
    "- a",
    "yes",
    "off",
    "0o17",
    "1e3",
    "0x1F",
    "~",
    "null",
    "'q'",
    '"q"',
    "#c",
    "a #b",
    "\x01\x02",
    "\x7f",
    "\u009b31m",
    "\x1b[31mred",
    "\u202eevil",
    "\U0001f600",
    "a\\b",
    "@x",
    "`x",
    "%x",
    "!x",
    "&x",
    "*x",
    "|",
    ">",
    "? x",
    "{a: b}",
    "[a]",
    "---",
    "...",
    "a\n\nb",
    "\n",
    "word " * 15_000,  # longer than the dumper's width
    ("a\u0085 " * 20_000),
]


def _go_read(documents: list[str]) -> list[object]:
    answers = gotool.oracle("yaml").ask(
        [{"op": "y2j", "in": doc.encode("utf-8")} for doc in documents]
    )
    out = []
    for doc, answer in zip(documents, answers, strict=True):
        assert answer["ok"], (doc[:200], answer)
        out.append(json.loads(answer["out"]))
    return out


def test_every_string_reads_back_identically_with_go_yaml() -> None:
    docs = [w.render_yaml([{"value": value}]) for value in STRINGS]
    read = _go_read(docs)
    wrong = [
        (value[:60], got)
        for value, got in zip(STRINGS, read, strict=True)
        if got != {"value": value}
    ]
    assert wrong == []


def test_wired_annotations_read_back_identically_with_go_yaml() -> None:
    accounts = [
        w.ServiceAccountRef("team-a", f"sa-{i}", {ROLE_KEY: value})
        for i, value in enumerate(STRINGS)
    ]
    built = w.build(
        w.WiringSpec(
            {
                "name": "example-credential-provider",
                "matchImages": ["registry.example.com"],
                "defaultCacheDuration": "5m",
                "tokenAttributes": {
                    "serviceAccountTokenAudience": "registry.example.com",
                    "cacheType": "ServiceAccount",
                    "requiredServiceAccountAnnotationKeys": [ROLE_KEY],
                },
            },
            tuple(accounts),
        )
    )
    objects = built.manifests
    read = _go_read([w.render_yaml([obj]) for obj in objects])
    assert read == [json.loads(json.dumps(obj)) for obj in objects]
