"""The doctor's KEP-2535 checks: the pull-policy default, records read only inside the node
root (links out of it, loops, bounded listing) and the preflight at scale."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from credprov.base.rootfs import NodeRoot
from credprov.doctor import DoctorOptions, Report, Status, run_doctor
from credprov.doctor import pullrecords as pullrecords_module
from credprov.doctor.cluster import NodeImages
from credprov.doctor.pullrecords import NodePullRecords
from credprov.kubelet.ensure import default_pull_policy
from credprov.pullmanager.interfaces import RuntimeImage
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    cache_filename,
    encode_record,
)
from tests.unit.doctor import nodes
from tests.unit.doctor.nodes import write

KUBELET_ROOT = "var/lib/kubelet"
MANAGER = f"{KUBELET_ROOT}/image_manager"
DIGEST = "sha256:" + "c" * 64
#: Never read by the doctor: the imageRef of a record planted outside the node root.
CANARY_REF = "sha256:" + "0ca4a7" * 10 + "dead"


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


def _policy(root: Path, policy: str) -> None:
    write(
        root,
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"imagePullCredentialsVerificationPolicy: {policy}\n",
    )


def _record(image_ref: str, repo: str = "registry-a.example.com/team/app") -> bytes:
    return encode_record(
        ImagePulledRecord(
            lastUpdatedTime=dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
            imageRef=image_ref,
            credentialMapping={repo: ImagePullCredentials(nodePodsAccessible=True)},
        )
    )


def _pods(path: Path, containers: list[dict[str, str]], n_pods: int = 1) -> Path:
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": nodes.NODE}}
    ]
    for i in range(n_pods):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"app-{i}", "namespace": "team-a"},
                "spec": {"nodeName": nodes.NODE, "containers": containers},
            }
        )
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def _run(root: Path, tmp_path: Path, **kw: object) -> Report:
    options = DoctorOptions(root=str(root), no_exec=True, **kw)  # type: ignore[arg-type]
    return run_doctor(options)


def _dump(report: Report) -> str:
    return json.dumps(report.to_dict())


# -- the default pull policy ----------------------------------------------------------------------

DEFAULT_POLICIES = [
    ("registry-a.example.com/team/app", "Always"),
    ("registry-a.example.com/team/app:latest", "Always"),
    ("registry-a.example.com/team/app:v1", "IfNotPresent"),
    (f"registry-a.example.com/team/app@{DIGEST}", "IfNotPresent"),
    # SetDefaults_Container looks at the tag only: a digest does not turn latest off.
    (f"registry-a.example.com/team/app:latest@{DIGEST}", "Always"),
    (f"registry-a.example.com/team/app:v1@{DIGEST}", "IfNotPresent"),
]


@pytest.mark.parametrize(("image", "policy"), DEFAULT_POLICIES)
def test_default_pull_policy_is_the_kubelets(
    node: Path, tmp_path: Path, image: str, policy: str
) -> None:
    """The kubelet emulation and the doctor's preflight default an empty policy alike."""
    assert default_pull_policy(image) == policy
    # AlwaysVerify and no records: a present IfNotPresent image is pulled again (warn),
    # an Always one is pulled anyway (nothing to say).
    _policy(node, "AlwaysVerify")
    shutil.rmtree(_manager(node))
    images = tmp_path / "images.txt"
    images.write_text(image + "\n")
    report = _run(
        node,
        tmp_path,
        objects=str(_pods(tmp_path / "objects.json", [{"name": "app", "image": image}])),
        images_file=str(images),
    )
    findings = report.by_id("kep2535.preflight")
    if policy == "Always":
        assert [f.status for f in findings] == [Status.PASS], findings
    else:
        assert [(f.status, f.subject) for f in findings] == [(Status.WARN, "team-a/app-0/app")]
        assert "(IfNotPresent)" in findings[0].message


# -- the verification policy: the kubelet emulation's defaulting and validation ----------------

