"""Whole-tree checks of credprov's shape: no import cycles, short functions, one error root.

import-linter (pyproject) keeps the layers; what a layers contract cannot see is checked
here. Each check is a function over the tree that returns what it found, tested both on
the real tree and on a small tree made to fail, so that a check that silently stopped
finding anything would fail too.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


# -- import cycles ---------------------------------------------------------------------------


#: The packages whose import graph is checked: credprov and each plugin under plugins/.
PACKAGES = ("credprov", *sorted(p.parent.name for p in (ROOT / "plugins").glob("*/__init__.py")))


def import_graph(packages: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports directly, TYPE_CHECKING imports
    included (a type checker needs them resolved as much as the interpreter does)."""
    graph = grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)
    return {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}


def import_cycles(*packages: str) -> list[list[str]]:
    """The module cycles of ``packages``: every strongly connected component of more than
    one module in their import graph. Each component is sorted, the list too."""
    return _strongly_connected(import_graph(packages))


def package_cycles(*packages: str) -> list[list[str]]:
    """The cycles between sibling packages and modules at every level of ``packages``
    (``credprov.sdk`` <-> ``credprov.credentialprovider``, though no single module cycle
    joins them) and between the top-level packages themselves (a plugin importing another
    that imports it back). At each package, every module below it counts as its child on
    the way (``credprov.sdk._runtime`` as ``credprov.sdk``); the package's own
    ``__init__`` is the parent, not a sibling."""
    edges = import_graph(packages)
    parents = {m.rpartition(".")[0] for m in edges if "." in m} | {""}
    found: list[list[str]] = []
    for parent in sorted(parents):
        prefix = f"{parent}." if parent else ""

        def child(module: str, prefix: str = prefix) -> str | None:
            if not module.startswith(prefix) or module == prefix[:-1]:
                return None
            return prefix + module[len(prefix) :].split(".")[0]

        collapsed: dict[str, set[str]] = {}
        for module, imported in edges.items():
            source = child(module)
            if source is None:
                continue
            targets = {child(m) for m in imported} - {None, source}
            collapsed.setdefault(source, set()).update(t for t in targets if t)
        found.extend(_strongly_connected(collapsed))
    return sorted(found)


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is deeper than Python's recursion limit
    would comfortably allow); components of one node are left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in edges:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def test_credprov_and_the_plugins_have_no_module_cycle() -> None:
    cycles = import_cycles(*PACKAGES)
    assert not cycles, "import cycles (move the shared piece down a layer):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_credprov_and_the_plugins_have_no_package_cycle() -> None:
    cycles = package_cycles(*PACKAGES)
    assert not cycles, "package cycles (move the shared piece below both):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def _write_tree(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {
                "cyc_a/__init__.py": "",
                "cyc_a/x.py": "from cyc_a import y\n",
                "cyc_a/y.py": "from cyc_a.sub import z\n",
                "cyc_a/sub/__init__.py": "",
                "cyc_a/sub/z.py": "import cyc_a.x\n",
                "cyc_a/free.py": "import cyc_a.x\n",
            },
            [["cyc_a.sub.z", "cyc_a.x", "cyc_a.y"]],
            id="across-packages",
        ),
        pytest.param(
            {
                "cyc_b/__init__.py": "from cyc_b.clock import Clock as Clock\n",
                "cyc_b/clock.py": "import cyc_b\nclass Clock: ...\n",
            },
            [["cyc_b", "cyc_b.clock"]],
            id="package-and-its-child",  # import-linter's acyclic_siblings misses this one
        ),
        pytest.param(
            {
                "cyc_c/__init__.py": "",
                "cyc_c/chain.py": (
                    "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from cyc_c.provider import R\n"
                ),
                "cyc_c/provider.py": "from cyc_c.chain import TYPE_CHECKING\n",
            },
            [["cyc_c.chain", "cyc_c.provider"]],
            id="type-checking-import",
        ),
        pytest.param(
            {
                "cyc_d/__init__.py": "",
                "cyc_d/low.py": "",
                "cyc_d/high.py": "from cyc_d import low\n",
            },
            [],
            id="acyclic",
        ),
    ],
)
def test_import_cycles_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], expected: list
) -> None:
    _write_tree(tmp_path, files)
    monkeypatch.syspath_prepend(str(tmp_path))
    package = next(iter(files)).split("/")[0]
    try:
        assert import_cycles(package) == expected
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == package]:
            del sys.modules[name]


