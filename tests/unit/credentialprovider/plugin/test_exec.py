"""Plugin execution with real subprocess fake plugins (``ExecPlugin``)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from credprov._go.durations import SECOND
from credprov.api import internal
from credprov.credentialprovider.plugin.exec import ExecPlugin, PluginError
from credprov.credentialprovider.plugin.metrics import Metrics
from tests.conftest import CANARY, install_fake_plugin

V1 = "credentialprovider.kubelet.k8s.io/v1"
REQ = internal.CredentialProviderRequest(image="test.registry.io/foobar")


def make(bin_dir: Path, mode: str = "ok", api_version: str = V1, **env: str) -> ExecPlugin:
    path = install_fake_plugin(bin_dir, "fake")
    env_vars = [
        internal.ExecEnvVar("FAKE_MODE", mode),
        internal.ExecEnvVar("FAKE_PASSWORD", CANARY),
    ]
    env_vars += [internal.ExecEnvVar(k, v) for k, v in env.items()]
    return ExecPlugin(
        name="fake",
        path=str(path),
        api_version=api_version,
        env=env_vars,
        timeout_ns=5 * SECOND,
        metrics=Metrics(),
    )


def test_success_decodes_response(bin_dir: Path) -> None:
    plugin = make(bin_dir, FAKE_CACHE_DURATION="1m")
    resp = plugin.exec(REQ)
    assert resp.cache_key_type == "Registry"
    assert resp.cache_duration == 60 * SECOND
    assert resp.auth == {"test.registry.io": internal.AuthConfig("user", CANARY)}


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [
        (
            "credentialprovider.kubelet.k8s.io/v1",
            '{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
            '"image":"test.registry.io/foobar","serviceAccountToken":"tok",'
            '"serviceAccountAnnotations":{"a":"1","b":"\\u003c2\\u003e"}}\n',
        ),
        (
            "credentialprovider.kubelet.k8s.io/v1beta1",
            '{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1",'
            '"image":"test.registry.io/foobar"}\n',
        ),
        (
            "credentialprovider.kubelet.k8s.io/v1alpha1",
            '{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1",'
            '"image":"test.registry.io/foobar"}\n',
        ),
    ],
    ids=["v1", "v1beta1-drops-sa", "v1alpha1-drops-sa"],
)
def test_stdin_is_exactly_the_kubelet_bytes(
    bin_dir: Path, tmp_path: Path, api_version: str, expected: str
) -> None:
    out = tmp_path / "stdin.json"
    plugin = make(bin_dir, api_version=api_version, FAKE_STDIN_OUT=str(out))
    req = internal.CredentialProviderRequest(
        image="test.registry.io/foobar",
        service_account_token="tok",
        service_account_annotations={"b": "<2>", "a": "1"},
    )
    plugin.exec(req)
    assert out.read_text() == expected


def test_config_env_overrides_host_env(bin_dir: Path) -> None:
    plugin = make(bin_dir, FAKE_USERNAME="from-config")
    plugin.base_environ = {"FAKE_USERNAME": "from-host", "PATH": "/usr/bin:/bin"}
    resp = plugin.exec(REQ)
    assert resp.auth["test.registry.io"].username == "from-config"


def test_host_env_is_passed(bin_dir: Path) -> None:
    plugin = make(bin_dir)
    plugin.base_environ = {"FAKE_USERNAME": "from-host"}
    assert plugin.exec(REQ).auth["test.registry.io"].username == "from-host"


def test_args_are_passed(bin_dir: Path, tmp_path: Path) -> None:
    script = bin_dir / "args-plugin"
    script.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        'printf \'{"kind":"CredentialProviderResponse","apiVersion":"%s","cacheKeyType":"Image",'
        '"auth":{"r.io":{"username":"%s","password":""}}}\' "$1" "$2"\n'
    )
    script.chmod(0o755)
    plugin = ExecPlugin("args-plugin", str(script), V1, args=[V1, "arg-user"])
    assert plugin.exec(REQ).auth["r.io"].username == "arg-user"


@pytest.mark.parametrize(
    ("mode", "env", "message"),
    [
        (
            "bad-json",
            {},
            "error reading GVK from response: couldn't get version/kind; json parse error: "
            "invalid character 'h' in literal true (expecting 'r')",
        ),
        (
            "ok",
            {"FAKE_API_VERSION": "credentialprovider.kubelet.k8s.io/v1beta1"},
            "apiVersion from credential plugin response did not match expected "
            "apiVersion:credentialprovider.kubelet.k8s.io/v1, actual "
            "apiVersion:credentialprovider.kubelet.k8s.io/v1beta1",
        ),
        ("wrong-kind", {}, "error decoding credential provider plugin response from stdout"),
        ("unknown-field", {}, "error decoding credential provider plugin response from stdout"),
        ("no-kind", {}, "error decoding credential provider plugin response from stdout"),
        (
            "ok",
            {"FAKE_CACHE_DURATION": "ten minutes"},
            "error decoding credential provider plugin response from stdout",
        ),
    ],
    ids=["bad-json", "wrong-api-version", "wrong-kind", "unknown-field", "no-kind", "bad-duration"],
)
def test_bad_responses(bin_dir: Path, mode: str, env: dict[str, str], message: str) -> None:
    plugin = make(bin_dir, mode, **env)
    with pytest.raises(PluginError) as err:
        plugin.exec(REQ)
    if mode == "bad-json":
        assert str(err.value).startswith("error reading GVK from response: couldn't get")
    else:
        assert str(err.value) == message
    assert CANARY not in str(err.value)


def test_decode_detail_is_kept_for_tooling(bin_dir: Path) -> None:
    plugin = make(bin_dir, "unknown-field")
    with pytest.raises(PluginError) as err:
        plugin.exec(REQ)
    assert 'unknown field "auth[test.registry.io].token"' in err.value.detail or (
        "unknown field" in err.value.detail
    )


def test_exit_1_carries_stderr_and_counts_error(bin_dir: Path) -> None:
    plugin = make(bin_dir, "exit1")
    with pytest.raises(PluginError) as err:
        plugin.exec(REQ)
    assert str(err.value) == (
        "error execing credential provider plugin fake for image test.registry.io/foobar: "
        "exit status 1: plugin failed: no credentials for you"  # stderr folded to one line
    )
    assert plugin.metrics is not None
    text = plugin.metrics.exposition().decode()
    assert 'kubelet_credential_provider_plugin_errors_total{plugin_name="fake"} 1.0' in text
    assert 'kubelet_credential_provider_plugin_duration_count{plugin_name="fake"} 1.0' in text


def test_service_account_token_redacted_from_plugin_stderr(bin_dir: Path) -> None:
    plugin = make(bin_dir, "exit1-echo")
    request = dataclasses.replace(REQ, service_account_token=CANARY)
    with pytest.raises(PluginError) as err:
        plugin.exec(request)
    assert "plugin failed on request" in str(err.value)
    assert "<redacted>" in str(err.value)
    assert CANARY not in str(err.value)


def test_timeout_kills_whole_process_group(bin_dir: Path) -> None:
    plugin = make(bin_dir, "hang")
    plugin.timeout_ns = SECOND // 2
    start = time.monotonic()
    with pytest.raises(PluginError) as err:
        plugin.exec(REQ)
    assert time.monotonic() - start < 5
    assert str(err.value).startswith(
        "error execing credential provider plugin fake for image test.registry.io/foobar: "
        "context deadline exceeded"
    )


def test_50mb_of_stdout_is_bounded(bin_dir: Path) -> None:
    plugin = make(bin_dir, "big-stdout", FAKE_MB="50")
    with pytest.raises(PluginError) as err:
        plugin.exec(REQ)
    assert "stdout exceeded" in str(err.value)


def test_missing_binary_at_exec_time(tmp_path: Path) -> None:
    plugin = ExecPlugin("gone", str(tmp_path / "gone"), V1)
    with pytest.raises(PluginError) as err:
        plugin.exec(REQ)
    assert "fork/exec" in str(err.value)
    assert "no such file or directory" in str(err.value)


def test_unknown_api_version_is_refused_before_exec(bin_dir: Path) -> None:
    plugin = make(bin_dir, api_version="credentialprovider.kubelet.k8s.io/v2")
    with pytest.raises(ValueError, match="invalid apiVersion"):
        plugin.exec(REQ)


def test_response_round_trip_matches_go_encoding() -> None:
    from credprov.api.exec import encode_response

    resp = internal.CredentialProviderResponse(
        cache_key_type="Image",
        cache_duration=3600 * SECOND,
        auth={"b.io": internal.AuthConfig("u", "p&"), "a.io": internal.AuthConfig("", "")},
    )
    body = encode_response(resp, V1)
    assert body == (
        b'{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
        b'"cacheKeyType":"Image","cacheDuration":"1h0m0s","auth":{"a.io":{"username":"","password":""},'
        b'"b.io":{"username":"u","password":"p\\u0026"}}}\n'
    )
    assert json.loads(body)["auth"]["b.io"]["password"] == "p&"


def test_invalid_cache_key_type_from_real_plugin_drops_response(bin_dir: Path) -> None:
    from credprov.base.clock import FakeClock
    from credprov.credentialprovider.plugin.provider import PluginProvider

    plugin = make(bin_dir, FAKE_CACHE_KEY_TYPE="Repository")
    cfg = internal.CredentialProvider(
        name="fake",
        match_images=("*.registry.io",),
        default_cache_duration=60 * SECOND,
        api_version=V1,
    )
    provider = PluginProvider(cfg, plugin, clock=FakeClock())
    res = provider.provide("test.registry.io/foobar")
    assert res.auth == {}
    assert (
        res.error == 'credential provider plugin did not return a valid cacheKeyType: "Repository"'
    )
    assert len(provider.cache) == 0