#: (name, the KubeletConfiguration's policy lines, gate on). The expected answer is the kubelet
#: emulation's (:func:`credprov.kubelet.node.validate_policy` over the defaulted policy): the
#: preflight judges the pods exactly when the emulation accepts the configuration.
POLICY_CONFIGS = [
    ("unset, defaulted", "", True),
    ("explicit empty, defaulted", "imagePullCredentialsVerificationPolicy: ''\n", True),
    ("null is unset", "imagePullCredentialsVerificationPolicy: null\n", True),
    ("AlwaysVerify", "imagePullCredentialsVerificationPolicy: AlwaysVerify\n", True),
    (
        "allowlisted",
        "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\n"
        "preloadedImagesVerificationAllowlist: [registry-b.example.com/*]\n",
        True,
    ),
    (
        "null allowlist is unset",
        "imagePullCredentialsVerificationPolicy: AlwaysVerify\n"
        "preloadedImagesVerificationAllowlist: null\n",
        True,
    ),
    (
        "allowlist next to AlwaysVerify",
        "imagePullCredentialsVerificationPolicy: AlwaysVerify\n"
        "preloadedImagesVerificationAllowlist: [registry-a.example.com/*]\n",
        True,
    ),
    (
        "allowlist next to NeverVerify",
        "imagePullCredentialsVerificationPolicy: NeverVerify\n"
        "preloadedImagesVerificationAllowlist: [registry-a.example.com/*]\n",
        True,
    ),
    ("unknown policy", "imagePullCredentialsVerificationPolicy: Sometimes\n", True),
    (
        "bad allowlist entry",
        "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\n"
        "preloadedImagesVerificationAllowlist: ['registry-a.example.com/team/app:v1']\n",
        True,
    ),
    ("gate off, null policy is unset", "imagePullCredentialsVerificationPolicy: null\n", False),
]


def _emulation_accepts(lines: str, gate: bool) -> bool:
    """Whether the kubelet emulation starts with these settings: YAML null is unset (Go
    decodes it to the zero value), the policy is defaulted, then validated."""
    import yaml

    from credprov.pullmanager.policies import DEFAULT_POLICY, validate_policy_config

    doc = yaml.safe_load(lines) or {}
    policy = doc.get("imagePullCredentialsVerificationPolicy") or ""
    allowlist = doc.get("preloadedImagesVerificationAllowlist") or []
    if gate and not policy:
        policy = DEFAULT_POLICY
    return not validate_policy_config(policy, allowlist, gate)


@pytest.mark.parametrize(
    ("name", "lines", "gate"), POLICY_CONFIGS, ids=[c[0] for c in POLICY_CONFIGS]
)
def test_pull_policy_answers_as_the_kubelet_emulation(
    node: Path, tmp_path: Path, name: str, lines: str, gate: bool
) -> None:
    """``pull-policy.valid`` passes, and the preflight judges the pods, exactly for the
    settings the kubelet emulation accepts (it used to judge pods under a policy whose
    allowlist made the kubelet exit, and to call a YAML ``null`` a type error)."""
    gates = "" if gate else "featureGates:\n  KubeletEnsureSecretPulledImages: false\n"
    write(
        node,
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + gates + lines,
    )
    images = tmp_path / "images.txt"
    images.write_text(nodes.APP_IMAGE + "\n")
    report = _run(
        node,
        tmp_path,
        objects=str(_pods(tmp_path / "objects.json", [{"name": "app", "image": nodes.APP_IMAGE}])),
        images_file=str(images),
    )
    accepts = _emulation_accepts(lines, gate)
    [valid] = report.by_id("pull-policy.valid")
    assert (valid.status == Status.PASS) == accepts, valid
    if gate:
        preflight = report.by_id("kep2535.preflight")
        judged = [f for f in preflight if f.status != Status.SKIP]
        assert bool(judged) == accepts, preflight
        if not accepts:
            assert [f.message for f in preflight] == [
                "the pull policy is invalid (see pull-policy.valid)"
            ]


# -- records read inside the root only -------------------------------------------------------------


def _manager(root: Path) -> Path:
    return root / MANAGER


def _outside(tmp_path: Path) -> Path:
    """A host directory outside the root holding a valid record with the canary imageRef."""
    host = tmp_path / "host-only"
    host.mkdir(exist_ok=True)
    (host / cache_filename(CANARY_REF)).write_bytes(_record(CANARY_REF))
    (host / "record").write_bytes(_record(CANARY_REF))
    return host


