"""Exec API wire format: request bytes and strict response decoding (``plugin_test.go``)."""

from __future__ import annotations

import pytest

from credprov._go.decode import DecodeError, StrictDecodingError, load_document
from credprov.api import internal
from credprov.api.exec import (
    decode_request,
    decode_response,
    encode_request,
    go_json,
    interpret_response_gvk,
)

G = "credentialprovider.kubelet.k8s.io"
REQ = internal.CredentialProviderRequest


_ENCODE = [
    pytest.param(
        REQ("test.registry.io/foobar"),
        f"{G}/v1alpha1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1alpha1","image":"test.registry.io/foobar"}\n',
        id="upstream-v1alpha1",
    ),
    pytest.param(
        REQ("test.registry.io/foobar"),
        f"{G}/v1beta1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1beta1","image":"test.registry.io/foobar"}\n',
        id="upstream-v1beta1",
    ),
    pytest.param(
        REQ("test.registry.io/foobar"),
        f"{G}/v1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1","image":"test.registry.io/foobar"}\n',
        id="upstream-v1",
    ),
    pytest.param(
        REQ(
            "test.registry.io/foobar", "service-account-token", {"domain.io/annotation1": "value1"}
        ),
        f"{G}/v1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1","image":"test.registry.io/foobar","serviceAccountToken":"service-account-token",'
        b'"serviceAccountAnnotations":{"domain.io/annotation1":"value1"}}\n',
        id="upstream-v1-service-account",
    ),
    pytest.param(
        REQ("img", "tok", {"a": "1"}),
        f"{G}/v1beta1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1beta1","image":"img"}\n',
        id="v1beta1-drops-service-account-fields",
    ),
    pytest.param(
        REQ("img", "tok", {"a": "1"}),
        f"{G}/v1alpha1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1alpha1","image":"img"}\n',
        id="v1alpha1-drops-service-account-fields",
    ),
    pytest.param(
        REQ("img", "", {"z": "1", "B": "2", "a": "<&>"}),
        f"{G}/v1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1","image":"img","serviceAccountAnnotations":{"B":"2","a":"\\u003c\\u0026\\u003e",'
        b'"z":"1"}}\n',
        id="sorted-annotations-html-escaped-empty-token-omitted",
    ),
    pytest.param(
        REQ(""),
        f"{G}/v1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1","image":""}\n',
        id="empty-image-still-emitted",
    ),
    pytest.param(
        REQ('r.io/a<b>&"\\\u2028\u00e9\x01'),
        f"{G}/v1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1","image":"r.io/a\\u003cb\\u003e\\u0026\\"\\\\\\u2028\xc3\xa9\\u0001"}\n',
        id="go-string-escaping",
    ),
    pytest.param(
        REQ("r.io/\udcff"),
        f"{G}/v1",
        b'{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/'
        b'v1","image":"r.io/\\ufffd"}\n',
        id="invalid-utf8-becomes-replacement-escape",
    ),
]


@pytest.mark.parametrize(("request_", "api_version", "want"), _ENCODE)
def test_encode_request(
    request_: internal.CredentialProviderRequest, api_version: str, want: bytes
) -> None:
    assert encode_request(request_, api_version) == want


def test_encode_request_rejects_unknown_version() -> None:
    with pytest.raises(ValueError, match='invalid apiVersion: "credentialprovider'):
        encode_request(REQ("x"), f"{G}/v2")


def test_go_json_is_compact() -> None:
    assert go_json({"a": [1, True, None], "b": "x"}) == '{"a":[1,true,null],"b":"x"}'


_AUTH = '"auth":{"*.registry.io":{"username":"user","password":"password"}}'
_MINUTE = 60 * 10**9


def _resp(
    version: str, rest: str = f',"cacheKeyType":"Registry","cacheDuration":"1m",{_AUTH}'
) -> str:
    return f'{{"kind":"CredentialProviderResponse","apiVersion":"{G}/{version}"{rest}}}'


