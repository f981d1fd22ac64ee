"""``credprov bundle --arch ARCH``: a bundle for another architecture, built under emulation.

PyInstaller cannot cross-compile: it freezes the interpreter it runs in, with the shared
libraries that interpreter loads. So a bundle for ``arm64`` is built by an ``arm64`` Python
in an ``arm64`` Debian root that this machine runs through qemu-user-static and
``binfmt_misc`` (registered with the ``F`` flag, so ``chroot`` needs no qemu inside the root):

1. *base*: ``debootstrap --arch=ARCH --variant=minbase`` of bookworm with python3,
   python3-venv, libpython3.11 (the shared libpython PyInstaller bundles), binutils (its
   ``objdump``/``strip``), zlib1g and busybox-static (the static busybox an ``ARCH``
   installer image needs; see :func:`build_root`). Cached, keyed by the package list;
   ~3 minutes the first time.
2. *build root*: a hard-linked copy of the base plus ``/venv`` holding exactly the versions
   of the distributions this machine's credprov runs with (read from
   :mod:`importlib.metadata`, so both architectures freeze the same code), installed from
   ``ARCH`` wheels that ``pip download --platform`` fetches here, on the host: no network
   inside the root. Cached, keyed by that pinned list.
3. The sources of credprov and the selected plugins' packages are copied into a private
   work directory in the root, and ``build_bundle`` runs there, unchanged: under qemu,
   ``platform.machine()`` is the target's, so the tarball's name and ``REQUIREMENTS`` say
   ``linux/ARCH`` by themselves. The tarball is copied out.
4. The tarball is cached too, keyed by a digest of everything that went in (the sources,
   the pins, the base's packages and the plugin selection): an unchanged tree is not
   frozen again (a cold arm64 build is several minutes of emulation).

Every cache entry is made under a temporary name and renamed when complete, so an
interrupted build never leaves half an entry. The cache is
``${XDG_CACHE_HOME:-~/.cache}/credprov``. The same architecture as this machine's is the
ordinary native build (:func:`credprov.bundle.build.build_bundle`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from credprov.bundle.build import (
    PLUGIN_PACKAGES,
    BundleResult,
    _package_root,
    build_bundle,
    make_out_dir,
    select_plugins,
)
from credprov.bundle.layout import BundleError, go_arch

log = logging.getLogger(__name__)

SUITE = "bookworm"
#: Go's name → the kernel's (and qemu's, and manylinux wheels') name of the machine.
ARCHES = {"amd64": "x86_64", "arm64": "aarch64"}
#: The base root's packages: see the module docstring.
BASE_PACKAGES = (
    "python3",
    "python3-venv",
    "libpython3.11",
    "binutils",
    "zlib1g",
    "busybox-static",
)
#: Distributions whose closure the bundle freezes: credprov with the extras its plugins and
#: the doctor import, and the freezer itself.
ROOTS = (("credprov", ("ecr", "gcp", "acr", "nodeauth")), ("pyinstaller", ()))
#: Provided by the venv itself and never frozen (``build.EXCLUDES``).
VENV_OWN = frozenset({"pip", "setuptools", "wheel"})
#: bookworm's glibc: the newest manylinux tag its Python can load; older ones down to 2.17.
GLIBC_MINOR = 36
FALLBACK_MIRROR = "http://deb.debian.org/debian"
#: Cache entries kept per architecture: build roots (another pin list is a new root; one
#: more than the newest, for a build still running in it) and built tarballs.
KEEP_ROOTS = 2
KEEP_TARBALLS = 4
_PROBE_LIMIT = 4096
_VENV = "/venv"

_ENTRY = """\
import json, sys
from credprov.bundle.build import build_bundle
from credprov.bundle.layout import BundleError
try:
    r = build_bundle(sys.argv[1], sys.argv[2:])
except BundleError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(1)
print(json.dumps({"tarball": r.tarball.name, "build_id": r.build_id, "glibc": r.glibc,
                  "size": r.size, "unpacked_size": r.unpacked_size}))