def test_a_record_linking_out_of_the_root_is_never_read(node: Path, tmp_path: Path) -> None:
    host = _outside(tmp_path)
    pulled = _manager(node) / "pulled"
    (pulled / ("sha256-" + "e" * 64)).symlink_to(host / "record")
    report = _run(node, tmp_path)
    [finding] = report.by_id("pull-records.health")
    assert finding.status == Status.WARN and "1 file(s) the kubelet cannot use" in finding.message
    assert f"sha256-{'e' * 64}: a symlink to nothing inside the root" in finding.message
    scan = NodePullRecords(NodeRoot(str(node)), "/" + KUBELET_ROOT).scan()
    assert [r.image_ref for r in scan.records] == [nodes.APP_REF]
    assert scan.errors == [
        f"/{MANAGER}/pulled/sha256-{'e' * 64}: a symlink to nothing inside the root"
    ]
    assert CANARY_REF not in _dump(report) and str(host) not in _dump(report)


@pytest.mark.parametrize(
    "link",
    [
        pytest.param("pulled", id="pulled is a link to a host directory"),
        pytest.param("image_manager", id="image_manager is a link to a host directory"),
    ],
)
def test_a_records_directory_linking_out_of_the_root_is_never_read(
    node: Path, tmp_path: Path, link: str
) -> None:
    host = _outside(tmp_path)
    (host / "pulled").mkdir()
    (host / "pulled" / cache_filename(CANARY_REF)).write_bytes(_record(CANARY_REF))
    _policy(node, "AlwaysVerify")
    linked = _manager(node) if link == "image_manager" else _manager(node) / "pulled"
    shutil.rmtree(linked)
    linked.symlink_to(host)  # absolute: the node's own /tmp/..., which does not exist
    # The canary record would grant the pod's image (same imageRef): unread, the pod fails.
    images = tmp_path / "images.json"
    doc = {"images": [{"id": CANARY_REF, "repoTags": [nodes.APP_IMAGE], "repoDigests": []}]}
    images.write_text(json.dumps(doc))
    report = _run(
        node,
        tmp_path,
        objects=str(nodes.write_objects(tmp_path / "objects.json")),
        images_file=str(images),
    )
    assert [f.status for f in report.by_id("pull-records.health")] == [Status.WARN]
    assert [f.status for f in report.by_id("kep2535.preflight")] == [Status.FAIL]
    scan = NodePullRecords(NodeRoot(str(node)), "/" + KUBELET_ROOT).scan()
    assert scan.records == [] and scan.intents == []
    where = f"/{MANAGER}" if link == "image_manager" else f"/{MANAGER}/pulled"
    assert scan.errors == [f"{where}: a symlink to nothing inside the root, or a loop"]
    assert str(host) not in _dump(report)


def test_image_manager_linked_to_the_node_root_reads_the_nodes_files(
    node: Path, tmp_path: Path
) -> None:
    """``image_manager -> /`` is the node's ``/``: its ``/pulled`` is read, not the host's."""
    manager = _manager(node)
    (node / "pulled").mkdir(mode=0o700)
    for record in (manager / "pulled").iterdir():
        record.rename(node / "pulled" / record.name)
    shutil.rmtree(manager)
    manager.symlink_to("/")
    (node / "pulled" / ("sha256-" + "f" * 64)).symlink_to(f"/{KUBELET_ROOT}/kept-record")
    write(node, f"/{KUBELET_ROOT}/kept-record", _record("sha256:" + "f" * 64).decode(), 0o600)
    node.chmod(0o700)
    report = _run(node, tmp_path)
    [finding] = report.by_id("pull-records.health")
    assert finding.status == Status.PASS and finding.message.startswith("2 record(s)")
    scan = NodePullRecords(NodeRoot(str(node)), "/" + KUBELET_ROOT).scan()
    assert sorted(r.image_ref for r in scan.records) == [nodes.APP_REF, "sha256:" + "f" * 64]
    assert scan.errors == []


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("image_manager", id="itself"),
        pytest.param("../kubelet/image_manager", id="itself through .."),
        pytest.param("/var/lib/kubelet/loop-b", id="a two-link loop"),
    ],
)
def test_a_looping_image_manager_is_one_warning(node: Path, tmp_path: Path, target: str) -> None:
    manager = _manager(node)
    shutil.rmtree(manager)
    manager.symlink_to(target)
    (node / KUBELET_ROOT / "loop-b").symlink_to("/var/lib/kubelet/image_manager")
    report = _run(
        node,
        tmp_path,
        objects=str(nodes.write_objects(tmp_path / "objects.json")),
        images_file=str(nodes.write_images(tmp_path / "images.json")),
    )
    [finding] = report.by_id("pull-records.health")
    assert finding.status == Status.WARN
    assert f"/{MANAGER}: a symlink to nothing inside the root, or a loop" in finding.message
    # The kubelet cannot read a record through the loop either: it verifies (Never fails).
    [preflight] = report.by_id("kep2535.preflight")
    assert preflight.status == Status.FAIL
    assert "its pull record cannot be read" in preflight.message


