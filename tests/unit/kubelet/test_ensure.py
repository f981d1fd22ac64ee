"""EnsureImageExists: the decision matrix, events, credential order and recording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from credprov.credentialprovider.chain import (
    CredentialChain,
    ImageResolution,
    PodInfo,
    PullSecrets,
    default_chain,
)
from credprov.imageauth.keyring import (
    CredentialOrigin,
    DockerKeyring,
    ServiceAccountCoordinates,
    hash_auth_config,
)
from credprov.kubelet.ensure import (
    Container,
    CredentialLookupError,
    EnsureImage,
    _aggregate,
    apply_default_image_tag,
    default_pull_policy,
    pod_credentials,
    tracked_to_image_pull_credentials,
)
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.pullmanager.manager import ImagePullManager, PullIntentError
from credprov.pullmanager.metrics import PullManagerMetrics
from credprov.testing import FakeRegistry, FakeRuntime, RegistryGrant

PRIVATE = "registry.example.com/private/foo:1.0"
PUBLIC = "registry.example.com/public/bar:2.0"
PRIVATE_ID = "sha256:" + "f0" * 32
PUBLIC_ID = "sha256:" + "ba" * 32
PRELOADED = "registry.example.com/private/preloaded:1"
PRELOADED_ID = "sha256:" + "11" * 32
CANARY = "canary-pw-9f2e"


def secret(ns: str, name: str, username: str, password: str, uid: str = "") -> dict[str, Any]:
    auths = {"registry.example.com": {"username": username, "password": password}}
    return {
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"namespace": ns, "name": name, "uid": uid or f"uid-{ns}-{name}"},
        "stringData": {".dockerconfigjson": json.dumps({"auths": auths})},
    }


GOOD = secret("ns-a", "good", "alice", CANARY)
BAD = secret("ns-a", "bad", "mallory", "wrong")


class Node:
    def __init__(
        self,
        tmp_path: Path,
        policy: str = "NeverVerifyPreloadedImages",
        gate: bool = True,
        default: Any = None,
        credentials: Any = None,
        mismatch: bool = False,
        verify_ref: bool = False,
    ) -> None:
        self.registry = FakeRegistry(
            anonymous=["registry.example.com/public/*"],
            grants=[
                RegistryGrant(("registry.example.com/private/*",), "alice", CANARY),
                RegistryGrant(("registry.example.com/private/*",), "node", "node-pw"),
                RegistryGrant(("registry.example.com/private/*",), "sa-robot", "sa-pw"),
            ],
        )
        self.registry.add_image(PRIVATE, PRIVATE_ID, size=1234)
        self.registry.add_image(PUBLIC, PUBLIC_ID)
        self.runtime = FakeRuntime(self.registry, pull_ref_mismatch=mismatch)
        self.runtime.add_image(PRELOADED_ID, [PRELOADED])
        self.root = tmp_path
        self.metrics = PullManagerMetrics()
        self.manager = (
            ImagePullManager(tmp_path, policy, runtime=self.runtime, metrics=self.metrics)
            if gate
            else None
        )
        self.ensure = EnsureImage(
            self.runtime,
            self.manager,
            credentials=credentials or default_chain(node_keyring=default),
            metrics=self.metrics,
            verify_image_ref=verify_ref,
        )

    def run(
        self, image: str, policy: str, secrets: list[dict[str, Any]] | None = None, ns: str = "ns"
    ) -> Any:
        pod = PodInfo(namespace=ns, name="p", uid="u", service_account_name="default")
        return self.ensure.ensure_image_exists(
            pod, Container(image=image, image_pull_policy=policy), secrets or []
        )

    def store(self) -> FSPullRecordsAccessor:
        return FSPullRecordsAccessor(str(self.root), migrate=False)


def labels(res: Any) -> tuple[str, str, str]:
    lab = res.labels
    return lab["pull_policy"], lab["present_locally"], lab["pull_required"]


# -- the matrix ---------------------------------------------------------------------------------

ALREADY = 'Container image "{}" already present on machine and can be accessed by the pod'
NEVER = 'Container image "{}" is not present with pull policy of Never'


@pytest.mark.parametrize(
    ("setup", "image", "policy", "secrets", "decision", "error", "lab", "reasons"),
    [
        # Always pulls without inspecting.
        (None, PRIVATE, "Always", [GOOD], "pulled", None,
         ("always", "unknown", "true"), ["Pulling", "Pulled"]),
        (None, PRIVATE, "IfNotPresent", [GOOD], "pulled", None,
         ("ifnotpresent", "false", "true"), ["Pulling", "Pulled"]),
        (None, PRIVATE, "Never", [GOOD], "never-pull", "ErrImageNeverPull",
         ("never", "false", "unknown"), ["ErrImageNeverPull"]),
        # Preloaded: NeverVerifyPreloadedImages lets anyone use it.
        (None, PRELOADED, "IfNotPresent", [], "present", None,
         ("ifnotpresent", "true", "false"), ["Pulled"]),
        (None, PRELOADED, "Never", [], "present", None,
         ("never", "true", "false"), ["Pulled"]),
        # Kubelet-pulled with a secret: the same secret passes, none must pull.
        ("pulled", PRIVATE, "IfNotPresent", [GOOD], "present", None,
         ("ifnotpresent", "true", "false"), ["Pulled"]),
        ("pulled", PRIVATE, "IfNotPresent", [], "failed", "ErrImagePull",
         ("ifnotpresent", "true", "true"), ["Pulling", "Failed"]),
        ("pulled", PRIVATE, "Never", [], "never-pull", "ErrImageNeverPull",
         ("never", "true", "true"), ["ErrImageNeverPull"]),
        ("pulled", PRIVATE, "Always", [], "failed", "ErrImagePull",
         ("always", "unknown", "true"), ["Pulling", "Failed"]),
    ],
)  # fmt: skip
def test_decision_matrix(
    tmp_path: Path,
    setup: str | None,
    image: str,
    policy: str,
    secrets: list[dict[str, Any]],
    decision: str,
    error: str | None,
    lab: tuple[str, str, str],
    reasons: list[str],
) -> None:
    node = Node(tmp_path)
    if setup == "pulled":
        assert node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a").decision == "pulled"
    res = node.run(image, policy, secrets, ns="ns-a")
    assert (res.decision, res.error, labels(res)) == (decision, error, lab)
    assert [e.reason for e in res.events] == reasons
    series = (
        "kubelet_image_manager_ensure_image_requests_total"
        f'{{present_locally="{lab[1]}",pull_policy="{lab[0]}",pull_required="{lab[2]}"}}'
    )
    assert series in node.metrics.exposition().decode()


def test_messages(tmp_path: Path) -> None:
    node = Node(tmp_path)
    res = node.run(PRELOADED, "Never")
    assert res.events[0].type == "Normal"
    assert res.events[0].message == ALREADY.format(PRELOADED)
    assert res.message == ALREADY.format(PRELOADED)
    assert res.image_ref == PRELOADED_ID
    res = node.run(PRIVATE, "Never")
    assert (res.events[0].type, res.events[0].message) == ("Warning", NEVER.format(PRIVATE))
    res = node.run("registry.example.com/private/foo", "Always", [GOOD])
    # Pulling names the spec with the default tag; the error names it too.
    assert res.events[0].message == 'Pulling image "registry.example.com/private/foo:latest"'
    assert res.events[1].message.startswith(
        'Failed to pull image "registry.example.com/private/foo:latest": rpc error'
    )
    assert res.error == "ErrImagePull" and res.message.startswith("rpc error")
    res = node.run(PRIVATE, "IfNotPresent", [GOOD])
    assert res.events[1].message == (
        f'Successfully pulled image "{PRIVATE}" in 0s (0s including waiting). '
        "Image size: 1234 bytes."
    )


def test_never_hides_presence(tmp_path: Path) -> None:
    """A present-but-inaccessible image gives exactly the "absent" answer."""
    node = Node(tmp_path)
    node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a")
    present = node.run(PRIVATE, "Never", ns="ns-b")
    node.runtime.remove_image(PRIVATE)
    absent = node.run(PRIVATE, "Never", ns="ns-b")
    assert present.events == absent.events and present.message == absent.message


def test_gate_off_uses_present_image(tmp_path: Path) -> None:
    node = Node(tmp_path, gate=False)
    node.run(PRIVATE, "IfNotPresent", [GOOD])
    res = node.run(PRIVATE, "Never")
    assert res.decision == "present"
    assert res.message == f'Container image "{PRIVATE}" already present on machine'
    assert res.credential_lookups == 0
    assert not (tmp_path / "image_manager").exists()


def test_invalid_image_name(tmp_path: Path) -> None:
    node = Node(tmp_path)
    res = node.run("Registry.Example.com/UPPER:1", "IfNotPresent")
    assert res.error == "InvalidImageName"
    assert res.events[0].reason == "InspectFailed"
    assert res.events[0].message.startswith(
        'Failed to apply default image tag "Registry.Example.com/UPPER:1": couldn\'t parse'
    )
    assert labels(res) == ("ifnotpresent", "unknown", "unknown")


def test_inspect_error(tmp_path: Path) -> None:
    node = Node(tmp_path)

    def boom(image: str) -> str | None:
        raise RuntimeError("runtime down")

    node.runtime.image_ref = boom  # type: ignore[method-assign]
    res = node.run(PRIVATE, "IfNotPresent")
    assert res.error == "ImageInspectError"
    assert res.events[0].message == 'Failed to inspect image "": runtime down'
    assert labels(res) == ("ifnotpresent", "unknown", "unknown")


def test_manager_error_from_credential_lookup(tmp_path: Path) -> None:
    class Failing:
        def resolve(self, image: str, pull_secrets: Any = (), pod: Any = None) -> Any:
            raise CredentialLookupError("plugin failed")

    node = Node(tmp_path)
    node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a")
    node.ensure.credentials = Failing()
    res = node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a")
    assert (res.decision, res.error, res.events) == ("error", "plugin failed", [])
    assert labels(res) == ("ifnotpresent", "true", "unknown")


# -- credentials --------------------------------------------------------------------------------


def test_credentials_tried_in_order_first_success_recorded(tmp_path: Path) -> None:
    node = Node(tmp_path)
    res = node.run(PRIVATE, "IfNotPresent", [BAD, GOOD], ns="ns-a")
    assert [(a.credential, a.error is None) for a in res.attempts] == [
        ("secret:ns-a/bad", False),
        ("secret:ns-a/good", True),
    ]
    good_hash = hash_auth_config("alice", CANARY)
    assert res.recorded is not None and res.recorded_ref == PRIVATE_ID
    assert [(s.name, s.credential_hash) for s in res.recorded.secrets] == [("good", good_hash)]
    record = node.store().get_image_pulled_record(PRIVATE_ID)
    assert record is not None
    creds = record.credential_mapping["registry.example.com/private/foo"]
    assert [(s.uid, s.namespace, s.name) for s in creds.secrets] == [
        ("uid-ns-a-good", "ns-a", "good")
    ]
    # The first success stops the loop: a later credential is never tried.
    node.runtime.remove_image(PRIVATE)
    res = node.run(PRIVATE, "IfNotPresent", [GOOD, BAD], ns="ns-a")
    assert [a.credential for a in res.attempts] == ["secret:ns-a/good"]
    assert CANARY not in repr(res)


def test_anonymous_pull_is_node_wide(tmp_path: Path) -> None:
    node = Node(tmp_path)
    res = node.run(PUBLIC, "IfNotPresent")
    assert [a.credential for a in res.attempts] == ["anonymous"]
    assert res.recorded is not None and res.recorded.node_pods_accessible
    assert node.run(PUBLIC, "Never", ns="other").decision == "present"


def test_node_wide_credentials_are_node_wide_and_not_pod_credentials(tmp_path: Path) -> None:
    node_keyring = DockerKeyring()
    node_keyring.add({"registry.example.com": {"username": "node", "password": "node-pw"}})
    node = Node(tmp_path, default=node_keyring)
    res = node.run(PRIVATE, "IfNotPresent", [BAD], ns="ns-a")
    assert [a.credential for a in res.attempts] == ["secret:ns-a/bad", "node"]
    assert res.recorded is not None and res.recorded.node_pods_accessible
    creds = default_chain(node_keyring=node_keyring).resolve(PRIVATE, [BAD], PodInfo()).credentials
    secrets, sa = pod_credentials(creds)
    assert [s.name for s in secrets] == ["bad"] and sa is None


def test_service_account_credentials(tmp_path: Path) -> None:
    sa_keyring = DockerKeyring()
    coords = ServiceAccountCoordinates("sa-uid", "ns-a", "builder")
    sa_keyring.add(
        {"registry.example.com": {"username": "sa-robot", "password": "sa-pw"}},
        source=CredentialOrigin(service_account=coords),
        provider="sa-plugin",
    )
    node = Node(tmp_path, default=sa_keyring)
    res = node.run(PRIVATE, "IfNotPresent", ns="ns-a")
    assert [a.credential for a in res.attempts] == ["serviceaccount:ns-a/builder"]
    assert res.recorded is not None
    assert [(s.uid, s.name) for s in res.recorded.service_accounts] == [("sa-uid", "builder")]
    again = node.run(PRIVATE, "Never", ns="ns-a")
    assert again.decision == "present"
    creds = sa_keyring.lookup("registry.example.com/private/foo")
    assert pod_credentials(creds)[1] is not None
    assert tracked_to_image_pull_credentials(None).node_pods_accessible


# -- laziness, intents ----------------------------------------------------------------------------


class CountingLookup(CredentialChain):
    calls = 0

    def __init__(self) -> None:
        super().__init__([PullSecrets()])

    def resolve(self, image: str, pull_secrets: Any = (), pod: Any = None) -> ImageResolution:
        self.calls += 1
        return super().resolve(image, pull_secrets, pod)


def test_lookup_is_lazy_and_at_most_once(tmp_path: Path) -> None:
    lookup = CountingLookup()
    node = Node(tmp_path, credentials=lookup)
    # A preloaded image needs no check: no lookup at all (PR #133079).
    assert node.run(PRELOADED, "IfNotPresent").credential_lookups == 0
    assert lookup.calls == 0
    assert node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a").credential_lookups == 1
    # Present, record with secrets, pod's secret does not match: the check and then the
    # pull use the one lookup.
    res = node.run(PRIVATE, "IfNotPresent", [BAD], ns="ns-a")
    assert res.decision == "failed" and res.credential_lookups == 1
    assert lookup.calls == 2
    assert node.run(PRIVATE, "Always", [GOOD]).credential_lookups == 1


def test_intent_written_before_pull_and_released(tmp_path: Path) -> None:
    node = Node(tmp_path)
    seen: list[bool] = []
    pull = node.runtime.pull_image

    def spying_pull(image: str, auth: Any) -> str:
        seen.append(node.store().image_pull_intent_exists(PRIVATE))
        return pull(image, auth)

    node.runtime.pull_image = spying_pull  # type: ignore[method-assign]
    node.run(PRIVATE, "IfNotPresent", [BAD], ns="ns-a")  # fails
    node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a")  # succeeds
    assert seen == [True, True]
    intents, errors = node.store().list_image_pull_intents()
    assert intents == [] and errors == []


def test_intent_failure_aborts_pull(tmp_path: Path) -> None:
    node = Node(tmp_path)
    assert node.manager is not None

    def fail(image: str) -> None:
        raise PullIntentError("failed to record image pull intent: disk full")

    node.manager.record_pull_intent = fail  # type: ignore[method-assign]
    res = node.run(PRIVATE, "IfNotPresent", [GOOD])
    assert res.attempts == [] and node.runtime.pulls == []
    assert res.message == (
        f'Failed to record image pull intent for container image "{PRIVATE}": '
        "failed to record image pull intent: disk full"
    )


def test_registry_unavailable(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.registry.available = False
    res = node.run(PRIVATE, "IfNotPresent", [GOOD])
    assert res.error == "RegistryUnavailable"
    assert res.message.startswith(
        f"image pull failed for {PRIVATE} because the registry is unavailable: "
    )


# -- beyond upstream: imageRef mismatch ---------------------------------------------------------


def test_cri_o_mismatch_bypass_and_detection(tmp_path: Path) -> None:
    # Upstream behaviour: recorded under the pull's ref, never found by the check, so the
    # image looks preloaded and a pod without credentials gets it (kubernetes#137024).
    node = Node(tmp_path / "a", mismatch=True)
    res = node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a")
    served = node.registry.resolve(PRIVATE)
    assert served is not None
    assert res.recorded_ref == f"registry.example.com/private/foo@{served.digest}"
    assert node.run(PRIVATE, "Never", ns="ns-b").decision == "present"

    node = Node(tmp_path / "b", mismatch=True, verify_ref=True)
    res = node.run(PRIVATE, "IfNotPresent", [GOOD], ns="ns-a")
    assert res.recorded_ref == PRIVATE_ID
    assert [e.reason for e in res.events] == ["Pulling", "Pulled", "ImageRefMismatch"]
    assert res.events[-1].type == "Warning"
    assert node.run(PRIVATE, "Never", ns="ns-b").decision == "never-pull"


# -- helpers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "policy", "spec"),
    [
        ("nginx", "Always", "nginx:latest"),
        ("nginx:latest", "Always", "nginx:latest"),
        ("nginx:1.27", "IfNotPresent", "nginx:1.27"),
        ("localhost:5000/app", "Always", "localhost:5000/app:latest"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent", "nginx@sha256:" + "a" * 64),
    ],
)
def test_defaults(image: str, policy: str, spec: str) -> None:
    assert default_pull_policy(image) == policy
    assert apply_default_image_tag(image) == spec


def test_aggregate() -> None:
    assert _aggregate(["a"]) == "a"
    assert _aggregate(["a", "a"]) == "a"
    assert _aggregate(["a", "b", "a"]) == "[a, b]"


def test_unknown_pull_policy(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="imagePullPolicy"):
        Node(tmp_path).run(PRIVATE, "Sometimes")
