"""credprov's typed decoding (:func:`credprov._go.decode.decode_typed` with the API types'
specs) against apimachinery's: sigs.k8s.io/yaml, then sigs.k8s.io/json.UnmarshalStrict into
Go types that mirror the API's (``go/typed``), with apimachinery's "strict decoding error"
wording. Accept or refuse, the error text must be equal.

* The KEP-2535 kinds ``ImagePullIntent`` and ``ImagePulledRecord`` (what a document of those
  kinds given as a provider config meets before its kind is checked), strictly.
* The cluster objects of :mod:`credprov.api.objects` (Pods, Secrets, ServiceAccounts, Nodes,
  RBAC), leniently as the API server decodes a body (unknown fields dropped), with its
  "cannot be handled as a" wording (:func:`credprov.api.objects.decode_object`).

Generated documents: each row's valid document with fields dropped, retyped (a number for a
string, a string for a bool, a list for a map...), nulled, duplicated, and unknown fields
added at every level. ``CREDPROV_DIFF_LONG=N`` runs N documents per type instead of 300.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from credprov._go.decode import DecodeError, Struct, decode_typed, load_document
from credprov.api.objects import SPECS, decode_object
from credprov.api.specs import pull_record_spec
from tests.differential import gotool

pytestmark = pytest.mark.e2e

#: Go type name -> (credprov's spec, a valid document)
TYPES: dict[str, tuple[Struct, dict[str, Any]]] = {
    "ImagePullIntent": (
        pull_record_spec("ImagePullIntent", "v1beta1"),
        {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "ImagePullIntent",
         "image": "registry.io/app:v1"},
    ),
    "ImagePulledRecord": (
        pull_record_spec("ImagePulledRecord", "v1beta1"),
        {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "ImagePulledRecord",
         "lastUpdatedTime": "2026-01-02T03:04:05Z", "imageRef": "sha256:abc",
         "credentialMapping": {"registry.io/app": {
             "kubernetesSecrets": [{"uid": "u", "namespace": "n", "name": "s",
                                    "credentialHash": "h"}],
             "kubernetesServiceAccounts": [{"uid": "u", "namespace": "n", "name": "sa"}],
             "nodePodsAccessible": True}}},
    ),
}  # fmt: skip

_META = {
    "name": "n",
    "namespace": "ns",
    "uid": "u",
    "labels": {"a": "b"},
    "generation": 3,
    "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "x", "uid": "y", "controller": True}
    ],
}
#: Kind -> a valid object (each kind of credprov.api.objects.SPECS).
CLUSTER: dict[str, dict[str, Any]] = {
    "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": _META, "spec": {
        "nodeName": "node-a", "serviceAccountName": "sa", "priority": 10,
        "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 30,
        "imagePullSecrets": [{"name": "s"}],
        "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always",
                        "ports": [{"containerPort": 80, "hostPort": 8080}]}],
        "initContainers": [{"name": "i", "image": "i", "stdin": True}],
        "ephemeralContainers": [{"name": "e", "image": "i", "targetContainerName": "c"}],
        "volumes": [
            {"name": "a", "secret": {"secretName": "s", "defaultMode": 420,
                                     "items": [{"key": "k", "path": "p", "mode": 256}]}},
            {"name": "b", "configMap": {"name": "cm", "optional": True}},
            {"name": "c", "persistentVolumeClaim": {"claimName": "pvc", "readOnly": True}},
            {"name": "d", "projected": {"sources": [
                {"serviceAccountToken": {"audience": "x", "expirationSeconds": 3600,
                                         "path": "t"}},
                {"secret": {"name": "s"}}, {"configMap": {"name": "c"}}]}},
            {"name": "e", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"},
                                  "volumeAttributes": {"a": "b"}}},
            {"name": "f", "image": {"reference": "r", "pullPolicy": "IfNotPresent"}},
            {"name": "g", "hostPath": {"path": "/x", "type": "Directory"}}]}},
    "Secret": {"apiVersion": "v1", "kind": "Secret", "metadata": _META, "type": "Opaque",
               "data": {"k": "dmFsdWU="}, "stringData": {"a": "b"}, "immutable": True},
    "ServiceAccount": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _META,
                       "secrets": [{"name": "s", "uid": "u"}],
                       "imagePullSecrets": [{"name": "s"}],
                       "automountServiceAccountToken": True},
    "Node": {"apiVersion": "v1", "kind": "Node", "metadata": _META,
             "spec": {"providerID": "aws:///x", "podCIDRs": ["10.0.0.0/24"],
                      "unschedulable": True}},
    "Role": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _META,
             "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                        "resourceNames": ["s"]}]},
    "ClusterRole": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": _META, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]},
    "RoleBinding": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": _META, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                  "kind": "Role", "name": "r"},
                    "subjects": [{"kind": "User", "name": "u", "namespace": "n"}]},
    "ClusterRoleBinding": {"apiVersion": "rbac.authorization.k8s.io/v1",
                           "kind": "ClusterRoleBinding", "metadata": _META,
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                       "kind": "ClusterRole", "name": "r"},
                           "subjects": [{"kind": "Group", "name": "g"}]},
}  # fmt: skip

#: Hand-written rows: (Go type, YAML document)
TABLE = [
    ("ImagePulledRecord", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: ImagePulledRecord\n"
     "imageRef: x\nbogus: 1\n"),
    ("ImagePulledRecord", "kind: ImagePulledRecord\nlastUpdatedTime: 5\nextra: 1\n"),
    ("ImagePulledRecord", "kind: ImagePulledRecord\nimageRef: a\nimageRef: b\n"),
    ("ImagePulledRecord", "credentialMapping:\n  r:\n    kubernetesSecrets:\n    - uid: 1\n"
     "      other: x\n"),
    ("ImagePullIntent", "kind: ImagePullIntent\nimage: [x]\nz: 1\n"),
    ("ImagePullIntent", "kind: ImagePullIntent\nimage: x\n"),
    ("Pod", "kind: Pod\nspec:\n  priority: 99999999999\n"),
    ("Pod", '{"kind": "Pod", "spec": {"priority": ' + "9" * 5000 + "}}"),
    ("Pod", "kind: Pod\nspec:\n  priority: 1.5\n  containers: [{name: c, stdin: 'yes'}]\n"),
    ("Secret", '{"apiVersion": [], "kind": "Secret", "data": {"k": "2026-01-02T03:04:05Z"}}'),
    ("Secret", '{"kind": "Secret", "data": {"k": "a", "j": [1, 256]}}'),
    ("ServiceAccount", "kind: ServiceAccount\nautomountServiceAccountToken: 'true'\n"),
]  # fmt: skip

_ODD = [5, -1.5, True, "text", [], ["x"], {}, {"k": "v"}, None, "2026-01-02T03:04:05Z",
        2147483648, -2147483649, 9223372036854775808, 1e40, 1.0, "12"]  # fmt: skip


def _odd(rng: random.Random) -> Any:
    return json.loads(json.dumps(rng.choice(_ODD)))  # a fresh copy: mutations nest


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            out += _paths(sub, (*path, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += _paths(sub, (*path, i))
    return out


def _mutate(rng: random.Random, doc: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(doc))
        parent, key = None, None
        target = doc
        for step in path:
            parent, key = target, step
            target = target[step]
        choice = rng.random()
        if choice < 0.35 and isinstance(target, dict):
            target[rng.choice(["bogus", "Image", "imageref", "x-y", "uid"])] = _odd(rng)
        elif parent is not None and choice < 0.85:
            value = _odd(rng)
            if path[-1] == "lastUpdatedTime" and isinstance(value, str):
                value = "2026-01-02T03:04:05Z"  # time.Parse's errors are not reproduced
            parent[key] = value
        elif parent is not None and isinstance(parent, dict):
            del parent[key]
    return doc


def _yaml(doc: Any, rng: random.Random) -> str:
    text = json.dumps(doc)
    if rng.random() < 0.3 and isinstance(doc, dict) and doc:
        key = rng.choice(list(doc))
        text = text[:-1] + f", {json.dumps(key)}: {json.dumps(doc[key])}}}"  # a duplicate
    return text if rng.random() < 0.5 else text.replace("{", "{ ").replace("}", " }")


def _ours(kind: str, text: str) -> dict[str, Any]:
    try:
        doc = load_document(("---\n" + text).encode())
        if kind in CLUSTER:
            obj = doc.data if isinstance(doc.data, dict) else {}
            decode_object({**obj, "kind": kind})
        else:
            decode_typed(TYPES[kind][0], doc)
    except DecodeError as exc:
        return {"ok": False, "err": str(exc)}
    return {"ok": True}


def _api_server_text(kind: str, version: str, err: str) -> str:
    """apimachinery's error as the API server words it for a body of ``kind``."""
    return f"{kind} in version {json.dumps(version)} cannot be handled as a {kind}: {err}"