_UPSTREAM_OK = internal.CredentialProviderResponse(
    "Registry", _MINUTE, {"*.registry.io": internal.AuthConfig("user", "password")}
)

_DECODE_OK = [
    pytest.param(_resp("v1"), _UPSTREAM_OK, id="upstream-v1"),
    pytest.param(_resp("v1beta1"), _UPSTREAM_OK, id="upstream-v1beta1"),
    pytest.param(_resp("v1alpha1"), _UPSTREAM_OK, id="upstream-v1alpha1"),
    pytest.param(
        _resp("v1", ',"cacheKeyType":"Image","auth":{"a":null,"b":{}}'),
        internal.CredentialProviderResponse(
            "Image", None, {"a": internal.AuthConfig(), "b": internal.AuthConfig()}
        ),
        id="null-and-empty-auth-entries",
    ),
    pytest.param(
        _resp("v1", ',"cacheKeyType":"Global","cacheDuration":null,"auth":null'),
        internal.CredentialProviderResponse("Global"),
        id="nulls",
    ),
    pytest.param(
        _resp("v1", ',"cacheKeyType":"Registry","cacheDuration":"0s"'),
        internal.CredentialProviderResponse("Registry", 0),
        id="zero-duration",
    ),
    pytest.param(
        "kind: CredentialProviderResponse\napiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        "cacheKeyType: Image\n",
        internal.CredentialProviderResponse("Image"),
        id="yaml-response",
    ),
]


@pytest.mark.parametrize(("data", "want"), _DECODE_OK)
def test_decode_response(data: str, want: internal.CredentialProviderResponse) -> None:
    assert decode_response(load_document(data.encode())) == want


_DECODE_ERR = [
    pytest.param(
        '{"kind":"WrongKind","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1"}',
        'no kind "WrongKind" is registered for version "credentialprovider.kubelet.k8s.io/'
        'v1beta1" in scheme "pkg/credentialprovider/plugin/plugin.go:69"',
        id="upstream-wrong-kind",
    ),
    pytest.param(
        '{"kind":"CredentialProviderResponse","apiVersion":"foobar.kubelet.k8s.io/v1beta1"}',
        'no kind "CredentialProviderResponse" is registered for version '
        '"foobar.kubelet.k8s.io/v1beta1" in scheme "pkg/credentialprovider/plugin/plugin.go:69"',
        id="upstream-wrong-group",
    ),
    pytest.param(
        _resp("v1", ',"cacheKeyType":"Image","extra":1'),
        'strict decoding error: unknown field "extra"',
        id="unknown-field",
    ),
    pytest.param(
        _resp("v1", ',"CacheKeyType":"Image"'),
        'strict decoding error: unknown field "CacheKeyType"',
        id="case-mismatched-field",
    ),
    pytest.param(
        _resp("v1", ',"auth":{"r":{"username":"u","token":"t"}}'),
        'strict decoding error: unknown field "auth.r.token"',
        id="unknown-field-inside-auth-map",
    ),
    pytest.param(
        _resp("v1", ',"auth":{"r":{},"r":{}}'),
        'strict decoding error: duplicate field "auth.r"',
        id="duplicate-map-key",
    ),
    pytest.param(
        _resp("v1", ',"cacheDuration":"1x"'),
        'time: unknown unit "x" in duration "1x"',
        id="bad-duration",
    ),
    pytest.param(
        _resp("v1", ',"cacheDuration":60'),
        "json: cannot unmarshal number into Go struct field "
        "CredentialProviderResponse.cacheDuration of type string",
        id="number-duration",
    ),
    pytest.param(
        _resp("v1", ',"auth":{"r":{"username":5}}'),
        "json: cannot unmarshal number into Go struct field AuthConfig.auth.username of type string",
        id="wrong-type-in-auth",
    ),
    pytest.param(
        _resp("v1beta1", ',"auth":{"r":"x"}'),
        "json: cannot unmarshal string into Go struct field CredentialProviderResponse.auth "
        "of type v1beta1.AuthConfig",
        id="string-auth-entry",
    ),
    pytest.param(
        '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1"}',
        "Object 'Kind' is missing in '<53-byte document not shown: it may hold secrets>'",
        id="missing-kind",
    ),
    pytest.param(
        '{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
        '"image":"x"}',
        'failed to decode CredentialProviderResponse, unexpected Kind: "CredentialProviderRequest"',
        id="request-kind",
    ),
    pytest.param(
        '{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
        '"cacheKeyType":"Image"}',
        'strict decoding error: unknown field "cacheKeyType"',
        id="request-kind-decodes-strictly-first",
    ),
]


