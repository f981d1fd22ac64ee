"""The installer image: an OCI image archive written directly, no image builder needed.

``credprov bundle --oci-archive FILE`` turns bundle tarballs into an image ``FROM scratch``:
a static busybox (Debian's ``busybox-static``) with links for the applets the scripts use,
``/credprov-plugins/`` unpacked, and ``/credprov-plugins/image-entrypoint`` as the command
(it installs, or with ``doctor ARGS`` runs the doctor). The bundle's doctor is also
``/bin/doctor`` on ``PATH``, so ``kubectl debug node/NAME --image=IMAGE -- doctor --node-root
/host`` (the container's command) finds it. The runtime it runs on is linked against glibc:
the image carries the dynamic loader and the system libraries the runtime names and does
not bring (glibc, ``libz``; about 3 MB). The installer itself never runs the runtime in the
image (``install --no-verify``).

**Architectures.** Each bundle says what it was built for (``REQUIREMENTS``: ``linux/<arch>``).
Busybox and the system libraries of that architecture come from a :class:`Sysroot`: this
machine's ``/`` for its own architecture (busybox from ``--busybox``), or a root directory of
the other architecture (``--sysroot arm64=DIR``: e.g. ``debootstrap --arch=arm64
--include=busybox-static``), read as ``openat2(RESOLVE_IN_ROOT)`` would
(:class:`credprov.base.rootfs.NodeRoot`: its absolute links resolve inside it). Every ELF
file taken from a sysroot must be of the layer's architecture (``e_machine``), and its
glibc at least the one the bundle was built against. One bundle gives one image manifest,
named by ``index.json`` as before; several (one per architecture) give an image index
(``application/vnd.oci.image.index.v1+json``) with one manifest per ``platform``, which
``index.json`` names: ``ctr images import --all-platforms``, ``skopeo copy --all`` and a
registry take it as one multi-architecture image.

**Memory.** Nothing is held whole: each bundle is checked and decompressed once into an
unnamed temporary file (:mod:`credprov.bundle.tarball`), each layer is written as a stream
through the tar writer, a SHA-256 of the tar (the ``diff_id``), gzip and a SHA-256 of the
gzip (the blob digest) into another unnamed temporary file, and copied from there into the
archive; both temporary files live next to the archive. Only a runtime ELF file is read
whole (at most 64 MiB, to find the libraries it needs). Peak memory no longer grows with the
bundle (README, "Put it on your nodes", has the figures).

The archive is an OCI image layout in a tar (``oci-layout``, ``index.json``,
``blobs/sha256/...``), which ``ctr images import`` and ``podman load`` read; the reference
name is in ``index.json`` both as ``org.opencontainers.image.ref.name`` and containerd's
``io.containerd.image.name``. Written by hand (JSON and tar) rather than with buildah or
umoci: users then need neither, the output is reproducible (fixed mtimes, sorted entries,
gzip without a timestamp), and the format is small and fully specified by the OCI image
spec.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from credprov.base import elf
from credprov.base.arch import by_go
from credprov.base.rootfs import NodeRoot
from credprov.bundle._multicall import TOOLS
from credprov.bundle.build import _temp_next_to, newest_glibc
from credprov.bundle.layout import BUNDLE_DIR, BundleError, go_arch
from credprov.bundle.tarball import BundleTarball, Limits, open_bundle
from credprov.version import __version__

DEFAULT_BUSYBOX = "/bin/busybox"
IMAGE_NAME = "localhost/credprov-plugins-installer"

#: busybox applets the install and entrypoint scripts call, linked in ``/bin``.
APPLETS = (
    "sh", "basename", "cat", "chroot", "cmp", "cp", "chmod", "cut", "date", "dirname", "echo",
    "grep", "head", "ln", "ls", "mkdir", "mktemp", "mv", "printf", "pwd", "readlink", "rm",
    "sed", "sha256sum", "sleep", "sort", "stat", "tail", "test", "[", "touch", "tr", "wc",
)  # fmt: skip

#: root, and the unprivileged user the doctor may run a node's plugins as (glibc reads these
#: without NSS modules: its ``files`` backend is built in since 2.34).
_USERS = {
    "etc/passwd": "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
}

_EPOCH = 1_700_000_000
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


@dataclass(frozen=True)
class ImageResult:
    """An installer image written: the archive, its reference, digests and size."""

    archive: Path
    reference: str
    #: What ``index.json`` names: the image manifest, or for several platforms the index.
    manifest_digest: str
    size: int
    #: ``linux/<arch>`` of each manifest, sorted.
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sysroot:
    """Where one architecture's busybox and system libraries come from: the directory
    ``root`` (``/``: this machine), read as ``openat2(RESOLVE_IN_ROOT)`` would, and the static
    ``busybox`` at a path inside it."""

    root: str = "/"
    busybox: str = DEFAULT_BUSYBOX

    @classmethod
    def host(cls, busybox: str | os.PathLike[str] = DEFAULT_BUSYBOX) -> Sysroot:
        """This machine, with the busybox at ``busybox`` (a path here, made absolute)."""
        return cls("/", os.path.abspath(busybox))

    @property
    def is_host(self) -> bool:
        """Whether the root is this machine's ``/``."""
        return os.path.abspath(self.root) == "/"

    def display(self, path: str) -> str:
        """``path`` as messages show it: with the root named unless it is ``/``."""
        return path if self.is_host else f"{path} (in {self.root})"


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
    info = elf.parse(data)
    return info is not None and info.interpreter is None


