"""Field-level validation errors, worded exactly as apimachinery words them.

Mirrors ``k8s.io/apimachinery/pkg/util/validation/field/errors.go``: ``*field.Error``
(``Error()`` is ``<field>: <body>``, and ``ErrorBody`` renders the bad value by its Go
type), the constructors ``Required``, ``Invalid``, ``NotSupported``, ``Duplicate``,
``Forbidden``, ``TooLong`` and ``InternalError``, and ``ErrorList.ToAggregate().Error()``
from ``k8s.io/apimachinery/pkg/util/errors``. The kubelet prints these texts verbatim
(``failed to validate credential provider config: <aggregate>``), so every byte matters.

Bad values are Python objects standing in for Go values. ``ErrorBody`` picks a printer by
Go type, and the mapping used here is:

* ``str`` is a Go ``string``: ``%q``.
* ``bool``, ``int`` and ``float`` are Go scalars: ``%v``.
* ``GoJSONValue`` is a value whose Go type marshals to a JSON string (a named string type
  such as ``ServiceAccountTokenCacheType``, or a ``metav1.Duration``): JSON.
* ``list``, ``tuple``, ``dict`` and ``None`` are slices, maps and nil: JSON.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from credprov._go.fmt import go_quote, surrogate_bytes


class ErrorType(StrEnum):
    """``field.ErrorType``; the value is the machine-readable reason string."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    INTERNAL = "InternalError"

    @property
    def description(self) -> str:
        """``ErrorType.String()``: the words that open the error body."""
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.INTERNAL: "Internal error",
}

# ErrorBody never prints the bad value of these types, whatever it is.
_VALUELESS = frozenset(
    {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}
)


@dataclass(frozen=True)
class GoJSONValue:
    """A Go value that is not a plain ``string`` but marshals to the JSON string ``text``.

    ``ErrorBody`` prints a plain ``string`` with ``%q`` but anything else through
    ``json.Marshal``, so a named string type or a ``metav1.Duration`` renders as JSON
    (``"-1m0s"``), which escapes differently from ``%q`` (``<`` becomes ``\\u003c``,
    non-ASCII stays literal).
    """

    text: str


@dataclass(frozen=True)
class FieldError:
    """``*field.Error``: ``str()`` is exactly ``Error()``."""

    type: ErrorType
    field: str
    bad_value: object
    detail: str

    def error_body(self) -> str:
        """``ErrorBody()``: the message without the leading ``<field>: ``."""
        body = self.type.description
        if self.type not in _VALUELESS:
            body = f"{body}: {render_value(self.bad_value)}"
        if self.detail:
            body = f"{body}: {self.detail}"
        return body

    def __str__(self) -> str:
        return f"{self.field}: {self.error_body()}"


def required(field: str, detail: str) -> FieldError:
    """``field.Required``."""
    return FieldError(ErrorType.REQUIRED, field, "", detail)


def invalid(field: str, value: object, detail: str) -> FieldError:
    """``field.Invalid``."""
    return FieldError(ErrorType.INVALID, field, value, detail)


def not_supported(field: str, value: object, valid_values: Iterable[str]) -> FieldError:
    """``field.NotSupported``; ``valid_values`` are listed in the order given."""
    quoted = [go_quote(v) for v in valid_values]
    detail = "supported values: " + ", ".join(quoted) if quoted else ""
    return FieldError(ErrorType.NOT_SUPPORTED, field, value, detail)


def duplicate(field: str, value: object) -> FieldError:
    """``field.Duplicate``."""
    return FieldError(ErrorType.DUPLICATE, field, value, "")


def forbidden(field: str, detail: str) -> FieldError:
    """``field.Forbidden``."""
    return FieldError(ErrorType.FORBIDDEN, field, "", detail)


def too_long(field: str, max_length: int) -> FieldError:
    """``field.TooLong``; the value itself is never shown."""
    if max_length >= 0:
        unit = "byte" if max_length == 1 else "bytes"
        detail = f"may not be more than {max_length} {unit}"
    else:
        detail = "value is too long"
    return FieldError(ErrorType.TOO_LONG, field, "<value omitted>", detail)


def internal_error(field: str, err: object) -> FieldError:
    """``field.InternalError``; the detail is the error's text."""
    return FieldError(ErrorType.INTERNAL, field, err, str(err))


def aggregate(errors: Iterable[FieldError]) -> str | None:
    """``ErrorList.ToAggregate().Error()``, or ``None`` where Go's aggregate is nil.

    Repeated messages are reported once; a single message stands alone and several are
    bracketed and joined with ``", "``.
    """
    messages = list(dict.fromkeys(str(err) for err in errors))
    if not messages:
        return None
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


# --- Go value rendering -------------------------------------------------------------


def render_value(value: object) -> str:
    """The bad value as ``ErrorBody`` prints it: ``%v`` for scalars, ``%q`` for ``string``
    and ``json.Marshal`` for everything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _format_float_v(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    # Go 1.22 and later write \b and \f in their short forms.
    "\b": "\\b",
    "\f": "\\f",
    # encoding/json escapes HTML-significant characters by default.
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def go_json_string(s: str) -> str:
    """A string as ``encoding/json`` marshals it (HTML escaping on)."""
    out = ['"']
    for ch in s:
        esc = _JSON_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            # Invalid UTF-8 is coerced to U+FFFD, one per bad byte.
            out.append("\ufffd" * len(surrogate_bytes(ch)))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value: object) -> str:
    """``json.Marshal`` of the Go value ``value`` stands for (compact, map keys sorted)."""
    if value is None:
        return "null"
    if isinstance(value, GoJSONValue):
        return go_json_string(value.text)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _format_float_json(value)
    if isinstance(value, str):
        return go_json_string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    if isinstance(value, dict):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{go_json_string(k)}:{go_json(v)}" for k, v in items) + "}"
    # Go falls back to a Stringer when marshalling fails; str() is the nearest thing.
    return str(value)


def _shortest_digits(f: float) -> tuple[str, int]:
    """Shortest round-tripping decimal digits of ``|f|`` (no trailing zeros) and the
    position of the decimal point relative to them."""
    from decimal import Decimal  # rarely needed: kept off every command's start-up

    _, digit_tuple, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    return digits, len(digits) + exponent


def _go_exp(e: int) -> str:
    sign = "-" if e < 0 else "+"
    return f"e{sign}{abs(e):02d}"


def _format_float_v(f: float) -> str:
    """``%v`` of a ``float64``: ``strconv.FormatFloat(f, 'g', -1, 64)``."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    if f == 0:
        return sign + "0"
    digits, point = _shortest_digits(f)
    exp = point - 1
    # Shortest formatting switches to exponent form outside [1e-4, 1e6) (eprec is 6).
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return sign + mantissa + _go_exp(exp)
    return sign + _fixed(digits, point)


def _format_float_json(f: float) -> str:
    """``json.Marshal`` of a ``float64``: fixed notation unless tiny or huge."""
    if math.isnan(f) or math.isinf(f):
        # Go refuses to marshal these; ErrorBody then falls back to %v.
        return _format_float_v(f)
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    if f == 0:
        return sign + "0"
    digits, point = _shortest_digits(f)
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        exp = point - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        # encoding/json trims e-07 to e-7.
        return sign + mantissa + f"e{'-' if exp < 0 else '+'}{abs(exp)}"
    return sign + _fixed(digits, point)


def _fixed(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]
