"""Strict decoding of Kubernetes-style versioned documents, as apimachinery does it.

Mirrors ``serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()``:

* a document whose first non-space byte is ``{`` is JSON, anything else is YAML
  (``sigs.k8s.io/yaml``: YAML is turned into JSON first);
* ``kind`` and ``apiVersion`` are read first with ``json.DefaultMetaFactory.Interpret``
  (encoding/json, so key matching is case-insensitive there); missing ones are errors that
  quote the document;
* the typed decode is ``sigs.k8s.io/json``'s ``UnmarshalStrict``: field names are
  case-sensitive, a wrong JSON type is Go's ``json: cannot unmarshal ... into Go struct
  field ...`` (the first one wins, decoding goes on), an error from a custom unmarshaler
  (``metav1.Duration``) stops decoding at once, and unknown and duplicated fields are
  *strict decoding errors* with their full path, in document order, reported only when
  nothing else failed.

:func:`decode_typed` walks a parsed document against a :class:`Struct` description of the
Go type and returns plain data that is known to be well-typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from credprov._go import blockyaml
from credprov._go import json as gojson
from credprov._go.durations import DurationError, parse_duration
from credprov._go.fmt import go_quote
from credprov.errors import GoError

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

#: ``sigs.k8s.io/json`` stops collecting strict errors after this many.
MAX_STRICT_ERRORS = 100


class DecodeError(GoError, ValueError):
    """A document the kubelet's decoder would reject; ``str()`` is apimachinery's text."""


class StrictDecodingError(DecodeError):
    """Unknown or duplicate fields (``strict decoding error: ...``)."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("strict decoding error: " + ", ".join(errors))


class _Obj(dict):  # type: ignore[type-arg,unused-ignore]  # dict[str, Any] at run time
    """A JSON object that remembers every key/value pair in order, duplicates included."""

    pairs: list[tuple[str, Any]]


def _pairs(obj: dict[Any, Any]) -> Iterable[tuple[Any, Any]]:
    return obj.pairs if isinstance(obj, _Obj) else obj.items()


# -- JSON -------------------------------------------------------------------------------------


def parse_json(data: bytes | str) -> Any:
    """Parse JSON as encoding/json does, keeping duplicate keys (see :class:`_Obj`).

    Raises:
        DecodeError: encoding/json's syntax error text (no prefix).
    """

    def hook(pairs: list[tuple[str, Any]]) -> _Obj:
        out = _Obj(pairs)
        out.pairs = pairs
        return out

    try:
        return gojson.loads(data, object_pairs_hook=hook, parse_float=gojson.GoFloat.parse)
    except ValueError as exc:
        raise DecodeError(str(exc)) from None


# -- YAML -------------------------------------------------------------------------------------


def parse_yaml(data: bytes | str) -> tuple[Any, list[str]]:
    """``sigs.k8s.io/yaml.YAMLToJSON`` of the first document, as JSON-compatible data.

    Plain block documents (what configuration files are) take :mod:`blockyaml`'s fast path,
    which declines anything it does not parse exactly as go-yaml would; the rest, and every
    error, comes from :mod:`goyaml` (go-yaml v2's rules), imported only then.

    Returns:
        ``(data, duplicate_key_lines)``; keys are sorted, as in the JSON go-yaml's output
        is written as.

    Raises:
        DecodeError: go-yaml's text (``yaml: line 2: ...``), as the kubelet reports it; a
            document nested deeper than ``encoding/json`` reads, as ``Interpret`` fails.
    """
    if isinstance(data, str) or data.isascii():
        fast = blockyaml.parse(data if isinstance(data, str) else data.decode("ascii"))
        if fast is not None:
            return fast, []
    from credprov._go import goyaml

    try:
        parsed, depth, dup_lines = goyaml.yaml_to_json(data)
    except goyaml.YAMLError as exc:
        raise DecodeError(str(exc)) from None
    if depth > gojson.MAX_DEPTH:
        # The JSON sigs.k8s.io/yaml writes is then refused by Interpret's scanner at the
        # first bracket past 10,000 levels, in the order json.Marshal writes the value.
        bracket = _too_deep_bracket(parsed)
        raise DecodeError(
            f"couldn't get version/kind; json parse error: invalid character {bracket!r} "
            "exceeded max depth"
        )
    return parsed, dup_lines


