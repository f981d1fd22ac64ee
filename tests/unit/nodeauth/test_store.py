"""The object store and the objects-file reader (kubectl output in all its shapes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from credprov.nodeauth import store as store_module
from credprov.nodeauth.store import (
    NodeAuthError,
    ObjectStore,
    load_objects_file,
    parse_objects,
    resource_for,
)
from tests.conftest import CANARY

SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "s", "namespace": "ns"},
    "stringData": {"password": CANARY},  # data would hold base64
}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "namespace": "ignored"}}


def test_kubectl_list_json(tmp_path: Path) -> None:
    path = tmp_path / "objects.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [SECRET, POD, NODE]}))
    store = load_objects_file(str(path))
    assert len(store) == 3
    assert store.get("secrets", "ns", "s") == SECRET
    assert store.get("nodes", "", "n1") == NODE  # cluster-scoped: namespace dropped
    assert store.resources() == ["nodes", "pods", "secrets"]


def test_typed_list_items_take_the_lists_kind() -> None:
    data = json.dumps(
        {"apiVersion": "v1", "kind": "PodList", "items": [{"metadata": {"name": "p"}}]}
    ).encode()
    [obj] = parse_objects(data)
    assert obj["kind"] == "Pod"
    assert ObjectStore([obj]).get("pods", "default", "p") is not None


def test_multi_document_yaml_and_json_array(tmp_path: Path) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ns}\n---\n"
        "---\nkind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n"
    )
    store = load_objects_file(str(path))
    assert store.get("pods", "ns", "a") is not None
    assert store.get("configmaps", "default", "c") is not None
    array = parse_objects(json.dumps([POD, SECRET]).encode())
    assert [o["kind"] for o in array] == ["Pod", "Secret"]


def test_apply_and_delete_return_the_previous_object() -> None:
    store = ObjectStore()
    assert store.apply(POD) is None
    newer = {**POD, "spec": {"nodeName": "n1"}}
    assert store.apply(newer) is POD
    assert store.list("pods") == [newer]
    assert store.delete({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}) is newer
    assert store.delete(POD) is None
    assert store.list("pods") == []


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("PersistentVolumeClaim", "persistentvolumeclaims"),
        ("CSIDriver", "csidrivers"),
        ("PodCertificateRequest", "podcertificaterequests"),
        ("NetworkPolicy", "networkpolicies"),
        ("Gateway", "gateways"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Ingress", "ingresses"),
        ("Box", "boxes"),
    ],
)
def test_resource_for(kind: str, resource: str) -> None:
    assert resource_for({"kind": kind}) == resource


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"kind: Pod\nmetadata: {name: [", "is not valid YAML or JSON (line "),
        (b"- 1\n- 2\n", "document 1 is a int, not an object"),
        (b"just text", "document 1 is a str, not an object"),
        (b'{"metadata": {"name": "x"}}', "document 1: object has no kind"),
        (b'{"kind": "Pod", "metadata": {}}', "document 1: Pod has no metadata.name"),
        (b'{"kind": "List", "items": {"a": 1}}', "document 1: List items must be a list"),
        (b'{"kind": "List", "items": [1]}', "document 1 item 1: not an object but a int"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(NodeAuthError) as err:
        load_objects_file(str(path))
    text = str(err.value)
    assert message in text and "\n" not in text
    assert text.startswith(f"objects file {path}")


def test_errors_never_quote_the_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(f"kind: Secret\nmetadata: {{namespace: ns}}\ndata: {{password: {CANARY}}}\n")
    with pytest.raises(NodeAuthError) as err:
        load_objects_file(str(path))
    assert CANARY not in str(err.value)
    path.write_text(f"kind: Secret\ndata: {{password: {CANARY}\n")
    with pytest.raises(NodeAuthError) as err:
        load_objects_file(str(path))
    assert CANARY not in str(err.value)


def test_unreadable_and_oversized_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(NodeAuthError, match=r"cannot read objects file .*: No such file"):
        load_objects_file(str(tmp_path / "missing.yaml"))
    with pytest.raises(NodeAuthError, match=r"not a regular file \(a directory\)"):
        load_objects_file(str(tmp_path))
    monkeypatch.setattr(store_module, "MAX_OBJECTS_FILE_BYTES", 10)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(POD))
    with pytest.raises(NodeAuthError, match="is larger than 10 bytes"):
        load_objects_file(str(big))


def test_store_rejects_objects_without_identity() -> None:
    with pytest.raises(NodeAuthError, match=r"has no metadata\.name"):
        ObjectStore([{"kind": "Pod", "metadata": {"name": ""}}])
