"""One CLI vocabulary: every subcommand's options against :mod:`credprov.cmdoptions`.

Walks every leaf parser of ``credprov`` and of the standalone doctor and checks that an
option string means one thing everywhere (same dest, type, choices, metavar and help, taken
from the table in ``cmdoptions``), that no command defines a shared option by hand, that
every leaf has ``-o``, that every duration option parses with the one duration type (a bad
value: exit 2, one line), that the renamed options' old spellings are hidden aliases that
warn, that one meaning has one spelling, that a help text speaks only of the command it is
on, that both front ends run through one ``main()`` skeleton, and that README's command
lines and the parsers agree.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from credprov import cmdoptions
from credprov.cli.main import main
from credprov.cli.parser import build_parser
from credprov.doctor import cli as doctor_cli
from tests.conftest import CANARY

ROOT = Path(__file__).resolve().parents[3]

#: Shared options README need not show, and why.
README_EXEMPT = {
    "VERBOSITY": "README says once that every command takes -v N",
    "PULL_TIMEOUT": "ensure-image's option table is in docs/ensure-image.md",
    "DRY_RUN": "the pull-records actions are shown as verify|migrate|prune",
}


def _leaves(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for sub in subs:
        for name, child in sub.choices.items():
            yield from _leaves(child, f"{path} {name}")


LEAVES = dict(_leaves(build_parser(), "credprov"))
LEAVES["credprov doctor (standalone)"] = doctor_cli.build_parser()


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def _meaning(action: argparse.Action) -> tuple[object, ...]:
    """What an option is, its help without the command's own note."""
    note = getattr(action, "credprov_note", "")
    help_text = action.help[: -len(f"; {note}")] if note and action.help else action.help
    return (action.dest, action.type, action.choices, action.metavar, help_text, action.nargs)


def _reference(option: cmdoptions.Option) -> argparse.Action:
    return option.add(argparse.ArgumentParser(add_help=False))


def test_the_table_is_every_shared_option() -> None:
    assert "ROOT_DIR" in cmdoptions.ALL_OPTIONS and "NODE_ROOT" in cmdoptions.ALL_OPTIONS
    flags = [f for o in cmdoptions.ALL_OPTIONS.values() for f in o.flags]
    assert len(flags) == len(set(flags)), "two shared options with one spelling"


@pytest.mark.parametrize("leaf", LEAVES, ids=str)
def test_shared_options_come_from_cmdoptions(leaf: str) -> None:
    by_flag = {f: o for o in cmdoptions.ALL_OPTIONS.values() for f in o.flags}
    for action in _options(LEAVES[leaf]):
        shared = {by_flag[f] for f in action.option_strings if f in by_flag}
        if not shared:
            continue
        (option,) = shared
        assert getattr(action, "credprov_option", None) is option, (
            f"{leaf}: {action.option_strings} defined by hand, not with cmdoptions"
        )
        # the same meaning; the help may end with a note on what it does on this command
        assert _meaning(action) == _meaning(_reference(option)), leaf


def test_each_option_string_has_one_meaning_and_shared_ones_are_in_the_table() -> None:
    seen: dict[str, dict[tuple[object, ...], list[str]]] = {}
    for leaf, parser in LEAVES.items():
        for action in _options(parser):
            for flag in action.option_strings:
                seen.setdefault(flag, {}).setdefault(_meaning(action), []).append(leaf)
    shared = {f for o in cmdoptions.ALL_OPTIONS.values() for f in o.flags}
    for flag, meanings in seen.items():
        assert len(meanings) == 1, f"{flag} means {len(meanings)} things: {meanings}"
        leaves = {leaf.replace(" (standalone)", "") for m in meanings.values() for leaf in m}
        if len(leaves) > 1 and flag != "-v":
            assert flag in shared, f"{flag} is in {sorted(leaves)}: define it in cmdoptions"


#: What an option defined by hand stands for when its ``dest`` names a shared option's
#: meaning in other words (a shared option says its own, ``Option.meaning``): the spellings
#: that were once a second name for one meaning.
SYNONYMS = {
    "timeout": cmdoptions.PLUGIN_TIMEOUT.meaning,
    "plugin_timeout": cmdoptions.PLUGIN_TIMEOUT.meaning,
    "secrets": cmdoptions.PULL_SECRET.meaning,
    "pull_secret": cmdoptions.PULL_SECRET.meaning,
    "pull_secrets": cmdoptions.PULL_SECRET.meaning,
}


