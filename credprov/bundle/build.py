"""``credprov bundle``: freeze the plugins into one relocatable directory and a tarball.

The freezer is cx_Freeze on freeze-core's manylinux2014 CPython (:mod:`credprov.bundle.freeze`
says why: the glibc 2.17 floor, wheels chosen by platform tag, either architecture built on
any host). One runtime (``credprov-plugins``, a multicall executable dispatching on
``argv[0]``) is shared by every plugin, so a node gets one copy of Python, not six.

botocore's service models are pruned to the services the ECR plugin calls (the data
directory is 28 MB of the 98 MB otherwise).

Layout of the tarball (``credprov-plugins-<version>-linux-<arch>.tar.gz``)::

    credprov-plugins/install            POSIX sh installer (no Python on the node)
    credprov-plugins/doctor             -> runtime/credprov-plugins: ``credprov doctor``
    credprov-plugins/image-entrypoint   the installer image's command (sh)
    credprov-plugins/PLUGINS            the plugin names, one per line
    credprov-plugins/BUILD_ID           <version>-<digest of runtime/>: the versioned dir name
    credprov-plugins/REQUIREMENTS       what a node needs (glibc floor, libraries), measured,
                                        and what the bundle carries (CPython, OpenSSL, every
                                        frozen distribution with its version)
    credprov-plugins/MANIFEST           ``sha256  path`` of every regular file of runtime/
                                        (and of the credprov-plugins link), so ``install`` can
                                        tell a whole installed runtime from a damaged one
                                        (``sha256sum -c``, no Python on the node)
    credprov-plugins/runtime/           the frozen runtime: credprov_plugins (the executable),
                                        credprov-plugins (a link to it, the name everything
                                        uses) and lib/ (every module a .pyc file, no archive)
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.util
import os
import re
import shutil
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from credprov.base import elf
from credprov.bundle._multicall import PLUGINS, RUNTIME_FILE, RUNTIME_NAME, TOOLS
from credprov.bundle.freeze import FLOOR, NODE_LIBRARIES, Interpreter, freeze, pinned_distributions
from credprov.bundle.layout import BUNDLE_DIR, BundleError, go_arch
from credprov.bundle.tarball import open_bundle
from credprov.sdk import LAZY_MODULES
from credprov.version import __version__

#: Plugin name → the top-level packages it needs beyond credprov: its plugin package, read
#: from the one list of plugins (:data:`credprov.bundle._multicall.PLUGINS`).
PLUGIN_PACKAGES = {name: (entry.split(".")[0],) for name, entry in PLUGINS.items()}

#: Never part of a plugin runtime (test, build and CLI-only dependencies). The doctor
#: (:data:`TOOLS`) needs the pull manager and the node authorizer; its ``--cri`` needs gRPC,
#: which stays out (one line, exit 2: pass ``--node-images`` instead).
EXCLUDES = (
    "tkinter",
    "pytest",
    "_pytest",
    "moto",
    "hypothesis",
    "mypy",
    "setuptools",
    "pkg_resources",
    "pip",
    "grpc",
    "cri_api",
    "google.protobuf",
    "credprov.cli",
    "credprov.cri.client",
    # Standard-library modules no plugin or the doctor imports, whose extension modules
    # would bring freeze-core's libreadline, libtinfo, libuuid and SQLite (8 MB); the
    # imports that reach them are optional (uuid falls back from _uuid).
    "readline",
    "curses",
    "_curses",
    "_uuid",
    "sqlite3",
    "_sqlite3",
    "dbm",
    "lib2to3",
    "pydoc_data",
)

#: botocore service models the ECR plugin calls (private and public ECR, STS for KEP-4412
#: roles, SSO for profiles that use it); every other service's models are removed.
BOTOCORE_SERVICES = ("ecr", "ecr-public", "sts", "sso", "sso-oidc")

#: The installed files' modes are normalised; the tarball's entries carry this mtime.
_EPOCH = 1_700_000_000


@dataclass(frozen=True)
class BundleResult:
    """A bundle built (or copied from the cache): its tarball and what went into it."""

    tarball: Path
    build_id: str
    plugins: tuple[str, ...]
    size: int  # bytes of the .tar.gz
    unpacked_size: int
    glibc: str  # the newest GLIBC_x.y symbol version any bundled binary needs
    seconds: float
    cached: bool = False  # copied from a build of the same inputs, not built now


def tarball_name(arch: str | None = None) -> str:
    """``credprov-plugins-<version>-linux-<arch>.tar.gz`` (this machine's arch unless
    given).
    """
    return f"{BUNDLE_DIR}-{__version__}-linux-{arch or go_arch()}.tar.gz"


def select_plugins(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` in :data:`PLUGINS` order (all when empty); unknown names are an error."""
    unknown = [n for n in names if n not in PLUGINS]
    if unknown:
        raise BundleError(
            f"unknown plugin(s) {', '.join(unknown)}; available: {', '.join(PLUGINS)}"
        )
    return tuple(n for n in PLUGINS if not names or n in names)


