"""A real private registry for end-to-end tests: Debian's ``docker-registry`` with htpasswd.

Reusable by any e2e test (skopeo now, containerd later):

* :func:`start_registry` starts ``/usr/bin/docker-registry serve`` with its own config on a
  free ``127.0.0.1`` port, htpasswd auth (bcrypt cost 4: the registry checks bcrypt on every
  request, and cost 10 would make each push take about a second) and storage in a private
  directory, waits until ``/v2/`` answers 401, and returns a :class:`Registry` whose
  :meth:`Registry.stop` kills the process and removes the directory;
* :func:`make_oci_layout` writes a tiny, reproducible linux/amd64 OCI image layout with the
  standard library alone (no docker);
* :func:`push` copies a layout into the registry with ``skopeo copy``;
* :func:`clean_env` is an environment in which skopeo can find no credentials of the user
  running the tests (``~/.docker/config.json``, ``$XDG_RUNTIME_DIR/containers/auth.json``).

Nothing here touches ``/etc/docker/registry`` or listens beyond 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REGISTRY_BIN = "/usr/bin/docker-registry"
BCRYPT_COST = 4
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def registry_binary() -> str | None:
    """The registry executable, or None when the Debian package is not installed."""
    if os.access(REGISTRY_BIN, os.X_OK):
        return REGISTRY_BIN
    return shutil.which("docker-registry")


def require_tools(*names: str) -> None:
    """Skip the calling test (with the reason) unless every tool is installed."""
    missing = [
        name
        for name in names
        if (registry_binary() if name == "docker-registry" else shutil.which(name)) is None
    ]
    if missing:
        reason = (
            f"{', '.join(missing)} not installed (apt-get install --no-install-recommends "
            f"{' '.join(missing)}; .ci/run does this)"
        )
        # In CI a skipped end-to-end test would hide a broken install step: fail instead.
        if os.environ.get("CREDPROV_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1 (the registry binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def htpasswd_line(username: str, password: str) -> str:
    """``user:$2...`` with bcrypt cost 4: the ``bcrypt`` package if present, else apache2-utils'
    ``htpasswd``."""
    try:
        import bcrypt  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        htpasswd = shutil.which("htpasswd")
        if htpasswd is None:
            pytest.skip("neither the bcrypt package nor htpasswd (apache2-utils) is installed")
        proc = subprocess.run(
            [htpasswd, "-Bbn", "-C", str(BCRYPT_COST), username, password],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return proc.stdout.strip()
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(BCRYPT_COST)).decode()
    return f"{username}:{hashed}"


def write_htpasswd(path: Path, users: Mapping[str, str]) -> None:
    """(Re)write the htpasswd file; the registry re-reads it when it changes."""
    path.write_text("".join(htpasswd_line(u, p) + "\n" for u, p in users.items()))


@dataclass
class Registry:
    """A running registry; :meth:`stop` is idempotent."""

    host: str
    port: int
    workdir: Path
    htpasswd: Path
    log: Path
    users: dict[str, str]
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``: the registry part of image names and auth-file keys."""
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def image(self, repo: str = "private/app", tag: str = "v1") -> str:
        return f"{self.address}/{repo}:{tag}"

    def set_users(self, users: Mapping[str, str]) -> None:
        """Replace the accounts (for rotation tests); no restart needed."""
        self.users = dict(users)
        write_htpasswd(self.htpasswd, users)

    def status(self, path: str = "/v2/", auth: tuple[str, str] | None = None) -> int:
        """The HTTP status of ``GET path`` (optionally with Basic auth)."""
        import base64

        req = urllib.request.Request(self.url + path)
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                status: int = resp.status
                return status
        except urllib.error.HTTPError as exc:
            return exc.code

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        """SIGTERM (the registry exits at once), SIGKILL if it lingers, remove the files."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _config(workdir: Path, port: int, htpasswd: Path) -> str:
    # Our own config: the packaged /etc/docker/registry/config.yml listens on :5000.
    return json.dumps(  # YAML is a superset of JSON
        {
            "version": 0.1,
            "log": {"level": "info", "formatter": "text"},
            "storage": {
                "filesystem": {"rootdirectory": str(workdir / "data")},
                "delete": {"enabled": True},
            },
            "http": {
                "addr": f"127.0.0.1:{port}",
                "secret": "credprov-e2e-not-a-secret",  # else it warns and makes one up
                "headers": {"X-Content-Type-Options": ["nosniff"]},
            },
            "auth": {"htpasswd": {"realm": "credprov-e2e", "path": str(htpasswd)}},
        },
        indent=1,
    )


def start_registry(users: Mapping[str, str], timeout: float = 10.0) -> Registry:
    """Start a registry with ``users`` (name → password); ready when this returns.

    The caller must call :meth:`Registry.stop` (use :func:`running_registry` for a context).
    """
    require_tools("docker-registry")
    binary = registry_binary()
    assert binary is not None
    workdir = Path(tempfile.mkdtemp(prefix="credprov-registry-"))
    htpasswd = workdir / "htpasswd"
    registry = Registry(
        "127.0.0.1", free_port(), workdir, htpasswd, workdir / "registry.log", dict(users)
    )
    try:
        write_htpasswd(htpasswd, users)
        config = workdir / "config.yml"
        config.write_text(_config(workdir, registry.port, htpasswd))
        with open(registry.log, "wb") as log:
            registry.process = subprocess.Popen(
                [binary, "serve", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stop() kills it whole
            )
        deadline = time.monotonic() + timeout
        while True:
            if registry.process.poll() is not None:
                raise RuntimeError(f"docker-registry exited early:\n{registry.log_tail()}")
            with contextlib.suppress(OSError):
                if registry.status() == 401:  # up, and auth is on
                    return registry
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"docker-registry not ready in {timeout}s:\n{registry.log_tail()}"
                )
            time.sleep(0.02)
    except BaseException:
        registry.stop()
        raise


@contextlib.contextmanager
def running_registry(users: Mapping[str, str]) -> Iterator[Registry]:
    """:func:`start_registry` as a context manager that always stops it."""
    registry = start_registry(users)
    try:
        yield registry
    finally:
        registry.stop()


# -- a tiny image ------------------------------------------------------------------------------


def _blob(layout: Path, data: bytes) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    (blobs / digest.split(":", 1)[1]).write_bytes(data)
    return {"digest": digest, "size": len(data)}


def make_oci_layout(
    layout: Path, tag: str = "v1", content: bytes = b"hello from credprov\n"
) -> str:
    """Write a one-layer linux/amd64 OCI image layout tagged ``tag``; returns the manifest
    digest. The bytes are reproducible (fixed mtimes), so the digest is too."""
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("hello.txt")
        info.size = len(content)
        info.mtime = 0
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(content))
    diff = tar_bytes.getvalue()
    layer = gzip.compress(diff, mtime=0)
    config = json.dumps(
        {
            "architecture": "amd64",  # containerd unpacks only the host's platform
            "os": "linux",
            "config": {},
            "rootfs": {
                "type": "layers",
                "diff_ids": ["sha256:" + hashlib.sha256(diff).hexdigest()],
            },
        },
        separators=(",", ":"),
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, **_blob(layout, config)},
            "layers": [{"mediaType": OCI_LAYER, **_blob(layout, layer)}],
        },
        separators=(",", ":"),
    ).encode()
    desc = _blob(layout, manifest)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                **desc,
                "annotations": {"org.opencontainers.image.ref.name": tag},
                "platform": {"architecture": "amd64", "os": "linux"},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index))
    (layout / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    return str(desc["digest"])


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment with a private, empty HOME and XDG_RUNTIME_DIR, so skopeo and
    friends cannot pick up the test runner's registry credentials."""
    runtime = home / "run"
    runtime.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "LANG": "C.UTF-8",
    }
    env.update(extra or {})
    return env


