"""The exec API as a plugin sees it: strict request decoding and kubelet-exact responses.

Standard library only (``json``): this module is on every plugin's warm path, so it must not
import pydantic. It mirrors what ``credprov.api.exec`` does with pydantic — the same
versions, kinds, field sets and Go JSON encoding — and the tests check the two agree.
"""

from __future__ import annotations

import json

# typing costs ~10 ms of start-up (re, enum, contextlib) on a plugin's warm path; the
# annotations need it only for type checkers (mypy reads this name as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "credentialprovider.kubelet.k8s.io"
API_VERSIONS = (f"{GROUP}/v1alpha1", f"{GROUP}/v1beta1", f"{GROUP}/v1")
REQUEST_KIND = "CredentialProviderRequest"
RESPONSE_KIND = "CredentialProviderResponse"
CACHE_KEY_TYPES = ("Image", "Registry", "Global")

_V1_FIELDS = frozenset(
    ("kind", "apiVersion", "image", "serviceAccountToken", "serviceAccountAnnotations")
)
_OLD_FIELDS = frozenset(("kind", "apiVersion", "image"))


class RequestError(ValueError):
    """A request the plugin must refuse; ``str()`` is one line and quotes no secret."""


class Request:
    """One ``CredentialProviderRequest``, in the version the kubelet asked in."""

    __slots__ = ("api_version", "image", "service_account_annotations", "service_account_token")

    def __init__(
        self,
        image: str,
        api_version: str = f"{GROUP}/v1",
        service_account_token: str = "",
        service_account_annotations: dict[str, str] | None = None,
    ) -> None:
        self.image = image
        self.api_version = api_version
        self.service_account_token = service_account_token
        self.service_account_annotations = dict(service_account_annotations or {})

    @property
    def registry(self) -> str:
        """The image's registry host[:port], as the kubelet's ``parseRegistry``."""
        return self.image.split("/")[0]

    def __repr__(self) -> str:
        token = "<redacted>" if self.service_account_token else ""
        return f"Request(image={self.image!r}, api_version={self.api_version!r}, token={token!r})"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RequestError(f'strict decoding error: duplicate field "{key}"')
        out[key] = value
    return out


def parse_request(data: bytes) -> Request:
    """Decode stdin as the kubelet's strict decoder would decode a request.

    Raises:
        RequestError: not JSON, not an object, wrong kind or version, unknown or duplicate
            fields, wrong types, or an empty image.
    """
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise RequestError("request is not valid UTF-8") from None
    except RequestError:
        raise
    except ValueError as exc:
        msg = getattr(exc, "msg", "invalid JSON")
        raise RequestError(f"request is not valid JSON: {msg}") from None
    if not isinstance(doc, dict):
        raise RequestError("request is not a JSON object")
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise RequestError("request has no apiVersion")
    if api_version not in API_VERSIONS:
        raise RequestError(
            f"unsupported apiVersion {json.dumps(api_version)}; want one of "
            + ", ".join(API_VERSIONS)
        )
    if kind != REQUEST_KIND:
        raise RequestError(f"unexpected kind {json.dumps(kind)}; want {REQUEST_KIND}")
    allowed = _V1_FIELDS if api_version.endswith("/v1") else _OLD_FIELDS
    unknown = [k for k in doc if k not in allowed]
    if unknown:
        raise RequestError(
            "strict decoding error: " + ", ".join(f"unknown field {json.dumps(k)}" for k in unknown)
        )
    image = doc.get("image")
    if image is None:
        image = ""
    if not isinstance(image, str):
        raise RequestError("request field image is not a string")
    if not image:
        raise RequestError("request has an empty image")
    token = doc.get("serviceAccountToken") or ""
    if not isinstance(token, str):
        raise RequestError("request field serviceAccountToken is not a string")
    annotations = doc.get("serviceAccountAnnotations") or {}
    if not isinstance(annotations, dict) or not all(
        isinstance(v, str) for v in annotations.values()
    ):
        raise RequestError("request field serviceAccountAnnotations is not a string map")
    return Request(image, api_version, token, annotations)


def go_json(value: Any) -> str:
    """``json.Marshal`` output: compact, HTML-escaped like Go's encoder."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def encode_response(
    api_version: str,
    cache_key_type: str,
    cache_duration: str | None,
    auth: dict[str, tuple[str, str]],
) -> bytes:
    """A response exactly as the kubelet's serializer writes one (sorted keys, newline)."""
    body: dict[str, Any] = {
        "kind": RESPONSE_KIND,
        "apiVersion": api_version,
        "cacheKeyType": cache_key_type,
    }
    if cache_duration is not None:
        body["cacheDuration"] = cache_duration
    if auth:
        body["auth"] = {
            key: {"username": user, "password": password}
            for key, (user, password) in sorted(auth.items())
        }
    return (go_json(body) + "\n").encode("utf-8")
