"""What the doctor knows of the cluster and the runtime: ``--objects``, ``--node-images``, ``--cri``.

Both files are operator input of unknown origin (a ``kubectl get -o yaml`` dump, a
``crictl images -o json`` copied off a node), read once and bounded:

* ``--objects FILE`` goes through :func:`credprov.nodeauth.load_objects_file` (non-blocking
  open, regular files only, a size cap, Go's nesting limit, YAML aliases expanded with
  go-yaml's budget); every failure is one :class:`~credprov.doctor.context.DoctorUsageError`
  line. The objects it accepts are only checked for kind, name and metadata: a pod's
  ``spec`` may still hold anything, so the readers here (:func:`pods_on_node`,
  :func:`pod_id`, :func:`pod_pull_secrets`, :func:`pod_service_account`) take a field only
  when it has the API's type and otherwise read it as absent, as ``pod_images`` does;
* ``--node-images FILE`` is read with :func:`credprov.base.fileio.read_bounded` (a FIFO or a
  device is refused, never waited on) and parsed with Go's JSON rules
  (:func:`credprov._go.json.loads`: 10,000 levels at most, no recursion); an image entry or
  field of the wrong type is skipped, never a traceback;
* ``--cri ENDPOINT`` asks the runtime itself (``ListImages``).

:class:`NodeImages` finds a pod's image among the node's in constant time per lookup (one
index built once), so a node with 10,000 images and 1,000 pods costs one pass over each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from credprov.doctor.context import Context, DoctorUsageError
from credprov.imageauth.images import InvalidImageError, normalize_reference
from credprov.pullmanager.interfaces import RuntimeImage

if TYPE_CHECKING:
    from credprov.nodeauth.store import ObjectStore

__all__ = [
    "MAX_IMAGES_FILE_BYTES",
    "NodeImages",
    "load_node_images",
    "load_store",
    "parse_images",
    "pod_id",
    "pod_pull_secrets",
    "pod_service_account",
    "pod_uid",
    "pods_on_node",
]

#: ``crictl images -o json`` of a node with 10,000 images is about 4 MiB.
MAX_IMAGES_FILE_BYTES = 16 << 20


def load_store(ctx: Context) -> ObjectStore | None:
    """The ``--objects`` store, loaded once (None without ``--objects``).

    Raises:
        DoctorUsageError: an unreadable, oversized or malformed file (one line).
    """
    if ctx.store is None and ctx.options.objects:
        from credprov.nodeauth import NodeAuthError, load_objects_file

        try:
            ctx.store = load_objects_file(ctx.options.objects)
        except (OSError, NodeAuthError, ValueError) as exc:
            raise DoctorUsageError(f"--objects {ctx.options.objects}: {exc}") from None
    return ctx.store


def _text(value: object) -> str:
    """A field that must be a string, or "" when it is anything else."""
    return value if isinstance(value, str) else ""


def pods_on_node(store: ObjectStore, node: str) -> list[Mapping[str, Any]]:
    """The pods whose ``spec.nodeName`` is ``node``, in the store's order."""
    return [
        pod
        for pod in store.list("pods")
        if isinstance(pod.get("spec"), Mapping) and pod["spec"].get("nodeName") == node
    ]


