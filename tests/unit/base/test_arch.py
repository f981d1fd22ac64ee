"""One architecture table (``credprov.base.arch``): consistent, and the only one.

Five hand-written tables once named architectures (the doctor's, the ELF reader's, the
bundle layout's, the cross build's and the installer image's) and drifted apart; a literal
that lists two architecture names anywhere else in ``credprov/`` or ``plugins/`` fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from credprov.base import arch
from credprov.bundle import layout

ROOT = Path(__file__).resolve().parents[3]

#: Every spelling the table holds (Go's and the kernel's).
SPELLINGS = {a.go for a in arch.ARCHES if a.go} | {u for a in arch.ARCHES for u in a.unames}


def test_every_name_names_one_architecture() -> None:
    e_machines = [a.e_machine for a in arch.ARCHES]
    gos = [a.go for a in arch.ARCHES if a.go]
    unames = [u for a in arch.ARCHES for u in a.unames]
    assert len(set(e_machines)) == len(e_machines)
    assert len(set(gos)) == len(gos)
    assert len(set(unames)) == len(unames)


@pytest.mark.parametrize(
    ("lookup", "key", "go", "machine"),
    [
        (arch.by_e_machine, 62, "amd64", "x86_64"),
        (arch.by_e_machine, 183, "arm64", "aarch64"),
        (arch.by_uname, "amd64", "amd64", "x86_64"),
        (arch.by_uname, "aarch64", "arm64", "aarch64"),
        (arch.by_go, "386", "386", "i386"),
        (arch.by_e_machine, 258, None, "loongarch64"),
    ],
)
def test_lookups(lookup: object, key: object, go: str | None, machine: str) -> None:
    found = lookup(key)  # type: ignore[operator]
    assert (found.go, found.machine) == (go, machine)


def test_bundles_are_made_for_amd64_and_arm64() -> None:
    assert arch.BUNDLED == layout.ARCHES == {"amd64", "arm64"}
    assert [layout.machine_of(a) for a in sorted(arch.BUNDLED)] == ["x86_64", "aarch64"]
    assert layout.go_arch("x86_64") == layout.go_arch("amd64") == "amd64"


def architecture_tables(root: Path, folders: tuple[str, ...] = ("credprov", "plugins")) -> list:
    """``path:line`` of every literal (dict, set, list, tuple) naming two or more
    architectures, outside ``credprov/base/arch.py``."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == "credprov/base/arch.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Dict):
                    items = [*node.keys, *node.values]
                elif isinstance(node, ast.Set | ast.List | ast.Tuple):
                    items = list(node.elts)
                else:
                    continue
                names = {
                    i.value
                    for i in items
                    if isinstance(i, ast.Constant) and isinstance(i.value, str)
                }
                if len(names & SPELLINGS) >= 2:
                    found.append(f"{rel}:{node.lineno}")
    return found


def test_no_second_architecture_table() -> None:
    assert architecture_tables(ROOT) == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('_MULTIARCH = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}\n', True),
        ('_MACHINES = {62: ("x86-64", ("x86_64", "amd64"))}\n', True),
        ('ARCHES = frozenset(("amd64", "arm64"))\n', True),
        ('if machine == "x86_64":\n    tags = ("a", "b")\n', False),
    ],
)
def test_a_second_table_is_found(tmp_path: Path, source: str, found: bool) -> None:
    (tmp_path / "credprov").mkdir()
    (tmp_path / "credprov" / "t.py").write_text(source)
    assert bool(architecture_tables(tmp_path, ("credprov",))) == found
