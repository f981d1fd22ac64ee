"""Preloaded-image tracking (``track_preloaded``): the fix for upstream issue #138175."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from credprov.pullmanager.interfaces import RuntimeImage
from credprov.pullmanager.manager import ImagePullManager
from credprov.pullmanager.types import ImagePullCredentials, ImagePullSecret, cache_filename

REF = "sha256:" + "ab" * 32
X = "registry.io/team/x:1"
Y = "registry.io/team/y:1"
SECRET = ImagePullSecret(uid="u1", namespace="ns", name="regcred", credential_hash="h1")


class Runtime:
    def __init__(self, images: list[RuntimeImage]) -> None:
        self.images = images

    def list_images(self) -> list[RuntimeImage]:
        return self.images


def no_creds() -> tuple[list[ImagePullSecret], None]:
    return [], None


def manager(root: Path, track: bool, images: list[RuntimeImage] | None = None) -> ImagePullManager:
    runtime = Runtime(images if images is not None else [RuntimeImage(REF, (X,))])
    return ImagePullManager(
        str(root), "NeverVerifyPreloadedImages", runtime=runtime, track_preloaded=track
    )


def pull_y_with_secret(m: ImagePullManager) -> None:
    m.record_pull_intent(Y)
    m.record_image_pulled(Y, REF, ImagePullCredentials(kubernetesSecrets=[SECRET]))


@pytest.mark.parametrize(
    ("track", "must_pull"), [(False, True), (True, False)], ids=["upstream-bug", "tracked"]
)
def test_preloaded_name_stays_usable_after_other_name_pulled(
    tmp_path: Path, track: bool, must_pull: bool
) -> None:
    m = manager(tmp_path, track)
    assert m.must_attempt_image_pull(X, REF, no_creds) is False  # preloaded, no record yet
    pull_y_with_secret(m)
    assert m.must_attempt_image_pull(X, REF, no_creds) is must_pull
    # The other name still needs its credentials either way.
    assert m.must_attempt_image_pull(Y, REF, no_creds) is True


def test_survives_restart(tmp_path: Path) -> None:
    pull_y_with_secret(manager(tmp_path, True))
    again = manager(tmp_path, True)
    assert again.must_attempt_image_pull(X, REF, no_creds) is False


def test_kubelet_pull_of_the_name_ends_preloaded_status(tmp_path: Path) -> None:
    m = manager(tmp_path, True)
    pull_y_with_secret(m)
    m.record_pull_intent(X)
    m.record_image_pulled(X, REF, ImagePullCredentials(kubernetesSecrets=[SECRET]))
    assert m.must_attempt_image_pull(X, REF, no_creds) is True


def test_in_flight_intent_is_not_preloaded(tmp_path: Path) -> None:
    m = manager(tmp_path, True)
    pull_y_with_secret(m)
    m.record_pull_intent(X)
    assert m.must_attempt_image_pull(X, REF, no_creds) is True


def test_images_with_a_record_at_start_are_never_observed(tmp_path: Path) -> None:
    pull_y_with_secret(manager(tmp_path, False, images=[]))
    m = manager(tmp_path, True, images=[RuntimeImage(REF, (X, Y))])
    assert m.must_attempt_image_pull(X, REF, no_creds) is True
    assert not os.path.exists(
        tmp_path / "image_manager" / "observed-preloaded" / cache_filename(REF)
    )


@pytest.mark.parametrize("damage", ["garbage", "other-ref", "symlink"])
def test_unusable_observation_fails_safe(tmp_path: Path, damage: str) -> None:
    m = manager(tmp_path, True)
    pull_y_with_secret(m)
    path = tmp_path / "image_manager" / "observed-preloaded" / cache_filename(REF)
    if damage == "garbage":
        path.write_bytes(b"\x00{")
    elif damage == "other-ref":
        path.write_text(path.read_text().replace(REF, "sha256:other"))
    else:
        target = tmp_path / "elsewhere"
        target.write_text(path.read_text())
        path.unlink()
        path.symlink_to(target)
    assert m.must_attempt_image_pull(X, REF, no_creds) is True


def test_prune_forgets_observations(tmp_path: Path) -> None:
    import datetime as dt

    m = manager(tmp_path, True)
    pull_y_with_secret(m)
    m.prune_unknown_records([], dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
    assert not (tmp_path / "image_manager" / "observed-preloaded" / cache_filename(REF)).exists()


def test_needs_the_default_store(tmp_path: Path) -> None:
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor

    with pytest.raises(ValueError, match="track_preloaded"):
        ImagePullManager(
            str(tmp_path),
            "NeverVerify",
            accessor=FSPullRecordsAccessor(str(tmp_path)),
            track_preloaded=True,
        )