def test_an_unreadable_record_makes_the_kubelet_verify(node: Path, tmp_path: Path) -> None:
    """MustAttemptImagePull fails safe on a record it cannot decode: the image is
    verified whatever the policy (here NeverVerifyPreloadedImages), so a Never pod fails."""
    write(node, f"/{MANAGER}/pulled/{cache_filename(nodes.APP_REF)}", "{", 0o600)
    report = _run(
        node,
        tmp_path,
        objects=str(nodes.write_objects(tmp_path / "objects.json")),
        images_file=str(nodes.write_images(tmp_path / "images.json")),
    )
    [preflight] = report.by_id("kep2535.preflight")
    assert preflight.status == Status.FAIL
    assert "its pull record cannot be read (see pull-records.health)" in preflight.message


def test_record_files_are_read_up_to_the_cap(
    node: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulled = _manager(node) / "pulled"
    for i in range(6):
        ref = f"sha256:{i:064x}"
        (pulled / cache_filename(ref)).write_bytes(_record(ref))
        (pulled / cache_filename(ref)).chmod(0o600)
    reads: list[str] = []
    read = NodeRoot.read

    def counting(self: NodeRoot, node_path: str, *args: object, **kw: object) -> bytes:
        reads.append(node_path)
        return read(self, node_path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(NodeRoot, "read", counting)
    monkeypatch.setattr(pullrecords_module, "MAX_RECORD_FILES", 4)
    report = _run(node, tmp_path)
    assert len([r for r in reads if "/image_manager/" in r]) == 4
    findings = report.by_id("pull-records.health")
    assert [f.status for f in findings] == [Status.WARN]
    assert findings[0].message.startswith("more than 4 intent or record files, not all read: 3")


# -- scale --------------------------------------------------------------------------------------


def test_node_images_find_by_any_name_first_image_wins() -> None:
    images = NodeImages(
        [
            RuntimeImage(id="a", repo_tags=("docker.io/library/nginx:latest",)),
            RuntimeImage(id="b", repo_tags=("nginx",), repo_digests=(f"quay.io/x/y@{DIGEST}",)),
            RuntimeImage(id="c", repo_tags=("quay.io/x/y:v1",)),
        ]
    )
    found = {i: getattr(images.find(i), "id", None) for i in ("nginx", "nginx:latest")}
    assert found == {"nginx": "a", "nginx:latest": "a"}
    assert getattr(images.find(f"quay.io/x/y@{DIGEST}"), "id", None) == "b"
    assert getattr(images.find("quay.io/x/y:v1"), "id", None) == "c"
    assert images.find("quay.io/x/y:v2") is None
    assert images.find("Not A Reference") is None


def test_preflight_on_10000_images_and_1000_pods(node: Path, tmp_path: Path) -> None:
    """One index over the node's images, each record file read once: this runs in well
    under a second (the per-container scan over every image it replaced took ~15 s; see
    benchmarks/bench_doctor_scale.py). Correctness is what is asserted, not time."""
    n = 10_000
    images = tmp_path / "images.json"
    doc = {
        "images": [
            {"id": f"sha256:{i:064x}", "repoTags": [f"registry-a.example.com/t/app-{i}:v1"]}
            for i in range(n)
        ]
    }
    images.write_text(json.dumps(doc))
    containers = [
        {"name": "a", "image": "registry-a.example.com/t/app-7:v1", "imagePullPolicy": "Never"},
        {"name": "b", "image": f"registry-a.example.com/t/app-{n - 1}:v1"},
        {"name": "c", "image": "registry-a.example.com/t/gone:v1", "imagePullPolicy": "Never"},
    ]
    report = _run(
        node,
        tmp_path,
        objects=str(_pods(tmp_path / "objects.json", containers, n_pods=1_000)),
        images_file=str(images),
    )
    findings = report.by_id("kep2535.preflight")
    # Preloaded (no record), NeverVerifyPreloadedImages: only the absent image is reported.
    assert len(findings) == 1_000
    assert {(f.status, f.subject.rsplit("/", 1)[1]) for f in findings} == {(Status.WARN, "c")}