def _package_root(package: str) -> str:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BundleError(f"package {package} is not installed in this environment")
    return os.path.dirname(os.path.abspath(next(iter(spec.submodule_search_locations))))


def _entry_text(plugins: Sequence[str]) -> str:
    table = {n: PLUGINS[n] for n in plugins}
    return f"from credprov.bundle._multicall import leave, main\nleave(main({table!r}))\n"


def _prune_botocore(internal: Path) -> None:
    data = internal / "botocore" / "data"
    if not data.is_dir():
        return
    for child in data.iterdir():
        if child.is_dir() and child.name not in BOTOCORE_SERVICES:
            shutil.rmtree(child)


def _excludes(plugins: Sequence[str]) -> list[str]:
    excludes = list(EXCLUDES)
    # A plugin's cloud SDK only when that plugin is bundled.
    if "ecr-credential-provider" not in plugins:
        excludes += ["boto3", "botocore", "s3transfer"]
    if "auth-provider-gcp" not in plugins:
        excludes += ["google", "google.auth"]
    if "acr-credential-provider" not in plugins:
        excludes += ["azure", "msal", "msal_extensions"]
    if not {"auth-provider-gcp", "acr-credential-provider"} & set(plugins):
        excludes += ["requests"]
    return excludes


def _freeze(plugins: Sequence[str], workdir: Path, arch: str) -> tuple[Path, Interpreter]:
    """Freeze ``plugins`` for ``arch``; return the runtime directory and its interpreter."""
    entry = workdir / "credprov_plugins_entry.py"
    entry.write_text(_entry_text(plugins))
    packages = sorted({p for n in plugins for p in PLUGIN_PACKAGES[n]})
    # The tools' entry modules, and the modules credprov.sdk exports lazily (PEP 562), which
    # no import statement names for the freezer to follow.
    includes = sorted({tool.partition(":")[0] for tool in TOOLS.values()}) + list(LAZY_MODULES)
    runtime = workdir / "dist" / "runtime"
    runtime.parent.mkdir(parents=True)
    found = freeze(
        entry,
        RUNTIME_FILE,
        runtime,
        arch,
        sources=sorted({_package_root("credprov"), *(_package_root(p) for p in packages)}),
        packages=packages,
        includes=includes,
        excludes=_excludes(plugins),
    )
    _prune_botocore(runtime / "lib")
    (runtime / RUNTIME_NAME).symlink_to(RUNTIME_FILE)
    return runtime, found


def tree_digest(root: Path) -> str:
    """sha256 over the relative paths, modes, link targets and contents of ``root``."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        st = path.lstat()
        digest.update(f"{rel}\0{st.st_mode & 0o777:o}\0".encode())
        if path.is_symlink():
            digest.update(b"L" + os.readlink(path).encode())
        elif path.is_file():
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


_GLIBC = re.compile(rb"GLIBC_(2\.\d+(?:\.\d+)?)\x00")


def newest_glibc(data: bytes) -> tuple[int, ...]:
    """The newest ``GLIBC_2.x`` version name an ELF file holds: for glibc's own
    ``libc.so.6``, the newest it provides; ``(2, 0)`` when none."""
    newest: tuple[int, ...] = (2, 0)
    for match in _GLIBC.findall(data):
        newest = max(newest, tuple(int(p) for p in match.decode().split(".")))
    return newest


@dataclass(frozen=True)
class GlibcNeed:
    """An ELF file of a runtime that needs a glibc version above a floor, and for what."""

    path: str  # relative to the runtime
    version: tuple[int, ...]
    symbols: tuple[str, ...]

    def __str__(self) -> str:
        version = ".".join(map(str, self.version))
        named = ", ".join(f"{s}@GLIBC_{version}" for s in self.symbols[:3]) or f"GLIBC_{version}"
        return f"{self.path} needs {named}"


def glibc_needs(root: Path) -> list[GlibcNeed]:
    """For every ELF file under ``root``, its newest ``GLIBC_2.x`` version need (what the
    loader checks: ``DT_VERNEED``) and the symbols bound to it; sorted by path."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        with path.open("rb") as fh:
            if fh.read(4) != elf.MAGIC:
                continue
            fh.seek(0)
            info = elf.parse(fh.read())
        if info is None:
            continue
        versions = [(elf.glibc_version(n.version), n) for n in info.version_needs]
        known = [(v, n) for v, n in versions if v is not None]
        if known:
            version, need = max(known, key=lambda pair: pair[0])
            found.append(GlibcNeed(path.relative_to(root).as_posix(), version, need.symbols))
    return found


