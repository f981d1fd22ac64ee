"""``credprov ensure-image`` and ``credprov image-gc`` on a real containerd and registry.

Every scenario drives the real CLI (the main stories as a subprocess, exactly what a user
runs; the rest in-process through ``credprov.cli.main.main`` to keep the module fast)
against containerd's CRI plugin and ``docker-registry`` processes started on 127.0.0.1 by
the fixtures of tests/e2e/conftest.py, which stop them even when a test fails. Claims of
"no registry round-trip" are checked against the registry's own access log.

Each test pushes its own repository: containerd is shared by the module, so an image one
test pulled stays present for the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from credprov.imageauth.keyring import TrackedAuthConfig, hash_auth_config
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from tests.e2e.containerd import Containerd
from tests.e2e.registry import PushedImage, Registry, push_image
from tests.e2e.stack import KubeletCLI, pod, pull_secret, registry_round_trips

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN_DIR = REPO_ROOT / "config" / "bin"


@pytest.fixture
def node(tmp_path: Path, containerd: Containerd) -> KubeletCLI:
    """A fresh kubelet root on the module's containerd."""
    return KubeletCLI(tmp_path, containerd.endpoint)


def account(registry: Registry) -> tuple[str, str]:
    return next(iter(registry.users.items()))


def secret_for(
    registry: Registry, name: str, namespace: str, creds: tuple[str, str] | None = None
) -> dict[str, Any]:
    username, password = creds or account(registry)
    return pull_secret(name, namespace, registry.address, username, password)


def secrets_of(record: dict[str, Any], image: PushedImage) -> list[tuple[str, str, str]]:
    """(namespace, name, credentialHash) of the record's secrets for the image's repo."""
    entry = record["credentialMapping"][image.repo]
    return [
        (s["namespace"], s["name"], s["credentialHash"]) for s in entry.get("kubernetesSecrets", [])
    ]


def only(outcome: Any) -> dict[str, Any]:
    [container] = outcome.containers
    return dict(container)


def wait_for_login(registry: Registry, creds: tuple[str, str]) -> None:
    """The registry re-reads htpasswd when it changes: wait until it accepts ``creds``."""
    import time

    deadline = time.monotonic() + 5
    while registry.status("/v2/", creds) != 200:
        assert time.monotonic() < deadline, "the registry never accepted the new account"
        time.sleep(0.02)


# -- the blog's story: Pod A, Pod B, Pod C ----------------------------------------------------


