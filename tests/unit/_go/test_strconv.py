"""``credprov._go.strconv``: Go's ParseBool and ParseInt, their spellings and error texts."""

from __future__ import annotations

import pytest

from credprov._go.strconv import NumError, parse_bool, parse_int
from credprov.errors import CredprovError

BOOLS = {
    **{word: True for word in ("1", "t", "T", "TRUE", "true", "True")},
    **{word: False for word in ("0", "f", "F", "FALSE", "false", "False")},
}


@pytest.mark.parametrize(("text", "want"), BOOLS.items(), ids=BOOLS.keys())
def test_parse_bool_accepts_go_spellings(text: str, want: bool) -> None:
    assert parse_bool(text) is want


@pytest.mark.parametrize("text", ["", "tRUE", "yes", "on", " true", "2", "FaLsE"])
def test_parse_bool_refuses_the_rest_with_go_text(text: str) -> None:
    with pytest.raises(NumError) as info:
        parse_bool(text)
    assert str(info.value) == f'strconv.ParseBool: parsing "{text}": invalid syntax'
    assert isinstance(info.value, CredprovError) and isinstance(info.value, ValueError)


INTS = {
    "zero": ("0", 64, 0),
    "plus": ("+7", 64, 7),
    "minus": ("-3", 64, -3),
    "int32 max": ("2147483647", 32, 2**31 - 1),
    "int32 min": ("-2147483648", 32, -(2**31)),
}


@pytest.mark.parametrize(("text", "bits", "want"), INTS.values(), ids=INTS.keys())
def test_parse_int(text: str, bits: int, want: int) -> None:
    assert parse_int(text, bits) == want


INT_ERRORS = {
    "empty": ("", 64, "invalid syntax"),
    "word": ("high", 64, "invalid syntax"),
    "sign only": ("-", 64, "invalid syntax"),
    "space": (" 1", 64, "invalid syntax"),
    "non-ascii digit": ("\u0661", 64, "invalid syntax"),
    "int32 overflow": ("2147483648", 32, "value out of range"),
    "int64 overflow": ("9223372036854775808", 64, "value out of range"),
}


@pytest.mark.parametrize(("text", "bits", "why"), INT_ERRORS.values(), ids=INT_ERRORS.keys())
def test_parse_int_errors(text: str, bits: int, why: str) -> None:
    with pytest.raises(NumError) as info:
        parse_int(text, bits)
    assert str(info.value).endswith(f": {why}")
    assert str(info.value).startswith("strconv.ParseInt: parsing ")
