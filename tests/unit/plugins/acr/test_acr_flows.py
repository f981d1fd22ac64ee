"""``acr-credential-provider`` against the fake Azure, in process: every credential path,
what is sent where, the answer, and every bad answer (one line, exit 1, no secret).

The fake's tokens, the client secret and the service-account tokens all hold
:data:`~tests.conftest.CANARY`, so ``CANARY not in stderr`` covers them all.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from credprov_acr import cloud
from credprov_acr.main import HANDLER, NAME, OPTIONS, normalize_argv
from credprov_acr.plugin import AcrProvider, Options

from credprov.imageauth.keyring import DockerKeyring
from credprov.sdk import EXIT_ERROR, EXIT_OK, ProviderError, Request, run
from tests.conftest import CANARY
from tests.fakes import acr as fakes
from tests.fakes.acr import ACR_SERVICE, DEFAULT_TENANT, FakeAzure, jwt_claims

# The plugin's optional extra (credprov[acr]) and the fake's certificate maker.
pytest.importorskip("azure.identity")
pytest.importorskip("cryptography")

G = "credentialprovider.kubelet.k8s.io"
ZERO = "00000000-0000-0000-0000-000000000000"
ACR_AUDIENCE = "https://containerregistry.azure.net"
SA_ANNOTATIONS = {
    "kubernetes.azure.com/acr-client-id": "sa-client",
    "kubernetes.azure.com/acr-tenant-id": "sa-tenant",
}
SECRET = f"sp-secret-{CANARY}"

assert fakes.SECRET_MARK == CANARY  # the fake's tokens carry the canary


def sa_token(name: str = "builder") -> str:
    return fakes.make_jwt(
        {
            "aud": ["api://AzureADTokenExchange"],
            "kubernetes.io": {
                "namespace": "team",
                "serviceaccount": {"name": name, "uid": f"uid-{name}"},
            },
        },
        "sa",
    )


def request(image: str, version: str = "v1", token: str = "", annotations: Any = None) -> bytes:
    doc: dict[str, Any] = {
        "kind": "CredentialProviderRequest",
        "apiVersion": f"{G}/{version}",
        "image": image,
    }
    if token:
        doc["serviceAccountToken"] = token
    if annotations:
        doc["serviceAccountAnnotations"] = annotations
    return json.dumps(doc).encode()


def call(
    args: list[str],
    image: str,
    cache_dir: Path,
    token: str = "",
    annotations: dict[str, str] | None = None,
    version: str = "v1",
) -> tuple[int, dict[str, Any] | None, str, bytes]:
    """Run the plugin in-process as main() would; (code, response, stderr, raw stdout)."""
    out, err = io.BytesIO(), io.StringIO()
    code = run(
        HANDLER,
        name=NAME,
        options=OPTIONS,
        cache=True,
        cache_dir=str(cache_dir),
        argv=normalize_argv(args),
        stdin=io.BytesIO(request(image, version, token, annotations)),
        stdout=out,
        stderr=err,
    )
    raw = out.getvalue()
    return code, (json.loads(raw) if raw else None), err.getvalue(), raw


def ib_args(config: Path) -> list[str]:
    """The identity-bindings flow's command line against the fake endpoint."""
    return [
        str(config),
        f"--ib-sni-name={fakes.IB_SNI_NAME}",
        "--ib-apiserver-ip=127.0.0.1",
        "--ib-default-client-id=ib-client",
        "--ib-default-tenant-id=tenant-ib",
    ]


def tried(resp: dict[str, Any], image: str) -> list[tuple[str, str]]:
    """(username, password) the kubelet's keyring would try for ``image``, in order."""
    keyring = DockerKeyring()
    keyring.add(resp.get("auth", {}))
    return [(c.username, c.password) for c in keyring.lookup(image)]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def mi_config(azure_json: Callable[..., Path]) -> Path:
    return azure_json(useManagedIdentityExtension=True, tenantId=DEFAULT_TENANT)


# -- the token paths ---------------------------------------------------------------------------


