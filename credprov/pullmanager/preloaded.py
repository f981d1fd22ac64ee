"""Preloaded-image tracking: the fix for upstream issue #138175 (beyond upstream, opt-in).

The bug: image X is preloaded on the node (no record, so ``NeverVerifyPreloadedImages`` lets
every pod use it). A pod pulls a *different name* Y with a secret; the runtime resolves Y to
the same image id, the kubelet writes a pulled record for that id, and from then on X looks
kubelet-pulled: pods that used X with ``imagePullPolicy: Never`` fail with
``ErrImageNeverPull``.

The fix, along the lines of upstream's open PR #139156: at start-up, for every runtime image
that has **no** pulled record, the manager records which repository names the image was
present under, in ``<root>/image_manager/credprov-observed-preloaded/sha256-<hex(imageRef)>``.
Later, a record for that id makes only *other* names kubelet-pulled; the observed names stay
preloaded unless the kubelet has an intent for them. Observations are only ever created for
ids without a record, so pulling an image can never turn it into a "preloaded" one.

**Why a credprov-owned directory, not upstream's format.** PR #139156 proposes a kubelet
``ImagePreloadedRecord`` in ``kubelet.config.k8s.io/v1beta1`` under
``<root>/image_manager/observed-preloaded/`` with a different body (``lastUpdatedTime``,
``observedImages`` as a map of image names). credprov used to write its own body
(``credprov.io/v1alpha1``, a list of normalised repositories) at those very paths. Sharing
the directory either way is unsafe: a kubelet carrying #139156 would read, and may rewrite or
prune, credprov's files as its own, and credprov would be taking a format and semantics from a
PR that is not merged and may still change (which names count, when a record ends the
preloaded state). So the observations live in ``credprov-observed-preloaded``, and
``observed-preloaded`` is the kubelet's: credprov never reads it as observations and never
writes there.

**Migration.** Observations credprov wrote under the old name are moved once, when a manager
with ``track_preloaded`` starts: each ``observed-preloaded/sha256-…`` file whose body is
credprov's own (kind ``ImagePreloadedRecord``, apiVersion ``credprov.io/v1alpha1``, an
``imageRef`` whose hash is the file name, a list of names) is rewritten atomically in the new
directory, unless an observation for that image is already there (the new one wins), and only
then removed from the old one. Anything else there (upstream's ``kubelet.config.k8s.io``
files, unreadable or foreign files, symlinks, temporaries) is left untouched and is never
used. The directory itself is left in place. Each file moves under the record lock of its
image, so two processes sharing a root cannot both move it. A file that fails to move stays
where it was and grants nothing: its image just counts as kubelet-pulled again (fail safe).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from credprov.imageauth.images import InvalidImageError, parse_image_name
from credprov.pullmanager.fsstore import is_cache_filename
from credprov.pullmanager.interfaces import StoreReadError, StoreWriteError
from credprov.pullmanager.types import cache_filename

log = logging.getLogger("credprov.pullmanager")

KIND = "ImagePreloadedRecord"
API_VERSION = "credprov.io/v1alpha1"
#: credprov's observations, under ``<kubelet root>/image_manager``.
DIRECTORY = "credprov-observed-preloaded"
#: Where credprov wrote them before; upstream's PR #139156 proposes this directory for the
#: kubelet's own ``ImagePreloadedRecord`` (``kubelet.config.k8s.io/v1beta1``).
LEGACY_DIRECTORY = "observed-preloaded"

#: ``locker(kind, key)``: the manager's cross-process lock for a record key.
Locker = Callable[[str, str], contextlib.AbstractContextManager[Any]]


def _encode(image_ref: str, repos: Iterable[str]) -> bytes:
    body = {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "imageRef": image_ref,
        "observedImages": sorted(set(repos)),
    }
    return (json.dumps(body, separators=(",", ":")) + "\n").encode("utf-8")


def _decode(data: bytes) -> tuple[str, list[str]] | None:
    """(imageRef, observed repositories) of a credprov observation; None for anything else
    (upstream's ImagePreloadedRecord included)."""
    try:
        body = json.loads(data)
    except ValueError:
        return None
    if (
        not isinstance(body, dict)
        or body.get("kind") != KIND
        or body.get("apiVersion") != API_VERSION
        or not isinstance(body.get("imageRef"), str)
        or not isinstance(body.get("observedImages"), list)
    ):
        return None
    return body["imageRef"], [r for r in body["observedImages"] if isinstance(r, str)]


def repository_of(name: str) -> str | None:
    """The normalised repository of an image name or reference, None when it doesn't parse."""
    try:
        return parse_image_name(name)
    except InvalidImageError:
        return None


class PreloadedImages:
    """The observed-preloaded files of one kubelet root (through the file store's I/O)."""

    def __init__(self, fs: object, locker: Locker | None = None) -> None:
        self._fs = fs
        root: str = fs.root  # type: ignore[attr-defined]
        self.directory = os.path.join(root, DIRECTORY)
        self.legacy_directory = os.path.join(root, LEGACY_DIRECTORY)
        self._locker = locker

    def observe(self, image_ref: str, names: Iterable[str]) -> None:
        """Record that ``image_ref`` is present under ``names`` without a pulled record.

        Raises:
            StoreWriteError: the file could not be written.
        """
        repos = {r for r in (repository_of(n) for n in names) if r}
        data = _encode(image_ref, repos)
        self._fs._write(self.directory, cache_filename(image_ref), data)  # type: ignore[attr-defined]

    def observed(self, image_ref: str) -> set[str]:
        """The repositories ``image_ref`` was observed preloaded under (empty when none or
        when the file is unusable: fail safe, the image then counts as kubelet-pulled)."""
        path = os.path.join(self.directory, cache_filename(image_ref))
        try:
            data = self._fs._read(path)  # type: ignore[attr-defined]
        except Exception as exc:  # an unusable file grants nothing
            log.info("ignoring unusable preloaded observation %s: %s", path, exc)
            return set()
        if data is None:
            return set()
        decoded = _decode(data)
        if decoded is None or decoded[0] != image_ref:
            return set()
        return set(decoded[1])

    def migrate(self) -> int:
        """Move credprov's observations out of upstream's ``observed-preloaded`` directory
        (see the module docstring); returns how many were moved. Never raises: what cannot
        be moved is logged and left in place, granting nothing."""
        try:
            names = sorted(n for n in os.listdir(self.legacy_directory) if is_cache_filename(n))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            log.error(
                "cannot list %s to migrate preloaded observations: %s", self.legacy_directory, exc
            )
            return 0
        moved = 0
        for name in names:
            try:
                if self._migrate_one(name):
                    moved += 1
            except (StoreReadError, StoreWriteError, OSError) as exc:
                log.error("failed to migrate preloaded observation %s: %s", name, exc)
        if moved:
            log.info(
                "moved %d preloaded observation(s) from %s to %s",
                moved,
                self.legacy_directory,
                self.directory,
            )
        return moved

    def _legacy_observation(self, name: str) -> tuple[str, list[str]] | None:
        """The credprov observation in ``observed-preloaded/name``, or None (absent,
        unreadable, a symlink, not credprov's, or named after another image)."""
        path = os.path.join(self.legacy_directory, name)
        try:
            data = self._fs._read(path)  # type: ignore[attr-defined]
        except Exception as exc:  # not a regular file, unreadable: not ours to touch
            log.info("leaving %s in place: %s", path, exc)
            return None
        decoded = None if data is None else _decode(data)
        if decoded is None or cache_filename(decoded[0]) != name:
            return None  # upstream's ImagePreloadedRecord, or a stranger: leave it be
        return decoded

    def _migrate_one(self, name: str) -> bool:
        found = self._legacy_observation(name)
        if found is None:
            return False
        image_ref = found[0]
        lock = (
            self._locker("record", image_ref)
            if self._locker is not None
            else contextlib.nullcontext()
        )
        with lock:
            # Again under the lock: another process may have moved it meanwhile.
            found = self._legacy_observation(name)
            if found is None:
                return False
            target = os.path.join(self.directory, name)
            if self._fs._read(target) is None:  # type: ignore[attr-defined]
                self._fs._write(self.directory, name, _encode(*found))  # type: ignore[attr-defined]
            # else: an observation in the new place is newer; the old one is dropped.
            self._fs._delete(self.legacy_directory, name)  # type: ignore[attr-defined]
        return True

    def is_preloaded_name(self, image_ref: str, image: str) -> bool:
        """Whether ``image``'s repository is one ``image_ref`` was present under before the
        kubelet pulled anything.
        """
        repo = repository_of(image)
        return repo is not None and repo in self.observed(image_ref)

    def drop_name(self, image_ref: str, image: str) -> None:
        """``image``'s repository is no longer preloaded for ``image_ref``."""
        repos = self.observed(image_ref)
        repo = repository_of(image)
        if repo is None or repo not in repos:
            return
        repos.discard(repo)
        try:
            if repos:
                self.observe(image_ref, repos)
            else:
                self.forget(image_ref)
        except StoreWriteError as exc:
            # Fail safe would be to keep verifying this name: remove the whole observation.
            log.error("failed to update preloaded observation for %r: %s", image_ref, exc)
            self.forget(image_ref)

    def forget(self, image_ref: str) -> None:
        """Drop what was observed for ``image_ref`` (its image left the node); a store error is
        logged.
        """
        try:
            self._fs._delete(self.directory, cache_filename(image_ref))  # type: ignore[attr-defined]
        except (StoreWriteError, StoreReadError) as exc:
            log.error("failed to remove preloaded observation for %r: %s", image_ref, exc)
