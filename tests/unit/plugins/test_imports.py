"""Plugins import credprov only through its plugin toolkit: ``credprov.sdk`` (and
``credprov.version`` for ``__version__``). The docker-credential-helper bridge, which runs
the kubelet engine itself, is the one exception (its module docstring says why)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ALLOWED = ("credprov.sdk", "credprov.version")
#: plugin file -> why it may import the library
BRIDGES = {
    "plugins/credprov_dockerhelper/docker_helper.py": "runs the kubelet engine as a docker "
    "credential helper",
}


def library_imports(root: Path) -> dict[str, set[str]]:
    """``credprov`` modules each plugin file imports beyond :data:`ALLOWED`."""
    found: dict[str, set[str]] = {}
    for path in sorted((root / "plugins").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # "from credprov import x" imports credprov.x (or a name of credprov's)
                prefix = node.module + "." if node.module == "credprov" else ""
                names = [prefix + a.name for a in node.names] if prefix else [node.module]
            for name in names:
                if name.split(".")[0] != "credprov" or rel in BRIDGES:
                    continue
                if not any(name == a or name.startswith(a + ".") for a in ALLOWED):
                    found.setdefault(rel, set()).add(name)
    return found


def test_plugins_import_only_the_sdk() -> None:
    assert library_imports(ROOT) == {}


def test_a_library_import_is_found(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "p").mkdir(parents=True)
    (tmp_path / "plugins" / "p" / "m.py").write_text(
        "from credprov.sdk import run\nimport credprov.version\n"
        "def f():\n    from credprov._go.durations import SECOND\n"
        "from credprov import __version__\n"
    )
    assert library_imports(tmp_path) == {
        "plugins/p/m.py": {"credprov._go.durations", "credprov.__version__"}
    }
