"""Does a cloud plugin trust the node's CA store? One plugin run against a TLS fake, in a root.

The question of issue 30, item 4: a TLS-inspecting proxy whose CA only the node trusts must
work with credprov's plugins as it does with upstream's Go plugins. :func:`run_over_tls`
answers it for one plugin, one node root and one store layout:

1. a :class:`~tests.fakes.tls.TestCA` made for the run issues the certificate of the
   cloud's loopback fake (moto's ECR and STS, the GCE metadata server with a
   ``google-dockercfg-url`` served over HTTPS, the fake Azure with its ACR login server);
2. :func:`plant_store` writes a node store of ``layout`` (:data:`LAYOUTS`: ``debian``,
   ``rhel``) into ``root`` holding that CA (``trusted``) or only a decoy CA (not trusted);
3. the plugin runs once through a :class:`PluginRunner`, which decides how the plugin sees
   ``root`` and where its executable is; the result says what it answered.

Two runners: :class:`LauncherRunner` (this repository's installed launchers, the lookup
rooted at ``root`` by ``$CREDPROV_CA_ROOT``, the SDK's test-only variable) and, for the
frozen bundle, one that runs the bundle's executable chrooted in ``root`` (with ``/`` as the
lookup's root, nothing set), which only has to implement the two methods of
:class:`PluginRunner`. Every path the plugin is given (its config file, its cache, a CA
named by ``SSL_CERT_FILE``) is a node path translated by :meth:`PluginRunner.node_path`, so
one test body serves both.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from credprov.sdk.cacerts import CERT_FILES
from tests.fakes.tls import ServerCertificate, TestCA

__all__ = [
    "CLOUDS",
    "LAYOUTS",
    "ChrootRunner",
    "LauncherRunner",
    "PluginRunner",
    "TLSRun",
    "plant_store",
    "run_over_tls",
]

#: A store layout: the bundle's node path, then (link, target) pairs, as the OS lays them out.
LAYOUTS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    # ca-certificates: the bundle, and one link per CA into /usr/share (plus OpenSSL's hash link)
    "debian": (
        "/etc/ssl/certs/ca-certificates.crt",
        (
            ("/etc/ssl/certs/credprov-decoy.pem", "/usr/share/ca-certificates/decoy.crt"),
            ("/etc/ssl/certs/0badc0de.0", "credprov-decoy.pem"),
        ),
    ),
    # ca-certificates (update-ca-trust): the extracted bundle, the historic name a link to it
    "rhel": (
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        (
            (
                "/etc/pki/tls/certs/ca-bundle.crt",
                "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
            ),
            ("/etc/ssl/certs", "/etc/pki/tls/certs"),
        ),
    ),
}

#: The scenarios (the plugin, and which of its HTTPS clients is checked) -> the plugin.
CLOUDS = {
    "ecr": "ecr-credential-provider",  # botocore: ECR's GetAuthorizationToken
    "gcp": "auth-provider-gcp",  # requests: a google-dockercfg-url over HTTPS
    "gcp-sts": "auth-provider-gcp",  # google-auth's STS client (workload identity)
    "acr": "acr-credential-provider",  # requests: the /v2/ challenge and the exchange
    "acr-sa": "acr-credential-provider",  # azure-identity / azure-core: AAD, then ACR
}

G = "credentialprovider.kubelet.k8s.io"
ECR_HOST = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
GCP_REGISTRY = "https://registry.corp.example"
ACR_HOST = "myacr.azurecr.io"


class PluginRunner(Protocol):
    """How a plugin runs on a node whose filesystem is ``root``."""

    def node_path(self, root: Path, path: str) -> str:
        """``path`` (a node path) as the plugin must be given it."""
        ...

    def run(
        self,
        root: Path,
        plugin: str,
        args: Sequence[str],
        stdin: bytes,
        env: Mapping[str, str],
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``plugin`` (its executable's name) once with exactly ``env``."""
        ...


@dataclass(frozen=True)
class LauncherRunner:
    """The launchers ``credprov install`` wrote into ``bin_dir``, run on this machine; the
    CA lookup reads ``root`` through ``$CREDPROV_CA_ROOT``."""

    bin_dir: Path

    def node_path(self, root: Path, path: str) -> str:
        return str(root / path.lstrip("/"))

    def run(
        self,
        root: Path,
        plugin: str,
        args: Sequence[str],
        stdin: bytes,
        env: Mapping[str, str],
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(self.bin_dir / plugin), *args],
            input=stdin,
            capture_output=True,
            env={**env, "CREDPROV_CA_ROOT": str(root)},
            timeout=90,
            check=False,
        )


