"""The installer image: an OCI image archive written directly, no image builder needed.

``credprov bundle --oci-archive FILE`` turns a bundle tarball into a one-layer image
``FROM scratch``: a static busybox (Debian's ``busybox-static``, copied from
``/bin/busybox``) with links for the applets the scripts use, ``/credprov-plugins/``
unpacked, and ``/credprov-plugins/image-entrypoint`` as the command (it installs, or with
``doctor ARGS`` runs the doctor). The bundle's doctor is also ``/bin/doctor`` on ``PATH``,
so ``kubectl debug node/NAME --image=IMAGE -- doctor --root /host`` (the container's
command) finds it. The runtime it runs on is linked against glibc: the image carries the
dynamic loader and the system libraries the runtime names and does not bring (glibc,
``libz``; about 3 MB), copied from the machine that makes the image, which must have the
glibc the bundle was built against (checked). The installer itself never runs the runtime
in the image (``install --no-verify``). The archive is an OCI
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
import stat
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from credprov import __version__
from credprov.bundle._elf import dynamic_info
from credprov.bundle._multicall import TOOLS
from credprov.bundle.build import BUNDLE_DIR, BundleError, go_arch, newest_glibc

DEFAULT_BUSYBOX = "/bin/busybox"
IMAGE_NAME = "localhost/credprov-plugins-installer"

#: busybox applets the install and entrypoint scripts call, linked in ``/bin``.
APPLETS = (
    "sh", "basename", "cat", "chroot", "cmp", "cp", "chmod", "cut", "dirname", "echo", "grep",
    "head", "ln", "ls", "mkdir", "mktemp", "mv", "printf", "pwd", "readlink", "rm", "sed",
    "sha256sum", "sort", "stat", "tail", "test", "[", "tr", "wc",
)  # fmt: skip

#: root, and the unprivileged user the doctor may run a node's plugins as (glibc reads these
#: without NSS modules: its ``files`` backend is built in since 2.34).
_USERS = {
    "etc/passwd": "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
}

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
    info = dynamic_info(data)
    return info is not None and info.interpreter is None


def build_layer(tarball: Path, busybox: Path, library_dirs: Sequence[str] | None = None) -> bytes:
    """The image's one layer (uncompressed tar): busybox, its applet links, the bundle,
    ``/bin/doctor`` and the system libraries the bundle's runtime needs (from
    ``library_dirs``; default: where this machine keeps them)."""
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
        # On PATH as commands (`kubectl debug node/X --image=IMAGE -- doctor ...` replaces
        # the entrypoint): the installer, and the bundle's tools.
        commands = {"credprov-install": "image-entrypoint", **{tool: tool for tool in TOOLS}}
        for command, target in commands.items():
            link = f"../{BUNDLE_DIR}/{target}"
            layer.addfile(_info(f"bin/{command}", tarfile.SYMTYPE, 0o777, link=link))
        layer.addfile(_info("tmp", tarfile.DIRTYPE, 0o1777))
        layer.addfile(_info("etc", tarfile.DIRTYPE, 0o755))
        for name, text in _USERS.items():
            data = text.encode()
            layer.addfile(_info(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
        try:
            runtime = _copy_bundle(tarball, layer)
        except (OSError, tarfile.TarError) as exc:
            raise BundleError(f"cannot read bundle {tarball}: {exc}") from None
        dirs = library_dirs if library_dirs is not None else _library_dirs()
        _add_files(layer, system_libraries(runtime, dirs))
    return out.getvalue()


@dataclass
class RuntimeNeeds:
    """What the bundle's runtime asks of the system: the file names it brings itself, the
    loader and libraries its ELF files name, the newest glibc symbol version.

    The executable (PyInstaller's bootloader, the one file with a loader) gets its libraries
    from the system before it can point anything at ``_internal/``: its ``libz.so.1`` comes
    from the system although the bundle has one (see ``REQUIREMENTS``)."""

    provided: set[str] = field(default_factory=set)
    interpreters: set[str] = field(default_factory=set)
    #: Needed by the executable: always the system's.
    system_needed: set[str] = field(default_factory=set)
    #: Needed by the bundle's shared objects: the system's unless the bundle has them.
    needed: set[str] = field(default_factory=set)
    glibc: tuple[int, ...] = (2, 0)

    def add(self, name: str, data: bytes) -> None:
        self.provided.add(name.rsplit("/", 1)[-1])
        info = dynamic_info(data)
        if info is None:
            return
        if info.interpreter:
            self.interpreters.add(info.interpreter)
            self.system_needed.update(info.needed)
        else:
            self.needed.update(info.needed)
        self.glibc = max(self.glibc, newest_glibc(data))


def _copy_bundle(tarball: Path, layer: tarfile.TarFile) -> RuntimeNeeds:
    """Every member of the bundle tarball into the layer, checked to be a bundle; what its
    runtime needs from the system."""
    runtime = RuntimeNeeds()
    with tarfile.open(tarball, "r:gz") as src:
        seen = False
        for member in src:
            top = member.name.split("/", 1)[0]
            if top != BUNDLE_DIR or ".." in member.name.split("/"):
                raise BundleError(f"{tarball} is not a credprov-plugins bundle")
            seen = seen or member.name == f"{BUNDLE_DIR}/install"
            fh = src.extractfile(member) if member.isfile() else None
            if fh is None:
                layer.addfile(member)
                continue
            data = fh.read()
            if member.name.startswith(f"{BUNDLE_DIR}/runtime/"):
                runtime.add(member.name, data)
            layer.addfile(member, io.BytesIO(data))
        if not seen:
            raise BundleError(f"{tarball} has no {BUNDLE_DIR}/install")
    return runtime


_MULTIARCH = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}

#: No system library is this big (glibc's libc.so.6 is about 2 MB).
_MAX_LIBRARY = 64 << 20


def _library_dirs(arch: str | None = None) -> tuple[str, ...]:
    """Where this machine's loader finds system libraries without ``ld.so.cache``: the
    multiarch directories first (Debian, Ubuntu), then ``lib64`` (Fedora, RHEL) and ``lib``.
    A library is put at the same path in the image, a directory that loader searches."""
    triplet = _MULTIARCH.get(arch or go_arch(), "")
    multiarch = (f"/lib/{triplet}", f"/usr/lib/{triplet}") if triplet else ()
    return (*multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib")


def _read_system_file(path: str) -> bytes:
    """A regular file of this machine (symlinks followed), bounded."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_LIBRARY:
            raise BundleError(f"{path} is not a regular file of at most 64 MiB")
        return fh.read(_MAX_LIBRARY + 1)


def system_libraries(runtime: RuntimeNeeds, dirs: Sequence[str]) -> dict[str, bytes]:
    """Image path → contents of the dynamic loader and every library the runtime needs and
    does not bring, with their own needs, copied from this machine (``dirs``).

    Raises:
        BundleError: a library this machine does not have, or a glibc older than the one
            the bundle was built against (make the image where the bundle was built).
    """
    files: dict[str, bytes] = {}
    have: set[str] = set()
    for interpreter in sorted(runtime.interpreters):
        try:
            files[interpreter.lstrip("/")] = _read_system_file(interpreter)
        except OSError as exc:
            raise BundleError(
                f"the bundle's runtime needs the loader {interpreter}, which this machine "
                f"cannot give ({exc.strerror}): make the image where the bundle was built"
            ) from None
        have.add(interpreter.rsplit("/", 1)[-1])
    wanted = sorted((runtime.system_needed | (runtime.needed - runtime.provided)) - have)
    while wanted:
        soname = wanted.pop(0)
        if soname in have:
            continue
        have.add(soname)
        for directory in dirs:
            path = f"{directory}/{soname}"
            try:
                data = _read_system_file(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise BundleError(f"cannot read {path}: {exc.strerror}") from None
            files[path.lstrip("/")] = data
            info = dynamic_info(data)
            wanted.extend(sorted(set(info.needed if info else ()) - have))
            if soname == "libc.so.6" and newest_glibc(data) < runtime.glibc:
                raise BundleError(
                    f"the bundle needs glibc >= {'.'.join(map(str, runtime.glibc))} and "
                    f"{path} is glibc {'.'.join(map(str, newest_glibc(data)))}: make the "
                    "image where the bundle was built"
                )
            break
        else:
            raise BundleError(
                f"the bundle's runtime needs {soname}, which is in none of "
                f"{', '.join(dirs)} here: make the image where the bundle was built"
            )
    return files


def _add_files(layer: tarfile.TarFile, files: dict[str, bytes]) -> None:
    """``files`` (path → contents, mode 0755) and their parent directories into ``layer``."""
    present = set(layer.getnames())
    for path in sorted(files):
        parts = path.split("/")
        for i in range(1, len(parts)):
            directory = "/".join(parts[:i])
            if directory not in present:
                layer.addfile(_info(directory, tarfile.DIRTYPE, 0o755))
                present.add(directory)
        data = files[path]
        layer.addfile(_info(path, tarfile.REGTYPE, 0o755, len(data)), io.BytesIO(data))
        present.add(path)


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