def _read_busybox(sysroot: Sysroot, arch: str) -> bytes:
    where = sysroot.display(sysroot.busybox)
    try:
        data = NodeRoot(sysroot.root).read(sysroot.busybox, _MAX_LIBRARY)
    except OSError as exc:
        raise BundleError(
            f"cannot read {where}: {exc.strerror} (install Debian's busybox-static)"
        ) from None
    if not _is_static(data):
        raise BundleError(f"{where} is not a static executable (install busybox-static)")
    found = elf.arch_of(data)
    if found != arch:
        raise BundleError(
            f"{where} is an {found} program and the bundle is for linux/{arch}: give that "
            f"architecture a sysroot of its own (--sysroot {arch}=DIR, a root with "
            "busybox-static and glibc)"
        )
    return data


class _Digesting:
    """A write-only stream that hashes and counts what passes through it to ``out``."""

    def __init__(self, out: IO[bytes] | gzip.GzipFile) -> None:
        self._out = out
        self._sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self._sha.update(data)
        self.size += len(data)
        self._out.write(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self._out.flush()

    @property
    def digest(self) -> str:
        return "sha256:" + self._sha.hexdigest()


@dataclass(frozen=True)
class Layer:
    """A layer written to a file: the ``diff_id`` (SHA-256 of the tar), the digest and size
    of the gzip blob."""

    diff_id: str
    digest: str
    size: int


def write_layer(bundle: BundleTarball, sysroot: Sysroot, out: IO[bytes]) -> Layer:
    """The image's one layer for ``bundle`` (busybox, its applet links, the bundle,
    ``/bin/doctor`` and the system libraries the bundle's runtime needs, from ``sysroot``),
    gzipped into ``out`` as a stream.

    Raises:
        BundleError: busybox or a library missing or of another architecture, a glibc
            older than the bundle's.
    """
    busybox = _read_busybox(sysroot, bundle.arch)
    blob = _Digesting(out)
    with gzip.GzipFile(filename="", fileobj=blob, mode="wb", mtime=0, compresslevel=6) as gz:
        plain = _Digesting(gz)
        # A write-only stream: typeshed's tarfile wants a whole file object.
        with tarfile.open(fileobj=plain, mode="w", format=tarfile.PAX_FORMAT) as layer:  # type: ignore[call-overload]
            _add_base(layer, busybox)
            runtime = _copy_bundle(bundle, layer)
            dirs = _library_dirs(bundle.arch)
            _add_files(layer, system_libraries(runtime, dirs, root=sysroot.root, arch=bundle.arch))
    return Layer(plain.digest, blob.digest, blob.size)


def _add_base(layer: tarfile.TarFile, busybox: bytes) -> None:
    layer.addfile(_info("bin", tarfile.DIRTYPE, 0o755))
    layer.addfile(_info("bin/busybox", tarfile.REGTYPE, 0o755, len(busybox)), io.BytesIO(busybox))
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


@dataclass
class RuntimeNeeds:
    """What the bundle's runtime asks of the system: the file names it brings itself, the
    loader and libraries its ELF files name, the newest glibc symbol version.

    The executable (the frozen interpreter, the one file with a loader) gets its libraries
    from the system: glibc's; the extension modules find the bundle's own through their
    ``$ORIGIN`` run path, and ``libz.so.1`` from the system (see ``REQUIREMENTS``)."""

    provided: set[str] = field(default_factory=set)
    interpreters: set[str] = field(default_factory=set)
    #: Needed by the executable: always the system's.
    system_needed: set[str] = field(default_factory=set)
    #: Needed by the bundle's shared objects: the system's unless the bundle has them.
    needed: set[str] = field(default_factory=set)
    glibc: tuple[int, ...] = (2, 0)

    def add(self, name: str, data: bytes) -> None:
        """Account for one file of the bundle (``name``, its bytes ``data``)."""
        self.provided.add(name.rsplit("/", 1)[-1])
        info = elf.parse(data)
        if info is None:
            return
        if info.interpreter:
            self.interpreters.add(info.interpreter)
            self.system_needed.update(info.needed)
        else:
            self.needed.update(info.needed)
        for need in info.version_needs:
            self.glibc = max(self.glibc, elf.glibc_version(need.version) or (2, 0))


def _layer_member(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """A fresh entry for a bundle member: root-owned, fixed mtime, no set-id bits and none
    of the tarball's own PAX headers."""
    if member.isdir():
        mode = 0o755
    elif member.issym():
        mode = 0o777
    else:
        mode = 0o755 if member.mode & 0o111 else 0o644
    return _info(member.name, member.type, mode, member.size if member.isreg() else 0,
                 member.linkname if member.issym() else "")  # fmt: skip


def _copy_bundle(bundle: BundleTarball, layer: tarfile.TarFile) -> RuntimeNeeds:
    """Every member of the (checked) bundle into the layer, streamed; what its runtime
    needs from the system (its ELF files are read whole, at most 64 MiB each)."""
    runtime = RuntimeNeeds()
    for member in bundle.members:
        info = _layer_member(member)
        if not member.isreg():
            layer.addfile(info)
            continue
        fh = bundle.extractfile(member)
        if member.name.startswith(f"{BUNDLE_DIR}/runtime/"):
            head = fh.read(4)
            if head == elf.MAGIC:
                if member.size > _MAX_LIBRARY:
                    raise BundleError(f"bundle {bundle.path}: {member.name} is an ELF file "
                                      "over 64 MiB")  # fmt: skip
                data = head + fh.read()
                runtime.add(member.name, data)
                layer.addfile(info, io.BytesIO(data))
                continue
            fh.seek(0)
        layer.addfile(info, fh)
    return runtime


#: No system library is this big (glibc's libc.so.6 is about 2 MB).
_MAX_LIBRARY = 64 << 20


def _library_dirs(arch: str | None = None) -> tuple[str, ...]:
    """Where the loader of ``arch`` finds system libraries without ``ld.so.cache``: the
    multiarch directories first (Debian, Ubuntu), then ``lib64`` (Fedora, RHEL) and ``lib``.
    A library is put at the same path in the image, a directory that loader searches."""
    known = by_go(arch or go_arch())
    # Debian's multiarch triplet (/usr/lib/x86_64-linux-gnu) of a bundled architecture
    triplet = f"{known.machine}-linux-gnu" if known is not None and known.bundled else ""
    multiarch = (f"/lib/{triplet}", f"/usr/lib/{triplet}") if triplet else ()
    return (*multiarch, "/lib64", "/usr/lib64", "/lib", "/usr/lib")


def system_libraries(
    runtime: RuntimeNeeds,
    dirs: Sequence[str],
    *,
    root: str = "/",
    arch: str | None = None,
) -> dict[str, bytes]:
    """Image path → contents of the dynamic loader and every library the runtime needs and
    does not bring, with their own needs, found in ``dirs`` inside ``root`` (``/``: this
    machine). With ``arch``, the loader must be of that architecture and libraries of
    another are passed over, as the loader passes them over.

    Raises:
        BundleError: a library ``root`` does not have, or a glibc older than the one the
            bundle was built against (make the image where the bundle was built, or give a
            sysroot with that glibc).
    """
    node = NodeRoot(root)
    here = " here" if node.is_host else f" in {node.root}"
    advice = (
        "make the image where the bundle was built"
        if node.is_host
        else "give a sysroot with the glibc the bundle was built against"
    )
    files: dict[str, bytes] = {}
    have: set[str] = set()
    for interpreter in sorted(runtime.interpreters):
        try:
            data = node.read(interpreter, _MAX_LIBRARY)
        except OSError as exc:
            machine_name = "this machine" if node.is_host else node.root
            raise BundleError(
                f"the bundle's runtime needs the loader {interpreter}, which {machine_name} "
                f"cannot give ({exc.strerror}): {advice}"
            ) from None
        found = elf.arch_of(data)
        if arch is not None and found != arch:
            raise BundleError(f"the loader {node.display(interpreter)} is an {found} program "
                              f"and the bundle is for linux/{arch}: {advice}")  # fmt: skip
        files[interpreter.lstrip("/")] = data
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
                data = node.read(path, _MAX_LIBRARY)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise BundleError(f"cannot read {node.display(path)}: {exc.strerror}") from None
            if arch is not None and elf.arch_of(data) not in (None, arch):
                continue  # another architecture's library (a multilib directory)
            files[path.lstrip("/")] = data
            info = elf.parse(data)
            wanted.extend(sorted(set(info.needed if info else ()) - have))
            if soname == "libc.so.6" and newest_glibc(data) < runtime.glibc:
                raise BundleError(
                    f"the bundle needs glibc >= {'.'.join(map(str, runtime.glibc))} and "
                    f"{node.display(path)} is glibc {'.'.join(map(str, newest_glibc(data)))}: "
                    f"{advice}"
                )
            break
        else:
            raise BundleError(
                f"the bundle's runtime needs {soname}, which is in none of "
                f"{', '.join(dirs)}{here}: {advice}"
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


@dataclass(frozen=True)
class _Blob:
    size: int
    data: bytes = b""
    #: A layer: its gzip in an unnamed temporary file.
    file: IO[bytes] | None = None


def _json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _add_json(blobs: dict[str, _Blob], value: object) -> tuple[str, int]:
    data = _json(value)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = _Blob(len(data), data)
    return digest, len(data)


def _image_manifest(blobs: dict[str, _Blob], arch: str, layer: Layer) -> dict[str, Any]:
    """The config and manifest of ``arch``'s image into ``blobs``; the manifest's
    descriptor, with its platform."""
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {
            "Env": ["PATH=/bin"],
            "Entrypoint": [f"/{BUNDLE_DIR}/image-entrypoint"],
            "WorkingDir": "/",
            "Labels": {"org.opencontainers.image.version": __version__},
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
        "history": [{"created_by": "credprov bundle --oci-archive"}],
    }
    config_digest, config_size = _add_json(blobs, config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": MEDIA_LAYER, "digest": layer.digest, "size": layer.size}],
    }
    digest, size = _add_json(blobs, manifest)
    return {
        "mediaType": MEDIA_MANIFEST,
        "digest": digest,
        "size": size,
        "platform": {"architecture": arch, "os": "linux"},
    }


def _destination(archive: str | os.PathLike[str]) -> Path:
    dest = Path(archive)
    if dest.name in ("", ".", "..") or dest.is_dir():
        raise BundleError(f"cannot write the image to {dest}: a directory (want a file name)")
    if not dest.parent.is_dir():
        raise BundleError(f"cannot write {dest}: no directory {dest.parent}")
    return dest


def _sysroots(
    arches: Sequence[str],
    busybox: str | os.PathLike[str],
    sysroots: Mapping[str, str | os.PathLike[str]],
) -> dict[str, Sysroot]:
    """The sysroot of each architecture: the one given, else this machine for its own."""
    extra = sorted(set(sysroots) - set(arches))
    if extra:
        raise BundleError(f"a sysroot for linux/{extra[0]}, and no bundle for linux/{extra[0]}")
    chosen: dict[str, Sysroot] = {}
    for arch in arches:
        if arch in sysroots:
            root = os.path.abspath(sysroots[arch])
            if not os.path.isdir(root):
                raise BundleError(f"sysroot {root} for linux/{arch} is not a directory")
            chosen[arch] = Sysroot(root)
        elif arch == go_arch():
            chosen[arch] = Sysroot.host(busybox)
        else:
            raise BundleError(
                f"no busybox and system libraries for linux/{arch} on this linux/{go_arch()} "
                f"machine: give a sysroot (--sysroot {arch}=DIR, a root with busybox-static "
                f"and glibc, e.g. debootstrap --arch={arch} --include=busybox-static)"
            )
    return chosen


def write_oci_archive(
    tarballs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    archive: str | os.PathLike[str],
    *,
    busybox: str | os.PathLike[str] = DEFAULT_BUSYBOX,
    sysroots: Mapping[str, str | os.PathLike[str]] | None = None,
    reference: str | None = None,
    limits: Limits | None = None,
) -> ImageResult:
    """Write the installer image of the bundle ``tarballs`` (one per architecture) as an
    OCI archive at ``archive``.

    Args:
        busybox: this machine's static busybox, for a bundle of its own architecture.
        sysroots: architecture → a root directory with that architecture's busybox
            (``/bin/busybox``) and glibc; needed for every other architecture.
        limits: what each bundle may hold (:class:`credprov.bundle.tarball.Limits`).

    Raises:
        BundleError: a bundle that is not whole and well formed, two bundles of one
            architecture, a missing or wrong-architecture busybox or library, or an
            unwritable destination.
    """
    reference = reference or f"{IMAGE_NAME}:{__version__}"
    paths = [tarballs] if isinstance(tarballs, (str, os.PathLike)) else list(tarballs)
    if not paths:
        raise BundleError("no bundle to make an image of")
    dest = _destination(archive)
    try:
        with contextlib.ExitStack() as stack:
            bundles: dict[str, BundleTarball] = {}
            for path in paths:
                bundle = stack.enter_context(
                    open_bundle(path, limits or Limits(), tmp_dir=dest.parent)
                )
                if bundle.arch in bundles:
                    raise BundleError(f"two bundles for linux/{bundle.arch}: "
                                      f"{bundles[bundle.arch].path} and {path}")  # fmt: skip
                bundles[bundle.arch] = bundle
            arches = sorted(bundles)
            roots = _sysroots(arches, busybox, sysroots or {})
            blobs: dict[str, _Blob] = {}
            manifests = []
            for arch in arches:
                layer_file = stack.enter_context(tempfile.TemporaryFile(dir=dest.parent))
                layer = write_layer(bundles[arch], roots[arch], layer_file)
                blobs[layer.digest] = _Blob(layer.size, file=layer_file)
                manifests.append(_image_manifest(blobs, arch, layer))
            if len(manifests) == 1:
                top = manifests[0]
            else:
                index = {"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": manifests}
                digest, size = _add_json(blobs, index)
                top = {"mediaType": MEDIA_INDEX, "digest": digest, "size": size}
            top["annotations"] = {
                "org.opencontainers.image.ref.name": reference,
                "io.containerd.image.name": reference,
            }
            _write_layout(dest, blobs, {"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                                        "manifests": [top]})  # fmt: skip
    except OSError as exc:
        raise BundleError(f"cannot write {dest}: {exc.strerror or exc}") from None
    platforms = tuple(f"linux/{arch}" for arch in arches)
    return ImageResult(dest, reference, top["digest"], dest.stat().st_size, platforms)


def _write_layout(dest: Path, blobs: dict[str, _Blob], index: object) -> None:
    """The OCI image layout as a tar at ``dest``, written atomically; layers are copied
    from their files."""
    fd, tmp = _temp_next_to(dest)
    try:
        with open(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w",
                                                 format=tarfile.PAX_FORMAT) as out:  # fmt: skip
            out.addfile(_info("blobs", tarfile.DIRTYPE, 0o755))
            out.addfile(_info("blobs/sha256", tarfile.DIRTYPE, 0o755))
            for digest, blob in sorted(blobs.items()):
                info = _info("blobs/sha256/" + digest.removeprefix("sha256:"), tarfile.REGTYPE,
                             0o644, blob.size)  # fmt: skip
                if blob.file is not None:
                    blob.file.seek(0)
                    out.addfile(info, blob.file)
                else:
                    out.addfile(info, io.BytesIO(blob.data))
            files = {
                "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
                "index.json": _json(index),
            }
            for name, data in files.items():
                out.addfile(_info(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
