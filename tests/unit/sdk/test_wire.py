"""The SDK's stdlib request decoder and response encoder agree with the kubelet's."""

from __future__ import annotations

import json

import pytest

from credprov._go.durations import HOUR
from credprov.api import internal
from credprov.api.exec import encode_response as engine_encode_response
from credprov.sdk._wire import RequestError, encode_response, parse_request

G = "credentialprovider.kubelet.k8s.io"


def req(**fields: object) -> bytes:
    body: dict[str, object] = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1"}
    body.update(fields)
    return json.dumps(body).encode()


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_every_version_parses(version: str) -> None:
    r = parse_request(req(apiVersion=f"{G}/{version}", image="r.io/x"))
    assert (r.image, r.api_version, r.registry) == ("r.io/x", f"{G}/{version}", "r.io")


def test_v1_service_account_fields() -> None:
    r = parse_request(
        req(image="r.io/x", serviceAccountToken="s3cr3t-tok", serviceAccountAnnotations={"a": "b"})
    )
    assert r.service_account_token == "s3cr3t-tok" and r.service_account_annotations == {"a": "b"}
    assert "s3cr3t" not in repr(r)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "request is not valid JSON"),
        (b"[]", "request is not a JSON object"),
        (b"\xff\xfe", "request is not valid JSON: invalid character 'ÿ' looking for beginning"),
        (req(image="r.io/x", apiVersion=f"{G}/v2"), 'unsupported apiVersion "'),
        (req(image="r.io/x", apiVersion=""), "request has no apiVersion"),
        (req(image="r.io/x", kind="CredentialProviderResponse"), 'unexpected kind "Credential'),
        (req(image=""), "request has an empty image"),
        (req(), "request has an empty image"),
        (req(image=3), "image is not a string"),
        (req(image="r.io/x", serviceAccountAnnotations={"a": 1}), "not a string map"),
        (
            b'{"kind":"CredentialProviderRequest","kind":"x","apiVersion":"'
            + G.encode()
            + b'/v1","image":"r.io/x"}',
            'unexpected kind "x"',  # Go's decoder keeps the last value of a repeated field
        ),
        (b"[" * 100_000, "request is not valid JSON: invalid character '[' exceeded max depth"),
        (b"NaN", "request is not valid JSON: invalid character 'N' looking for beginning of value"),
        (req(image="r.io/x", apiVersion=f"{G}/v1", extra=1) + b"x", "not valid JSON"),
    ],
    ids=[
        "not-json",
        "not-object",
        "not-utf8",
        "unknown-version",
        "no-version",
        "wrong-kind",
        "empty-image",
        "missing-image",
        "image-type",
        "annotation-type",
        "repeated-field-last-wins",
        "deep-nesting",
        "nan",
        "trailing-garbage",
    ],
)
def test_bad_requests(data: bytes, message: str) -> None:
    with pytest.raises(RequestError) as err:
        parse_request(data)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("key_type", "duration", "auth"),
    [
        ("Registry", HOUR, {"r.io": ("u", "p&<>")}),
        ("Image", None, {}),
        ("Global", 0, {"b.io": ("", ""), "a.io": ("x", "y\u2028")}),
    ],
    ids=["registry", "no-duration-no-auth", "global-sorted"],
)
def test_encoding_matches_engine_encoder(
    key_type: str, duration: int | None, auth: dict[str, tuple[str, str]]
) -> None:
    from credprov._go.durations import format_duration

    for version in ("v1alpha1", "v1beta1", "v1"):
        api_version = f"{G}/{version}"
        engine = engine_encode_response(
            internal.CredentialProviderResponse(
                cache_key_type=key_type,
                cache_duration=duration,
                auth={k: internal.AuthConfig(u, p) for k, (u, p) in auth.items()},
            ),
            api_version,
        )
        sdk = encode_response(
            api_version,
            key_type,
            format_duration(duration) if duration is not None else None,
            auth,
        )
        assert sdk == engine


@pytest.mark.parametrize(
    ("data", "image", "token", "annotations"),
    [
        (req(image="r.io/x", extra=1, futureField={"a": [1]}), "r.io/x", "", {}),
        (
            req(image="r.io/x", apiVersion=f"{G}/v1beta1", serviceAccountToken="t"),
            "r.io/x",
            "",
            {},
        ),
        (
            req(image="r.io/x", serviceAccountToken="t", serviceAccountAnnotations={"a": "b"}),
            "r.io/x",
            "t",
            {"a": "b"},
        ),
        (
            b'{"kind":"CredentialProviderRequest","apiVersion":"'
            + G.encode()
            + b'/v1","image":"r.io/a","image":"r.io/b"}',
            "r.io/b",
            "",
            {},
        ),
        (req(image="r.io/\ud800x"), "r.io/\ufffdx", "", {}),
    ],
    ids=[
        "unknown-fields-ignored",
        "sa-field-ignored-before-v1",
        "v1-sa-fields",
        "repeated-field-last-wins",
        "lone-surrogate-is-replacement-char",
    ],
)
def test_lenient_requests(data: bytes, image: str, token: str, annotations: dict[str, str]) -> None:
    r = parse_request(data)
    assert (r.image, r.service_account_token, r.service_account_annotations) == (
        image,
        token,
        annotations,
    )


def test_requests_read_as_go_plugins_read_them() -> None:
    """Invalid UTF-8 in a string is one U+FFFD per byte, and nesting Python's parser cannot
    reach (an unknown field 5,000 deep) is still a request, as json.Unmarshal reads it."""
    image = b'"r.io/x\xe2\x82y"'
    data = (
        b'{"kind":"CredentialProviderRequest","apiVersion":"'
        + G.encode()
        + b'/v1","image":'
        + image
        + b',"future":'
        + b"[" * 5000
        + b"]" * 5000
        + b"}"
    )
    assert parse_request(data).image == "r.io/x\ufffd\ufffdy"
