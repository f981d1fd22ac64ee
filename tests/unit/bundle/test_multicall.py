"""The one list of plugins and the bundle runtime's names, against every place that repeats
them in another language.

``credprov.bundle._multicall`` holds the plugin list (:data:`PLUGINS`), the bundle's tools
(:data:`TOOLS`), the runtime's name and the one install prefix. ``pyproject.toml`` (console
scripts and the ``credprov.plugins`` entry points that ``credprov install`` reads), the
bundle build and the two shell scripts (``install.sh``, ``image_entrypoint.sh``) must say
the same; each comparison below fails when one of them drifts.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from credprov.bundle import _multicall, build

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPTS = ROOT / "credprov" / "bundle"


def shell_assignments(text: str) -> dict[str, str]:
    """``NAME=value`` lines of a shell script (plain words, no expansion)."""
    return dict(re.findall(r"^([a-z_]+)=([A-Za-z0-9._-]+)$", text, re.M))


def test_console_scripts_are_the_plugins_and_the_cli() -> None:
    scripts = dict(PYPROJECT["project"]["scripts"])
    assert scripts.pop("credprov") == "credprov.cli.main:entry"
    assert scripts == _multicall.PLUGINS


def test_entry_points_are_the_kubelet_plugins() -> None:
    entry_points = PYPROJECT["project"]["entry-points"]["credprov.plugins"]
    kubelet_plugins = {
        n: v for n, v in _multicall.PLUGINS.items() if n not in _multicall.NOT_KUBELET_PLUGINS
    }
    assert entry_points == kubelet_plugins
    assert set(_multicall.PLUGINS) >= _multicall.NOT_KUBELET_PLUGINS


def test_the_bundle_builds_every_plugin_from_its_package() -> None:
    assert list(build.PLUGIN_PACKAGES) == list(_multicall.PLUGINS)
    for packages in build.PLUGIN_PACKAGES.values():
        for package in packages:
            assert (ROOT / "plugins" / package / "__init__.py").is_file(), package
    assert build.select_plugins(()) == tuple(_multicall.PLUGINS)


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "install.sh",
            {
                "runtime_name": _multicall.RUNTIME_NAME,
                "supported_prefix": _multicall.NAME_PREFIX,
            },
        ),
        (
            "image_entrypoint.sh",
            {
                "supported_prefix": _multicall.NAME_PREFIX,
                "doctor_tool": "doctor",
                "validate_config_tool": "validate-config",
            },
        ),
    ],
)
def test_the_shell_scripts_use_the_runtimes_names(script: str, expected: dict[str, str]) -> None:
    text = (SCRIPTS / script).read_text()
    assigned = shell_assignments(text)
    assert {k: assigned.get(k) for k in expected} == expected
    tools = {v for k, v in assigned.items() if k.endswith("_tool")}
    assert tools <= set(_multicall.TOOLS)
    # the prefix is spelled once, in its assignment; patterns and messages use the variable
    assert text.count(_multicall.NAME_PREFIX + ")") == 0
    assert (
        re.findall(rf"\$bundle/(?!\$)({'|'.join(map(re.escape, _multicall.TOOLS))})\b", text) == []
    )


def test_the_entrypoint_names_every_tool() -> None:
    assigned = shell_assignments((SCRIPTS / "image_entrypoint.sh").read_text())
    assert {v for k, v in assigned.items() if k.endswith("_tool")} == set(_multicall.TOOLS)


def test_shell_assignments() -> None:
    text = 'x=1\nsupported_prefix=credprov-\n  indented=no\nquoted="no"\n'
    assert shell_assignments(text) == {"x": "1", "supported_prefix": "credprov-"}
