"""A fake container runtime and registry: the CRI ``ImageService`` without a runtime.

Used by the simulator (``credprov simulate``) and by tests. Mirrors the parts of the CRI
``ImageService`` the kubelet's image manager uses (``pkg/kubelet/kuberuntime/
kuberuntime_image.go``): ``PullImage(spec, auth)`` returns the image reference the runtime
stored, ``ImageStatus(spec).Image.Id`` is what ``GetImageRef`` returns ("" / ``None`` when
absent) and ``ListImages`` feeds the pull manager's start-up housekeeping. Names are
resolved the way containerd does: Docker Hub names are normalised (``nginx`` ->
``docker.io/library/nginx:latest``), a digest wins over a tag, and two names may point at
one image id, which is why pull records are keyed by imageRef and not by name.

:class:`FakeRegistry` decides who may pull what: repositories open to anonymous pulls, and
grants giving a username/password (or a KEP-2535 credential hash) access to repositories.
Its errors read like containerd's so the kubelet's ``Failed to pull image`` events look
familiar. :class:`FakeRuntime` can also reproduce the CRI-O bug behind kubernetes#137024:
``PullImage`` answering a different reference than ``ImageStatus`` reports.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from credprov.imageauth.images import (
    InvalidImageError,
    normalize_reference,
    parse_image_name,
    split_reference,
)
from credprov.imageauth.keyring import TrackedAuthConfig
from credprov.pullmanager.interfaces import REGISTRY_UNAVAILABLE, PullError, RuntimeImage

__all__ = [
    "FakeRegistry",
    "FakeRuntime",
    "PullAttempt",
    "RegistryGrant",
    "RegistryImage",
]


def _fake_digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode("utf-8")).hexdigest()


def _repo_matches(pattern: str, repo: str) -> bool:
    """A grant pattern: ``*``, ``prefix/*`` (a path-segment prefix) or an exact repository."""
    if pattern == "*":
        return True
    if pattern.endswith("/*"):
        return repo.startswith(pattern[:-1])
    try:
        return parse_image_name(pattern) == repo
    except InvalidImageError:
        return False


# -- registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryImage:
    """An image a registry serves under one tag."""

    name: str  # normalised repo:tag
    id: str  # the image (config) id the runtime will report
    digest: str  # the manifest digest, for repo@digest pulls
    size: int = 0

    @property
    def repo(self) -> str:
        """The image's repository (its name without the tag)."""
        return self.name.rpartition(":")[0]


@dataclass(frozen=True)
class RegistryGrant:
    """Credentials that may pull ``repos``: a username/password pair, or any credential
    whose KEP-2535 hash is ``credential_hash``."""

    repos: tuple[str, ...]
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    credential_hash: str | None = None

    def accepts(self, auth: TrackedAuthConfig) -> bool:
        """Whether ``auth`` is this grant's credential (by hash, else by username and password)."""
        if self.credential_hash is not None:
            return auth.credential_hash == self.credential_hash
        return auth.username == self.username and auth.password == self.password


class FakeRegistry:
    """Images by tag, plus access rules. Thread-safe enough for the simulator's use."""

    def __init__(
        self,
        images: Iterable[RegistryImage] = (),
        anonymous: Iterable[str] = (),
        grants: Iterable[RegistryGrant] = (),
    ) -> None:
        self._images: dict[str, RegistryImage] = {i.name: i for i in images}
        self.anonymous = list(anonymous)
        self.grants = list(grants)
        self.available = True

    def add_image(
        self, name: str, image_id: str | None = None, digest: str | None = None, size: int = 0
    ) -> RegistryImage:
        """Serve ``name`` (a tagged reference); id and digest are derived when omitted.

        Raises:
            InvalidImageError: ``name`` is not a valid reference.
        """
        repo, tag, _ = split_reference(name)
        full = f"{repo}:{tag or 'latest'}"
        image = RegistryImage(
            name=full,
            id=image_id or _fake_digest("id:" + full),
            digest=digest or _fake_digest("digest:" + (image_id or full)),
            size=size,
        )
        self._images[full] = image
        return image

    def images(self) -> list[RegistryImage]:
        """The images the registry serves."""
        return list(self._images.values())

    def resolve(self, image: str) -> RegistryImage | None:
        """The image ``image`` names (a digest wins over a tag), None if not served."""
        repo, tag, digest = split_reference(image)
        if digest:
            for candidate in self._images.values():
                if candidate.repo == repo and candidate.digest == digest:
                    return candidate
            return None
        return self._images.get(f"{repo}:{tag or 'latest'}")

    def is_anonymous(self, repo: str) -> bool:
        """Whether anyone may pull from ``repo`` without credentials."""
        return any(_repo_matches(p, repo) for p in self.anonymous)

    def authorize(self, repo: str, auth: TrackedAuthConfig | None) -> bool:
        """Whether a pull of ``repo`` with ``auth`` is allowed. Anonymous repositories accept
        anybody (a real registry may reject wrong credentials there; the kubelet's logic
        does not depend on it)."""
        if self.is_anonymous(repo):
            return True
        if auth is None:
            return False
        return any(
            g.accepts(auth) and any(_repo_matches(p, repo) for p in g.repos) for g in self.grants
        )


# -- runtime ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PullAttempt:
    """One ``PullImage`` call, for tests and the simulator (never holds a password)."""

    image: str
    credential: str  # "anonymous" or the credential's source label
    credential_hash: str
    error: str | None


class FakeRuntime:
    """An in-memory runtime: local images by id, each with tags and repo digests.

    ``pull_ref_mismatch`` makes ``pull_image`` return ``repo@digest`` while ``image_ref``
    keeps answering the image id, as CRI-O did before its fix (kubernetes#137024).
    """

    def __init__(self, registry: FakeRegistry | None = None, *, pull_ref_mismatch: bool = False):
        self.registry = registry if registry is not None else FakeRegistry()
        self.pull_ref_mismatch = pull_ref_mismatch
        self._lock = threading.Lock()
        self._images: dict[str, RuntimeImage] = {}
        self.pulls: list[PullAttempt] = []

    # -- local store --

    def add_image(
        self, image_id: str, names: Iterable[str] = (), digest: str | None = None, size: int = 0
    ) -> RuntimeImage:
        """Side-load an image (a preloaded image the kubelet never pulled).

        ``names`` are references (``nginx:1``); with ``digest`` each repository also gets a
        ``repo@digest`` entry. Tags move from any image that had them, as a re-tag does.

        Raises:
            InvalidImageError: a name is not a valid reference.
        """
        tags = [normalize_reference(n) for n in names]
        repos = [split_reference(n)[0] for n in names]
        digests = [f"{r}@{digest}" for r in dict.fromkeys(repos)] if digest else []
        with self._lock:
            return self._store(image_id, tags, digests, size)

    def _store(self, image_id: str, tags: list[str], digests: list[str], size: int) -> RuntimeImage:
        # Tags are unique across images; repo digests are content-addressed, so no clash.
        for other_id, other in list(self._images.items()):
            if other_id != image_id and set(other.repo_tags) & set(tags):
                self._images[other_id] = RuntimeImage(
                    id=other.id,
                    repo_tags=tuple(t for t in other.repo_tags if t not in tags),
                    repo_digests=other.repo_digests,
                    size=other.size,
                )
        old = self._images.get(image_id)
        image = RuntimeImage(
            id=image_id,
            repo_tags=tuple(dict.fromkeys([*(old.repo_tags if old else ()), *tags])),
            repo_digests=tuple(dict.fromkeys([*(old.repo_digests if old else ()), *digests])),
            size=size or (old.size if old else 0),
        )
        self._images[image_id] = image
        return image

    def remove_image(self, image: str) -> bool:
        """Remove the image ``image`` (a name or an id) entirely; False if absent."""
        ref = self.image_ref(image)
        if ref is None:
            return False
        with self._lock:
            return self._images.pop(ref, None) is not None

    def _find(self, image: str) -> RuntimeImage | None:
        if image in self._images:
            return self._images[image]
        try:
            repo, tag, digest = split_reference(image)
        except InvalidImageError:
            return None
        for candidate in self._images.values():
            if digest:
                if f"{repo}@{digest}" in candidate.repo_digests:
                    return candidate
            elif f"{repo}:{tag or 'latest'}" in candidate.repo_tags:
                return candidate
        return None

    # -- ImageService --

    def image_ref(self, image: str) -> str | None:
        """The ID of the image ``image`` names on the node, or None when absent."""
        with self._lock:
            found = self._find(image)
        return found.id if found is not None else None

    def list_images(self) -> list[RuntimeImage]:
        """The images on the node."""
        with self._lock:
            return list(self._images.values())

    def pull_image(self, image: str, auth: TrackedAuthConfig | None) -> str:
        """Pull ``image`` from the fake registry with ``auth`` (None: anonymously), noting the
        attempt in ``pulls``; returns the image's ID.

        Raises:
            PullError: the registry refused (unknown image, denied, unavailable).
        """
        label = "anonymous" if auth is None else auth.source_label
        chash = "" if auth is None else auth.credential_hash
        try:
            ref = self._pull(image, auth)
        except PullError as exc:
            self.pulls.append(PullAttempt(image, label, chash, str(exc)))
            raise
        self.pulls.append(PullAttempt(image, label, chash, None))
        return ref

    def _pull(self, image: str, auth: TrackedAuthConfig | None) -> str:
        try:
            full = normalize_reference(image)
            repo = split_reference(image)[0]
        except InvalidImageError as exc:
            raise PullError(f"rpc error: code = Unknown desc = {exc}") from None
        prefix = f'failed to pull and unpack image "{full}": failed to resolve reference "{full}"'
        if not self.registry.available:
            host = repo.split("/", 1)[0]
            raise PullError(
                f"{REGISTRY_UNAVAILABLE}: {prefix}: dial tcp {host}:443: connect: "
                "connection refused"
            )
        if not self.registry.authorize(repo, auth):
            # Registries answer "denied" for a private repo and a missing one alike, so
            # that existence does not leak; containerd words it like this.
            why = "no basic auth credentials" if auth is None else "insufficient_scope"
            raise PullError(
                f"rpc error: code = Unknown desc = {prefix}: pull access denied, repository "
                f"does not exist or may require authorization: authorization failed: {why}"
            )
        served = self.registry.resolve(image)
        if served is None:
            raise PullError(f"rpc error: code = NotFound desc = {prefix}: {full}: not found")
        _, tag, digest = split_reference(image)
        # A by-digest pull adds no tag; an untagged name means ":latest".
        tags = [f"{repo}:{tag or 'latest'}"] if tag or not digest else []
        with self._lock:
            self._store(served.id, tags, [f"{repo}@{served.digest}"], served.size)
        if self.pull_ref_mismatch:
            return f"{repo}@{served.digest}"
        return served.id
