"""apimachinery field error texts: ``Error()``, value rendering and ``ToAggregate().Error()``."""

from __future__ import annotations

import pytest

from credprov._go import field_errors as fe
from credprov._go.field_errors import ErrorType, FieldError, GoJSONValue


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        pytest.param(fe.required("providers", ""), "providers: Required value", id="required-bare"),
        pytest.param(
            fe.required("providers", "at least 1 item in plugins is required"),
            "providers: Required value: at least 1 item in plugins is required",
            id="required-detail",
        ),
        pytest.param(
            fe.forbidden("providers.tokenAttributes", "nope"),
            "providers.tokenAttributes: Forbidden: nope",
            id="forbidden-detail",
        ),
        pytest.param(fe.forbidden("a.b", ""), "a.b: Forbidden", id="forbidden-bare"),
        pytest.param(
            fe.invalid("providers.name", "foo bar", "provider name cannot contain spaces"),
            'providers.name: Invalid value: "foo bar": provider name cannot contain spaces',
            id="invalid-string",
        ),
        pytest.param(
            fe.invalid("f", "x", ""), 'f: Invalid value: "x"', id="invalid-without-detail"
        ),
        pytest.param(
            fe.duplicate("providers.name", "foobar"),
            'providers.name: Duplicate value: "foobar"',
            id="duplicate",
        ),
        pytest.param(
            fe.not_supported("providers.apiVersion", "v0", ["b", "a"]),
            'providers.apiVersion: Unsupported value: "v0": supported values: "b", "a"',
            id="not-supported-keeps-given-order",
        ),
        pytest.param(
            fe.not_supported("f", "v0", []),
            'f: Unsupported value: "v0"',
            id="not-supported-no-valid-values",
        ),
        pytest.param(
            fe.not_supported("f", "x", ['say "hi"', "tab\there"]),
            'f: Unsupported value: "x": supported values: "say \\"hi\\"", "tab\\there"',
            id="not-supported-values-strconv-quoted",
        ),
        pytest.param(
            fe.too_long("f", 63), "f: Too long: may not be more than 63 bytes", id="too-long"
        ),
        pytest.param(
            fe.too_long("f", 1), "f: Too long: may not be more than 1 byte", id="too-long-one"
        ),
        pytest.param(
            fe.too_long("f", -1), "f: Too long: value is too long", id="too-long-unbounded"
        ),
        pytest.param(
            fe.internal_error("f", ValueError("boom")),
            "f: Internal error: boom",
            id="internal-error",
        ),
    ],
)
def test_error_text(err: FieldError, expected: str) -> None:
    assert str(err) == expected


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        # Go string: %q
        pytest.param("plain", '"plain"', id="str-plain"),
        pytest.param('q"uote\\', '"q\\"uote\\\\"', id="str-quote-backslash"),
        pytest.param("a\nb\tc\rd", '"a\\nb\\tc\\rd"', id="str-short-escapes"),
        pytest.param("\a\b\f\v", '"\\a\\b\\f\\v"', id="str-bell-backspace-ff-vt"),
        pytest.param("\x00\x1f\x7f", '"\\x00\\x1f\\x7f"', id="str-control-hex"),
        pytest.param("é<&>", '"é<&>"', id="str-printable-unicode-and-html-literal"),
        pytest.param("\u200b", '"\\u200b"', id="str-format-char-u-escape"),
        pytest.param("\u00a0", '"\\u00a0"', id="str-nbsp-not-printable-in-go"),
        pytest.param("\U0001f600", '"\U0001f600"', id="str-astral-printable"),
        pytest.param("\U000e0001", '"\\U000e0001"', id="str-astral-nonprintable"),
        pytest.param("a\udcffb", '"a\\xffb"', id="str-surrogateescape-byte"),
        pytest.param("", '""', id="str-empty"),
        # Go scalars: %v
        pytest.param(True, "true", id="bool-true"),
        pytest.param(False, "false", id="bool-false"),
        pytest.param(42, "42", id="int"),
        pytest.param(-7, "-7", id="int-negative"),
        pytest.param(1.5, "1.5", id="float"),
        pytest.param(2.0, "2", id="float-integral"),
        pytest.param(1e6, "1e+06", id="float-exponent"),
        pytest.param(123456.0, "123456", id="float-below-exponent-threshold"),
        pytest.param(1e-5, "1e-05", id="float-small-exponent"),
        pytest.param(float("nan"), "NaN", id="float-nan"),
        pytest.param(float("-inf"), "-Inf", id="float-neg-inf"),
        # everything else: json.Marshal
        pytest.param(GoJSONValue("-1m0s"), '"-1m0s"', id="json-duration"),
        pytest.param(GoJSONValue("a<b>&c"), '"a\\u003cb\\u003e\\u0026c"', id="json-html-escape"),
        pytest.param(GoJSONValue("é\u2028"), '"é\\u2028"', id="json-unicode-and-line-sep"),
        pytest.param(GoJSONValue("\x01\b\f\n"), '"\\u0001\\b\\f\\n"', id="json-control"),
        pytest.param(GoJSONValue("\x7f"), '"\x7f"', id="json-del-literal"),
        pytest.param(["now-with-dashes/simple-2"], '["now-with-dashes/simple-2"]', id="json-list"),
        pytest.param(("a", "b"), '["a","b"]', id="json-tuple-compact"),
        pytest.param([], "[]", id="json-empty-list"),
        pytest.param([1, True, None, 1.5], "[1,true,null,1.5]", id="json-mixed-list"),
        pytest.param([1e21, 1e-7], "[1e+21,1e-7]", id="json-float-exponents"),
        pytest.param([1e20], "[100000000000000000000]", id="json-float-fixed"),
        pytest.param({"b": 1, "a": ["x"]}, '{"a":["x"],"b":1}', id="json-map-sorted"),
        pytest.param(None, "null", id="json-nil"),
    ],
)
def test_invalid_value_rendering(value: object, rendered: str) -> None:
    assert str(fe.invalid("f", value, "d")) == f"f: Invalid value: {rendered}: d"


