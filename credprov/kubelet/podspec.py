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

from credprov._go.fmt import go_quote
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
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")


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


def parse_pod(obj: Mapping[str, Any], where: str = "pod") -> PodSpec:
    """Check and default one Pod object (a dict as YAML/JSON decodes it).

    Raises:
        PodSpecError: ``<where>: <field>: <reason>``.

    (Over 80 lines on purpose: it applies the API server's defaulting and validation field by
    field, in the API's order.)
    """
    from credprov.kubelet.ensure import default_pull_policy

    def fail(field: str, reason: str) -> PodSpecError:
        return PodSpecError(f"{where}: {field}: {reason}")

    def mapping(value: Any, field: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise fail(field, f"must be an object, not {_type(value)}")
        return value

    def string(value: Any, field: str, *, required: bool = False) -> str:
        if value is None or value == "":
            if required:
                raise fail(field, "Required value")
            return ""
        if not isinstance(value, str):
            raise fail(field, f"must be a string, not {_type(value)}")
        return value

    def items(value: Any, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise fail(field, f"must be a list, not {_type(value)}")
        return value

    kind = obj.get("kind")
    if kind != "Pod":
        what = "no kind" if kind is None else f"kind {go_quote(str(kind))}"
        raise PodSpecError(f"{where}: holds {what}, not a Pod")
    meta = mapping(obj.get("metadata"), "metadata")
    name = string(meta.get("name"), "metadata.name", required=True)
    namespace = string(meta.get("namespace"), "metadata.namespace") or "default"
    uid = string(meta.get("uid"), "metadata.uid")
    spec = mapping(obj.get("spec"), "spec")
    service_account = (
        string(spec.get("serviceAccountName"), "spec.serviceAccountName")
        or string(spec.get("serviceAccount"), "spec.serviceAccount")  # deprecated alias
        or "default"
    )

    secrets: list[str] = []
    for i, ref in enumerate(items(spec.get("imagePullSecrets"), "spec.imagePullSecrets")):
        field = f"spec.imagePullSecrets[{i}]"
        secret_name = string(mapping(ref, field).get("name"), f"{field}.name")
        if secret_name:  # the API allowed empty names once; the kubelet skips them
            secrets.append(secret_name)

    def policy_of(value: Any, field: str, image: str) -> str:
        policy = string(value, field)
        if policy and policy not in _PULL_POLICIES:
            supported = ", ".join(go_quote(p) for p in _PULL_POLICIES)
            raise fail(
                field, f"Unsupported value: {go_quote(policy)}: supported values: {supported}"
            )
        return policy or default_pull_policy(image)

    containers: list[PodContainer] = []
    volume_names: set[str] = set()
    for i, raw in enumerate(items(spec.get("volumes"), "spec.volumes")):
        field = f"spec.volumes[{i}]"
        volume = mapping(raw, field)
        source = volume.get("image")
        if source is None:
            continue  # not an image volume: nothing to pull
        vname = string(volume.get("name"), f"{field}.name", required=True)
        if vname in volume_names:
            raise fail(f"{field}.name", f"Duplicate value: {go_quote(vname)}")
        volume_names.add(vname)
        source = mapping(source, f"{field}.image")
        reference = string(source.get("reference"), f"{field}.image.reference", required=True)
        containers.append(
            PodContainer(
                kind=IMAGE_VOLUME,
                name=vname,
                image=reference,
                image_pull_policy=policy_of(
                    source.get("pullPolicy"), f"{field}.image.pullPolicy", reference
                ),
                field="volumes",
            )
        )

    seen: set[str] = set()
    for spec_field, label in CONTAINER_KINDS:
        for i, raw in enumerate(items(spec.get(spec_field), f"spec.{spec_field}")):
            field = f"spec.{spec_field}[{i}]"
            c = mapping(raw, field)
            cname = string(c.get("name"), f"{field}.name", required=True)
            if cname in seen:
                raise fail(f"{field}.name", f"Duplicate value: {go_quote(cname)}")
            seen.add(cname)
            image = string(c.get("image"), f"{field}.image", required=True)
            policy = policy_of(c.get("imagePullPolicy"), f"{field}.imagePullPolicy", image)
            containers.append(
                PodContainer(
                    kind=label, name=cname, image=image, image_pull_policy=policy, field=spec_field
                )
            )
    if not any(c.field == "containers" for c in containers):
        raise fail("spec.containers", "Required value")
    return PodSpec(
        namespace=namespace,
        name=name,
        uid=uid,
        service_account_name=service_account,
        image_pull_secrets=tuple(secrets),
        containers=tuple(containers),
    )


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