def _too_deep_bracket(root: Any) -> str:
    """``{`` or ``[``: the first container json.Marshal opens past encoding/json's depth."""
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth > gojson.MAX_DEPTH:
            return "{" if isinstance(value, dict) else "["
        items = [value[k] for k in sorted(value)] if isinstance(value, dict) else value
        stack.extend((item, depth + 1) for item in reversed(items))
    return "{"


# -- documents --------------------------------------------------------------------------------


class Document:
    """A parsed document and the strict errors found while parsing it (YAML duplicates)."""

    def __init__(self, data: Any, original: str, strict_errors: list[str]) -> None:
        self.data = data
        self.original = original
        self.strict_errors = strict_errors


def is_json(data: bytes | str) -> bool:
    """The recognizer apimachinery uses: JSON iff the first non-space rune is ``{``."""
    return gojson.has_json_prefix(data)


_GVK_STRUCT = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def load_document(data: bytes | str) -> Document:
    """Parse JSON or YAML into plain data, noting YAML duplicate keys as strict errors.

    Raises:
        DecodeError: a JSON syntax error (as ``Interpret`` reports it) or a YAML error.
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if is_json(data):
        try:
            parsed = parse_json(data)
        except DecodeError as exc:
            raise DecodeError(f"couldn't get version/kind; json parse error: {exc}") from None
        return Document(parsed, text, [])
    parsed, dup_lines = parse_yaml(data)
    errors = []
    if dup_lines:  # YAMLToJSONStrict's error, the first of the strict errors
        errors.append("yaml: unmarshal errors:\n  " + "\n  ".join(dup_lines))
    return Document(parsed, text, errors)


def _fold_eq(key: str, name: str) -> bool:
    """encoding/json's case-insensitive key match against an ASCII field name."""
    if len(key) != len(name):
        return False
    return all(k == n or k.casefold() == n.casefold() for k, n in zip(key, name, strict=True))


def interpret_meta(data: Any) -> tuple[str, str]:
    """``json.DefaultMetaFactory.Interpret`` minus the group/version split: (apiVersion, kind).

    Raises:
        DecodeError: ``couldn't get version/kind; json parse error: ...``.
    """
    prefix = "couldn't get version/kind; json parse error: "
    if data is None:
        return "", ""
    if not isinstance(data, dict):
        kind = gojson.json_kind(data)
        raise DecodeError(
            f"{prefix}json: cannot unmarshal {kind} into Go value of type {_GVK_STRUCT}"
        )
    found: dict[str, str] = {}
    error: str | None = None
    for key, value in _pairs(data):
        for name in ("apiVersion", "kind"):
            if key == name or _fold_eq(key, name):
                if value is None:
                    continue
                if not isinstance(value, str):
                    error = error or (
                        f"{prefix}json: cannot unmarshal {gojson.json_kind(value)} into Go struct "
                        f"field .{name} of type string"
                    )
                    continue
                found[name] = value
    if error is not None:
        raise DecodeError(error)
    return found.get("apiVersion", ""), found.get("kind", "")


def parse_group_version(gv: str) -> tuple[str, str]:
    """``schema.ParseGroupVersion``.

    Raises:
        DecodeError: ``unexpected GroupVersion string: a/b/c``.
    """
    if gv in ("", "/"):
        return "", ""
    count = gv.count("/")
    if count == 0:
        return "", gv
    if count == 1:
        group, _, version = gv.partition("/")
        return group, version
    raise DecodeError(f"unexpected GroupVersion string: {gv}")


def group_version_string(group: str, version: str) -> str:
    """``schema.GroupVersion.String``."""
    return f"{group}/{version}" if group else version


