"""``credprov explain`` with the runtime's mirror configuration: the route, the credentials
that reach each host, JSON, and one-line usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from credprov.cli.main import main

CONFIG = """apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: hub
  matchImages: ["docker.io"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    certs = tmp_path / "certs.d"
    (certs / "docker.io").mkdir(parents=True)
    (certs / "docker.io" / "hosts.toml").write_text(
        'server = "https://registry-1.docker.io"\n'
        '[host."https://mirror.internal"]\n  capabilities = ["pull", "resolve"]\n'
    )
    return config, certs


def test_without_mirror_options_the_output_is_unchanged(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    code, out, _ = run(capsys, "explain", "nginx", "--config", str(setup[0]))
    assert code == 0
    assert out == (
        "image nginx is requested from plugins as docker.io/library/nginx\n"
        "provider hub: MATCHES\n"
        "  + docker.io: pattern matches image\n"
    )


def test_containerd_mirror_gets_the_upstream_credentials(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    config, certs = setup
    code, out, _ = run(
        capsys, "explain", "nginx", "--config", str(config), "--containerd-config-path", str(certs)
    )
    assert code == 0
    lines = out.splitlines()[3:]
    assert lines[0] == (
        f"runtime containerd ({certs}/docker.io/hosts.toml): the runtime will contact "
        "mirror.internal (mirror; resolve, pull) then registry-1.docker.io (registry; resolve, pull)"
    )
    assert (
        "the kubelet hands the credentials it finds for docker.io/library/nginx (provider hub)"
        in lines[1]
    )
    assert lines[2].startswith(
        "  ! mirror.internal: gets the credentials for docker.io (provider hub)"
    )
    assert (
        lines[3]
        == "  + registry-1.docker.io: gets the kubelet's credentials for docker.io (provider hub)"
    )


def test_mirror_own_credentials_in_node_docker_config_are_never_handed(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], tmp_path: Path
) -> None:
    config, certs = setup
    config.write_text(CONFIG.replace('"docker.io"', '"quay.io"'))
    docker = tmp_path / "config.json"
    docker.write_text(json.dumps({"auths": {"mirror.internal": {"auth": "dTpw"}}}))
    code, out, _ = run(
        capsys, "explain", "nginx", "--config", str(config), "--containerd-config-path",
        str(certs), "--node-docker-config", str(docker), "-o", "json",
    )  # fmt: skip
    assert code == 0
    runtime = json.loads(out)["runtimes"][0]
    assert [c["host"] for c in runtime["contacts"]] == ["mirror.internal", "registry-1.docker.io"]
    mirror = runtime["credentials"][0]
    assert mirror["handed"] == [] and mirror["own"] == ["node docker config"]
    assert not mirror["ok"] and "never looked up" in mirror["message"]
    assert "dTpw" not in out


def test_crio_registries_conf(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], tmp_path: Path
) -> None:
    conf = tmp_path / "registries.conf"
    conf.write_text(
        '[[registry]]\nprefix = "docker.io/library"\nlocation = "docker.io/library"\n'
        '[[registry.mirror]]\nlocation = "mirror.internal/hub"\n'
    )
    code, out, _ = run(
        capsys, "explain", "nginx:1", "--config", str(setup[0]), "--registries-conf", str(conf)
    )
    assert code == 0
    assert "runtime cri-o" in out
    assert "mirror.internal (mirror; resolve, pull) then docker.io (registry; resolve, pull)" in out


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (
            ["--containerd-config-path", "/nonexistent-credprov"],
            "/nonexistent-credprov: not a directory",
        ),
        (
            ["--registries-conf", "/nonexistent-credprov.conf"],
            "/nonexistent-credprov.conf: no such file",
        ),
    ],
)
def test_bad_mirror_options_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], extra: list[str], says: str
) -> None:
    code, _, err = run(capsys, "explain", "nginx", "--config", str(setup[0]), *extra)
    assert code == 2
    assert err.strip().count("\n") == 0
    assert says in err


def test_bad_hosts_toml_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path]
) -> None:
    config, certs = setup
    (certs / "docker.io" / "hosts.toml").write_text("server = [\n")
    code, _, err = run(
        capsys, "explain", "nginx", "--config", str(config), "--containerd-config-path", str(certs)
    )
    assert code == 2
    assert "invalid TOML" in err and err.strip().count("\n") == 0


def test_readme_mirror_example(capsys: pytest.CaptureFixture[str]) -> None:
    """README's "Registry mirrors" command, run on the examples in config/ as written."""
    root = Path(__file__).resolve().parents[3]
    readme = (root / "README.md").read_text()
    start = readme.index("credprov explain registry.example.com/team/app:v1")
    argv = readme[start : readme.index("\n```", start)].replace("\\\n", " ").split()[1:]
    assert "--containerd-config-path" in argv and "--registries-conf" in argv
    argv = [str(root / a) if a.startswith("config/") else a for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert (
        out.count(
            "the runtime will contact mirror.example.com (mirror; resolve, pull) then "
            "registry.example.com (registry; resolve, pull)"
        )
        == 2
    )
    assert out.count("! mirror.example.com: gets the credentials for registry.example.com") == 2


@pytest.mark.parametrize(
    ("hosts_toml", "says"),
    [
        ("x = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested more than 32 deep"),
        ("x = " + "7" * 5_000 + "\n", "a number of more than 64 digits"),
        ("x" + ".a" * 20_000 + " = 1\n", "a key of more than 32 parts"),
    ],
)
def test_hostile_hosts_toml_is_exit_2_not_70(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, Path], hosts_toml: str, says: str
) -> None:
    """Issue 32, "Why" 1: RecursionError/ValueError from tomllib were exit 70."""
    config, certs = setup
    (certs / "docker.io" / "hosts.toml").write_text(hosts_toml)
    code, _, err = run(
        capsys, "explain", "nginx", "--config", str(config), "--containerd-config-path", str(certs)
    )
    assert code == 2
    assert says in err and "hosts.toml" in err and err.strip().count("\n") == 0
