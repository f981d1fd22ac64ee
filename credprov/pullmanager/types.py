"""KEP-2535 records: ``ImagePullIntent`` and ``ImagePulledRecord`` as the kubelet stores them.

Mirrors ``k8s.io/kubelet/config/{v1alpha1,v1beta1}`` (group ``kubelet.config.k8s.io``): the
pydantic models take their JSON field names (``ImagePullSecret.model_validate({"uid": ...,
"credentialHash": ...})``), :func:`encode_intent`/:func:`encode_record` write exactly the
kubelet's bytes (compact JSON, ``kind`` then ``apiVersion`` then struct order, map keys
sorted, ``omitempty`` where the kubelet has it, RFC 3339 seconds in UTC, trailing newline),
and :func:`decode_intent`/:func:`decode_record` decode strictly (unknown or duplicate fields,
wrong kinds and versions are errors). Files exactly as an encoder writes them take a fast
path to the same objects (see "the fast path" below).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from json.scanner import make_scanner
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from credprov._go.json import go_json
from credprov.errors import PullManagerError

GROUP = "kubelet.config.k8s.io"
VERSIONS = ("v1alpha1", "v1beta1")
#: What credprov writes (1.35+); v1alpha1 files are read and migrated.
STORAGE_VERSION = "v1beta1"
INTENT_KIND = "ImagePullIntent"
RECORD_KIND = "ImagePulledRecord"

_STRICT = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
_M = TypeVar("_M", bound=BaseModel)


class RecordDecodeError(PullManagerError, ValueError):
    """A record or intent file that does not decode strictly."""


class ImagePullSecret(BaseModel):
    """A pull secret that pulled an image: its coordinates and the credential's hash."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, frozen=True)
    uid: str
    namespace: str
    name: str
    credential_hash: str = Field(alias="credentialHash")


class ImagePullServiceAccount(BaseModel):
    """A service account whose plugin credentials pulled an image (KEP-4412)."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, frozen=True)
    uid: str
    namespace: str
    name: str


class ImagePullCredentials(BaseModel):
    """Who may use an image: secrets, service accounts, or every pod on the node."""

    model_config = _STRICT
    kubernetes_secrets: list[ImagePullSecret] | None = Field(None, alias="kubernetesSecrets")
    kubernetes_service_accounts: list[ImagePullServiceAccount] | None = Field(
        None, alias="kubernetesServiceAccounts"
    )
    node_pods_accessible: bool = Field(False, alias="nodePodsAccessible")

    @property
    def secrets(self) -> list[ImagePullSecret]:
        """The secrets (a copy; empty when unset)."""
        return list(self.kubernetes_secrets or [])

    @property
    def service_accounts(self) -> list[ImagePullServiceAccount]:
        """The service accounts (a copy; empty when unset)."""
        return list(self.kubernetes_service_accounts or [])

    def is_empty(self) -> bool:
        """Whether it grants nothing: no secret, no service account, not node-wide."""
        return not self.secrets and not self.service_accounts and not self.node_pods_accessible


class ImagePullIntent(BaseModel):
    """A pull the kubelet started: the container's image string, verbatim."""

    model_config = _STRICT
    image: str


class ImagePulledRecord(BaseModel):
    """Which credentials pulled an image (by CRI imageRef), per image name."""

    model_config = _STRICT
    last_updated_time: _dt.datetime = Field(alias="lastUpdatedTime")
    image_ref: str = Field(alias="imageRef")
    credential_mapping: dict[str, ImagePullCredentials] = Field(
        default_factory=dict, alias="credentialMapping"
    )


# -- names ------------------------------------------------------------------------------------


def cache_filename(raw: str) -> str:
    """``sha256-<hex>`` of an intent's image or a record's imageRef (``CacheFilename``).

    Go hashes the string's bytes: an argument that is not UTF-8 (kept by Python as
    surrogate escapes) hashes as its original bytes.
    """
    try:
        data = raw.encode("utf-8")
    except UnicodeEncodeError:
        data = raw.encode("utf-8", "surrogateescape" if _escapes_only(raw) else "replace")
    return "sha256-" + hashlib.sha256(data).hexdigest()


