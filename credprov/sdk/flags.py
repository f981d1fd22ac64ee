"""Command lines read the way upstream plugins read theirs (cobra/pflag, and klog's flags).

Upstream's credential providers are Go programs whose flags come from
``github.com/spf13/pflag`` (through cobra) and klog. This module is that parser, once, for
every plugin: declare each option once, typed (:class:`Option`), and :func:`parse` reads

* ``--name=value`` and ``--name value``; a shorthand ``-n value``, ``-n=value``, ``-nvalue``;
* bool options as ``--flag``, ``--flag=false`` (never ``--flag false``: ``false`` is then an
  argument), and shorthand bools in a cluster (``-hx``);
* ``--`` ends the options; ``-`` and anything else not starting with ``-`` is an argument,
  wherever it stands (pflag intersperses);
* with ``single_dash_long=True``, ``-name`` for a long name too, as Go's ``flag`` package
  (klog's flags in a ``goflag`` set) accepts it.

A refusal raises :class:`FlagError` whose ``str()`` is pflag's text (``unknown flag: --x``,
``unknown shorthand flag: 'x' in -x``, ``flag needs an argument: --name``, ``invalid argument
"x" for "-v, --v" flag: strconv.ParseInt: parsing "x": invalid syntax``); values are read
with Go's ``strconv`` and ``time.ParseDuration``.

Kinds: ``str``; ``bool`` (``strconv.ParseBool``); ``int`` (``strconv.ParseInt``, base 10,
64 bits); ``level`` (klog's ``-v``: base 10, 32 bits); ``duration`` (Go's
``time.ParseDuration``, in nanoseconds); ``list`` (pflag's ``stringSlice``: comma-separated,
repeats add up). :data:`VERBOSITY` is klog's ``-v``/``--v``; :data:`KLOG_GO_FLAGS` and
:data:`KLOG_COMPONENT_FLAGS` are klog's other flags in their two spellings (Go's
``klog.InitFlags``: ``log_dir``; component-base's ``logs``: ``log-dir``), accepted and ignored.

Standard library only, and no import beyond this package's on the way in: this module is on
every plugin's warm path (the ``strconv``/``time`` readers load when a value needs them).
"""

from __future__ import annotations

from credprov.sdk._errors import UsageError

TYPE_CHECKING = False  # typing costs start-up time; mypy reads this name as typing's
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

KINDS = ("str", "bool", "int", "level", "duration", "list")


class FlagError(UsageError):
    """A command line pflag refuses too; ``str()`` is pflag's text (one line)."""


class Option:
    """One command-line option, declared once: name, kind, default, shorthand and help.

    Args:
        name: the long name (``--name``).
        default: the value when the option is not given (``None``: the kind's zero value is
            not implied; a handler sees ``None``).
        help: one line for ``--help``.
        flag: shorthand for ``kind="bool"`` (an on/off option).
        kind: ``str``, ``bool``, ``int``, ``level``, ``duration`` or ``list`` (see the module).
        shorthand: a one-letter alias (``-a``), as pflag's ``StringP``.
        hidden: accepted but left out of ``--help`` (klog's flags, values set by the plugin).
    """

    __slots__ = ("default", "help", "hidden", "kind", "name", "shorthand")

    def __init__(
        self,
        name: str,
        default: Any = None,
        help: str = "",
        flag: bool = False,
        *,
        kind: str = "",
        shorthand: str = "",
        hidden: bool = False,
    ) -> None:
        kind = kind or ("bool" if flag else "str")
        if kind not in KINDS or len(shorthand) > 1:
            raise ValueError(f"option {name!r}: bad kind {kind!r} or shorthand {shorthand!r}")
        self.name = name
        self.default = default
        self.help = help
        self.kind = kind
        self.shorthand = shorthand
        self.hidden = hidden

    @property
    def flag(self) -> bool:
        """Whether this is a bool option (``--name`` alone means true)."""
        return self.kind == "bool"

    def spelling(self) -> str:
        """How pflag names the option in errors: ``-a, --authFlow`` or ``--name``."""
        return f"-{self.shorthand}, --{self.name}" if self.shorthand else f"--{self.name}"

    def convert(self, text: str) -> Any:
        """``text`` read as this option's kind.

        Raises:
            FlagError: pflag's ``invalid argument "text" for "--name" flag: <reason>``.
        """
        if self.kind in ("str", "list"):
            return text
        try:
            if self.kind == "bool":
                from credprov._go.strconv import parse_bool

                return parse_bool(text)
            if self.kind == "duration":
                from credprov._go.durations import parse_duration

                return parse_duration(text)
            from credprov._go.strconv import parse_int

            return parse_int(text, 32 if self.kind == "level" else 64)
        except ValueError as exc:
            raise FlagError(
                f"invalid argument {go_quote(text)} for {go_quote(self.spelling())} flag: {exc}"
            ) from None