def test_pod_a_pulls_pod_b_is_refused_pod_c_needs_no_round_trip(
    node: KubeletCLI, auth_registry: Registry
) -> None:
    image = push_image(auth_registry, "private/story")
    username, password = account(auth_registry)
    secrets = [
        secret_for(auth_registry, "regcred", "team-a"),
        secret_for(auth_registry, "same-robot", "team-c"),  # same credentials, another Secret
    ]

    # Pod A: its secret pulls the private image. Text output, as a user reads it.
    mark = auth_registry.request_count()
    a = node.ensure(
        pod("pod-a", "team-a", image.ref, secrets=["regcred"]),
        secrets,
        json_output=False,
        extra=["-v", "4"],
    )
    assert a.code == 0, a
    lines = a.stdout.splitlines()
    assert lines[0] == "pod team-a/pod-a (policy NeverVerifyPreloadedImages)"
    assert lines[1] == (
        f"container app: {image.ref} (IfNotPresent): ready, pulled {image.image_id}"
    )
    assert lines[2] == f'  Normal  Pulling  Pulling image "{image.ref}"'
    assert lines[3].startswith(f'  Normal  Pulled  Successfully pulled image "{image.ref}" in ')
    assert "credentials tried: secret:team-a/regcred (ok)" in a.stdout
    assert password not in a.stdout + a.stderr
    pulled = registry_round_trips(auth_registry, mark)
    assert any(r.status == 200 and "/manifests/" in r.path for r in pulled)
    record = node.record_for(image.image_id)
    assert record is not None
    assert secrets_of(record, image) == [
        ("team-a", "regcred", hash_auth_config(username, password))
    ]

    # Pod B, another namespace, no credentials: IfNotPresent must pull, and may not.
    mark = auth_registry.request_count()
    b = node.ensure(pod("pod-b", "team-b", image.ref, policy="IfNotPresent"), secrets)
    assert b.code == 1, b
    c = only(b)
    assert (c["decision"], c["error"]) == ("failed", "ErrImagePull")
    assert [a["credential"] for a in c["attempts"]] == ["anonymous"]
    assert [e["reason"] for e in c["events"]] == ["Pulling", "Failed"]
    assert "401 Unauthorized" in c["events"][1]["message"]
    assert c["metricLabels"] == {
        "pull_policy": "ifnotpresent",
        "present_locally": "true",
        "pull_required": "true",
    }
    assert b.stderr.strip() == "credprov: 1 of 1 images not ready"
    denied = registry_round_trips(auth_registry, mark)
    assert denied and all(r.status == 401 for r in denied)

    # Pod B with Never: refused with the same words as an absent image, no registry call.
    mark = auth_registry.request_count()
    never = node.ensure(pod("pod-b", "team-b", image.ref, policy="Never"), secrets)
    assert never.code == 1
    c = only(never)
    assert (c["decision"], c["error"]) == ("never-pull", "ErrImageNeverPull")
    assert c["message"] == (
        f'Container image "{image.ref}" is not present with pull policy of Never'
    )
    assert registry_round_trips(auth_registry, mark) == []

    # Pod C: another Secret with the same credentials. Used as present: no round trip.
    mark = auth_registry.request_count()
    pod_c = node.ensure(pod("pod-c", "team-c", image.ref, secrets=["same-robot"]), secrets)
    assert pod_c.code == 0, pod_c
    c = only(pod_c)
    assert c["decision"] == "present"
    assert c["events"] == [
        {
            "type": "Normal",
            "reason": "Pulled",
            "message": f'Container image "{image.ref}" already present on machine and can '
            "be accessed by the pod",
        }
    ]
    assert registry_round_trips(auth_registry, mark) == []
    record = node.record_for(image.image_id)
    assert record is not None
    assert [s[:2] for s in secrets_of(record, image)] == [
        ("team-a", "regcred"),
        ("team-c", "same-robot"),
    ]

    # Always: every start goes to the registry, which checks the credentials again.
    mark = auth_registry.request_count()
    always = node.ensure(
        pod("pod-a", "team-a", image.ref, policy="Always", secrets=["regcred"]),
        secrets,
        in_process=True,
    )
    assert always.decisions == ["pulled"]
    assert any("/manifests/" in r.path for r in registry_round_trips(auth_registry, mark))


def test_tls_registry(node: KubeletCLI, tls_registry: Registry, containerd: Containerd) -> None:
    containerd.add_registry(tls_registry)  # trust its self-signed CA
    image = push_image(tls_registry, "private/tls")
    secrets = [secret_for(tls_registry, "regcred", "team-a")]
    ok = node.ensure(pod("pod-a", "team-a", image.ref, secrets=["regcred"]), secrets)
    assert ok.code == 0, ok
    assert only(ok)["imageRef"] == image.image_id
    refused = node.ensure(pod("pod-b", "team-b", image.ref), secrets, in_process=True)
    assert refused.decisions == ["failed"]
    assert "401 Unauthorized" in only(refused)["message"]


# -- credentials that change, or are not secrets ------------------------------------------------


