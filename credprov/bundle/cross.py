"""``credprov bundle --arch ARCH``: bundles and installer images for either architecture.

A bundle for any architecture is frozen on this machine, without emulation
(:mod:`credprov.bundle.freeze`): :func:`build_for_arch` is :func:`~credprov.bundle.build.
build_bundle` for that architecture. What still needs the other architecture's files is its
installer image, which is ``FROM scratch`` and carries a static busybox and the glibc its
runtime loads: :func:`build_root` is that *sysroot*, ``debootstrap --arch=ARCH
--variant=minbase`` of :data:`SUITE` with busybox-static (second stage run through
qemu-user-static and ``binfmt_misc`` registered with the ``F`` flag, so ``chroot`` needs no
qemu inside the root). It is cached under ``${XDG_CACHE_HOME:-~/.cache}/credprov``, keyed by
its package list (~2 minutes the first time), made under a temporary name and renamed when
complete, so an interrupted build never leaves half an entry.

"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from credprov.bundle.build import BundleResult, build_bundle, select_plugins
from credprov.bundle.freeze import cache_dir, cache_entry, key_of, run_tool
from credprov.bundle.layout import ARCHES, BundleError, go_arch, machine_of

__all__ = [
    "BASE_PACKAGES",
    "SUITE",
    "apt_mirror",
    "build_for_arch",
    "build_root",
    "cache_dir",
    "cache_entry",
    "check_arch",
    "check_host",
]

log = logging.getLogger(__name__)

#: The sysroot's Debian release: the oldest the archive here serves (glibc 2.31), above the
#: bundle's floor.
SUITE = "bullseye"
#: The sysroot's packages: the static busybox an installer image runs, and zlib (glibc
#: comes with minbase).
BASE_PACKAGES = ("busybox-static", "zlib1g")
FALLBACK_MIRROR = "http://deb.debian.org/debian"
_PROBE_LIMIT = 4096


def check_arch(arch: str) -> str:
    """``arch`` if it is one credprov builds for; else a one-line :class:`BundleError`."""
    if arch not in ARCHES:
        raise BundleError(f"unknown architecture {arch!r}; supported: {', '.join(sorted(ARCHES))}")
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
    """Refuse (one line) unless this machine can make ``arch``'s sysroot: root,
    debootstrap, and (for another architecture) ``qemu-<machine>`` registered in
    ``binfmt_misc`` with the ``F`` flag."""
    machine = machine_of(check_arch(arch))
    if os.geteuid() != 0:
        raise BundleError(f"making the {arch} sysroot needs root (debootstrap, chroot)")
    if shutil.which("debootstrap") is None:
        raise BundleError(f"making the {arch} sysroot needs debootstrap (apt install debootstrap)")
    if arch == go_arch():
        return
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


def apt_mirror(suite: str = "bookworm") -> str:
    """The Debian mirror apt uses (deb822 ``.sources`` or ``sources.list``), or
    ``CREDPROV_DEBIAN_MIRROR``; it serves every architecture and every suite here."""
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
            if uris and suites and suite in suites.group(1).split():
                return uris.group(1)
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and suite in parts[2:3]:
                return parts[-3] if parts[1].startswith("[") else parts[1]
    return FALLBACK_MIRROR


def build_root(arch: str) -> Path:
    """The cached sysroot of ``arch`` for its installer image (its ``/bin/busybox`` is the
    static busybox, and its ``/lib/<triplet>`` the glibc the image takes); made on first use.

    Raises:
        BundleError: unsupported host (see :func:`check_host`), or debootstrap failing.
    """
    check_host(arch)
    final = cache_dir() / f"sysroot-{SUITE}-{arch}-{key_of(*BASE_PACKAGES)}"
    if (final / "bin" / "busybox").exists():
        return final
    with cache_entry(final) as tmp:
        run_tool(
            ["debootstrap", f"--arch={arch}", "--variant=minbase",
             "--include=" + ",".join(BASE_PACKAGES), SUITE, str(tmp), apt_mirror()],
            f"debootstrap of the {arch} sysroot",
        )  # fmt: skip
    return final


def build_for_arch(
    out_dir: str | os.PathLike[str],
    arch: str,
    names: Sequence[str] = (),
) -> BundleResult:
    """The bundle of ``names`` (default: every plugin) for ``arch``, written into
    ``out_dir``; frozen here, whatever this machine's architecture.

    Raises:
        BundleError: unknown architecture or plugin, a step of the build failing.
    """
    return build_bundle(out_dir, select_plugins(names), arch=check_arch(arch))