def interpret_gvk(doc: Document) -> tuple[str, str, str]:
    """Return (group, version, kind), raising apimachinery's missing-kind/version errors."""
    api_version, kind = interpret_meta(doc.data)
    group, version = parse_group_version(api_version)
    if not kind:
        raise DecodeError(f"Object 'Kind' is missing in '{_omitted(doc.original)}'")
    if not version:
        raise DecodeError(f"Object 'apiVersion' is missing in '{_omitted(doc.original)}'")
    return group, version, kind


def _omitted(original: str) -> str:
    # apimachinery quotes the whole document here. A config's env values or a plugin's
    # response can hold secrets, so credprov names its size instead (a deliberate
    # difference from the kubelet's text; everything before the quote is identical).
    if not original:
        return ""
    size = len(original.encode("utf-8", "surrogateescape"))
    return f"<{size}-byte document not shown: it may hold secrets>"


# -- typed decoding (sigs.k8s.io/json UnmarshalStrict) ------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A Go ``string``, ``bool``, integer or non-empty interface (``go_name`` names the Go
    type: a defined type such as ``v1.Foo``, ``int32``/``int64``, or ``runtime.Object``)."""

    kind: str  # "string", "bool", "int" (go_name int32/int64) or "object" (null only)
    go_name: str = ""

    @property
    def go_type(self) -> str:
        """The Go type errors name: the declared type's name, else its kind."""
        return self.go_name or self.kind


@dataclass(frozen=True)
class Duration:
    """``*metav1.Duration``: a JSON string parsed by ``time.ParseDuration``."""

    go_type: str = "string"


@dataclass(frozen=True)
class Time:
    """``metav1.Time``: a JSON string (RFC 3339) or null; another JSON kind is
    ``metav1.Time.UnmarshalJSON``'s own ``json.Unmarshal`` error, with the outer field
    context. The RFC 3339 text itself is not checked here (``time.Parse``'s errors are not
    reproduced): a malformed time decodes as its string."""

    go_type: str = "string"


@dataclass(frozen=True)
class Bytes:
    """A Go ``[]byte``: a base64 string (``encoding/base64.StdEncoding``; line breaks are
    skipped), a JSON array of bytes, or null."""

    go_type: str = "[]uint8"


_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _base64_error(text: str) -> str | None:
    """Why ``text`` is not standard base64 (Go's ``illegal base64 data at input byte N``);
    None when it is. The offset is the first byte outside the alphabet, else where the
    padding or length goes wrong (approximately Go's: see :class:`Bytes`)."""
    import base64
    import binascii

    data = text.encode("utf-8", "surrogateescape")
    clean = data.replace(b"\r", b"").replace(b"\n", b"")
    try:
        base64.b64decode(clean, validate=True)
        if len(clean) % 4 == 0:
            return None
    except (binascii.Error, ValueError):
        pass
    for i, byte in enumerate(data):
        if byte not in _B64 and byte not in b"\r\n=":
            return f"illegal base64 data at input byte {i}"
    kept = [i for i, byte in enumerate(data) if byte not in b"\r\n"]
    if "=" not in text and len(kept) % 4:  # an unfinished last quantum: where it starts
        return f"illegal base64 data at input byte {kept[len(kept) // 4 * 4]}"
    return f"illegal base64 data at input byte {max(len(data) - 1, 0)}"


@dataclass(frozen=True)
class Slice:
    """A Go slice of ``elem`` (JSON array or null)."""

    elem: Spec

    @property
    def go_type(self) -> str:
        """``[]<elem>``, as Go writes the slice type."""
        return "[]" + self.elem.go_type


@dataclass(frozen=True)
class Map:
    """A Go map from string keys to ``elem`` (JSON object or null)."""

    elem: Spec

    @property
    def go_type(self) -> str:
        """``map[string]<elem>``, as Go writes the map type."""
        return "map[string]" + self.elem.go_type


@dataclass(frozen=True)
class Ptr:
    """A Go pointer to ``elem`` (null decodes to nil)."""

    elem: Spec

    @property
    def go_type(self) -> str:
        """The pointed-to type: encoding/json's errors name that, not ``*T``."""
        return self.elem.go_type  # errors name the pointed-to type