def test_secret_rotation(node: KubeletCLI, registry_factory: Callable[..., Registry]) -> None:
    registry = registry_factory()
    image = push_image(registry, "private/rotate")
    username, old = account(registry)
    assert node.ensure(
        pod("pod-a", "team-a", image.ref, secrets=["regcred"]),
        [secret_for(registry, "regcred", "team-a")],
        in_process=True,
    ).decisions == ["pulled"]

    # The robot's password is rotated in the registry and in the Secret (same uid).
    new = "rotated-" + old
    registry.set_users({username: new})
    wait_for_login(registry, (username, new))
    rotated = secret_for(registry, "regcred", "team-a", (username, new))
    mark = registry.request_count()
    again = node.ensure(
        pod("pod-a2", "team-a", image.ref, secrets=["regcred"]), [rotated], in_process=True
    )
    assert again.decisions == ["present"], again
    assert registry_round_trips(registry, mark) == []
    record = node.record_for(image.image_id)
    assert record is not None
    assert secrets_of(record, image) == [("team-a", "regcred", hash_auth_config(username, new))]

    # A copy of the old credentials elsewhere no longer matches, and the registry says no.
    stale = node.ensure(
        pod("pod-x", "team-x", image.ref, secrets=["old-copy"]),
        [secret_for(registry, "old-copy", "team-x", (username, old))],
        in_process=True,
    )
    assert stale.decisions == ["failed"]
    assert "401 Unauthorized" in only(stale)["message"]
    # A copy of the new ones matches by hash: no round trip.
    mark = registry.request_count()
    fresh = node.ensure(
        pod("pod-y", "team-y", image.ref, secrets=["new-copy"]),
        [secret_for(registry, "new-copy", "team-y", (username, new))],
        in_process=True,
    )
    assert fresh.decisions == ["present"]
    assert registry_round_trips(registry, mark) == []


def test_anonymous_image_is_usable_by_every_pod(
    node: KubeletCLI, anonymous_registry: Registry
) -> None:
    image = push_image(anonymous_registry, "public/tool")
    first = node.ensure(pod("pod-a", "team-a", image.ref), in_process=True)
    assert first.decisions == ["pulled"], first
    assert only(first)["recorded"]["credentials"] == {"nodePodsAccessible": True}
    mark = anonymous_registry.request_count()
    other = node.ensure(pod("pod-z", "team-z", image.ref, policy="Never"), in_process=True)
    assert other.decisions == ["present"]
    assert only(other)["credentialLookups"] == 0
    assert registry_round_trips(anonymous_registry, mark) == []


def test_plugin_credentials_are_recorded_node_wide(
    node: KubeletCLI, auth_registry: Registry, tmp_path: Path
) -> None:
    image = push_image(auth_registry, "private/plugin")
    username, password = account(auth_registry)
    config = tmp_path / "credential-provider-config.json"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "kubelet.config.k8s.io/v1",
                "kind": "CredentialProviderConfig",
                "providers": [
                    {
                        "name": "example-credential-provider",
                        "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                        "matchImages": [auth_registry.address],
                        "defaultCacheDuration": "5m",
                        "env": [
                            {"name": "EXAMPLE_USERNAME", "value": username},
                            {"name": "EXAMPLE_PASSWORD", "value": password},
                        ],
                    }
                ],
            }
        )
    )
    plugins = ["--config", str(config), "--bin-dir", str(EXAMPLE_PLUGIN_DIR)]
    pulled = node.ensure(pod("pod-a", "team-a", image.ref), extra=plugins)
    assert pulled.code == 0, pulled
    c = only(pulled)
    assert [a["credential"] for a in c["attempts"]] == ["provider:example-credential-provider"]
    assert password not in pulled.stdout + pulled.stderr
    record = node.record_for(image.image_id)
    assert record is not None
    assert record["credentialMapping"] == {image.repo: {"nodePodsAccessible": True}}
    # Node-wide: a pod of another namespace, without any credentials, may use it.
    other = node.ensure(pod("pod-z", "team-z", image.ref, policy="Never"), in_process=True)
    assert other.decisions == ["present"]


# -- verification policies --------------------------------------------------------------------


