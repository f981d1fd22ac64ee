"""``credprov ensure-image`` against the fake runtime and registry: arguments, pod files,
pull secrets, the kubelet's decisions and events, output, exit status, and secrecy.

The real CRI path is covered by tests/e2e/test_ensure_cri.py; here the runtime factory is
replaced so every case runs in milliseconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from credprov.cli.main import CLIError, main
from credprov.kubelet import KubeletError
from credprov.kubelet import node as _kubelet_node
from credprov.kubelet.podspec import PodSpecError, parse_pod, select_pull_secrets
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.testing import FakeRegistry, FakeRuntime, RegistryGrant
from tests.conftest import CANARY, install_fake_plugin, provider, write_config

REPO_ROOT = Path(__file__).resolve().parents[3]
REGISTRY = "registry.example.com"
IMAGE = f"{REGISTRY}/private/app:v1"
PUBLIC = "docker.io/library/busybox:1.36"
CRI = "unix:///run/fake/cri.sock"


# -- helpers ------------------------------------------------------------------------------------


def secret(
    name: str,
    namespace: str | None = "team-a",
    username: str = "robot",
    password: str = CANARY,
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{namespace}-{name}"}
    if namespace is not None:
        meta["namespace"] = namespace
    auths = {"auths": {REGISTRY: {"username": username, "password": password}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": meta,
        "stringData": {".dockerconfigjson": json.dumps(auths)},
    }


def pod(
    name: str = "pod-a",
    namespace: str = "team-a",
    image: str = IMAGE,
    policy: str | None = None,
    secrets: tuple[str, ...] = (),
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image}
    if policy is not None:
        container["imagePullPolicy"] = policy
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {
            "containers": [container],
            "imagePullSecrets": [{"name": s} for s in secrets],
            **spec,
        },
    }


class Node:
    """A fake node: registry + runtime, a kubelet root, and files for pods and secrets."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp = tmp_path
        self.root = tmp_path / "kubelet"
        self.root.mkdir()
        self.registry = FakeRegistry(
            anonymous=["docker.io/library/*"],
            grants=[
                RegistryGrant(repos=(f"{REGISTRY}/private/*",), username="robot", password=CANARY)
            ],
        )
        self.registry.add_image(IMAGE, image_id="sha256:" + "a" * 64, size=861)
        self.registry.add_image(f"{REGISTRY}/private/other:v1", image_id="sha256:" + "b" * 64)
        self.registry.add_image(PUBLIC, image_id="sha256:" + "c" * 64)
        self.runtime = FakeRuntime(self.registry)
        self.opened: list[str] = []

        def factory(endpoint: str, **_: Any) -> FakeRuntime:
            self.opened.append(endpoint)
            return self.runtime

        monkeypatch.setattr(_kubelet_node, "open_cri_runtime", factory)
        self.secrets_file = self.write(
            "secrets.yaml", {"apiVersion": "v1", "kind": "List", "items": []}
        )
        self._n = 0

    def write(self, name: str, *docs: Any) -> Path:
        path = self.tmp / name
        path.write_text(yaml.safe_dump_all(list(docs)))
        return path

    def set_secrets(self, *secrets: dict[str, Any]) -> None:
        self.write("secrets.yaml", {"apiVersion": "v1", "kind": "List", "items": list(secrets)})

    def ensure(
        self, capsys: pytest.CaptureFixture[str], pod_obj: dict[str, Any], *extra: str
    ) -> tuple[int, str, str]:
        self._n += 1
        pod_file = self.write(f"pod-{self._n}.yaml", pod_obj)
        argv = [
            "ensure-image",
            "--cri",
            CRI,
            "--root-dir",
            str(self.root),
            "--pod",
            str(pod_file),
            "--pull-secret",
            str(self.secrets_file),
            *extra,
        ]
        code = main(argv)
        out, err = capsys.readouterr()
        assert CANARY not in out + err
        assert "Traceback" not in err
        return code, out, err

    def ensure_json(
        self, capsys: pytest.CaptureFixture[str], pod_obj: dict[str, Any], *extra: str
    ) -> dict[str, Any]:
        code, out, _ = self.ensure(capsys, pod_obj, "-o", "json", *extra)
        report: dict[str, Any] = json.loads(out)
        report["code"] = code
        return report

    def records(self) -> list[dict[str, Any]]:
        from credprov.pullmanager.types import record_to_json

        records, errors = FSPullRecordsAccessor(
            str(self.root), migrate=False
        ).list_image_pulled_records()
        assert errors == []
        return [record_to_json(r) for r in records]


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Node:
    return Node(tmp_path, monkeypatch)