def _escapes_only(raw: str) -> bool:
    return all(not "\ud800" <= ch <= "\udfff" or "\udc80" <= ch <= "\udcff" for ch in raw)


# -- encoding ---------------------------------------------------------------------------------


def format_time(t: _dt.datetime) -> str:
    """``metav1.Time`` JSON: RFC 3339, whole seconds, UTC (``2024-10-21T12:26:40Z``)."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _credentials_json(c: ImagePullCredentials) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if c.kubernetes_secrets:
        out["kubernetesSecrets"] = [
            {
                "uid": s.uid,
                "namespace": s.namespace,
                "name": s.name,
                "credentialHash": s.credential_hash,
            }
            for s in c.kubernetes_secrets
        ]
    if c.kubernetes_service_accounts:
        out["kubernetesServiceAccounts"] = [
            {"uid": s.uid, "namespace": s.namespace, "name": s.name}
            for s in c.kubernetes_service_accounts
        ]
    if c.node_pods_accessible:
        out["nodePodsAccessible"] = True
    return out


def encode_intent(intent: ImagePullIntent, version: str = STORAGE_VERSION) -> bytes:
    """The intent file's bytes as the kubelet writes them, in API ``version``."""
    body = {"kind": INTENT_KIND, "apiVersion": f"{GROUP}/{version}", "image": intent.image}
    return (go_json(body) + "\n").encode("utf-8")


def encode_record(record: ImagePulledRecord, version: str = STORAGE_VERSION) -> bytes:
    """The record file's bytes as the kubelet writes them, in API ``version`` (mapping keys
    sorted, time in RFC 3339 seconds, UTC).
    """
    body: dict[str, Any] = {
        "kind": RECORD_KIND,
        "apiVersion": f"{GROUP}/{version}",
        "lastUpdatedTime": format_time(record.last_updated_time),
        "imageRef": record.image_ref,
    }
    if record.credential_mapping:
        body["credentialMapping"] = {
            k: _credentials_json(v) for k, v in sorted(record.credential_mapping.items())
        }
    return (go_json(body) + "\n").encode("utf-8")


# -- decoding ---------------------------------------------------------------------------------


_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9./-]{0,62}")


def _shown(value: Any) -> str:
    """``value`` quoted when it looks like a kind or apiVersion; errors never echo data."""
    if isinstance(value, str) and _IDENTIFIER.fullmatch(value):
        return repr(value)
    return "<missing>" if value is None else "<invalid>"


def _has_duplicates(value: Any) -> bool:
    """Whether any JSON object in ``value`` repeats a key (the cheap test; most have none)."""
    if isinstance(value, dict):
        pairs = getattr(value, "pairs", None)
        if pairs is not None and len(pairs) != len(value):
            return True
        values: Any = value.values()
    elif isinstance(value, list):
        values = value
    else:
        return False
    return any(isinstance(item, dict | list) and _has_duplicates(item) for item in values)


def _duplicate_fields(value: Any, path: str) -> list[str]:
    """``duplicate field "a.b"`` for every repeated key of every JSON object in ``value``."""
    out: list[str] = []
    if isinstance(value, dict):
        seen: set[str] = set()
        for key, item in getattr(value, "pairs", value.items()):
            full = f"{path}.{key}" if path else str(key)
            if key in seen:
                out.append(f"duplicate field {json.dumps(full)}")
            seen.add(key)
            out.extend(_duplicate_fields(item, full))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_duplicate_fields(item, f"{path}[{i}]"))
    return out


class _Repeated(Exception):
    """A JSON object repeats a key (the slow path reports which)."""


def _reject(name: str) -> Any:
    raise ValueError(name)


def _plain_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Repeated
    return obj


# One decoder for every file (json.loads with hooks would build a new one per call).
_PLAIN_JSON = json.JSONDecoder(object_pairs_hook=_plain_object, parse_constant=_reject)
# (typeshed types make_scanner's argument as the C scanner class itself; it takes a decoder.)
_PLAIN_SCAN = make_scanner(_PLAIN_JSON)  # type: ignore[arg-type]
_JSON_SPACE = " \t\r\n"


