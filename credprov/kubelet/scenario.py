"""The ``credprov simulate`` scenario: its model and its strict validation.

A scenario (``docs/simulate.md``) is a policy, a fake registry (images and the users that
may pull them), Secrets and service accounts, and steps: pods asking for images, kubelet
restarts, image removals, secret rotations, record pruning. :func:`load_scenario` reads one
file (bounded, YAML or JSON) and checks every field, so that a :class:`ScenarioError` (one
line naming the field, e.g. ``steps[2].pod.image: required``) is the only way a bad scenario
fails; :mod:`credprov.kubelet.simulation` runs it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from credprov.kubelet import KubeletError

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


class ScenarioError(KubeletError):
    """An invalid scenario: one line, naming the field."""


@dataclass
class SecretSpec:
    namespace: str
    name: str
    uid: str
    auths: dict[str, Any]

    def to_object(self) -> dict[str, Any]:
        from credprov.credentialprovider.keyring import (
            DOCKER_CONFIG_JSON_KEY,
            DOCKER_CONFIG_JSON_TYPE,
        )

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
        from credprov.credentialprovider.images import InvalidImageError, parse_image_name

        name = self.string(value, where)
        try:
            parse_image_name(name)
        except InvalidImageError as exc:
            raise self.fail(where, f"invalid image reference {name!r}: {exc}") from None
        return name

    def auths(self, value: Any, where: str) -> dict[str, Any]:
        from credprov.credentialprovider.keyring import KeyringError, tracked_auth_configs

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

    return f"{kind}-" + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:12]


def load_scenario(path: str) -> Scenario:
    """Parse and strictly validate a scenario file.

    Raises:
        ScenarioError: one line naming the offending field.

    (Over 80 lines on purpose: it checks every field in document order, so each error names the
    first bad field.)
    """
    from credprov._go.json import YAMLError, load_yaml_all
    from credprov.base.fileio import read_bounded
    from credprov.kubelet.ensure import PULL_POLICIES
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
            "give --root-dir DIR on the command line"
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
    #: The image volume (``spec.volumes[].image``) the image is for; "" for a container.
    image_volume: str = ""


def _pod_step(
    v: _V, value: Any, where: str, scenario: Scenario, policies: Sequence[str]
) -> PodStep:
    m = v.mapping(
        value,
        where,
        required=("namespace", "name"),
        optional=(
            "image",
            "imageVolume",
            "uid",
            "serviceAccount",
            "imagePullPolicy",
            "imagePullSecrets",
        ),
    )
    ns = v.string(m["namespace"], f"{where}.namespace")
    name = v.string(m["name"], f"{where}.name")
    if ("image" in m) == ("imageVolume" in m):
        raise v.fail(where, "needs exactly one of image, imageVolume")
    policy = ""
    volume = ""
    if "imageVolume" in m:
        # An image volume is pulled with the pod's credentials like a container image.
        vw = f"{where}.imageVolume"
        iv = v.mapping(
            m["imageVolume"], vw, required=("name", "reference"), optional=("pullPolicy",)
        )
        if "imagePullPolicy" in m:
            raise v.fail(
                f"{where}.imagePullPolicy", "use imageVolume.pullPolicy for an image volume"
            )
        volume = v.string(iv["name"], f"{vw}.name")
        image = v.string(iv["reference"], f"{vw}.reference")  # invalid names: a kubelet outcome
        if "pullPolicy" in iv:
            policy = v.string(iv["pullPolicy"], f"{vw}.pullPolicy")
            if policy not in policies:
                raise v.fail(f"{vw}.pullPolicy", f"must be one of {', '.join(policies)}")
    else:
        image = v.string(m["image"], f"{where}.image")  # invalid names are a kubelet outcome
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
    return PodStep(ns, name, uid, sa, image, policy, secrets, volume)
