"""``credentialprovider.kubelet.k8s.io`` exec API: v1alpha1, v1beta1 and v1.

Mirrors ``kubernetes/kubelet:pkg/apis/credentialprovider``: the request carries the image
and, in v1 only, the service-account token and annotations (the internal→v1alpha1/v1beta1
conversion drops them); the response is the same in every version.

Encoding is byte-exact with the kubelet's ``json.Encoder`` output: compact, fields in Go
struct order, map keys sorted, ``<``, ``>``, ``&`` escaped, and a trailing newline.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from credprov.api import internal
from credprov.api._decode import DecodeError, Document, interpret_gvk, validate_model
from credprov.durations import DurationError, format_duration, parse_duration

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class AuthConfig(BaseModel):
    model_config = _STRICT
    username: str | None = None
    password: str | None = None

    def __repr_args__(self) -> Any:  # keep passwords out of reprs and logs
        yield "username", self.username
        yield "password", "<redacted>"


class CredentialProviderResponse(BaseModel):
    model_config = _STRICT
    kind: str | None = None
    api_version: str | None = Field(None, alias="apiVersion")
    cache_key_type: str | None = Field(None, alias="cacheKeyType")
    cache_duration: str | None = Field(None, alias="cacheDuration")
    auth: dict[str, AuthConfig | None] | None = None


class CredentialProviderRequest(BaseModel):
    model_config = _STRICT
    kind: str | None = None
    api_version: str | None = Field(None, alias="apiVersion")
    image: str | None = None
    service_account_token: str | None = Field(None, alias="serviceAccountToken")
    service_account_annotations: dict[str, str] | None = Field(
        None, alias="serviceAccountAnnotations"
    )


class CredentialProviderRequestV1beta1(BaseModel):
    """v1alpha1 and v1beta1 requests have no service-account fields."""

    model_config = _STRICT
    kind: str | None = None
    api_version: str | None = Field(None, alias="apiVersion")
    image: str | None = None


_GO_FIELDS = {
    "kind": ("CredentialProviderResponse", "string"),
    "apiVersion": ("CredentialProviderResponse", "string"),
    "cacheKeyType": ("CredentialProviderResponse", "v1.PluginCacheKeyType"),
    "cacheDuration": ("CredentialProviderResponse", "string"),
    "auth": ("CredentialProviderResponse", "map[string]v1.AuthConfig"),
    "username": ("AuthConfig", "string"),
    "password": ("AuthConfig", "string"),
    "image": ("CredentialProviderRequest", "string"),
    "serviceAccountToken": ("CredentialProviderRequest", "string"),
    "serviceAccountAnnotations": ("CredentialProviderRequest", "map[string]string"),
}


def _go_type_of(loc: tuple[int | str, ...]) -> tuple[str, str]:
    names = [p for p in loc if isinstance(p, str)]
    last = names[-1] if names else ""
    if len(names) == 2 and names[0] == "auth":
        return "CredentialProviderResponse", "v1.AuthConfig"
    return _GO_FIELDS.get(last, ("CredentialProviderResponse", "string"))


# -- JSON exactly as Go's json.Encoder writes it -----------------------------------------------


def go_json(value: Any) -> str:
    """Compact JSON with Go's HTML escaping (``json.Marshal``), no trailing newline."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def api_version_of(version: str) -> str:
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
            body["serviceAccountAnnotations"] = dict(sorted(req.service_account_annotations.items()))
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
            k: {"username": v.username, "password": v.password} for k, v in sorted(resp.auth.items())
        }
    return (go_json(body) + "\n").encode("utf-8")


def interpret_response_gvk(stdout: bytes) -> str:
    """``json.DefaultMetaFactory.Interpret``: the response's apiVersion, JSON only.

    encoding/json matches keys case-insensitively here (an exact match wins).

    Raises:
        DecodeError: ``couldn't get version/kind; json parse error: ...``.
    """
    try:
        data = json.loads(stdout.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        from credprov.api._decode import _json_go_error

        raise DecodeError(
            f"couldn't get version/kind; json parse error: {_json_go_error(exc)}"
        ) from None
    except (ValueError, RecursionError):
        raise DecodeError("couldn't get version/kind; json parse error: invalid JSON") from None
    if not isinstance(data, dict):
        raise DecodeError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            "non-object into Go value of type struct"
        )
    value = data.get("apiVersion")
    if value is None:
        for k, v in data.items():
            if k.lower() == "apiversion":
                value = v
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DecodeError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            "non-string into Go struct field .apiVersion of type string"
        )
    return value


def decode_response(doc: Document) -> internal.CredentialProviderResponse:
    """Strictly decode a plugin response (the kubelet's ``decodeResponse``).

    Raises:
        DecodeError: the detailed reason. The kubelet never shows it (it may quote a
            secret); callers must report a generic message instead.
    """
    group, version, kind = interpret_gvk(doc)
    if group != internal.EXEC_GROUP or version not in internal.EXEC_VERSIONS:
        gv = f"{group}/{version}" if group else version
        raise DecodeError(f'no kind "{kind}" is registered for version "{gv}"')
    if kind == internal.REQUEST_KIND:
        raise DecodeError(f'failed to decode CredentialProviderResponse, unexpected Kind: "{kind}"')
    if kind != internal.RESPONSE_KIND:
        raise DecodeError(f'no kind "{kind}" is registered for version "{group}/{version}"')
    obj = validate_model(CredentialProviderResponse, doc, _go_type_of)
    assert isinstance(obj, CredentialProviderResponse)
    duration = None
    if obj.cache_duration is not None:
        try:
            duration = parse_duration(obj.cache_duration)
        except DurationError as exc:
            raise DecodeError(str(exc)) from None
    auth = {
        k: internal.AuthConfig(username=(v.username or "") if v else "", password=(v.password or "") if v else "")
        for k, v in (obj.auth or {}).items()
    }
    return internal.CredentialProviderResponse(
        cache_key_type=obj.cache_key_type or "", cache_duration=duration, auth=auth
    )


def decode_request(doc: Document) -> tuple[str, internal.CredentialProviderRequest]:
    """Strictly decode a request (what a plugin reads); returns (apiVersion, request).

    Raises:
        DecodeError: wrong group, version or kind, unknown fields, wrong types.
    """
    group, version, kind = interpret_gvk(doc)
    if group != internal.EXEC_GROUP or version not in internal.EXEC_VERSIONS:
        gv = f"{group}/{version}" if group else version
        raise DecodeError(f'no kind "{kind}" is registered for version "{gv}"')
    if kind != internal.REQUEST_KIND:
        raise DecodeError(f'failed to decode CredentialProviderRequest, unexpected Kind: "{kind}"')
    model: type[BaseModel] = (
        CredentialProviderRequest if version == "v1" else CredentialProviderRequestV1beta1
    )
    obj = validate_model(model, doc, _go_type_of)
    req = internal.CredentialProviderRequest(
        image=getattr(obj, "image", None) or "",
        service_account_token=getattr(obj, "service_account_token", None) or "",
        service_account_annotations=dict(getattr(obj, "service_account_annotations", None) or {}),
    )
    return api_version_of(version), req