def pod_id(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of a pod; the namespace defaults to ``default``."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return _text(meta.get("namespace")) or "default", _text(meta.get("name"))


def pod_uid(pod: Mapping[str, Any]) -> str:
    """``metadata.uid`` of a pod, or ""."""
    meta = pod.get("metadata")
    return _text(meta.get("uid")) if isinstance(meta, Mapping) else ""


def pod_service_account(spec: Mapping[str, Any]) -> str:
    """``spec.serviceAccountName`` as written ("" when absent or not a string)."""
    return _text(spec.get("serviceAccountName"))


def pod_pull_secrets(spec: Mapping[str, Any]) -> set[str]:
    """The names in ``spec.imagePullSecrets`` (entries of the wrong type are skipped)."""
    refs = spec.get("imagePullSecrets")
    return {
        name
        for ref in (refs if isinstance(refs, list) else ())
        if isinstance(ref, Mapping) and (name := _text(ref.get("name")))
    }


# -- the node's images -------------------------------------------------------------------------


def load_node_images(ctx: Context) -> list[RuntimeImage]:
    """The node's images from ``--node-images FILE`` or ``--cri ENDPOINT``.

    Raises:
        DoctorUsageError: an unreadable, oversized, non-regular or malformed file, an
            unusable endpoint (one line).
    """
    options = ctx.options
    if options.images_file:
        from credprov.base.fileio import read_bounded

        path = options.images_file
        try:
            data = read_bounded(path, MAX_IMAGES_FILE_BYTES)
        except OSError as exc:
            # FileTooLargeError and NotRegularFileError say why in strerror too
            # ("larger than N bytes", "not a regular file (a FIFO)").
            raise DoctorUsageError(f"--node-images {path}: {exc.strerror or exc}") from None
        return parse_images(data, path)
    assert options.cri is not None
    from credprov.cri.client import CRIError, CRIRuntime

    try:
        with CRIRuntime(options.cri) as runtime:
            return list(runtime.list_images())
    except CRIError as exc:
        raise DoctorUsageError(f"--cri {options.cri}: {exc}") from None


def parse_images(data: bytes, where: str) -> list[RuntimeImage]:
    """One image reference per line (``#`` comments), or ``crictl images -o json``.

    Raises:
        DoctorUsageError: JSON that Go would not read, or without an ``images`` list.
    """
    from credprov._go.json import JSONSyntaxError, has_json_prefix, loads

    if not has_json_prefix(data):
        text = data.decode("utf-8", "replace")
        lines = (line.strip() for line in text.splitlines())
        return [RuntimeImage(id="", repo_tags=(ln,)) for ln in lines if ln and ln[0] != "#"]
    try:
        doc = loads(data)
    except JSONSyntaxError as exc:
        raise DoctorUsageError(f"--node-images {where}: not JSON ({exc.msg})") from None
    except ValueError:
        # Valid JSON that Python cannot hold: an integer of more than 4,300 digits.
        raise DoctorUsageError(
            f"--node-images {where}: not what crictl writes (a number too long to read)"
        ) from None
    images = doc.get("images") if isinstance(doc, dict) else None
    if not isinstance(images, list):
        raise DoctorUsageError(f"--node-images {where}: no 'images' list (crictl images -o json)")
    return [
        RuntimeImage(
            id=_text(item.get("id")),
            repo_tags=_strings(item.get("repoTags")),
            repo_digests=_strings(item.get("repoDigests")),
        )
        for item in images
        if isinstance(item, dict)
    ]


def _strings(value: object) -> tuple[str, ...]:
    """The strings of a JSON list (other entries dropped); () for anything else."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


class NodeImages:
    """The node's images, found by any of their names as the runtime resolves a pod's image.

    A pod image matches an image when it, or its fully qualified form (``nginx`` is
    ``docker.io/library/nginx:latest``), equals one of the image's tags or digests, written
    or normalised; the first image in the runtime's order wins.
    """

    def __init__(self, images: Iterable[RuntimeImage]) -> None:
        self.images: Sequence[RuntimeImage] = list(images)
        #: Every name, written and normalised -> the position of the first image with it.
        self._first: dict[str, int] = {}
        for position, image in enumerate(self.images):
            for name in (*image.repo_tags, *image.repo_digests):
                self._first.setdefault(name, position)
                full = _normalized(name)
                if full is not None:
                    self._first.setdefault(full, position)

    def find(self, image: str) -> RuntimeImage | None:
        """The node's image for the pod image ``image``, or None when it is absent."""
        positions = [
            p
            for p in (self._first.get(image), self._first.get(_normalized(image) or image))
            if p is not None
        ]
        return self.images[min(positions)] if positions else None


def _normalized(image: str) -> str | None:
    try:
        return normalize_reference(image)
    except InvalidImageError:
        return None