@dataclass(frozen=True)
class ChrootRunner:
    """Plugins installed in ``root``'s ``bin_dir`` (a node path), run chrooted in ``root``
    as the node's kubelet runs them: the CA lookup reads the node's ``/``, nothing set."""

    bin_dir: str

    def node_path(self, root: Path, path: str) -> str:
        return path

    def run(
        self,
        root: Path,
        plugin: str,
        args: Sequence[str],
        stdin: bytes,
        env: Mapping[str, str],
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["chroot", str(root), f"{self.bin_dir}/{plugin}", *args],
            input=stdin,
            capture_output=True,
            env=dict(env),
            timeout=180,
            check=False,
        )


def _write(root: Path, node_path: str, data: bytes) -> None:
    path = root / node_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()  # never written through: a node root's files may be hard links
    path.write_bytes(data)


def plant_store(root: Path, layout: str, cas: Sequence[TestCA], decoy: TestCA) -> None:
    """Write the store of ``layout`` into ``root``: a bundle of ``decoy`` and ``cas``, and the
    layout's links. The bundles of the other layouts (:data:`CERT_FILES`) are removed, so
    the layout under test is the one read (a real node root keeps its directories).
    """
    bundle, links = LAYOUTS[layout]
    for node_path in CERT_FILES:
        path = root / node_path.lstrip("/")
        if path.is_symlink() or path.is_file():
            path.unlink()
    _write(root, bundle, b"".join(ca.pem for ca in (decoy, *cas)))
    _write(root, "/usr/share/ca-certificates/decoy.crt", decoy.pem)
    for link, target in links:
        path = root / link.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            continue  # a real root's directory stays; its files are the node's
        path.symlink_to(target)


@dataclass
class TLSRun:
    """One plugin run and what it answered."""

    cloud: str
    result: subprocess.CompletedProcess[bytes]
    response: dict[str, Any] | None = None
    stderr: str = ""
    expected_key: str = ""

    @property
    def auth(self) -> dict[str, Any]:
        return (self.response or {}).get("auth") or {}

    @property
    def reached(self) -> bool:
        """Whether the plugin got credentials through the TLS endpoint."""
        return self.result.returncode == 0 and self.expected_key in self.auth

    @property
    def refused_tls(self) -> bool:
        """Whether it failed, saying that the certificate was not trusted."""
        said = self.stderr.lower()
        return not self.reached and any(
            word in said for word in ("certificate verify failed", "tls handshake")
        )


@dataclass
class _Fake:
    env: dict[str, str]
    args: list[str]
    request: dict[str, Any]
    expected_key: str
    files: dict[str, bytes] = field(default_factory=dict)


@contextlib.contextmanager
def _ecr(cert: ServerCertificate) -> Iterator[_Fake]:
    from tests.fakes.ecr import fake_aws

    with fake_aws(tls=cert) as aws:
        yield _Fake(
            env={
                "AWS_ACCESS_KEY_ID": "AKIDNODE",
                "AWS_SECRET_ACCESS_KEY": "node-secret",
                "AWS_ENDPOINT_URL": aws.url,
                "AWS_REGION": "us-west-2",
                "AWS_CONFIG_FILE": "/nonexistent/aws-config",
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_MAX_ATTEMPTS": "1",
            },
            args=[],
            request={"image": f"{ECR_HOST}/app"},
            expected_key=ECR_HOST,
        )


@contextlib.contextmanager
def _gcp(cert: ServerCertificate) -> Iterator[_Fake]:
    from tests.fakes.gcp import FakeMetadataServer
    from tests.fakes.server import FakeServer, Reply

    auth = base64.b64encode(b"corp-user:corp-password").decode()
    with FakeMetadataServer() as mds, FakeServer(tls=cert) as docs:
        docs.script("GET", "/dockercfg", Reply(200, {GCP_REGISTRY: {"auth": auth}}))
        mds.set_attribute("google-dockercfg-url", docs.url("/dockercfg"))
        yield _Fake(
            env={"GCE_METADATA_HOST": mds.host},
            args=["get-credentials", "--authFlow=dockercfg-url"],
            request={"image": "registry.corp.example/app"},
            expected_key=GCP_REGISTRY,
        )