def _parse_plain(text: str) -> Any:
    """The common case, fast: a JSON object without repeated keys, or None.

    None for anything else (YAML, a syntax error, ``NaN``, a repeated key), which
    ``load_document`` then parses again to report it exactly as before.
    """
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    if not text.startswith("{", start):
        return None
    try:
        # The decoder's C scanner directly: JSONDecoder.decode wraps it in two Python calls
        # and two regex matches, a tenth of a record's decode at start-up.
        body, end = _PLAIN_SCAN(text, start)
    except (_Repeated, ValueError, RecursionError, StopIteration):
        return None
    if text[end:].strip(_JSON_SPACE):
        return None  # trailing data: the slow path reports it
    return body


def _load(data: bytes, kind: str, text: str | None = None) -> tuple[str, dict[str, Any]]:
    body = _parse_plain(data.decode("utf-8", "replace") if text is None else text)
    if body is None:
        body = _load_document(data)
    if not isinstance(body, dict):
        raise RecordDecodeError("not a JSON object")
    if body.get("kind") != kind:
        raise RecordDecodeError(f"unexpected kind {_shown(body.get('kind'))}, want {kind}")
    api_version = body.get("apiVersion")
    group, _, version = str(api_version).rpartition("/")
    if group != GROUP or version not in VERSIONS:
        raise RecordDecodeError(f"unexpected apiVersion {_shown(api_version)}")
    # The body was parsed for this call alone: drop the two type fields in place.
    del body["kind"], body["apiVersion"]
    return version, body


def _load_document(data: bytes) -> Any:
    from credprov._go.decode import DecodeError, load_document

    try:
        doc = load_document(data)
    except DecodeError as exc:
        raise RecordDecodeError(str(exc)) from None
    # load_document notes YAML duplicate keys only; JSON keeps duplicates in ``pairs`` and
    # the kubelet's strict decoder rejects them too (``duplicate field "image"``).
    strict_errors = doc.strict_errors
    if _has_duplicates(doc.data):
        strict_errors = strict_errors + _duplicate_fields(doc.data, "")
    if strict_errors:
        raise RecordDecodeError("strict decoding error: " + ", ".join(strict_errors))
    return doc.data