#: klog's ``-v``/``--v`` (a ``Level``: an int32; upstream treats a negative level as 0).
VERBOSITY = Option("v", 0, "log verbosity on stderr", kind="level", shorthand="v")

_KLOG_VALUES = ("vmodule", "log_dir", "log_file", "log_file_max_size", "stderrthreshold")
_KLOG_BOOLS = ("logtostderr", "alsologtostderr", "add_dir_header", "skip_headers")

#: klog's flags as ``klog.InitFlags`` registers them (underscores), accepted and ignored.
KLOG_GO_FLAGS = (
    *(Option(n, "", hidden=True) for n in (*_KLOG_VALUES, "log_backtrace_at")),
    *(
        Option(n, False, flag=True, hidden=True)
        for n in (*_KLOG_BOOLS, "skip_log_headers", "one_output")
    ),
    Option("legacy_stderr_threshold_behavior", False, flag=True, hidden=True),
)

#: klog's flags as component-base's ``logs`` package registers them (dashes), accepted and
#: ignored.
KLOG_COMPONENT_FLAGS = (
    *(
        Option(n.replace("_", "-"), "", hidden=True)
        for n in (*_KLOG_VALUES, "log_backtrace_at", "log_flush_frequency", "logging_format")
    ),
    *(
        Option(n.replace("_", "-"), False, flag=True, hidden=True)
        for n in (*_KLOG_BOOLS, "skip_log_headers", "one_output")
    ),
)


class Parsed:
    """What :func:`parse` read: every option's value, which were given, the arguments."""

    __slots__ = ("given", "positional", "values")

    def __init__(self, values: dict[str, Any]) -> None:
        #: option name -> value (the default when not given)
        self.values = values
        #: names of the options the command line set, in the order first given
        self.given: list[str] = []
        #: the arguments that are not options, in order (after ``--`` too)
        self.positional: list[str] = []


def parse(
    argv: Sequence[str], options: Iterable[Option], *, single_dash_long: bool = False
) -> Parsed:
    """Read ``argv`` (without the program name) as pflag does.

    Raises:
        FlagError: an unknown option, a missing or invalid value (pflag's texts).
    """
    by_name: dict[str, Option] = {}
    by_short: dict[str, Option] = {}
    for opt in options:
        by_name[opt.name] = opt
        if opt.shorthand:
            by_short[opt.shorthand] = opt
    parsed = Parsed({o.name: o.default for o in by_name.values()})
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if len(arg) < 2 or arg[0] != "-":
            parsed.positional.append(arg)
        elif arg == "--":
            parsed.positional.extend(args[i:])
            break
        elif arg[1] == "-" or (
            single_dash_long and len(name := arg[1:].partition("=")[0]) > 1 and name in by_name
        ):
            i = _long(parsed, by_name, arg, args, i)
        else:
            i = _shorts(parsed, by_short, arg[1:], args, i)
    return parsed


def _set(parsed: Parsed, opt: Option, text: str) -> None:
    value = opt.convert(text)
    if opt.kind == "list":
        items = text.split(",") if text else []
        value = [*parsed.values[opt.name], *items] if opt.name in parsed.given else items
    parsed.values[opt.name] = value
    if opt.name not in parsed.given:
        parsed.given.append(opt.name)


def _long(parsed: Parsed, by_name: dict[str, Option], arg: str, args: list[str], i: int) -> int:
    body = arg[2:] if arg[1] == "-" else arg[1:]
    if not body or body[0] in "-=":
        raise FlagError(f"bad flag syntax: {arg}")
    name, eq, value = body.partition("=")
    opt = by_name.get(name)
    if opt is None:
        raise FlagError(f"unknown flag: --{name}")
    if not eq:
        if opt.flag:
            value = "true"
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            raise FlagError(f"flag needs an argument: {arg}")
    _set(parsed, opt, value)
    return i


def _shorts(
    parsed: Parsed, by_short: dict[str, Option], shorthands: str, args: list[str], i: int
) -> int:
    while shorthands:
        char, rest = shorthands[0], shorthands[1:]
        opt = by_short.get(char)
        if opt is None:
            raise FlagError(f"unknown shorthand flag: {_quote_rune(char)} in -{shorthands}")
        if len(shorthands) > 2 and shorthands[1] == "=":
            value, rest = shorthands[2:], ""
        elif opt.flag:
            value = "true"
        elif rest:
            value, rest = rest, ""
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            raise FlagError(f"flag needs an argument: {_quote_rune(char)} in -{shorthands}")
        _set(parsed, opt, value)
        shorthands = rest
    return i


def go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``) of ``text``, for messages that quote a value as
    upstream's do (:func:`credprov._go.fmt.go_quote`, loaded on the first call)."""
    from credprov._go import fmt  # the error path only

    return fmt.go_quote(text)


def _quote_rune(char: str) -> str:
    """Go's ``%q`` of a rune: ``'x'``."""
    inner = go_quote(char)[1:-1].replace('\\"', '"')
    return "'" + (inner.replace("'", "\\'") if inner == "'" else inner) + "'"
