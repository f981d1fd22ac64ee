"""Each cloud plugin needs only its own SDK: a node on AWS has no google-auth or azure.

The other clouds' SDKs are made unimportable (``sys.modules[name] = None``) in a fresh
interpreter, then the plugin's handler module and everything it imports are loaded.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SDKS = {
    "ecr": ("boto3", "botocore"),
    "gcp": ("google", "requests"),
    "acr": ("azure", "msal"),
}

# requests is shared by the gcp and acr extras, so only block it for the AWS plugin.
SHARED = {"requests"}


@pytest.mark.parametrize("cloud", sorted(SDKS))
def test_plugin_imports_only_its_own_sdk(cloud: str) -> None:
    blocked = sorted(
        name
        for other, names in SDKS.items()
        if other != cloud
        for name in names
        if not (name in SHARED and cloud != "ecr")
    )
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        f"import credprov_{cloud}.main, credprov_{cloud}.plugin\n"
        "import pkgutil, importlib\n"
        f"import credprov_{cloud} as pkg\n"
        "for m in pkgutil.iter_modules(pkg.__path__):\n"
        "    importlib.import_module(pkg.__name__ + '.' + m.name)\n"
        "print('ok')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_credprov_core_imports_no_cloud_sdk() -> None:
    code = (
        "import sys\n"
        "import credprov.cli.main, credprov.credentialprovider.engine, credprov.sdk, credprov.pullmanager.manager\n"
        "loaded = sorted(n for n in ('boto3', 'botocore', 'google.auth', 'azure', 'msal')"
        " if n in sys.modules)\n"
        "print(loaded)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_plugins_never_import_the_tests() -> None:
    # Fakes live under tests/fakes/; a plugin that imported them would ship them.
    import ast
    from pathlib import Path

    plugins = Path(__file__).resolve().parents[3] / "plugins"
    offenders = []
    for path in sorted(plugins.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "tests" or n.startswith("tests.") for n in names):
                offenders.append(f"{path.relative_to(plugins)}:{node.lineno}")
    assert not offenders, offenders
