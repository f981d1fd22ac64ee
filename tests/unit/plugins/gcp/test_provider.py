"""auth-provider-gcp against loopback fakes of the metadata server and STS, in-process.

Tables: the key set per image (upstream's ``TestContainerRegistry``), cacheDuration from
``expires_in`` and ``KUBE_SIDECAR_CACHE_DURATION``, ``KUBE_SIDECAR_CACHE_TYPE``, workload
identity (upstream's ``TestProvide_WorkloadIdentity`` cases), the dockercfg flows
(``TestConfigProvider`` / ``TestConfigURLProvider``) and every bad answer, which must give
exit 1 and one stderr line without a secret.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from credprov_gcp._http import MAX_RETRY_DELAY, HttpFailure, Transport, run_budget, safe_url
from credprov_gcp.registries import is_google_registry, registry_keys
from credprov_gcp.tokens import AccessToken, token_cache_duration, token_expires_at

from credprov._go.durations import SECOND
from credprov.imageauth.keyring import DockerKeyring
from credprov.sdk.http import Budget
from tests.conftest import CANARY
from tests.fakes.gcp import (
    EMAIL_PATH,
    STS_PATH,
    TOKEN_PATH,
    FakeMetadataServer,
    FakeSTSServer,
    token_reply,
)
from tests.fakes.server import Reply, closed_port
from tests.unit.plugins.gcp.conftest import (
    FEDERATED_TOKEN,
    NODE_TOKEN,
    assert_one_clean_line,
    call,
)

FIXED = ["container.cloud.google.com", "gcr.io", "*.gcr.io", "*.pkg.dev"]
ARGS = ["get-credentials", "--v=3"]


@pytest.fixture
def env(mds: FakeMetadataServer) -> dict[str, str]:
    return {"GCE_METADATA_HOST": mds.host}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "plugin-cache"


def keys(auth: dict[str, Any]) -> list[str]:
    return sorted(auth)


# -- the gcr flow: key set --------------------------------------------------------------------

KEY_SETS: dict[str, tuple[str, list[str], list[str]]] = {
    "gcr.io": ("gcr.io/my-project/app", [], FIXED),
    "regional gcr": ("eu.gcr.io/my-project/app", [], ["eu.gcr.io", *FIXED]),
    "artifact registry": (
        "us-docker.pkg.dev/my-project/repo/app",
        [],
        ["us-docker.pkg.dev", *FIXED],
    ),
    "container.cloud.google.com": ("container.cloud.google.com/x/app", [], FIXED),
    # upstream's TestContainerRegistry image, answered only when allowed
    "non-Google, allowed": (
        "registry.k8s.io/pause",
        ["--allow-non-google-registries"],
        ["registry.k8s.io", *FIXED],
    ),
    "non-Google, refused": ("registry.k8s.io/pause", [], []),
    "docker hub, refused": ("docker.io/library/nginx", [], []),
    "look-alike, refused": ("evilgcr.io/x/app", [], []),
    "port, refused": ("gcr.io:443/x/app", [], []),
    "no registry part": ("app", [], FIXED),
}


@pytest.mark.parametrize("image, extra, expected", KEY_SETS.values(), ids=KEY_SETS.keys())
def test_key_set(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    image: str,
    extra: list[str],
    expected: list[str],
) -> None:
    result = call([*ARGS, *extra], env, cache, image)
    assert result.code == 0, result.stderr
    assert keys(result.auth) == sorted(expected)
    for entry in result.auth.values():
        assert entry == {"username": "_token", "password": NODE_TOKEN}
    assert result.response is not None
    if expected:
        assert result.response["cacheKeyType"] == "Image"
        assert result.response["cacheDuration"] == "54m59s"
        if "/" in image:  # the kubelet's keyring finds the token for the image
            keyring = DockerKeyring()
            keyring.add(result.auth)
            assert [c.password for c in keyring.lookup(image)][:1] == [NODE_TOKEN]
    else:
        # Refused: nothing asked from the metadata server, an answer cached per registry.
        assert mds.requests == []
        assert result.response["cacheKeyType"] == "Registry"
        assert result.response["cacheDuration"] == "1h0m0s"
        assert "not a Google registry" in result.stderr


def test_registry_helpers() -> None:
    assert registry_keys("gcr.io/p/a") == FIXED[1:2] + FIXED[:1] + FIXED[2:]
    assert is_google_registry("europe-west1-docker.pkg.dev")
    assert is_google_registry("marketplace.gcr.io")
    assert not is_google_registry("pkg.dev.evil.com")
    assert not is_google_registry("a.b.gcr.io")  # one label per '*', as the kubelet matches


def test_upstream_response_bytes(env: dict[str, str], cache: Path) -> None:
    """With KUBE_SIDECAR_CACHE_DURATION set, an answer is byte for byte upstream's."""
    result = call(ARGS, {**env, "KUBE_SIDECAR_CACHE_DURATION": "1m"}, cache, "gcr.io/p/app")
    entry = {"username": "_token", "password": NODE_TOKEN}
    expected = {
        "kind": "CredentialProviderResponse",
        "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
        "cacheKeyType": "Image",
        "cacheDuration": "1m0s",
        "auth": {k: entry for k in sorted(FIXED)},
    }
    assert result.raw == (json.dumps(expected, separators=(",", ":")) + "\n").encode()


