"""End to end: real ``skopeo`` reads a private image from a real registry with credentials
that come only from credprov, through ``docker-credential-credprov``.

skopeo's auth file holds nothing but ``{"credHelpers": {"127.0.0.1:PORT": "credprov"}}``;
HOME and XDG_RUNTIME_DIR are empty private directories. skopeo runs
``docker-credential-credprov get``, which loads a kubelet ``CredentialProviderConfig``
(from the environment) whose one plugin is a tiny credprov SDK plugin returning the
registry's account. Without the helper, with a wrong password, or when no plugin matches,
the same ``skopeo inspect`` is refused by the registry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import provider as provider_entry
from tests.conftest import write_config
from tests.e2e.registry import PrivateImage, clean_env

pytestmark = pytest.mark.e2e

VENV_BIN = Path(sys.executable).parent
PLUGIN_NAME = "e2e-registry-provider"

#: A tiny plugin on the credprov SDK: the account comes from the provider's ``env`` in the
#: kubelet config, and every request is logged so the test can tell credprov answered.
PLUGIN_SOURCE = '''#!{python}
"""e2e-registry-provider: the registry's account from the provider config's env."""
import os
import sys

from credprov.sdk import Response, run


def provide(request, ctx):
    with open(os.environ["E2E_PLUGIN_LOG"], "a") as fh:
        fh.write(request.image + "\\n")
    account = (os.environ["E2E_USERNAME"], os.environ["E2E_PASSWORD"])
    return Response({{request.registry: account}}, "Registry", "1m")


sys.exit(run(provide, name="{name}"))
'''


class Node:
    """A node's credprov setup plus skopeo's private HOME and auth file."""

    def __init__(self, tmp_path: Path, image: PrivateImage) -> None:
        self.image = image
        self.bin_dir = tmp_path / "plugins"
        self.bin_dir.mkdir()
        plugin = self.bin_dir / PLUGIN_NAME
        plugin.write_text(PLUGIN_SOURCE.format(python=sys.executable, name=PLUGIN_NAME))
        plugin.chmod(0o755)
        self.config = tmp_path / "credential-provider-config.json"
        self.plugin_log = tmp_path / "plugin.log"
        self.authfile = tmp_path / "auth.json"
        self.home = tmp_path / "home"
        self.home.mkdir()

    def configure(self, password: str | None = None, match_images: list[str] | None = None) -> None:
        username, real_password = next(iter(self.image.registry.users.items()))
        write_config(
            self.config,
            [
                provider_entry(
                    PLUGIN_NAME,
                    match_images=match_images or [self.image.registry.address],
                    default_cache_duration="1m",
                    env={
                        "E2E_USERNAME": username,
                        "E2E_PASSWORD": real_password if password is None else password,
                        "E2E_PLUGIN_LOG": str(self.plugin_log),
                    },
                )
            ],
        )

    def skopeo_inspect(self, cred_helpers: bool = True) -> subprocess.CompletedProcess[str]:
        auth: dict[str, object] = {}
        if cred_helpers:
            auth["credHelpers"] = {self.image.registry.address: "credprov"}
        self.authfile.write_text(json.dumps(auth))
        env = clean_env(
            self.home,
            {
                # docker-credential-credprov is found on PATH, like on a node.
                "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
                "CREDPROV_PROVIDER_CONFIG": str(self.config),
                "CREDPROV_PROVIDER_BIN_DIR": str(self.bin_dir),
            },
        )
        return subprocess.run(
            [
                "skopeo",
                "inspect",
                "--authfile",
                str(self.authfile),
                "--tls-verify=false",  # plain HTTP on 127.0.0.1
                f"docker://{self.image.ref}",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    def plugin_requests(self) -> list[str]:
        return self.plugin_log.read_text().splitlines() if self.plugin_log.exists() else []


@pytest.fixture
def node(tmp_path: Path, private_registry_image: PrivateImage) -> Node:
    return Node(tmp_path, private_registry_image)


def _refused(proc: subprocess.CompletedProcess[str]) -> bool:
    text = proc.stderr.lower()
    return proc.returncode != 0 and ("unauthorized" in text or "authentication required" in text)


def test_skopeo_reads_the_private_image_with_credprov_credentials(node: Node) -> None:
    node.configure()
    proc = node.skopeo_inspect()
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["Digest"] == node.image.digest
    # The credentials came from the kubelet plugin, asked about the registry.
    assert node.image.registry.address in node.plugin_requests()
    password = next(iter(node.image.registry.users.values()))
    assert password not in proc.stdout + proc.stderr


def test_skopeo_is_refused_without_the_helper(node: Node) -> None:
    node.configure()
    proc = node.skopeo_inspect(cred_helpers=False)
    assert _refused(proc), proc.stderr
    assert node.plugin_requests() == []


def test_skopeo_is_refused_with_wrong_credentials_from_credprov(node: Node) -> None:
    wrong = "wrong-password-5be1d0"
    node.configure(password=wrong)
    proc = node.skopeo_inspect()
    assert _refused(proc), proc.stderr
    assert node.plugin_requests() != []
    assert wrong not in proc.stdout + proc.stderr


def test_skopeo_goes_anonymous_when_no_plugin_matches(node: Node) -> None:
    # The helper says "credentials not found": skopeo tries without credentials and the
    # registry refuses, rather than the helper failing the pull.
    node.configure(match_images=["registry.example.com"])
    proc = node.skopeo_inspect()
    assert _refused(proc), proc.stderr
    assert "docker-credential-credprov" not in proc.stderr
    assert node.plugin_requests() == []
