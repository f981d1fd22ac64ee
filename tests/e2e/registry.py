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

More for the CRI tests (``tests/e2e/containerd.py`` points containerd at these registries):

* ``start_registry(users, tls=True)`` serves HTTPS with a self-signed certificate made at
  run time (``subjectAltName=IP:127.0.0.1``); :attr:`Registry.ca_cert` is its CA for
  skopeo (``--dest-cert-dir``) and containerd (``hosts.toml``);
* ``start_registry({})`` is an anonymous registry (distribution's htpasswd auth is all or
  nothing, so public images live on a second registry);
* :meth:`Registry.set_users` rotates the accounts while it runs;
  :meth:`Registry.stop_process` / :meth:`Registry.start_process` (or the
  :meth:`Registry.down` context) take it down and back up on the same port and storage;
* :meth:`Registry.requests` parses its access log, so a test can assert that a step made
  no registry round trip; :func:`push_image` builds a distinct tiny image and pushes it
  (with the standard library by default: :func:`upload_layout`; or with skopeo).

Nothing here touches ``/etc/docker/registry`` or listens beyond 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
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
    """(Re)write the htpasswd file atomically; the registry re-reads it when its
    modification time changes, and never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(htpasswd_line(u, p) + "\n" for u, p in users.items()))
    os.replace(tmp, path)


#: ``127.0.0.1 - - [22/Nov/2026:07:57:52 +0000] "GET /v2/ HTTP/1.1" 401 87 "" "skopeo/1.9.3"``:
#: the combined-format access log line distribution writes for every request.
_ACCESS_LINE = re.compile(
    r"^(?P<remote>\S+) \S+ (?P<user>\S+) \[(?P<time>[^\]]+)\] "
    r'"(?P<method>[A-Z]+) (?P<uri>\S+) [^"]*" (?P<status>\d{3}) \S+ "[^"]*" "(?P<agent>[^"]*)"'
)


@dataclass(frozen=True)
class RegistryRequest:
    """One request from the registry's access log."""

    method: str
    uri: str
    status: int
    user_agent: str

    @property
    def path(self) -> str:
        return self.uri.split("?", 1)[0]