def test_metadata_requests_are_upstreams(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer
) -> None:
    assert call(ARGS, env, cache).code == 0
    assert mds.paths() == [TOKEN_PATH, EMAIL_PATH]
    for req in mds.requests:
        assert req.method == "GET"
        assert req.query == ""  # no ?scopes= (google-auth's Credentials would add it)
        assert req.headers["metadata-flavor"] == "Google"
        assert req.headers["user-agent"] == "GKE auth-provider-gcp image pull"


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_answers_in_the_requested_version(env: dict[str, str], cache: Path, version: str) -> None:
    result = call(ARGS, env, cache, version=version)
    assert result.response is not None
    assert result.response["apiVersion"] == f"credentialprovider.kubelet.k8s.io/{version}"


# -- cacheDuration and cacheKeyType ----------------------------------------------------------

DURATIONS: dict[str, tuple[Any, str | None, str]] = {
    "fresh token": (3599, None, "54m59s"),
    "fractional expires_in": (3599.9, None, "54m59s"),
    "env shortens": (3599, "1m", "1m0s"),
    "env cannot outlive the token": (3599, "2h", "54m59s"),
    "env 0s disables caching": (3599, "0s", "0s"),
    "token inside the skew: use, do not cache": (200, None, "0s"),
    "token inside the skew, env set": (200, "1m", "0s"),
    "lifetime capped at an hour": (86400, None, "55m0s"),
    "negative env passed on as upstream": (3599, "-1m", "-1m0s"),
}


@pytest.mark.parametrize("expires_in, sidecar, expected", DURATIONS.values(), ids=DURATIONS.keys())
def test_cache_duration(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    expires_in: Any,
    sidecar: str | None,
    expected: str,
) -> None:
    mds.set_token(NODE_TOKEN, expires_in)
    environ = dict(env)
    if sidecar is not None:
        environ["KUBE_SIDECAR_CACHE_DURATION"] = sidecar
    result = call(ARGS, environ, cache)
    assert result.code == 0, result.stderr
    assert result.response is not None
    assert result.response["cacheDuration"] == expected


# A token without expires_in is used as upstream uses it (upstream never reads expires_in),
# with an unknown lifetime: cacheDuration 0s, which KUBE_SIDECAR_CACHE_DURATION cannot raise.
NO_EXPIRY: dict[str, tuple[dict[str, Any], str | None, str]] = {
    "absent": ({"access_token": NODE_TOKEN}, None, "0s"),
    "null": ({"access_token": NODE_TOKEN, "expires_in": None}, None, "0s"),
    "absent, env set": ({"access_token": NODE_TOKEN, "token_type": "Bearer"}, "1h", "0s"),
    "absent, negative env passed on": ({"access_token": NODE_TOKEN}, "-1m", "-1m0s"),
}