def spellings_by_meaning(
    leaves: dict[str, argparse.ArgumentParser],
) -> dict[str, set[tuple[str, ...]]]:
    """What each option stands for -> the spellings it has on ``leaves``."""
    found: dict[str, set[tuple[str, ...]]] = {}
    for parser in leaves.values():
        for action in _options(parser):
            option = getattr(action, "credprov_option", None)
            meaning = (
                option.meaning if option is not None else SYNONYMS.get(action.dest, action.dest)
            )
            found.setdefault(meaning, set()).add(tuple(action.option_strings))
    return found


def test_each_meaning_has_one_spelling() -> None:
    twice = {m: s for m, s in spellings_by_meaning(LEAVES).items() if len(s) > 1}
    assert twice == {}, "one meaning, two spellings: define it once in cmdoptions"


def test_two_spellings_of_one_meaning_are_found() -> None:
    exec_parser = argparse.ArgumentParser()
    cmdoptions.PLUGIN_TIMEOUT.add(exec_parser)
    cmdoptions.PULL_SECRET.add(exec_parser)
    test_parser = argparse.ArgumentParser()
    test_parser.add_argument("--timeout", type=cmdoptions.duration)
    test_parser.add_argument("--secrets", action="append")
    found = spellings_by_meaning({"exec": exec_parser, "test": test_parser})
    assert found[cmdoptions.PLUGIN_TIMEOUT.meaning] == {("--plugin-timeout",), ("--timeout",)}
    assert found[cmdoptions.PULL_SECRET.meaning] == {("--pull-secret",), ("--secrets",)}


#: Command names that are not also ordinary words in a help text.
COMMAND_NAMES = (
    "bundle",
    "doctor",
    "ensure-image",
    "get-credentials",
    "image-gc",
    "kep4412",
    "nodeauth",
    "pull-records",
    "simulate",
)


def other_commands_named(leaf: str, parser: argparse.ArgumentParser) -> list[str]:
    """``flag: command`` for every option help on ``leaf`` that names another command."""
    own = leaf.replace(" (standalone)", "").split()[1:]
    found = []
    for action in _options(parser):
        for name in COMMAND_NAMES:
            if name not in own and re.search(rf"(?<![\w-]){name}(?![\w-])", action.help or ""):
                found.append(f"{action.option_strings[-1]}: {name}")
    return found


@pytest.mark.parametrize("leaf", LEAVES, ids=str)
def test_a_help_text_speaks_of_the_command_it_is_on(leaf: str) -> None:
    assert other_commands_named(leaf, LEAVES[leaf]) == []


