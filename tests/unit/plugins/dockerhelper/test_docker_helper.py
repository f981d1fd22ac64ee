"""The Docker credential helper bridge, both ways.

* ``docker-credential-helper-provider`` (kubelet plugin → ``docker-credential-NAME get``),
  driven in-process through ``credprov.sdk.run`` against fake helper shell scripts;
* ``docker-credential-credprov`` (Docker helper → kubelet plugins), driven in-process
  through its ``main`` against the fake kubelet plugin, plus a few runs of the installed
  console scripts.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from credprov_dockerhelper import docker_helper, provider
from credprov_dockerhelper.provider_main import OPTIONS

from credprov.sdk import EXIT_ERROR, EXIT_OK, run
from tests.conftest import CANARY, install_fake_plugin, write_config
from tests.conftest import provider as provider_entry

G = "credentialprovider.kubelet.k8s.io"
VENV_BIN = Path(sys.executable).parent
NOT_FOUND = "credentials not found in native keychain"


# -- fake Docker credential helpers -----------------------------------------------------------


def make_helper(directory: Path, body: str, name: str = "fake") -> Path:
    """A ``docker-credential-NAME`` shell script (sh starts in a millisecond)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"docker-credential-{name}"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def store_helper(directory: Path, known: dict[str, tuple[str, str]], log: Path) -> Path:
    """A helper that knows ``known`` (server URL → (user, secret)) and logs each call."""
    cases = "".join(
        f"  '{url}') printf '%s' '{json.dumps({'ServerURL': url, 'Username': u, 'Secret': s})}';;\n"
        for url, (u, s) in known.items()
    )
    return make_helper(
        directory,
        f'url=$(cat)\necho "$1 $url" >> "{log}"\ncase "$url" in\n{cases}'
        f"  *) echo '{NOT_FOUND}'; exit 1;;\nesac\n",
    )


@pytest.fixture
def helper_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "helpers"
    d.mkdir()
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    return d