@pytest.mark.parametrize(
    ("files", "module_cycles", "package_level"),
    [
        pytest.param(
            {
                "cyp_s/__init__.py": "",
                "cyp_s/config.py": (
                    "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from cyp_s.schema import M\n"
                ),
                "cyp_s/schema.py": "from cyp_s.config import _quote\n",
                "cyp_s/main.py": "from cyp_s import config\n",
            },
            [["cyp_s.config", "cyp_s.schema"]],
            [["cyp_s.config", "cyp_s.schema"]],
            id="plugin-module-cycle",  # static's schema <-> config, as it was
        ),
        pytest.param(
            {
                "cyp_p/__init__.py": "",
                "cyp_p/sdk/__init__.py": "",
                "cyp_p/sdk/run.py": "from cyp_p.core import keyring\n",
                "cyp_p/sdk/launch.py": "",
                "cyp_p/core/__init__.py": "",
                "cyp_p/core/keyring.py": "",
                "cyp_p/core/install.py": "from cyp_p.sdk import launch\n",
            },
            [],
            [["cyp_p.core", "cyp_p.sdk"]],
            id="package-cycle",  # sdk <-> credentialprovider, as it was: no module cycle
        ),
        pytest.param(
            {
                "cyp_a/__init__.py": "",
                "cyp_a/main.py": "from cyp_b import util\n",
                "cyp_a/x.py": "",
                "cyp_b/__init__.py": "",
                "cyp_b/util.py": "",
                "cyp_b/helper.py": "import cyp_a.x\n",
            },
            [],
            [["cyp_a", "cyp_b"]],
            id="between-top-level-packages",  # a plugin and another, or credprov
        ),
        pytest.param(
            {
                "cyp_d/__init__.py": "from cyp_d.sub.low import f\n",
                "cyp_d/sub/__init__.py": "",
                "cyp_d/sub/low.py": "def f(): ...\n",
                "cyp_d/high.py": "import cyp_d\nfrom cyp_d.sub import low\n",
            },
            [],
            [],
            id="acyclic",  # a package's __init__ importing its children is no cycle
        ),
    ],
)
def test_package_cycles_are_found(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    module_cycles: list,
    package_level: list,
) -> None:
    _write_tree(tmp_path, files)
    monkeypatch.syspath_prepend(str(tmp_path))
    packages = sorted({name.split("/")[0] for name in files})
    try:
        assert import_cycles(*packages) == module_cycles
        assert package_cycles(*packages) == package_level
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] in packages]:
            del sys.modules[name]


# -- one error root --------------------------------------------------------------------------


#: Public exception classes (``module.Class``) that may stay outside CredprovError, with the
#: reason (a stale entry fails).
ERROR_ROOT_ALLOWLIST: dict[str, str] = {
    "credprov.doctor.periodic.RunTimeout": "a signal (BaseException, as KeyboardInterrupt)",
    "credprov.doctor.periodic.Terminated": "a signal (BaseException, as KeyboardInterrupt)",
}

# Run in a child process: importing every module (the CLI's, the plugins', the CRI stubs)
# must not change what the tests in this process see in sys.modules.
_FIND_EXCEPTIONS = """
import importlib, json, pkgutil, sys
from credprov.errors import CredprovError
found = {}
for top in sys.argv[1:]:
    package = importlib.import_module(top)
    names = [top] + [n for _, n, _ in pkgutil.walk_packages(package.__path__, top + ".")]
    for name in names:
        if name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is not importing it
        for attr, obj in vars(importlib.import_module(name)).items():
            if (isinstance(obj, type) and issubclass(obj, BaseException)
                    and obj.__module__ == name and not attr.startswith("_")):
                found[f"{name}.{obj.__qualname__}"] = issubclass(obj, CredprovError)
print(json.dumps(found))
"""


