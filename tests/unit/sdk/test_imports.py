"""What ``credprov.sdk`` may import: the standard library and credprov's foundation.

The SDK is on every plugin's warm path, and the import-linter contract in pyproject.toml
lets it import ``credprov.errors``, ``credprov.base`` and ``credprov._go``. That is only
lean if those three import nothing but the standard library: checked here on their source.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import credprov.sdk
from tests.conftest import modules_loaded_by

ROOT = Path(__file__).resolve().parents[3]
FOUNDATION = ("credprov.errors", "credprov.base", "credprov._go", "credprov.imageauth")

#: module file -> third-party packages it may import, and why
EXCEPTIONS = {
    # go-yaml's rules on top of PyYAML's scanner; loaded only when a YAML document is decoded
    # (credprov._go.decode), which the SDK never does.
    "credprov/_go/goyaml.py": {"yaml"},
}
#: the interpreter's own SHA-256 modules (credprov.base.hashing), under their names per release
BUILTIN = {"_sha256", "_sha2"}


def imported_modules(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, at any depth (functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            if node.module == "credprov":  # "from credprov import x": credprov.x
                found.update(f"credprov.{alias.name}" for alias in node.names)
    return found


def foreign_imports(root: Path) -> dict[str, set[str]]:
    """Imports of the foundation's modules that are neither the standard library nor the
    foundation itself (nor listed in :data:`EXCEPTIONS`)."""
    bad: dict[str, set[str]] = {}
    for package in FOUNDATION:
        base = root / package.replace(".", "/")
        files = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
        for path in files:
            rel = path.relative_to(root).as_posix()
            allowed = EXCEPTIONS.get(rel, set())
            for name in imported_modules(path):
                top = name.split(".")[0]
                if top == "credprov":
                    ok = name == "credprov" or any(
                        name == f or name.startswith(f + ".") for f in FOUNDATION
                    )
                else:
                    ok = (
                        top in sys.stdlib_module_names
                        or top in BUILTIN
                        or top == "__future__"
                        or top in allowed
                    )
                if not ok:
                    bad.setdefault(rel, set()).add(name)
    return bad


def test_the_foundation_imports_only_the_standard_library() -> None:
    assert foreign_imports(ROOT) == {}


def test_a_foreign_import_is_found(tmp_path: Path) -> None:
    (tmp_path / "credprov" / "base").mkdir(parents=True)
    (tmp_path / "credprov" / "_go").mkdir()
    (tmp_path / "credprov" / "imageauth").mkdir()
    (tmp_path / "credprov" / "errors.py").write_text("import json\n")
    (tmp_path / "credprov" / "base" / "x.py").write_text(
        "def f():\n    import requests\n    from credprov.api import exec\n"
    )
    assert foreign_imports(tmp_path) == {"credprov/base/x.py": {"requests", "credprov.api"}}


def test_importing_the_sdk_loads_only_the_standard_library_and_the_foundation() -> None:
    out = modules_loaded_by("import credprov.sdk")
    credprov_modules = {m for m in out if m.split(".")[0] == "credprov"}
    assert credprov_modules <= {"credprov", "credprov.errors"} | {
        m for m in out if m.startswith(("credprov.sdk", "credprov._go", "credprov.base"))
    }
    others = {m for m in out if m.split(".")[0] != "credprov"}
    assert {m.split(".")[0] for m in others} <= set(sys.stdlib_module_names)


@pytest.mark.parametrize("name", sorted(credprov.sdk._LAZY))
def test_every_lazy_name_resolves(name: str) -> None:
    assert getattr(credprov.sdk, name) is not None
    assert name in dir(credprov.sdk)


def test_every_lazy_name_is_public() -> None:
    assert set(credprov.sdk._LAZY) <= set(credprov.sdk.__all__)


def test_public_names_are_listed_once() -> None:
    assert len(set(credprov.sdk.__all__)) == len(credprov.sdk.__all__)
