"""Go's ``strconv.ParseBool`` and ``strconv.ParseInt``, with Go's error texts.

Upstream flags (pflag's bool and int flags, klog's ``-v`` level, component-base's
``--feature-gates``) read their values with these, so the words a value may be spelled in and
the text of a refusal (``strconv.ParseBool: parsing "maybe": invalid syntax``) come from here.

Standard library only, and nothing imported at module level beyond it: the plugin SDK's
argument parser (on every plugin's warm path) uses it.
"""

from __future__ import annotations

from credprov.errors import GoError

#: The spellings ``strconv.ParseBool`` accepts, and nothing else ("tRUE", "yes" are errors).
TRUE_WORDS = frozenset(("1", "t", "T", "TRUE", "true", "True"))
FALSE_WORDS = frozenset(("0", "f", "F", "FALSE", "false", "False"))


class NumError(GoError, ValueError):
    """``*strconv.NumError``: ``strconv.<func>: parsing "<num>": <err>``."""

    def __init__(self, func: str, num: str, err: str) -> None:
        self.func = func
        self.num = num
        self.err = err
        super().__init__(f"strconv.{func}: parsing {_quote(num)}: {err}")


def _quote(text: str) -> str:
    from credprov._go.fmt import go_quote  # the error path only

    return go_quote(text)


def parse_bool(text: str) -> bool:
    """``strconv.ParseBool``: 1 t T TRUE true True, or 0 f F FALSE false False.

    Raises:
        NumError: any other text (``invalid syntax``).
    """
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise NumError("ParseBool", text, "invalid syntax")


def parse_int(text: str, bit_size: int = 64) -> int:
    """``strconv.ParseInt(text, 10, bit_size)``: an optional sign, then ASCII digits.

    Raises:
        NumError: not a base-10 integer (``invalid syntax``) or outside a signed
            ``bit_size``-bit integer (``value out of range``).
    """
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        raise NumError("ParseInt", text, "invalid syntax")
    value = int(text)
    if not -(2 ** (bit_size - 1)) <= value < 2 ** (bit_size - 1):
        raise NumError("ParseInt", text, "value out of range")
    return value
