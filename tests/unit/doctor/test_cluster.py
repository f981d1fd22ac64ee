"""``--node-images`` and ``--objects`` are untrusted: a FIFO, a device, wrong types, deep nesting,
huge integers and YAML alias bombs give one line and exit 2, or are read leniently
(exit 0/1), never a traceback, a hang or exit 70."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from credprov.cli.main import main
from credprov.doctor import cluster
from tests.unit.doctor import nodes

DEEP = 30_000
HUGE = "9" * 5_000


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


def _doctor(capsys: pytest.CaptureFixture[str], node: Path, *args: str) -> tuple[int, str, str]:
    code = main(["doctor", "--node-root", str(node), "--no-exec", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_usage_error(code: int, err: str, needle: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and needle in err, err
    assert "internal error" not in err and "Traceback" not in err


def test_a_fifo_as_images_is_refused_at_once(node: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "images.fifo"
    os.mkfifo(fifo)
    objects = nodes.write_objects(tmp_path / "objects.json")
    argv = ["doctor", "--node-root", str(node), "--no-exec", "--objects", str(objects)]
    proc = subprocess.run(
        [sys.executable, "-m", "credprov", *argv, "--node-images", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,  # it used to block in open() until a writer came
        check=False,
    )
    _one_line_usage_error(proc.returncode, proc.stderr, "not a regular file (a FIFO)")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param(
            '{"images":' + "[" * DEEP + "]" * DEEP + "}", "exceeded max depth", id="30000 deep"
        ),
        pytest.param(
            '{"images":[{"id":' + HUGE + "}]}", "a number too long to read", id="5000 digits"
        ),
        pytest.param('{"images": 5}', "no 'images' list", id="images not a list"),
        pytest.param('{"images": [', "not JSON (unexpected end of JSON input)", id="truncated"),
    ],
)
def test_malformed_crictl_json_is_one_line(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, needle: str
) -> None:
    images = tmp_path / "images.json"
    images.write_text(content)
    objects = nodes.write_objects(tmp_path / "objects.json")
    code, _, err = _doctor(capsys, node, "--objects", str(objects), "--node-images", str(images))
    _one_line_usage_error(code, err, needle)


def test_images_devices_and_oversized_files_are_refused(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = str(nodes.write_objects(tmp_path / "objects.json"))
    code, _, err = _doctor(capsys, node, "--objects", objects, "--node-images", "/dev/zero")
    _one_line_usage_error(code, err, "not a regular file (a character device)")
    big = nodes.write_images(tmp_path / "images.json")
    monkeypatch.setattr(cluster, "MAX_IMAGES_FILE_BYTES", 64)
    code, _, err = _doctor(capsys, node, "--objects", objects, "--node-images", str(big))
    _one_line_usage_error(code, err, "larger than 64 bytes")


def test_crictl_entries_of_the_wrong_type_are_skipped(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the well-typed parts are used: the app image is still found by its tag."""
    images = tmp_path / "images.json"
    doc = {
        "images": [
            5,
            "registry-a.example.com/team/app:v1",
            {"id": {"x": 1}, "repoTags": 5, "repoDigests": "sha256:x"},
            {"id": nodes.APP_REF, "repoTags": [7, None, nodes.APP_IMAGE], "repoDigests": {}},
        ]
    }
    images.write_text(json.dumps(doc))
    objects = nodes.write_objects(tmp_path / "objects.json")
    code, out, err = _doctor(
        capsys, node, "--objects", str(objects), "--node-images", str(images), "-o", "json"
    )
    assert (code, err) == (0, "")
    [preflight] = [c for c in json.loads(out)["checks"] if c["id"] == "kep2535.preflight"]
    assert preflight["status"] == "pass"


ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
    )
    + "kind: Pod\nmetadata: {name: p}\n"
)


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        pytest.param(
            "o.json",
            '{"kind":"List","items":' + "[" * DEEP + "]" * DEEP + "}",
            "nested too deeply",
            id="30000 deep JSON",
        ),
        pytest.param(
            "o.yaml",
            "kind: Pod\nx: " + "[" * DEEP + "]" * DEEP + "\n",
            "nested too deeply",
            id="30000 deep YAML",
        ),
        pytest.param("o.yaml", ALIAS_BOMB, "not valid YAML or JSON", id="alias bomb"),
        pytest.param(
            "o.json", '{"kind":"List","items":5}', "items must be a list", id="items not a list"
        ),
    ],
)
def test_malformed_objects_are_one_line(
    node: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: str,
    needle: str,
) -> None:
    objects = tmp_path / name
    objects.write_text(content)
    images = nodes.write_images(tmp_path / "images.json")
    code, _, err = _doctor(capsys, node, "--objects", str(objects), "--node-images", str(images))
    _one_line_usage_error(code, err, needle)