def public_exceptions(packages: Iterable[str], path: Iterable[Path] = ()) -> dict[str, bool]:
    """Every public exception class defined in ``packages`` (all their modules imported, in
    a child process with ``path`` first on sys.path) -> whether it derives from
    CredprovError. Classes named with a leading underscore are private control flow."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [*map(str, path), str(ROOT), str(ROOT / "plugins"), env.get("PYTHONPATH", "")]
    )
    out = subprocess.run(
        [sys.executable, "-c", _FIND_EXCEPTIONS, *packages],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    ).stdout
    found: dict[str, bool] = json.loads(out)
    return found


def test_every_public_exception_derives_from_credprov_error() -> None:
    found = public_exceptions(PACKAGES)
    outside = sorted(n for n, rooted in found.items() if not rooted)
    missing = [n for n in outside if n not in ERROR_ROOT_ALLOWLIST]
    assert not missing, (
        "public exceptions outside credprov.errors.CredprovError (derive from the package's "
        "base, keeping ValueError/OSError where callers catch those): " + ", ".join(missing)
    )
    stale = [n for n in ERROR_ROOT_ALLOWLIST if n not in outside]
    assert not stale, "remove from ERROR_ROOT_ALLOWLIST: " + ", ".join(stale)


def test_public_exceptions_are_found(tmp_path: Path) -> None:
    _write_tree(
        tmp_path,
        {
            "exc_a/__init__.py": "class Rooted(__import__('credprov.errors').errors.GoError): ...\n",
            "exc_a/_impl.py": "class Loose(ValueError): ...\nclass _Private(Exception): ...\n",
            "exc_a/__main__.py": "raise SystemExit('never run')\n",
        },
    )
    assert public_exceptions(["exc_a"], [tmp_path]) == {
        "exc_a.Rooted": True,
        "exc_a._impl.Loose": False,
    }


# -- short functions -------------------------------------------------------------------------

MAX_FUNCTION_LINES = 80

#: ``path:qualified name`` -> why it may be longer (a stale entry fails).
LONG_FUNCTION_ALLOWLIST: dict[str, str] = {}


def long_functions(root: Path, folders: Iterable[str], limit: int) -> dict[str, int]:
    """Every function (methods and nested functions too) of the ``*.py`` files under
    ``folders`` of ``root`` longer than ``limit`` lines, ``def`` line to last line, as
    ``path:Class.function`` -> its length."""
    found: dict[str, int] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            stack: list[tuple[ast.AST, str]] = [(tree, "")]
            while stack:
                node, prefix = stack.pop()
                for child in ast.iter_child_nodes(node):
                    name = prefix
                    if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        name = f"{prefix}{child.name}."
                        length = (child.end_lineno or child.lineno) - child.lineno + 1
                        if not isinstance(child, ast.ClassDef) and length > limit:
                            found[f"{rel}:{name[:-1]}"] = length
                    stack.append((child, name))
    return found


def test_functions_are_at_most_80_lines() -> None:
    found = long_functions(ROOT, ("credprov", "plugins"), MAX_FUNCTION_LINES)
    too_long = {k: n for k, n in found.items() if k not in LONG_FUNCTION_ALLOWLIST}
    assert not too_long, (
        f"functions over {MAX_FUNCTION_LINES} lines (split them by meaning): "
        + ", ".join(f"{k} ({n})" for k, n in sorted(too_long.items()))
    )
    stale = [k for k in LONG_FUNCTION_ALLOWLIST if k not in found]
    assert not stale, "remove from LONG_FUNCTION_ALLOWLIST: " + ", ".join(stale)


def _function(name: str, lines: int, indent: str = "") -> str:
    """Source of a function ``lines`` long (its ``def`` line included)."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_long_functions_are_found(tmp_path: Path) -> None:
    _write_tree(
        tmp_path,
        {
            "pkg/mod.py": (
                _function("fits", 80)
                + "class C:\n"
                + _function("method", 81, "    ")
                + "async "
                + _function("outer", 2)
                + _function("inner", 81, "    ")
            ),
            "pkg/sub/deep.py": _function("long", 200),
        },
    )
    assert long_functions(tmp_path, ["pkg"], 80) == {
        "pkg/mod.py:C.method": 81,
        "pkg/mod.py:outer": 83,
        "pkg/mod.py:outer.inner": 81,
        "pkg/sub/deep.py:long": 200,
    }