@pytest.mark.parametrize("body, sidecar, expected", NO_EXPIRY.values(), ids=NO_EXPIRY.keys())
def test_token_without_expires_in_is_used_not_cached(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    body: dict[str, Any],
    sidecar: str | None,
    expected: str,
) -> None:
    mds.script("GET", TOKEN_PATH, Reply(200, body))
    environ = {**env, **({"KUBE_SIDECAR_CACHE_DURATION": sidecar} if sidecar else {})}
    result = call(ARGS, environ, cache)
    assert result.code == 0, result.stderr
    assert result.response is not None
    assert result.response["cacheDuration"] == expected
    assert keys(result.response["auth"]) == sorted(FIXED)
    assert {a["password"] for a in result.response["auth"].values()} == {NODE_TOKEN}
    assert "no expires_in" in result.stderr  # the -v 2 line says why it is not cached
    assert NODE_TOKEN not in result.stderr


def test_token_cache_duration_function() -> None:
    assert token_cache_duration(3599, None) == "54m59s"
    assert token_cache_duration(301, None) == "1s"
    assert token_cache_duration(300, None) == "0s"
    assert token_cache_duration(3599, 90 * SECOND) == "1m30s"


@pytest.mark.parametrize(
    ("expires_in", "want"),
    [(3599, 1003599.0), (7200, 1003600.0), (-5, 1000000.0), (None, None)],
    ids=["token-lifetime", "capped-at-an-hour", "negative-is-now", "no-expires_in"],
)
def test_token_expires_at_for_telemetry(expires_in: float | None, want: float | None) -> None:
    token = AccessToken("t", expires_in, "node service account")
    assert token_expires_at(token, 1_000_000.0) == want


CACHE_TYPES = {
    "unset": ("", "Image"),
    "image": ("image", "Image"),
    "registry": ("registry", "Registry"),
    "global": ("global", "Global"),
}


@pytest.mark.parametrize("value, expected", CACHE_TYPES.values(), ids=CACHE_TYPES.keys())
def test_cache_key_type(env: dict[str, str], cache: Path, value: str, expected: str) -> None:
    environ = {**env, "KUBE_SIDECAR_CACHE_TYPE": value} if value else env
    result = call(ARGS, environ, cache)
    assert result.response is not None, result.stderr
    assert result.response["cacheKeyType"] == expected


BAD_ENV: dict[str, tuple[dict[str, str], str]] = {
    "cache type is lower case only": (
        {"KUBE_SIDECAR_CACHE_TYPE": "Image"},
        'KUBE_SIDECAR_CACHE_TYPE: Unknown cache key "Image"',
    ),
    "unknown cache type": (
        {"KUBE_SIDECAR_CACHE_TYPE": "pod"},
        'KUBE_SIDECAR_CACHE_TYPE: Unknown cache key "pod"',
    ),
    "bad duration": (
        {"KUBE_SIDECAR_CACHE_DURATION": "soon"},
        'KUBE_SIDECAR_CACHE_DURATION: time: invalid duration "soon"',
    ),
    "metadata host is not a URL": (
        {"GCE_METADATA_HOST": "http://169.254.169.254"},
        'GCE_METADATA_HOST must be host or host:port, not "http://169.254.169.254"',
    ),
    "sts endpoint in clear text": (
        {"CREDPROV_GCP_STS_ENDPOINT": "http://sts.example.com/v1/token"},
        "plain http is allowed only on a loopback address",
    ),
    "sts endpoint not a URL": (
        {"CREDPROV_GCP_STS_ENDPOINT": "sts.example.com"},
        "not an http(s) URL",
    ),
}


