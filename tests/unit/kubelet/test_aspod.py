"""``credprov get-credentials --objects FILE --pod NS/NAME [--node NAME]``: the happy path
on the shipped example (config/kep4412-*), another node's view, the usage errors, and the
images a pod brings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from credprov.cli.main import main
from tests.conftest import CANARY
from tests.unit.nodeauth.kep4412_fixtures import (
    IMAGE,
    PluginNode,
    cluster,
    pod,
    token_attributes,
    write_objects,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFIG = REPO_ROOT / "config"
EXAMPLE = [
    "get-credentials",
    "--config", str(CONFIG / "kep4412-credential-provider-config.yaml"),
    "--bin-dir", str(CONFIG / "bin"),
    "--objects", str(CONFIG / "kep4412-objects.yaml"),
    "--pod", "team-a/app",
]  # fmt: skip
SA_UID = "5e1d2c3b-0000-4000-8000-000000000001"
#: Passwords in the example files: never printed.
EXAMPLE_SECRETS = ("not-a-real-password", "secret-from-pod", "cHVsbDpzZWNyZXQtZnJvbS1wb2Q=")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    for secret in (*EXAMPLE_SECRETS, CANARY):
        assert secret not in out + err
    return code, out, err


def test_example_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *EXAMPLE)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "as pod team-a/app on node node-1 (service account builder)",
        "registry.example.com/team-a/app:v1 -> registry.example.com/team-a/app",
        "  1. registry.example.com: username=pull password=<redacted> source=secret:team-a/regcred",
        "  2. registry.example.com: username=robot password=<redacted> "
        "source=provider:example-credential-provider",
        "  provider example-credential-provider: executed, cacheKeyType=Registry "
        f"cacheDuration=10m0s serviceAccount=team-a/builder (uid {SA_UID})",
    ]


def test_example_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *EXAMPLE, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["pod"] == {
        "namespace": "team-a",
        "name": "app",
        "uid": "9c8b7a6d-0000-4000-8000-00000000000a",
        "serviceAccountName": "builder",
    }
    assert (doc["node"], doc["warnings"], doc["tokensIssued"]) == ("node-1", [], 1)
    assert doc["executions"] == {"example-credential-provider": 1}
    assert [
        (a["verb"], a["resource"], a.get("subresource", ""), a["name"], a["allowed"])
        for a in doc["authorizations"]
    ] == [
        ("get", "secrets", "", "regcred", True),
        ("get", "serviceaccounts", "", "builder", True),
        ("create", "serviceaccounts", "token", "builder", True),
        ("request-serviceaccounts-token-audience", "registry.example.com", "", "builder", True),
    ]
    assert doc["authorizations"][-1]["reason"].startswith(
        'RBAC: allowed by ClusterRoleBinding "nodes-registry-example-token-audience"'
    )
    [image] = doc["images"]
    assert [c["source"] for c in image["credentials"]] == [
        "secret:team-a/regcred",
        "provider:example-credential-provider",
    ]
    assert {c["password"] for c in image["credentials"]} == {"<redacted>"}
    [provider] = image["providers"]
    assert provider["serviceAccount"] == {"namespace": "team-a", "name": "builder", "uid": SA_UID}


def test_another_node_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *EXAMPLE, "--node", "node-2")
    assert code == 1
    forbidden = (
        'is forbidden: User "system:node:node-2" cannot get resource "{}" in API group "" in '
        "the namespace \"team-a\": no relationship found between node 'node-2' and this object"
    )
    assert err.splitlines() == [
        "credprov: warning: Unable to retrieve pull secret team-a/regcred for team-a/app due to "
        'secrets "regcred" ' + forbidden.format("secrets") + ".  The image pull may not succeed.",
        "credprov: some images could not be resolved (see above)",
    ]
    lines = out.splitlines()
    assert lines[0] == "as pod team-a/app on node node-2 (service account builder)"
    assert "  no credentials (the kubelet would pull anonymously)" in lines
    assert lines[-1] == (
        '  provider example-credential-provider: error: serviceaccounts "builder" '
        + forbidden.format("serviceaccounts")
    )

    code, out, _ = run(capsys, *EXAMPLE, "--node", "node-2", "-o", "json")
    doc = json.loads(out)
    assert code == 1 and doc["tokensIssued"] == 0 and doc["node"] == "node-2"
    assert [a["allowed"] for a in doc["authorizations"]] == [False, False]
    assert len(doc["warnings"]) == 1


@pytest.fixture
def objects(tmp_path: Path) -> Path:
    unbound = pod("pending", node="")
    del unbound["spec"]["nodeName"]
    return write_objects(tmp_path / "objects.yaml", [*cluster(), unbound])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pod", "team-a/app"], "--objects and --pod go together (--node needs both)"),
        (["--objects", "{objects}", "IMG"], "--objects and --pod go together"),
        (["--node", "node-1", "IMG"], "--objects and --pod go together"),
        (["--objects", "{objects}", "--pod", "app"], "--pod 'app': want NAMESPACE/NAME"),
        (["--objects", "{objects}", "--pod", "a/b/c"], "--pod 'a/b/c': want NAMESPACE/NAME"),
        (["--objects", "{objects}", "--pod", "/app"], "--pod '/app': want NAMESPACE/NAME"),
        (["--objects", "{objects}", "--pod", "team-a/"], "--pod 'team-a/': want NAMESPACE/NAME"),
        (
            ["--objects", "{objects}", "--pod", "team-b/app"],
            "pod team-b/app is not in {objects}",
        ),
        (
            ["--objects", "{objects}", "--pod", "team-a/pending"],
            "pod team-a/pending is not bound to a node: pass --node",
        ),
        (
            ["--objects", "{objects}", "--pod", "team-a/app", "--pull-secret", "{objects}"],
            "--pull-secret cannot be combined with --pod",
        ),
        (
            ["--objects", "{tmp}/missing.yaml", "--pod", "team-a/app"],
            "cannot read objects file {tmp}/missing.yaml: No such file or directory",
        ),
        (
            ["--objects", "{tmp}/garbage.yaml", "--pod", "team-a/app"],
            "objects file {tmp}/garbage.yaml is not valid YAML or JSON (line 1)",
        ),
        (
            ["--objects", "{tmp}/scalar.yaml", "--pod", "team-a/app"],
            "objects file {tmp}/scalar.yaml: document 1 is a str, not an object",
        ),
        (
            ["--objects", "{tmp}/nameless.yaml", "--pod", "team-a/app"],
            "objects file {tmp}/nameless.yaml: document 1",
        ),
        (
            ["--objects", "{tmp}/noimages.yaml", "--pod", "team-a/empty"],
            "pod team-a/empty has no images: give IMAGE",
        ),
    ],
)
def test_usage_errors_are_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    objects: Path,
    argv: list[str],
    message: str,
) -> None:
    (tmp_path / "garbage.yaml").write_text("a: [unclosed\n")
    (tmp_path / "scalar.yaml").write_text("just some text\n")
    (tmp_path / "nameless.yaml").write_text("kind: Pod\nmetadata: {}\n")
    empty = pod("empty")
    empty["spec"]["containers"] = []
    write_objects(tmp_path / "noimages.yaml", [empty])
    plugins = PluginNode(tmp_path)
    config = plugins.config(token_attributes())
    values = {"objects": str(objects), "tmp": str(tmp_path)}
    code, out, err = run(
        capsys,
        "get-credentials",
        "--config",
        str(config),
        "--bin-dir",
        str(plugins.bin_dir),
        *(a.format(**values) for a in argv),
    )
    assert code == 1 and out == ""
    assert err.startswith("credprov: error: ") and err.count("\n") == 1, err
    assert message.format(**values) in err
    assert plugins.executions() == 0


def test_images_default_to_every_container_of_the_pod(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    many = pod(
        "many",
        initContainers=[{"name": "init", "image": "registry.example.com/team-a/init:v1"}],
        ephemeralContainers=[{"name": "debug", "image": "busybox:1.36"}],
    )
    many["spec"]["containers"].append({"name": "side", "image": "quay.io/team-a/side:v2"})
    many["spec"]["containers"].append({"name": "again", "image": IMAGE})  # once only
    objects = write_objects(tmp_path / "objects.yaml", [*cluster(), many])
    plugins = PluginNode(tmp_path)
    base = [
        "get-credentials",
        "--config", str(plugins.config(token_attributes(required=(), optional=()))),
        "--bin-dir", str(plugins.bin_dir),
        "--objects", str(objects),
        "--pod", "team-a/many",
        "-o", "json",
    ]  # fmt: skip
    code, out, _ = run(capsys, *base)
    doc: dict[str, Any] = json.loads(out)
    assert code == 0
    assert [i["image"] for i in doc["images"]] == [
        "registry.example.com/team-a/init:v1",
        IMAGE,
        "quay.io/team-a/side:v2",
        "busybox:1.36",
    ]
    # Two images of one registry, one pod, cacheType ServiceAccount: one plugin run and
    # one token (the token manager reuses the pod's token).
    assert doc["executions"] == {"fake": 1} and doc["tokensIssued"] == 1

    code, out, _ = run(capsys, *base, "quay.io/team-a/side:v2")
    assert [i["image"] for i in json.loads(out)["images"]] == ["quay.io/team-a/side:v2"]


@pytest.mark.parametrize(
    ("volumes", "expected"),
    [
        pytest.param(
            [{"name": "data", "image": {"reference": "registry.example.com/team-a/data:v1"}}],
            ["registry.example.com/team-a/data:v1", IMAGE],
            id="an image volume, pulled first",
        ),
        pytest.param(
            [
                {"name": "a", "image": {"reference": IMAGE, "pullPolicy": "Always"}},
                {"name": "b", "image": {"reference": "quay.io/team-a/model:v3"}},
                {"name": "scratch", "emptyDir": {}},
            ],
            [IMAGE, "quay.io/team-a/model:v3"],
            id="each image once, other volumes ignored",
        ),
        pytest.param(
            [{"name": "bad", "image": {}}],
            [IMAGE],
            id="image volumes without a reference bring nothing",
        ),
    ],
)
def test_images_include_image_volumes(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    volumes: list[dict[str, Any]],
    expected: list[str],
) -> None:
    """Image volumes (GA in 1.36) are pulled with the pod's credentials like container
    images: get-credentials --pod resolves them too, through the same plugin and token."""
    objects = write_objects(tmp_path / "objects.yaml", [*cluster(), pod("vols", volumes=volumes)])
    plugins = PluginNode(tmp_path)
    code, out, _ = run(
        capsys,
        "get-credentials",
        "--config", str(plugins.config(token_attributes(required=(), optional=()))),
        "--bin-dir", str(plugins.bin_dir),
        "--objects", str(objects),
        "--pod", "team-a/vols",
        "-o", "json",
    )  # fmt: skip
    assert code == 0
    doc: dict[str, Any] = json.loads(out)
    assert [i["image"] for i in doc["images"]] == expected
    for image in doc["images"]:
        if image["image"].startswith("registry.example.com/"):
            [provider] = image["providers"]
            assert provider["serviceAccount"]["name"] == "builder"