"""


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/credprov``: the build roots and built tarballs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "credprov"


def check_arch(arch: str) -> str:
    """``arch`` if it is one credprov builds for; else a one-line :class:`BundleError`."""
    if arch not in ARCHES:
        raise BundleError(f"unknown architecture {arch!r}; supported: {', '.join(ARCHES)}")
    return arch


def _read_small(path: Path, limit: int = _PROBE_LIMIT) -> str:
    """At most ``limit`` bytes of the regular file ``path`` (procfs files are regular);
    '' when it is missing, unreadable or not a regular file (a FIFO is never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, limit).decode(errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def check_host(arch: str, *, binfmt_dir: Path = Path("/proc/sys/fs/binfmt_misc")) -> None:
    """Refuse (one line) unless this machine can build for ``arch`` under emulation: root,
    debootstrap, and ``qemu-<machine>`` registered in ``binfmt_misc`` with the ``F`` flag."""
    machine = ARCHES[check_arch(arch)]
    if os.geteuid() != 0:
        raise BundleError(
            f"building for {arch} on this {go_arch()} machine needs root (debootstrap, chroot)"
        )
    if shutil.which("debootstrap") is None:
        raise BundleError(f"building for {arch} needs debootstrap (apt install debootstrap)")
    hint = (
        "apt install qemu-user-static binfmt-support; "
        "mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; "
        f"update-binfmts --enable qemu-{machine}"
    )
    if not _read_small(binfmt_dir / "status"):
        raise BundleError(f"cannot run {arch} programs here: binfmt_misc is not mounted ({hint})")
    entry = _read_small(binfmt_dir / f"qemu-{machine}")
    if not entry.startswith("enabled"):
        state = "disabled" if entry else "not registered"
        raise BundleError(f"cannot run {arch} programs here: qemu-{machine} is {state} ({hint})")
    flags = re.search(r"^flags:\s*(\S*)", entry, re.M)
    if not flags or "F" not in flags.group(1):
        raise BundleError(
            f"qemu-{machine} is registered without the F flag, so it cannot run inside a "
            "chroot (Debian's qemu-user-static registers it with F)"
        )


def apt_mirror() -> str:
    """The Debian mirror apt uses for bookworm (deb822 ``.sources`` or ``sources.list``),
    or ``CREDPROV_DEBIAN_MIRROR``; it serves every architecture."""
    override = os.environ.get("CREDPROV_DEBIAN_MIRROR")
    if override:
        return override
    sources = Path("/etc/apt/sources.list.d")
    candidates = [Path("/etc/apt/sources.list")]
    with contextlib.suppress(OSError):
        candidates += sorted(sources.iterdir())
    for path in candidates:
        if not path.is_file():
            continue
        text = _read_small(path, 1 << 20)
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and SUITE in suites.group(1).split():
                return uris.group(1)
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and SUITE in parts[2:3]:
                return parts[-3] if parts[1].startswith("[") else parts[1]
    return FALLBACK_MIRROR


# -- what goes into the build root ------------------------------------------------------


def pinned_distributions(arch: str) -> tuple[str, ...]:
    """``name==version`` for every distribution the bundle freezes (the closure of
    :data:`ROOTS` as installed here, markers evaluated for Linux on ``arch``;
    :data:`VENV_OWN` and credprov itself left out), sorted."""
    try:
        from packaging.markers import default_environment
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name
    except ImportError:
        raise BundleError(
            "building for another architecture needs the 'packaging' distribution "
            "(pip install 'credprov[dev]')"
        ) from None
    env = {k: str(v) for k, v in default_environment().items()}
    env.update(sys_platform="linux", platform_system="Linux", platform_machine=ARCHES[arch])
    found: dict[str, tuple[str, set[str]]] = {}
    todo = [(name, set(extras)) for name, extras in ROOTS]
    while todo:
        name, extras = todo.pop()
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise BundleError(f"distribution {name} is not installed in this environment") from None
        key = canonicalize_name(dist.metadata["Name"])
        if key in found and extras <= found[key][1]:
            continue
        found.setdefault(key, (dist.version, set()))[1].update(extras)
        for text in dist.requires or ():
            req = Requirement(text)
            wanted = req.marker is None or any(
                req.marker.evaluate({**env, "extra": extra})
                for extra in ("", *sorted(found[key][1]))
            )
            if wanted:
                todo.append((req.name, set(req.extras)))
    skip = VENV_OWN | {ROOTS[0][0]}  # credprov itself goes in as sources
    return tuple(sorted(f"{k}=={v}" for k, (v, _) in found.items() if k not in skip))


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def platforms(arch: str) -> tuple[str, ...]:
    """pip's ``--platform`` values for ``arch``'s wheels a bookworm Python loads, newest
    first (pip does not widen a ``manylinux_2_x`` tag to older ones itself)."""
    machine = ARCHES[arch]
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 16, -1)]
    return (*tags, f"manylinux2014_{machine}")


# -- running things in a root --------------------------------------------------------------


