"""How ``credprov doctor`` starts a node's plugin for ``plugin.responds``.

A node image is untrusted input, so a plugin found under ``--node-root DIR`` never runs on this
machine as it is. It runs **inside the root**, started as the kubelet starts it
(``<bin-dir>/<name> <args...>``, ``argv[0]`` exactly that node path so that a multicall
runtime installed as symlinks dispatches on its name), but confined. Between fork and exec
the child:

1. ``unshare(CLONE_NEWNS)`` and makes every mount private (``MS_REC|MS_PRIVATE``): nothing
   it mounts is seen outside, and everything it mounts vanishes with it;
2. binds the root onto itself and makes that tree read-only, ``nosuid`` and ``nodev``
   (``mount_setattr``; the top mount only on kernels before 5.12, keeping its ``noexec``):
   nothing the plugin does can write to the node, and a device node planted in the image
   opens nothing; mounts the image already has (a ``noexec`` ``/usr``) keep their options;
3. mounts a private tmpfs on the root's ``/tmp`` (else ``/run``) for the plugins' answer
   cache (``CREDPROV_PLUGIN_CACHE_DIR``): credentials a plugin caches never reach the node;
4. if the root has a ``/dev`` directory, covers it with a tmpfs holding only ``null``,
   ``zero``, ``full``, ``random`` and ``urandom``, bound from this machine's ``/dev``
   (populated on a fresh scratch directory of this machine, then moved into place);
5. ``chroot(root)``, ``chdir("/")``, and keeps the kubelet's identity (uid/gid 0, no
   supplementary groups) with only the capabilities that decide what root may read
   (:data:`KEPT_CAPABILITIES`): the bounding, permitted, effective, inheritable and ambient
   sets are cut, so ``CAP_SYS_ADMIN`` (remount), ``CAP_SYS_CHROOT`` (leave the chroot) and
   ``CAP_SYS_PTRACE`` are gone; then ``PR_SET_NO_NEW_PRIVS``, so the exec grants nothing back;

then execs, so the plugin's ``#!`` interpreter, dynamic loader, libc and files are the
node's. Its environment is exactly the provider's ``env`` plus systemd's default ``PATH``
(what a kubelet's plugin sees) and ``CREDPROV_PLUGIN_CACHE_DIR``; nothing of the doctor's
own environment. Mount targets inside the root are found by
:meth:`~credprov.base.rootfs.NodeRoot.resolve` (symlinks resolved inside the root) and
opened one component at a time with ``O_NOFOLLOW``; the mount goes onto the opened
directory (``/proc/self/fd/N``), so a link swapped in meanwhile cannot point a mount at this
machine's files.

Why root: the kubelet runs plugins as root, and a plugin's files are often root's alone (a
``0600`` credentials file); run as anyone else, a healthy plugin fails. With the root
read-only, ``nosuid``, ``nodev``, chrooted, and no capability beyond reading, root inside the
sandbox can read what the node's root can read and nothing more, which is the verdict wanted.

Whether that works is decided once per doctor run (:func:`probe`: the same set-up in a
forked child that then exits); when it cannot be done (not root, no ``CAP_SYS_ADMIN``,
``unshare`` or ``chroot`` refused) every ``plugin.responds`` is ``skip`` with the reason.
There is no fallback to running on the host.

Without ``--node-root`` (the root is ``/``) the plugin runs as the kubelet would run it: by its
unresolved path, this process's environment plus the provider's ``env``, in ``/``, with
``CREDPROV_PLUGIN_CACHE_DIR`` pointed at a fresh temporary directory removed afterwards.

What is not confined: the network (plugins need their registry and metadata endpoints;
abstract unix sockets come with it), SysV IPC, the PID namespace (a plugin may see this
machine's processes through a ``/proc`` the root itself has mounted, and a process that
leaves its process group outlives the run), resource use beyond the tmpfs sizes, and
concurrent writers of the root's directories on this machine (the threat is the image's
content, not a local attacker racing the doctor). Where the run differs from the kubelet's:
no ``/proc`` unless the root has one mounted (a runtime that reads ``/proc/self/exe`` fails
here only), the private ``/tmp`` allows exec even where the node's is ``noexec``, and
capabilities beyond reading files (a plugin that needs ``CAP_NET_ADMIN`` fails here only).

Why hand-written: the kernel calls are five (``unshare``, ``mount``, ``mount_setattr``,
``chroot``, ``prctl``) and must run in the forked child in a precise order; a container
runtime (runc, bubblewrap) is not on every node or debug image, and would need an OCI bundle
or its own flag dialect for the same effect.

:mod:`credprov.doctor.plugin_runs` decides, once per doctor run, which launcher to use and
whether to run a plugin at all.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from credprov.api import internal
from credprov.base.rootfs import NodeRoot
from credprov.credentialprovider.plugin.exec import Launch
from credprov.doctor.binaries import DEFAULT_PATH
from credprov.errors import CredprovError

__all__ = [
    "CACHE_DIR_ENV",
    "DEV_NODES",
    "KEPT_CAPABILITIES",
    "HostLauncher",
    "RootLauncher",
    "RootPlan",
    "SandboxError",
    "plan_root",
    "probe",
]

#: The capabilities a confined plugin keeps (of those the doctor has): reading and
#: searching files as the kubelet, root with every capability, reads them
#: (``CAP_DAC_OVERRIDE``, ``CAP_FOWNER``). With the root read-only, nothing else changes
#: what a plugin can answer; everything else would only loosen the confinement
#: (``CAP_SYS_ADMIN`` remounts, ``CAP_SYS_CHROOT`` leaves the chroot, and
#: ``CAP_DAC_READ_SEARCH`` opens any inode of the root's filesystem by handle,
#: ``open_by_handle_at``, past the chroot).
KEPT_CAPABILITIES = (1, 3)

#: Where credprov's plugins keep their answer cache (:mod:`credprov.sdk._cache`).
CACHE_DIR_ENV = "CREDPROV_PLUGIN_CACHE_DIR"

#: The devices a confined plugin gets in its ``/dev``.
DEV_NODES = ("null", "zero", "full", "random", "urandom")

#: Where the private answer cache is mounted: the first of these the root has.
_CACHE_MOUNTS = ("/tmp", "/run")

_CACHE_TMPFS = "mode=1777,size=16m,nr_inodes=4096"
_DEV_TMPFS = "mode=0755,size=64k,nr_inodes=64"

# <sys/mount.h>, <linux/mount.h>, <sched.h>, <sys/prctl.h>
_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MS_MOVE = 0x2000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_CLONE_NEWNS = 0x00020000
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (a 5.12 syscall)
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_MOUNT_ATTR_NOSUID = 0x2
_MOUNT_ATTR_NODEV = 0x4

_OPEN_DIR = os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC


class SandboxError(CredprovError):
    """A confinement step that failed; ``str()`` is one line: ``<step>: <reason>``.

    The doctor reports it as a ``plugin.responds`` skip; it never reaches the CLI.
    """

    def __init__(self, step: str, err: int) -> None:
        super().__init__(f"{step}: {os.strerror(err)}" if err else step)
        self.step = step
        self.errno = err

    def encode(self) -> bytes:
        """How a child reports it to the parent (:meth:`decode`)."""
        return f"{self.errno} {self.step}".encode("utf-8", "replace")[:512]

    @classmethod
    def decode(cls, data: bytes) -> SandboxError:
        """The error a confined child reported through its pipe (``<errno> <step>``, as
        :meth:`encode` writes it); bytes of another shape become a ``set-up`` error that
        quotes them."""
        number, _, step = data.decode("utf-8", "replace").partition(" ")
        try:
            return cls(step or "set-up", int(number))
        except ValueError:
            return cls(f"set-up: {data.decode('utf-8', 'replace')}", 0)

    @classmethod
    def of(cls, exc: BaseException) -> SandboxError:
        """Any exception raised in the child, as a SandboxError."""
        if isinstance(exc, SandboxError):
            return exc
        if isinstance(exc, OSError):
            return cls("set-up", exc.errno or errno.EINVAL)
        return cls(f"set-up: {type(exc).__name__}", 0)


# -- what to mount where -------------------------------------------------------------------


@dataclass(frozen=True)
class RootPlan:
    """Where the confinement mounts go in one root (found once per doctor run).

    ``cache`` and ``dev`` are node paths with symlinks resolved inside the root (``dev`` is
    None when the root has no ``/dev`` directory); ``cache_dir`` is the path the plugin is
    told (``/tmp`` or ``/run``, as the node names it).
    """

    root: str
    cache: str
    cache_dir: str
    dev: str | None


def plan_root(root: NodeRoot) -> RootPlan:
    """The mount targets of ``root``.

    Raises:
        SandboxError: the root has neither ``/tmp`` nor ``/run`` to hold the private cache.
    """
    cache = None
    for candidate in _CACHE_MOUNTS:
        resolved = _inner_dir(root, candidate)
        if resolved is not None:
            cache = (resolved, candidate)
            break
    if cache is None:
        raise SandboxError(
            "find /tmp or /run in the root for the private answer cache", errno.ENOENT
        )
    return RootPlan(
        root=root.root, cache=cache[0], cache_dir=cache[1], dev=_inner_dir(root, "/dev")
    )


def _inner_dir(root: NodeRoot, node_path: str) -> str | None:
    """``node_path`` resolved inside the root when it is a directory other than the root."""
    try:
        resolved = root.resolve(node_path)
    except OSError:
        return None
    if resolved == "/":
        return None
    try:
        st = os.lstat(root.host_path(resolved))
    except OSError:
        return None
    return resolved if stat.S_ISDIR(st.st_mode) else None


def _scratch_dir(prefix: str, what: str) -> str:
    """A fresh private directory of this machine's temporary directory.

    Raises:
        SandboxError: none can be made (a read-only image without ``/tmp``).
    """
    try:
        return tempfile.mkdtemp(prefix=prefix)
    except OSError as exc:
        raise SandboxError(f"make a temporary directory {what}", exc.errno or errno.EIO) from None


# -- the child's side ----------------------------------------------------------------------


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, loaded in the parent: the child only calls into it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    libc.mount.restype = ctypes.c_int
    libc.unshare.argtypes = [ctypes.c_int]
    libc.unshare.restype = ctypes.c_int
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    libc.prctl.restype = ctypes.c_int
    libc.syscall.restype = ctypes.c_long
    libc.capget.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    libc.capget.restype = ctypes.c_int
    libc.capset.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    libc.capset.restype = ctypes.c_int
    return libc


def _check(result: int, step: str) -> None:
    if result != 0:
        raise SandboxError(step, ctypes.get_errno() or errno.EINVAL)


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None, step: str
) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else os.fsencode(value)

    _check(_libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)), step)


def _open_inside(root_fd: int, node_path: str, step: str) -> int:
    """An ``O_PATH`` descriptor of ``node_path`` under ``root_fd``, no symlink followed."""
    fd = os.dup(root_fd)
    try:
        for part in node_path.strip("/").split("/"):
            try:
                inner = os.open(part, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                raise SandboxError(step, exc.errno or errno.EINVAL) from None
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def _read_only(root: str) -> None:
    """Make the root's mount tree read-only, nosuid and nodev (see the module docstring)."""
    attr = _MountAttr(_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV, 0, 0, 0)
    result = _libc().syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        ctypes.c_char_p(os.fsencode(root)),
        ctypes.c_uint(_AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if result == 0:
        return
    # Before 5.12: each mount of the tree in turn (the plugin runs as root: a writable
    # submount, a live /proc/sys, would be written), keeping each one's noexec (a bind
    # remount sets all flags).
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            table = fh.read().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise SandboxError("read /proc/self/mountinfo", exc.errno or errno.EIO) from None
    real = os.path.realpath(root)
    points = [root]
    for line in table.splitlines():
        fields = line.split()
        if len(fields) > 4:
            point = _unescape_mount_point(fields[4])
            if point.startswith(real.rstrip("/") + "/") and point not in points:
                points.append(point)
    for point in points:
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
        try:
            if os.statvfs(point).f_flag & os.ST_NOEXEC:
                flags |= _MS_NOEXEC
        except OSError:
            continue  # covered by a later mount
        _mount(None, point, None, flags, None, f"make {point} read-only")


def _unescape_mount_point(field: str) -> str:
    """A mountinfo path field: octal escapes (``\\040``) decoded."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _enter(plan: RootPlan, scratch: str) -> None:
    """Confine this (child) process inside ``plan.root``; see the module docstring.

    Raises:
        SandboxError: the step that failed.
    """
    libc = _libc()
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None, "make mounts private")
    _mount(plan.root, plan.root, None, _MS_BIND | _MS_REC, None, "bind the root")
    _read_only(plan.root)
    try:  # the operator's path: links in it are followed, as for chroot
        root_fd = os.open(plan.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxError("open the root", exc.errno or errno.EINVAL) from None
    try:
        fd = _open_inside(root_fd, plan.cache, f"open {plan.cache}")
        try:
            _mount(
                "tmpfs",
                f"/proc/self/fd/{fd}",
                "tmpfs",
                _MS_NOSUID | _MS_NODEV,
                _CACHE_TMPFS,
                f"mount a tmpfs on {plan.cache}",
            )
        finally:
            os.close(fd)
        if plan.dev is not None:
            _mount(
                "tmpfs",
                scratch,
                "tmpfs",
                _MS_NOSUID | _MS_NOEXEC,
                _DEV_TMPFS,
                "mount a tmpfs for /dev",
            )
            for name in DEV_NODES:
                if not os.path.exists(f"/dev/{name}"):
                    continue
                node = os.path.join(scratch, name)
                os.close(os.open(node, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
                _mount(f"/dev/{name}", node, None, _MS_BIND, None, f"bind /dev/{name}")
            fd = _open_inside(root_fd, plan.dev, f"open {plan.dev}")
            try:
                _mount(scratch, f"/proc/self/fd/{fd}", None, _MS_MOVE, None, f"mount {plan.dev}")
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    try:
        os.chroot(plan.root)
        os.chdir("/")
    except OSError as exc:
        raise SandboxError("chroot", exc.errno or errno.EINVAL) from None
    # The kubelet's identity: uid/gid 0, the groups cleared where allowed (the kubelet, a
    # systemd service, has none), capabilities cut to reading files as root reads them.
    with contextlib.suppress(OSError):
        os.setgroups([])
    _drop_capabilities()
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities() -> None:
    """Keep uid 0 but only :data:`KEPT_CAPABILITIES` (those this process has).

    The bounding set is cut where allowed (``CAP_SETPCAP``); the permitted and effective
    sets always, and the inheritable and ambient sets emptied: with ``no_new_privs`` set
    next, the exec'd plugin (uid 0, whose exec would otherwise get the bounding set) keeps
    no more than this permitted set, so ``CAP_SYS_ADMIN`` and ``CAP_SYS_CHROOT`` (which
    would undo the read-only bind and the chroot) and ``CAP_SYS_PTRACE`` are gone.

    Raises:
        SandboxError: ``capget``/``capset`` refused.
    """
    libc = _libc()
    for cap in range(64):
        if cap in KEPT_CAPABILITIES:
            continue
        # EINVAL: past the kernel's last capability. EPERM (no CAP_SETPCAP) is ignored:
        # the permitted set below still bounds the exec.
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    keep = 0
    for cap in KEPT_CAPABILITIES:
        keep |= 1 << cap
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capget(ctypes.byref(header), data), "capget")
    for i in range(2):
        mask = (keep >> (32 * i)) & 0xFFFFFFFF
        data[i].permitted &= mask
        data[i].effective = data[i].permitted
        data[i].inheritable = 0
    _check(libc.capset(ctypes.byref(header), data), "capset")
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def probe(plan: RootPlan) -> SandboxError | None:
    """Whether plugins can be confined in ``plan.root``: None, or the step that failed.

    The whole set-up runs in a forked child that exits before exec'ing anything; its mounts
    die with its namespace.
    """
    _libc()
    try:
        scratch = _scratch_dir("credprov-doctor-dev-", "for /dev")
    except SandboxError as exc:
        return exc
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            status = 0
            try:
                _enter(plan, scratch)
            except BaseException as exc:  # reported through the pipe
                status = 1
                with contextlib.suppress(BaseException):
                    os.write(write_end, SandboxError.of(exc).encode())
            os._exit(status)
        os.close(write_end)
        write_end = -1
        message = b""
        while chunk := os.read(read_end, 4096):
            message += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
        with contextlib.suppress(OSError):
            os.rmdir(scratch)
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return SandboxError.decode(message) if message else SandboxError("set-up", 0)


# -- launchers -----------------------------------------------------------------------------


class RootLauncher:
    """Starts plugins confined inside a root (a
    :class:`~credprov.credentialprovider.plugin.exec.Launcher`).

    A context manager: entering makes the scratch directory ``/dev`` is populated on and a
    pipe the child reports a failed set-up through (:meth:`failure`); leaving removes them.
    Entering raises :class:`SandboxError` when the directory cannot be made.
    The set-up is a ``preexec_fn``, which is safe only while this process runs no other
    threads (the doctor runs none).
    """

    def __init__(self, plan: RootPlan) -> None:
        self.plan = plan
        self._scratch = ""
        self._pipe: tuple[int, int] | None = None

    def __enter__(self) -> RootLauncher:
        _libc()
        self._scratch = _scratch_dir("credprov-doctor-dev-", "for /dev")
        self._pipe = os.pipe()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None
        with contextlib.suppress(OSError):
            os.rmdir(self._scratch)

    def environment(self, env: Sequence[internal.ExecEnvVar]) -> dict[str, str]:
        """systemd's default ``PATH``, the provider's ``env``, then the private cache dir."""
        environ = {"PATH": DEFAULT_PATH}
        for var in env:
            environ[var.name] = var.value
        environ[CACHE_DIR_ENV] = self.plan.cache_dir
        return environ

    def launch(self, argv: Sequence[str], env: Sequence[internal.ExecEnvVar]) -> Launch:
        """``argv`` unchanged (node paths, exec'd after the chroot), confined by
        ``preexec_fn``."""
        assert self._pipe is not None, "use RootLauncher as a context manager"
        return Launch(list(argv), self.environment(env), None, self._preexec)

    def _preexec(self) -> None:
        assert self._pipe is not None
        try:
            _enter(self.plan, self._scratch)
        except BaseException as exc:  # in the child, before exec: report, never return
            with contextlib.suppress(BaseException):
                os.write(self._pipe[1], SandboxError.of(exc).encode())
            os._exit(127)

    def failure(self) -> SandboxError | None:
        """The set-up failure of a run started by this launcher, if there was one."""
        if self._pipe is None:
            return None
        os.set_blocking(self._pipe[0], False)
        try:
            data = os.read(self._pipe[0], 4096)
        except BlockingIOError:
            return None
        return SandboxError.decode(data) if data else None


class HostLauncher:
    """Starts plugins as the kubelet would on this machine, with a throw-away answer cache.

    A context manager: entering makes the temporary cache directory (raises
    :class:`SandboxError` when it cannot), leaving removes it.
    """

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self.environ = environ
        self.cache_dir = ""

    def __enter__(self) -> HostLauncher:
        self.cache_dir = _scratch_dir("credprov-doctor-cache-", "for the answer cache")
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def launch(self, argv: Sequence[str], env: Sequence[internal.ExecEnvVar]) -> Launch:
        """This process's environment plus the provider's ``env``, in ``/``."""
        environ = dict(os.environ if self.environ is None else self.environ)
        for var in env:
            environ[var.name] = var.value
        environ[CACHE_DIR_ENV] = self.cache_dir
        return Launch(list(argv), environ, "/")

    def failure(self) -> SandboxError | None:
        """Always None: nothing is set up in the child."""
        return None