def test_always_verify_checks_preloaded_images(
    node: KubeletCLI, auth_registry: Registry, cri_runtime: Any
) -> None:
    image = push_image(auth_registry, "private/preloaded")
    username, password = account(auth_registry)
    # Pulled outside the kubelet (an image baked into the node): no record at all.
    cri_runtime.pull_image(image.ref, TrackedAuthConfig(username, password))
    secrets = [secret_for(auth_registry, "regcred", "team-a")]
    nobody = pod("pod-b", "team-b", image.ref)

    preloaded = node.ensure(nobody, in_process=True)
    assert preloaded.decisions == ["present"]  # the default policy trusts preloaded images

    always = node.ensure(nobody, policy="AlwaysVerify", in_process=True)
    assert always.decisions == ["failed"] and always.code == 1
    assert only(always)["metricLabels"]["pull_required"] == "true"

    mark = auth_registry.request_count()
    verified = node.ensure(
        pod("pod-a", "team-a", image.ref, secrets=["regcred"]),
        secrets,
        policy="AlwaysVerify",
        in_process=True,
    )
    assert verified.decisions == ["pulled"]
    assert registry_round_trips(auth_registry, mark)
    mark = auth_registry.request_count()
    known = node.ensure(
        pod("pod-a2", "team-a", image.ref, secrets=["regcred"]),
        secrets,
        policy="AlwaysVerify",
        in_process=True,
    )
    assert known.decisions == ["present"]
    assert registry_round_trips(auth_registry, mark) == []


def test_allowlisted_images_skip_verification(node: KubeletCLI, auth_registry: Registry) -> None:
    image = push_image(auth_registry, "private/base")
    secrets = [secret_for(auth_registry, "regcred", "team-a")]
    assert node.ensure(
        pod("pod-a", "team-a", image.ref, secrets=["regcred"]), secrets, in_process=True
    ).decisions == ["pulled"]
    nobody = pod("pod-b", "team-b", image.ref, policy="Never")

    assert node.ensure(nobody, in_process=True).decisions == ["never-pull"]
    allowed = node.ensure(
        nobody,
        policy="NeverVerifyAllowlistedImages",
        allowlist=[f"{auth_registry.address}/private/*"],
        in_process=True,
    )
    assert allowed.decisions == ["present"], allowed
    elsewhere = node.ensure(
        nobody,
        policy="NeverVerifyAllowlistedImages",
        allowlist=[f"{auth_registry.address}/public/*"],
        in_process=True,
    )
    assert elsewhere.decisions == ["never-pull"]


# -- restarts, garbage collection, an unreachable registry -----------------------------------


def test_restart_with_a_dangling_intent(
    node: KubeletCLI, auth_registry: Registry, cri_runtime: Any
) -> None:
    image = push_image(auth_registry, "private/dangling")
    absent = push_image(auth_registry, "private/dangling-absent")
    username, password = account(auth_registry)
    # A kubelet pulled the image and died before writing its record: the intent remains.
    cri_runtime.pull_image(image.ref, TrackedAuthConfig(username, password))
    store = FSPullRecordsAccessor(str(node.root))
    store.write_image_pull_intent(image.ref)
    store.write_image_pull_intent(absent.ref)  # died before the pull even finished

    # The next start settles what the runtime has: kubelet-pulled, nobody verified yet.
    refused = node.ensure(pod("pod-b", "team-b", image.ref, policy="Never"))
    assert refused.decisions == ["never-pull"], refused
    state = node.pull_records()
    assert state["intents"] == [absent.ref]
    [record] = state["records"]
    assert record["imageRef"] == image.image_id
    assert not record.get("credentialMapping")

    # The intent of the absent image still marks it kubelet-pulled once it appears.
    cri_runtime.pull_image(absent.ref, TrackedAuthConfig(username, password))
    assert node.ensure(
        pod("pod-b", "team-b", absent.ref, policy="Never"), in_process=True
    ).decisions == ["never-pull"]

    # A pod with credentials verifies them at the registry, and the record learns them.
    mark = auth_registry.request_count()
    verified = node.ensure(
        pod("pod-a", "team-a", image.ref, secrets=["regcred"]),
        [secret_for(auth_registry, "regcred", "team-a")],
        in_process=True,
    )
    assert verified.decisions == ["pulled"]
    assert registry_round_trips(auth_registry, mark)
    record = node.record_for(image.image_id)
    assert record is not None and [s[:2] for s in secrets_of(record, image)] == [
        ("team-a", "regcred")
    ]


