"""``ecr-credential-provider``'s handler in-process: moto for ECR and STS, botocore's Stubber
for ECR Public, canned HTTP answers (after the request is built and signed) for endpoint
variants and bad answers. Mirrors upstream's ``Test_GetCredentials_Private``,
``_Public``, ``_PrivateForServiceAccount``, ``Test_getCacheDuration`` and ``Test_runPlugin``.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from credprov_ecr import _retry
from credprov_ecr.plugin import (
    ROLE_ANNOTATION,
    ROLE_SESSION_NAME,
    EcrCredentialProvider,
    cache_duration,
    decode_authorization_token,
)

from credprov.base.clock import FakeClock
from credprov.sdk import ProviderError, run
from tests.conftest import CANARY
from tests.unit.plugins.ecr.conftest import (
    ACCOUNT,
    CLOCK_START_NS,
    MOTO_EXPIRY,
    ROLE_ACCOUNT,
    ROLE_ARN,
    HookedClients,
    assumed_roles,
    canned,
    token_answer,
)

G = "credentialprovider.kubelet.k8s.io"
HOST = f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com"
IMAGE = f"{HOST}/app"
SA_TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdDphcHAifQ.sig"

Make = Callable[..., EcrCredentialProvider]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def auth(resp: Any) -> dict[str, tuple[str, str]]:
    return {k: tuple(v) for k, v in resp.auth.items()}


def error_of(make: Make, image: str = IMAGE, **kwargs: Any) -> str:
    with pytest.raises(ProviderError) as info:
        make().get_credentials(image, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- private ECR (moto) -----------------------------------------------------------------------

PARTITIONS = {
    "us-west-2": (f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com", "api.ecr.us-west-2.amazonaws.com"),
    "cn-north-1": (
        f"{ACCOUNT}.dkr.ecr.cn-north-1.amazonaws.com.cn",
        "api.ecr.cn-north-1.amazonaws.com.cn",
    ),
    "us-gov-east-1": (
        f"{ACCOUNT}.dkr.ecr.us-gov-east-1.amazonaws.com",
        "api.ecr.us-gov-east-1.amazonaws.com",
    ),
    "us-iso-east-1": (
        f"{ACCOUNT}.dkr.ecr.us-iso-east-1.c2s.ic.gov",
        "api.ecr.us-iso-east-1.c2s.ic.gov",
    ),
    "us-isob-east-1": (
        f"{ACCOUNT}.dkr.ecr.us-isob-east-1.sc2s.sgov.gov",
        "api.ecr.us-isob-east-1.sc2s.sgov.gov",
    ),
    "eusc-de-east-1": (
        f"{ACCOUNT}.dkr.ecr.eusc-de-east-1.amazonaws.eu",
        "api.ecr.eusc-de-east-1.amazonaws.eu",
    ),
}


@pytest.mark.parametrize("region", list(PARTITIONS))
def test_private_registry_in_every_partition(
    moto: None, provider: Make, clients: HookedClients, region: str
) -> None:
    host, endpoint = PARTITIONS[region]
    resp = provider().get_credentials(f"{host}/team/app")
    assert auth(resp) == {host: ("AWS", f"{ACCOUNT}-auth-token")}
    assert resp.cache_key_type == "Registry"
    assert resp.cache_duration == 6 * 3600  # half of the 12 h the token has left
    assert clients.urls() == [f"https://{endpoint}/"]
    assert f"/{region}/ecr/aws4_request" in clients.calls[0].headers["Authorization"]


def test_private_image_with_public_in_its_path_stays_private(
    moto: None, provider: Make, clients: HookedClients
) -> None:
    resp = provider().get_credentials(f"{HOST}/public.ecr.aws/nginx")
    assert list(resp.auth) == [HOST]
    assert [c.service for c in clients.calls] == ["ecr"]


def test_port_is_stripped_from_the_auth_key(moto: None, provider: Make) -> None:
    assert list(provider().get_credentials(f"{HOST}:443/app").auth) == [HOST]


def test_host_region_wins_over_the_default_region(
    moto: None, provider: Make, clients: HookedClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    provider().get_credentials(IMAGE)
    assert clients.urls() == ["https://api.ecr.us-west-2.amazonaws.com/"]


@pytest.mark.parametrize(
    ("env", "region"),
    [
        ({"AWS_REGION": "eu-west-1"}, "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "eu-north-1"}, "eu-north-1"),
        # Go SDK order: AWS_REGION before AWS_DEFAULT_REGION (botocore alone ignores it)
        ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-north-1"}, "eu-west-1"),
    ],
)
def test_non_ecr_host_uses_the_default_region(
    moto: None,
    provider: Make,
    clients: HookedClients,
    monkeypatch: pytest.MonkeyPatch,
    logs: list[str],
    env: dict[str, str],
    region: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    resp = provider().get_credentials("registry.k8s.io/foo")
    assert auth(resp) == {"registry.k8s.io": ("AWS", f"{ACCOUNT}-auth-token")}
    assert clients.urls() == [f"https://api.ecr.{region}.amazonaws.com/"]
    assert any("No region found in the image reference" in line for line in logs)


def test_non_ecr_host_without_any_region(moto: None, provider: Make) -> None:
    message = error_of(provider, "registry.k8s.io/foo")
    assert message.startswith("registry.k8s.io is not an ECR registry host and no default AWS")


def test_region_from_a_profile(
    moto: None, provider: Make, clients: HookedClients, tmp_path: Any, monkeypatch: Any
) -> None:
    config = tmp_path / "aws-config"
    config.write_text("[profile node]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "node")
    provider().get_credentials("mirror.example.com/app")
    assert clients.urls() == ["https://api.ecr.ap-south-1.amazonaws.com/"]


def test_unknown_profile_is_one_line(moto: None, provider: Make, monkeypatch: Any) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nope")
    assert "The config profile (nope) could not be found" in error_of(provider, "mirror.io/x")


# -- the wire answer (SDK + handler, in-process) ----------------------------------------------


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_response_bytes_in_every_api_version(
    moto: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    # Real wall clock: moto's token expired in 2015, so cacheDuration is omitted (upstream
    # omits a non-positive half-life and lets the kubelet use defaultCacheDuration).
    out = io.BytesIO()
    err = io.StringIO()
    request = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/{version}", "image": IMAGE}
    code = run(
        "credprov_ecr.plugin:provide",
        name="ecr-credential-provider",
        cache=True,
        cache_dir=str(tmp_path / "cache"),
        argv=[],
        stdin=io.BytesIO(json.dumps(request).encode()),
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    assert (
        out.getvalue()
        == (
            '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/'
            + version
            + '","cacheKeyType":"Registry","auth":{"'
            + HOST
            + '":{"username":"AWS","password":"123456789012-auth-token"}}}\n'
        ).encode()
    )


# -- cacheDuration and the token --------------------------------------------------------------

NOW = 1_700_000_000


@pytest.mark.parametrize(
    ("expires_at", "now_ns", "want"),
    [
        (None, NOW * 10**9, 0),  # no expiry: "0s", do not cache
        (NOW + 12 * 3600, NOW * 10**9, 6 * 3600),  # ECR's 12 h → 6h0m0s
        (NOW + 12 * 3600 + 1, NOW * 10**9, 6 * 3600),  # integer halving
        (NOW + 3, NOW * 10**9, 1),
        (NOW + 1, NOW * 10**9, None),  # half of 1 s is 0: omitted
        (NOW, NOW * 10**9, None),
        (NOW - 3600, NOW * 10**9, None),  # expired: omitted
        (NOW + 100.9, NOW * 10**9 + 900_000_000, 50),  # whole seconds, as Go's Unix()
    ],
)
def test_cache_duration(expires_at: float | None, now_ns: int, want: int | None) -> None:
    when = None if expires_at is None else datetime.fromtimestamp(expires_at, UTC)
    assert cache_duration(when, now_ns) == want


@pytest.mark.parametrize(
    ("token", "want"),
    [
        (b64("AWS:password"), ("AWS", "password")),
        (b64("AWS:pass:with:colons"), ("AWS", "pass:with:colons")),
        (b64("AWS:"), ("AWS", "")),
        (b64(":pw"), ("", "pw")),
        (b64("AWS:" + "x" * 60)[:40] + "\n" + b64("AWS:" + "x" * 60)[40:], ("AWS", "x" * 60)),
    ],
)
def test_token_split(token: str, want: tuple[str, str]) -> None:
    assert decode_authorization_token(token) == want


@pytest.mark.parametrize(
    ("token", "error"),
    [
        (None, "authorization token in response was nil"),
        (b64("no-colon"), "error parsing username and password from authorization token"),
        ("", "error parsing username and password from authorization token"),
        ("not base64!", "error decoding authorization token: illegal base64 data"),
        (b64("AWS:p").rstrip("="), "error decoding authorization token: illegal base64 data"),
    ],
)
def test_token_errors(token: str | None, error: str) -> None:
    with pytest.raises(ProviderError) as info:
        decode_authorization_token(token)
    assert str(info.value) == error


# -- upstream's private error cases (Stubber) -------------------------------------------------


def stub_ecr(clients: HookedClients, service: str, setup: Callable[[Stubber], None]) -> None:
    def hook(svc: str, client: Any) -> None:
        if svc == service:
            stubber = Stubber(client)
            setup(stubber)
            stubber.activate()

    clients.on_client.append(hook)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"authorizationData": []}, "authorization data was empty"),
        ({}, "authorization data was empty"),
        ({"authorizationData": [{}]}, "authorization token in response was nil"),
        (
            {"authorizationData": [{"authorizationToken": b64("nocolon")}]},
            "error parsing username and password from authorization token",
        ),
    ],
)
def test_private_bad_data(
    aws_env: None, provider: Make, clients: HookedClients, answer: Any, error: str
) -> None:
    stub_ecr(clients, "ecr", lambda s: s.add_response("get_authorization_token", answer, {}))
    assert error_of(provider) == error


def test_private_api_error_passes_aws_message(
    aws_env: None, provider: Make, clients: HookedClients
) -> None:
    stub_ecr(
        clients,
        "ecr",
        lambda s: s.add_client_error(
            "get_authorization_token",
            "AccessDeniedException",
            "User: arn:aws:sts::1:assumed-role/node is not authorized",
            http_status_code=400,
        ),
    )
    assert error_of(provider) == (
        "GetAuthorizationToken (ECR, us-west-2): AccessDeniedException (HTTP 400): "
        "User: arn:aws:sts::1:assumed-role/node is not authorized"
    )


def test_private_without_expiry_answers_0s(
    aws_env: None, provider: Make, clients: HookedClients
) -> None:
    stub_ecr(
        clients,
        "ecr",
        lambda s: s.add_response(
            "get_authorization_token",
            {"authorizationData": [{"authorizationToken": b64("AWS:pw")}]},
            {},
        ),
    )
    resp = provider().get_credentials(IMAGE)
    assert resp.cache_duration == 0 and resp.expires_at is None


# -- ECR Public (Stubber: moto does not implement it) -----------------------------------------

PUBLIC_EXPIRY = datetime.fromtimestamp(CLOCK_START_NS / 1e9 + 3600, UTC)


@pytest.mark.parametrize(
    ("host", "endpoint"),
    [
        ("public.ecr.aws", "https://api.ecr-public.us-east-1.amazonaws.com/"),
        ("ecr-public.aws.com", "https://ecr-public.us-east-1.api.aws/"),  # dual-stack
    ],
)
def test_public_registry(
    aws_env: None,
    provider: Make,
    clients: HookedClients,
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    endpoint: str,
) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")  # ECR Public is us-east-1 whatever this says
    stub_ecr(
        clients,
        "ecr-public",
        lambda s: s.add_response(
            "get_authorization_token",
            {
                "authorizationData": {
                    "authorizationToken": b64("AWS:public-pw"),
                    "expiresAt": PUBLIC_EXPIRY,
                }
            },
            {},
        ),
    )
    resp = provider().get_credentials(f"{host}/nginx/nginx")
    assert auth(resp) == {host: ("AWS", "public-pw")}
    assert resp.cache_key_type == "Registry"
    assert resp.cache_duration == 1800
    # The token's own expiry goes to the telemetry's expiry gauge, not cacheDuration's end.
    assert resp.expires_at == PUBLIC_EXPIRY.timestamp()
    assert clients.urls("ecr-public") == [endpoint]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({}, "authorization data was empty"),
        ({"authorizationData": {}}, "authorization token in response was nil"),
    ],
)
def test_public_bad_data(
    aws_env: None, provider: Make, clients: HookedClients, answer: Any, error: str
) -> None:
    stub_ecr(clients, "ecr-public", lambda s: s.add_response("get_authorization_token", answer, {}))
    assert error_of(provider, "public.ecr.aws/x") == error


def test_empty_image(aws_env: None, provider: Make) -> None:
    assert error_of(provider, "") == "image in plugin request was empty"


def test_unparsable_image(aws_env: None, provider: Make) -> None:
    assert error_of(provider, "public.ecr.aws  ").startswith(
        "error parsing image reference https://public.ecr.aws  : parse"
    )


# -- FIPS and dual-stack endpoints (upstream ignores them) ------------------------------------

VARIANTS = {
    f"{ACCOUNT}.dkr.ecr-fips.us-east-1.amazonaws.com": "https://api.ecr-fips.us-east-1.amazonaws.com/",
    f"{ACCOUNT}.dkr.ecr-fips.us-gov-west-1.amazonaws.com": (
        "https://api.ecr-fips.us-gov-west-1.amazonaws.com/"
    ),
    f"{ACCOUNT}.dkr-ecr.us-east-1.on.aws": "https://ecr.us-east-1.api.aws/",
    f"{ACCOUNT}.dkr-ecr-fips.us-east-1.on.aws": "https://ecr-fips.us-east-1.api.aws/",
    f"{ACCOUNT}.dkr-ecr-fips.us-gov-east-1.on.aws": "https://ecr-fips.us-gov-east-1.api.aws/",
    f"{ACCOUNT}.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn": (
        "https://ecr.cn-north-1.api.amazonwebservices.com.cn/"
    ),
    f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com": "https://api.ecr.us-east-1.amazonaws.com/",
}


@pytest.mark.parametrize("host", list(VARIANTS))
def test_fips_and_dualstack_hosts_use_those_endpoints(
    aws_env: None, provider: Make, clients: HookedClients, host: str
) -> None:
    clients.on_client.append(canned([(200, token_answer(b64("AWS:pw")))]))
    resp = provider().get_credentials(f"{host}/app")
    assert list(resp.auth) == [host]
    assert clients.urls() == [VARIANTS[host]]


def test_sdk_fips_setting_still_applies_to_plain_hosts(
    aws_env: None, provider: Make, clients: HookedClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_USE_FIPS_ENDPOINT", "true")
    clients.on_client.append(canned([(200, token_answer(b64("AWS:pw")))]))
    provider().get_credentials(IMAGE)
    assert clients.urls() == ["https://api.ecr-fips.us-west-2.amazonaws.com/"]


def test_endpoint_override_wins_over_the_variant(
    aws_env: None, provider: Make, clients: HookedClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_ECR", "http://127.0.0.1:9/")
    clients.on_client.append(canned([(200, token_answer(b64("AWS:pw")))]))
    provider().get_credentials(f"{ACCOUNT}.dkr-ecr-fips.us-east-1.on.aws/app")
    assert clients.urls() == ["http://127.0.0.1:9/"]


def test_variant_without_an_endpoint_is_one_line(aws_env: None, provider: Make) -> None:
    message = error_of(provider, f"{ACCOUNT}.dkr-ecr.us-isof-south-1.on.aws/app")
    assert message.startswith("GetAuthorizationToken (ECR, us-isof-south-1): ")
    assert "dualstack" in message


# -- service-account tokens (KEP-4412) --------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "env_role", "want_role"),
    [
        (ROLE_ARN, None, ROLE_ARN),
        (None, ROLE_ARN, ROLE_ARN),
        (ROLE_ARN, f"arn:aws:iam::{ACCOUNT}:role/other", ROLE_ARN),  # the annotation wins
    ],
)
def test_service_account_role(
    moto: None,
    provider: Make,
    clients: HookedClients,
    monkeypatch: pytest.MonkeyPatch,
    annotation: str | None,
    env_role: str | None,
    want_role: str,
) -> None:
    if env_role:
        monkeypatch.setenv("AWS_ECR_ROLE_ARN", env_role)
    annotations = {ROLE_ANNOTATION: annotation} if annotation else {}
    resp = provider().get_credentials(IMAGE, SA_TOKEN, annotations)
    # moto answers ECR for the account whose credentials signed the call: the role's.
    assert auth(resp) == {HOST: ("AWS", f"{ROLE_ACCOUNT}-auth-token")}
    assert assumed_roles() == [(want_role, ROLE_SESSION_NAME)]
    sts, ecr = clients.calls
    assert (sts.service, sts.operation, ecr.service) == ("sts", "AssumeRoleWithWebIdentity", "ecr")
    assert sts.url == "https://sts.us-west-2.amazonaws.com/"  # the host's region
    assert "Authorization" not in sts.headers  # the token is the credential
    assert "Authorization" in ecr.headers


def test_service_account_sts_input_is_upstreams(
    aws_env: None, provider: Make, clients: HookedClients
) -> None:
    stub_ecr(
        clients,
        "sts",
        lambda s: s.add_response(
            "assume_role_with_web_identity",
            {
                "Credentials": {
                    "AccessKeyId": "ASIAEXAMPLEEXAMPLE00",
                    "SecretAccessKey": "temporary-secret-key",
                    "SessionToken": "temporary-session-token",
                    "Expiration": PUBLIC_EXPIRY,
                }
            },
            {
                "RoleArn": ROLE_ARN,
                "RoleSessionName": "ecr-credential-provider",
                "WebIdentityToken": SA_TOKEN,
            },
        ),
    )
    clients.on_client.append(
        lambda svc, c: (
            canned([(200, token_answer(b64("AWS:pw")))])(svc, c) if svc == "ecr" else None
        )
    )
    provider().get_credentials(IMAGE, SA_TOKEN, {ROLE_ANNOTATION: ROLE_ARN})
    assert "Credential=ASIAEXAMPLEEXAMPLE00/" in clients.calls[-1].headers["Authorization"]


def test_service_account_without_role_uses_the_default_chain(
    moto: None, provider: Make, clients: HookedClients, logs: list[str]
) -> None:
    resp = provider().get_credentials(IMAGE, SA_TOKEN, {"other/annotation": "x"})
    assert auth(resp) == {HOST: ("AWS", f"{ACCOUNT}-auth-token")}
    assert [c.service for c in clients.calls] == ["ecr"]
    assert "no arn provided, cannot assume role using ServiceAccountToken" in logs


def test_service_account_sts_error_text(
    aws_env: None, provider: Make, clients: HookedClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ECR_ROLE_ARN", ROLE_ARN)
    stub_ecr(
        clients,
        "sts",
        lambda s: s.add_client_error(
            "assume_role_with_web_identity",
            "AccessDenied",
            f"Not authorized to perform sts:AssumeRoleWithWebIdentity with {SA_TOKEN}",
            http_status_code=403,
        ),
    )
    message = error_of(provider, IMAGE, service_account_token=SA_TOKEN)
    assert message == (
        "failed to assume role: AssumeRoleWithWebIdentity (STS, us-west-2): AccessDenied (HTTP "
        "403): Not authorized to perform sts:AssumeRoleWithWebIdentity with <redacted>"
    )


@pytest.mark.parametrize(
    ("image", "env", "sts_url"),
    [
        ("public.ecr.aws/x", {}, "https://sts.us-east-1.amazonaws.com/"),
        ("public.ecr.aws/x", {"AWS_REGION": "eu-west-1"}, "https://sts.eu-west-1.amazonaws.com/"),
        (
            "mirror.example.com/x",
            {"AWS_REGION": "eu-west-1"},
            "https://sts.eu-west-1.amazonaws.com/",
        ),
        (
            f"{ACCOUNT}.dkr.ecr-fips.us-east-1.amazonaws.com/x",
            {},
            "https://sts-fips.us-east-1.amazonaws.com/",
        ),
        (  # GovCloud's STS endpoints are FIPS endpoints already
            f"{ACCOUNT}.dkr.ecr-fips.us-gov-west-1.amazonaws.com/x",
            {},
            "https://sts.us-gov-west-1.amazonaws.com/",
        ),
        (
            f"{ACCOUNT}.dkr-ecr.eu-west-1.on.aws/x",
            {},
            "https://sts.eu-west-1.api.aws/",
        ),
    ],
)
def test_service_account_sts_region(
    aws_env: None,
    provider: Make,
    clients: HookedClients,
    monkeypatch: pytest.MonkeyPatch,
    image: str,
    env: dict[str, str],
    sts_url: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    clients.on_client.append(
        lambda svc, c: canned(
            [(200, "<AssumeRoleWithWebIdentityResponse><oops")], content_type="text/xml"
        )(svc, c)
    )
    message = error_of(
        provider,
        image,
        service_account_token=SA_TOKEN,
        service_account_annotations={ROLE_ANNOTATION: ROLE_ARN},
    )
    assert message.startswith("failed to assume role: AssumeRoleWithWebIdentity (STS, ")
    assert "malformed response" in message and "oops" not in message
    assert clients.urls("sts") == [sts_url]


# -- retries ----------------------------------------------------------------------------------

THROTTLED = (400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
OK = (200, token_answer(b64("AWS:pw"), MOTO_EXPIRY.timestamp()))


def test_throttling_is_retried_with_jitter(
    aws_env: None, provider: Make, clients: HookedClients, sleeps: list[float], logs: list[str]
) -> None:
    clients.on_client.append(canned([THROTTLED, THROTTLED, OK]))
    resp = provider().get_credentials(IMAGE)
    assert auth(resp) == {HOST: ("AWS", "pw")}
    # botocore's standard mode: full jitter, up to 1 s then 2 s for throttling.
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0
    assert sum("throttled on attempt" in line for line in logs) == 2


def test_retries_are_bounded(
    aws_env: None, provider: Make, clients: HookedClients, sleeps: list[float]
) -> None:
    clients.on_client.append(canned([THROTTLED]))
    assert error_of(provider) == (
        "GetAuthorizationToken (ECR, us-west-2): ThrottlingException (HTTP 400): Rate exceeded "
        "(gave up after 3 attempts)"
    )
    assert len(sleeps) == 2


def test_aws_max_attempts(
    aws_env: None,
    provider: Make,
    clients: HookedClients,
    sleeps: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    clients.on_client.append(canned([THROTTLED]))
    assert error_of(provider).endswith("Rate exceeded")
    assert sleeps == []


def test_retry_budget(
    aws_env: None, provider: Make, clients: HookedClients, sleeps: list[float]
) -> None:
    ticks = iter([0.0, 0.0, 30.0])
    clients.on_client.append(canned([(503, "")]))
    message = error_of(lambda: provider(monotonic=lambda: next(ticks)))
    assert message.endswith("HTTP 503 Service Unavailable (gave up after 2 attempts)")
    assert len(sleeps) == 1


def test_errors_that_are_not_transient_are_not_retried(
    aws_env: None, provider: Make, clients: HookedClients, sleeps: list[float]
) -> None:
    clients.on_client.append(
        canned([(400, {"__type": "AccessDeniedException", "message": "denied"})])
    )
    assert error_of(provider).endswith("AccessDeniedException (HTTP 400): denied")
    assert sleeps == []


def test_transient_errors_and_429_are_retried(
    aws_env: None, provider: Make, clients: HookedClients, sleeps: list[float], logs: list[str]
) -> None:
    clients.on_client.append(canned([(503, ""), (429, ""), OK]))
    assert auth(provider().get_credentials(IMAGE)) == {HOST: ("AWS", "pw")}
    assert len(sleeps) == 2
    assert [line.split(": ")[1].split(" on ")[0] for line in logs if "on attempt" in line] == [
        "transient error",
        "throttled",
    ]


def test_unreachable_endpoint_is_retried(
    aws_env: None, provider: Make, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    assert error_of(provider).endswith("(gave up after 3 attempts)")
    assert len(sleeps) == 2


def test_max_attempts_from_env() -> None:
    assert _retry.RetryPolicy().max_attempts == 3
    assert _retry.RetryPolicy.from_env({"AWS_MAX_ATTEMPTS": "99"}).max_attempts == 10
    assert _retry.RetryPolicy.from_env({"AWS_MAX_ATTEMPTS": "x"}).max_attempts == 3
    assert _retry.RetryPolicy.from_env({"AWS_MAX_ATTEMPTS": "0"}).max_attempts == 3


# -- bad answers: one line, no body, no secret ------------------------------------------------

BAD_ANSWERS: dict[str, tuple[tuple[int, Any], str]] = {
    "throttling": (
        THROTTLED,
        "GetAuthorizationToken (ECR, us-west-2): ThrottlingException (HTTP 400): Rate exceeded",
    ),
    "500 html": (
        (500, f"<html><body>{CANARY}</body></html>"),
        "GetAuthorizationToken (ECR, us-west-2): HTTP 500 Internal Server Error",
    ),
    "500 aws": (
        (500, {"__type": "ServerException", "message": "internal failure"}),
        "GetAuthorizationToken (ECR, us-west-2): ServerException (HTTP 500): internal failure",
    ),
    "malformed json": (
        (200, '{"authorizationData":[{"authorizationToken":"' + b64(f"AWS:{CANARY}")),
        "GetAuthorizationToken (ECR, us-west-2): malformed response: the answer is not valid JSON",
    ),
    "wrong shape": (
        (200, json.dumps({"authorizationData": CANARY})),
        "GetAuthorizationToken (ECR, us-west-2): malformed response: unexpected content",
    ),
    "bad timestamp": (
        (200, json.dumps(token_answer(b64("AWS:pw"), CANARY))),  # type: ignore[arg-type]
        "GetAuthorizationToken (ECR, us-west-2): malformed response: unexpected content",
    ),
    "expired credentials": (
        (
            400,
            {
                "__type": "ExpiredTokenException",
                "message": "The security token included in the request is expired",
            },
        ),
        "GetAuthorizationToken (ECR, us-west-2): ExpiredTokenException (HTTP 400): The security "
        "token included in the request is expired",
    ),
    "wrong region": (
        (
            403,
            {
                "__type": "InvalidSignatureException",
                "message": "Credential should be scoped to a valid region.",
            },
        ),
        "GetAuthorizationToken (ECR, us-west-2): InvalidSignatureException (HTTP 403): "
        "Credential should be scoped to a valid region.",
    ),
    "secret echoed": (
        (400, {"__type": "UnrecognizedClientException", "message": f"bad key {CANARY}"}),
        "GetAuthorizationToken (ECR, us-west-2): UnrecognizedClientException (HTTP 400): bad "
        "key <redacted>",
    ),
}


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_bad_answers(
    aws_env: None,
    provider: Make,
    clients: HookedClients,
    monkeypatch: pytest.MonkeyPatch,
    logs: list[str],
    case: str,
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    answer, want = BAD_ANSWERS[case]
    clients.on_client.append(canned([answer]))
    message = error_of(provider)
    assert message.startswith(want)
    assert CANARY not in message
    assert not [line for line in logs if CANARY in line]  # not even at -v 4


def test_unreachable_endpoint(
    aws_env: None, provider: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert error_of(provider) == (
        f"GetAuthorizationToken (ECR, us-west-2): Could not connect to the endpoint URL: "
        f'"http://127.0.0.1:{port}/"'
    )


def test_no_credentials(aws_env: None, provider: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert error_of(provider).startswith(
        "GetAuthorizationToken (ECR, us-west-2): no AWS credentials found"
    )


def test_clock_is_wall_time(aws_env: None) -> None:
    provider = EcrCredentialProvider(clients=HookedClients())
    assert abs(provider.clock.time() - datetime.now(UTC).timestamp()) < 60
    assert isinstance(FakeClock(CLOCK_START_NS).now(), int)
