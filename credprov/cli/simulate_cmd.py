"""``credprov simulate SCENARIO.yaml``: replay pods asking a node for images, KEP-2535 on.

Mirrors the kubelet's ``EnsureImageExists`` with the ``KubeletEnsureSecretPulledImages``
pull manager (:mod:`credprov.pullmanager.ensure`, :mod:`credprov.pullmanager.manager`): each
pod step prints what the kubelet would decide (pulled / used the present image /
``ErrImageNeverPull`` / pull failed), its events and the
``kubelet_image_manager_ensure_image_requests_total`` labels. The node is a fake runtime and
registry (:mod:`credprov.pullmanager.runtime`); the records are real files in the scenario's
``root`` (a temporary directory by default), so ``credprov pull-records`` can inspect them.
The scenario format is documented in ``docs/simulate.md``. Passwords are never printed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from credprov.cli._kubelet_node import (
    KubeletNode,
    ensure_result_to_dict,
    record_credential_kinds,
)
from credprov.cli.main import CLIError, add_common

_STEP_ACTIONS = (
    "pod",
    "restart",
    "removeImage",
    "addImage",
    "rotateSecret",
    "pruneRecords",
    "registryAvailable",
)
_DECISIONS = ("pulled", "present", "never-pull", "failed", "error")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="replay a scenario of pods asking a node for images (KEP-2535 pull records)",
        description=(
            "Replay SCENARIO (YAML): a node with a verification policy, images already "
            "present, a fake registry with access rules, and steps (pods requesting images, "
            "kubelet restarts, image removals, secret rotations). For every pod step print "
            "the kubelet's decision, events and metric labels. Exit 1 when the scenario is "
            "invalid or a step's 'expect' is not met. See docs/simulate.md."
        ),
    )
    p.add_argument("scenario", metavar="SCENARIO.yaml")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument(
        "--root",
        metavar="DIR",
        help="kubelet root for the records (default: a new temporary directory, removed "
        "afterwards); the path used is printed",
    )
    add_common(p)
    p.set_defaults(run=run)


# -- scenario model and validation ------------------------------------------------------------


class ScenarioError(CLIError):
    """An invalid scenario: one line, naming the field."""


@dataclass
class SecretSpec:
    namespace: str
    name: str
    uid: str
    auths: dict[str, Any]

    def to_object(self) -> dict[str, Any]:
        from credprov.keyring import DOCKER_CONFIG_JSON_KEY, DOCKER_CONFIG_JSON_TYPE

        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": DOCKER_CONFIG_JSON_TYPE,
            "metadata": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
            "stringData": {DOCKER_CONFIG_JSON_KEY: json.dumps({"auths": self.auths})},
        }


@dataclass
class ImageSpec:
    id: str
    names: list[str]
    digest: str | None
    size: int


@dataclass
class Step:
    index: int
    action: str
    value: Any
    name: str = ""
    expect: str | None = None


@dataclass
class Scenario:
    path: str
    policy: str
    allowlist: list[str]
    feature_gate: bool
    root: str | None
    verify_image_ref: bool
    track_preloaded: bool
    cri_image_ref_mismatch: bool
    images: list[ImageSpec]
    node_auths: dict[str, Any]
    secrets: dict[tuple[str, str], SecretSpec]
    service_accounts: dict[tuple[str, str], SecretSpec]
    registry_images: list[ImageSpec]
    anonymous: list[str]
    users: list[dict[str, Any]]
    steps: list[Step] = field(default_factory=list)


class _V:
    """Tiny strict validator: every error names its field path."""

    def __init__(self, path: str) -> None:
        self.file = path

    def fail(self, where: str, message: str) -> ScenarioError:
        return ScenarioError(f"scenario {self.file}: {where}: {message}")

    def mapping(
        self, value: Any, where: str, required: Sequence[str] = (), optional: Sequence[str] = ()
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a mapping, not {_type(value)}")
        allowed = set(required) | set(optional)
        for key in value:
            if key not in allowed:
                raise self.fail(
                    where, f"unknown field {key!r} (allowed: {', '.join(sorted(allowed))})"
                )
        for key in required:
            if key not in value:
                raise self.fail(where, f"missing required field {key!r}")
        return value

    def string(self, value: Any, where: str, *, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"must be a string, not {_type(value)}")
        if not empty and not value:
            raise self.fail(where, "must not be empty")
        return value

    def boolean(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"must be true or false, not {_type(value)}")
        return value

    def integer(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(where, "must be a non-negative integer")
        return value

    def seq(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"must be a list, not {_type(value)}")
        return value

    def strings(self, value: Any, where: str) -> list[str]:
        return [self.string(v, f"{where}[{i}]") for i, v in enumerate(self.seq(value, where))]

    def image_name(self, value: Any, where: str) -> str:
        from credprov.images import InvalidImageError, parse_image_name

        name = self.string(value, where)
        try:
            parse_image_name(name)
        except InvalidImageError as exc:
            raise self.fail(where, f"invalid image reference {name!r}: {exc}") from None
        return name

    def auths(self, value: Any, where: str) -> dict[str, Any]:
        from credprov.keyring import KeyringError, tracked_auth_configs

        auths = self.mapping(value, where, optional=list(value) if isinstance(value, dict) else ())
        if not auths:
            raise self.fail(where, "must hold at least one registry entry")
        for key, entry in auths.items():
            self.mapping(
                entry, f"{where}[{key!r}]", optional=("username", "password", "auth", "email")
            )
        try:
            tracked_auth_configs(auths)
        except KeyringError as exc:
            raise self.fail(where, str(exc)) from None
        return auths


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _default_uid(kind: str, namespace: str, name: str) -> str:
    # Deterministic, so that the same name in two steps is the same object.
    import hashlib

    return f"{kind}-" + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:12]


def load_scenario(path: str) -> Scenario:
    """Parse and strictly validate a scenario file.

    Raises:
        ScenarioError: one line naming the offending field.
    """
    from credprov.fileio import read_bounded
    from credprov.gojson import YAMLError, load_yaml_all
    from credprov.pullmanager.ensure import PULL_POLICIES
    from credprov.pullmanager.policies import DEFAULT_POLICY, validate_policy_config

    v = _V(path)
    try:
        docs = load_yaml_all(read_bounded(path))
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror or exc}") from None
    except YAMLError as exc:
        raise ScenarioError(f"scenario {path} is {exc}") from None
    doc = docs[0] if docs else None
    top = v.mapping(
        doc,
        "scenario",
        required=("steps",),
        optional=(
            "description",
            "policy",
            "allowlist",
            "featureGate",
            "root",
            "verifyImageRef",
            "trackPreloadedImages",
            "criImageRefMismatch",
            "images",
            "nodeDockerConfig",
            "secrets",
            "serviceAccounts",
            "registry",
        ),
    )
    gate = v.boolean(top.get("featureGate", True), "featureGate")
    policy = v.string(top.get("policy", ""), "policy", empty=True)
    allowlist = v.strings(top.get("allowlist", []), "allowlist")
    if gate and not policy:
        policy = DEFAULT_POLICY
    problems = validate_policy_config(policy, allowlist, gate)
    if problems:
        raise v.fail("policy", problems[0])
    if "root" in top:
        raise ScenarioError(
            f"scenario {path}: root: a scenario cannot choose where records are written; "
            "give --root DIR on the command line"
        )
    root = None

    def image_spec(value: Any, where: str, *, names_key: str) -> ImageSpec:
        if names_key == "names":
            m = v.mapping(value, where, required=("id", "names"), optional=("digest", "size"))
            raw = v.seq(m["names"], f"{where}.names")
            names = [v.image_name(n, f"{where}.names[{i}]") for i, n in enumerate(raw)]
            image_id = v.string(m["id"], f"{where}.id")
        else:
            m = v.mapping(value, where, required=("name",), optional=("id", "digest", "size"))
            names = [v.image_name(m["name"], f"{where}.name")]
            image_id = v.string(m["id"], f"{where}.id") if "id" in m else ""
        digest = v.string(m["digest"], f"{where}.digest") if "digest" in m else None
        if digest is not None and not digest.startswith("sha256:"):
            raise v.fail(f"{where}.digest", "must look like sha256:<hex>")
        return ImageSpec(image_id, names, digest, v.integer(m.get("size", 0), f"{where}.size"))

    images = [
        image_spec(item, f"images[{i}]", names_key="names")
        for i, item in enumerate(v.seq(top.get("images", []), "images"))
    ]

    node_auths: dict[str, Any] = {}
    if "nodeDockerConfig" in top:
        ndc = v.mapping(top["nodeDockerConfig"], "nodeDockerConfig", required=("auths",))
        node_auths = v.auths(ndc["auths"], "nodeDockerConfig.auths")

    def object_specs(key: str, kind: str) -> dict[tuple[str, str], SecretSpec]:
        out: dict[tuple[str, str], SecretSpec] = {}
        for i, item in enumerate(v.seq(top.get(key, []), key)):
            where = f"{key}[{i}]"
            m = v.mapping(item, where, required=("namespace", "name", "auths"), optional=("uid",))
            ns = v.string(m["namespace"], f"{where}.namespace")
            name = v.string(m["name"], f"{where}.name")
            uid = v.string(m["uid"], f"{where}.uid") if "uid" in m else _default_uid(kind, ns, name)
            if (ns, name) in out:
                raise v.fail(where, f"duplicate {ns}/{name}")
            out[(ns, name)] = SecretSpec(ns, name, uid, v.auths(m["auths"], f"{where}.auths"))
        return out

    secrets = object_specs("secrets", "secret")
    service_accounts = object_specs("serviceAccounts", "sa")

    reg = v.mapping(top.get("registry", {}), "registry", optional=("images", "anonymous", "users"))
    registry_images = [
        image_spec(item, f"registry.images[{i}]", names_key="name")
        for i, item in enumerate(v.seq(reg.get("images", []), "registry.images"))
    ]
    anonymous = v.strings(reg.get("anonymous", []), "registry.anonymous")
    users: list[dict[str, Any]] = []
    for i, item in enumerate(v.seq(reg.get("users", []), "registry.users")):
        where = f"registry.users[{i}]"
        m = v.mapping(
            item, where, required=("repos",), optional=("username", "password", "credentialHash")
        )
        repos = v.strings(m["repos"], f"{where}.repos")
        if "credentialHash" in m:
            if "username" in m or "password" in m:
                raise v.fail(where, "give either credentialHash or username/password, not both")
            users.append({"credentialHash": v.string(m["credentialHash"], where), "repos": repos})
        else:
            if "username" not in m or "password" not in m:
                raise v.fail(where, "needs username and password (or credentialHash)")
            users.append(
                {
                    "username": v.string(m["username"], f"{where}.username"),
                    "password": v.string(m["password"], f"{where}.password", empty=True),
                    "repos": repos,
                }
            )

    scenario = Scenario(
        path=path,
        policy=policy,
        allowlist=allowlist,
        feature_gate=gate,
        root=root,
        verify_image_ref=v.boolean(top.get("verifyImageRef", False), "verifyImageRef"),
        track_preloaded=v.boolean(top.get("trackPreloadedImages", False), "trackPreloadedImages"),
        cri_image_ref_mismatch=v.boolean(
            top.get("criImageRefMismatch", False), "criImageRefMismatch"
        ),
        images=images,
        node_auths=node_auths,
        secrets=secrets,
        service_accounts=service_accounts,
        registry_images=registry_images,
        anonymous=anonymous,
        users=users,
    )

    steps = v.seq(top["steps"], "steps")
    if not steps:
        raise v.fail("steps", "must hold at least one step")
    for i, item in enumerate(steps):
        where = f"steps[{i}]"
        m = v.mapping(item, where, optional=(*_STEP_ACTIONS, "name", "expect"))
        actions = [a for a in _STEP_ACTIONS if a in m]
        if len(actions) != 1:
            raise v.fail(where, f"needs exactly one of {', '.join(_STEP_ACTIONS)}")
        action = actions[0]
        value = m[action]
        expect = None
        if "expect" in m:
            if action != "pod":
                raise v.fail(f"{where}.expect", "only pod steps have an expected decision")
            expect = v.string(m["expect"], f"{where}.expect")
            if expect not in _DECISIONS:
                raise v.fail(f"{where}.expect", f"must be one of {', '.join(_DECISIONS)}")
        aw = f"{where}.{action}"
        if action == "pod":
            value = _pod_step(v, value, aw, scenario, PULL_POLICIES)
        elif action in ("restart", "pruneRecords"):
            if value is not True:
                raise v.fail(aw, "must be true")
        elif action == "removeImage":
            value = v.string(value, aw)
        elif action == "addImage":
            value = image_spec(value, aw, names_key="names")
        elif action == "rotateSecret":
            r = v.mapping(value, aw, required=("namespace", "name", "auths"))
            key = (v.string(r["namespace"], f"{aw}.namespace"), v.string(r["name"], f"{aw}.name"))
            if key not in secrets:
                raise v.fail(aw, f"no secret {key[0]}/{key[1]} in 'secrets'")
            value = (key, v.auths(r["auths"], f"{aw}.auths"))
        elif action == "registryAvailable":
            value = v.boolean(value, aw)
        name = v.string(m["name"], f"{where}.name") if "name" in m else ""
        scenario.steps.append(Step(i + 1, action, value, name, expect))
    return scenario


@dataclass
class PodStep:
    namespace: str
    name: str
    uid: str
    service_account: str
    image: str
    pull_policy: str
    #: A key into Scenario.secrets (read when the step runs, so rotations apply) or an
    #: inline secret (its content as of this step).
    secrets: list[tuple[str, str] | SecretSpec]


def _pod_step(
    v: _V, value: Any, where: str, scenario: Scenario, policies: Sequence[str]
) -> PodStep:
    m = v.mapping(
        value,
        where,
        required=("namespace", "name", "image"),
        optional=("uid", "serviceAccount", "imagePullPolicy", "imagePullSecrets"),
    )
    ns = v.string(m["namespace"], f"{where}.namespace")
    name = v.string(m["name"], f"{where}.name")
    image = v.string(m["image"], f"{where}.image")  # invalid names are a kubelet outcome
    policy = ""
    if "imagePullPolicy" in m:
        policy = v.string(m["imagePullPolicy"], f"{where}.imagePullPolicy")
        if policy not in policies:
            raise v.fail(f"{where}.imagePullPolicy", f"must be one of {', '.join(policies)}")
    secrets: list[tuple[str, str] | SecretSpec] = []
    for j, ref in enumerate(v.seq(m.get("imagePullSecrets", []), f"{where}.imagePullSecrets")):
        sw = f"{where}.imagePullSecrets[{j}]"
        if isinstance(ref, str):
            if (ns, ref) not in scenario.secrets:
                raise v.fail(sw, f"no secret {ns}/{ref} in 'secrets'")
            secrets.append((ns, ref))
            continue
        s = v.mapping(ref, sw, required=("name", "auths"), optional=("uid",))
        sname = v.string(s["name"], f"{sw}.name")
        uid = v.string(s["uid"], f"{sw}.uid") if "uid" in s else _default_uid("secret", ns, sname)
        secrets.append(SecretSpec(ns, sname, uid, v.auths(s["auths"], f"{sw}.auths")))
    sa = v.string(m.get("serviceAccount", "default"), f"{where}.serviceAccount")
    uid = v.string(m["uid"], f"{where}.uid") if "uid" in m else _default_uid("pod", ns, name)
    return PodStep(ns, name, uid, sa, image, policy, secrets)


# -- running ----------------------------------------------------------------------------------


class _ScenarioCredentials:
    """Pod pull secrets, then the node's docker config, then a KEP-4412-style plugin that
    hands out per-service-account credentials (the kubelet's keyring order)."""

    def __init__(self, node: Any, service_accounts: Mapping[tuple[str, str], Any]) -> None:
        self.node = node
        self.service_accounts = service_accounts

    def lookup(self, image: str, pull_secrets: Sequence[Mapping[str, Any]], pod: Any) -> list[Any]:
        from credprov.pullmanager.ensure import KeyringCredentials

        creds = KeyringCredentials(self.node).lookup(image, pull_secrets, pod)
        sa = self.service_accounts.get((pod.namespace, pod.service_account_name))
        if sa is not None:
            from credprov.images import parse_image_name

            creds += sa.lookup(parse_image_name(image))
        return creds


class Simulation:
    """A node built from a scenario: runtime, registry, manager, image manager."""

    def __init__(self, scenario: Scenario, root: str) -> None:
        from credprov.keyring import (
            CredentialSource,
            DockerKeyring,
            ServiceAccountCoordinates,
        )
        from credprov.pullmanager.metrics import PullManagerMetrics
        from credprov.pullmanager.runtime import FakeRegistry, FakeRuntime, RegistryGrant

        self.scenario = scenario
        self.root = root
        self.metrics = PullManagerMetrics()
        grants = [
            RegistryGrant(
                repos=tuple(u["repos"]),
                username=u.get("username"),
                password=u.get("password"),
                credential_hash=u.get("credentialHash"),
            )
            for u in scenario.users
        ]
        self.registry = FakeRegistry(anonymous=scenario.anonymous, grants=grants)
        for ri in scenario.registry_images:
            self.registry.add_image(ri.names[0], ri.id or None, ri.digest, ri.size)
        self.runtime = FakeRuntime(self.registry, pull_ref_mismatch=scenario.cri_image_ref_mismatch)
        for img in scenario.images:
            self.runtime.add_image(img.id, img.names, img.digest, img.size)
        node = DockerKeyring()
        if scenario.node_auths:
            node.add(scenario.node_auths)
        sa_keyrings = {}
        for key, sa in scenario.service_accounts.items():
            keyring = DockerKeyring()
            source = CredentialSource(
                service_account=ServiceAccountCoordinates(sa.uid, sa.namespace, sa.name)
            )
            keyring.add(sa.auths, source=source, provider="service-account-plugin")
            sa_keyrings[key] = keyring
        self.credentials = _ScenarioCredentials(node, sa_keyrings)
        # A kubelet start: the pull manager's housekeeping runs against the runtime.
        self.node = KubeletNode(
            self.runtime,
            self.root,
            scenario.policy,
            scenario.allowlist,
            credentials=self.credentials,
            metrics=self.metrics,
            feature_gate=scenario.feature_gate,
            verify_image_ref=scenario.verify_image_ref,
            track_preloaded=scenario.track_preloaded,
        )

    @property
    def manager(self) -> Any:
        """The node's ``ImagePullManager`` (None with the feature gate off)."""
        return self.node.manager

    @property
    def ensure(self) -> Any:
        """The node's image manager (:class:`credprov.pullmanager.ensure.EnsureImage`)."""
        return self.node.ensure

    def run_step(self, step: Step) -> dict[str, Any]:
        out: dict[str, Any] = {"step": step.index, "action": step.action}
        if step.name:
            out["name"] = step.name
        if step.action == "pod":
            out.update(self._pod(step.value))
            if step.expect is not None:
                out["expect"] = step.expect
                out["ok"] = out["decision"] == step.expect
        elif step.action == "restart":
            self.node.restart()
            out["detail"] = "kubelet restarted: in-memory state dropped, dangling intents settled"
        elif step.action == "removeImage":
            removed = self.runtime.remove_image(step.value)
            out["detail"] = f"image {step.value} " + ("removed" if removed else "was not present")
        elif step.action == "addImage":
            img = step.value
            self.runtime.add_image(img.id, img.names, img.digest, img.size)
            out["detail"] = f"image {img.id} side-loaded as {', '.join(img.names)}"
        elif step.action == "rotateSecret":
            key, auths = step.value
            self.scenario.secrets[key].auths = auths
            out["detail"] = f"secret {key[0]}/{key[1]} rotated (same uid, new credentials)"
        elif step.action == "pruneRecords":
            out["detail"] = self._prune()
        elif step.action == "registryAvailable":
            self.registry.available = step.value
            out["detail"] = "registry " + ("available" if step.value else "unavailable")
        return out

    def _prune(self) -> str:
        if self.manager is None:
            return "feature gate off: no records to prune"
        # The image GC hook: "until" is taken before listing the runtime's images.
        until = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
        refs = [i.id for i in self.runtime.list_images()]
        self.manager.prune_unknown_records(refs, until)
        return f"records of images the runtime no longer has pruned ({len(refs)} images kept)"

    def _pod(self, pod: PodStep) -> dict[str, Any]:
        from credprov.plugin.provider import PodInfo
        from credprov.pullmanager.ensure import Container

        info = PodInfo(
            namespace=pod.namespace,
            name=pod.name,
            uid=pod.uid,
            service_account_name=pod.service_account,
        )
        secrets = [
            (s if isinstance(s, SecretSpec) else self.scenario.secrets[s]).to_object()
            for s in pod.secrets
        ]
        res = self.ensure.ensure_image_exists(
            info, Container(image=pod.image, image_pull_policy=pod.pull_policy), secrets
        )
        return {"pod": f"{pod.namespace}/{pod.name}", **ensure_result_to_dict(res)}

    def records(self) -> tuple[list[dict[str, Any]], list[str]]:
        from credprov.pullmanager.fsstore import FSPullRecordsAccessor
        from credprov.pullmanager.types import record_to_json

        store = FSPullRecordsAccessor(self.root, migrate=False)
        records, errors = store.list_image_pulled_records()
        return [record_to_json(r) for r in records], errors


@contextlib.contextmanager
def _root(scenario: Scenario, override: str | None) -> Iterator[str]:
    if override is not None:
        yield os.path.abspath(override)
        return
    with tempfile.TemporaryDirectory(prefix="credprov-simulate-") as tmp:
        yield tmp


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    with _root(scenario, args.root) as root:
        try:
            sim = Simulation(scenario, root)
        except (ValueError, OSError) as exc:
            raise CLIError(f"scenario {scenario.path}: {exc}") from None
        results = [sim.run_step(step) for step in scenario.steps]
        records, record_errors = sim.records() if scenario.feature_gate else ([], [])
    failed = [r for r in results if r.get("ok") is False]
    if args.output == "json":
        from credprov.cli._output import print_json

        print_json(
            {
                "scenario": scenario.path,
                "root": root,
                "rootTemporary": args.root is None,
                "policy": scenario.policy if scenario.feature_gate else None,
                "featureGate": scenario.feature_gate,
                "steps": results,
                "records": records,
                "recordErrors": record_errors,
                "ok": not failed,
            }
        )
    else:
        _print_text(scenario, results, records)
        where = " (a temporary directory, removed afterwards)" if args.root is None else ""
        print(f"records were written under {root}{where}")
    if failed:
        import sys

        for r in failed:
            print(
                f"credprov: step {r['step']}: expected {r['expect']}, got {r['decision']}",
                file=sys.stderr,
            )
        return 1
    return 0


def _print_text(
    scenario: Scenario, results: list[dict[str, Any]], records: list[dict[str, Any]]
) -> None:
    gate = f"policy {scenario.policy}" if scenario.feature_gate else "feature gate off"
    print(f"scenario {scenario.path} ({gate})")
    for r in results:
        if r.get("name"):
            print(f"[{r['step']}] {r['name']}")
            indent = "    "
        else:
            indent = f"[{r['step']}] "
        if r["action"] != "pod":
            print(f"{indent}{r['action']}: {r['detail']}")
            continue
        print(f"{indent}pod {r['pod']} image {r['image']} ({r['imagePullPolicy']})")
        outcome = {
            "pulled": "pulled",
            "present": "used the image already present",
            "never-pull": "refused: ErrImageNeverPull",
            "failed": f"pull failed: {r['error']}",
            "error": f"error: {r['error']}",
        }[r["decision"]]
        check = ""
        if "ok" in r:
            check = "  [as expected]" if r["ok"] else f"  [EXPECTED {r['expect']}]"
        print(f"    decision: {outcome}{check}")
        for e in r["events"]:
            print(f"    event: {e['type']} {e['reason']}: {e['message']}")
        if r["decision"] == "error" and not r["events"]:
            print(f"    message: {r['message']}")
        for a in r["attempts"]:
            status = "ok" if a["error"] is None else "denied"
            print(f"    tried: {a['credential']} -> {status}")
        if r["recorded"] is not None:
            creds = json.dumps(r["recorded"]["credentials"], separators=(",", ":"))
            print(f"    recorded: {r['recorded']['imageRef']} {creds}")
        labels = " ".join(f"{k}={v}" for k, v in r["metricLabels"].items())
        print(f"    metric: {labels}")
    if scenario.feature_gate:
        print(f"records at the end: {len(records)}")
        for rec in records:
            print(f"  {rec['imageRef']}: {record_credential_kinds(rec, ', ')}")