def audit_glibc(root: Path, floor: tuple[int, ...] = FLOOR) -> list[GlibcNeed]:
    """The ELF files under ``root`` that need a glibc newer than ``floor`` (empty: every
    file loads on a node with glibc ``floor``)."""
    return [need for need in glibc_needs(root) if need.version > floor]


def required_glibc(root: Path) -> str:
    """The newest ``GLIBC_2.x`` version any ELF file under ``root`` needs."""
    newest = max((need.version for need in glibc_needs(root)), default=(2, 0))
    return ".".join(str(p) for p in newest)


def manifest_text(root: Path) -> str:
    """``sha256sum``'s format (``<hex>  <relative path>``) for every regular file under
    ``root``, sorted by path: what ``sha256sum -c`` run in an installed copy checks.

    A symlink to a regular file under ``root`` (``credprov-plugins``, see
    :data:`~credprov.bundle._multicall.RUNTIME_FILE`) is listed with its file's digest:
    ``sha256sum -c`` follows it, so a missing or retargeted link fails the check too. Other
    symlinks are refused, directories are not listed; a name with a newline or a backslash
    could not be written in this format and is refused.
    """
    lines = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            target = path.resolve()
            if not (target.is_file() and target.is_relative_to(root.resolve())):
                raise BundleError(f"runtime symlink {path.relative_to(root)} does not name "
                                  "a runtime file")  # fmt: skip
        elif not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if "\n" in rel or "\\" in rel:
            raise BundleError(f"runtime file name {rel!r} cannot be listed in MANIFEST")
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        lines.append(f"{digest.hexdigest()}  {rel}\n")
    return "".join(lines)


def _script(name: str) -> str:
    return resources.files("credprov.bundle").joinpath(name).read_text(encoding="utf-8")


def requirements_text(arch: str, glibc: str, carried: Interpreter | None = None) -> str:
    """``REQUIREMENTS``: its first line what a node needs (the installer quotes it when it
    refuses a node), then what the runtime carries, each with its version."""
    floor = ".".join(map(str, FLOOR))
    lines = [
        f"linux/{arch}; glibc >= {floor} (the floor: manylinux2014; newest needed: {glibc}); "
        f"{', '.join(NODE_LIBRARIES)} (zlib) on the node's library path; "
        "a bin dir on a filesystem mounted without noexec"
    ]
    if carried is not None:
        lines += [
            f"interpreter: CPython {carried.python} (freeze-core {carried.freeze_core}); "
            f"standard library compiled from CPython {carried.stdlib}",
            f"openssl: {carried.openssl}",
            *(f"frozen: {pin}" for pin in pinned_distributions(arch)),
        ]
    return "".join(f"{line}\n" for line in lines)


def assemble(
    runtime: Path,
    plugins: Sequence[str],
    out_dir: Path,
    *,
    arch: str | None = None,
    carried: Interpreter | None = None,
) -> tuple[Path, str, str]:
    """Lay out ``out_dir/credprov-plugins/`` around a frozen ``runtime`` directory for
    ``arch`` (this machine's when None).

    Returns ``(bundle_dir, build_id, glibc)``. Also used by the tests with a stand-in runtime.
    """
    bundle = out_dir / BUNDLE_DIR
    if bundle.exists():
        shutil.rmtree(bundle)
    bundle.mkdir(parents=True)
    shutil.copytree(runtime, bundle / "runtime", symlinks=True)
    build_id = f"{__version__}-{tree_digest(bundle / 'runtime')[:12]}"
    glibc = required_glibc(bundle / "runtime")
    for name in ("install", "image-entrypoint"):
        path = bundle / name
        path.write_text(_script(f"{name.replace('-', '_')}.sh"))
        path.chmod(0o755)
    for tool in TOOLS:  # run from the unpacked bundle; never installed into a bin dir
        (bundle / tool).symlink_to(f"runtime/{RUNTIME_NAME}")
    (bundle / "PLUGINS").write_text("".join(f"{n}\n" for n in plugins))
    (bundle / "BUILD_ID").write_text(build_id + "\n")
    (bundle / "MANIFEST").write_text(manifest_text(bundle / "runtime"))
    (bundle / "REQUIREMENTS").write_text(requirements_text(go_arch(arch), glibc, carried))
    return bundle, build_id, glibc


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = _EPOCH
    if info.isdir() or info.mode & 0o111:
        info.mode = 0o755
    elif not info.issym():
        info.mode = 0o644
    return info


