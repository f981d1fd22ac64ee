"""Plugins import credprov only through its plugin toolkit: ``credprov.sdk`` (and
``credprov.version`` for ``__version__``). The docker-credential-helper bridge, which runs
the kubelet engine itself, is the one exception (its module docstring says why)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.sdk.test_imports import imported_modules

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
        if rel in BRIDGES:
            continue
        for name in imported_modules(path):
            # The root package itself comes with any credprov import; its names do not.
            if name.split(".")[0] != "credprov" or name == "credprov":
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
