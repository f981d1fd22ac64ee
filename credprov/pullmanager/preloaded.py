"""Preloaded-image tracking: the fix for upstream issue #138175 (beyond upstream, opt-in).

The bug: image X is preloaded on the node (no record, so ``NeverVerifyPreloadedImages`` lets
every pod use it). A pod pulls a *different name* Y with a secret; the runtime resolves Y to
the same image id, the kubelet writes a pulled record for that id, and from then on X looks
kubelet-pulled: pods that used X with ``imagePullPolicy: Never`` fail with
``ErrImageNeverPull``.

The fix, along the lines of upstream's open PR #139156 (``ImagePreloadedRecord``): at
start-up, for every runtime image that has **no** pulled record, the manager records which
repository names the image was present under, in
``<root>/image_manager/observed-preloaded/sha256-<hex(imageRef)>``. Later, a record for that
id makes only *other* names kubelet-pulled; the observed names stay preloaded unless the
kubelet has an intent for them. Observations are only ever created for ids without a record,
so pulling an image can never turn it into a "preloaded" one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from credprov.credentialprovider.images import InvalidImageError, parse_image_name
from credprov.pullmanager.interfaces import StoreReadError, StoreWriteError
from credprov.pullmanager.types import cache_filename

log = logging.getLogger("credprov.pullmanager")

KIND = "ImagePreloadedRecord"
API_VERSION = "credprov.io/v1alpha1"
DIRECTORY = "observed-preloaded"


def repository_of(name: str) -> str | None:
    """The normalised repository of an image name or reference, None when it doesn't parse."""
    try:
        return parse_image_name(name)
    except InvalidImageError:
        return None


class PreloadedImages:
    """The observed-preloaded files of one kubelet root (through the file store's I/O)."""

    def __init__(self, fs: object) -> None:
        import os

        self._fs = fs
        self.directory = os.path.join(fs.root, DIRECTORY)  # type: ignore[attr-defined]

    def observe(self, image_ref: str, names: Iterable[str]) -> None:
        """Record that ``image_ref`` is present under ``names`` without a pulled record.

        Raises:
            StoreWriteError: the file could not be written.
        """
        repos = sorted({r for r in (repository_of(n) for n in names) if r})
        body = {
            "kind": KIND,
            "apiVersion": API_VERSION,
            "imageRef": image_ref,
            "observedImages": repos,
        }
        data = (json.dumps(body, separators=(",", ":")) + "\n").encode("utf-8")
        self._fs._write(self.directory, cache_filename(image_ref), data)  # type: ignore[attr-defined]

    def observed(self, image_ref: str) -> set[str]:
        """The repositories ``image_ref`` was observed preloaded under (empty when none or
        when the file is unusable: fail safe, the image then counts as kubelet-pulled)."""
        import os

        path = os.path.join(self.directory, cache_filename(image_ref))
        try:
            data = self._fs._read(path)  # type: ignore[attr-defined]
        except Exception as exc:  # an unusable file grants nothing
            log.info("ignoring unusable preloaded observation %s: %s", path, exc)
            return set()
        if data is None:
            return set()
        try:
            body = json.loads(data)
        except ValueError:
            return set()
        if (
            not isinstance(body, dict)
            or body.get("kind") != KIND
            or body.get("apiVersion") != API_VERSION
            or body.get("imageRef") != image_ref
            or not isinstance(body.get("observedImages"), list)
        ):
            return set()
        return {r for r in body["observedImages"] if isinstance(r, str)}

    def is_preloaded_name(self, image_ref: str, image: str) -> bool:
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
        try:
            self._fs._delete(self.directory, cache_filename(image_ref))  # type: ignore[attr-defined]
        except (StoreWriteError, StoreReadError) as exc:
            log.error("failed to remove preloaded observation for %r: %s", image_ref, exc)