# -- docstrings ------------------------------------------------------------------------------

#: Files whose public definitions may lack a docstring, with the reason (a stale entry fails).
DOCSTRING_ALLOWLIST: dict[str, str] = {}


def missing_docstrings(root: Path, folders: Iterable[str]) -> list[str]:
    """Public modules, classes and functions (methods of public classes included; nested
    functions are not public) under ``folders`` of ``root`` without a docstring, as
    ``path`` for a module and ``path:Class.name`` otherwise."""
    missing: list[str] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            if ast.get_docstring(tree) is None:
                missing.append(rel)
            stack: list[tuple[ast.AST, str]] = [(tree, "")]
            while stack:
                node, prefix = stack.pop()
                for child in ast.iter_child_nodes(node):
                    if not isinstance(
                        child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                    ) or child.name.startswith("_"):
                        continue
                    if ast.get_docstring(child) is None:
                        missing.append(f"{rel}:{prefix}{child.name}")
                    if isinstance(child, ast.ClassDef):
                        stack.append((child, f"{prefix}{child.name}."))
    return sorted(missing)


def test_public_definitions_have_docstrings() -> None:
    missing = [
        m
        for m in missing_docstrings(ROOT, ["credprov", "plugins"])
        if m.split(":")[0] not in DOCSTRING_ALLOWLIST
    ]
    assert not missing, "public definitions without a docstring: " + ", ".join(missing)
    stale = [
        f
        for f in DOCSTRING_ALLOWLIST
        if not any(m.startswith(f) for m in missing_docstrings(ROOT, [f]))
    ]
    assert not stale, "remove from DOCSTRING_ALLOWLIST: " + ", ".join(stale)


def test_missing_docstrings_are_found(tmp_path: Path) -> None:
    _write_tree(
        tmp_path,
        {
            "pkg/__init__.py": '"""Documented."""\n',
            "pkg/bare.py": (
                "def public(): ...\n"
                "def _private(): ...\n"
                "class C:\n"
                '    """Documented."""\n'
                "    def method(self): ...\n"
                "    def _helper(self): ...\n"
                "    def outer(self):\n"
                '        """Documented."""\n'
                "        def nested(): ...\n"
                "class _Hidden:\n"
                "    def method(self): ...\n"
            ),
        },
    )
    assert missing_docstrings(tmp_path, ["pkg"]) == [
        "pkg/bare.py",
        "pkg/bare.py:C.method",
        "pkg/bare.py:public",
    ]


# -- tests mirror the tree -------------------------------------------------------------------