def _cases() -> list[tuple[str, str]]:
    rng = random.Random(20261233)
    out = list(TABLE)
    for kind, valid in [*((k, v) for k, (_, v) in TYPES.items()), *CLUSTER.items()]:
        for _ in range(gotool.case_count(300)):
            doc = _mutate(rng, valid)
            if kind in CLUSTER and isinstance(doc, dict):
                doc["kind"] = kind  # the kind decides the type, as the request's URL does
            out.append((kind, _yaml(doc, rng)))
    return out


def test_every_cluster_kind_is_generated() -> None:
    assert set(CLUSTER) == set(SPECS)


def test_typed_decoding_matches_apimachinery() -> None:
    cases = _cases()
    answers = gotool.oracle("typed").ask(
        [{"op": kind, "in": ("---\n" + text).encode()} for kind, text in cases]
    )
    failures = []
    for (kind, text), go in zip(cases, answers, strict=True):
        # The oracle's types live in package main; the API's in their version's package.
        err = str(go.get("err", "")).replace("main.UID", "types.UID")
        if kind in CLUSTER:
            err = err.replace("main.", "v1.")
            if not go["ok"] and not err.startswith("yaml: "):
                err = _api_server_text(kind, "v1", err)
        else:
            err = err.replace("main.", f"{TYPES[kind][0].pkg}.")
        want = {"ok": True} if go["ok"] else {"ok": False, "err": err}
        got = _ours(kind, text)
        if got != want:
            failures.append(f"{kind} {text[:160]!r}:\n  go       {want}\n  credprov {got}")
    assert not failures, f"{len(failures)} of {len(cases)} diverge:\n" + "\n".join(failures[:20])