@pytest.mark.parametrize("environ, message", BAD_ENV.values(), ids=BAD_ENV.keys())
def test_bad_environment(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer, environ: dict[str, str], message: str
) -> None:
    line = assert_one_clean_line(call(ARGS, {**env, **environ}, cache))
    assert message in line
    assert mds.requests == []


# -- bad answers -------------------------------------------------------------------------------

BAD_ANSWERS: dict[str, tuple[str, list[Reply], str]] = {
    "throttled": (
        TOKEN_PATH,
        [Reply(429, f"slow down {CANARY}")],
        "node service account token: HTTP 429 Too Many Requests (3 attempts)",
    ),
    "server error": (
        TOKEN_PATH,
        [Reply(500, CANARY)],
        "HTTP 500 Internal Server Error (3 attempts)",
    ),
    "forbidden is not retried": (TOKEN_PATH, [Reply(403, CANARY)], "HTTP 403 Forbidden"),
    "not found": (TOKEN_PATH, [Reply(404)], "node service account token: HTTP 404 Not Found"),
    "malformed JSON": (
        TOKEN_PATH,
        [Reply(200, '{"access_token": "' + NODE_TOKEN)],
        "malformed token response (not JSON)",
    ),
    "over the size cap": (
        TOKEN_PATH,
        [Reply(200, b"x" * (10 * 1024 * 1024 + 1))],
        "the node service account token: response larger than 10 MiB",
    ),
    "not an object": (TOKEN_PATH, [Reply(200, json.dumps([NODE_TOKEN]))], "not a JSON object"),
    "no access_token": (
        TOKEN_PATH,
        [Reply(200, {"expires_in": 3599, "token": NODE_TOKEN})],
        "malformed token response (no access_token)",
    ),
    "expires_in a string": (TOKEN_PATH, [token_reply(NODE_TOKEN, "3599")], "no numeric expires_in"),
    "expires_in true": (TOKEN_PATH, [token_reply(NODE_TOKEN, True)], "no numeric expires_in"),
    "expired token": (
        TOKEN_PATH,
        [token_reply(NODE_TOKEN, 0)],
        "the token has already expired (expires_in 0s)",
    ),
    "long expired token": (TOKEN_PATH, [token_reply(NODE_TOKEN, -120)], "already expired"),
    "email fails": (EMAIL_PATH, [Reply(500)], "node service account email: HTTP 500"),
}


