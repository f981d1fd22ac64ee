"""Reading a pod spec (``kubectl get pod -o yaml`` style) and picking its pull secrets.

Only the fields the kubelet's image path reads are looked at: the pod's namespace, name,
uid and service account, ``spec.imagePullSecrets``, ``name``/``image``/``imagePullPolicy``
of every init, regular and ephemeral container, and ``name``/``image.reference``/
``image.pullPolicy`` of every image volume (``spec.volumes[].image``, GA in 1.36: the
kubelet pulls them with the pod's credentials exactly like container images, before it
starts any container). Everything else (``status``, probes, other volumes...) is ignored,
so a pod fetched from a cluster works as is.

Defaults are the API server's (``SetDefaults_Pod``/``SetDefaults_Container``/
``SetDefaults_ImageVolumeSource``): namespace ``default``, service account ``default``,
and an empty pull policy is ``Always`` for an image tagged ``:latest`` or not tagged at all,
``IfNotPresent`` otherwise. What the API server's validation would reject (no containers, a
container without a name or image, an image volume without a name or reference, an unknown
pull policy) is a :class:`PodSpecError`, one line naming the field in the API's words
(``spec.containers[0].image: Required value``).

Pull secrets are looked up as ``getPullSecretsForPod`` does: by name in the pod's own
namespace; entries with an empty name are skipped, and names that cannot be found are
returned so the caller can log the kubelet's "Unable to retrieve pull secret" line
(:func:`missing_secret_warning`) and, when a pull then fails (Kubernetes 1.37+), record its
``FailedToRetrieveImagePullSecret`` event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from credprov._go.decode import DecodeError
from credprov._go.fmt import go_quote
from credprov.api.objects import decode_object
from credprov.kubelet import KubeletError

__all__ = [
    "CONTAINER_KINDS",
    "IMAGE_VOLUME",
    "PodContainer",
    "PodSpec",
    "PodSpecError",
    "load_pod",
    "missing_secret_warning",
    "parse_pod",
    "pod_images",
    "select_pull_secrets",
]

#: (spec field, kind label) of containers in the order the kubelet starts them.
CONTAINER_KINDS = (
    ("initContainers", "initContainer"),
    ("containers", "container"),
    ("ephemeralContainers", "ephemeralContainer"),
)
#: The kind label of an image volume (``spec.volumes[].image``).
IMAGE_VOLUME = "imageVolume"


def pod_images(spec: Mapping[str, Any]) -> Iterator[tuple[Any, str, Any]]:
    """``(name, image, pull policy as written)`` for every image the kubelet pulls for the
    pod, read leniently (:func:`parse_pod` is the validating reader): image volumes first
    (named ``volume:<name>``; pulled with the pod's credentials before any container), then
    init, regular and ephemeral containers. Entries without a string image are skipped."""
    volumes = spec.get("volumes")
    for volume in volumes if isinstance(volumes, list) else ():
        source = volume.get("image") if isinstance(volume, Mapping) else None
        if isinstance(source, Mapping) and isinstance(source.get("reference"), str):
            yield f"volume:{volume.get('name', '')}", source["reference"], source.get("pullPolicy")
    for spec_field, _ in CONTAINER_KINDS:
        containers = spec.get(spec_field)
        for container in containers if isinstance(containers, list) else ():
            if isinstance(container, Mapping) and isinstance(container.get("image"), str):
                yield (
                    container.get("name", ""),
                    container["image"],
                    container.get("imagePullPolicy"),
                )


class PodSpecError(KubeletError, ValueError):
    """A pod file the API server would not accept; ``str()`` is one line."""


@dataclass(frozen=True)
class PodContainer:
    """One image the pod needs, with its pull policy defaulted: a container's, or an image
    volume's (``kind`` ``imageVolume``, ``name`` the volume's)."""

    kind: str  # "imageVolume", "initContainer", "container" or "ephemeralContainer"
    name: str
    image: str
    image_pull_policy: str
    field: str  # spec field: "volumes", "initContainers", "containers", "ephemeralContainers"

    @property
    def field_path(self) -> str:
        """The event's ``involvedObject.fieldPath``, e.g. ``spec.containers{app}``; ``""``
        for an image volume, whose pull the kubelet records on the pod itself."""
        if self.kind == IMAGE_VOLUME:
            return ""
        return f"spec.{self.field}{{{self.name}}}"


@dataclass(frozen=True)
class PodSpec:
    """The parts of a Pod the image path reads."""

    namespace: str
    name: str
    uid: str
    service_account_name: str
    image_pull_secrets: tuple[str, ...]
    #: Every image, in the order the kubelet pulls them: image volumes, then init, regular
    #: and ephemeral containers.
    containers: tuple[PodContainer, ...]


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Reader:
    """The API server's field checks on one pod file: errors are ``<where>: <field>:
    <reason>``; an absent (null) object, string or list reads as empty."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, field: str, reason: str) -> PodSpecError:
        return PodSpecError(f"{self.where}: {field}: {reason}")

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(field, f"must be an object, not {_type(value)}")
        return value

    def string(self, value: Any, field: str, *, required: bool = False) -> str:
        if value is None or value == "":
            if required:
                raise self.fail(field, "Required value")
            return ""
        if not isinstance(value, str):
            raise self.fail(field, f"must be a string, not {_type(value)}")
        return value

    def items(self, value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(field, f"must be a list, not {_type(value)}")
        return value

    def pull_policy(self, value: Any, field: str, image: str) -> str:
        """The policy as written, or defaulted for ``image`` as the API server does."""
        from credprov.kubelet.ensure import PULL_POLICIES, default_pull_policy

        policy = self.string(value, field)
        if policy and policy not in PULL_POLICIES:
            supported = ", ".join(go_quote(p) for p in PULL_POLICIES)
            raise self.fail(
                field, f"Unsupported value: {go_quote(policy)}: supported values: {supported}"
            )
        return policy or default_pull_policy(image)

    def unique_name(self, value: Any, field: str, seen: set[str]) -> str:
        name = self.string(value, field, required=True)
        if name in seen:
            raise self.fail(field, f"Duplicate value: {go_quote(name)}")
        seen.add(name)
        return name


def parse_pod(obj: Mapping[str, Any], where: str = "pod") -> PodSpec:
    """Check and default one Pod object (a dict as YAML/JSON decodes it), field by field in
    the API's order: metadata, service account, pull secrets, image volumes, containers.

    Raises:
        PodSpecError: ``<where>: <field>: <reason>``.
    """
    r = _Reader(where)
    kind = obj.get("kind")
    if kind != "Pod":
        what = "no kind" if kind is None else f"kind {go_quote(str(kind))}"
        raise PodSpecError(f"{where}: holds {what}, not a Pod")
    try:
        decode_object(obj)  # a Pod the API server's decoding refuses was never stored
    except DecodeError as exc:
        raise PodSpecError(f"{where}: {exc}") from None
    meta = r.mapping(obj.get("metadata"), "metadata")
    name = r.string(meta.get("name"), "metadata.name", required=True)
    namespace = r.string(meta.get("namespace"), "metadata.namespace") or "default"
    uid = r.string(meta.get("uid"), "metadata.uid")
    spec = r.mapping(obj.get("spec"), "spec")
    service_account = (
        r.string(spec.get("serviceAccountName"), "spec.serviceAccountName")
        or r.string(spec.get("serviceAccount"), "spec.serviceAccount")  # deprecated alias
        or "default"
    )
    secrets = _pull_secrets(r, spec)
    containers = [*_image_volumes(r, spec), *_containers(r, spec)]
    if not any(c.field == "containers" for c in containers):
        raise r.fail("spec.containers", "Required value")
    return PodSpec(
        namespace=namespace,
        name=name,
        uid=uid,
        service_account_name=service_account,
        image_pull_secrets=tuple(secrets),
        containers=tuple(containers),
    )


def _pull_secrets(r: _Reader, spec: Mapping[str, Any]) -> list[str]:
    secrets: list[str] = []
    for i, ref in enumerate(r.items(spec.get("imagePullSecrets"), "spec.imagePullSecrets")):
        field = f"spec.imagePullSecrets[{i}]"
        secret_name = r.string(r.mapping(ref, field).get("name"), f"{field}.name")
        if secret_name:  # the API allowed empty names once; the kubelet skips them
            secrets.append(secret_name)
    return secrets


def _image_volumes(r: _Reader, spec: Mapping[str, Any]) -> list[PodContainer]:
    volumes: list[PodContainer] = []
    names: set[str] = set()
    for i, raw in enumerate(r.items(spec.get("volumes"), "spec.volumes")):
        field = f"spec.volumes[{i}]"
        volume = r.mapping(raw, field)
        if volume.get("image") is None:
            continue  # not an image volume: nothing to pull
        vname = r.unique_name(volume.get("name"), f"{field}.name", names)
        source = r.mapping(volume["image"], f"{field}.image")
        reference = r.string(source.get("reference"), f"{field}.image.reference", required=True)
        policy = r.pull_policy(source.get("pullPolicy"), f"{field}.image.pullPolicy", reference)
        volumes.append(PodContainer(IMAGE_VOLUME, vname, reference, policy, "volumes"))
    return volumes


def _containers(r: _Reader, spec: Mapping[str, Any]) -> list[PodContainer]:
    # Init, regular and ephemeral containers share one name space.
    containers: list[PodContainer] = []
    names: set[str] = set()
    for spec_field, label in CONTAINER_KINDS:
        for i, raw in enumerate(r.items(spec.get(spec_field), f"spec.{spec_field}")):
            field = f"spec.{spec_field}[{i}]"
            c = r.mapping(raw, field)
            cname = r.unique_name(c.get("name"), f"{field}.name", names)
            image = r.string(c.get("image"), f"{field}.image", required=True)
            policy = r.pull_policy(c.get("imagePullPolicy"), f"{field}.imagePullPolicy", image)
            containers.append(PodContainer(label, cname, image, policy, spec_field))
    return containers


def load_pod(path: str) -> PodSpec:
    """The one Pod in ``path`` (YAML or JSON; a ``List`` holding one Pod is fine).

    Raises:
        PodSpecError: unreadable, not YAML, not exactly one Pod, or an invalid Pod.
    """
    from credprov.credentialprovider.objects import ObjectsError, load_objects

    try:
        objects = load_objects(path, "pod file")
    except ObjectsError as exc:
        raise PodSpecError(str(exc)) from None
    if len(objects) != 1:
        raise PodSpecError(f"pod file {path} holds {len(objects)} objects, want exactly one Pod")
    return parse_pod(objects[0], f"pod file {path}")


def select_pull_secrets(
    pod: PodSpec, secrets: Iterable[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """(the Secrets the pod names, in its order; the names not found), as the kubelet's
    secret manager would answer for the pod's namespace.

    A Secret without ``metadata.namespace`` is taken to live in the pod's namespace (as
    ``kubectl apply -n`` would put it), and is returned with that namespace filled in so
    its coordinates in pull records are the real ones.
    """
    by_name: dict[str, dict[str, Any]] = {}
    for secret in secrets:
        meta = secret.get("metadata") or {}
        if not isinstance(meta, Mapping):
            continue
        name = meta.get("name")
        namespace = meta.get("namespace") or pod.namespace
        if namespace != pod.namespace or not isinstance(name, str) or name in by_name:
            continue
        if meta.get("namespace") != namespace:
            secret = {**secret, "metadata": {**meta, "namespace": namespace}}
        by_name[name] = dict(secret)
    found: list[dict[str, Any]] = []
    missing: list[str] = []
    for name in pod.image_pull_secrets:
        if name in by_name:
            found.append(by_name[name])
        else:
            missing.append(name)
    return found, missing


def missing_secret_warning(pod: PodSpec, name: str) -> str:
    """The kubelet's log line for a pull secret that is not there (``getPullSecretsForPod``
    with the API server's NotFound text); never any secret content."""
    return (
        f"Unable to retrieve pull secret {pod.namespace}/{name} for {pod.namespace}/{pod.name} "
        f'due to secrets "{name}" not found.  The image pull may not succeed.'
    )