def _pod(name: str, spec: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "uid": {"not": "a string"}},
        "spec": {"nodeName": nodes.NODE, **spec},
    }


#: Objects the API server's decoding refuses (so it never stored them): (object, the error).
WRONG_TYPES: list[tuple[dict[str, object], str]] = [
    (_pod("secrets-int", {"imagePullSecrets": 5}),
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal object into Go '
     "struct field ObjectMeta.metadata.uid of type types.UID"),
    ({**_pod("containers-map", {"containers": {"a": 1}}), "metadata": {"name": "c"}},
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal object into Go '
     "struct field PodSpec.spec.containers of type []v1.Container"),
    ({**_pod("sa", {"serviceAccountName": 5}), "metadata": {"name": "sa"}},
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into Go '
     "struct field PodSpec.spec.serviceAccountName of type string"),
    ({**_pod("priority", {"priority": "<HUGE>"}), "metadata": {"name": "p"}},
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number '
     + HUGE + " into Go struct field PodSpec.spec.priority of type int32"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "no-spec"}, "spec": [1, 2]},
     'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal array into Go '
     "struct field Pod.spec of type v1.PodSpec"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
      "metadata": {"name": "bad-rules"}, "rules": True},
     'ClusterRole in version "v1" cannot be handled as a ClusterRole: json: cannot unmarshal '
     "bool into Go struct field ClusterRole.rules of type []v1.PolicyRule"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
      "metadata": {"name": "bad-binding"}, "roleRef": ["ClusterRole"], "subjects": 5},
     'ClusterRoleBinding in version "v1" cannot be handled as a ClusterRoleBinding: json: '
     "cannot unmarshal array into Go struct field ClusterRoleBinding.roleRef of type "
     "v1.RoleRef"),  # the first in the document's order
]  # fmt: skip


@pytest.mark.parametrize("item, error", WRONG_TYPES, ids=[str(i) for i in range(len(WRONG_TYPES))])
def test_objects_the_api_server_never_stored_are_refused_with_its_error(
    node: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    item: dict[str, object],
    error: str,
) -> None:
    objects = tmp_path / "objects.json"
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [*nodes.objects(), item]})
    objects.write_text(text.replace('"<HUGE>"', HUGE))
    code, _, err = _doctor(capsys, node, "--objects", str(objects))
    _one_line_usage_error(code, err, error)


def test_unknown_fields_stay_lenient(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The API server's decoding drops unknown fields: such objects were stored.
    objects = tmp_path / "objects.json"
    item = _pod("huge", {"containers": [{"name": "a", "image": nodes.APP_IMAGE, "x": "<HUGE>"}]})
    item["metadata"] = {"name": "huge", "namespace": "team-a", "x": {"y": 1}}
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [*nodes.objects(), item]})
    objects.write_text(text.replace('"<HUGE>"', HUGE))
    images = nodes.write_images(tmp_path / "images.json")
    code, _, err = _doctor(
        capsys, node, "--objects", str(objects), "--node-images", str(images), "-o", "json"
    )
    assert code in (0, 1) and err == "", err


def test_objects_with_huge_integers_and_yaml_scalars_print_as_json(
    node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dates, sets, binary values and 5,000-digit integers (in YAML and in JSON) stay
    JSON-printable strings and maps; ``-o json`` prints a document."""
    yaml = tmp_path / "objects.yaml"
    yaml.write_text(
        "apiVersion: v1\nkind: Pod\n"
        "metadata: {name: dated, namespace: team-a, creationTimestamp: 2024-01-01}\n"
        "spec:\n"
        f"  nodeName: {nodes.NODE}\n"
        "  x-priority: " + HUGE + "\n"  # unknown: dropped (priority, an int32, is refused)
        "  tolerations: !!set {a, b}\n"
        "  containers:\n"
        "  - name: !!binary aGVsbG8=\n"
        "    image: 2024-01-01\n"
        "    imagePullPolicy: Never\n"
        "---\n"
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "data": '
        + HUGE
        + "}\n"
    )
    images = nodes.write_images(tmp_path / "images.json")
    code, out, err = _doctor(
        capsys, node, "--objects", str(yaml), "--node-images", str(images), "-o", "json"
    )
    assert code in (0, 1) and err == "", err
    checks = json.loads(out)["checks"]
    [preflight] = [c for c in checks if c["id"] == "kep2535.preflight"]
    assert preflight["subject"] == "team-a/dated/hello"
    assert preflight["message"].startswith("2024-01-01 is not on the node")
