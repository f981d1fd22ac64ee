"""``credprov.sdk.flags``: pflag's rules (and klog's flags) for every plugin, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from credprov._go.durations import MINUTE, SECOND
from credprov.sdk.flags import (
    KLOG_COMPONENT_FLAGS,
    KLOG_GO_FLAGS,
    VERBOSITY,
    FlagError,
    Option,
    parse,
)

OPTIONS = (
    Option("name", "dflt", shorthand="n"),
    Option("bool", False, flag=True, shorthand="b"),
    Option("other", False, flag=True, shorthand="o"),
    Option("count", 0, kind="int", shorthand="c"),
    Option("timeout", 10 * SECOND, kind="duration"),
    Option("tags", [], kind="list", shorthand="t"),
    VERBOSITY,
)

# argv -> (values that differ from the defaults, positional arguments)
ACCEPTED: dict[str, tuple[list[str], dict[str, Any], list[str]]] = {
    "nothing": ([], {}, []),
    "--name=value": (["--name=x"], {"name": "x"}, []),
    "--name value": (["--name", "x"], {"name": "x"}, []),
    "--name= (empty)": (["--name="], {"name": ""}, []),
    "value may start with a dash": (["--name", "-x"], {"name": "-x"}, []),
    "value with =": (["--name=a=b"], {"name": "a=b"}, []),
    "-n value": (["-n", "x"], {"name": "x"}, []),
    "-n=value": (["-n=x"], {"name": "x"}, []),
    "-nvalue": (["-nx"], {"name": "x"}, []),
    "last one wins": (["-n", "a", "--name=b"], {"name": "b"}, []),
    "--bool": (["--bool"], {"bool": True}, []),
    "--bool=false": (["--bool=false"], {"bool": False}, []),
    "--bool=T": (["--bool=T"], {"bool": True}, []),
    "--bool false: false is an argument": (["--bool", "false"], {"bool": True}, ["false"]),
    "-b": (["-b"], {"bool": True}, []),
    "-b=false": (["-b=false"], {"bool": False}, []),
    "bool cluster": (["-bo"], {"bool": True, "other": True}, []),
    "bool cluster ending in a value": (["-bnx"], {"bool": True, "name": "x"}, []),
    "int": (["--count=-3"], {"count": -3}, []),
    "int shorthand": (["-c7"], {"count": 7}, []),
    "duration": (["--timeout=1m"], {"timeout": MINUTE}, []),
    "list": (["--tags=a,b"], {"tags": ["a", "b"]}, []),
    "list repeats add up": (["-t", "a", "--tags", "b,c"], {"tags": ["a", "b", "c"]}, []),
    "-v N": (["-v", "3"], {"v": 3}, []),
    "-vN": (["-v5"], {"v": 5}, []),
    "--v=N": (["--v=2"], {"v": 2}, []),
    "negative level": (["--v=-1"], {"v": -1}, []),
    "interspersed arguments": (["a", "--name=x", "b"], {"name": "x"}, ["a", "b"]),
    "- is an argument": (["-"], {}, ["-"]),
    "-- ends the options": (["--", "--name=x", "-b"], {}, ["--name=x", "-b"]),
}


@pytest.mark.parametrize(("argv", "changed", "positional"), ACCEPTED.values(), ids=ACCEPTED.keys())
def test_accepted(argv: list[str], changed: dict[str, Any], positional: list[str]) -> None:
    parsed = parse(argv, OPTIONS)
    defaults = {o.name: o.default for o in OPTIONS}
    assert parsed.values == {**defaults, **changed}
    assert parsed.positional == positional
    assert set(parsed.given) == set(changed)


REFUSED: dict[str, tuple[list[str], str]] = {
    "unknown flag": (["--nope"], "unknown flag: --nope"),
    "unknown flag with value": (["--nope=1"], "unknown flag: --nope"),
    "unknown shorthand": (["-x"], "unknown shorthand flag: 'x' in -x"),
    "unknown shorthand in a cluster": (["-bx"], "unknown shorthand flag: 'x' in -x"),
    "unknown shorthand, whole word": (["-xyz"], "unknown shorthand flag: 'x' in -xyz"),
    "missing value": (["--name"], "flag needs an argument: --name"),
    "missing shorthand value": (["-n"], "flag needs an argument: 'n' in -n"),
    "bad bool": (
        ["--bool=maybe"],
        'invalid argument "maybe" for "-b, --bool" flag: strconv.ParseBool: parsing "maybe": '
        "invalid syntax",
    ),
    "bad int": (
        ["--count", "x"],
        'invalid argument "x" for "-c, --count" flag: strconv.ParseInt: parsing "x": '
        "invalid syntax",
    ),
    "bad level": (
        ["-v", "high"],
        'invalid argument "high" for "-v, --v" flag: strconv.ParseInt: parsing "high": '
        "invalid syntax",
    ),
    "level out of range": (
        ["--v=2147483648"],
        'invalid argument "2147483648" for "-v, --v" flag: strconv.ParseInt: parsing '
        '"2147483648": value out of range',
    ),
    "bad duration": (
        ["--timeout=1x"],
        'invalid argument "1x" for "--timeout" flag: time: unknown unit "x" in duration "1x"',
    ),
    "bad syntax": (["---name"], "bad flag syntax: ---name"),
    "bad syntax =": (["--=x"], "bad flag syntax: --=x"),
    "quoted in Go's way": (["--bool=\t"], 'invalid argument "\\t" for "-b, --bool" flag'),
}


@pytest.mark.parametrize(("argv", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_refused(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as info:
        parse(argv, OPTIONS)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_single_dash_long_names_as_go_flag_reads_them() -> None:
    parsed = parse(
        ["-logtostderr", "-log_dir=/x", "-v=2"], (VERBOSITY, *KLOG_GO_FLAGS), single_dash_long=True
    )
    assert parsed.values["logtostderr"] is True and parsed.values["log_dir"] == "/x"
    assert parsed.values["v"] == 2
    with pytest.raises(FlagError, match="unknown shorthand flag: 'l' in -logtostderr"):
        parse(["-logtostderr"], (VERBOSITY, *KLOG_GO_FLAGS))


def test_klog_spellings() -> None:
    go_names = {o.name for o in KLOG_GO_FLAGS}
    component_names = {o.name for o in KLOG_COMPONENT_FLAGS}
    assert {"log_dir", "logtostderr", "vmodule"} <= go_names
    assert {"log-dir", "logtostderr", "vmodule", "log-flush-frequency"} <= component_names
    assert all(o.hidden for o in (*KLOG_GO_FLAGS, *KLOG_COMPONENT_FLAGS))


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError):
        Option("x", kind="float")
    with pytest.raises(ValueError):
        Option("x", shorthand="xy")
    assert Option("x", flag=True).kind == "bool" and Option("x").kind == "str"
