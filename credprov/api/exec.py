"""``credentialprovider.kubelet.k8s.io`` exec API: v1alpha1, v1beta1 and v1.

Mirrors ``kubernetes/kubelet:pkg/apis/credentialprovider``: the request carries the image
and, in v1 only, the service-account token and annotations (the internal→v1alpha1/v1beta1
conversion drops them); the response is the same in every version.

Encoding is byte-exact with the kubelet's ``json.Encoder`` output: compact, fields in Go
struct order, map keys sorted, ``<``, ``>``, ``&`` escaped, and a trailing newline.

The schema of each version is :func:`exec_spec`, which the strict decoder applies with the
kubelet's exact errors; there is no second (pydantic) schema of the exec API. The plugin
SDK's stdlib decoder (``credprov.sdk._wire``) is checked against this one by tests.
"""

from __future__ import annotations

import json
from typing import Any

from credprov._go.decode import (
    DecodeError,
    Document,
    group_version_string,
    interpret_meta,
    parse_group_version,
    parse_json,
)
from credprov._go.durations import format_duration, parse_duration
from credprov._go.fmt import go_quote
from credprov._go.json import go_json
from credprov.api import internal, scheme


def api_version_of(version: str) -> str:
    """The exec API's ``apiVersion`` for ``version``
    (``v1`` -> ``credentialprovider.kubelet.k8s.io/v1``).
    """
    return f"{internal.EXEC_GROUP}/{version}"


def encode_request(req: internal.CredentialProviderRequest, api_version: str) -> bytes:
    """Encode a request in ``api_version`` exactly as the kubelet writes it to stdin.

    Raises:
        ValueError: ``api_version`` is not a credentialprovider.kubelet.k8s.io version.
    """
    if api_version not in internal.EXEC_API_VERSIONS:
        raise ValueError(f"invalid apiVersion: {json.dumps(api_version)}")
    body: dict[str, Any] = {
        "kind": internal.REQUEST_KIND,
        "apiVersion": api_version,
        "image": req.image,
    }
    if api_version.endswith("/v1"):
        if req.service_account_token:
            body["serviceAccountToken"] = req.service_account_token
        if req.service_account_annotations:
            body["serviceAccountAnnotations"] = dict(
                sorted(req.service_account_annotations.items())
            )
    return (go_json(body) + "\n").encode("utf-8")


def encode_response(resp: internal.CredentialProviderResponse, api_version: str) -> bytes:
    """Encode a response as a Go plugin using the kubelet's serializer would."""
    body: dict[str, Any] = {
        "kind": internal.RESPONSE_KIND,
        "apiVersion": api_version,
        "cacheKeyType": resp.cache_key_type,
    }
    if resp.cache_duration is not None:
        body["cacheDuration"] = format_duration(resp.cache_duration)
    if resp.auth:
        body["auth"] = {
            k: {"username": v.username, "password": v.password}
            for k, v in sorted(resp.auth.items())
        }
    return (go_json(body) + "\n").encode("utf-8")


def interpret_response_gvk(stdout: bytes) -> str:
    """``json.DefaultMetaFactory.Interpret`` of a response: its ``GroupVersion().String()``.

    JSON only, and encoding/json matches ``apiVersion`` case-insensitively here.

    Raises:
        DecodeError: ``couldn't get version/kind; json parse error: ...`` or
            ``unexpected GroupVersion string: ...``.
    """
    try:
        data = parse_json(stdout)
    except DecodeError as exc:
        raise DecodeError(f"couldn't get version/kind; json parse error: {exc}") from None
    api_version, _ = interpret_meta(data)
    return group_version_string(*parse_group_version(api_version))


def decode_response(doc: Document) -> internal.CredentialProviderResponse:
    """Strictly decode a plugin response (the kubelet's ``decodeResponse``).

    Raises:
        DecodeError: the detailed reason. The kubelet never shows it (it may quote a
            secret); callers must report a generic message instead.
    """
    decoded = scheme.decode(doc)
    _check_kind(decoded, internal.RESPONSE_KIND)
    data = decoded.data or {}
    duration = None
    if data.get("cacheDuration") is not None:
        duration = parse_duration(data["cacheDuration"])
    auth = {
        k: internal.AuthConfig(username=v.get("username", ""), password=v.get("password", ""))
        for k, v in (data.get("auth") or {}).items()
    }
    return internal.CredentialProviderResponse(
        cache_key_type=data.get("cacheKeyType", ""), cache_duration=duration, auth=auth
    )


def _check_kind(decoded: scheme.Decoded, want: str) -> None:
    """The kind and group checks after decoding (``decodeResponse`` in ``plugin.go``)."""
    if decoded.kind != want:
        raise DecodeError(f"failed to decode {want}, unexpected Kind: {go_quote(decoded.kind)}")
    if decoded.group != internal.EXEC_GROUP:  # no other group registers these kinds
        raise DecodeError(f"failed to decode {want}, unexpected Group: {decoded.group}")


def decode_request(doc: Document) -> tuple[str, internal.CredentialProviderRequest]:
    """Strictly decode a request (what a plugin reads); returns (apiVersion, request).

    Raises:
        DecodeError: wrong group, version or kind, unknown fields, wrong types.
    """
    decoded = scheme.decode(doc)
    _check_kind(decoded, internal.REQUEST_KIND)
    data = decoded.data or {}
    req = internal.CredentialProviderRequest(
        image=data.get("image", ""),
        service_account_token=data.get("serviceAccountToken", ""),
        service_account_annotations=dict(data.get("serviceAccountAnnotations") or {}),
    )
    return api_version_of(decoded.version), req
