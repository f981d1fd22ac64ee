"""The installer image: an OCI image archive written directly, no image builder needed.

``credprov bundle --oci-archive FILE`` turns a bundle tarball into a one-layer image
``FROM scratch``: a static busybox (Debian's ``busybox-static``, copied from
``/bin/busybox``) with links for the applets the scripts use, ``/credprov-plugins/``
unpacked, and ``/credprov-plugins/image-entrypoint`` as the command. The archive is an OCI
image layout in a tar (``oci-layout``, ``index.json``, ``blobs/sha256/...``), which
``ctr images import`` and ``podman load`` read; the reference name is in the index both as
``org.opencontainers.image.ref.name`` and containerd's ``io.containerd.image.name``.

Written by hand (about a hundred lines of JSON and tar) rather than with buildah or umoci:
users then need neither, the output is reproducible (fixed mtimes, sorted entries, gzip
without a timestamp), and the format is small and fully specified by the OCI image spec.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from credprov import __version__
from credprov.bundle.build import BUNDLE_DIR, BundleError, go_arch

DEFAULT_BUSYBOX = "/bin/busybox"
IMAGE_NAME = "localhost/credprov-plugins-installer"

#: busybox applets the install and entrypoint scripts call, linked in ``/bin``.
APPLETS = (
    "sh", "cat", "cmp", "cp", "chmod", "dirname", "echo", "grep", "head", "ln", "ls", "mkdir",
    "mv", "printf", "pwd", "readlink", "rm", "tail", "test", "[", "tr",
)  # fmt: skip

_EPOCH = 1_700_000_000
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


@dataclass(frozen=True)
class ImageResult:
    archive: Path
    reference: str
    manifest_digest: str
    size: int


def _info(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = link
    info.mtime = _EPOCH
    return info


def _is_static(data: bytes) -> bool:
    """True for an ELF file without a program interpreter (PT_INTERP): no loader needed."""
    return (
        data[:4] == b"\x7fELF" and b"/ld-linux" not in data[:4096] and b"ld-musl" not in data[:4096]
    )


def build_layer(tarball: Path, busybox: Path) -> bytes:
    """The image's one layer (uncompressed tar): busybox, its applet links, the bundle."""
    try:
        bb = busybox.read_bytes()
    except OSError as exc:
        raise BundleError(
            f"cannot read {busybox}: {exc.strerror} (install Debian's busybox-static)"
        ) from None
    if not _is_static(bb):
        raise BundleError(f"{busybox} is not a static executable (install busybox-static)")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as layer:
        layer.addfile(_info("bin", tarfile.DIRTYPE, 0o755))
        layer.addfile(_info("bin/busybox", tarfile.REGTYPE, 0o755, len(bb)), io.BytesIO(bb))
        for applet in sorted(APPLETS):
            layer.addfile(_info(f"bin/{applet}", tarfile.SYMTYPE, 0o777, link="busybox"))
        layer.addfile(_info("tmp", tarfile.DIRTYPE, 0o1777))
        try:
            _copy_bundle(tarball, layer)
        except (OSError, tarfile.TarError) as exc:
            raise BundleError(f"cannot read bundle {tarball}: {exc}") from None
    return out.getvalue()


def _copy_bundle(tarball: Path, layer: tarfile.TarFile) -> None:
    """Every member of the bundle tarball into the layer, checked to be a bundle."""
    with tarfile.open(tarball, "r:gz") as src:
        seen = False
        for member in src:
            top = member.name.split("/", 1)[0]
            if top != BUNDLE_DIR or ".." in member.name.split("/"):
                raise BundleError(f"{tarball} is not a credprov-plugins bundle")
            seen = seen or member.name == f"{BUNDLE_DIR}/install"
            data = src.extractfile(member) if member.isfile() else None
            layer.addfile(member, data)
        if not seen:
            raise BundleError(f"{tarball} has no {BUNDLE_DIR}/install")


def _blob(blobs: dict[str, bytes], data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return digest


def write_oci_archive(
    tarball: str | os.PathLike[str],
    archive: str | os.PathLike[str],
    *,
    busybox: str | os.PathLike[str] = DEFAULT_BUSYBOX,
    reference: str | None = None,
) -> ImageResult:
    """Write the installer image for bundle ``tarball`` as an OCI archive at ``archive``.

    Raises:
        BundleError: unreadable bundle or busybox, or an unwritable destination.
    """
    reference = reference or f"{IMAGE_NAME}:{__version__}"
    layer = build_layer(Path(tarball), Path(busybox))
    blobs: dict[str, bytes] = {}
    gz = gzip.compress(layer, compresslevel=6, mtime=0)
    layer_digest = _blob(blobs, gz)
    config = {
        "architecture": go_arch(),
        "os": "linux",
        "config": {
            "Env": ["PATH=/bin"],
            "Entrypoint": [f"/{BUNDLE_DIR}/image-entrypoint"],
            "WorkingDir": "/",
            "Labels": {"org.opencontainers.image.version": __version__},
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
        "history": [{"created_by": "credprov bundle --oci-archive"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_digest = _blob(blobs, config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": len(config_bytes)},
        "layers": [{"mediaType": MEDIA_LAYER, "digest": layer_digest, "size": len(gz)}],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    manifest_digest = _blob(blobs, manifest_bytes)
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "platform": {"architecture": go_arch(), "os": "linux"},
                "annotations": {
                    "org.opencontainers.image.ref.name": reference,
                    "io.containerd.image.name": reference,
                },
            }
        ],
    }
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True, separators=(",", ":")).encode(),
    }
    dest = Path(archive)
    tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}")
    try:
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as out:
            out.addfile(_info("blobs", tarfile.DIRTYPE, 0o755))
            out.addfile(_info("blobs/sha256", tarfile.DIRTYPE, 0o755))
            for digest, data in sorted(blobs.items()):
                name = "blobs/sha256/" + digest.removeprefix("sha256:")
                out.addfile(_info(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
            for name, data in files.items():
                out.addfile(_info(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
        os.replace(tmp, dest)
    except OSError as exc:
        raise BundleError(f"cannot write {dest}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return ImageResult(dest, reference, manifest_digest, dest.stat().st_size)
