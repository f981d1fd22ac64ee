"""Preloaded-image tracking (``track_preloaded``): the fix for upstream issue #138175."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from credprov.pullmanager.interfaces import RuntimeImage
from credprov.pullmanager.manager import ImagePullManager
from credprov.pullmanager.preloaded import API_VERSION, DIRECTORY, KIND, LEGACY_DIRECTORY
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


def observation(root: Path, directory: str = DIRECTORY) -> Path:
    return root / "image_manager" / directory / cache_filename(REF)


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
    assert not os.path.exists(observation(tmp_path))


@pytest.mark.parametrize("damage", ["garbage", "other-ref", "symlink"])
def test_unusable_observation_fails_safe(tmp_path: Path, damage: str) -> None:
    m = manager(tmp_path, True)
    pull_y_with_secret(m)
    path = observation(tmp_path)
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
    assert not (observation(tmp_path)).exists()


def test_needs_the_default_store(tmp_path: Path) -> None:
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor

    with pytest.raises(ValueError, match="track_preloaded"):
        ImagePullManager(
            str(tmp_path),
            "NeverVerify",
            accessor=FSPullRecordsAccessor(str(tmp_path)),
            track_preloaded=True,
        )


# -- the directory: credprov's own, migrated from upstream's #139156 name ------------------------

X_REPO = "registry.io/team/x"


def credprov_body(ref: str = REF, repos: tuple[str, ...] = (X_REPO,)) -> str:
    """An observation as credprov wrote it (under either directory)."""
    body = {"kind": KIND, "apiVersion": API_VERSION, "imageRef": ref, "observedImages": list(repos)}
    return json.dumps(body, separators=(",", ":")) + "\n"


#: What upstream's open PR #139156 would have the kubelet write at the old path.
UPSTREAM_BODY = (
    '{"kind":"ImagePreloadedRecord","apiVersion":"kubelet.config.k8s.io/v1beta1",'
    f'"lastUpdatedTime":"2026-07-01T00:00:00Z","imageRef":"{REF}",'
    f'"observedImages":{{"{X}":{{}}}}}}\n'
)


def test_observations_live_in_credprovs_directory(tmp_path: Path) -> None:
    m = manager(tmp_path, True)
    assert m.must_attempt_image_pull(X, REF, no_creds) is False
    assert DIRECTORY == "credprov-observed-preloaded"
    assert json.loads(observation(tmp_path).read_text())["observedImages"] == [X_REPO]
    # Upstream's #139156 directory is never created or written by credprov.
    assert not (tmp_path / "image_manager" / LEGACY_DIRECTORY).exists()


def test_credprov_observations_are_moved_once(tmp_path: Path) -> None:
    # A root written by an older credprov: Y pulled with a secret, X observed preloaded, under
    # the old directory name.
    pull_y_with_secret(manager(tmp_path, False, images=[]))
    legacy = observation(tmp_path, LEGACY_DIRECTORY)
    legacy.parent.mkdir(mode=0o700)
    legacy.write_text(credprov_body())
    m = manager(tmp_path, True)
    assert not legacy.exists() and legacy.parent.is_dir()  # the directory stays
    assert observation(tmp_path).read_text() == credprov_body()
    assert m.must_attempt_image_pull(X, REF, no_creds) is False  # still preloaded
    assert m.must_attempt_image_pull(Y, REF, no_creds) is True
    # A second start finds nothing left to move.
    assert manager(tmp_path, True).must_attempt_image_pull(X, REF, no_creds) is False


def test_an_observation_already_in_the_new_place_wins(tmp_path: Path) -> None:
    pull_y_with_secret(manager(tmp_path, False, images=[]))
    legacy = observation(tmp_path, LEGACY_DIRECTORY)
    legacy.parent.mkdir(mode=0o700)
    legacy.write_text(credprov_body(repos=(X_REPO,)))
    new = observation(tmp_path)
    new.parent.mkdir(mode=0o700)
    new.write_text(credprov_body(repos=("registry.io/team/z",)))
    m = manager(tmp_path, True)
    assert not legacy.exists()
    assert new.read_text() == credprov_body(repos=("registry.io/team/z",))
    assert m.must_attempt_image_pull(X, REF, no_creds) is True


@pytest.mark.parametrize(
    ("name", "body"),
    [
        pytest.param(cache_filename(REF), UPSTREAM_BODY, id="upstream ImagePreloadedRecord"),
        pytest.param(cache_filename(REF), "\x00{", id="garbage"),
        pytest.param(cache_filename(REF), credprov_body(ref="sha256:other"), id="other image"),
        pytest.param(cache_filename(REF), "symlink", id="symlink"),
        pytest.param(cache_filename(REF) + ".tmp", credprov_body(), id="temporary file"),
        pytest.param("notes.txt", credprov_body(), id="not a cache file name"),
    ],
)
def test_foreign_files_in_upstreams_directory_are_left_alone_and_unused(
    tmp_path: Path, name: str, body: str
) -> None:
    pull_y_with_secret(manager(tmp_path, False, images=[]))
    legacy_dir = tmp_path / "image_manager" / LEGACY_DIRECTORY
    legacy_dir.mkdir(mode=0o700)
    path = legacy_dir / name
    if body == "symlink":
        target = tmp_path / "elsewhere"
        target.write_text(credprov_body())
        path.symlink_to(target)
    else:
        path.write_text(body)
    before = os.readlink(path) if path.is_symlink() else path.read_bytes()
    m = manager(tmp_path, True)
    assert (os.readlink(path) if path.is_symlink() else path.read_bytes()) == before
    assert not observation(tmp_path).exists()
    # X counts as kubelet-pulled (the record for its id exists): it must be verified.
    assert m.must_attempt_image_pull(X, REF, no_creds) is True


def test_no_migration_without_tracking(tmp_path: Path) -> None:
    legacy = observation(tmp_path, LEGACY_DIRECTORY)
    legacy.parent.mkdir(parents=True, mode=0o700)
    legacy.write_text(credprov_body())
    manager(tmp_path, False)
    assert legacy.read_text() == credprov_body()
    assert not observation(tmp_path).parent.exists()


def test_a_failed_move_keeps_the_old_file_and_grants_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor
    from credprov.pullmanager.interfaces import StoreWriteError

    pull_y_with_secret(manager(tmp_path, False, images=[]))
    legacy = observation(tmp_path, LEGACY_DIRECTORY)
    legacy.parent.mkdir(mode=0o700)
    legacy.write_text(credprov_body())
    real_write = FSPullRecordsAccessor._write

    def failing_write(self: FSPullRecordsAccessor, directory: str, name: str, data: bytes) -> None:
        if directory.endswith(DIRECTORY):
            raise StoreWriteError(f"{directory}/{name}: cannot write: disk full")
        real_write(self, directory, name, data)

    with monkeypatch.context() as patch:
        patch.setattr(FSPullRecordsAccessor, "_write", failing_write)
        m = manager(tmp_path, True)
        assert legacy.read_text() == credprov_body()
        assert m.must_attempt_image_pull(X, REF, no_creds) is True
    # The next start moves it.
    assert manager(tmp_path, True).must_attempt_image_pull(X, REF, no_creds) is False
    assert not legacy.exists()