@pytest.mark.parametrize(
    ("err", "body"),
    [
        pytest.param(fe.required("a.b", "why"), "Required value: why", id="required"),
        pytest.param(fe.invalid("a.b", 3, "why"), "Invalid value: 3: why", id="invalid"),
    ],
)
def test_error_body_omits_field(err: FieldError, body: str) -> None:
    assert err.error_body() == body


@pytest.mark.parametrize(
    ("err", "error_type"),
    [
        pytest.param(fe.required("f", ""), ErrorType.REQUIRED, id="required"),
        pytest.param(fe.invalid("f", "", ""), ErrorType.INVALID, id="invalid"),
        pytest.param(fe.not_supported("f", "", []), ErrorType.NOT_SUPPORTED, id="not-supported"),
        pytest.param(fe.duplicate("f", ""), ErrorType.DUPLICATE, id="duplicate"),
        pytest.param(fe.forbidden("f", ""), ErrorType.FORBIDDEN, id="forbidden"),
        pytest.param(fe.too_long("f", 1), ErrorType.TOO_LONG, id="too-long"),
        pytest.param(fe.internal_error("f", "x"), ErrorType.INTERNAL, id="internal"),
    ],
)
def test_constructor_types(err: FieldError, error_type: ErrorType) -> None:
    assert err.type is error_type
    assert err.type.value.startswith(("FieldValue", "InternalError"))


def test_valueless_types_ignore_bad_value() -> None:
    err = FieldError(ErrorType.FORBIDDEN, "f", "ignored", "d")
    assert str(err) == "f: Forbidden: d"


_A = fe.required("a", "")
_B = fe.invalid("b", "x", "bad")
_C = fe.duplicate("c", "y")


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        pytest.param([], None, id="none-is-nil"),
        pytest.param([_A], "a: Required value", id="single-unbracketed"),
        pytest.param([_A, _B], '[a: Required value, b: Invalid value: "x": bad]', id="two"),
        pytest.param(
            [_C, _A, _B],
            '[c: Duplicate value: "y", a: Required value, b: Invalid value: "x": bad]',
            id="keeps-order",
        ),
        pytest.param([_A, _A], "a: Required value", id="duplicates-collapse-to-single"),
        pytest.param(
            [_A, _B, fe.required("a", ""), _B],
            '[a: Required value, b: Invalid value: "x": bad]',
            id="duplicate-messages-dropped",
        ),
        pytest.param(
            [fe.invalid("f", "1", ""), fe.invalid("f", 1, "")],
            '[f: Invalid value: "1", f: Invalid value: 1]',
            id="distinct-renderings-both-kept",
        ),
    ],
)
def test_aggregate(errors: list[FieldError], expected: str | None) -> None:
    assert fe.aggregate(errors) == expected


def test_aggregate_accepts_any_iterable() -> None:
    assert fe.aggregate(iter([_A, _B])) == '[a: Required value, b: Invalid value: "x": bad]'