#: Modules with logic that have no ``tests/unit/<package>/test_<module>.py`` yet (their tests
#: live elsewhere: in a file named after a behaviour, or in the package's other files). The
#: list only shrinks: a module listed here that gains its test file fails the test until it
#: is removed from the list, and a new module without one fails it too.
UNTESTED_ALLOWLIST = frozenset(
    (
        "credprov/_go/decode.py",
        "credprov/_go/fmt.py",
        "credprov/_go/godebug.py",
        "credprov/_go/goenv.py",
        "credprov/_go/goyaml.py",
        "credprov/_go/json.py",
        "credprov/_go/singleflight.py",
        "credprov/_go/version.py",
        "credprov/api/config.py",
        "credprov/api/internal.py",
        "credprov/api/meta.py",
        "credprov/api/objects.py",
        "credprov/api/specs.py",
        "credprov/base/boundedtoml.py",
        "credprov/base/clock.py",
        "credprov/base/fileio.py",
        "credprov/base/logs.py",
        "credprov/base/proc.py",
        "credprov/base/redact.py",
        "credprov/base/report.py",
        "credprov/bundle/_cx_driver.py",
        "credprov/bundle/_initscript.py",
        "credprov/bundle/build.py",
        "credprov/bundle/layout.py",
        "credprov/bundle/oci.py",
        "credprov/bundle/tarball.py",
        "credprov/bundle/validate_config.py",
        "credprov/cli/_output.py",
        "credprov/cli/bundle_cmd.py",
        "credprov/cli/config_cmd.py",
        "credprov/cli/credentials_cmd.py",
        "credprov/cli/doctor_cmd.py",
        "credprov/cli/main.py",
        "credprov/cli/parser.py",
        "credprov/cli/plugin_test_cmd.py",
        "credprov/cmdoptions.py",
        "credprov/credentialprovider/cache.py",
        "credprov/credentialprovider/chain.py",
        "credprov/credentialprovider/objects.py",
        "credprov/credentialprovider/plugin/probe.py",
        "credprov/doctor/binaries.py",
        "credprov/doctor/checks.py",
        "credprov/doctor/context.py",
        "credprov/doctor/flags.py",
        "credprov/doctor/hints.py",
        "credprov/doctor/kep4412.py",
        "credprov/doctor/plugin_runs.py",
        "credprov/doctor/pullrecords.py",
        "credprov/errors.py",
        "credprov/kubelet/_scenario_models.py",
        "credprov/kubelet/node.py",
        "credprov/kubelet/podspec.py",
        "credprov/kubelet/scenario.py",
        "credprov/kubelet/simulation.py",
        "credprov/nodeauth/_audience.py",
        "credprov/nodeauth/_csitranslation.py",
        "credprov/nodeauth/_csr.py",
        "credprov/nodeauth/_labels.py",
        "credprov/nodeauth/_objects.py",
        "credprov/nodeauth/_semantic.py",
        "credprov/nodeauth/identity.py",
        "credprov/nodeauth/nodeapi.py",
        "credprov/nodeauth/types.py",
        "credprov/pullmanager/inspect.py",
        "credprov/pullmanager/interfaces.py",
        "credprov/pullmanager/locks.py",
        "credprov/sdk/_cache.py",
        "credprov/sdk/_errors.py",
        "credprov/sdk/_launch.py",
        "credprov/testing/runtime.py",
        "plugins/credprov_acr/_http.py",
        "plugins/credprov_acr/cloud.py",
        "plugins/credprov_acr/credentials.py",
        "plugins/credprov_acr/identity_bindings.py",
        "plugins/credprov_acr/main.py",
        "plugins/credprov_acr/plugin.py",
        "plugins/credprov_dockerhelper/provider.py",
        "plugins/credprov_dockerhelper/provider_main.py",
        "plugins/credprov_ecr/_aws.py",
        "plugins/credprov_ecr/_retry.py",
        "plugins/credprov_ecr/plugin.py",
        "plugins/credprov_gcp/_http.py",
        "plugins/credprov_gcp/dockercfg.py",
        "plugins/credprov_gcp/errors.py",
        "plugins/credprov_gcp/main.py",
        "plugins/credprov_gcp/metadata.py",
        "plugins/credprov_gcp/plugin.py",
        "plugins/credprov_gcp/registries.py",
        "plugins/credprov_gcp/settings.py",
        "plugins/credprov_gcp/tokens.py",
        "plugins/credprov_gcp/workload_identity.py",
        "plugins/credprov_static/config.py",
        "plugins/credprov_static/fields.py",
        "plugins/credprov_static/main.py",
        "plugins/credprov_static/schema.py",
    )
)