def test_managed_identity(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    code, resp, err, raw = call([str(mi_config)], "myacr.azurecr.io/team/app", cache)
    assert code == EXIT_OK, err
    assert resp is not None
    refresh = resp["auth"]["myacr.azurecr.io"]["password"]
    assert resp["auth"] == {
        "*.azurecr.*": {"username": "", "password": ""},
        "myacr.azurecr.io": {"username": ZERO, "password": refresh},
    }
    # byte-compatible encoding: key order, compact, newline
    assert raw == (
        b'{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
        b'"cacheKeyType":"Registry","cacheDuration":"' + resp["cacheDuration"].encode() + b'",'
        b'"auth":{"*.azurecr.*":{"username":"","password":""},"myacr.azurecr.io":'
        b'{"username":"' + ZERO.encode() + b'","password":"' + refresh.encode() + b'"}}}\n'
    )
    # cached as long as the refresh token lives (3h), less the 5-minute margin
    assert resp["cacheDuration"] in ("2h55m0s", "2h54m59s")
    assert tried(resp, "myacr.azurecr.io/team/app")[0] == (ZERO, refresh)

    (imds,) = fake_azure.requests("imds")
    assert imds.query["resource"] == ACR_AUDIENCE
    assert imds.headers["Metadata"] == "true"
    assert "client_id" not in imds.query
    (challenge,) = fake_azure.requests("challenge")
    assert challenge.path == "/v2/"
    assert challenge.headers["User-Agent"] == "kubernetes-credentialprovider-acr"
    (exchange,) = fake_azure.requests("exchange")
    aad = exchange.form["access_token"]
    assert exchange.form == {
        "service": ACR_SERVICE,
        "grant_type": "access_token_refresh_token",
        "access_token": aad,
        "refresh_token": aad,
        "tenant": DEFAULT_TENANT,
    }
    assert exchange.headers["User-Agent"] == "kubernetes-credentialprovider-acr"
    assert jwt_claims(aad)["aud"] == ACR_AUDIENCE
    assert CANARY not in err


@pytest.mark.parametrize(
    ("identity", "param"),
    [
        ("mi-client-id", "client_id"),
        ("/subscriptions/s/resourcegroups/rg/providers/x/userAssignedIdentities/id", "msi_res_id"),
    ],
)
def test_user_assigned_identity(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    azure_json: Callable[..., Path],
    cache: Path,
    identity: str,
    param: str,
) -> None:
    config = azure_json(useManagedIdentityExtension=True, userAssignedIdentityID=identity)
    code, _, err, _ = call([str(config)], "myacr.azurecr.io/app", cache)
    assert code == EXIT_OK, err
    (imds,) = fake_azure.requests("imds")
    assert imds.query[param] == identity
    # no tenantId in azure.json: an empty tenant, as upstream
    assert fake_azure.requests("exchange")[0].form["tenant"] == ""


def test_service_account_token(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    token = sa_token()
    code, resp, err, _ = call(
        [str(mi_config)], "myacr.azurecr.io/app", cache, token, SA_ANNOTATIONS
    )
    assert code == EXIT_OK, err
    assert resp is not None and resp["auth"]["myacr.azurecr.io"]["username"] == ZERO
    assert fake_azure.requests("imds") == []
    (aad,) = fake_azure.requests("aad")
    assert aad.path == "/sa-tenant/oauth2/v2.0/token"
    assert aad.form["client_id"] == "sa-client"
    assert aad.form["client_assertion"] == token
    assert aad.form["scope"] == f"{ACR_AUDIENCE}/.default"
    # the exchange names the tenant of the credential (upstream: azure.json's tenantId)
    assert fake_azure.requests("exchange")[0].form["tenant"] == "sa-tenant"
    assert CANARY not in err


def test_service_accounts_are_cached_apart(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    for name in ("builder", "builder", "deployer"):
        code, _, err, _ = call(
            [str(mi_config)], "myacr.azurecr.io/app", cache, sa_token(name), SA_ANNOTATIONS
        )
        assert code == EXIT_OK, err
    assert len(fake_azure.requests("aad")) == 2  # the second builder request was a cache hit


def test_identity_bindings(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    token = sa_token()
    args = ib_args(mi_config)
    code, resp, err, _ = call(args, "myacr.azurecr.io/app", cache, token)
    assert code == EXIT_OK, err
    assert fake_azure.requests("exchange")[0].form["tenant"] == "tenant-ib"
    assert resp is not None and resp["auth"]["myacr.azurecr.io"]["username"] == ZERO
    (ib,) = fake_azure.requests("ib")
    assert ib.sni == fakes.IB_SNI_NAME
    assert ib.headers["Host"] == f"{fakes.IB_SNI_NAME}:{fake_azure.port}"
    assert ib.form == {
        "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "scope": f"{ACR_AUDIENCE}/.default",
        "client_assertion": token,
        "client_id": "ib-client",
    }
    assert fake_azure.requests("aad") == [] and fake_azure.requests("imds") == []


@pytest.mark.parametrize("retries", ["0", "1"])
def test_identity_bindings_throttling(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    retries: str,
) -> None:
    monkeypatch.setenv("CREDPROV_ACR_MAX_RETRIES", retries)
    fake_azure.set("ib", "429", "ok")
    args = ib_args(mi_config)
    code, _, err, _ = call(args, "myacr.azurecr.io/app", cache, sa_token())
    assert len(fake_azure.requests("ib")) == 1 + int(retries)
    if retries == "1":
        assert code == EXIT_OK, err
    else:
        assert code == EXIT_ERROR
        assert err.endswith(
            f"token request to the identity-bindings endpoint {fakes.IB_SNI_NAME} "
            f"(127.0.0.1:{fake_azure.port}) failed: HTTP 429 (throttled)\n"
        )


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("oversized", "is larger than the read limit"),
        ("oversized-503", "failed: HTTP 503 (unavailable)"),  # the status says more
    ],
)
def test_identity_bindings_answer_over_the_read_limit(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    problem: str,
) -> None:
    monkeypatch.setenv("CREDPROV_ACR_MAX_RETRIES", "0")
    fake_azure.set("ib", mode)
    args = ib_args(mi_config)
    code, _, err, _ = call(args, "myacr.azurecr.io/app", cache, sa_token())
    assert code == EXIT_ERROR
    where = f"identity-bindings endpoint {fakes.IB_SNI_NAME} (127.0.0.1:{fake_azure.port})"
    if mode == "oversized":
        assert err.endswith(f"the answer of the {where} {problem}\n"), err
    else:
        assert err.endswith(f"token request to the {where} {problem}\n"), err


def test_identity_bindings_needs_the_cluster_ca(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    args = ib_args(mi_config)[:-1]  # no default tenant
    monkeypatch.setenv("CREDPROV_ACR_IB_CA_FILE", str(tmp_path / "none.crt"))
    code, _, err, _ = call(args, "myacr.azurecr.io/app", cache, sa_token())
    assert code == EXIT_ERROR
    assert "read CA file" in err and err.count("\n") == 1
    other = tmp_path / "other.crt"
    fakes.Certificate.create(tmp_path / "other")
    other.write_bytes((tmp_path / "other" / "fake-azure-ca.pem").read_bytes())
    monkeypatch.setenv("CREDPROV_ACR_IB_CA_FILE", str(other))
    code, _, err, _ = call(args, "myacr.azurecr.io/app", cache, sa_token())
    assert code == EXIT_ERROR
    assert "TLS handshake with the identity-bindings endpoint" in err


def test_mirrored_image_uses_the_node_identity(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    args = [str(mi_config), "--registry-mirror=mcr.microsoft.com:myacr.azurecr.io"]
    code, resp, err, _ = call(
        args, "mcr.microsoft.com/oss/nginx", cache, sa_token(), SA_ANNOTATIONS
    )
    assert code == EXIT_OK, err
    assert resp is not None
    assert sorted(resp["auth"]) == ["*.azurecr.*", "mcr.microsoft.com", "myacr.azurecr.io"]
    assert resp["cacheKeyType"] == "Registry"
    assert tried(resp, "mcr.microsoft.com/oss/nginx")[0][0] == ZERO
    assert len(fake_azure.requests("imds")) == 1 and fake_azure.requests("aad") == []


def test_mirror_source_with_a_path_is_keyed_per_image(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    args = [str(mi_config), "-r", "mcr.microsoft.com/oss:myacr.azurecr.io/mirror"]
    code, resp, err, _ = call(args, "mcr.microsoft.com/oss/nginx", cache)
    assert code == EXIT_OK, err
    assert resp is not None and resp["cacheKeyType"] == "Image"
    assert "mcr.microsoft.com/oss" in resp["auth"]
    code, resp, err, _ = call(args, "mcr.microsoft.com/dotnet/sdk", cache)
    assert resp == {
        "kind": "CredentialProviderResponse",
        "apiVersion": f"{G}/v1",
        "cacheKeyType": "Registry",
        "cacheDuration": "0s",
    }


@pytest.mark.parametrize(
    ("cloud_name", "resource"),
    [
        ("AzurePublicCloud", "https://containerregistry.azure.net"),
        ("AzureChinaCloud", "https://management.chinacloudapi.cn"),
        ("AzureUSGovernmentCloud", "https://management.usgovcloudapi.net"),
    ],
)
def test_sovereign_cloud_scope(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    azure_json: Callable[..., Path],
    cache: Path,
    cloud_name: str,
    resource: str,
) -> None:
    config = azure_json(useManagedIdentityExtension=True, cloud=cloud_name)
    code, _, err, _ = call([str(config)], "myacr.azurecr.cn/app", cache)
    assert code == EXIT_OK, err
    assert fake_azure.requests("imds")[0].query["resource"] == resource


def test_custom_cloud_from_arm_metadata(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    azure_json: Callable[..., Path],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_azure.metadata = [
        {
            "name": "MyCloud",
            "authentication": {"loginEndpoint": fake_azure.https_url,
                               "audiences": ["https://management.my.cloud/"]},
            "suffixes": {"acrLoginServer": ".azurecr.my.cloud"},
        }
    ]  # fmt: skip
    monkeypatch.delenv("AZURE_AUTHORITY_HOST")  # the metadata's login endpoint is used
    config = azure_json(
        cloud="MyCloud",
        resourceManagerEndpoint=fake_azure.https_url,
        useManagedIdentityExtension=True,
    )
    code, resp, err, _ = call(
        [str(config)], "foo.azurecr.my.cloud/app", cache, sa_token(), SA_ANNOTATIONS
    )
    assert code == EXIT_OK, err
    assert resp is not None and "foo.azurecr.my.cloud" in resp["auth"]
    assert fake_azure.requests("metadata")[0].query == {"api-version": "2019-05-01"}
    assert fake_azure.requests("aad")[0].form["scope"] == "https://management.my.cloud/.default"
    # the service-principal answer gains the custom suffix
    sp = azure_json(
        "sp.json",
        cloud="MyCloud",
        resourceManagerEndpoint=fake_azure.https_url,
        aadClientId="sp",
        aadClientSecret=SECRET,
    )
    code, resp, err, _ = call([str(sp)], "foo.azurecr.my.cloud/app", cache)
    assert code == EXIT_OK, err
    assert resp is not None and "*.azurecr.my.cloud" in resp["auth"]


# -- answers without a token exchange ------------------------------------------------------------


def test_service_principal(
    fake_azure: FakeAzure, azure_env: dict[str, str], azure_json: Callable[..., Path], cache: Path
) -> None:
    config = azure_json(aadClientId="foo", aadClientSecret=SECRET)
    code, resp, err, _ = call([str(config)], "foo.azurecr.io/nginx", cache, sa_token(), {})
    assert code == EXIT_OK, err
    assert resp is not None
    assert resp["cacheDuration"] == "1h0m0s"
    assert resp["auth"] == {
        "*.azurecr.*": {"username": "", "password": ""},
        **{
            k: {"username": "foo", "password": SECRET}
            for k in ("*.azurecr.cn", "*.azurecr.de", "*.azurecr.io", "*.azurecr.us")
        },
    }
    assert fake_azure.calls == []  # no network at all
    assert CANARY not in err


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
@pytest.mark.parametrize("use_mi", [True, False])
def test_not_acr(azure_json: Callable[..., Path], cache: Path, version: str, use_mi: bool) -> None:
    config = azure_json(useManagedIdentityExtension=use_mi)
    code, _, err, raw = call([str(config)], "docker.io/library/busybox", cache, version=version)
    assert code == EXIT_OK, err
    assert raw == (
        b'{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/'
        + version.encode()
        + b'","cacheKeyType":"Registry","cacheDuration":"0s"}\n'
    )


def test_not_acr_needs_no_annotations(azure_json: Callable[..., Path], cache: Path) -> None:
    config = azure_json(useManagedIdentityExtension=True)
    code, _, err, _ = call([str(config)], "docker.io/library/busybox", cache, sa_token(), {})
    assert code == EXIT_OK, err


def test_invalid_mirror_entries_are_reported(azure_json: Callable[..., Path], cache: Path) -> None:
    config = azure_json(aadClientId="foo", aadClientSecret=SECRET)
    code, _, err, _ = call(
        [str(config), "-r", "bad,mcr.microsoft.com:x.azurecr.io"], "mcr.microsoft.com/x", cache
    )
    assert code == EXIT_OK
    assert "ignoring invalid --registry-mirror entry 'bad'" in err


# -- cache durations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "duration"),
    [("no-exp", "1h0m0s"), ("short", "0s")],
)
def test_cache_duration_follows_the_refresh_token(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    cache: Path,
    mode: str,
    duration: str,
) -> None:
    fake_azure.set("exchange", mode)
    code, resp, err, _ = call([str(mi_config)], "myacr.azurecr.io/app", cache)
    assert code == EXIT_OK, err
    assert resp is not None and resp["cacheDuration"] == duration


def test_second_request_is_served_from_the_plugin_cache(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    first = call([str(mi_config)], "myacr.azurecr.io/app", cache)
    second = call([str(mi_config)], "myacr.azurecr.io/other", cache)
    assert first[0] == second[0] == EXIT_OK
    assert first[1] is not None and second[1] is not None
    assert second[1]["auth"] == first[1]["auth"]
    assert len(fake_azure.requests("exchange")) == 1


# -- retries and bad answers -------------------------------------------------------------------


def provider(config: Path, args: dict[str, str] | None = None) -> tuple[AcrProvider, list[float]]:
    waits: list[float] = []
    opts = Options.from_mapping({"azure-config": str(config), **(args or {})})
    return AcrProvider(opts, sleep=waits.append), waits


@pytest.mark.parametrize("endpoint", ["challenge", "exchange"])
def test_throttling_is_retried(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CREDPROV_ACR_MAX_RETRIES", "1")
    fake_azure.set(endpoint, "429", "ok")
    prov, waits = provider(mi_config)
    resp = prov.provide(Request("myacr.azurecr.io/app"))
    assert "myacr.azurecr.io" in resp.auth
    assert len(fake_azure.requests(endpoint)) == 2
    assert waits == [0.0]  # urllib3 retries once at once (no Retry-After)


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        ("2", 2.0),
        ("600", 5.0),  # capped
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: now
        ("soon", 0.5),  # does not parse: urllib3's backoff for a second retry
        (None, 0.5),
    ],
)
def test_retry_after_is_honoured_but_capped(retry_after: str | None, wait: float) -> None:
    from credprov_acr import _http
    from urllib3 import HTTPResponse

    waits: list[float] = []
    logs: list[str] = []
    headers = {"Retry-After": retry_after} if retry_after else {}
    response = HTTPResponse(status=429, headers=headers)
    policy = _http.retry(2, waits.append, lambda level, message: logs.append(message))
    policy = policy.increment("GET", "/v2/", response=HTTPResponse(status=503))
    policy = policy.increment("GET", "/v2/", response=response)
    policy.sleep(response)
    assert len(waits) == 1 and wait <= waits[0] <= wait + (
        0.25 if retry_after in (None, "soon") else 0
    )
    assert logs == [f"/v2/: HTTP 429 (throttled); retry 2/2 in {waits[0]:.1f}s"]


def test_aad_throttling_is_retried(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CREDPROV_ACR_MAX_RETRIES", "1")
    fake_azure.set("imds", "429", "ok")
    prov, _ = provider(mi_config)
    assert "myacr.azurecr.io" in prov.provide(Request("myacr.azurecr.io/app")).auth
    assert len(fake_azure.requests("imds")) == 2


# (name, endpoint modes, uses SA token, expected message start)
BAD_ANSWERS = [
    ("imds throttled", {"imds": "429"}, False,
     "failed to get an AAD token with the managed identity: ManagedIdentityCredential "
     "authentication unavailable"),
    ("imds 500", {"imds": "500"}, False, "failed to get an AAD token with the managed identity"),
    ("imds malformed", {"imds": "malformed"}, False,
     "failed to get an AAD token with the managed identity"),
    ("imds no identity", {"imds": "no-identity"}, False,
     "failed to get an AAD token with the managed identity"),
    ("aad throttled", {"aad": "429"}, True,
     "failed to get an AAD token with the service account token (client id sa-client, "
     "tenant sa-tenant): HTTP 429 (throttled): Microsoft Entra ID error"),
    ("aad wrong tenant", {"aad": "unknown-tenant"}, True,
     "failed to get an AAD token with the service account token (client id sa-client, "
     "tenant sa-tenant): HTTP 400: Microsoft Entra ID error '(invalid_request) AADSTS90002: Tenant "
     "'sa-tenant' not found.'"),
    ("aad echoes the assertion", {"aad": "echo"}, True, "failed to get an AAD token"),
    ("aad malformed", {"aad": "malformed"}, True, "failed to get an AAD token"),
    ("challenge throttled", {"challenge": "429"}, False,
     "registry myacr.azurecr.io did not issue a valid AAD challenge, status: 429 (throttled)"),
    ("challenge 500", {"challenge": "500"}, False,
     "registry myacr.azurecr.io did not issue a valid AAD challenge, status: 500 (server error)"),
    ("no challenge", {"challenge": "no-challenge"}, False,
     "registry myacr.azurecr.io did not issue a valid AAD challenge, status: 200"),
    ("two challenges", {"challenge": "two-headers"}, False,
     "registry did not issue a valid AAD challenge (2 Www-Authenticate headers)"),
    ("basic challenge", {"challenge": "basic"}, False,
     "Www-Authenticate: expected realm: Bearer, actual: basic"),
    ("challenge without realm", {"challenge": "no-realm"}, False,
     'Www-Authenticate: missing header "realm"'),
    ("challenge without header", {"challenge": "no-header"}, False,
     "challenge response does not contain header 'Www-Authenticate'"),
    ("exchange throttled", {"exchange": "429"}, False,
     "ACR token exchange for myacr.azurecr.io failed: HTTP 429 (throttled): TOOMANYREQUESTS"),
    ("exchange 500", {"exchange": "500"}, False,
     "ACR token exchange for myacr.azurecr.io failed: HTTP 500 (server error)"),
    ("exchange malformed JSON", {"exchange": "malformed"}, False,
     "ACR token exchange for myacr.azurecr.io returned a response that is not JSON"),
    ("exchange oversized", {"exchange": "oversized"}, False,
     "ACR token exchange for myacr.azurecr.io: the response is larger than the read limit"),
    ("exchange without token", {"exchange": "no-token"}, False,
     "ACR token exchange for myacr.azurecr.io returned no refresh_token"),
    ("expired refresh token", {"exchange": "expired"}, False,
     "ACR token exchange for myacr.azurecr.io returned an expired refresh token (expired 60s ago"),
    ("exchange echoes the AAD token", {"exchange": "echo"}, False,
     "ACR token exchange for myacr.azurecr.io failed: HTTP 401 (unauthorized): UNAUTHORIZED: "
     "<redacted>"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("modes", "with_token", "message"),
    [c[1:] for c in BAD_ANSWERS],
    ids=[c[0] for c in BAD_ANSWERS],
)
def test_bad_answers(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    cache: Path,
    modes: dict[str, str],
    with_token: bool,
    message: str,
) -> None:
    for endpoint, mode in modes.items():
        fake_azure.set(endpoint, mode)
    token, annotations = (sa_token(), SA_ANNOTATIONS) if with_token else ("", None)
    code, _, err, raw = call([str(mi_config)], "myacr.azurecr.io/app", cache, token, annotations)
    assert code == EXIT_ERROR
    assert raw == b""
    expected = message.replace("PORT", str(fake_azure.port))
    assert err.startswith(f"{NAME}: {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert CANARY not in err


def test_wrong_tenant_at_the_exchange(
    fake_azure: FakeAzure, azure_env: dict[str, str], azure_json: Callable[..., Path], cache: Path
) -> None:
    config = azure_json(useManagedIdentityExtension=True, tenantId="some-other-tenant")
    code, _, err, _ = call([str(config)], "myacr.azurecr.io/app", cache)
    assert code == EXIT_ERROR
    assert err == (
        f"{NAME}: ACR token exchange for myacr.azurecr.io failed: HTTP 401 (unauthorized): "
        "UNAUTHORIZED: tenant does not match token\n"
    )


def test_realm_elsewhere_gets_no_token(
    fake_azure: FakeAzure, azure_env: dict[str, str], mi_config: Path, cache: Path
) -> None:
    fake_azure.realm = "https://collector.example.com/oauth2/token"
    code, _, err, _ = call([str(mi_config)], "myacr.azurecr.io/app", cache)
    assert code == EXIT_ERROR
    assert "the realm host 'collector.example.com' of myacr.azurecr.io is not an ACR host" in err
    assert fake_azure.requests("exchange") == []
    fake_azure.realm = f"http://127.0.0.1:{fake_azure.port}/oauth2/token"
    code, _, err, _ = call([str(mi_config)], "myacr.azurecr.io/app", cache)
    assert "is not an https URL" in err


def test_unreachable_login_server(
    azure_env: dict[str, str], mi_config: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("CREDPROV_ACR_LOGIN_SERVER_URL", f"https://127.0.0.1:{port}")
    code, _, err, _ = call([str(mi_config)], "myacr.azurecr.io/app", cache)
    assert code == EXIT_ERROR
    assert (
        err == f"{NAME}: AAD challenge from myacr.azurecr.io: cannot connect to 127.0.0.1:{port}\n"
    )


def test_untrusted_certificate(
    fake_azure: FakeAzure,
    azure_env: dict[str, str],
    mi_config: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fake's CA only in REQUESTS_CA_BUNDLE, which Go (and so the plugin) ignores: the
    node's store does not trust it."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", azure_env["SSL_CERT_FILE"])
    monkeypatch.delenv("SSL_CERT_FILE")
    code, _, err, _ = call([str(mi_config)], "myacr.azurecr.io/app", cache)
    assert code == EXIT_ERROR
    assert "TLS handshake with 127.0.0.1" in err and err.count("\n") == 1


def test_secrets_are_scrubbed_from_any_message(azure_json: Callable[..., Path]) -> None:
    """Defence in depth: whatever raises, the handler scrubs what it has seen."""
    config = azure_json(aadClientSecret=SECRET, useManagedIdentityExtension=True)
    prov, _ = provider(config)

    def boom(request: Request) -> Any:
        from credprov_acr import config as cfg

        prov.secrets.add(cfg.load(str(config)).aad_client_secret)
        raise ProviderError(f"oops {SECRET} and {request.service_account_token}")

    prov._provide = boom  # type: ignore[method-assign]
    with pytest.raises(ProviderError) as err:
        prov.provide(Request("myacr.azurecr.io/app", service_account_token=sa_token()))
    assert CANARY not in str(err.value)
    assert str(err.value) == "oops <redacted> and <redacted>"


def test_environment_defaults_are_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the knobs the plugin talks to the real endpoints (never reached here)."""
    from credprov_acr import identity_bindings
    from credprov_acr.exchange import AcrClient

    for name in (
        "CREDPROV_ACR_LOGIN_SERVER_URL",
        "CREDPROV_ACR_IB_CA_FILE",
        "CREDPROV_ACR_IB_PORT",
    ):
        monkeypatch.delenv(name, raising=False)
    assert AcrClient().challenge_url("foo.azurecr.io") == "https://foo.azurecr.io/v2/"
    assert identity_bindings._ca_file() == "/etc/kubernetes/certs/ca.crt"
    assert identity_bindings._port() == 443
    assert cloud.resolve("") == cloud.PUBLIC
    assert time.time() > 0


def test_apiserver_address_may_be_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from credprov_acr.identity_bindings import IdentityBindingsError, resolve_apiserver

    assert resolve_apiserver("10.0.0.1") == "10.0.0.1"
    assert resolve_apiserver("fd00::1") == "fd00::1"

    def fake_getaddrinfo(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        if host == "apiserver.internal":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0))]
        raise socket.gaierror("no such host")

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    assert resolve_apiserver("apiserver.internal") == "127.0.0.1"
    with pytest.raises(IdentityBindingsError) as err:
        resolve_apiserver("nope.internal")
    assert str(err.value) == (
        "--ib-apiserver-ip must be a valid IP address or resolvable FQDN, got: nope.internal"
    )