def make_tls_cert(cert: Path, key: Path) -> None:
    """Write a self-signed certificate for ``IP:127.0.0.1`` and ``DNS:localhost`` (its own
    CA) to ``cert`` and its key to ``key``, with ``cryptography`` if installed, else the
    ``openssl`` command. Keep the key out of ``cert``'s directory: skopeo reads a ``*.key``
    in a cert dir as a client certificate's."""
    try:
        import datetime as dt
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        openssl = shutil.which("openssl")
        if openssl is None:
            pytest.skip("neither the cryptography package nor openssl is installed")
        subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-keyout", str(key), "-out", str(cert)],
            capture_output=True,
            check=True,
            timeout=30,
        )  # fmt: skip
        return
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(private, hashes.SHA256())
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def terminate(proc: subprocess.Popen[bytes] | None, grace: float) -> None:
    """Stop a server started in its own session: SIGTERM to its process group, SIGKILL
    after ``grace`` seconds, and always reap it. Nothing to do when it already exited."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


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
    #: For TLS: the directory holding ``ca.crt`` and nothing else (skopeo's ``--cert-dir``).
    cert_dir: Path | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``: the registry part of image names and auth-file keys."""
        return f"{self.host}:{self.port}"

    @property
    def tls(self) -> bool:
        return self.cert_dir is not None

    @property
    def ca_cert(self) -> Path | None:
        """The self-signed certificate to trust for a TLS registry, else None."""
        return self.cert_dir / "ca.crt" if self.cert_dir is not None else None

    @property
    def anonymous(self) -> bool:
        """No htpasswd auth: anybody may pull and push."""
        return not self.users

    @property
    def config(self) -> Path:
        return self.workdir / "config.yml"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}"

    def image(self, repo: str = "private/app", tag: str = "v1") -> str:
        return f"{self.address}/{repo}:{tag}"

    def set_users(self, users: Mapping[str, str]) -> None:
        """Replace the accounts (for rotation tests); no restart needed. An anonymous
        registry stays anonymous (auth is configured at start)."""
        if self.anonymous:
            raise ValueError("an anonymous registry has no accounts to rotate")
        if not users:
            raise ValueError("a registry with auth needs at least one account")
        self.users = dict(users)
        write_htpasswd(self.htpasswd, users)

    def http(
        self,
        method: str,
        path_or_url: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP request (Basic ``auth`` if given; TLS trusting :attr:`ca_cert`):
        (status, headers, body), also for 4xx/5xx."""
        import base64

        url = path_or_url if "://" in path_or_url else self.url + path_or_url
        req = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        context = None
        if self.ca_cert is not None:
            context = ssl.create_default_context(cafile=str(self.ca_cert))
        try:
            with urllib.request.urlopen(req, timeout=10, context=context) as resp:
                return resp.status, dict(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc.read()

    def status(self, path: str = "/v2/", auth: tuple[str, str] | None = None) -> int:
        """The HTTP status of ``GET path`` (optionally with Basic auth)."""
        return self.http("GET", path, auth=auth)[0]

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def read_log(self) -> str:
        """The registry's whole log (over restarts), for diagnostics."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    # -- the access log --

    def requests(self, since: int = 0) -> list[RegistryRequest]:
        """Every request the registry has logged (over restarts), oldest first; ``since``
        skips the first ones (take it from :meth:`request_count` before the step)."""
        found = []
        for line in self.read_log().splitlines():
            match = _ACCESS_LINE.match(line)
            if match is not None:
                found.append(
                    RegistryRequest(
                        match["method"], match["uri"], int(match["status"]), match["agent"]
                    )
                )
        return found[since:]

    def request_count(self) -> int:
        """How many requests are logged so far: a mark for :meth:`requests`."""
        return len(self.requests())

    def wait_for_requests(
        self, count: int = 1, since: int = 0, timeout: float = 5.0
    ) -> list[RegistryRequest]:
        """At least ``count`` requests after ``since`` (the log line is written just after
        the response, so a client may return first); whatever is there at ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.requests(since)
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.01)

    # -- down and up again --

    def start_process(self, timeout: float = 10.0) -> None:
        """(Re)start the server on the same port, config, storage and accounts; ready
        (``/v2/`` answers) when this returns. No-op when it runs."""
        if self.process is not None and self.process.poll() is None:
            return
        binary = registry_binary()
        assert binary is not None
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [binary, "serve", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stop() kills it whole
            )
        ready = 200 if self.anonymous else 401  # up, and auth on when configured
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"docker-registry exited early:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                if self.status() == ready:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"docker-registry not ready in {timeout}s:\n{self.log_tail()}")
            time.sleep(0.02)

    def stop_process(self) -> None:
        """Stop the server but keep its files: clients now get "connection refused" on
        its port until :meth:`start_process`."""
        proc, self.process = self.process, None
        terminate(proc, grace=5)

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """The registry is unreachable inside the block and serving again after it."""
        self.stop_process()
        try:
            yield
        finally:
            self.start_process()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM (the registry exits at once), SIGKILL if it lingers, remove the files."""
        self.stop_process()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _config(workdir: Path, port: int, htpasswd: Path | None, cert_dir: Path | None = None) -> str:
    # Our own config: the packaged /etc/docker/registry/config.yml listens on :5000.
    http: dict[str, object] = {
        "addr": f"127.0.0.1:{port}",
        "secret": "credprov-e2e-not-a-secret",  # else it warns and makes one up
        "headers": {"X-Content-Type-Options": ["nosniff"]},
    }
    if cert_dir is not None:
        http["tls"] = {
            "certificate": str(cert_dir / "ca.crt"),
            "key": str(workdir / "registry.key"),
        }
    config: dict[str, object] = {
        "version": 0.1,
        "log": {"level": "info", "formatter": "text"},
        "storage": {
            "filesystem": {"rootdirectory": str(workdir / "data")},
            "delete": {"enabled": True},
        },
        "http": http,
    }
    if htpasswd is not None:
        config["auth"] = {"htpasswd": {"realm": "credprov-e2e", "path": str(htpasswd)}}
    return json.dumps(config, indent=1)  # YAML is a superset of JSON


def start_registry(
    users: Mapping[str, str], timeout: float = 10.0, *, tls: bool = False
) -> Registry:
    """Start a registry with ``users`` (name → password; empty: anonymous, no auth) over
    plain HTTP, or HTTPS with a fresh self-signed certificate (``tls``); ready when this
    returns.

    The caller must call :meth:`Registry.stop` (use :func:`running_registry` for a context).
    """
    require_tools("docker-registry")
    workdir = Path(tempfile.mkdtemp(prefix="credprov-registry-"))
    htpasswd = workdir / "htpasswd"
    registry = Registry(
        "127.0.0.1", free_port(), workdir, htpasswd, workdir / "registry.log", dict(users)
    )
    try:
        if tls:
            registry.cert_dir = workdir / "certs"
            registry.cert_dir.mkdir()
            make_tls_cert(registry.cert_dir / "ca.crt", workdir / "registry.key")
        if users:
            write_htpasswd(htpasswd, users)
        registry.config.write_text(
            _config(workdir, registry.port, htpasswd if users else None, registry.cert_dir)
        )
        registry.start_process(timeout)
        return registry
    except BaseException:
        registry.stop()
        raise


@contextlib.contextmanager
def running_registry(users: Mapping[str, str], *, tls: bool = False) -> Iterator[Registry]:
    """:func:`start_registry` as a context manager that always stops it."""
    registry = start_registry(users, tls=tls)
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


@dataclass(frozen=True)
class OCIImage:
    """The digests of an image :func:`build_oci_layout` wrote."""

    manifest_digest: str  # what ``repo@digest`` names
    config_digest: str  # the image id: containerd's ``image_ref``
    size: int  # manifest + config + layer bytes


def make_oci_layout(
    layout: Path, tag: str = "v1", content: bytes = b"hello from credprov\n"
) -> str:
    """Write a one-layer linux/amd64 OCI image layout tagged ``tag``; returns the manifest
    digest. The bytes are reproducible (fixed mtimes), so the digest is too."""
    return build_oci_layout(layout, tag, content).manifest_digest


def build_oci_layout(
    layout: Path, tag: str = "v1", content: bytes = b"hello from credprov\n"
) -> OCIImage:
    """:func:`make_oci_layout`, returning every digest (different ``content``, different
    image)."""
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
    config_desc = _blob(layout, config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, **config_desc},
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
    return OCIImage(
        manifest_digest=str(desc["digest"]),
        config_digest=str(config_desc["digest"]),
        size=len(manifest) + len(config) + len(layer),
    )


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
    """``skopeo copy`` the layout's ``tag`` to ``image`` with the registry's first account
    (none for an anonymous registry), trusting its CA when it serves TLS."""
    require_tools("skopeo")
    username, password = next(iter(registry.users.items()), ("", ""))
    creds = f"{username}:{password}"
    auth = ["--dest-no-creds"] if registry.anonymous else ["--dest-creds", creds]
    if registry.cert_dir is not None:
        tls = [f"--dest-cert-dir={registry.cert_dir}"]
    else:
        tls = ["--dest-tls-verify=false"]  # plain HTTP on 127.0.0.1
    with tempfile.TemporaryDirectory(prefix="credprov-skopeo-home-") as home:
        proc = subprocess.run(
            [
                "skopeo",
                "--insecure-policy",  # no dependency on /etc/containers/policy.json
                "copy",
                *auth,
                *tls,
                f"oci:{layout}:{tag}",
                f"docker://{image}",
            ],
            capture_output=True,
            text=True,
            env=clean_env(Path(home)),
            timeout=60,
        )
    if proc.returncode != 0:
        stderr = proc.stderr.replace(password, "<redacted>") if password else proc.stderr
        raise RuntimeError(f"skopeo copy failed: {stderr}")


@dataclass(frozen=True)
class PushedImage:
    """An image :func:`push_image` put in a registry."""

    ref: str  # 127.0.0.1:PORT/repo:tag
    repo: str  # 127.0.0.1:PORT/repo
    manifest_digest: str
    image_id: str  # sha256 of the config: the image_ref containerd reports
    size: int

    @property
    def by_digest(self) -> str:
        """``127.0.0.1:PORT/repo@sha256:...``."""
        return f"{self.repo}@{self.manifest_digest}"


def upload_layout(registry: Registry, layout: Path, repo: str, tag: str = "v1") -> None:
    """Push the single-manifest layout :func:`build_oci_layout` wrote with the standard
    library (distribution's blob upload API: HEAD, POST, PUT ``?digest=``, then the
    manifest), as the registry's first account. Much faster than a skopeo process; the
    registry cannot tell the difference."""
    auth = next(iter(registry.users.items()), None)
    index = json.loads((layout / "index.json").read_text())
    manifest_desc = index["manifests"][0]

    def blob(digest: str) -> bytes:
        return (layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_bytes()

    def check(status: int, want: int, what: str, body: bytes) -> None:
        if status != want:
            raise RuntimeError(f"push {what}: HTTP {status}: {body[:200]!r}")

    manifest = blob(manifest_desc["digest"])
    parsed = json.loads(manifest)
    for desc in [parsed["config"], *parsed["layers"]]:
        digest = desc["digest"]
        status, _, _ = registry.http("HEAD", f"/v2/{repo}/blobs/{digest}", auth=auth)
        if status == 200:
            continue
        status, headers, body = registry.http("POST", f"/v2/{repo}/blobs/uploads/", auth=auth)
        check(status, 202, "start upload", body)
        location = urllib.parse.urljoin(registry.url + "/", headers["Location"])
        sep = "&" if "?" in location else "?"
        status, _, body = registry.http(
            "PUT",
            f"{location}{sep}digest={urllib.parse.quote(digest)}",
            body=blob(digest),
            headers={"Content-Type": "application/octet-stream"},
            auth=auth,
        )
        check(status, 201, f"blob {digest}", body)
    status, _, body = registry.http(
        "PUT",
        f"/v2/{repo}/manifests/{tag}",
        body=manifest,
        headers={"Content-Type": manifest_desc["mediaType"]},
        auth=auth,
    )
    check(status, 201, "manifest", body)


def push_image(
    registry: Registry,
    repo: str = "private/app",
    tag: str = "v1",
    content: bytes | None = None,
    *,
    tool: str = "http",
) -> PushedImage:
    """Build a tiny image (``content`` defaults to one unique to ``registry/repo:tag``, so
    every image has its own id) and push it as ``repo:tag``, with the standard library
    (``tool="http"``, a few ms) or ``skopeo copy`` (``tool="skopeo"``, about 0.2 s)."""
    if tool not in ("http", "skopeo"):
        raise ValueError(f"tool must be 'http' or 'skopeo', not {tool!r}")
    ref = registry.image(repo, tag)
    if content is None:
        content = f"credprov e2e image {ref}\n".encode()
    with tempfile.TemporaryDirectory(prefix="credprov-layout-") as tmp:
        layout = Path(tmp) / "layout"
        built = build_oci_layout(layout, tag, content)
        if tool == "skopeo":
            push(registry, layout, ref, tag)
        else:
            upload_layout(registry, layout, repo, tag)
    return PushedImage(
        ref=ref,
        repo=f"{registry.address}/{repo}",
        manifest_digest=built.manifest_digest,
        image_id=built.config_digest,
        size=built.size,
    )


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