def _temp_next_to(path: Path) -> tuple[int, Path]:
    """A new file next to ``path`` under an unpredictable name, created exclusively (a link
    planted under a guessable name is never followed); mode 0644."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise BundleError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.fchmod(fd, 0o644)
    return fd, Path(name)


def write_tarball(bundle: Path, tarball: Path) -> None:
    """A reproducible ``.tar.gz`` of ``bundle`` (sorted entries, root-owned, fixed mtime),
    written atomically."""
    fd, tmp = _temp_next_to(tarball)
    try:
        with (
            open(fd, "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for path in [bundle, *sorted(bundle.rglob("*"))]:
                arcname = path.relative_to(bundle.parent).as_posix()
                tar.add(path, arcname, recursive=False, filter=_normalised)
        os.replace(tmp, tarball)
    except OSError as exc:
        raise BundleError(f"cannot write {tarball}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _tree_size(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if not p.is_dir())


def make_out_dir(out_dir: str | os.PathLike[str]) -> Path:
    """``out_dir``, created (with its parents) when missing, checked to be a writable
    directory.

    Raises:
        BundleError: it cannot be created, is not a directory or is not writable.
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise BundleError(f"output directory {out} is not a directory") from None
    except OSError as exc:
        raise BundleError(f"cannot create output directory {out}: {exc.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise BundleError(f"output directory {out} is not writable")
    return out


def build_bundle(
    out_dir: str | os.PathLike[str],
    names: Sequence[str] = (),
    *,
    keep_dir: bool = False,
    arch: str | None = None,
) -> BundleResult:
    """Freeze ``names`` (default: every plugin) and write the tarball into ``out_dir``
    (created when missing).

    Args:
        arch: the architecture to build for (Go's name; this machine's when None). Either
            architecture is built on any host (:mod:`credprov.bundle.freeze`).

    Raises:
        BundleError: unknown plugin or architecture, cx_Freeze missing or failing, a file
            of the runtime above the glibc floor (named, with its symbols),
            an ``out_dir`` that cannot be created or written.
    """
    started = time.monotonic()
    plugins = select_plugins(names)
    arch = go_arch(arch) if arch else go_arch()
    out = make_out_dir(out_dir)
    with tempfile.TemporaryDirectory(prefix="credprov-bundle-") as tmp:
        work = Path(tmp)
        runtime, carried = _freeze(plugins, work, arch)
        above = audit_glibc(runtime)
        if above:
            raise BundleError(
                f"the linux/{arch} runtime would need glibc above the floor "
                f"{'.'.join(map(str, FLOOR))}: {'; '.join(map(str, above[:3]))}"
            )
        bundle, build_id, glibc = assemble(
            runtime, plugins, work / "out", arch=arch, carried=carried
        )
        tarball = out / tarball_name(arch)
        write_tarball(bundle, tarball)
        unpacked = _tree_size(bundle)
        if keep_dir:
            target = out / BUNDLE_DIR
            if target.exists():
                shutil.rmtree(target)
            shutil.move(str(bundle), target)
    return BundleResult(
        tarball=tarball,
        build_id=build_id,
        plugins=plugins,
        size=tarball.stat().st_size,
        unpacked_size=unpacked,
        glibc=glibc,
        seconds=time.monotonic() - started,
    )


def unpack(tarball: Path, dest: Path) -> Path:
    """Unpack a bundle tarball into ``dest`` (the ``tar xzf`` of the README), returning
    ``dest/credprov-plugins``; the tarball is checked whole first
    (:func:`credprov.bundle.tarball.open_bundle`).

    Raises:
        BundleError: not a whole, well-formed bundle, or ``dest`` cannot be written.
    """
    with open_bundle(tarball, tmp_dir=dest if dest.is_dir() else None) as bundle:
        return bundle.extract(dest)