def request(image: str = "r.io/team/app") -> bytes:
    return json.dumps(
        {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", "image": image}
    ).encode()


def call_provider(
    argv: list[str], image: str = "r.io/team/app"
) -> tuple[int, dict[str, Any] | None, str]:
    out = io.BytesIO()
    err = io.StringIO()
    code = run(
        provider.provide,
        name="docker-credential-helper-provider",
        options=OPTIONS,
        argv=argv,
        stdin=io.BytesIO(request(image)),
        stdout=out,
        stderr=err,
    )
    raw = out.getvalue()
    return code, (json.loads(raw) if raw.strip() else None), err.getvalue()


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


# -- docker-credential-helper-provider ---------------------------------------------------------


def test_provider_returns_helper_credentials(helper_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    store_helper(helper_dir, {"r.io": ("alice", CANARY)}, log)
    code, resp, err = call_provider(["--helper", "fake"])
    assert code == EXIT_OK, err
    assert resp == {
        "kind": "CredentialProviderResponse",
        "apiVersion": f"{G}/v1",
        "cacheKeyType": "Registry",
        "cacheDuration": "5m0s",
        "auth": {"r.io": {"username": "alice", "password": CANARY}},
    }
    assert calls(log) == ["get r.io"]
    assert CANARY not in err


def test_provider_asks_docker_hub_as_docker_does(helper_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    store_helper(helper_dir, {"https://index.docker.io/v1/": ("hubuser", CANARY)}, log)
    code, resp, err = call_provider(["--helper", "fake"], image="docker.io/library/nginx")
    assert code == EXIT_OK, err
    assert resp is not None
    assert resp["auth"] == {"docker.io": {"username": "hubuser", "password": CANARY}}
    assert calls(log) == ["get https://index.docker.io/v1/"]


def test_provider_tries_https_form_second(helper_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    store_helper(helper_dir, {"https://r.io": ("bob", CANARY)}, log)
    code, resp, _ = call_provider(["--helper", "fake"])
    assert code == EXIT_OK and resp is not None
    assert resp["auth"]["r.io"]["username"] == "bob"
    assert calls(log) == ["get r.io", "get https://r.io"]


def test_provider_not_found_is_a_cacheable_empty_answer(helper_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    store_helper(helper_dir, {"other.io": ("x", "y")}, log)
    code, resp, err = call_provider(["--helper", "fake", "--cache-duration", "1m"])
    assert code == EXIT_OK, err
    assert resp == {
        "kind": "CredentialProviderResponse",
        "apiVersion": f"{G}/v1",
        "cacheKeyType": "Registry",
        "cacheDuration": "1m0s",
    }  # no "auth": the kubelet's encoder omits an empty map
    assert len(calls(log)) == 2


def test_provider_empty_record_counts_as_not_found(helper_dir: Path) -> None:
    make_helper(
        helper_dir, 'cat >/dev/null\necho \'{"ServerURL":"r.io","Username":"","Secret":""}\'\n'
    )
    code, resp, _ = call_provider(["--helper", "fake"])
    assert code == EXIT_OK and resp is not None and not resp.get("auth")


def test_provider_passes_identity_tokens_through(helper_dir: Path, tmp_path: Path) -> None:
    store_helper(helper_dir, {"r.io": ("<token>", CANARY)}, tmp_path / "log")
    code, resp, _ = call_provider(["--helper", "fake"])
    assert code == EXIT_OK and resp is not None
    assert resp["auth"]["r.io"] == {"username": "<token>", "password": CANARY}


def test_provider_garbage_output_fails_without_the_secret(helper_dir: Path) -> None:
    make_helper(helper_dir, f"cat >/dev/null\necho 'Username: u Secret: {CANARY}'\n")
    code, resp, err = call_provider(["--helper", "fake"])
    assert code == EXIT_ERROR and resp is None
    assert "not valid JSON" in err and CANARY not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "payload",
    ['["a"]', '{"Username": 1, "Secret": "x"}'],
    ids=["not-object", "non-string"],
)
def test_provider_rejects_malformed_records(helper_dir: Path, payload: str) -> None:
    make_helper(helper_dir, f"cat >/dev/null\necho '{payload}'\n")
    code, _, err = call_provider(["--helper", "fake"])
    assert code == EXIT_ERROR and "credential helper output" in err


def test_provider_helper_failure_quotes_stderr_not_stdout(helper_dir: Path) -> None:
    make_helper(
        helper_dir,
        "cat >/dev/null\n"
        f'echo \'{{"Username":"u","Secret":"{CANARY}"}}\'\n'
        f"echo 'keychain locked: {CANARY}' >&2\nexit 3\n",
    )
    code, _, err = call_provider(["--helper", "fake"])
    assert code == EXIT_ERROR
    assert "exited with status 3 for r.io: keychain locked: <redacted>" in err
    assert CANARY not in err


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_provider_kills_a_hanging_helper_and_its_children(helper_dir: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    make_helper(helper_dir, f"sleep 30 &\necho $! > {pidfile}\nsleep 30\n")
    start = time.monotonic()
    code, _, err = call_provider(["--helper", "fake", "--timeout", "300ms"])
    assert time.monotonic() - start < 3
    assert code == EXIT_ERROR and "timed out after 0.3s" in err
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def test_provider_answers_when_a_helper_leaves_a_child_holding_its_pipes(
    helper_dir: Path, tmp_path: Path
) -> None:
    # The helper answers and exits while a background child keeps stdout open: the answer
    # is taken after the short pipe grace (credprov.base.proc), not after --timeout.
    pidfile = tmp_path / "child.pid"
    make_helper(
        helper_dir,
        "cat >/dev/null\n"
        'echo \'{"Username":"u","Secret":"pw"}\'\n'
        f"sleep 30 &\necho $! > {pidfile}\nexit 0\n",
    )
    start = time.monotonic()
    code, resp, err = call_provider(["--helper", "fake", "--timeout", "20s"])
    assert time.monotonic() - start < 10
    assert code == EXIT_OK, err
    assert resp is not None and resp["auth"] == {"r.io": {"username": "u", "password": "pw"}}
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def test_provider_bounds_the_helper_output(helper_dir: Path) -> None:
    make_helper(helper_dir, "cat >/dev/null\nhead -c 3000000 /dev/zero\n")
    code, _, err = call_provider(["--helper", "fake"])
    assert code == EXIT_ERROR and "more than 1048576 bytes on stdout" in err


def test_provider_helper_path_and_templates(tmp_path: Path) -> None:
    log = tmp_path / "log"
    path = store_helper(tmp_path / "elsewhere", {"https://r.io/team/app": ("u", "pw")}, log)
    argv = ["--helper-path", str(path), "--server-url-format", "https://{image}"]
    code, resp, err = call_provider([*argv, "--cache-key-type", "Image"])
    assert code == EXIT_OK, err
    assert resp is not None and resp["cacheKeyType"] == "Image"
    assert resp["auth"] == {"r.io/team/app": {"username": "u", "password": "pw"}}
    assert calls(log) == ["get https://r.io/team/app"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no credential helper configured"),
        (["--helper", "missing"], "docker-credential-missing not found in PATH"),
        (["--helper", "../evil"], "invalid credential helper name"),
        (["--helper-path", "relative/helper"], "must be an absolute path"),
        (["--helper-path", "/nonexistent/helper"], "is not an executable file"),
        (["--helper", "fake", "--helper-path", "/bin/true"], "not both"),
        (["--helper", "fake", "--server-url-format", "{nope}"], "invalid --server-url-format"),
        (["--helper", "fake", "--server-url-format", "{image.x}"], "invalid --server-url"),
        (["--helper", "fake", "--cache-key-type", "Pod"], "invalid --cache-key-type"),
        (["--helper", "fake", "--cache-duration", "soon"], "invalid --cache-duration"),
        (["--helper", "fake", "--timeout", "0s"], "--timeout must be positive"),
    ],
)
def test_provider_configuration_errors(helper_dir: Path, argv: list[str], message: str) -> None:
    make_helper(helper_dir, "exit 0\n")
    code, resp, err = call_provider(argv)
    assert code == EXIT_ERROR and resp is None
    assert message in err, err


def test_provider_console_script(helper_dir: Path, tmp_path: Path) -> None:
    store_helper(helper_dir, {"r.io": ("alice", CANARY)}, tmp_path / "log")
    proc = subprocess.run(
        [str(VENV_BIN / "docker-credential-helper-provider"), "--helper", "fake"],
        input=request(),
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["auth"]["r.io"]["password"] == CANARY
    assert proc.stderr == b""


# -- docker-credential-credprov ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("server_url", "expected"),
    [
        ("127.0.0.1:5000", ("127.0.0.1:5000", "")),
        ("https://index.docker.io/v1/", ("docker.io", "")),
        ("registry-1.docker.io", ("docker.io", "")),
        ("docker.io", ("docker.io", "")),
        ("https://Registry.IO/v2/", ("registry.io", "")),
        ("http://registry.io/v2/team/app/", ("registry.io", "team/app")),
        ("registry.io/team?x=1", ("registry.io", "team")),
        ("  https://user@registry.io:443  \n", ("registry.io:443", "")),
        ("[::1]:5000", ("[::1]:5000", "")),
    ],
)
def test_normalize_server_url(server_url: str, expected: tuple[str, str]) -> None:
    assert docker_helper.normalize_server_url(server_url) == expected


@pytest.mark.parametrize("server_url", ["", "   ", "https://", "bad host!", "a b/c"])
def test_normalize_server_url_rejects(server_url: str) -> None:
    with pytest.raises(docker_helper.HelperError):
        docker_helper.normalize_server_url(server_url)


class Node:
    """A fake kubelet node: a config with the fake plugin, and the helper's environment."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.bin_dir = tmp_path / "plugins"
        install_fake_plugin(self.bin_dir, "fake")
        self.config = tmp_path / "config.json"
        self.stdin_out = tmp_path / "plugin-stdin.json"
        self.configure()

    def configure(self, match_images: list[str] | None = None, **env: str) -> None:
        plugin_env = {
            "FAKE_USERNAME": "kubelet-user",
            "FAKE_PASSWORD": CANARY,
            "FAKE_STDIN_OUT": str(self.stdin_out),
            **env,
        }
        write_config(
            self.config,
            [
                provider_entry(
                    "fake",
                    match_images=match_images or ["registry.io", "*.registry.io"],
                    env=plugin_env,
                )
            ],
        )

    def environ(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ["PATH"],
            docker_helper.ENV_CONFIG: str(self.config),
            docker_helper.ENV_BIN_DIR: str(self.bin_dir),
        }
        env.update(extra)
        return env

    def helper(
        self, *argv: str, stdin: str = "", **extra: str
    ) -> tuple[int, str, str, dict[str, Any] | None]:
        out = io.StringIO()
        err = io.StringIO()
        code = docker_helper.main(
            list(argv),
            stdin=io.BytesIO(stdin.encode()),
            stdout=out,
            stderr=err,
            environ=self.environ(**extra),
        )
        text = out.getvalue()
        doc = json.loads(text) if code == 0 and text.startswith("{") else None
        return code, text, err.getvalue(), doc

    def plugin_image(self) -> str:
        image: str = json.loads(self.stdin_out.read_text())["image"]
        return image


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_helper_get_answers_from_the_plugin(node: Node) -> None:
    code, _, err, doc = node.helper("get", stdin="registry.io")
    assert code == 0, err
    assert doc == {"ServerURL": "registry.io", "Username": "kubelet-user", "Secret": CANARY}
    assert err == ""
    assert node.plugin_image() == "registry.io"


@pytest.mark.parametrize(
    ("server_url", "image"),
    [
        ("https://registry.io/v2/", "registry.io"),
        ("mirror.registry.io\n", "mirror.registry.io"),
        ("https://registry.io/v1/team/app", "registry.io/team/app"),
    ],
)
def test_helper_get_server_url_forms(node: Node, server_url: str, image: str) -> None:
    code, _, err, doc = node.helper("get", stdin=server_url)
    assert code == 0, err
    assert doc is not None and doc["ServerURL"] == server_url.strip()
    assert node.plugin_image() == image


def test_helper_get_docker_hub(node: Node) -> None:
    node.configure(match_images=["docker.io"])
    code, _, err, doc = node.helper("get", stdin="https://index.docker.io/v1/")
    assert code == 0, err
    assert doc is not None and doc["Secret"] == CANARY
    assert node.plugin_image() == "docker.io"


def test_helper_get_not_found(node: Node) -> None:
    code, out, err, _ = node.helper("get", stdin="other.io")
    assert (code, out, err) == (1, NOT_FOUND + "\n", "")
    assert not node.stdin_out.exists()  # no provider matched, none ran


@pytest.mark.parametrize("mode", ["exit1", "bad-json", "unknown-field"])
def test_helper_plugin_failure_is_one_line_without_secret(node: Node, mode: str) -> None:
    node.configure(FAKE_MODE=mode)
    code, out, err, _ = node.helper("get", stdin="registry.io")
    assert code == 1
    assert err.startswith("docker-credential-credprov: ") and err.count("\n") == 1
    assert "Traceback" not in err and CANARY not in err and CANARY not in out
    assert NOT_FOUND not in out  # a failure, not "not found": the client must not go anonymous


def test_helper_kubelet_order_pull_secret_then_node_config(node: Node, tmp_path: Path) -> None:
    dockerconfig = {"auths": {"registry.io": {"username": "node-user", "password": "node-pw"}}}
    node_config = tmp_path / "node-config.json"
    node_config.write_text(json.dumps(dockerconfig))
    secret_auths = {"auths": {"registry.io": {"username": "secret-user", "password": "s-pw"}}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "regcred", "namespace": "default"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(secret_auths).encode()).decode()},
    }
    secret_file = tmp_path / "secret.yaml"
    secret_file.write_text(json.dumps(secret))

    env = {docker_helper.ENV_NODE_DOCKER_CONFIG: str(node_config)}
    _, _, _, doc = node.helper("get", stdin="registry.io", **env)
    assert doc is not None and doc["Username"] == "node-user"
    env[docker_helper.ENV_PULL_SECRET] = str(secret_file)
    _, _, _, doc = node.helper("get", stdin="registry.io", **env)
    assert doc is not None and doc["Username"] == "secret-user"


def test_helper_without_plugins(node: Node, tmp_path: Path) -> None:
    node_config = tmp_path / "node-config.json"
    node_config.write_text(json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": "dTpw"}}}))
    env = {docker_helper.ENV_CONFIG: "", docker_helper.ENV_NODE_DOCKER_CONFIG: str(node_config)}
    code, _, err, doc = node.helper("get", stdin="https://index.docker.io/v1/", **env)
    assert code == 0, err
    assert doc is not None and (doc["Username"], doc["Secret"]) == ("u", "p")


@pytest.mark.parametrize(
    ("env", "stdin", "message"),
    [
        ({docker_helper.ENV_CONFIG: "/nonexistent/config.yaml"}, "registry.io", "/nonexistent"),
        ({docker_helper.ENV_BIN_DIR: "/nonexistent/bin"}, "registry.io", "/nonexistent/bin"),
        ({docker_helper.ENV_PULL_SECRET: "/nonexistent/s.yaml"}, "registry.io", "pull secret"),
        ({docker_helper.ENV_NODE_DOCKER_CONFIG: "/nonexistent/c"}, "registry.io", "node docker"),
        ({docker_helper.ENV_PLUGIN_TIMEOUT: "soon"}, "registry.io", "CREDPROV_PLUGIN_TIMEOUT"),
        ({docker_helper.ENV_GO_VERSION: "1.25"}, "registry.io", "invalid CREDPROV_GO_VERSION"),
        ({docker_helper.ENV_ACTIVE: "1"}, "registry.io", "refusing to run"),
        ({}, "", "no server URL on stdin"),
        ({}, "bad host!", "invalid server URL"),
    ],
)
def test_helper_errors_are_one_line(
    node: Node, env: dict[str, str], stdin: str, message: str
) -> None:
    code, out, err, _ = node.helper("get", stdin=stdin, **env)
    assert code == 1
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == err  # stdout is not a terminal: the message is repeated there for clients


def test_helper_bad_node_config_does_not_leak(node: Node, tmp_path: Path) -> None:
    node_config = tmp_path / "node-config.json"
    node_config.write_text(f'{{"auths": {{"registry.io": {{"auth": "{CANARY}"}}}}}}')
    code, out, err, _ = node.helper(
        "get", stdin="registry.io", **{docker_helper.ENV_NODE_DOCKER_CONFIG: str(node_config)}
    )
    assert code == 1 and "base64" in err and CANARY not in err + out


def test_helper_other_actions(node: Node) -> None:
    assert node.helper("list")[:2] == (0, "{}\n")
    code, out, _, _ = node.helper("version")
    assert code == 0 and out.startswith("docker-credential-credprov (credprov) ")
    for action in ("store", "erase"):
        code, _, err, _ = node.helper(action, stdin='{"ServerURL":"r.io"}')
        assert code == 1 and f"{action} is not supported" in err
    code, _, err, _ = node.helper()
    assert code == 1 and err.startswith("usage:")
    code, out, _, _ = node.helper("--help")
    assert code == 0 and "CREDPROV_PROVIDER_CONFIG" in out


def test_helper_internal_errors_show_only_the_type(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(server_url: str, environ: object) -> None:
        raise RuntimeError(CANARY)

    monkeypatch.setattr(docker_helper, "lookup", boom)
    code, out, err, _ = node.helper("get", stdin="registry.io")
    assert code == 1 and "internal error (RuntimeError)" in err and CANARY not in err + out


# -- both ways, through the installed console scripts ------------------------------------------


def _link_provider(bin_dir: Path) -> None:
    (bin_dir / "docker-credential-helper-provider").symlink_to(
        VENV_BIN / "docker-credential-helper-provider"
    )


def test_round_trip_helper_provider_inside_credprov_helper(
    node: Node, helper_dir: Path, tmp_path: Path
) -> None:
    # docker-credential-credprov → kubelet plugin docker-credential-helper-provider →
    # docker-credential-fake: an existing helper, reached through the kubelet's config.
    store_helper(helper_dir, {"registry.io": ("from-helper", CANARY)}, tmp_path / "log")
    _link_provider(node.bin_dir)
    write_config(
        node.config,
        [
            provider_entry(
                "docker-credential-helper-provider",
                match_images=["registry.io"],
                args=["--helper", "fake"],
            )
        ],
    )
    code, _, err, doc = node.helper("get", stdin="registry.io")
    assert code == 0, err
    assert doc == {"ServerURL": "registry.io", "Username": "from-helper", "Secret": CANARY}


def test_loop_is_refused_quickly(node: Node, tmp_path: Path) -> None:
    # A kubelet config whose plugin runs docker-credential-credprov itself must not recurse.
    _link_provider(node.bin_dir)
    write_config(
        node.config,
        [
            provider_entry(
                "docker-credential-helper-provider",
                match_images=["registry.io"],
                args=["--helper-path", str(VENV_BIN / "docker-credential-credprov")],
            )
        ],
    )
    start = time.monotonic()
    proc = subprocess.run(
        [str(VENV_BIN / "docker-credential-credprov"), "get"],
        input=b"registry.io",
        capture_output=True,
        env=node.environ(),
        timeout=60,
    )
    assert time.monotonic() - start < 20
    assert proc.returncode == 1
    assert b"refusing to run inside a credential provider plugin" in proc.stderr
    assert proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("go_version", "answered"), [("1.25.1", True), ("1.25.5", False), (None, False)]
)
def test_helper_follows_the_kubelets_go(node: Node, go_version: str | None, answered: bool) -> None:
    # "[a-z]" in a host parses only for kubelets built with Go before 1.24.8 / 1.25.2.
    node.configure(match_images=["reg.[a-z].io"])
    env = {docker_helper.ENV_GO_VERSION: go_version} if go_version else {}
    code, _, err, answer = node.helper("get", stdin="reg.a.io", **env)
    if answered:
        assert code == 0 and answer is not None and answer["Username"] == "kubelet-user"
    else:
        assert code == 1 and 'invalid port ".io" after host' in err, err
