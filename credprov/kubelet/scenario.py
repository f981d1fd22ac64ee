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
from typing import TYPE_CHECKING, Any

from credprov.kubelet import KubeletError

if TYPE_CHECKING:
    from credprov.kubelet import _scenario_models as models


class ScenarioError(KubeletError):
    """An invalid scenario: one line, naming the field."""


@dataclass
class SecretSpec:
    """A docker-config Secret (or a service account's plugin credentials) of the scenario."""

    namespace: str
    name: str
    uid: str
    auths: dict[str, Any]

    def to_object(self) -> dict[str, Any]:
        """The Secret as a Kubernetes object (``stringData`` holding ``.dockerconfigjson``)."""
        from credprov.imageauth.keyring import (
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
    """An image on the node or in the fake registry: ID, names, digest and size."""

    id: str
    names: list[str]
    digest: str | None
    size: int


@dataclass
class Step:
    """One step: its 1-based index, action and value (a :class:`PodStep` for ``pod``, an
    :class:`ImageSpec` for ``addImage``, ``((namespace, name), auths)`` for
    ``rotateSecret``, the given value otherwise), name and expected decision."""

    index: int
    action: str
    value: Any
    name: str = ""
    expect: str | None = None


@dataclass
class Scenario:
    """A validated scenario: the node's settings, the cluster's objects, the registry and the
    steps (``root`` is always None: the command line chooses where records go)."""

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


@dataclass
class PodStep:
    """A pod step: the pod, the image it asks for, its pull policy ("" to default it) and
    its pull secrets."""

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


def _default_uid(kind: str, namespace: str, name: str) -> str:
    # Deterministic, so that the same name in two steps is the same object.
    return f"{kind}-" + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:12]


def load_scenario(path: str) -> Scenario:
    """Read ``path`` (YAML or JSON, bounded) and validate it strictly as a scenario.

    Returns:
        The scenario, its verification policy defaulted as the kubelet defaults it.

    Raises:
        ScenarioError: unreadable, not YAML, or invalid: one line naming the first offending
            field (``scenario PATH: steps[2].pod.image: must be a string, not int``).
    """
    from credprov._go.json import YAMLError, load_yaml_all
    from credprov.base.fileio import read_bounded
    from credprov.kubelet import _scenario_models as models
    from credprov.pullmanager.policies import default_policy

    try:
        docs = load_yaml_all(read_bounded(path))
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror or exc}") from None
    except YAMLError as exc:
        raise ScenarioError(f"scenario {path} is {exc}") from None
    try:
        m = models.validate(docs[0] if docs else None)
    except models.ScenarioSchemaError as exc:
        raise ScenarioError(f"scenario {path}: {exc}") from None
    registry = m.registry
    scenario = Scenario(
        path=path,
        policy=default_policy(m.policy, m.feature_gate),
        allowlist=m.allowlist,
        feature_gate=m.feature_gate,
        root=None,
        verify_image_ref=m.verify_image_ref,
        track_preloaded=m.track_preloaded_images,
        cri_image_ref_mismatch=m.cri_image_ref_mismatch,
        images=[_image_spec(i) for i in m.images],
        node_auths=m.node_docker_config.auths if m.node_docker_config is not None else {},
        secrets=_secret_specs(m.secrets, "secret"),
        service_accounts=_secret_specs(m.service_accounts, "sa"),
        registry_images=[
            ImageSpec(i.id or "", [i.name], i.digest, i.size) for i in registry.images
        ],
        anonymous=registry.anonymous,
        users=[_user(u) for u in registry.users],
    )
    scenario.steps = [_step(i + 1, s) for i, s in enumerate(m.steps)]
    return scenario


def _image_spec(image: models.Image) -> ImageSpec:
    return ImageSpec(image.id, list(image.names), image.digest, image.size)


def _secret_specs(items: Sequence[models.Secret], kind: str) -> dict[tuple[str, str], SecretSpec]:
    return {
        (s.namespace, s.name): SecretSpec(
            s.namespace, s.name, s.uid or _default_uid(kind, s.namespace, s.name), s.auths
        )
        for s in items
    }


def _user(user: models.RegistryUser) -> dict[str, Any]:
    if user.credential_hash is not None:
        return {"credentialHash": user.credential_hash, "repos": user.repos}
    return {"username": user.username, "password": user.password, "repos": user.repos}


def _step(index: int, step: models.Step) -> Step:
    action, value = step.action()
    if action == "pod":
        value = _pod_step(value)
    elif action == "addImage":
        value = _image_spec(value)
    elif action == "rotateSecret":
        value = ((value.namespace, value.name), value.auths)
    return Step(index, action, value, step.name, step.expect)


def _pod_step(pod: models.PodStep) -> PodStep:
    secrets: list[tuple[str, str] | SecretSpec] = [
        (pod.namespace, ref)
        if isinstance(ref, str)
        else SecretSpec(
            pod.namespace,
            ref.name,
            ref.uid or _default_uid("secret", pod.namespace, ref.name),
            ref.auths,
        )
        for ref in pod.image_pull_secrets
    ]
    volume = pod.image_volume
    return PodStep(
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.uid or _default_uid("pod", pod.namespace, pod.name),
        service_account=pod.service_account,
        image=pod.image if volume is None else volume.reference,
        pull_policy=pod.image_pull_policy if volume is None else volume.pull_policy,
        secrets=secrets,
        image_volume="" if volume is None else volume.name,
    )