@pytest.mark.parametrize("path, replies, message", BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_bad_answers(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    path: str,
    replies: list[Reply],
    message: str,
) -> None:
    mds.script("GET", path, *replies)
    line = assert_one_clean_line(call(ARGS, env, cache), NODE_TOKEN)
    assert message in line
    assert line.startswith(f"auth-provider-gcp: metadata server {mds.host}: ")


def test_metadata_server_absent(cache: Path) -> None:
    host = f"127.0.0.1:{closed_port()}"
    result = call(ARGS, {"GCE_METADATA_HOST": host}, cache)
    line = assert_one_clean_line(result)
    assert line == (
        f"auth-provider-gcp: cannot reach the metadata server at {host} for the node service "
        "account token (connection refused, 3 attempts): not a GCE/GKE node? "
        "(GCE_METADATA_HOST names another metadata server)"
    )
    # urllib3's backoff: the first retry at once, the second after 200 ms plus jitter.
    assert len(result.sleeps) == 2
    assert result.sleeps[0] == 0.0 and 0.2 <= result.sleeps[1] <= 0.3


def test_retries_then_succeeds_with_bounded_backoff(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer
) -> None:
    mds.script(
        "GET",
        TOKEN_PATH,
        Reply(503),
        Reply(429, headers={"Retry-After": "30"}),
        token_reply(NODE_TOKEN),
    )
    result = call(ARGS, env, cache)
    assert result.code == 0, result.stderr
    assert mds.paths() == [TOKEN_PATH] * 3 + [EMAIL_PATH]
    assert result.sleeps[0] == 0.0  # urllib3 retries once at once
    assert result.sleeps[1] == MAX_RETRY_DELAY  # Retry-After, capped


def test_transport_budget_and_caps() -> None:
    now = [0.0]
    budget = Budget(1.0, monotonic=lambda: now[0])
    transport = Transport(budget, sleep=lambda s: None)
    now[0] = 2.0
    with pytest.raises(HttpFailure) as info:
        transport("http://127.0.0.1:1/x")
    assert info.value.reason == "no time left for the request"
    assert safe_url("https://user:pw@host:8443/p/a?sig=x#f") == "https://host:8443/p/a"


def test_no_retry_starts_that_the_budget_cannot_hold(mds: FakeMetadataServer) -> None:
    # 5 s left: less than the attempt's timeout plus the longest wait, so no retry.
    mds.script("GET", "/x", Reply(503))
    sleeps: list[float] = []
    resp = Transport(Budget(5.0), sleep=sleeps.append)(mds.url("/x"), timeout=10.0)
    assert (resp.status, resp.attempts, sleeps, mds.paths()) == (503, 1, [], ["/x"])


def test_read_timeouts_are_retried_and_named() -> None:
    import socket

    with socket.socket() as server:  # accepts connections, never answers
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/x"
        transport = Transport(run_budget(), attempts=2, sleep=lambda s: None)
        with pytest.raises(HttpFailure) as info:
            transport(url, timeout=0.1)
    assert info.value.detail == "timed out after 0.1s, 2 attempts"


# -- workload identity (KEP-4412) ------------------------------------------------------------

IDP = "https://container.googleapis.com/v1/projects/my-project/locations/us-central1/clusters/c1"
WI_ARGS = [*ARGS, f"--identity-provider={IDP}", "--project-id=my-project"]
KSA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZDpzYSJ9." + CANARY
ENABLED = {"iam.gke.io/enable-wi-image-pull": "true"}

WORKLOAD_IDENTITY: dict[str, tuple[list[str], str, dict[str, str], str]] = {
    # name: (args, request token, annotations, whose token is answered)
    "annotated: STS": (WI_ARGS, KSA_TOKEN, ENABLED, "sts"),
    "not annotated: node": (WI_ARGS, KSA_TOKEN, {}, "node"),
    "annotated false: node": (
        WI_ARGS,
        KSA_TOKEN,
        {"iam.gke.io/enable-wi-image-pull": "false"},
        "node",
    ),
    "annotation is exact: node": (
        WI_ARGS,
        KSA_TOKEN,
        {"iam.gke.io/enable-wi-image-pull": "True"},
        "node",
    ),
    "no identity provider: node": (ARGS, KSA_TOKEN, ENABLED, "node"),
    "dockercfg flow ignores it": ([*WI_ARGS, "-a", "dockercfg"], KSA_TOKEN, ENABLED, "dockercfg"),
}


@pytest.mark.parametrize(
    "args, token, annotations, expected", WORKLOAD_IDENTITY.values(), ids=WORKLOAD_IDENTITY.keys()
)
def test_workload_identity_selection(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    sts: FakeSTSServer,
    args: list[str],
    token: str,
    annotations: dict[str, str],
    expected: str,
) -> None:
    mds.set_attribute("google-dockercfg", json.dumps({"r.io": {"username": "u", "password": "p"}}))
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint}
    result = call(args, environ, cache, token=token, annotations=annotations)
    assert result.code == 0, result.stderr
    passwords = {entry["password"] for entry in result.auth.values()}
    assert (
        passwords
        == {
            "sts": {FEDERATED_TOKEN},
            "node": {NODE_TOKEN},
            "dockercfg": {"p"},
        }[expected]
    )
    assert bool(sts.requests) == (expected == "sts")
    if expected == "sts":
        assert mds.requests == []  # no metadata call at all
    assert CANARY not in result.stderr


