"""A plugin's output closing before it exits is not a failure: wait for the exit (issue 11).

The kubelet runs a plugin with ``cmd.Run`` under a deadline: it reads stdout/stderr to their
end and then waits for the process. A plugin that is just ``exec cat response.json`` closes
its pipes a moment before it exits; killing it at end-of-output reported ``signal: killed``
for correct plugins.
"""

from __future__ import annotations

import concurrent.futures
import json
import stat
from pathlib import Path

import pytest

from credprov._go.durations import SECOND
from credprov.api import internal
from credprov.credentialprovider.plugin.exec import ExecPlugin, PluginError

V1 = "credentialprovider.kubelet.k8s.io/v1"
RESPONSE = {
    "kind": "CredentialProviderResponse",
    "apiVersion": V1,
    "cacheKeyType": "Registry",
    "cacheDuration": "0s",
    "auth": {"registry.example.com": {"username": "u", "password": "p4ssw0rd"}},
}


def _plugin(tmp_path: Path, body: str, timeout_ns: int = 10 * SECOND) -> ExecPlugin:
    (tmp_path / "response.json").write_text(json.dumps(RESPONSE))
    path = tmp_path / "plugin"
    path.write_text(f"#!/bin/sh\ncd {str(tmp_path)!r}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return ExecPlugin("plugin", str(path), V1, timeout_ns=timeout_ns)


def _request(i: int = 0) -> internal.CredentialProviderRequest:
    return internal.CredentialProviderRequest(image=f"registry.example.com/app{i}")


def test_exec_cat_plugin_succeeds_500_times_in_parallel(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, "exec cat response.json")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: _try(plugin, i), range(500)))
    failures = [r for r in results if r is not None]
    assert failures == [], f"{len(failures)} of 500 failed, e.g. {failures[0]}"


def _try(plugin: ExecPlugin, i: int) -> str | None:
    try:
        response = plugin.exec(_request(i))
    except PluginError as exc:
        return str(exc)
    return None if response.auth else "no auth"


def test_plugin_that_closes_output_and_exits_later_succeeds(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, "cat response.json\nexec >&- 2>&-\nsleep 0.3\nexit 0")
    response = plugin.exec(_request())
    assert set(response.auth) == {"registry.example.com"}


def test_plugin_that_closes_output_then_fails_reports_its_exit_status(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, "cat response.json\nexec >&- 2>&-\nsleep 0.2\nexit 3")
    with pytest.raises(PluginError, match=r": exit status 3: $"):
        plugin.exec(_request())


def test_plugin_that_closes_output_and_never_exits_is_killed_at_the_deadline(
    tmp_path: Path,
) -> None:
    plugin = _plugin(
        tmp_path, "cat response.json\nexec >&- 2>&-\nexec sleep 60", timeout_ns=SECOND // 2
    )
    with pytest.raises(PluginError, match="context deadline exceeded"):
        plugin.exec(_request())


def test_stdin_ignored_by_a_plugin_that_exits_early_is_fine(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path, "exec cat response.json")
    big = internal.CredentialProviderRequest(
        image="registry.example.com/app",
        service_account_token="t" * 200_000,  # more than a pipe buffer, never read
    )
    assert plugin.exec(big).auth
