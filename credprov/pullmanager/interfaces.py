"""The contracts between the pull manager's parts (store, memory layer, manager) and the
container runtime (:class:`ImageService`).

Mirrors ``pkg/kubelet/images/pullmanager/interfaces.go``. Every accessor implements
:class:`PullRecordsAccessor`; the manager talks only to that protocol, so the file store,
the in-memory layer over it, and test fakes are interchangeable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from credprov.errors import PullManagerError
from credprov.imageauth.keyring import TrackedAuthConfig
from credprov.pullmanager.types import ImagePulledRecord, ImagePullIntent


class StoreReadError(PullManagerError):
    """A record or intent file exists but cannot be read or strictly decoded.

    The manager fails safe on it: the image counts as kubelet-pulled and must be verified.
    """


class StoreWriteError(PullManagerError):
    """A record or intent could not be written or deleted (ENOSPC, EACCES, ...)."""


class PullRecordsAccessor(Protocol):
    """Read and write ``ImagePullIntent`` and ``ImagePulledRecord`` objects.

    Every method may be called from several threads at once. The manager reads a record
    without its locks when it finds one, so ``get_image_pulled_record`` may run while the
    same record is written or deleted, and must then return the old or the new state, never
    a mix (the file store's atomic rename and the memory layer's lock give that).
    """

    def write_image_pull_intent(self, image: str) -> None:
        """Raises StoreWriteError."""

    def image_pull_intent_exists(self, image: str) -> bool:
        """True when an intent for exactly ``image`` exists. Raises StoreReadError."""

    def delete_image_pull_intent(self, image: str) -> None:
        """Missing is fine. Raises StoreWriteError."""

    def list_image_pull_intents(self) -> tuple[list[ImagePullIntent], list[str]]:
        """(every valid intent, one message per file that failed to read or decode)."""

    def get_image_pulled_record(self, image_ref: str) -> ImagePulledRecord | None:
        """The record for ``image_ref``, None when absent (or for another imageRef whose
        file name collides). Raises StoreReadError when the file exists but is unusable."""

    def write_image_pulled_record(self, record: ImagePulledRecord) -> None:
        """Raises StoreWriteError."""

    def delete_image_pulled_record(self, image_ref: str) -> None:
        """Missing is fine. Raises StoreWriteError."""

    def list_image_pulled_records(self) -> tuple[list[ImagePulledRecord], list[str]]:
        """(every valid record, one message per file that failed to read or decode)."""


@dataclass(frozen=True)
class RuntimeImage:
    """An image the container runtime has (CRI ``Image``)."""

    id: str
    repo_tags: Sequence[str] = ()
    repo_digests: Sequence[str] = ()
    size: int = 0


#: ``crierrors.ErrRegistryUnavailable``: the kubelet recognises it by this message prefix.
REGISTRY_UNAVAILABLE = "RegistryUnavailable"


class PullError(PullManagerError):
    """``PullImage`` failed; ``str()`` is the runtime's message (never a password)."""


class ImageService(Protocol):
    """The container runtime as the kubelet's image path uses it: the CRI ``ImageService``.

    The one runtime contract: the pull manager's housekeeping needs :meth:`list_images`,
    the image manager (``EnsureImageExists``) :meth:`image_ref` and :meth:`pull_image`,
    image garbage collection :meth:`remove_image`. :class:`credprov.cri.client.CRIRuntime`
    (a real runtime over gRPC) and :class:`credprov.testing.FakeRuntime` implement it.
    """

    def list_images(self) -> list[RuntimeImage]:
        """Every image; may raise (the manager logs and carries on)."""
        ...

    def image_ref(self, image: str) -> str | None:
        """``ImageStatus(image).Image.Id``, None when the image is not present."""
        ...

    def pull_image(self, image: str, auth: TrackedAuthConfig | None) -> str:
        """Pull ``image`` (default tag applied) with ``auth`` (None: anonymous).

        Returns the image reference the runtime stored. Raises PullError.
        """
        ...

    def remove_image(self, image: str) -> Any:
        """Remove ``image``; what it returns is the runtime's business. May raise."""
        ...
