"""Freeze the plugins for a Linux architecture: cx_Freeze on freeze-core's manylinux2014 CPython.

Why this freezer (measured on this project's plugins; README "Put it on your nodes"):

* **The glibc floor.** A freezer ships the interpreter it runs on. PyInstaller (the previous
  builder) bundled the build machine's ``libpython`` and its system libraries, so a bundle
  made on Debian 12 needed glibc 2.35 (amd64) / 2.36 (arm64) and refused Amazon Linux 2023,
  Amazon Linux 2, RHEL 8/9 and Ubuntu 20.04 nodes. `freeze-core` (cx_Freeze's run-time
  wheel) carries a CPython built in the manylinux2014 image: the interpreter is linked into
  its ``console`` executable, the standard library's extension modules and their libraries
  (OpenSSL, liblzma, libbz2) are in its ``lib/`` and need at most ``GLIBC_2.17``.
* **Wheels by platform tag, never by the build machine.** The bundle's third-party
  distributions are installed into a private site directory with pip's ``--platform``
  (manylinux2014 and older only, :data:`FLOOR`), at exactly the versions this environment
  runs (:func:`pinned_distributions`); a distribution with no wheel at the floor stops the
  build with its name. The same directory serves both architectures' builds, made on any
  host: nothing is run under emulation (see :mod:`credprov.bundle._cx_driver`).
* **Start-up.** cx_Freeze starts its frozen interpreter isolated and without ``site``. Every
  module is a ``.pyc`` file under ``lib/`` (:func:`unpack_archive`), not a member of
  cx_Freeze's ``library.zip``: :mod:`zipimport` reads an archive's whole index in Python
  before its first import, about 11 ms for the bundle's 1,080 members on every plugin start,
  where the file system's finder lists one directory per package, in C, when it is first
  imported from.

The interpreter is named and pinned: :data:`FREEZE_CORE` (its CPython and OpenSSL releases
are read from its wheel and written into ``REQUIREMENTS``). A CPython or OpenSSL security fix
reaches the bundle when freeze-core publishes a wheel with it: raise the pin in
``pyproject.toml`` (dev extra) and rebuild (``credprov bundle --arch amd64,arm64 --out
dist``). The pure-Python standard library is compiled from the build machine's CPython of the
same minor release; :func:`freeze` refuses another minor release and records both patch
releases.

The site directories are cached (``${XDG_CACHE_HOME:-~/.cache}/credprov/site-<arch>-<key>``),
keyed by the pins; each is made under a temporary name and renamed when complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from credprov.bundle.layout import BundleError, machine_of

#: The archive cx_Freeze writes under ``lib/`` (unpacked by :func:`unpack_archive`).
ARCHIVE = "library.zip"

log = logging.getLogger(__name__)

#: The glibc floor every ELF file of a bundle stays at or under (manylinux2014).
FLOOR = (2, 17)
#: pip's ``--platform`` tags of wheels at or under :data:`FLOOR`, newest first.
_TAGS = ("manylinux_2_17_{m}", "manylinux2014_{m}", "manylinux_2_12_{m}", "manylinux2010_{m}",
         "manylinux_2_5_{m}", "manylinux1_{m}")  # fmt: skip
#: The freezer's run-time distribution: the interpreter every bundle carries.
FREEZE_CORE = "freeze-core"
#: Distributions whose closure the bundle freezes: credprov with the extras its plugins and
#: the doctor import, and the interpreter.
ROOTS = (("credprov", ("ecr", "gcp", "acr", "nodeauth")), (FREEZE_CORE, ()))
#: Provided by a venv itself and never frozen (``build.EXCLUDES``).
VENV_OWN = frozenset({"pip", "setuptools", "wheel"})
#: The frozen executable's ELF dependencies the node provides (``REQUIREMENTS``): glibc's
#: libraries are never copied by cx_Freeze; zlib is on every node OS (the ``zlib`` module).
NODE_LIBRARIES = ("libz.so.1",)
_OPENSSL = re.compile(rb"OpenSSL (\d+\.\d+\.\d+[a-z]?) ")


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/credprov``: site directories, build roots, sysroots."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "credprov"


def platforms(arch: str) -> tuple[str, ...]:
    """pip's ``--platform`` values for ``arch``'s wheels at or under the floor, newest
    first (pip does not widen a ``manylinux_2_x`` tag to older ones itself; aarch64 wheels
    start at manylinux2014)."""
    machine = machine_of(arch)
    tags = _TAGS if machine == "x86_64" else _TAGS[:2]
    return tuple(tag.format(m=machine) for tag in tags)


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
            "building a bundle needs the 'packaging' distribution (pip install 'credprov[dev]')"
        ) from None
    env = {k: str(v) for k, v in default_environment().items()}
    env.update(sys_platform="linux", platform_system="Linux", platform_machine=machine_of(arch))
    found: dict[str, tuple[str, set[str]]] = {}
    todo = [(name, set(extras)) for name, extras in ROOTS]
    while todo:
        name, extras = todo.pop()
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise BundleError(
                f"distribution {name} is not installed in this environment "
                "(pip install 'credprov[dev]')"
            ) from None
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


def key_of(*parts: str) -> str:
    """A short digest of ``parts``: a cache entry's key."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


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


def prune(directory: Path, prefix: str, keep: int) -> None:
    """Remove all but the ``keep`` newest complete entries named ``prefix*`` (an older
    key's entry: the cache would otherwise grow with every change)."""
    entries = [p for p in directory.glob(f"{prefix}*") if ".tmp." not in p.name and p.is_dir()]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[keep:]:
        log.info("cache: removing %s", old)
        shutil.rmtree(old, ignore_errors=True)


