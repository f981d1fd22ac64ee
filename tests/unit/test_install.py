"""``credprov install``: launchers in the bin dir, idempotence, refusal, and a real run."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from credprov import install as install_mod
from credprov.api import internal
from credprov.credentialprovider.plugin.exec import ExecPlugin
from credprov.install import InstallError, install, launcher_text
from credprov.sdk._launch import MARKER

V1 = "credentialprovider.kubelet.k8s.io/v1"

PLUGIN_SOURCE = textwrap.dedent(
    """
    from credprov.sdk import Response, run

    def provide(req, ctx):
        return Response({req.registry: ("robot", "pw")}, "Registry", "1h")

    def main():
        return run(provide, name="my-credential-provider", cache=True)
    """
)


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    src = tmp_path / "src"
    src.mkdir()
    (src / "my_sdk_plugin_mod.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.setattr(
        install_mod,
        "available_plugins",
        lambda: {"my-credential-provider": "my_sdk_plugin_mod:main"},
    )
    return str(src)


def test_launcher_starts_interpreter_directly_and_lean(plugin_module: str) -> None:
    text = launcher_text("my-credential-provider", "my_sdk_plugin_mod:main")
    first = text.splitlines()[0]
    assert first.startswith("#!/") and first.endswith(" -IS")
    assert MARKER in text and plugin_module in text


def test_install_idempotent_and_refuses_foreign_files(plugin_module: str, bin_dir: Path) -> None:
    (r,) = install(str(bin_dir))
    assert r.status == "installed"
    path = Path(r.path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert install(str(bin_dir))[0].status == "unchanged"
    path.write_text(path.read_text() + "# local edit\n")
    assert install(str(bin_dir))[0].status == "updated"
    path.write_text("#!/bin/sh\necho not ours\n")
    with pytest.raises(InstallError, match="was not written by credprov; use --force"):
        install(str(bin_dir))
    assert path.read_text() == "#!/bin/sh\necho not ours\n"
    assert install(str(bin_dir), force=True)[0].status == "updated"


def test_install_errors(plugin_module: str, tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="does not exist"):
        install(str(tmp_path / "missing"))
    (tmp_path / "b").mkdir()
    with pytest.raises(InstallError, match="unknown plugin"):
        install(str(tmp_path / "b"), ["nope"])


def test_installed_launcher_runs_and_warms(
    plugin_module: str, bin_dir: Path, tmp_path: Path
) -> None:
    (r,) = install(str(bin_dir))
    plugin = ExecPlugin(
        "my-credential-provider",
        r.path,
        V1,
        args=["-v", "2"],
        env=[internal.ExecEnvVar("CREDPROV_PLUGIN_CACHE_DIR", str(tmp_path / "cache"))],
    )
    req = internal.CredentialProviderRequest(image="r.io/team/app")
    first = plugin.run(req)
    assert plugin.decode(first.stdout).auth["r.io"].username == "robot"
    second = plugin.run(req)
    assert b"from the plugin cache" in second.stderr
    resp = plugin.decode(second.stdout)
    assert resp.cache_key_type == "Registry" and resp.cache_duration is not None
    assert os.listdir(tmp_path / "cache" / "my-credential-provider")


def test_cli_install_and_list(
    plugin_module: str, bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from credprov.cli.main import main

    assert main(["install", "--list"]) == 0
    assert "my-credential-provider" in capsys.readouterr().out
    assert main(["install", "--bin-dir", str(bin_dir)]) == 0
    assert "installed:" in capsys.readouterr().out
    assert main(["install"]) == 1
    assert "--bin-dir is required" in capsys.readouterr().err