@dataclass(frozen=True)
class Struct:
    """A Go struct: its type name, API version and JSON fields."""

    name: str
    pkg: str
    fields: dict[str, Spec] = field(default_factory=dict)

    @property
    def go_type(self) -> str:
        """``<pkg>.<Name>``, as Go names the type in errors."""
        return f"{self.pkg}.{self.name}"


Spec = Scalar | Duration | Time | Bytes | Slice | Map | Ptr | Struct

STRING = Scalar("string")
BOOL = Scalar("bool")

_KEEP = object()  # "leave the target as it was" (Go ignores null for non-nullable kinds)


class _Abort(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


class _Decoder:
    def __init__(self) -> None:
        self.saved: str | None = None
        self.strict: list[str] = []
        self._seen_strict: set[str] = set()
        self.field_stack: list[str] = []
        self.struct_name: str | None = None

    # errors ---------------------------------------------------------------------------------

    def _type_error(self, value: Any, go_type: str, what: str | None = None) -> str:
        what = what or gojson.json_kind(value)
        if self.struct_name is not None or self.field_stack:
            where = f"Go struct field {self.struct_name or ''}.{'.'.join(self.field_stack)}"
        else:
            where = "Go value"
        return f"json: cannot unmarshal {what} into {where} of type {go_type}"

    def _save(self, value: Any, go_type: str) -> None:
        if self.saved is None:
            self.saved = self._type_error(value, go_type)

    def _strict(self, kind: str, path: str, key: str) -> None:
        if len(self.strict) >= MAX_STRICT_ERRORS:
            return
        full = f"{path}.{key}" if path else key
        msg = f"{kind} field {go_quote(full)}"
        if msg in self._seen_strict:
            return
        self._seen_strict.add(msg)
        self.strict.append(msg)

    # values ---------------------------------------------------------------------------------

    def value(self, spec: Spec, value: Any, path: str, current: Any = None) -> Any:
        """``value`` decoded into ``spec`` at ``path`` (``current``: what the target held);
        :data:`_KEEP` when Go leaves the target as it was (null, or a saved type error)."""
        if isinstance(spec, Ptr):
            if value is None:
                return None
            return self.value(spec.elem, value, path, current)
        if isinstance(spec, Duration):
            return self._duration(value)
        if isinstance(spec, Bytes):
            if value is None:
                return None
            if isinstance(value, str):
                problem = _base64_error(value)
                if problem is not None:
                    if self.saved is None:  # saved, as a type error is: the first one wins
                        self.saved = problem
                    return _KEEP
                return value
            if isinstance(value, list):
                return self._slice(Slice(Scalar("int", "uint8")), value, path)
            self._save(value, spec.go_type)
            return _KEEP
        if isinstance(spec, Time):
            if value is not None and not isinstance(value, str):
                raise _Abort(self._type_error(value, "string"))
            return value
        if isinstance(spec, Scalar):
            return self._scalar(spec, value)
        if isinstance(spec, Slice):
            return self._slice(spec, value, path)
        if isinstance(spec, Map):
            return self._map(spec, value, path)
        return self._struct(spec, value, path, current)

    def _duration(self, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            # metav1.Duration.UnmarshalJSON's own json.Unmarshal fails; the error is
            # returned at once and gets the outer field context.
            raise _Abort(self._type_error(value, "string"))
        try:
            parse_duration(value)
        except DurationError as exc:
            raise _Abort(str(exc)) from None
        return value

    def _scalar(self, spec: Scalar, value: Any) -> Any:
        if value is None:
            return _KEEP
        if spec.kind == "int":
            return self._int(spec, value)
        if spec.kind == "object":  # a non-empty interface: only null decodes into it
            self._save(value, spec.go_type)
            return _KEEP
        ok = isinstance(value, bool) if spec.kind == "bool" else isinstance(value, str)
        if not ok:
            self._save(value, spec.go_type)
            return _KEEP
        return value

    def _int(self, spec: Scalar, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._save(value, spec.go_type)
            return _KEEP
        literal = json_number_text(value)
        if spec.go_name == "uint8":
            low, high = 0, 1 << 8
        else:
            bits = 32 if spec.go_name.endswith("32") else 64
            low, high = -(1 << bits - 1), 1 << bits - 1
        if (
            _INTEGER.fullmatch(literal)
            and len(literal) <= 20  # longer is out of range (and more than Python converts)
            and low <= int(literal) < high
        ):
            return int(literal)
        if self.saved is None:  # encoding/json names the number by its literal
            self.saved = self._type_error(value, spec.go_type, f"number {literal}")
        return _KEEP

    def _slice(self, spec: Slice, value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            self._save(value, spec.go_type)
            return _KEEP
        out = []
        for i, item in enumerate(value):
            got = self.value(spec.elem, item, f"{path}[{i}]")
            out.append(_zero(spec.elem) if got is _KEEP else got)
        return out

    def _map(self, spec: Map, value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            self._save(value, spec.go_type)
            return _KEEP
        out: dict[str, Any] = {}
        seen: set[str] = set()
        for key, item in _pairs(value):
            if key in seen:
                self._strict("duplicate", path, key)
            seen.add(key)
            got = self.value(spec.elem, item, f"{path}.{key}" if path else key)
            out[key] = _zero(spec.elem) if got is _KEEP else got
        return out

    def _struct(self, spec: Struct, value: Any, path: str, current: Any) -> Any:
        if value is None:
            return _KEEP
        if not isinstance(value, dict):
            self._save(value, spec.go_type)
            return _KEEP
        out: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
        seen: set[str] = set()
        saved_stack, saved_struct = list(self.field_stack), self.struct_name
        for key, item in _pairs(value):
            sub = spec.fields.get(key)
            if sub is None:
                self._strict("unknown", path, key)
                continue
            if key in seen:
                self._strict("duplicate", path, key)
            seen.add(key)
            self.field_stack.append(key)
            self.struct_name = spec.name
            got = self.value(sub, item, f"{path}.{key}" if path else key, out.get(key))
            self.field_stack, self.struct_name = list(saved_stack), saved_struct
            if got is not _KEEP:
                out[key] = got
        return out


_INTEGER = re.compile(r"-?[0-9]+")


def json_number_text(value: float) -> str:
    """The JSON text of a number as encoding/json then reads it: the literal a JSON document
    held (:class:`credprov._go.json.GoFloat`), or how json.Marshal writes a YAML value."""
    literal = getattr(value, "literal", None)
    if literal is not None:
        return str(literal)
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)  # not JSON; YAMLToJSON refuses these before decoding
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # shortest digits, exponent form like Go's 'e' with -1
        mantissa, _, exponent = text.partition("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{int(exponent.lstrip('+-')):d}"
    from decimal import Decimal  # only here: a number that failed an integer field

    text = format(Decimal(repr(value)), "f")
    return text[:-2] if text.endswith(".0") else text


def _zero(spec: Spec) -> Any:
    if isinstance(spec, Scalar):
        if spec.kind == "int":
            return 0
        if spec.kind == "object":
            return None
        return False if spec.kind == "bool" else ""
    if isinstance(spec, Struct):
        return {}
    return None


def decode_typed(spec: Struct, doc: Document, *, strict: bool = True) -> dict[str, Any]:
    """Strictly decode ``doc`` into ``spec`` the way ``kjson.UnmarshalStrict`` does (not
    ``strict``: as ``kjson.UnmarshalCaseSensitivePreserveInts`` does, unknown and duplicate
    fields dropped).

    Returns:
        Plain, well-typed data: JSON field names as keys; absent or null fields are absent
        or ``None``; durations stay strings.

    Raises:
        DecodeError: the first type error, or a duration error, or a
            :class:`StrictDecodingError` carrying every unknown and duplicate field
            (YAML duplicate keys first).
    """
    decoder = _Decoder()
    try:
        out = decoder.value(spec, doc.data, "")
    except _Abort as exc:
        raise DecodeError(exc.message) from None
    except RecursionError:
        raise DecodeError("exceeded max depth") from None
    if decoder.saved is not None:
        raise DecodeError(decoder.saved)
    if strict and (doc.strict_errors or decoder.strict):
        raise StrictDecodingError(doc.strict_errors + decoder.strict)
    return out if isinstance(out, dict) else {}
