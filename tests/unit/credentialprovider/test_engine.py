"""The one assembly of a node's credential chain (``credprov.credentialprovider.engine``).

The CLI (``get-credentials``, ``ensure-image``), the library (``resolve_credentials``) and
the Docker credential helper all build their engine with ``node_engine`` and ask its chain;
none walks the sources by hand. Checked on the tree (a second assembly or a hand walk fails
here, with a planted tree to show the check finds one) and by behaviour.
"""

from __future__ import annotations

import ast
import base64
import json
from pathlib import Path

import pytest

from credprov.credentialprovider.engine import Engine, NodeSettings, node_engine
from credprov.credentialprovider.objects import ObjectsError
from credprov.credentialprovider.plugin.config import ConfigError

ROOT = Path(__file__).resolve().parents[3]

#: name -> the modules (paths under the root) that may use it: the chain's pieces are put
#: together and walked in one place only.
ASSEMBLY = {
    "register_credential_provider_plugins": {
        "credprov/credentialprovider/engine.py",
        "credprov/credentialprovider/plugin/registry.py",
    },
    "Engine": {"credprov/credentialprovider/engine.py"},
    "default_chain": {
        "credprov/credentialprovider/chain.py",
        "credprov/credentialprovider/engine.py",
    },
    "make_pull_secret_keyring": {
        "credprov/credentialprovider/chain.py",
        "credprov/imageauth/keyring.py",
    },
    "node_keyring": {
        "credprov/credentialprovider/chain.py",
        "credprov/credentialprovider/engine.py",
    },
}


def assembly_sites(root: Path, folders: tuple[str, ...] = ("credprov", "plugins")) -> list[str]:
    """``path: name`` for every use (a call, a name, an attribute; not an import or a
    docstring) of an :data:`ASSEMBLY` name outside the modules allowed to use it."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                name = (
                    node.id
                    if isinstance(node, ast.Name)
                    else node.attr
                    if isinstance(node, ast.Attribute)
                    else None
                )
                if name in ASSEMBLY and rel not in ASSEMBLY[name]:
                    found.append(f"{rel}: {name}")
    return sorted(set(found))


def test_the_chain_is_assembled_and_walked_in_one_place() -> None:
    assert assembly_sites(ROOT) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "def f(env):\n    return Engine(_providers(env), keyring)\n",
            ["plugins/p/helper.py: Engine"],
            id="a-second-assembly",
        ),
        pytest.param(
            "def f(engine, secrets, host):\n"
            "    creds = make_pull_secret_keyring(secrets).lookup(host)\n"
            "    return creds + engine.node_keyring.lookup(host)\n",
            ["plugins/p/helper.py: make_pull_secret_keyring", "plugins/p/helper.py: node_keyring"],
            id="walking-the-chain-by-hand",
        ),
        pytest.param(
            '"""Engine, default_chain"""\nfrom x import node_engine\nnode_engine(s).resolve(i)\n',
            [],
            id="asking-the-one-assembly",
        ),
    ],
)
def test_assembly_sites_are_found(tmp_path: Path, source: str, expected: list[str]) -> None:
    (tmp_path / "plugins" / "p").mkdir(parents=True)
    (tmp_path / "plugins" / "p" / "helper.py").write_text(source)
    assert assembly_sites(tmp_path, ("plugins",)) == expected


def _secret(host: str, user: str) -> dict:
    payload = {"auths": {host: {"username": user, "password": "pw"}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": user, "namespace": "default", "uid": user},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(payload).encode()).decode()},
    }


@pytest.fixture
def node_config(tmp_path: Path) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"auths": {"r.io": {"username": "node", "password": "pw"}}}))
    return str(path)


@pytest.mark.parametrize(
    ("ask", "expected"),
    [
        pytest.param(lambda e: e.resolve("r.io/team/app"), ["secret", "node"], id="image"),
        pytest.param(lambda e: e.resolve_registry("r.io"), ["secret", "node"], id="registry"),
        pytest.param(
            lambda e: e.resolve("r.io/team/app", [_secret("r.io", "own")]),
            ["own", "node"],
            id="a-lookup's-own-secrets",
        ),
        pytest.param(lambda e: e.resolve_registry("other.io"), [], id="no-match"),
    ],
)
def test_node_engine_asks_the_sources_in_kubelet_order(
    node_config: str, ask: object, expected: list[str]
) -> None:
    engine = node_engine(
        NodeSettings(node_docker_config=node_config, pull_secrets=[_secret("r.io", "secret")])
    )
    assert isinstance(engine, Engine)
    resolution = ask(engine)  # type: ignore[operator]
    assert [c.username for c in resolution.credentials] == expected


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        pytest.param(NodeSettings(config="c.yaml"), ConfigError, id="config-without-bin-dir"),
        pytest.param(NodeSettings(bin_dir="/bin"), ConfigError, id="bin-dir-without-config"),
        pytest.param(
            NodeSettings(node_docker_config="/nonexistent/config.json"),
            ObjectsError,
            id="unreadable-docker-config",
        ),
    ],
)
def test_node_engine_refuses_bad_settings(settings: NodeSettings, error: type) -> None:
    with pytest.raises(error) as info:
        node_engine(settings)
    assert "\n" not in str(info.value)