def mirror_test_path(module: str) -> str:
    """Where the tests of ``module`` (a path under the root) live:
    ``credprov/<package>/<module>.py`` -> ``tests/unit/<package>/test_<module>.py`` (a private
    module's leading underscore dropped), ``plugins/credprov_<name>/<module>.py`` ->
    ``tests/unit/plugins/<name>/test_<module>.py``."""
    parts = module.split("/")
    if parts[0] == "plugins":
        parts = ["plugins", parts[1].removeprefix("credprov_"), *parts[2:]]
    else:
        parts = parts[1:]
    name = parts[-1].removesuffix(".py").lstrip("_")
    return "/".join(["tests", "unit", *parts[:-1], f"test_{name}.py"])


def modules_with_logic(root: Path, folders: Iterable[str] = ("credprov", "plugins")) -> list[str]:
    r"""The modules under ``folders`` that define a function or a class (package
    ``__init__``\ s and ``__main__``\ s aside: they re-export or start, and are tested
    through their package)."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if path.name in ("__init__.py", "__main__.py"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            if any(isinstance(node, kinds) for node in ast.walk(tree)):
                found.append(path.relative_to(root).as_posix())
    return found


def mirror_problems(root: Path, allowlist: frozenset[str], folders: Iterable[str]) -> list[str]:
    """What breaks the mirror rule: a module without its test file that the allowlist does
    not name, a listed module that has one (shrink the list), a listed module gone."""
    modules = modules_with_logic(root, folders)
    problems = []
    for module in modules:
        has_file = (root / mirror_test_path(module)).is_file()
        if not has_file and module not in allowlist:
            problems.append(f"{module}: no {mirror_test_path(module)}")
        elif has_file and module in allowlist:
            problems.append(f"{module}: has {mirror_test_path(module)}; remove it from the list")
    problems += [f"{m}: listed but gone" for m in sorted(allowlist - set(modules))]
    return problems


def test_tests_mirror_the_package_tree() -> None:
    assert mirror_problems(ROOT, UNTESTED_ALLOWLIST, ("credprov", "plugins")) == []


@pytest.mark.parametrize(
    ("files", "allowlist", "expected"),
    [
        pytest.param(
            {"credprov/base/clock.py": "def now(): ...\n"},
            set(),
            ["credprov/base/clock.py: no tests/unit/base/test_clock.py"],
            id="a-module-without-tests",
        ),
        pytest.param(
            {
                "credprov/sdk/_cache.py": "class Cache: ...\n",
                "tests/unit/sdk/test_cache.py": "",
            },
            {"credprov/sdk/_cache.py"},
            ["credprov/sdk/_cache.py: has tests/unit/sdk/test_cache.py; remove it from the list"],
            id="a-listed-module-gains-tests",
        ),
        pytest.param(
            {"plugins/credprov_static/config.py": "def load(): ...\n"},
            {"plugins/credprov_static/config.py", "credprov/gone.py"},
            ["credprov/gone.py: listed but gone"],
            id="a-listed-module-is-gone",
        ),
        pytest.param(
            {
                "plugins/credprov_static/plugin.py": "def provide(): ...\n",
                "tests/unit/plugins/static/test_plugin.py": "",
                "credprov/version.py": "__version__ = '1'\n",
                "credprov/cli/__init__.py": "def f(): ...\n",
            },
            set(),
            [],
            id="mirrored-or-without-logic",
        ),
    ],
)
def test_mirror_problems_are_found(
    tmp_path: Path, files: dict[str, str], allowlist: set[str], expected: list[str]
) -> None:
    _write_tree(tmp_path, files)
    assert mirror_problems(tmp_path, frozenset(allowlist), ("credprov", "plugins")) == expected