def test_image_gc_prunes_records(
    node: KubeletCLI, auth_registry: Registry, cri_runtime: Any
) -> None:
    doomed = push_image(auth_registry, "private/gc-doomed")
    kept = push_image(auth_registry, "private/gc-kept")
    secrets = [secret_for(auth_registry, "regcred", "team-a")]
    both = pod("pod-a", "team-a", [doomed.ref, kept.ref], secrets=["regcred"])
    assert node.ensure(both, secrets, in_process=True).decisions == ["pulled", "pulled"]

    dry = node.image_gc("--dry-run", "--remove", doomed.ref, in_process=True)
    assert dry.code == 0 and dry.report is not None
    assert [r["imageRef"] for r in dry.report["pruned"]] == [doomed.image_id]
    assert cri_runtime.image_ref(doomed.ref) == doomed.image_id  # nothing happened

    nothing = node.image_gc()
    assert nothing.code == 0, nothing
    assert nothing.report is not None and nothing.report["pruned"] == []

    gc = node.image_gc("--remove", doomed.ref)
    assert gc.code == 0, gc
    assert gc.report is not None
    assert gc.report["removed"] == [{"image": doomed.ref, "error": None}]
    assert [r["imageRef"] for r in gc.report["pruned"]] == [doomed.image_id]
    assert cri_runtime.image_ref(doomed.ref) is None
    assert [r["imageRef"] for r in node.pull_records()["records"]] == [kept.image_id]


def test_registry_down_known_credentials_still_start(
    node: KubeletCLI, registry_factory: Callable[..., Registry]
) -> None:
    registry = registry_factory({"e2e-user": "e2e-pass-down", "other": "other-pass-down"})
    image = push_image(registry, "private/offline")
    known = [secret_for(registry, "regcred", "team-a", ("e2e-user", "e2e-pass-down"))]
    unknown = [secret_for(registry, "other", "team-x", ("other", "other-pass-down"))]
    assert node.ensure(
        pod("pod-a", "team-a", image.ref, secrets=["regcred"]), known, in_process=True
    ).decisions == ["pulled"]

    with registry.down():
        same = node.ensure(pod("pod-a2", "team-a", image.ref, secrets=["regcred"]), known)
        assert same.code == 0, same
        assert same.decisions == ["present"]
        stranger = node.ensure(
            pod("pod-x", "team-x", image.ref, secrets=["other"]), unknown, in_process=True
        )
        assert stranger.code == 1
        c = only(stranger)
        assert c["decision"] == "failed"
        assert "connection refused" in c["message"]
        never = node.ensure(
            pod("pod-x", "team-x", image.ref, policy="Never", secrets=["other"]),
            unknown,
            in_process=True,
        )
        assert never.decisions == ["never-pull"]
    # And once it is back, the same stranger's credentials are checked and accepted.
    back = node.ensure(
        pod("pod-x", "team-x", image.ref, secrets=["other"]), unknown, in_process=True
    )
    assert back.decisions == ["pulled"]


def test_unreachable_runtime_is_one_line(tmp_path: Path) -> None:
    cli = KubeletCLI(tmp_path, f"unix://{tmp_path}/no-such.sock")
    outcome = cli.ensure(pod("p", "default", "127.0.0.1:1/x:v1"), in_process=True)
    assert outcome.code == 1 and outcome.stdout == ""
    assert outcome.stderr.startswith(f"credprov: error: --cri unix://{tmp_path}/no-such.sock: ")
    assert outcome.stderr.count("\n") == 1
    assert "no such socket" in outcome.stderr
