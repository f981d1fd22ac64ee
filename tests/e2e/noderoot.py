"""A node without Python for the bundle's end-to-end tests, and the bundle built once.

* :func:`pristine_root`: ``debootstrap --variant=minbase bookworm`` from the Debian mirror
  apt already uses, cached between runs outside the repository
  (``${XDG_CACHE_HOME:-~/.cache}/credprov/node-root-bookworm-minbase``; ~45 s the first
  time, then nothing). Other suites (``bullseye``: glibc 2.31), architectures (``arm64``,
  run under qemu-user-static) and extra packages get their own cache entries. It is built under a temporary name and renamed when complete, so an
  interrupted run never leaves a half root in the cache. The root has glibc, zlib, dash
  and coreutils, and no Python.
* :func:`node_root`: a private copy of it for one test module (hard links, ~0.5 s: the
  tests only add files — the bin dir, ``/run``, configs — and never write into the
  root's own files), removed afterwards.
* :func:`chroot`: run a command inside a root, as the node's kubelet would run a plugin
  there (same environment, stdin, stdout and exit code).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from credprov.bundle.cross import apt_mirror, cache_dir, cache_entry
from tests.e2e.registry import require_tools

SUITE = "bookworm"
ROOT_NAME = f"node-root-{SUITE}-minbase"  # the default root's cache entry
#: The kubelet-plugin bin dir used inside the root (kubeadm's common choice).
BIN_DIR = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("CREDPROV_REQUIRE_E2E") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def require_root_tools() -> None:
    """Skip (fail under ``CREDPROV_REQUIRE_E2E=1``) unless debootstrap and chroot work here."""
    require_tools("debootstrap", "chroot")
    if os.geteuid() != 0:
        _fail_or_skip("the node-root tests need root (debootstrap, chroot)")


def root_name(suite: str = SUITE, arch: str | None = None, include: Sequence[str] = ()) -> str:
    """The cache entry's name for a root of ``suite``/``arch`` with packages ``include``."""
    name = f"node-root-{suite}-minbase"
    if arch:
        name += f"-{arch}"
    if include:
        name += "-" + hashlib.sha256(",".join(sorted(include)).encode()).hexdigest()[:10]
    return name


def pristine_root(
    suite: str = SUITE, *, arch: str | None = None, include: Sequence[str] = ()
) -> Path:
    """The cached minbase root of ``suite`` (for ``arch``, default this machine's, with the
    extra packages ``include``), built on first use."""
    require_root_tools()
    root = cache_dir() / root_name(suite, arch, include)
    if (root / "usr" / "bin" / "dash").exists():
        return root
    cmd = ["debootstrap", "--variant=minbase"]
    if arch:
        cmd.append(f"--arch={arch}")
    if include:
        cmd.append("--include=" + ",".join(include))
    with cache_entry(root) as tmp:
        proc = subprocess.run(
            [*cmd, suite, str(tmp), apt_mirror()],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if proc.returncode != 0:
            tail = " | ".join(proc.stdout.strip().splitlines()[-3:])
            pytest.fail(f"debootstrap of {root.name} failed (exit {proc.returncode}): {tail}")
    return root


@contextmanager
def node_root(
    suite: str = SUITE, *, arch: str | None = None, include: Sequence[str] = ()
) -> Iterator[Path]:
    """A private copy of :func:`pristine_root` with an empty :data:`BIN_DIR`."""
    pristine = pristine_root(suite, arch=arch, include=include)
    parent = Path(tempfile.mkdtemp(prefix="credprov-node-", dir=pristine.parent))
    root = parent / "root"
    try:
        proc = subprocess.run(["cp", "-al", str(pristine), str(root)], capture_output=True)
        if proc.returncode != 0:  # another filesystem: a real copy
            shutil.rmtree(root, ignore_errors=True)
            subprocess.run(["cp", "-a", str(pristine), str(root)], check=True)
        (root / BIN_DIR.lstrip("/")).mkdir(parents=True)
        root.chmod(0o755)  # a node's / (debootstrap leaves its target 0700)
        parent.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@contextmanager
def glibcless_root() -> Iterator[Path]:
    """A node root with no glibc at all: a static busybox as ``/bin/sh`` and friends, and an
    empty :data:`BIN_DIR` (as a musl or busybox-based node: no glibc program starts there).

    The bundle's floor is glibc 2.17 and the oldest root the Debian archive here serves is
    bullseye (2.31), which runs it: this is the node the installer must refuse."""
    busybox = Path("/bin/busybox")
    if not busybox.is_file():
        _fail_or_skip("no static busybox here (apt install busybox-static)")
    parent = Path(tempfile.mkdtemp(prefix="credprov-glibcless-"))
    root = parent / "root"
    try:
        (root / "bin").mkdir(parents=True)
        shutil.copy2(busybox, root / "bin" / "busybox")
        for applet in ("sh", "ls", "cat", "uname"):
            (root / "bin" / applet).symlink_to("busybox")
        (root / BIN_DIR.lstrip("/")).mkdir(parents=True)
        for directory in (root, parent):
            directory.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def inside(root: Path, path: str) -> Path:
    """The host path of ``path`` inside ``root``."""
    return root / path.lstrip("/")


def chroot(
    root: Path,
    argv: Sequence[str],
    *,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` inside ``root`` (``chroot ROOT ARGV``), with ``env`` as the whole
    environment (a minimal PATH when None)."""
    environment = dict(env) if env is not None else {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    return subprocess.run(
        ["chroot", str(root), *argv],
        input=stdin,
        capture_output=True,
        env=environment,
        timeout=timeout,
        check=False,
    )


def find_python(root: Path) -> list[str]:
    """Every ``python*`` executable or ``libpython*`` library in ``root``."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.startswith(("python", "libpython")):
                found.append(os.path.join(dirpath, name))
    return found
