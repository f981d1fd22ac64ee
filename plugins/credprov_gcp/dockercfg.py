"""The ``dockercfg`` and ``dockercfg-url`` flows: registry credentials kept in instance metadata.

``google-dockercfg`` holds a legacy ``.dockercfg`` (registry → ``{username, password, email,
auth}``, where a non-empty ``auth`` is ``base64(username:password)``, padded or not, and
wins over the two fields). ``google-dockercfg-url`` holds a URL (its text must start with
``http``, upstream's check) from which that document is fetched, without the metadata
header. The keys are answered verbatim (``https://host`` included: the kubelet strips it),
whatever the image.

credprov also reads the ``{"auths": {...}}`` form of ``config.json``, which upstream would
misread as one registry named ``auths`` with empty credentials.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from credprov.sdk.http import status_text
from credprov_gcp._http import HttpFailure, Transport, attempts_note, safe_url
from credprov_gcp.errors import GCPError
from credprov_gcp.metadata import MetadataClient

DOCKERCFG_ATTRIBUTE = "google-dockercfg"
DOCKERCFG_URL_ATTRIBUTE = "google-dockercfg-url"
URL_TIMEOUT = 10.0


def _decode_auth(field: str) -> tuple[str, str] | None:
    """``base64(username:password)`` (standard alphabet, padding optional), or None."""
    padded = field + "=" * (-len(field) % 4)
    try:
        text = base64.b64decode(padded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    user, colon, password = text.partition(":")
    return (user, password) if colon else None


def _string(entry: dict[str, Any], field: str, source: str, key: str) -> str:
    value = entry.get(field, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise GCPError(f"{source}: registry {json.dumps(key)}: {field} is not a string")
    return value


def parse(data: bytes, source: str) -> dict[str, tuple[str, str]]:
    """Registry key → (username, password) from a ``.dockercfg`` (or ``config.json``).

    Raises:
        GCPError: not JSON, not an object, an entry that is not an object, a field of the
            wrong type, or an ``auth`` that is not ``base64(username:password)``. Values are
            never quoted.
    """
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise GCPError(f"{source}: not a JSON docker config") from None
    if not isinstance(doc, dict):
        raise GCPError(f"{source}: not a JSON object")
    if isinstance(doc.get("auths"), dict):
        doc = doc["auths"]
    out: dict[str, tuple[str, str]] = {}
    for key, entry in doc.items():
        if not isinstance(entry, dict):
            raise GCPError(f"{source}: registry {json.dumps(key)}: not an object")
        auth = _string(entry, "auth", source, key)
        if auth:
            pair = _decode_auth(auth)
            if pair is None:
                raise GCPError(
                    f"{source}: registry {json.dumps(key)}: auth is not base64(username:password)"
                )
            out[key] = pair
        else:
            out[key] = (
                _string(entry, "username", source, key),
                _string(entry, "password", source, key),
            )
    return out


def from_attribute(metadata: MetadataClient) -> dict[str, tuple[str, str]]:
    """The ``dockercfg`` flow.

    Raises:
        GCPError: see :meth:`MetadataClient.attribute` and :func:`parse`.
    """
    data = metadata.attribute(DOCKERCFG_ATTRIBUTE)
    return parse(data, f"instance attribute {DOCKERCFG_ATTRIBUTE}")


def from_url(metadata: MetadataClient, transport: Transport) -> dict[str, tuple[str, str]]:
    """The ``dockercfg-url`` flow (``transport`` honours proxy settings, as upstream).

    Raises:
        GCPError: the attribute is missing or not an http(s) URL, the URL fails, or the
            document does not parse.
    """
    raw = metadata.attribute(DOCKERCFG_URL_ATTRIBUTE)
    source = f"instance attribute {DOCKERCFG_URL_ATTRIBUTE}"
    try:
        url = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise GCPError(f"{source}: not text") from None
    if not url.startswith("http"):
        raise GCPError(f"{source}: Unsupported URL scheme (want http or https)")
    where = safe_url(url)
    try:
        resp = transport(url, "GET", timeout=URL_TIMEOUT)
    except HttpFailure as exc:
        raise GCPError(f"{source}: cannot fetch {where} ({exc.detail})") from None
    if resp.status != 200:
        raise GCPError(
            f"{source}: {where}: HTTP {status_text(resp.status)}{attempts_note(resp.attempts)}"
        )
    return parse(resp.data, where)