def _run(
    cmd: Sequence[str], what: str, *, timeout: float = 3600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` on the host; a failure is one line naming ``what``, with the last lines
    of its output (build tools' output: no secrets pass through here)."""
    log.info("%s: %s", what, " ".join(cmd[:6]) + (" ..." if len(cmd) > 6 else ""))
    try:
        proc = subprocess.run(
            list(cmd), capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise BundleError(f"{what} took longer than {timeout:.0f} s") from None
    except OSError as exc:
        raise BundleError(f"{what}: cannot run {cmd[0]}: {exc.strerror}") from None
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise BundleError(f"{what} failed (exit {proc.returncode}): {' | '.join(lines[-3:])}")
    return proc


def _chroot_env(**extra: str) -> dict[str, str]:
    return {
        "PATH": f"{_VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        **extra,
    }


def _in_root(root: Path, argv: Sequence[str], what: str, **extra: str) -> str:
    """Run ``argv`` inside ``root`` with ``/proc`` mounted in a private mount namespace
    (gone with the process, so nothing stays mounted in the cache)."""
    script = 'mount -t proc proc "$1/proc" && shift && exec chroot "$@"'
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(root)]
    return _run([*cmd, str(root), *argv], what, env=_chroot_env(**extra)).stdout


@contextlib.contextmanager
def cache_entry(final: Path) -> Iterator[Path]:
    """A temporary sibling of the cache entry ``final``, renamed to it on success (an
    interrupted or failed build never leaves a half entry under the final name)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.tmp.", dir=final.parent))
    try:
        yield tmp
        tmp.chmod(0o755)
        if final.exists():  # another build finished first: keep its entry
            shutil.rmtree(tmp)
        else:
            tmp.rename(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _prune(directory: Path, prefix: str, keep: int) -> None:
    """Remove all but the ``keep`` newest complete entries named ``prefix*`` (an older
    key's build root or tarball: the cache would otherwise grow with every change)."""
    entries = [p for p in directory.glob(f"{prefix}*") if ".tmp." not in p.name and p.is_dir()]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        log.info("cache: removing %s", old)
        shutil.rmtree(old, ignore_errors=True)


def base_root(arch: str) -> Path:
    """The cached ``debootstrap`` root of :data:`BASE_PACKAGES` for ``arch``."""
    check_host(arch)
    final = cache_dir() / f"build-base-{SUITE}-{arch}-{_key(*BASE_PACKAGES)}"
    if (final / "usr" / "bin" / "python3").exists():
        return final
    with cache_entry(final) as tmp:
        _run(
            ["debootstrap", f"--arch={arch}", "--variant=minbase",
             "--include=" + ",".join(BASE_PACKAGES), SUITE, str(tmp), apt_mirror()],
            f"debootstrap of the {arch} build root",
        )  # fmt: skip
    return final


def _python_tag(root: Path) -> str:
    out = _in_root(root, ["python3", "-c", "import sys; print(*sys.version_info[:2])"], "python3")
    major, minor = out.split()
    return f"{major}{minor}"


def build_root(arch: str) -> Path:
    """The cached ``arch`` build root with ``/venv`` ready to freeze this checkout (its
    ``/bin/busybox`` is the static busybox, and its ``/lib/<triplet>`` the glibc, an
    ``arch`` installer image takes); built on first use.

    Raises:
        BundleError: unsupported host (see :func:`check_host`), or a step failing.
    """
    pins = pinned_distributions(arch)
    base = base_root(arch)
    final = cache_dir() / f"build-root-{SUITE}-{arch}-{_key(base.name, *pins)}"
    if (final / _VENV.lstrip("/") / "bin" / "pyinstaller").exists():
        os.utime(final)  # recently used: the last to be pruned
        return final
    with cache_entry(final) as root:
        root.rmdir()
        _run(["cp", "-al", str(base), str(root)], "copy of the base root")
        tag = _python_tag(root)
        wheels = root / "wheels"
        wheels.mkdir()
        plats = [f"--platform={p}" for p in platforms(arch)]
        _run(
            [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", f"--python-version={tag}",
             "--implementation=cp", *plats, "-d", str(wheels), *pins],
            f"download of the {arch} wheels",
        )  # fmt: skip
        _in_root(root, ["python3", "-m", "venv", _VENV], "python3 -m venv")
        _in_root(
            root,
            [f"{_VENV}/bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-index", "--no-deps", "--find-links=/wheels", *pins],
            f"install of the {arch} wheels",
            PIP_CONFIG_FILE="/dev/null",
        )  # fmt: skip
        shutil.rmtree(wheels)
        (root / "PINS").write_text("".join(f"{p}\n" for p in pins))
    _prune(final.parent, f"build-root-{SUITE}-{arch}-", KEEP_ROOTS)
    return final


# -- the bundle ----------------------------------------------------------------------------


def _packages(plugins: Sequence[str]) -> list[str]:
    return ["credprov", *sorted({p for n in plugins for p in PLUGIN_PACKAGES[n]})]


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))}


def _package_dirs(packages: Sequence[str]) -> list[Path]:
    return [Path(_package_root(package)) / package for package in packages]


def sources_digest(package_dirs: Sequence[Path]) -> str:
    """sha256 over the source files (paths and contents) of the packages ``package_dirs``."""
    digest = hashlib.sha256()
    for top in package_dirs:
        for path in sorted(top.rglob("*")):
            if "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                continue
            if path.is_file() and not path.is_symlink():
                digest.update(f"{path.relative_to(top.parent).as_posix()}\0".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _cached(
    entry: Path, out: Path, plugins: tuple[str, ...], started: float
) -> BundleResult | None:
    """The cache entry's tarball copied to ``out``; None (and the entry removed) when the
    entry is damaged, so the caller builds again."""
    try:
        meta = json.loads(_read_small(entry / "result.json", 1 << 16))
        name = meta["tarball"]
        if not isinstance(name, str) or "/" in name or not name.endswith(".tar.gz"):
            raise ValueError(f"bad tarball name {name!r}")
        tarball = out / name
        shutil.copyfile(entry / name, tarball)
        result = BundleResult(
            tarball=tarball,
            build_id=str(meta["build_id"]),
            plugins=plugins,
            size=tarball.stat().st_size,
            unpacked_size=int(meta["unpacked_size"]),
            glibc=str(meta["glibc"]),
            seconds=time.monotonic() - started,
            cached=True,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("bundle cache entry %s is damaged (%s); building again", entry.name, exc)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    os.utime(entry)  # recently used: the last to be pruned
    return result


def build_for_arch(
    out_dir: str | os.PathLike[str],
    arch: str,
    names: Sequence[str] = (),
) -> BundleResult:
    """The bundle of ``names`` (default: every plugin) for ``arch``, written into
    ``out_dir``: the native build for this machine's architecture, else built under
    emulation in :func:`build_root` (or copied from the tarball cache when nothing that
    goes in has changed).

    Raises:
        BundleError: unknown architecture or plugin, unsupported host, a step failing.
    """
    started = time.monotonic()
    check_arch(arch)
    plugins = select_plugins(names)
    out = Path(out_dir)
    if arch == go_arch():
        return build_bundle(out, plugins)
    out = make_out_dir(out)
    check_host(arch)
    sources = _package_dirs(_packages(plugins))
    pins = pinned_distributions(arch)

    def entry_of(package_dirs: Sequence[Path]) -> Path:
        key = _key(SUITE, *BASE_PACKAGES, *pins, *plugins, sources_digest(package_dirs))
        return cache_dir() / "bundles" / f"{arch}-{key}"

    entry = entry_of(sources)
    if (entry / "result.json").is_file():
        log.info("bundle for %s: unchanged sources, from %s", arch, entry)
        cached = _cached(entry, out, plugins, started)
        if cached is not None:
            return cached
    root = build_root(arch)
    work = Path(tempfile.mkdtemp(prefix="credprov-cross-", dir=root / "tmp"))
    try:
        inner = "/" + work.relative_to(root).as_posix()
        copies = [work / "src" / top.name for top in sources]
        for top, copy in zip(sources, copies, strict=True):
            shutil.copytree(top, copy, ignore=_ignore)
        entry = entry_of(copies)  # what is frozen, even if the tree changed meanwhile
        (work / "entry.py").write_text(_ENTRY)
        (work / "out").mkdir()
        stdout = _in_root(
            root,
            [f"{_VENV}/bin/python", f"{inner}/entry.py", f"{inner}/out", *plugins],
            f"the {arch} bundle build",
            PYTHONPATH=f"{inner}/src",
            PYTHONDONTWRITEBYTECODE="1",
            TMPDIR=f"{inner}",
        )
        meta = json.loads(stdout.strip().splitlines()[-1])
        with cache_entry(entry) as tmp:
            shutil.copyfile(work / "out" / meta["tarball"], tmp / meta["tarball"])
            (tmp / "result.json").write_text(json.dumps(meta))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _prune(entry.parent, f"{arch}-", KEEP_TARBALLS)
    built = _cached(entry, out, plugins, started)
    if built is None:
        raise BundleError(f"the {arch} bundle build left no usable tarball in {entry}")
    return dataclasses.replace(built, cached=False)