def test_workload_identity_exchange_request(
    env: dict[str, str], cache: Path, sts: FakeSTSServer
) -> None:
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint}
    result = call(
        WI_ARGS, environ, cache, "us-docker.pkg.dev/p/r/app", token=KSA_TOKEN, annotations=ENABLED
    )
    assert result.code == 0, result.stderr
    assert keys(result.auth) == sorted(["us-docker.pkg.dev", *FIXED])
    assert result.response is not None
    assert result.response["cacheDuration"] == "54m59s"
    (req,) = sts.requests
    assert req.method == "POST" and req.path == STS_PATH
    assert req.headers["user-agent"] == "GKE auth-provider-gcp image pull"
    assert req.form() == {
        "audience": f"identitynamespace:my-project.svc.id.goog:{IDP}",
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "scope": "https://www.googleapis.com/auth/cloud-platform",
        "subject_token": KSA_TOKEN,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
    }


@pytest.mark.parametrize(
    "idp, project", [("https://custom-idp.example/pool", "other-project"), (IDP, "p-123")]
)
def test_workload_identity_audience(
    env: dict[str, str], cache: Path, sts: FakeSTSServer, idp: str, project: str
) -> None:
    args = [*ARGS, "--identity-provider", idp, "--project-id", project]
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint}
    assert call(args, environ, cache, token=KSA_TOKEN, annotations=ENABLED).code == 0
    assert sts.requests[0].form()["audience"] == f"identitynamespace:{project}.svc.id.goog:{idp}"


WI_FAILURES: dict[str, tuple[str, list[Reply], str]] = {
    "no token in the request": ("", [], "request has no service account token"),
    "invalid grant": (
        KSA_TOKEN,
        [
            Reply(
                400,
                {
                    "error": "invalid_grant",
                    "error_description": f"The audience of {KSA_TOKEN} does not match",
                },
            )
        ],
        "HTTP 400 Bad Request: invalid_grant: The audience of <redacted> does not match",
    ),
    "throttled": (KSA_TOKEN, [Reply(429, KSA_TOKEN)], "HTTP 429 Too Many Requests (3 attempts)"),
    "server error": (KSA_TOKEN, [Reply(500)], "HTTP 500 Internal Server Error (3 attempts)"),
    "malformed JSON": (KSA_TOKEN, [Reply(200, "{" + FEDERATED_TOKEN)], "malformed token response"),
    "expired": (
        KSA_TOKEN,
        [token_reply(FEDERATED_TOKEN, -1)],
        "the token has already expired",
    ),
}


@pytest.mark.parametrize("token, replies, message", WI_FAILURES.values(), ids=WI_FAILURES.keys())
def test_workload_identity_fails_fast(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    sts: FakeSTSServer,
    token: str,
    replies: list[Reply],
    message: str,
) -> None:
    if replies:
        sts.script("POST", STS_PATH, *replies)
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint}
    result = call(WI_ARGS, environ, cache, token=token, annotations=ENABLED)
    line = assert_one_clean_line(result, KSA_TOKEN, FEDERATED_TOKEN, NODE_TOKEN)
    assert message in line
    assert mds.requests == []  # no fallback to the node's service account


def test_workload_identity_sts_absent(env: dict[str, str], cache: Path) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}/v1/token"
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": endpoint}
    line = assert_one_clean_line(
        call(WI_ARGS, environ, cache, token=KSA_TOKEN, annotations=ENABLED), KSA_TOKEN
    )
    assert line.endswith(
        f"token exchange at {endpoint}: unreachable (connection refused, 3 attempts)"
    )


def test_workload_identity_refuses_non_google_before_the_exchange(
    env: dict[str, str], cache: Path, sts: FakeSTSServer
) -> None:
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint}
    result = call(WI_ARGS, environ, cache, "quay.io/x/y", token=KSA_TOKEN, annotations=ENABLED)
    assert result.code == 0 and result.auth == {}
    assert sts.requests == []  # the pod's token never left the node


