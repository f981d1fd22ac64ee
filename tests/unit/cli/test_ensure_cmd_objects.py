"""``credprov ensure-image --objects FILE --pod NS/NAME [--node NAME]`` against the fake
runtime: pull secrets read through the Node authorizer, KEP-4412 tokens through
NodeRestriction, and what the pull records keep (``kubernetesServiceAccounts``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from credprov.cli.main import main
from credprov.kubelet import node as _kubelet_node
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.pullmanager.types import record_to_json
from credprov.testing import FakeRegistry, FakeRuntime, RegistryGrant
from tests.conftest import CANARY
from tests.unit.nodeauth.kep4412_fixtures import (
    IMAGE,
    PULL_USER,
    REGISTRY,
    REPO,
    SA_UIDS,
    PluginNode,
    cluster,
    pod,
    token_attributes,
    write_objects,
)

CRI = "unix:///run/fake/cri.sock"
IMAGE_ID = "sha256:" + "a" * 64


def regcred() -> dict[str, Any]:
    auths = {"auths": {REGISTRY: {"username": PULL_USER, "password": CANARY}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": "team-a", "uid": "uid-regcred"},
        "stringData": {".dockerconfigjson": json.dumps(auths)},
    }


class Node:
    """The fake registry and runtime, a kubelet root, the cluster's objects and a token
    provider (``cacheType: ServiceAccount``) answering ``robot`` / CANARY."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = tmp_path / "kubelet"
        self.root.mkdir()
        registry = FakeRegistry(
            grants=[RegistryGrant(repos=(REPO,), username=PULL_USER, password=CANARY)]
        )
        registry.add_image(IMAGE, image_id=IMAGE_ID, size=861)
        self.runtime = FakeRuntime(registry)
        self.opened: list[str] = []

        def factory(endpoint: str, **_: Any) -> FakeRuntime:
            self.opened.append(endpoint)
            return self.runtime

        monkeypatch.setattr(_kubelet_node, "open_cri_runtime", factory)
        with_secrets = pod("pulls", imagePullSecrets=[{"name": "regcred"}, {"name": "gone"}])
        self.objects = write_objects(
            tmp_path / "objects.yaml", [*cluster(), regcred(), with_secrets]
        )
        self.plugins = PluginNode(tmp_path)
        self.config = self.plugins.config(
            token_attributes(required=(), optional=()), FAKE_PASSWORD=CANARY
        )

    def ensure(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
        code = main(
            [
                "ensure-image",
                "--cri", CRI,
                "--root-dir", str(self.root),
                "--config", str(self.config),
                "--bin-dir", str(self.plugins.bin_dir),
                *argv,
            ]
        )  # fmt: skip
        out, err = capsys.readouterr()
        assert CANARY not in out + err
        assert "Traceback" not in err
        return code, out, err

    def ensure_json(self, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
        code, out, _ = self.ensure(capsys, "--objects", str(self.objects), *argv, "-o", "json")
        report: dict[str, Any] = json.loads(out)
        report["code"] = code
        return report

    def mapping(self) -> dict[str, Any]:
        records, errors = FSPullRecordsAccessor(
            str(self.root), migrate=False
        ).list_image_pulled_records()
        assert errors == []
        [record] = [record_to_json(r) for r in records]
        mapping: dict[str, Any] = record["credentialMapping"][REPO]
        return mapping


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Node:
    return Node(tmp_path, monkeypatch)


def test_token_provider_pull_is_recorded_for_the_service_account(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = node.ensure(capsys, "--objects", str(node.objects), "--pod", "team-a/app")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "pod team-a/app on node node-1 (policy NeverVerifyPreloadedImages)"
    assert lines[1] == f"container app: {IMAGE} (IfNotPresent): ready, pulled {IMAGE_ID}"
    assert "  credentials tried: serviceaccount:team-a/builder (ok)" in lines
    assert node.mapping() == {
        "kubernetesServiceAccounts": [
            {"uid": SA_UIDS["builder"], "namespace": "team-a", "name": "builder"}
        ]
    }
    pulls = len(node.runtime.pulls)

    # Another pod of the same service account: present, no registry round-trip.
    same = node.ensure_json(capsys, "--pod", "team-a/app2")
    assert same["code"] == 0
    [c] = same["containers"]
    assert c["decision"] == "present" and len(node.runtime.pulls) == pulls
    assert same["pod"]["serviceAccountName"] == "builder" and same["node"] == "node-1"
    assert same["tokensIssued"] == 1
    verbs = [(a["verb"], a["allowed"]) for a in same["authorizations"]]
    assert verbs == [
        ("get", True),
        ("create", True),
        ("request-serviceaccounts-token-audience", True),
    ]

    # Another service account must pull, and is then learnt.
    other = node.ensure_json(capsys, "--pod", "team-a/web")
    [c] = other["containers"]
    assert (other["code"], c["decision"]) == (0, "pulled")
    assert len(node.runtime.pulls) == pulls + 1
    assert [a["credential"] for a in c["attempts"]] == ["serviceaccount:team-a/other"]
    assert c["recorded"]["credentials"] == {
        "kubernetesServiceAccounts": [
            {"uid": SA_UIDS["other"], "namespace": "team-a", "name": "other"}
        ]
    }
    assert [sa["name"] for sa in node.mapping()["kubernetesServiceAccounts"]] == [
        "builder",
        "other",
    ]


def test_pull_secrets_come_through_the_node_authorizer(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = node.ensure(capsys, "--objects", str(node.objects), "--pod", "team-a/pulls")
    assert code == 0
    # "gone" does not exist: the kubelet's log line, with the reason, on stderr.
    assert err.splitlines() == [
        "credprov: warning: Unable to retrieve pull secret team-a/gone for team-a/pulls due to "
        'secrets "gone" not found.  The image pull may not succeed.'
    ]
    # The pull succeeds with regcred: since 1.37 the kubelet records no event for "gone".
    assert "FailedToRetrieveImagePullSecret" not in out
    assert "  credentials tried: secret:team-a/regcred (ok)" in out.splitlines()
    [secret] = node.mapping()["kubernetesSecrets"]
    assert (secret["namespace"], secret["name"], secret["uid"]) == (
        "team-a",
        "regcred",
        "uid-regcred",
    )


def test_another_node_gets_nothing(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    report = node.ensure_json(capsys, "--pod", "team-a/pulls", "--node", "node-2")
    assert report["code"] == 1 and report["node"] == "node-2"
    assert report["missingSecrets"] == ["regcred", "gone"]
    assert report["tokensIssued"] == 0
    [c] = report["containers"]
    assert (c["decision"], c["error"]) == ("failed", "ErrImagePull")
    assert [a["credential"] for a in c["attempts"]] == ["anonymous"]
    [provider_error] = c["providerErrors"]
    assert provider_error["provider"] == "fake"
    # node-2 runs "far" with the same service account, so it may read it; NodeRestriction
    # refuses a token bound to a pod of another node.
    assert provider_error["error"] == (
        'failed to fetch token: serviceaccounts "builder" is forbidden: node requested token '
        "bound to a pod scheduled on a different node"
    )
    # The pull failed and secrets were missing: the pod event, last, on the pod itself.
    assert report["events"][-1]["reason"] == "FailedToRetrieveImagePullSecret"
    assert report["events"][-1]["object"] == ""
    assert report["podEvents"][0]["message"] == (
        "Unable to retrieve some image pull secrets (regcred, gone); attempting to pull the "
        "image may not succeed."
    )

    code, out, _ = node.ensure(
        capsys, "--objects", str(node.objects), "--pod", "team-a/pulls", "--node", "node-2"
    )
    assert code == 1
    assert '  provider fake: error: failed to fetch token: serviceaccounts "builder" is ' in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--objects", "{objects}", "--pod", "team-a/app", "--pull-secret", "{objects}"],
            "--pull-secret cannot be combined with --objects",
        ),
        (["--pod", "{objects}", "--node", "node-1"], "--node needs --objects"),
        (["--objects", "{objects}", "--pod", "app"], "--pod 'app': want NAMESPACE/NAME"),
        (["--objects", "{objects}", "--pod", "team-a/nope"], "pod team-a/nope is not in"),
        (["--objects", "{tmp}/missing.yaml", "--pod", "team-a/app"], "cannot read objects file"),
        (
            ["--objects", "{objects}", "--pod", "team-a/app", "--feature-gates", "Nope=true"],
            "unrecognized feature gate: Nope",
        ),
    ],
)
def test_bad_input_is_one_line(
    node: Node,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    values = {"objects": str(node.objects), "tmp": str(tmp_path)}
    code, out, err = node.ensure(capsys, *(a.format(**values) for a in argv))
    assert code == 1 and out == ""
    assert err.startswith("credprov: error: ") and err.count("\n") == 1, err
    assert message in err
    assert node.opened == []
    assert not (node.root / "image_manager").exists()


def test_invalid_pod_in_objects_is_one_line(
    node: Node, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = pod("broken")
    broken["spec"]["containers"] = [{"name": "app"}]
    objects = write_objects(tmp_path / "broken.yaml", [*cluster(), broken])
    code, _, err = node.ensure(capsys, "--objects", str(objects), "--pod", "team-a/broken")
    assert code == 1
    assert err == (
        f"credprov: error: pod team-a/broken in {objects}: spec.containers[0].image: "
        "Required value\n"
    )
