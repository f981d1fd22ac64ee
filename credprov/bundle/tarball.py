"""A bundle tarball read as untrusted input: checked whole before any of it is used.

``credprov bundle --from-tarball`` turns a tarball made elsewhere (a CI artefact, a
download) into an installer image, and :func:`credprov.bundle.build.unpack` lays one out;
both read it through :func:`open_bundle`, which refuses, with one line naming the file:

* a path that is not a regular file (a FIFO would block, a device never ends), or not gzip;
* a truncated or corrupt stream. gzip's CRC and length are checked by reading the stream to
  its end, and the tar must end with its two zero blocks: Python's :mod:`tarfile` stops
  quietly at a missing or broken header, which is how a truncated bundle used to become an
  image of 9 of its 86 entries with exit 0;
* more than :attr:`Limits.entries` members or :attr:`Limits.unpacked` bytes once
  decompressed (a gzip bomb stops at the limit instead of filling the disk);
* members that are not regular files, directories or symlinks (hard links, devices, FIFOs),
  names outside ``credprov-plugins/`` (absolute, ``..``, another top directory), a name
  given twice, and symlinks whose target leaves ``credprov-plugins/``;
* a bundle without ``install``, ``runtime/credprov-plugins``, a well-formed ``BUILD_ID``,
  ``PLUGINS`` (plugin names, one per line) and ``REQUIREMENTS`` naming ``linux/<arch>`` (the
  architecture the image is made for; it must agree with the file name's ``-linux-<arch>``
  and with the runtime executable's ELF machine);
* a ``MANIFEST`` (``sha256  path`` for every regular file of ``runtime/``, paths relative to
  ``runtime/``, as ``sha256sum -c`` checks an installed runtime) that does not match, when
  the bundle has one (older bundles do not).

The gzip stream is decompressed once, into an unnamed temporary file, so the tar can be
checked in full and then copied member by member without a second decompression and
without holding a member in memory.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import posixpath
import re
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from credprov.base import elf
from credprov.base.fileio import file_kind
from credprov.bundle.layout import ARCHES, BUNDLE_DIR, BundleError

__all__ = ["BundleTarball", "Limits", "open_bundle"]

_BLOCK = tarfile.BLOCKSIZE
_CHUNK = 1 << 20
_BUILD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,127}-[0-9a-f]{12}")
_PLUGIN = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_REQUIREMENTS = re.compile(r"linux/([a-z0-9]+)[;\s]")
_NAME_ARCH = re.compile(r"-linux-([a-z0-9]+)\.tar\.gz$")
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64}) [ *](.+)")
_METADATA = ("BUILD_ID", "PLUGINS", "REQUIREMENTS", "MANIFEST")
_RUNTIME = f"{BUNDLE_DIR}/runtime/"


@dataclass(frozen=True)
class Limits:
    """What one bundle may hold; a bundle of every plugin has about 90 entries and 90 MB."""

    entries: int = 20_000
    unpacked: int = 1 << 30
    #: Each of ``BUILD_ID``, ``PLUGINS``, ``REQUIREMENTS`` and ``MANIFEST``.
    metadata: int = 1 << 20


@dataclass
class BundleTarball:
    """A checked bundle: its members in file order and what it says about itself.

    Members' contents are read with :meth:`extractfile` from the private decompressed copy,
    valid until the :func:`open_bundle` context ends.
    """

    path: Path
    arch: str
    build_id: str
    plugins: tuple[str, ...]
    members: list[tarfile.TarInfo]
    _tar: tarfile.TarFile = field(repr=False)

    def extractfile(self, member: tarfile.TarInfo) -> IO[bytes]:
        """The contents of the regular file ``member`` (a stream, read it in chunks)."""
        fh = self._tar.extractfile(member)
        if fh is None:
            raise BundleError(f"bundle {self.path}: {member.name} is not a regular file")
        return fh

    def extract(self, dest: Path) -> Path:
        """Unpack the bundle into ``dest`` (as ``tar xzf`` would), returning
        ``dest/credprov-plugins``."""
        try:
            self._tar.extractall(dest, members=self.members, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise BundleError(f"cannot unpack bundle {self.path} into {dest}: {exc}") from None
        return dest / BUNDLE_DIR


def _error(path: Path, what: str) -> BundleError:
    return BundleError(f"bundle {path}: {what}")


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading, refusing (without blocking on) anything but a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _error(path, exc.strerror or "cannot open") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _error(path, f"not a regular file ({file_kind(st.st_mode)})")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _decompress(path: Path, out: IO[bytes], limit: int) -> None:
    """The whole gzip stream of ``path`` into ``out``: at most ``limit`` bytes, CRC checked."""
    with _open_regular(path) as raw:
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
                total = 0
                while chunk := gz.read(_CHUNK):
                    total += len(chunk)
                    if total > limit:
                        raise _error(path, f"unpacks to more than {limit} bytes")
                    _write(path, out, chunk)
        except gzip.BadGzipFile as exc:
            text = str(exc)
            if text.startswith("Not a gzipped file"):
                raise _error(path, "not a gzip file (want a .tar.gz bundle)") from None
            raise _error(path, f"corrupt gzip stream ({text})") from None
        except EOFError:
            raise _error(path, "truncated (the gzip stream ends early)") from None
        except zlib.error as exc:
            raise _error(path, f"corrupt gzip stream ({exc})") from None
        except OSError as exc:
            raise _error(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        out.flush()
    except OSError as exc:
        raise BundleError(f"cannot unpack bundle {path}: {exc.strerror or exc}") from None


def _write(path: Path, out: IO[bytes], data: bytes) -> None:
    try:
        out.write(data)
    except OSError as exc:
        raise BundleError(f"cannot unpack bundle {path}: {exc.strerror or exc}") from None


def _check_name(path: Path, member: tarfile.TarInfo) -> None:
    name = member.name
    parts = name.split("/")
    if parts[0] != BUNDLE_DIR or any(part in ("", ".", "..") for part in parts) or len(name) > 4096:
        raise _error(path, f"entry {name!r} is outside {BUNDLE_DIR}/: not a credprov bundle")
    if not (member.isreg() or member.isdir() or member.issym()):
        kind = "a hard link" if member.islnk() else "a device, FIFO or other special file"
        raise _error(path, f"{name} is {kind}: a bundle holds only files, directories and symlinks")
    if member.issym():
        target = member.linkname
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
        if target.startswith("/") or not (
            resolved == BUNDLE_DIR or resolved.startswith(BUNDLE_DIR + "/")
        ):
            raise _error(path, f"symlink {name} points outside {BUNDLE_DIR}/ ({target!r})")


def _sha256(fh: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := fh.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _check_manifest(path: Path, text: str, files: dict[str, str]) -> None:
    """``MANIFEST`` against the sha256 of every regular file of ``runtime/`` (``files``:
    path relative to ``runtime/`` → hex digest)."""
    listed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _MANIFEST_LINE.fullmatch(line)
        if match is None:
            raise _error(path, f"MANIFEST line {number} is not 'sha256  path'")
        name = match.group(2).removeprefix("./")
        listed[name.removeprefix("runtime/") if name not in files else name] = match.group(1)
    for name in sorted(files.keys() | listed.keys()):
        if name not in listed:
            raise _error(path, f"runtime/{name} is not in MANIFEST")
        if name not in files:
            raise _error(path, f"MANIFEST lists runtime/{name}, which the bundle lacks")
        if files[name] != listed[name]:
            raise _error(path, f"runtime/{name} does not match its MANIFEST sha256")


def _text(path: Path, name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _error(path, f"{name} is not UTF-8 text") from None


def _scan(path: Path, tar: tarfile.TarFile, limits: Limits) -> BundleTarball:
    members: list[tarfile.TarInfo] = []
    seen: set[str] = set()
    metadata: dict[str, str] = {}
    runtime_files: dict[str, str] = {}
    heads: dict[str, bytes] = {}  # the first bytes of runtime/'s top-level files
    runtime_links: dict[str, str] = {}  # symlinks in runtime/: name → normalised target
    while True:
        try:
            member = tar.next()
        except tarfile.TarError as exc:
            raise _error(path, f"corrupt tar ({exc})") from None
        if member is None:
            break
        if len(members) >= limits.entries:
            raise _error(path, f"more than {limits.entries} entries")
        _check_name(path, member)
        if member.name in seen:
            raise _error(path, f"{member.name} appears twice")
        seen.add(member.name)
        members.append(member)
        short = member.name.removeprefix(BUNDLE_DIR + "/")
        if short in _METADATA:
            if not member.isreg() or member.size > limits.metadata:
                raise _error(path, f"{short} is not a regular file of at most "
                             f"{limits.metadata} bytes")  # fmt: skip
            metadata[short] = _text(path, short, tar.extractfile(member).read())  # type: ignore[union-attr]
        elif member.isreg() and member.name.startswith(_RUNTIME):
            fh = tar.extractfile(member)
            assert fh is not None
            if "/" not in short.removeprefix("runtime/"):  # the executable is one of these
                heads[short] = fh.read(64)
                fh.seek(0)
            runtime_files[member.name.removeprefix(_RUNTIME)] = _sha256(fh)
        elif member.issym() and member.name.startswith(_RUNTIME):
            runtime_links[member.name] = posixpath.normpath(
                posixpath.join(posixpath.dirname(member.name), member.linkname)
            )
    # tarfile ends quietly at a header it cannot read: a complete archive ends with zeros.
    fileobj = tar.fileobj
    assert fileobj is not None
    fileobj.seek(tar.offset)
    if fileobj.read(2 * _BLOCK) != bytes(2 * _BLOCK):
        raise _error(
            path, f"truncated or corrupt tar: it stops after {len(members)} entries without "
            "its end-of-archive blocks",
        )  # fmt: skip
    # A symlink in runtime/ (runtime/credprov-plugins) stands for the file it names.
    for name, target in runtime_links.items():
        rel = target.removeprefix(_RUNTIME)
        if not target.startswith(_RUNTIME) or rel not in runtime_files:
            raise _error(path, f"symlink {name} does not name a file of runtime/")
        runtime_files[name.removeprefix(_RUNTIME)] = runtime_files[rel]
        heads.setdefault(name.removeprefix(BUNDLE_DIR + "/"), heads.get(f"runtime/{rel}", b""))
    runtime_head = heads.get("runtime/credprov-plugins", b"")
    for required in ("install", "runtime/credprov-plugins", "BUILD_ID", "PLUGINS",
                     "REQUIREMENTS"):  # fmt: skip
        if f"{BUNDLE_DIR}/{required}" not in seen:
            raise _error(path, f"no {BUNDLE_DIR}/{required}: not a complete credprov bundle")
    build_id = metadata["BUILD_ID"].removesuffix("\n")
    if not _BUILD_ID.fullmatch(build_id):
        raise _error(path, "BUILD_ID is not '<version>-<12 hex digits>'")
    plugins = tuple(metadata["PLUGINS"].splitlines())
    bad = [name for name in plugins if not _PLUGIN.fullmatch(name)]
    if not plugins or bad or len(set(plugins)) != len(plugins):
        raise _error(path, "PLUGINS is not a list of distinct plugin names, one per line")
    arch = _arch(path, metadata["REQUIREMENTS"], runtime_head)
    if "MANIFEST" in metadata:
        _check_manifest(path, metadata["MANIFEST"], runtime_files)
    return BundleTarball(path, arch, build_id, plugins, members, tar)


def _arch(path: Path, requirements: str, runtime_head: bytes) -> str:
    match = _REQUIREMENTS.match(requirements)
    if match is None or match.group(1) not in ARCHES:
        raise _error(
            path, f"REQUIREMENTS does not start with linux/<arch> ({'/'.join(sorted(ARCHES))})"
        )
    arch = match.group(1)
    named = _NAME_ARCH.search(path.name)
    if named is not None and named.group(1) != arch:
        raise _error(path, f"named for linux/{named.group(1)} but built for linux/{arch}")
    machine = elf.arch_of(runtime_head)
    if machine is not None and machine != arch:
        raise _error(
            path, f"REQUIREMENTS says linux/{arch} but its runtime is an {machine} program"
        )
    return arch


@contextlib.contextmanager
def open_bundle(
    tarball: str | os.PathLike[str],
    limits: Limits | None = None,
    *,
    tmp_dir: str | os.PathLike[str] | None = None,
) -> Iterator[BundleTarball]:
    """Check the bundle tarball ``tarball`` whole (see the module docstring) and yield it.

    Args:
        tmp_dir: where the decompressed copy is kept while the context lasts (an unnamed
            file: nothing is left behind, also when the process is killed).

    Raises:
        BundleError: one line naming the file and what is wrong with it.
    """
    path = Path(tarball)
    try:
        plain = tempfile.TemporaryFile(dir=tmp_dir)  # noqa: SIM115 (the with below)
    except OSError as exc:
        raise BundleError(f"cannot unpack bundle {path}: {exc.strerror or exc}") from None
    with plain:
        _decompress(path, plain, (limits or Limits()).unpacked)
        plain.seek(0)
        try:
            tar = tarfile.open(fileobj=plain, mode="r:")  # noqa: SIM115 (the with below)
        except tarfile.TarError:
            raise _error(path, "not a tar archive inside the gzip stream") from None
        with tar:
            yield _scan(path, tar, limits or Limits())
