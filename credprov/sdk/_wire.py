"""The exec API as a plugin sees it: lenient request decoding and kubelet-exact responses.

Requests are decoded as upstream plugins decode them (Go's ``json.Unmarshal``): fields this
version does not know are ignored, so a future kubelet that adds a request field does not
break the plugin, a repeated field keeps its last value, and a lone UTF-16 surrogate becomes
U+FFFD. The kind and apiVersion are still checked. (The kubelet decodes *responses*
strictly; that is ``credprov.api.exec``'s job.)

Standard library only, through :mod:`credprov.base.fastjson` (``json``'s results without
importing ``json`` and ``re``): this module is on every plugin's warm path, so it must not
import pydantic. It mirrors what ``credprov.api.exec`` does with pydantic — the same
versions, kinds, field sets and Go JSON encoding — and the tests check the two agree.
"""

from __future__ import annotations

from credprov.base import fastjson
from credprov.errors import PluginSDKError

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

_OLD_FIELDS = frozenset(("kind", "apiVersion", "image"))


class RequestError(PluginSDKError, ValueError):
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


def _go_string(value: str) -> str:
    """Go's decoder turns a lone UTF-16 surrogate (``"\\ud800"``) into U+FFFD."""
    if not any("\ud800" <= ch <= "\udfff" for ch in value):
        return value
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN/Infinity are not JSON to Go


def _go_json_request(data: bytes) -> Any:
    """The cold path: what Python's parser refused, read by Go's rules.

    Upstream plugins decode with ``json.Unmarshal``: invalid UTF-8 inside a string is one
    U+FFFD per byte, nesting is fine up to 10,000 levels, and errors are encoding/json's.
    """
    from credprov._go import json as gojson

    try:
        return gojson.loads(data)
    except ValueError as exc:
        raise RequestError(f"request is not valid JSON: {exc}") from None


def parse_request(data: bytes, *, allow_empty_image: bool = False) -> Request:
    """Decode stdin leniently, as upstream plugins decode the kubelet's request.

    Unknown fields are ignored (so are the service-account fields in versions before v1);
    a repeated field keeps its last value.

    Args:
        allow_empty_image: return a request with an empty image instead of refusing it (for
            plugins that refuse it with their own text).

    Raises:
        RequestError: not JSON, not an object, wrong kind or version, wrong types, or an
            empty image.
    """
    try:
        doc = fastjson.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError too
        doc = _go_json_request(data)
    if not isinstance(doc, dict):
        raise RequestError("request is not a JSON object")
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise RequestError("request has no apiVersion")
    if api_version not in API_VERSIONS:
        raise RequestError(
            f"unsupported apiVersion {fastjson.dumps(api_version)}; want one of "
            + ", ".join(API_VERSIONS)
        )
    if kind != REQUEST_KIND:
        raise RequestError(f"unexpected kind {fastjson.dumps(kind)}; want {REQUEST_KIND}")
    if not api_version.endswith("/v1"):  # the service-account fields arrived in v1
        doc = {k: v for k, v in doc.items() if k in _OLD_FIELDS}
    image = doc.get("image")
    if image is None:
        image = ""
    if not isinstance(image, str):
        raise RequestError("request field image is not a string")
    if not image and not allow_empty_image:
        raise RequestError("request has an empty image")
    token = doc.get("serviceAccountToken") or ""
    if not isinstance(token, str):
        raise RequestError("request field serviceAccountToken is not a string")
    annotations = doc.get("serviceAccountAnnotations") or {}
    if not isinstance(annotations, dict) or not all(
        isinstance(v, str) for v in annotations.values()
    ):
        raise RequestError("request field serviceAccountAnnotations is not a string map")
    return Request(
        _go_string(image),
        api_version,
        _go_string(token),
        {_go_string(k): _go_string(v) for k, v in annotations.items()},
    )


def go_json(value: Any) -> str:
    """``json.Marshal`` output: compact, HTML-escaped like Go's encoder."""
    text = fastjson.dumps(value, ensure_ascii=False, separators=(",", ":"))
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