def test_a_help_text_naming_another_command_is_found() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", help="the config (for doctor: instead of the node's)")
    parser.add_argument("--out", help="where to write (bundle: the tarball)")
    assert other_commands_named("credprov plugin exec", parser) == [
        "--config: doctor",
        "--out: bundle",
    ]
    assert other_commands_named("credprov doctor", parser) == ["--out: bundle"]


def test_both_front_ends_run_through_one_main() -> None:
    """``main()``'s steps (safe streams, logging, the Go behaviour, the error contract) are
    written once, in ``cmdoptions.run_main``; each front end's ``main`` calls it."""
    steps = {"safe_streams", "setup_logging", "setup_logging_lazily", "follow_go_options"}
    callers = set()
    for path in sorted((ROOT / "credprov").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                for call in ast.walk(node):
                    if isinstance(call, ast.Call):
                        name = ast.unparse(call.func).rsplit(".", 1)[-1]
                        if name in steps or name == "run_main":
                            callers.add((path.relative_to(ROOT).as_posix(), node.name, name))
    assert callers == {
        ("credprov/cmdoptions.py", "run_main", "safe_streams"),
        ("credprov/cmdoptions.py", "run_main", "setup_logging_lazily"),
        ("credprov/cmdoptions.py", "run_main", "follow_go_options"),
        ("credprov/base/logs.py", "setup_logging_lazily", "setup_logging"),
        ("credprov/base/logs.py", "exec_then_set_up", "setup_logging"),
        ("credprov/base/logs.py", "__init__", "setup_logging"),
        ("credprov/cli/main.py", "main", "run_main"),
        ("credprov/doctor/cli.py", "main", "run_main"),
    }


@pytest.mark.parametrize("leaf", LEAVES, ids=str)
def test_every_leaf_has_output_and_verbosity(leaf: str) -> None:
    flags = {f for a in _options(LEAVES[leaf]) for f in a.option_strings}
    assert {"-o", "--output", "-v", "--v"} <= flags


DURATIONS = [
    (leaf, a.option_strings[-1])
    for leaf, parser in LEAVES.items()
    for a in _options(parser)
    if a.metavar == "DURATION"
]


def test_every_duration_option_uses_the_one_type() -> None:
    assert len(DURATIONS) >= 6
    for leaf, flag in DURATIONS:
        (action,) = [a for a in _options(LEAVES[leaf]) if flag in a.option_strings]
        # --every's period is that duration with the loop's maximum (cmdoptions.period).
        want = cmdoptions.period if flag == "--every" else cmdoptions.duration
        assert action.type is want, (leaf, flag)


@pytest.mark.parametrize("leaf, flag", DURATIONS, ids=[f"{leaf}:{f}" for leaf, f in DURATIONS])
@pytest.mark.parametrize("value, why", [("1x", 'time: unknown unit "x" in duration "1x"'),
                                        ("0s", "must be positive")])  # fmt: skip
def test_a_bad_duration_is_a_one_line_usage_error(
    leaf: str, flag: str, value: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = leaf.split()[1:]
    prog = "credprov doctor" if leaf.endswith("(standalone)") else leaf
    with pytest.raises(SystemExit) as exc:
        if leaf.endswith("(standalone)"):
            doctor_cli.main([flag, value])
        else:
            main([*argv, flag, value])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"{prog}: error: argument {flag}: {why} (see --help)\n"


# -- renamed options ----------------------------------------------------------------------------

#: (argv before the option, old spelling, new spelling, a value, what the new one holds)
RENAMED = [
    (["pull-records", "list"], "--root", "--root-dir", "/some/dir", "/some/dir"),
    (["ensure-image"], "--root", "--root-dir", "/some/dir", "/some/dir"),
    (["image-gc"], "--root", "--root-dir", "/some/dir", "/some/dir"),
    (["simulate", "x.yaml"], "--root", "--root-dir", "/some/dir", "/some/dir"),
    (["doctor"], "--root", "--node-root", "/some/dir", "/some/dir"),
    (["doctor"], "--images", "--node-images", "/some/file", "/some/file"),
    (["ensure-image"], "--secrets", "--pull-secret", "s.yaml", ["s.yaml"]),
    (["plugin", "test", "p.yaml"], "--timeout", "--plugin-timeout", "2s", 2 * 10**9),
]
_REQUIRED = {
    "ensure-image": ["--cri", "unix:///x", "--pod", "p", "--root-dir", "/r"],
    "image-gc": ["--cri", "x"],
    "plugin": ["--image", "r.io/x"],
}


@pytest.mark.parametrize(
    "argv, old, new, value, held", RENAMED, ids=[f"{a[0]}{o}" for a, o, *_ in RENAMED]
)
def test_an_old_spelling_is_a_hidden_alias_that_warns(
    argv: list[str],
    old: str,
    new: str,
    value: str,
    held: object,
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    leaf = LEAVES["credprov " + " ".join(a for a in argv if not a.endswith(".yaml"))]
    help_text = leaf.format_help()
    assert re.search(rf"{re.escape(new)}\b", help_text)
    assert not re.search(rf"{re.escape(old)}(?![\w-])", help_text), "the alias is hidden"
    required = _REQUIRED.get(argv[0], [])
    args = parser.parse_args([*argv, *required, old, value])
    assert getattr(args, new.lstrip("-").replace("-", "_")) == held
    assert capsys.readouterr().err == f"credprov: warning: {old} is deprecated; use {new}\n"
    parser.parse_args([*argv, *required, new, value])
    assert capsys.readouterr().err == ""


def test_the_alias_satisfies_a_required_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pull-records", "verify", "--root", str(tmp_path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["ok"] is True
    assert err == "credprov: warning: --root is deprecated; use --root-dir\n"


# -- errors and exit statuses -------------------------------------------------------------------


def test_a_library_error_keeps_its_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not re-wrapped into a CLIError: the hint line survives (it was dropped before)."""
    import credprov.nodeauth.store as store

    def refuse(path: str) -> object:
        raise store.NodeAuthError(f"objects file {path}: nope").with_hint("try harder")

    monkeypatch.setattr(store, "load_objects_file", refuse)
    assert main(["nodeauth", "audit", "--objects", "f", "--node", "n"]) == 1
    assert capsys.readouterr().err == (
        "credprov: error: objects file f: nope\ncredprov: hint: try harder\n"
    )


def _int(node: ast.AST | None) -> bool:
    if isinstance(node, ast.IfExp):
        return _int(node.body) or _int(node.orelse)
    return isinstance(node, ast.Constant) and type(node.value) is int


def test_commands_return_named_exit_statuses() -> None:
    """``return EXIT_FAILURE``, never ``return 1`` (``credprov.errors.EXIT_*``)."""
    files = [*sorted((ROOT / "credprov" / "cli").glob("*_cmd.py")), ROOT / "credprov/cli/main.py",
             ROOT / "credprov/doctor/cli.py", ROOT / "credprov/cmdoptions.py",
             ROOT / "credprov/bundle/validate_config.py"]  # fmt: skip
    literals = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Return) and _int(node.value):
                literals.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.Call) and node.args and _int(node.args[0]):
                name = ast.unparse(node.func)
                if name in ("sys.exit", "SystemExit", "self.exit", "parser.exit"):
                    literals.append(f"{path.name}:{node.lineno}")
    assert literals == []


def test_install_json_is_stable_and_has_no_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREDPROV_TEST_PASSWORD", CANARY)
    assert (
        main(["install", "--bin-dir", str(tmp_path), "static-credential-provider", "-o", "json"])
        == 0
    )
    out = capsys.readouterr().out
    document = json.loads(out)
    assert document == {
        "binDir": str(tmp_path),
        "plugins": [{"name": "static-credential-provider",
                     "path": str(tmp_path / "static-credential-provider"),
                     "status": "installed"}],
    }  # fmt: skip
    assert CANARY not in out
    assert main(["install", "--list", "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["plugins"]
    assert {"name": "static-credential-provider"}.items() <= listed[0].items() or any(
        p["name"] == "static-credential-provider" for p in listed
    )


def test_the_standalone_doctor_does_not_import_the_credprov_cli() -> None:
    code = (
        "import sys\n"
        "from credprov.doctor.cli import build_parser\n"
        "build_parser().format_help()\n"
        "print(sorted(m for m in sys.modules if m.startswith('credprov.cli')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert proc.stdout.strip() == "[]"


# -- README -------------------------------------------------------------------------------------


def _readme_commands() -> Iterator[tuple[str, list[str]]]:
    """``(leaf, flags)`` of every ``credprov ...`` line in README's code blocks."""
    blocks = (ROOT / "README.md").read_text().split("\n```")[1::2]  # inside the fences
    for block in blocks:
        for command in re.sub(r"\\\n", " ", block).splitlines():
            match = re.match(r"\s*(?:\$ )?credprov ((?:[a-z][a-z|-]* ?)+)(.*)", command)
            if match is None:
                continue
            words = match.group(1).split()
            flags = re.findall(r"(?<![\w/=-])(--?[a-z][a-z0-9-]*)", match.group(2))
            for i in range(len(words), 0, -1):
                for alternative in words[i - 1].split("|"):
                    leaf = " ".join(["credprov", *words[: i - 1], alternative])
                    if leaf in LEAVES:
                        yield leaf, flags
                if any(" ".join(["credprov", *words[: i - 1], w]) in LEAVES
                       for w in words[i - 1].split("|")):  # fmt: skip
                    break


README_COMMANDS = list(_readme_commands())


def test_readme_shows_every_command_family() -> None:
    shown = {leaf for leaf, _ in README_COMMANDS}
    assert {"credprov doctor", "credprov ensure-image", "credprov pull-records prune"} <= shown


@pytest.mark.parametrize("leaf, flags", README_COMMANDS, ids=[c[0] for c in README_COMMANDS])
def test_every_option_readme_shows_exists(leaf: str, flags: list[str]) -> None:
    known = {f for a in _options(LEAVES[leaf]) for f in a.option_strings}
    assert set(flags) <= known, f"README shows {sorted(set(flags) - known)} for {leaf}"


def test_readme_shows_every_shared_option() -> None:
    shown = {f for _, flags in README_COMMANDS for f in flags}
    for name, option in cmdoptions.ALL_OPTIONS.items():
        if name in README_EXEMPT:
            continue
        assert shown & set(option.flags), f"README shows no {option.flags[-1]}"