def decisions(report: dict[str, Any]) -> list[str]:
    return [c["decision"] for c in report["containers"]]


# -- the blog's story -----------------------------------------------------------------------


def test_pod_a_pulls_with_its_secret(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    node.set_secrets(secret("regcred"))
    code, out, err = node.ensure(capsys, pod(secrets=("regcred",)))
    assert code == 0, err
    assert node.opened == [CRI]
    lines = out.splitlines()
    assert lines[0] == "pod team-a/pod-a (policy NeverVerifyPreloadedImages)"
    assert lines[1] == f"container app: {IMAGE} (IfNotPresent): ready, pulled sha256:{'a' * 64}"
    assert lines[2] == f'  Normal  Pulling  Pulling image "{IMAGE}"'
    assert lines[3].startswith(f'  Normal  Pulled  Successfully pulled image "{IMAGE}" in ')
    assert lines[3].endswith("Image size: 861 bytes.")
    assert "credentials tried: secret:team-a/regcred (ok)" in out
    assert lines[-1] == "1/1 images ready"
    [record] = node.records()
    assert record["imageRef"] == "sha256:" + "a" * 64
    [cred] = record["credentialMapping"][f"{REGISTRY}/private/app"]["kubernetesSecrets"]
    assert (cred["namespace"], cred["name"], cred["uid"]) == (
        "team-a",
        "regcred",
        "uid-team-a-regcred",
    )
    assert len(cred["credentialHash"]) == 64


def test_pod_b_without_credentials_is_refused(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.set_secrets(secret("regcred"))
    assert node.ensure_json(capsys, pod(secrets=("regcred",)))["code"] == 0
    pulls = len(node.runtime.pulls)

    b = node.ensure_json(capsys, pod("pod-b", "team-b"))
    assert b["code"] == 1 and not b["ready"]
    [c] = b["containers"]
    assert (c["decision"], c["error"]) == ("failed", "ErrImagePull")
    assert c["metricLabels"] == {
        "pull_policy": "ifnotpresent",
        "present_locally": "true",
        "pull_required": "true",
    }
    assert [a["credential"] for a in c["attempts"]] == ["anonymous"]
    assert [e["reason"] for e in c["events"]] == ["Pulling", "Failed"]
    assert len(node.runtime.pulls) == pulls + 1

    never = node.ensure_json(capsys, pod("pod-b", "team-b", policy="Never"))
    [c] = never["containers"]
    assert (c["decision"], c["error"]) == ("never-pull", "ErrImageNeverPull")
    assert c["events"] == [
        {
            "type": "Warning",
            "reason": "ErrImageNeverPull",
            "message": f'Container image "{IMAGE}" is not present with pull policy of Never',
        }
    ]
    assert len(node.runtime.pulls) == pulls + 1  # Never never reaches the registry


def test_pod_c_same_credentials_other_secret_needs_no_pull(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.set_secrets(secret("regcred"), secret("copy", "team-c"))
    assert node.ensure_json(capsys, pod(secrets=("regcred",)))["code"] == 0
    pulls = len(node.runtime.pulls)
    c = node.ensure_json(capsys, pod("pod-c", "team-c", secrets=("copy",)))
    assert c["code"] == 0
    [cont] = c["containers"]
    assert cont["decision"] == "present"
    assert cont["events"] == [
        {
            "type": "Normal",
            "reason": "Pulled",
            "message": f'Container image "{IMAGE}" already present on machine and can be '
            "accessed by the pod",
        }
    ]
    assert cont["credentialLookups"] == 1
    assert len(node.runtime.pulls) == pulls  # no registry round-trip
    [record] = node.records()
    names = [
        s["name"]
        for s in record["credentialMapping"][f"{REGISTRY}/private/app"]["kubernetesSecrets"]
    ]
    assert names == ["regcred", "copy"]  # the new coordinates were learnt


def test_rotated_secret_is_still_known(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    node.set_secrets(secret("regcred"))
    assert node.ensure_json(capsys, pod(secrets=("regcred",)))["code"] == 0
    pulls = len(node.runtime.pulls)
    node.set_secrets(secret("regcred", password="rotated-" + CANARY))
    again = node.ensure_json(capsys, pod("pod-a2", secrets=("regcred",)))
    assert decisions(again) == ["present"] and again["code"] == 0
    assert len(node.runtime.pulls) == pulls
    [record] = node.records()
    [cred] = record["credentialMapping"][f"{REGISTRY}/private/app"]["kubernetesSecrets"]
    from credprov.imageauth.keyring import hash_auth_config

    assert cred["credentialHash"] == hash_auth_config("robot", "rotated-" + CANARY)


def test_anonymous_image_is_node_wide(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    first = node.ensure_json(capsys, pod(image=PUBLIC))
    assert first["code"] == 0
    [c] = first["containers"]
    assert c["recorded"] == {
        "imageRef": "sha256:" + "c" * 64,
        "credentials": {"nodePodsAccessible": True},
    }
    other = node.ensure_json(capsys, pod("pod-z", "team-z", image=PUBLIC, policy="Never"))
    assert decisions(other) == ["present"]
    assert other["containers"][0]["credentialLookups"] == 0


def test_plugin_credentials_are_recorded_node_wide(
    node: Node, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    install_fake_plugin(bin_dir, "fake")
    config = write_config(
        tmp_path / "providers.json",
        [
            provider(
                "fake",
                match_images=[REGISTRY],
                env={"FAKE_USERNAME": "robot", "FAKE_PASSWORD": CANARY},
            )
        ],
    )
    extra = ("--config", str(config), "--bin-dir", str(bin_dir))
    report = node.ensure_json(capsys, pod(), *extra)
    assert report["code"] == 0
    [c] = report["containers"]
    assert [a["credential"] for a in c["attempts"]] == ["provider:fake"]
    assert c["recorded"]["credentials"] == {"nodePodsAccessible": True}
    # Any pod may now use it, even with Never and no credentials at all.
    other = node.ensure_json(capsys, pod("pod-z", "team-z", policy="Never"))
    assert decisions(other) == ["present"]


# -- policies ----------------------------------------------------------------------------------


def test_always_verify_checks_preloaded_images(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.runtime.add_image("sha256:" + "a" * 64, [IMAGE])  # side-loaded, never pulled
    default = node.ensure_json(capsys, pod("pod-b", "team-b"))
    assert decisions(default) == ["present"]  # preloaded: anyone may use it
    always = node.ensure_json(capsys, pod("pod-b", "team-b"), "--policy", "AlwaysVerify")
    assert decisions(always) == ["failed"] and always["code"] == 1
    assert always["policy"] == "AlwaysVerify"


def test_allowlisted_images_skip_verification(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.set_secrets(secret("regcred"))
    assert node.ensure_json(capsys, pod(secrets=("regcred",)))["code"] == 0
    allow = ("--policy", "NeverVerifyAllowlistedImages", "--allowlist", f"{REGISTRY}/private/*")
    ok = node.ensure_json(capsys, pod("pod-b", "team-b", policy="Never"), *allow)
    assert decisions(ok) == ["present"]
    other = ("--policy", "NeverVerifyAllowlistedImages", "--allowlist", f"{REGISTRY}/public/*")
    refused = node.ensure_json(capsys, pod("pod-b", "team-b", policy="Never"), *other)
    assert decisions(refused) == ["never-pull"]


def test_dangling_intent_is_settled_at_start(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    # A kubelet died after the pull and before writing the record.
    node.runtime.add_image("sha256:" + "a" * 64, [IMAGE])
    FSPullRecordsAccessor(str(node.root)).write_image_pull_intent(IMAGE)
    report = node.ensure_json(capsys, pod("pod-b", "team-b", policy="Never"))
    assert decisions(report) == ["never-pull"]  # kubelet-pulled, nobody verified yet
    store = FSPullRecordsAccessor(str(node.root), migrate=False)
    assert store.list_image_pull_intents() == ([], [])
    [record] = node.records()
    assert record["imageRef"] == "sha256:" + "a" * 64
    assert not record.get("credentialMapping")


# -- pod files ----------------------------------------------------------------------------------


def test_every_container_kind_in_kubelet_order(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.set_secrets(secret("regcred"))
    obj = pod(
        secrets=("regcred",),
        initContainers=[{"name": "init", "image": PUBLIC}],
        ephemeralContainers=[{"name": "debug", "image": f"{REGISTRY}/private/other:v1"}],
    )
    report = node.ensure_json(capsys, obj)
    assert report["code"] == 0
    assert [(c["type"], c["name"], c["fieldPath"]) for c in report["containers"]] == [
        ("initContainer", "init", "spec.initContainers{init}"),
        ("container", "app", "spec.containers{app}"),
        ("ephemeralContainer", "debug", "spec.ephemeralContainers{debug}"),
    ]
    objects = [e["object"] for e in report["events"]]
    assert objects == [
        *["spec.initContainers{init}"] * 2,
        *["spec.containers{app}"] * 2,
        *["spec.ephemeralContainers{debug}"] * 2,
    ]


def _vol(name: str, reference: Any, policy: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"reference": reference}
    if policy is not None:
        source["pullPolicy"] = policy
    return {"name": name, "image": source}


def test_image_volumes_are_pulled_first_with_the_pods_secrets(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    """Image volumes (``spec.volumes[].image``, GA in 1.36) go through EnsureImageExists
    with the pod's credentials, before any container, their events on the pod itself."""
    node.set_secrets(secret("regcred"))
    obj = pod(
        image=PUBLIC,
        secrets=("regcred",),
        volumes=[
            {"name": "scratch", "emptyDir": {}},
            _vol("data", f"{REGISTRY}/private/other:v1"),
            _vol("model", IMAGE, "IfNotPresent"),
        ],
    )
    report = node.ensure_json(capsys, obj)
    assert report["code"] == 0
    assert [
        (c["type"], c["name"], c["fieldPath"], c["imagePullPolicy"], c["decision"])
        for c in report["containers"]
    ] == [
        ("imageVolume", "data", "", "IfNotPresent", "pulled"),
        ("imageVolume", "model", "", "IfNotPresent", "pulled"),
        ("container", "app", "spec.containers{app}", "IfNotPresent", "pulled"),
    ]
    data, model, _ = report["containers"]
    assert [a["credential"] for a in data["attempts"]] == ["secret:team-a/regcred"]
    assert model["recorded"]["credentials"]["kubernetesSecrets"][0]["name"] == "regcred"
    assert [e["object"] for e in report["events"]] == [
        "",
        "",
        "",
        "",
        *["spec.containers{app}"] * 2,
    ]
    assert report["podEvents"] == []

    # The record grants the pod's secret: another pod with it uses the volume's image as is;
    # one without must pull, and is refused.
    code, out, _ = node.ensure(
        capsys, pod("pod-b", image=PUBLIC, secrets=("regcred",), volumes=[_vol("model", IMAGE)])
    )
    assert code == 0
    assert f"image volume model: {IMAGE} (IfNotPresent): ready, already present" in out
    code, out, _ = node.ensure(
        capsys, pod("pod-c", image=PUBLIC, volumes=[_vol("model", IMAGE, "Never")])
    )
    assert code == 1
    assert f"image volume model: {IMAGE} (Never): not ready, ErrImageNeverPull" in out.splitlines()


def test_failing_image_volume_pull_gets_the_missing_secret_event(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    report = node.ensure_json(
        capsys, pod(image=PUBLIC, secrets=("gone",), volumes=[_vol("model", IMAGE)])
    )
    assert report["code"] == 1
    assert [(c["type"], c["error"]) for c in report["containers"]] == [
        ("imageVolume", "ErrImagePull"),
        ("container", None),
    ]
    assert [e["reason"] for e in report["podEvents"]] == ["FailedToRetrieveImagePullSecret"]


def test_one_failing_container_means_exit_1(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    obj = pod(image=PUBLIC, initContainers=[{"name": "init", "image": IMAGE}])
    code, out, err = node.ensure(capsys, obj)
    assert code == 1
    assert "init container init: " + IMAGE + " (IfNotPresent): not ready, ErrImagePull" in out
    assert f"container app: {PUBLIC} (IfNotPresent): ready, pulled" in out
    assert "1/2 images ready" in out
    assert err == "credprov: 1 of 2 images not ready\n"


@pytest.mark.parametrize(
    ("image", "explicit", "want"),
    [
        ("nginx", None, "Always"),
        ("nginx:latest", None, "Always"),
        ("registry.example.com:5000/app", None, "Always"),
        ("nginx:1.27", None, "IfNotPresent"),
        ("nginx@sha256:" + "0" * 64, None, "IfNotPresent"),
        ("nginx:latest@sha256:" + "0" * 64, None, "Always"),
        ("nginx:latest", "Never", "Never"),
        ("nginx:1.27", "Always", "Always"),
    ],
)
def test_pull_policy_defaults(image: str, explicit: str | None, want: str) -> None:
    obj = pod(image=image, policy=explicit)
    [c] = parse_pod(obj).containers
    assert c.image_pull_policy == want
    # An image volume's pullPolicy defaults the same way (SetDefaults_ImageVolumeSource).
    volume = parse_pod(pod(image="x:1", volumes=[_vol("v", image, explicit)])).containers[0]
    assert (volume.kind, volume.image_pull_policy) == ("imageVolume", want)


def test_pod_defaults() -> None:
    obj: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }
    spec = parse_pod(obj)
    assert (spec.namespace, spec.uid, spec.service_account_name) == ("default", "", "default")
    assert spec.image_pull_secrets == ()
    obj["spec"]["serviceAccountName"] = "builder"
    obj["spec"]["imagePullSecrets"] = [{"name": ""}, {"name": "a"}]
    spec = parse_pod(obj)
    assert spec.service_account_name == "builder" and spec.image_pull_secrets == ("a",)


def _with_volumes(*volumes: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": list(volumes)},
    }


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            _with_volumes({"name": "v", "image": {}}),
            "pod: spec.volumes[0].image.reference: Required value",
        ),
        (_with_volumes({"image": {"reference": "x"}}), "pod: spec.volumes[0].name: Required value"),
        (
            _with_volumes({"name": "v", "image": {"reference": "x", "pullPolicy": "Sometimes"}}),
            'pod: spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
        ),
        (
            _with_volumes(
                {"name": "v", "image": {"reference": "x"}},
                {"name": "v", "image": {"reference": "y"}},
            ),
            'pod: spec.volumes[1].name: Duplicate value: "v"',
        ),
        (
            _with_volumes({"name": "v", "image": "x"}),
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field Volume.spec.volumes.image of type v1.ImageVolumeSource',
        ),
        (
            _with_volumes({"name": "v", "image": {"reference": 7}}),
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field ImageVolumeSource.spec.volumes.image.reference of type string',
        ),
        (
            _with_volumes("v"),
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.volumes of type v1.Volume',
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": {}},
            },
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal object into Go struct field PodSpec.spec.volumes of type []v1.Volume',
        ),
        ({"kind": "Secret"}, 'pod: holds kind "Secret", not a Pod'),
        ({"metadata": {"name": "p"}}, "pod: holds no kind, not a Pod"),
        (
            {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": "x"}]}},
            "pod: metadata.name: Required value",
        ),
        ({"kind": "Pod", "metadata": {"name": "p"}}, "pod: spec.containers: Required value"),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}},
            "pod: spec.containers: Required value",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": {"name": "c"}}},
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container',
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}},
            "pod: spec.containers[0].image: Required value",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}},
            "pod: spec.containers[0].name: Required value",
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": 5}]},
            },
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string',
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "imagePullPolicy": "Sometimes"}]
                },
            },
            'pod: spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "c", "image": "x"}],
                    "initContainers": [{"name": "c", "image": "y"}],
                },
            },
            'pod: spec.containers[0].name: Duplicate value: "c"',
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "x"}], "imagePullSecrets": ["a"]},
            },
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.imagePullSecrets of type v1.LocalObjectReference',
        ),
        (
            {"kind": "Pod", "metadata": "p"},
            'pod: Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta',
        ),
    ],
)
def test_invalid_pods(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(PodSpecError) as info:
        parse_pod(obj)
    assert str(info.value) == message


def test_secrets_are_picked_by_name_in_the_pod_namespace() -> None:
    spec = parse_pod(pod(secrets=("regcred", "gone", "nons")))
    found, missing = select_pull_secrets(
        spec,
        [
            secret("regcred", "team-b", uid="wrong-namespace"),
            secret("regcred"),
            secret("nons", None),
            secret("unused"),
        ],
    )
    assert [(s["metadata"]["namespace"], s["metadata"]["name"]) for s in found] == [
        ("team-a", "regcred"),
        ("team-a", "nons"),
    ]
    assert found[0]["metadata"]["uid"] == "uid-team-a-regcred"
    assert missing == ["gone"]


EVENT_GONE = (
    "  Warning  FailedToRetrieveImagePullSecret  Unable to retrieve some image pull "
    "secrets (gone); attempting to pull the image may not succeed."
)
WARNING_GONE = (
    'credprov: warning: Unable to retrieve pull secret team-a/gone for team-a/{pod} due to secrets "gone" '
    "not found.  The image pull may not succeed."
)


@pytest.mark.parametrize(
    ("secrets", "image", "policy", "code", "event"),
    [
        # 1.37 (kubernetes#138432): the event follows a failed pull only.
        pytest.param(("gone", "regcred"), IMAGE, None, 0, False, id="pull succeeds: no event"),
        pytest.param(("gone",), IMAGE, None, 1, True, id="pull fails: event"),
        pytest.param(
            ("regcred",), f"{REGISTRY}/private/none:v1", None, 1, False, id="no missing secret"
        ),
        pytest.param(
            ("gone",), IMAGE, "Never", 1, False, id="ErrImageNeverPull is no pull failure"
        ),
        pytest.param(("gone",), "Bad:Name", None, 1, False, id="invalid name is no pull failure"),
    ],
)
def test_failed_to_retrieve_pull_secret_event(
    node: Node,
    capsys: pytest.CaptureFixture[str],
    secrets: tuple[str, ...],
    image: str,
    policy: str | None,
    code: int,
    event: bool,
) -> None:
    node.set_secrets(secret("regcred"))
    got, out, err = node.ensure(capsys, pod(secrets=secrets, image=image, policy=policy))
    assert got == code
    assert (EVENT_GONE in out.splitlines()) is event
    # The kubelet's log line for each missing secret, whatever the pulls do.
    warnings = [WARNING_GONE.format(pod="pod-a")] if "gone" in secrets else []
    assert [ln for ln in err.splitlines() if ln.startswith("credprov: warning:")] == warnings

    report = node.ensure_json(capsys, pod("pod-2", secrets=secrets, image=image, policy=policy))
    assert report["missingSecrets"] == [s for s in secrets if s == "gone"]
    reasons = [e["reason"] for e in report["events"]]
    assert ("FailedToRetrieveImagePullSecret" in reasons) is event
    assert len(report["podEvents"]) == int(event)
    if event:
        # Recorded on the pod itself, after the pulls.
        assert report["events"][-1] == {**report["podEvents"][0], "object": ""}
        assert reasons[-2:] == ["Failed", "FailedToRetrieveImagePullSecret"]


def test_failed_to_retrieve_pull_secret_event_is_printed_after_the_pulls(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = node.ensure(capsys, pod(secrets=("gone",)))
    assert code == 1
    lines = out.splitlines()
    assert lines[-3:] == ["pod team-a/pod-a:", EVENT_GONE, "0/1 images ready"]


def test_secret_without_namespace_is_recorded_under_the_pods(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.set_secrets(secret("regcred", None))
    assert node.ensure_json(capsys, pod(secrets=("regcred",)))["code"] == 0
    [record] = node.records()
    [cred] = record["credentialMapping"][f"{REGISTRY}/private/app"]["kubernetesSecrets"]
    assert cred["namespace"] == "team-a"


def test_secret_with_a_broken_payload_fails_the_container(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = secret("regcred")
    broken["stringData"][".dockerconfigjson"] = "{not json " + CANARY
    node.set_secrets(broken)
    code, out, _ = node.ensure(capsys, pod(secrets=("regcred",)))
    assert code == 1
    assert "not ready, error" in out
    assert "  error: secret team-a/regcred: .dockerconfigjson is not valid JSON" in out


def test_invalid_image_name_is_a_kubelet_outcome(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    report = node.ensure_json(capsys, pod(image="Registry.Example.com/UPPER:v1"))
    [c] = report["containers"]
    assert c["error"] == "InvalidImageName" and report["code"] == 1
    assert c["events"][0]["reason"] == "InspectFailed"


def test_inspect_failure(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(image: str) -> str | None:
        raise RuntimeError("rpc error: code = Unavailable desc = connection refused")

    monkeypatch.setattr(node.runtime, "image_ref", broken)
    code, out, _ = node.ensure(capsys, pod())
    assert code == 1
    assert "not ready, ImageInspectError" in out
    assert '  Warning  InspectFailed  Failed to inspect image "": rpc error' in out


def test_metrics_out(node: Node, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "metrics.txt"
    node.set_secrets(secret("regcred"))
    code, _, _ = node.ensure(capsys, pod(secrets=("regcred",)), "--metrics-out", str(out_file))
    assert code == 0
    text = out_file.read_text()
    assert (
        'kubelet_image_manager_ensure_image_requests_total{present_locally="false",'
        'pull_policy="ifnotpresent",pull_required="true"} 1.0'
    ) in text
    assert "kubelet_imagemanager_ondisk_pulledrecords 1.0" in text


# -- arguments and files -----------------------------------------------------------------------


def _args(node: Node, **override: str | None) -> list[str]:
    base: dict[str, str | None] = {
        "--cri": CRI,
        "--root-dir": str(node.root),
        "--pod": str(node.write("ok-pod.yaml", pod())),
    }
    base.update(override)
    argv = ["ensure-image"]
    for k, v in base.items():
        if v is not None:
            argv += [k, v]
    return argv


@pytest.mark.parametrize(
    ("override", "extra", "message"),
    [
        (
            {"--cri": "/run/containerd/containerd.sock"},
            [],
            "--cri /run/containerd/containerd.sock: want unix:///path/to/socket",
        ),
        ({"--cri": "tcp://127.0.0.1:1234"}, [], "--cri tcp://127.0.0.1:1234: want unix:///path"),
        ({"--root-dir": "{tmp}/missing"}, [], "--root-dir {tmp}/missing: not a directory"),
        (
            {"--pod": "{tmp}/missing.yaml"},
            [],
            "cannot read pod file {tmp}/missing.yaml: No such file or directory",
        ),
        (
            {"--pod": "{tmp}/bad.yaml"},
            [],
            "pod file {tmp}/bad.yaml is not valid YAML or JSON (line 1)",
        ),
        (
            {"--pod": "{tmp}/two.yaml"},
            [],
            "pod file {tmp}/two.yaml holds 2 objects, want exactly one Pod",
        ),
        (
            {"--pod": "{tmp}/nocontainers.yaml"},
            [],
            "pod file {tmp}/nocontainers.yaml: spec.containers: Required value",
        ),
        (
            {},
            ["--pull-secret", "{tmp}/notsecret.yaml"],
            "pull secret file {tmp}/notsecret.yaml holds a 'Pod', not a Secret",
        ),
        (
            {},
            ["--pull-secret", "{tmp}/missing.yaml"],
            "cannot read pull secret file {tmp}/missing.yaml",
        ),
        ({}, ["--config", "{tmp}/c.yaml"], "--config and --bin-dir go together"),
        (
            {},
            ["--policy", "Sometimes"],
            'invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy',
        ),
        (
            {},
            ["--allowlist", "registry.example.com/*"],
            "can't set `preloadedImagesVerificationAllowlist`",
        ),
        (
            {},
            ["--policy", "NeverVerifyAllowlistedImages", "--allowlist", "a/*/b"],
            "invalid image pattern in `preloadedImagesVerificationAllowlist`: not a valid wildcard",
        ),
        (
            {},
            ["--node-docker-config", "{tmp}/bad.yaml"],
            "node docker config {tmp}/bad.yaml: docker config is not valid JSON",
        ),
        ({}, ["--config", "{tmp}/missing.yaml", "--bin-dir", "{tmp}"], "{tmp}/missing.yaml"),
    ],
)
def test_bad_input_is_one_line(
    node: Node,
    capsys: pytest.CaptureFixture[str],
    override: dict[str, str],
    extra: list[str],
    message: str,
) -> None:
    tmp = str(node.tmp)
    (node.tmp / "bad.yaml").write_text("a: [unclosed\n")
    node.write("two.yaml", pod(), pod("b"))
    node.write("nocontainers.yaml", {"kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    node.write("notsecret.yaml", pod())
    argv = _args(node, **{k: v.format(tmp=tmp) for k, v in override.items()})
    argv += [e.format(tmp=tmp) for e in extra]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.startswith("credprov: error: ") and err.count("\n") == 1, err
    assert message.format(tmp=tmp) in err
    assert node.opened == []  # nothing reached the runtime
    assert not (node.root / "image_manager").exists()


def test_usage_errors_exit_2(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["ensure-image", "--root-dir", str(node.root)])
    assert info.value.code == 2
    assert "--cri" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--pull-timeout", "soon"], 'argument --pull-timeout: time: invalid duration "soon"'),
        (["--plugin-timeout", "0s"], "argument --plugin-timeout: must be positive"),
    ],
)
def test_bad_durations_are_usage_errors(
    node: Node, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    """Every duration option parses with the one duration type: exit 2, as argparse's."""
    with pytest.raises(SystemExit) as info:
        main([*_args(node), *extra])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == f"credprov ensure-image: error: {message} (see --help)\n"
    assert node.opened == []


def test_runtime_factory_error_is_one_line(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(endpoint: str, **_: Any) -> None:
        raise CLIError(f"--cri {endpoint}: no such socket")

    monkeypatch.setattr(_kubelet_node, "open_cri_runtime", refuse)
    assert main(_args(node)) == 1
    assert capsys.readouterr().err == f"credprov: error: --cri {CRI}: no such socket\n"


def test_open_cri_runtime_checks_the_socket(tmp_path: Path) -> None:
    with pytest.raises(KubeletError, match="no such socket"):
        _kubelet_node.open_cri_runtime(f"unix://{tmp_path}/none.sock")
    with pytest.raises(KubeletError, match="want unix:///path"):
        _kubelet_node.open_cri_runtime("npipe:////./pipe/containerd")


def test_json_report_shape(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    node.set_secrets(secret("regcred"))
    report = node.ensure_json(capsys, pod(secrets=("regcred",)))
    assert set(report) == {
        "pod",
        "policy",
        "ready",
        "missingSecrets",
        "containers",
        "events",
        "podEvents",
        "code",
    }
    assert report["pod"] == {"namespace": "team-a", "name": "pod-a", "uid": "uid-pod-a"}
    [c] = report["containers"]
    assert set(c) == {
        "name", "type", "fieldPath", "ready", "image", "imagePullPolicy", "decision", "error",
        "message", "imageRef", "events", "metricLabels", "credentialLookups", "attempts",
        "recorded",
    }  # fmt: skip
    [attempt] = c["attempts"]
    assert attempt["credential"] == "secret:team-a/regcred" and attempt["error"] is None


def test_canary_never_printed_even_on_denial(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.set_secrets(secret("regcred", password="wrong-" + CANARY))
    for output in ("text", "json"):
        code, out, err = node.ensure(capsys, pod(secrets=("regcred",)), "-o", output, "-v", "4")
        assert code == 1
        assert CANARY not in out + err


def test_config_examples_parse() -> None:
    """The docs' example pods and secrets are valid as shipped."""
    from credprov.credentialprovider.objects import load_pull_secrets
    from credprov.kubelet.podspec import load_pod

    pods = sorted(REPO_ROOT.glob("config/ensure-pod-*.yaml"))
    assert pods, "config/ensure-pod-*.yaml missing"
    for path in pods:
        load_pod(str(path))
    load_pull_secrets(sorted(str(p) for p in REPO_ROOT.glob("config/ensure-secrets*.yaml")))


def test_runtime_failure_during_a_pull_fails_that_container_only(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from credprov.cri.client import CRIError

    real_pull = node.runtime.pull_image

    def flaky(image: str, auth: Any) -> str:
        if "private/app" in image:
            raise CRIError("ImageService.PullImage: no answer from the runtime within 300s")
        return real_pull(image, auth)

    monkeypatch.setattr(node.runtime, "pull_image", flaky)
    obj = pod(image=IMAGE, initContainers=[{"name": "init", "image": PUBLIC}])
    report = node.ensure_json(capsys, obj)
    assert report["code"] == 1
    assert decisions(report) == ["pulled", "failed"]
    app = report["containers"][1]
    assert app["error"] == "ErrImagePull"
    assert app["events"][-1]["message"] == (
        f'Failed to pull image "{IMAGE}": ImageService.PullImage: no answer from the runtime '
        "within 300s"
    )
    store = FSPullRecordsAccessor(str(node.root), migrate=False)
    assert store.list_image_pull_intents() == ([], [])  # the failed pull left no intent


def test_failing_image_list_does_not_fail_a_pull(
    node: Node, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from credprov.cri.client import CRIError

    def gone() -> list[Any]:
        raise CRIError("cannot reach the runtime: connection refused", "Unavailable")

    # The pull manager's start-up housekeeping tolerates it (it logs); a size lookup too.
    monkeypatch.setattr(node.runtime, "list_images", gone)
    FSPullRecordsAccessor(str(node.root)).write_image_pull_intent(PUBLIC)
    report = node.ensure_json(capsys, pod(image=PUBLIC))
    assert decisions(report) == ["pulled"]
    assert report["containers"][0]["events"][-1]["message"].endswith("Image size: 0 bytes.")


def test_verify_image_ref_records_under_the_status_ref(
    node: Node, capsys: pytest.CaptureFixture[str]
) -> None:
    node.runtime.pull_ref_mismatch = True  # CRI-O before its fix (kubernetes#137024)
    node.set_secrets(secret("regcred"))
    report = node.ensure_json(capsys, pod(secrets=("regcred",)), "--verify-image-ref")
    [c] = report["containers"]
    assert [e["reason"] for e in c["events"]] == ["Pulling", "Pulled", "ImageRefMismatch"]
    assert c["recorded"]["imageRef"] == "sha256:" + "a" * 64


def test_plugin_failure_is_logged_and_other_sources_still_count(
    node: Node, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    install_fake_plugin(bin_dir, "fake")
    config = write_config(
        tmp_path / "providers.json",
        [provider("fake", match_images=[REGISTRY], env={"FAKE_MODE": "exit1"})],
    )
    node.set_secrets(secret("regcred"))
    code, _, err = node.ensure(
        capsys,
        pod(secrets=("regcred",)),
        *("--config", str(config), "--bin-dir", str(bin_dir), "-v", "1"),
    )
    assert code == 0
    assert "credential provider fake failed for registry.example.com/private/app:v1" in err


def test_runtime_factory_is_injectable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from credprov.cli import ensure_cmd
    from credprov.cli.parser import build_parser

    registry = FakeRegistry(anonymous=["*"])
    registry.add_image(PUBLIC)
    runtime = FakeRuntime(registry)
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(pod(image=PUBLIC)))
    args = build_parser().parse_args(
        ["ensure-image", "--cri", CRI, "--root-dir", str(tmp_path), "--pod", str(pod_file)]
    )
    seen: list[str] = []

    def factory(endpoint: str) -> FakeRuntime:
        seen.append(endpoint)
        return runtime

    assert ensure_cmd.execute(args, factory) == 0
    assert seen == [CRI]
    assert [p.image for p in runtime.pulls] == [PUBLIC]
    assert "1/1 images ready" in capsys.readouterr().out