@contextlib.contextmanager
def _acr(cert: ServerCertificate) -> Iterator[_Fake]:
    from tests.fakes import acr

    with acr.running(cert) as azure:
        config = {"useManagedIdentityExtension": True, "tenantId": acr.DEFAULT_TENANT}
        yield _Fake(
            env={
                "AZURE_POD_IDENTITY_AUTHORITY_HOST": azure.imds_url,
                "AZURE_AUTHORITY_HOST": azure.https_url,
                "CREDPROV_ACR_LOGIN_SERVER_URL": azure.https_url,
                "CREDPROV_ACR_MAX_RETRIES": "0",
            },
            args=["@/etc/kubernetes/azure.json"],
            request={"image": f"{ACR_HOST}/app"},
            expected_key=ACR_HOST,
            files={"/etc/kubernetes/azure.json": json.dumps(config).encode()},
        )


@contextlib.contextmanager
def _gcp_sts(cert: ServerCertificate) -> Iterator[_Fake]:
    from tests.fakes.gcp import FakeMetadataServer, FakeSTSServer

    with FakeMetadataServer() as mds, FakeSTSServer(tls=cert) as sts:
        yield _Fake(
            env={"GCE_METADATA_HOST": mds.host, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint},
            args=[
                "get-credentials",
                "--identity-provider=https://container.googleapis.com/v1/projects/p/x",
                "--project-id=p",
            ],
            request={
                "image": "us-docker.pkg.dev/p/r/app",
                "serviceAccountToken": SA_TOKEN,
                "serviceAccountAnnotations": {"iam.gke.io/enable-wi-image-pull": "true"},
            },
            expected_key="us-docker.pkg.dev",
        )


@contextlib.contextmanager
def _acr_sa(cert: ServerCertificate) -> Iterator[_Fake]:
    with _acr(cert) as fake:
        fake.request.update(
            serviceAccountToken=SA_TOKEN,
            serviceAccountAnnotations={
                "kubernetes.azure.com/acr-client-id": "pod-client",
                "kubernetes.azure.com/acr-tenant-id": "pod-tenant",
            },
        )
        yield fake


#: A service-account token (its signature is never checked by the fakes).
SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YTpiIn0.c2ln"

_FAKES = {"ecr": _ecr, "gcp": _gcp, "gcp-sts": _gcp_sts, "acr": _acr, "acr-sa": _acr_sa}


def run_over_tls(
    cloud: str,
    root: Path,
    runner: PluginRunner,
    *,
    layout: str,
    trusted: bool,
    extra_env: Mapping[str, str] | None = None,
    extra_cas: Sequence[TestCA] = (),
) -> TLSRun:
    """Run ``cloud``'s plugin once against its fake served over TLS (see the module
    docstring), with a store of ``layout`` in ``root`` that holds the fake's CA when
    ``trusted``.

    Args:
        extra_env: more variables. ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` hold node paths
            as they are (the lookup resolves them inside the root, as under chroot); a
            value starting with ``@`` is a node path read by something else (a library's
            own variable, ``AWS_CA_BUNDLE``), given through :meth:`PluginRunner.node_path`.
            The fake's CA is written to the
            node path ``/opt/credprov-test/fake-ca.pem`` and its directory
            ``/opt/credprov-test/certs/`` whatever ``trusted`` says, for ``SSL_CERT_FILE``
            and ``SSL_CERT_DIR`` cases.
        extra_cas: more CAs for the store (besides the decoy).
    """
    ca, decoy = TestCA(f"credprov {cloud} test CA"), TestCA("credprov decoy CA")
    work = root / "tmp" / f"credprov-catrust-{cloud}"
    cert = ca.issue(work / "server")
    plant_store(root, layout, [*extra_cas, *([ca] if trusted else [])], decoy)
    _write(root, "/opt/credprov-test/fake-ca.pem", ca.pem)
    _write(root, "/opt/credprov-test/certs/fake-ca.pem", ca.pem)
    (work / "cache").mkdir(parents=True, exist_ok=True)
    (work / "home").mkdir(parents=True, exist_ok=True)

    def given(value: str) -> str:
        return runner.node_path(root, value[1:]) if value.startswith("@") else value

    with _FAKES[cloud](cert) as fake:
        for node_path, data in fake.files.items():
            _write(root, node_path, data)
        rel = f"/{work.relative_to(root)}"
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": runner.node_path(root, f"{rel}/home"),
            "CREDPROV_PLUGIN_CACHE_DIR": runner.node_path(root, f"{rel}/cache"),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            **fake.env,
        }
        env.update({k: given(v) for k, v in (extra_env or {}).items()})
        request = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", **fake.request}
        result = runner.run(
            root,
            CLOUDS[cloud],
            [given(a) for a in fake.args],
            json.dumps(request).encode(),
            env,
        )
    stderr = result.stderr.decode("utf-8", "replace")
    try:
        response = json.loads(result.stdout) if result.stdout.strip() else None
    except ValueError:
        response = None
    return TLSRun(cloud, result, response, stderr, fake.expected_key)
