"""``--kubelet-binary``, ``--kubelet-version`` and ``--go-debug``: which Go behaviour a
command follows, on the CLI (and README's commands, run as written)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from credprov._go.version import current_go
from credprov.cli.main import main
from tests import goelf
from tests.conftest import provider, write_config

ROOT = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def kubelets(tmp_path: Path) -> dict[str, Path]:
    """Kubelet-like Go binaries: Go 1.26 with a go 1.24 go.mod (urlstrictcolons=0), Go 1.26
    with go 1.26 (its defaults), and files that are not Go binaries."""

    def build(name: str, content: bytes) -> Path:
        return goelf.write(tmp_path / name, content)

    return {
        "go124": build("kubelet-124", goelf.elf()),
        "go126": build(
            "kubelet-126", goelf.elf(goelf.blob(info=goelf.modinfo(default_godebug="")))
        ),
        "arm64": build("kubelet-arm64", goelf.elf(machine=183)),
        "notgo": build("not-go", goelf.elf(b"\0" * 128)),
        "script": build("script", b"#!/bin/sh\nexec kubelet\n"),
    }


@pytest.fixture
def colons_config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "config.json", [provider("p", match_images=["host::5000"])])


#: (options, exit status of `config validate` of a host::5000 entry, what follows, stderr)
CHOICES = [
    (["--kubelet-binary", "{go124}"], 0, "1.26.6 with GODEBUG urlstrictcolons=0",
     "credprov: kubelet binary {go124}: built with go1.26.6 (amd64), DefaultGODEBUG "
     "urlstrictcolons=0; credprov follows Go 1.26.6 with GODEBUG urlstrictcolons=0\n"),
    (["--kubelet-binary", "{arm64}"], 0, "1.26.6 with GODEBUG urlstrictcolons=0",
     "(arm64)"),
    (["--kubelet-binary", "{go126}"], 1, "1.26.6", 'invalid port "::5000" after host'),
    (["--kubelet-binary", "{go124}", "--go-debug", "urlstrictcolons=1"], 1, "1.26.6",
     'invalid port "::5000" after host'),
    (["--go-version", "1.26.6"], 1, "1.26.6", 'invalid port "::5000" after host'),
    (["--go-version", "1.26.6", "--go-debug", "urlstrictcolons=0"], 0,
     "1.26.6 with GODEBUG urlstrictcolons=0", ""),
    (["--go-debug", "urlstrictcolons=0"], 0, "1.25.5", ""),
    (["--kubelet-version", "1.34"], 0, "1.24.11", "credprov: Kubernetes 1.34: go.mod go 1.24.0"),
    (["--kubelet-version", "v1.36.1"], 1, "1.26.6", "Kubernetes 1.36"),
    (["--kubelet-version", "1.99"], 1, "1.26.6",
     "credprov: Kubernetes 1.99 (past credprov's table: following its newest entry)"),
]  # fmt: skip


@pytest.mark.parametrize("argv, code, follows, err", CHOICES)
def test_choice(
    capsys: pytest.CaptureFixture[str],
    kubelets: dict[str, Path],
    colons_config: Path,
    argv: list[str],
    code: int,
    follows: str,
    err: str,
) -> None:
    names = {k: str(v) for k, v in kubelets.items()}
    argv = [a.format(**names) for a in argv]
    got_code, _, got_err = run(capsys, "config", "validate", str(colons_config), *argv)
    assert got_code == code, got_err
    assert str(current_go()) == follows
    assert err.format(**names) in got_err
    assert "Traceback" not in got_err


#: (options, the one-line usage error)
USAGE = [
    (["--kubelet-binary", "{notgo}"],
     "credprov: error: --kubelet-binary {notgo}: not a Go binary (no Go build information)"),
    (["--kubelet-binary", "{script}"],
     "credprov: error: --kubelet-binary {script}: not an ELF file (not a Go binary for Linux)"),
    (["--kubelet-binary", "/dev/zero"],
     "credprov: error: --kubelet-binary /dev/zero: not a regular file"),
    (["--kubelet-binary", "/nonexistent/kubelet"],
     "credprov: error: --kubelet-binary /nonexistent/kubelet: No such file or directory"),
    (["--kubelet-binary", "{go124}", "--go-version", "1.26.6"],
     "credprov: error: --kubelet-binary and --go-version exclude each other: give one"),
    (["--kubelet-version", "1.34", "--go-version", "1.26.6"],
     "credprov: error: --kubelet-version and --go-version exclude each other: give one"),
    (["--kubelet-version", "kubelet"],
     "credprov: error: --kubelet-version: invalid Kubernetes version 'kubelet'"),
    (["--kubelet-version", "1.20"],
     "credprov: error: --kubelet-version: Kubernetes '1.20' is older than credprov's table"),
    (["--go-debug", "urlstrictcolons"],
     "credprov: error: --go-debug: invalid GODEBUG setting 'urlstrictcolons': want name=value"),
    (["--go-debug", "urlstrictcolons=2"],
     "credprov: error: --go-debug: invalid value '2' for GODEBUG setting urlstrictcolons"),
]  # fmt: skip


@pytest.mark.parametrize("argv, line", USAGE)
def test_usage_errors_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
    kubelets: dict[str, Path],
    colons_config: Path,
    argv: list[str],
    line: str,
) -> None:
    names = {k: str(v) for k, v in kubelets.items()}
    argv = [a.format(**names) for a in argv]
    code, out, err = run(capsys, "config", "validate", str(colons_config), *argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(line.format(**names)), err


def test_env_default_gives_way_to_a_kubelet_binary(
    capsys: pytest.CaptureFixture[str],
    kubelets: dict[str, Path],
    colons_config: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CREDPROV_GO_VERSION", "1.26.6")
    code, _, err = run(capsys, "config", "validate", str(colons_config))
    assert code == 1, err
    binary = str(kubelets["go124"])
    code, _, err = run(capsys, "config", "validate", str(colons_config), "--kubelet-binary", binary)
    assert code == 0, err


def _readme_go_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("# The kubelet as it was built")
    block = readme[start : readme.index("\n```", start)].replace("\\\n", " ")
    return [line.split()[1:] for line in block.splitlines() if re.match(r"credprov config", line)]


def test_readme_commands_run_as_written(
    capsys: pytest.CaptureFixture[str], kubelets: dict[str, Path]
) -> None:
    commands = _readme_go_commands()
    assert len(commands) == 3
    for argv in commands:
        argv = [
            str(kubelets["go124"])
            if a == "/usr/bin/kubelet"
            else str(ROOT / a)
            if a.startswith("config/")
            else a
            for a in argv
        ]
        code, _, err = run(capsys, *argv)
        assert code == 0, (argv, err)
        assert "Traceback" not in err
