"""ECR and ACR refuse an empty image with upstream's own text, as real processes.

Upstream's ``ecr-credential-provider`` and ``acr-credential-provider`` decode the request
(kind and apiVersion first), then refuse an empty image with ``image in plugin request was
empty`` (exit 1). The SDK refuses an empty image itself, with a generic text; these plugins
must still say upstream's line, and leave every other fault to the SDK.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from credprov.install import install
from tests.conftest import CANARY

pytestmark = pytest.mark.e2e

G = "credentialprovider.kubelet.k8s.io"
KIND = "CredentialProviderRequest"
PLUGINS = {
    "ecr-credential-provider": [],
    "acr-credential-provider": ["azure.json"],  # upstream's one positional argument
}
UPSTREAM = "image in plugin request was empty"

# request → the stderr line after "<plugin>: " (exit 1 in every case).
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "empty image": ({"kind": KIND, "apiVersion": f"{G}/v1", "image": ""}, UPSTREAM),
    "no image field": ({"kind": KIND, "apiVersion": f"{G}/v1"}, UPSTREAM),
    "null image": ({"kind": KIND, "apiVersion": f"{G}/v1", "image": None}, UPSTREAM),
    "empty image, v1beta1": ({"kind": KIND, "apiVersion": f"{G}/v1beta1", "image": ""}, UPSTREAM),
    "empty image with a token": (
        {"kind": KIND, "apiVersion": f"{G}/v1", "image": "", "serviceAccountToken": CANARY},
        UPSTREAM,
    ),
    # Faults found before the image is looked at keep the SDK's text.
    "empty image, wrong kind": (
        {"kind": "CredentialProviderResponse", "apiVersion": f"{G}/v1", "image": ""},
        'invalid request: unexpected kind "CredentialProviderResponse"; want ' + KIND,
    ),
    "empty image, unknown apiVersion": (
        {"kind": KIND, "apiVersion": f"{G}/v2", "image": ""},
        f'invalid request: unsupported apiVersion "{G}/v2"',
    ),
    "image not a string": (
        {"kind": KIND, "apiVersion": f"{G}/v1", "image": 5},
        "invalid request: request field image is not a string",
    ),
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    bin_dir = tmp_path_factory.mktemp("bin")
    return {r.name: Path(r.path) for r in install(str(bin_dir), list(PLUGINS))}


@pytest.mark.parametrize("name", list(PLUGINS))
@pytest.mark.parametrize(("doc", "line"), CASES.values(), ids=CASES.keys())
def test_empty_image(
    installed: dict[str, Path], tmp_path: Path, name: str, doc: dict[str, Any], line: str
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CREDPROV_PLUGIN_CACHE_DIR": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [str(installed[name]), *PLUGINS[name]],
        input=json.dumps(doc).encode(),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    err = proc.stderr.decode()
    assert (proc.returncode, proc.stdout) == (1, b""), err
    assert err.startswith(f"{name}: {line}"), err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert CANARY not in err