def _validate(model: type[BaseModel], fields: dict[str, Any]) -> Any:
    try:
        # model_validate(fields) without its Python wrapper (called once per file).
        return model.__pydantic_validator__.validate_python(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise RecordDecodeError(f"{loc}: {first['msg']}") from None


def decode_intent(data: bytes) -> tuple[str, ImagePullIntent]:
    """(version, intent) from a file's bytes.

    Raises:
        RecordDecodeError: not a strictly valid intent.
    """
    text = data.decode("utf-8", "replace")
    version, intent = _fast_intent(text)
    if intent is None:
        return _decode_intent_strict(data, text)
    return version, intent


def decode_record(data: bytes) -> tuple[str, ImagePulledRecord]:
    """(version, record) from a file's bytes.

    Raises:
        RecordDecodeError: not a strictly valid record.
    """
    text = data.decode("utf-8", "replace")
    version, record = _fast_record(text)
    if record is None:
        return _decode_record_strict(data, text)
    return version, record


def _decode_intent_strict(data: bytes, text: str | None = None) -> tuple[str, ImagePullIntent]:
    """:func:`decode_intent` without the fast path (``text``: ``data`` decoded, if at hand)."""
    version, fields = _load(data, INTENT_KIND, text)
    return version, _validate(ImagePullIntent, fields)


def _decode_record_strict(data: bytes, text: str | None = None) -> tuple[str, ImagePulledRecord]:
    """:func:`decode_record` without the fast path (``text``: ``data`` decoded, if at hand)."""
    version, fields = _load(data, RECORD_KIND, text)
    time_value = fields.get("lastUpdatedTime")
    if isinstance(time_value, str):
        try:
            fields["lastUpdatedTime"] = _dt.datetime.fromisoformat(time_value)
        except ValueError:
            raise RecordDecodeError("lastUpdatedTime: invalid time") from None
    mapping = fields.get("credentialMapping")
    if mapping is None:
        fields.pop("credentialMapping", None)
    elif isinstance(mapping, dict):
        # 1.33/1.34 wrote "kubernetesSecrets": null; Go decodes null as an empty list.
        for creds in mapping.values():
            if isinstance(creds, dict):
                for key in ("kubernetesSecrets", "kubernetesServiceAccounts"):
                    if key in creds and creds[key] is None:
                        del creds[key]
    return version, _validate(ImagePulledRecord, fields)


# -- the fast path: files exactly as an encoder writes them -----------------------------------
#
# The path above costs about 20 us a record (JSON with a hook per object, then pydantic), and
# the objects it leaves behind wake the garbage collector: most of a pull manager's start-up
# over 10,000 records. Nearly every file holds exactly what encode_intent/encode_record (or
# a kubelet) wrote: compact JSON, fields in struct order, strings without escapes. The
# patterns below accept only that shape (a subset of what the strict path accepts: every key
# at most once, each value of the type its field wants, nothing else), and the models are
# built from the matched text directly, as model_construct builds them, with the values and
# fields-set the strict path's validation gives: tests hold the two paths to identical
# results. Anything else (whitespace, another field order, an escape, null, a repeated
# mapping key, a time fromisoformat rejects) is declined and takes the strict path, which
# also writes every error message. Possessive quantifiers and atomic groups: a near-miss of
# a megabyte is refused in linear time.

_S = r'"[^"\\\x00-\x1f]*+"'  # a JSON string without escapes (its text is its value)
_CAP = r'"([^"\\\x00-\x1f]*+)"'
_SECRET = r'\{{"uid":{s},"namespace":{s},"name":{s},"credentialHash":{s}\}}'
_ACCOUNT = r'\{{"uid":{s},"namespace":{s},"name":{s}\}}'


def _items(item: str) -> str:
    return rf"\[(?>(?:{item}(?:,{item})*+)?)\]"


def _credentials(secrets: str, accounts: str, flag: str) -> str:
    """``ImagePullCredentials``' fields in struct order, each optional, comma-separated."""
    sec = f'"kubernetesSecrets":{secrets}'
    acc = f'"kubernetesServiceAccounts":{accounts}'
    npa = f'"nodePodsAccessible":{flag}'
    return rf"\{{(?>{sec}(?:,{acc})?(?:,{npa})?|{acc}(?:,{npa})?|{npa})?\}}"


_SECRETS_V = _items(_SECRET.format(s=_S))
_ACCOUNTS_V = _items(_ACCOUNT.format(s=_S))
_ENTRY_V = _S + ":" + _credentials(_SECRETS_V, _ACCOUNTS_V, "(?:true|false)")
_VERSIONS = "|".join(VERSIONS)
_API = rf'"apiVersion":"{re.escape(GROUP)}/({_VERSIONS})"'
_FAST_INTENT = re.compile(rf'\{{"kind":"{INTENT_KIND}",{_API},"image":{_CAP}\}}\n?')
# The whole grammar. Groups: version, lastUpdatedTime, imageRef, the mapping's entries
# (None: no mapping), the entries after the first (None or "": fewer than two).
_FAST_RECORD = re.compile(
    rf'\{{"kind":"{RECORD_KIND}",{_API},"lastUpdatedTime":{_CAP},"imageRef":{_CAP}'
    rf'(?:,"credentialMapping":\{{((?:(?>{_ENTRY_V})((?>,{_ENTRY_V})*+))?)\}})?\}}\n?'
)
# One entry of such a mapping, then a comma and the next entry's key, or the end: matched
# from the start of the mapping, entry after entry, it takes the entries apart.
_FAST_ENTRY = re.compile(
    _CAP
    + ":"
    + _credentials(f"({_SECRETS_V})", f"({_ACCOUNTS_V})", "(true|false)")
    + r'(?:,(?=")|\Z)'
)
_FAST_SECRET = re.compile(_SECRET.format(s=_CAP))
_FAST_ACCOUNT = re.compile(_ACCOUNT.format(s=_CAP))

_new = object.__new__
_set = object.__setattr__


def _built(cls: type[_M], values: dict[str, Any], fields_set: set[str]) -> _M:
    """An instance of ``cls`` holding ``values`` (already valid), as model_construct makes
    it (without its per-field loop)."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def well_formed_intent_version(data: bytes) -> str | None:
    """The API version of an intent file in an encoder's exact form, which
    :func:`decode_intent` decodes on its fast path, without fail; None for anything else
    (only decoding can tell whether it is valid). Builds nothing."""
    return _fast_intent(data.decode("utf-8", "replace"), build=False)[0]


def well_formed_record_version(data: bytes) -> str | None:
    """:func:`well_formed_intent_version` for a record file and :func:`decode_record`."""
    return _fast_record(data.decode("utf-8", "replace"), build=False)[0]


_NOT_FAST = (None, None)


def _fast_intent(text: str, build: bool = True) -> tuple[Any, Any]:
    """(version, intent) as the strict path decodes ``text`` when it is in an encoder's
    exact form, else (None, None). Without ``build``: (version, None), the same checks."""
    m = _FAST_INTENT.fullmatch(text)
    if m is None:
        return _NOT_FAST
    version, image = m.groups()
    return version, _built(ImagePullIntent, {"image": image}, {"image"}) if build else None


def _fast_record(text: str, build: bool = True) -> tuple[Any, Any]:
    """:func:`_fast_intent` for a record."""
    m = _FAST_RECORD.fullmatch(text)
    if m is None:
        return _NOT_FAST
    version, when, image_ref, entries, more = m.groups()
    try:
        last_updated = _dt.datetime.fromisoformat(when)
    except ValueError:
        return _NOT_FAST
    if not build and not more:
        return version, None  # no second entry: no mapping key can repeat
    mapping: dict[str, Any] = {}
    fields_set = {"last_updated_time", "image_ref"}
    if entries is not None:
        fields_set.add("credential_mapping")
        pos, end = 0, len(entries)
        count = 0
        while pos < end:
            entry = _FAST_ENTRY.match(entries, pos)
            if entry is None:
                return _NOT_FAST
            pos = entry.end()
            count += 1
            key, secrets, accounts, flag, accounts2, flag2, flag3 = entry.groups()
            mapping[key] = (
                _credentials_built(secrets, accounts or accounts2, flag or flag2 or flag3)
                if build
                else None
            )
        if count != len(mapping):
            return _NOT_FAST  # a repeated key: the strict path names it
    if not build:
        return version, None
    return version, _built(
        ImagePulledRecord,
        {"last_updated_time": last_updated, "image_ref": image_ref, "credential_mapping": mapping},
        fields_set,
    )


def _credentials_built(
    secrets: str | None, accounts: str | None, flag: str | None
) -> ImagePullCredentials:
    """One mapping entry from its matched parts (None: the field is absent)."""
    values: dict[str, Any] = {
        "kubernetes_secrets": None,
        "kubernetes_service_accounts": None,
        "node_pods_accessible": False,
    }
    given = set()
    if secrets is not None:
        values["kubernetes_secrets"] = [
            _built(
                ImagePullSecret,
                {"uid": uid, "namespace": ns, "name": name, "credential_hash": hash_},
                {"uid", "namespace", "name", "credential_hash"},
            )
            for uid, ns, name, hash_ in _FAST_SECRET.findall(secrets)
        ]
        given.add("kubernetes_secrets")
    if accounts is not None:
        values["kubernetes_service_accounts"] = [
            _built(
                ImagePullServiceAccount,
                {"uid": uid, "namespace": ns, "name": name},
                {"uid", "namespace", "name"},
            )
            for uid, ns, name in _FAST_ACCOUNT.findall(accounts)
        ]
        given.add("kubernetes_service_accounts")
    if flag is not None:
        values["node_pods_accessible"] = flag == "true"
        given.add("node_pods_accessible")
    return _built(ImagePullCredentials, values, given)


def record_to_json(record: ImagePulledRecord) -> dict[str, Any]:
    """The record as the kubelet's JSON (for ``pull-records -o json``)."""
    return dict(json.loads(encode_record(record)))
