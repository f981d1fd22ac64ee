"""A real containerd with its CRI plugin, for end-to-end tests of the CRI client.

Debian's ``containerd`` 1.6 is run directly (there is no systemd) with a private
``config.toml``: root, state, sockets, ``opt``, the CNI config directory and the registry
``certs.d`` all live under one short temporary directory (unix socket paths must stay
under 108 bytes, so never inside pytest's deep ``tmp_path``). The CRI plugin uses the
``native`` snapshotter, never pulls its sandbox image (no pod is started) and is a
``required_plugins`` entry, so a broken CRI plugin stops the daemon instead of leaving a
socket without a CRI service.

* :func:`start_containerd` starts it, writes a ``certs.d/<host:port>/hosts.toml`` for
  every registry given (plain HTTP, or HTTPS trusting the registry's own CA), waits until
  the CRI answers ``Version`` and ``ListImages``, and returns a :class:`Containerd`;
* :meth:`Containerd.stop` sends SIGTERM, waits, falls back to SIGKILL and removes the
  directory; :func:`running_containerd` and the object itself are context managers.

Nothing here touches ``/etc/containerd``, ``/var/lib/containerd`` or ``/run/containerd``.
containerd must run as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import pytest

from tests.e2e.registry import Registry, require_tools, terminate

#: The one error containerd logs on every start here: no CNI network config. It only
#: matters for RunPodSandbox, which these tests never call.
EXPECTED_ERRORS = ("failed to load cni during init",)

SOCKET_NAME = "containerd.sock"


def require_containerd() -> None:
    """Skip (or fail, under ``CREDPROV_REQUIRE_E2E=1``) unless containerd can run here."""
    require_tools("containerd")
    if os.geteuid() != 0:
        reason = "containerd must run as root for the CRI end-to-end tests"
        if os.environ.get("CREDPROV_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def _toml_str(value: str) -> str:
    """A TOML basic string (the JSON escaping rules are a subset of TOML's)."""
    return json.dumps(value)


def _config(workdir: Path) -> str:
    c = workdir
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    return f"""version = 2
root = {_toml_str(str(c / "root"))}
state = {_toml_str(str(c / "state"))}
temp = {_toml_str(str(c / "tmp"))}
required_plugins = ["io.containerd.grpc.v1.cri"]
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = {_toml_str(str(c / SOCKET_NAME))}

[ttrpc]
  address = {_toml_str(str(c / (SOCKET_NAME + ".ttrpc")))}

[debug]
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {_toml_str(str(c / "opt"))}

{cri}
  # Only used to start pods, which these tests never do: never pulled.
  sandbox_image = "127.0.0.1:1/credprov-e2e/pause:unused"
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

{cri[:-1]}.containerd]
  snapshotter = "native"

{cri[:-1]}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = {_toml_str(str(c / "cni-conf"))}

{cri[:-1]}.registry]
  config_path = {_toml_str(str(c / "certs.d"))}
"""


@dataclass
class Containerd:
    """A running containerd; :meth:`stop` is idempotent."""

    workdir: Path
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def socket(self) -> Path:
        return self.workdir / SOCKET_NAME

    @property
    def endpoint(self) -> str:
        """``unix:///.../containerd.sock``: the kubelet's ``--container-runtime-endpoint``."""
        return f"unix://{self.socket}"

    @property
    def certs_d(self) -> Path:
        return self.workdir / "certs.d"

    def add_registry(self, registry: Registry) -> None:
        """Write ``certs.d/<host:port>/hosts.toml`` for ``registry`` (read on every pull, so
        no restart): plain HTTP, or HTTPS trusting the registry's CA."""
        host_dir = self.certs_d / registry.address
        host_dir.mkdir(parents=True, exist_ok=True)
        lines = [
            f"server = {_toml_str(registry.url)}",
            "",
            f"[host.{_toml_str(registry.url)}]",
            '  capabilities = ["pull", "resolve"]',
        ]
        if registry.ca_cert is not None:
            ca = host_dir / "ca.crt"
            shutil.copyfile(registry.ca_cert, ca)
            lines.append(f"  ca = {_toml_str(str(ca))}")
        tmp = host_dir / "hosts.toml.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        os.replace(tmp, host_dir / "hosts.toml")

    def read_log(self) -> str:
        """The daemon's whole log (stdout and stderr), for diagnostics."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.read_log().splitlines()[-lines:])

    def errors(self) -> list[str]:
        """``level=error`` log lines, without the expected CNI one (a failed PullImage is
        logged at error level too)."""
        return [
            line
            for line in self.read_log().splitlines()
            if "level=error" in line and not any(e in line for e in EXPECTED_ERRORS)
        ]

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ctr(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``ctr ARGS`` against this containerd, in the kubelet's ``k8s.io`` namespace."""
        return subprocess.run(
            ["ctr", "--address", str(self.socket), "-n", "k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def stop(self) -> None:
        """SIGTERM (a graceful stop takes well under a second), SIGKILL after 10 s, then
        remove the directory."""
        proc, self.process = self.process, None
        terminate(proc, grace=10)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Containerd:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _cri_ready(socket: Path) -> str | None:
    """None once the CRI plugin answers Version and ListImages, else why not."""
    import grpc
    from cri_api.v1 import api_pb2, api_pb2_grpc

    with grpc.insecure_channel(f"unix://{socket}") as channel:
        try:
            api_pb2_grpc.RuntimeServiceStub(channel).Version(api_pb2.VersionRequest(), timeout=2)
            api_pb2_grpc.ImageServiceStub(channel).ListImages(
                api_pb2.ListImagesRequest(), timeout=2
            )
        except grpc.RpcError as exc:
            return f"{exc.code()}: {exc.details()}"
    return None


def start_containerd(registries: Iterable[Registry] = (), timeout: float = 20.0) -> Containerd:
    """Start containerd (CRI plugin, ``native`` snapshotter) knowing ``registries``; ready
    when this returns. The caller must call :meth:`Containerd.stop` (or use it as a
    context manager, or :func:`running_containerd`)."""
    require_containerd()
    binary = shutil.which("containerd")
    assert binary is not None
    workdir = Path(tempfile.mkdtemp(prefix="cp-ctrd-"))
    ctrd = Containerd(workdir, workdir / "containerd.log")
    try:
        if len(os.fsencode(str(ctrd.socket) + ".ttrpc")) > 107:
            raise RuntimeError(f"temporary directory too long for a unix socket: {workdir}")
        for sub in ("root", "state", "tmp", "opt", "cni-conf", "certs.d"):
            (workdir / sub).mkdir(mode=0o700)
        for registry in registries:
            ctrd.add_registry(registry)
        config = workdir / "config.toml"
        config.write_text(_config(workdir))
        with open(ctrd.log, "wb") as log:
            ctrd.process = subprocess.Popen(
                [binary, "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stop() kills it whole
                env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")},
            )
        deadline = time.monotonic() + timeout
        why = "no socket yet"
        while True:
            if ctrd.process.poll() is not None:
                raise RuntimeError(f"containerd exited early:\n{ctrd.log_tail()}")
            if ctrd.socket.is_socket():
                reason = _cri_ready(ctrd.socket)
                if reason is None:
                    return ctrd
                why = reason
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"containerd's CRI not ready in {timeout}s ({why}):\n{ctrd.log_tail()}"
                )
            time.sleep(0.02)
    except BaseException:
        ctrd.stop()
        raise


@contextlib.contextmanager
def running_containerd(registries: Iterable[Registry] = ()) -> Iterator[Containerd]:
    """:func:`start_containerd` as a context manager that always stops it."""
    ctrd = start_containerd(registries)
    try:
        yield ctrd
    finally:
        ctrd.stop()