# -- dockercfg flows --------------------------------------------------------------------------


def b64(text: str, pad: bool = True) -> str:
    out = base64.b64encode(text.encode()).decode()
    return out if pad else out.rstrip("=")


DOCKERCFGS: dict[str, tuple[dict[str, Any], dict[str, tuple[str, str]]]] = {
    "username and password": (
        {"https://hello.kubernetes.io": {"username": "u", "password": CANARY, "email": "e@x"}},
        {"https://hello.kubernetes.io": ("u", CANARY)},
    ),
    "auth wins": (
        {"r.io": {"username": "ignored", "password": "ignored", "auth": b64(f"user:{CANARY}")}},
        {"r.io": ("user", CANARY)},
    ),
    "unpadded auth": (
        {"r.io": {"auth": b64("us:pw:with:colons", pad=False)}},
        {"r.io": ("us", "pw:with:colons")},
    ),
    "several registries": (
        {"a.io": {"auth": b64("a:1")}, "b.io:5000": {"username": "b", "password": "2"}},
        {"a.io": ("a", "1"), "b.io:5000": ("b", "2")},
    ),
    "config.json form": ({"auths": {"r.io": {"auth": b64("u:p")}}}, {"r.io": ("u", "p")}),
    "empty": ({}, {}),
}


@pytest.mark.parametrize("doc, expected", DOCKERCFGS.values(), ids=DOCKERCFGS.keys())
@pytest.mark.parametrize("flow", ["dockercfg", "dockercfg-url"])
def test_dockercfg_flows(
    env: dict[str, str],
    cache: Path,
    mds: FakeMetadataServer,
    flow: str,
    doc: dict[str, Any],
    expected: dict[str, tuple[str, str]],
) -> None:
    if flow == "dockercfg":
        mds.set_attribute("google-dockercfg", json.dumps(doc))
    else:
        mds.script("GET", "/signed/dockercfg", Reply(200, json.dumps(doc)))
        mds.set_attribute("google-dockercfg-url", mds.url("/signed/dockercfg?sig=abc") + "\n")
    result = call([*ARGS, f"--authFlow={flow}"], env, cache, "quay.io/any/image")
    assert result.code == 0, result.stderr
    assert result.response is not None
    assert {k: (v["username"], v["password"]) for k, v in result.auth.items()} == expected
    assert result.response["cacheKeyType"] == "Image"
    assert "cacheDuration" not in result.response  # the kubelet's defaultCacheDuration applies
    if flow == "dockercfg-url":
        fetch = mds.requests[-1]
        assert fetch.path == "/signed/dockercfg" and fetch.query == "sig=abc"
        assert "metadata-flavor" not in fetch.headers


def test_dockercfg_with_sidecar_knobs(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer
) -> None:
    mds.set_attribute("google-dockercfg", json.dumps({"r.io": {"auth": b64("u:p")}}))
    environ = {**env, "KUBE_SIDECAR_CACHE_DURATION": "10m", "KUBE_SIDECAR_CACHE_TYPE": "global"}
    result = call([*ARGS, "-a", "dockercfg"], environ, cache)
    assert result.response is not None
    assert (result.response["cacheKeyType"], result.response["cacheDuration"]) == (
        "Global",
        "10m0s",
    )