def push(registry: Registry, layout: Path, image: str, tag: str = "v1") -> None:
    """``skopeo copy`` the layout's ``tag`` to ``image`` with the registry's first account."""
    require_tools("skopeo")
    username, password = next(iter(registry.users.items()))
    with tempfile.TemporaryDirectory(prefix="credprov-skopeo-home-") as home:
        proc = subprocess.run(
            [
                "skopeo",
                "--insecure-policy",  # no dependency on /etc/containers/policy.json
                "copy",
                "--dest-creds",
                f"{username}:{password}",
                "--dest-tls-verify=false",  # plain HTTP on 127.0.0.1
                f"oci:{layout}:{tag}",
                f"docker://{image}",
            ],
            capture_output=True,
            text=True,
            env=clean_env(Path(home)),
            timeout=60,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"skopeo copy failed: {proc.stderr.replace(password, '<redacted>')}")


@dataclass
class PrivateImage:
    """An image pushed to a running private registry."""

    registry: Registry
    ref: str
    digest: str


@contextlib.contextmanager
def private_image(
    users: Mapping[str, str], repo: str = "private/app", tag: str = "v1"
) -> Iterator[PrivateImage]:
    """A registry with ``users`` holding one tiny image at ``repo:tag``; always cleaned up."""
    require_tools("docker-registry", "skopeo")
    with running_registry(users) as registry, tempfile.TemporaryDirectory() as tmp:
        layout = Path(tmp) / "layout"
        digest = make_oci_layout(layout, tag)
        ref = registry.image(repo, tag)
        push(registry, layout, ref, tag)
        yield PrivateImage(registry, ref, digest)