def run_tool(
    cmd: Sequence[str], what: str, *, timeout: float = 1800, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a build tool; a failure is one line naming ``what``, with the last lines of its
    output (build tools' output: no secrets pass through here)."""
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


def site_dir(arch: str) -> Path:
    """The cached site directory of ``arch``'s wheels at the floor, for the pins."""
    pins = pinned_distributions(arch)
    tag = f"{sys.version_info[0]}{sys.version_info[1]}"
    final = cache_dir() / f"site-{arch}-{key_of(tag, *platforms(arch), *pins)}"
    if (final / "PINS").is_file():
        os.utime(final)  # recently used: the last to be pruned
        return final
    with cache_entry(final) as tmp:
        plats = [f"--platform={p}" for p in platforms(arch)]
        run_tool(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", f"--python-version={tag}",
             "--implementation=cp", f"--abi=cp{tag}", *plats, "--target", str(tmp), *pins],
            f"install of the {arch} wheels (manylinux2014 or older)",
        )  # fmt: skip
        (tmp / "PINS").write_text("".join(f"{p}\n" for p in pins))
    prune(final.parent, f"site-{arch}-", 2)
    return final


@dataclass(frozen=True)
class Interpreter:
    """The CPython and OpenSSL a bundle carries, read from freeze-core's files."""

    freeze_core: str
    python: str
    openssl: str
    stdlib: str  # the CPython whose pure-Python standard library was compiled in


def interpreter(site: Path) -> Interpreter:
    """What :func:`site_dir`'s freeze-core carries (``"unknown"`` where it cannot tell):
    CPython's release from the table of modules its base has built in, OpenSSL's from its
    ``libssl``."""
    core = site / "freeze_core"
    python = openssl = "unknown"
    for table in sorted((core / "frozen").glob("frozen-cpython-*.json")):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            python = str(json.loads(table.read_text())["__version__"]).split()[0]
    for lib in sorted((site / "freeze_core.libs").glob("lib*.so*")):
        found = _OPENSSL.search(lib.read_bytes())
        openssl = found.group(1).decode() if found else openssl
    version = "unknown"
    for dist in site.glob("freeze_core-*.dist-info"):
        version = dist.name.removeprefix("freeze_core-").removesuffix(".dist-info")
    stdlib = ".".join(str(p) for p in sys.version_info[:3])
    return Interpreter(version, python, openssl, stdlib)


def freeze(
    script: Path,
    name: str,
    target: Path,
    arch: str,
    *,
    sources: Sequence[str],
    packages: Sequence[str],
    includes: Sequence[str],
    excludes: Sequence[str],
) -> Interpreter:
    """Freeze ``script`` into ``target`` (``target/<name>`` + ``target/lib``) for ``arch``.

    Raises:
        BundleError: cx_Freeze or patchelf missing, a wheel missing at the floor, the
            freezer failing, or a build CPython of another minor release than the bundle's.
    """
    for module, dist in (("cx_Freeze", "cx_Freeze"), ("packaging", "packaging")):
        if importlib.util.find_spec(module) is None:
            raise BundleError(f"{dist} is not installed in this environment "
                              "(pip install 'credprov[dev]')")  # fmt: skip
    site = site_dir(arch)
    found = interpreter(site)
    if not found.python.startswith(f"{found.stdlib.rsplit('.', 1)[0]}."):
        raise BundleError(
            f"freeze-core carries CPython {found.python}; build with a CPython of the same "
            f"minor release (this is {found.stdlib})"
        )
    bindir = os.path.dirname(sys.executable)
    config = {
        "machine": machine_of(arch),
        "site": str(site),
        "script": str(script),
        "init_script": str(Path(__file__).with_name("_initscript.py")),
        "name": name,
        "target": str(target),
        "sources": list(sources),
        "packages": list(packages),
        "includes": list(includes),
        "excludes": list(excludes),
        "bin_excludes": list(NODE_LIBRARIES),
        "zip_include": [],
        "zip_exclude": ["*"],  # packages as directories; the rest: unpack_archive
    }
    config_file = target.parent / f".{name}-freeze.json"
    config_file.write_text(json.dumps(config))
    env = {
        **os.environ,
        "CX_FREEZE_BIND": "patchelf",  # reads any architecture's ELF files; ldd runs them
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",  # pip's patchelf
    }
    run_tool(
        [sys.executable, "-I", "-m", "credprov.bundle._cx_driver", str(config_file)],
        f"cx_Freeze for linux/{arch}",
        env=env,
    )
    config_file.unlink()
    unpack_archive(target / "lib")
    return found


def unpack_archive(lib: Path) -> None:
    """Move the members of ``lib/library.zip`` (the top-level modules cx_Freeze always
    archives, and distributions' metadata) into ``lib/`` and remove the archive, and
    ``lib/library.dat``, which names it to the ``console`` base (without it the base puts
    only ``lib/`` on ``sys.path``).

    Raises:
        BundleError: a member that would leave ``lib/`` or replace a file there.
    """
    archive = lib / ARCHIVE
    if not archive.exists():
        return
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            parts = Path(info.filename).parts
            if info.filename.startswith("/") or ".." in parts or not parts:
                raise BundleError(f"{archive}: member {info.filename!r} leaves lib/")
            out = lib.joinpath(*parts)
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            if out.exists():
                raise BundleError(f"{archive}: member {info.filename!r} is also in lib/")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(zf.read(info))
    archive.unlink()
    (lib / "library.dat").unlink(missing_ok=True)