DOCKERCFG_ERRORS: dict[str, tuple[str, Any, str]] = {
    "attribute not set": (
        "dockercfg",
        None,
        "instance attribute google-dockercfg: HTTP 404 Not Found",
    ),
    "not JSON": (
        "dockercfg",
        "{" + CANARY,
        "instance attribute google-dockercfg: not a JSON docker config",
    ),
    "entry not an object": ("dockercfg", {"r.io": CANARY}, 'registry "r.io": not an object'),
    "password not a string": (
        "dockercfg",
        {"r.io": {"username": "u", "password": [CANARY]}},
        'registry "r.io": password is not a string',
    ),
    "auth not base64": (
        "dockercfg",
        {"r.io": {"auth": CANARY + "!"}},
        "auth is not base64(username:password)",
    ),
    "auth without colon": ("dockercfg", {"r.io": {"auth": b64(CANARY)}}, "auth is not base64"),
    "url attribute not set": (
        "dockercfg-url",
        None,
        "instance attribute google-dockercfg-url: HTTP 404",
    ),
    "url scheme": ("dockercfg-url", "ftp://files/dockercfg", "Unsupported URL scheme"),
    "url fails": (
        "dockercfg-url",
        "FETCH-500",
        "/cfg: HTTP 500 Internal Server Error (3 attempts)",
    ),
    "url unreachable": ("dockercfg-url", "CLOSED", "cannot fetch http://127.0.0.1:"),
}


@pytest.mark.parametrize(
    "flow, value, message", DOCKERCFG_ERRORS.values(), ids=DOCKERCFG_ERRORS.keys()
)
def test_dockercfg_errors(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer, flow: str, value: Any, message: str
) -> None:
    attribute = f"google-{flow}"
    if value == "FETCH-500":
        mds.script("GET", "/cfg", Reply(500, CANARY))
        value = mds.url("/cfg")
    elif value == "CLOSED":
        value = f"http://user:{CANARY}@127.0.0.1:{closed_port()}/cfg?sig={CANARY}"
    if value is not None:
        mds.set_attribute(attribute, value if isinstance(value, str) else json.dumps(value))
    line = assert_one_clean_line(call([*ARGS, "-a", flow], env, cache))
    assert message in line


# -- the plugin cache -------------------------------------------------------------------------


def test_second_run_is_served_from_the_plugin_cache(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer
) -> None:
    first = call(ARGS, env, cache)
    assert first.code == 0
    calls = len(mds.requests)
    second = call(ARGS, env, cache)
    assert second.code == 0, second.stderr
    assert len(mds.requests) == calls
    assert second.auth == first.auth
    assert second.response is not None
    assert second.response["cacheDuration"] in ("54m59s", "54m58s")
    # Other settings are another scope: not served from that entry.
    third = call(ARGS, {**env, "KUBE_SIDECAR_CACHE_DURATION": "1m"}, cache)
    assert third.response is not None and third.response["cacheDuration"] == "1m0s"
    assert len(mds.requests) > calls


def test_zero_duration_answers_are_not_cached(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer
) -> None:
    environ = {**env, "KUBE_SIDECAR_CACHE_DURATION": "0s"}
    call(ARGS, environ, cache)
    call(ARGS, environ, cache)
    assert mds.paths().count(TOKEN_PATH) == 2


def test_workload_identity_answers_are_cached_per_service_account(
    env: dict[str, str], cache: Path, mds: FakeMetadataServer, sts: FakeSTSServer
) -> None:
    environ = {**env, "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint}

    def jwt(name: str) -> str:
        claims = {
            "kubernetes.io": {
                "namespace": "ns",
                "serviceaccount": {"name": name, "uid": name + "-uid"},
            }
        }
        payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        return f"eyJhbGciOiJub25lIn0.{payload}.{CANARY}"

    for name in ("a", "a", "b"):
        result = call(WI_ARGS, environ, cache, token=jwt(name), annotations=ENABLED)
        assert result.code == 0, result.stderr
    assert len(sts.requests) == 2  # "a" twice: one exchange
    assert urllib.parse.unquote(sts.requests[1].form()["subject_token"]) == jwt("b")


def test_clear_cache(env: dict[str, str], cache: Path, mds: FakeMetadataServer) -> None:
    assert call(ARGS, env, cache).code == 0
    cleared = call(["--clear-cache", "--v=1"], env, cache)
    assert cleared.code == 0 and "removed 1 cached answer(s)" in cleared.stderr
    assert call(ARGS, env, cache).code == 0
    assert mds.paths().count(TOKEN_PATH) == 2