@pytest.mark.parametrize(("data", "message"), _DECODE_ERR)
def test_decode_response_errors(data: str, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_response(load_document(data.encode()))
    assert str(info.value) == message


def test_strict_errors_are_listed() -> None:
    with pytest.raises(StrictDecodingError) as info:
        decode_response(load_document(_resp("v1", ',"a":1,"b":2,"a":3').encode()))
    assert info.value.errors == ['unknown field "a"', 'unknown field "b"']


_GVK = [
    pytest.param(b'{"apiVersion":"credentialprovider.kubelet.k8s.io/v1"}', f"{G}/v1", id="exact"),
    pytest.param(b'{"APIVERSION":"x/v1"}', "x/v1", id="case-insensitive"),
    pytest.param(b'{"apiVersion":"a/v1","ApiVersion":"b/v1"}', "b/v1", id="last-match-wins"),
    pytest.param(b'{"kind":"x"}', "", id="absent"),
    pytest.param(b'{"apiVersion":"/"}', "", id="slash-only"),
    pytest.param(b'{"apiVersion":"v1"}', "v1", id="no-group"),
]


@pytest.mark.parametrize(("stdout", "want"), _GVK)
def test_interpret_response_gvk(stdout: bytes, want: str) -> None:
    assert interpret_response_gvk(stdout) == want


_GVK_ERR = [
    pytest.param(
        b"",
        "couldn't get version/kind; json parse error: unexpected end of JSON input",
        id="empty",
    ),
    pytest.param(
        b"[]",
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go "
        'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
        'Kind string "json:\\"kind,omitempty\\"" }',
        id="array",
    ),
    pytest.param(
        b'{"apiVersion":1}',
        "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go "
        "struct field .apiVersion of type string",
        id="number",
    ),
    pytest.param(b'{"apiVersion":"a/b/c"}', "unexpected GroupVersion string: a/b/c", id="slashes"),
]


@pytest.mark.parametrize(("stdout", "message"), _GVK_ERR)
def test_interpret_response_gvk_errors(stdout: bytes, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        interpret_response_gvk(stdout)
    assert str(info.value) == message


_REQ_DECODE = [
    pytest.param(
        encode_request(REQ("img", "tok", {"k": "v"}), f"{G}/v1"),
        (f"{G}/v1", REQ("img", "tok", {"k": "v"})),
        id="v1-round-trip",
    ),
    pytest.param(
        encode_request(REQ("img", "tok", {"k": "v"}), f"{G}/v1beta1"),
        (f"{G}/v1beta1", REQ("img")),
        id="v1beta1-round-trip",
    ),
]


@pytest.mark.parametrize(("data", "want"), _REQ_DECODE)
def test_decode_request(data: bytes, want: tuple[str, internal.CredentialProviderRequest]) -> None:
    assert decode_request(load_document(data)) == want


def test_decode_request_v1beta1_has_no_token_field() -> None:
    data = b'{"kind":"CredentialProviderRequest","apiVersion":"' + G.encode() + b'/v1beta1",'
    data += b'"image":"i","serviceAccountToken":"t"}'
    with pytest.raises(DecodeError, match='unknown field "serviceAccountToken"'):
        decode_request(load_document(data))
