"""One configured provider run once, exactly as the kubelet would, and its answer judged.

What ``credprov plugin exec`` shows: the request the kubelet sends (stdin bytes), how long
the plugin ran, its stderr (scrubbed of the config's ``env`` values and of the passwords
it answered, on one line), and the decoded response with passwords redacted unless
``show_secrets``. The raw stdout is kept only with ``show_secrets``: it holds the
passwords in whatever escaping the plugin's encoder chose, so it is never "redacted" by
searching it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from credprov._go.durations import format_duration
from credprov.api import internal
from credprov.base.redact import REDACTED, Redactor
from credprov.credentialprovider.plugin.config import (
    check_bin_dir,
    check_plugin_binary,
    load_config,
)
from credprov.credentialprovider.plugin.exec import DEFAULT_PLUGIN_TIMEOUT, ExecPlugin, PluginError
from credprov.errors import CredentialProviderError
from credprov.imageauth.images import InvalidImageError, parse_image_name
from credprov.imageauth.matching import urls_match_str

__all__ = ["ProbeError", "ProbeResult", "probe_provider"]


class ProbeError(CredentialProviderError):
    """The provider cannot be probed (not in the config, a bad image); one line."""


@dataclass
class ProbeResult:
    """``report`` is JSON-ready (the ``plugin exec -o json`` document)."""

    report: dict[str, Any] = field(default_factory=dict)
    failed: bool = False
    matched: bool = False
    repo: str = ""


def probe_provider(
    config_path: str,
    bin_dir: str,
    name: str,
    image: str,
    *,
    timeout_ns: int = DEFAULT_PLUGIN_TIMEOUT,
    feature_gates: Mapping[str, bool] | None = None,
    show_secrets: bool = False,
) -> ProbeResult:
    """Run provider ``name`` of the config for ``image`` as the kubelet would.

    Raises:
        credprov.credentialprovider.plugin.config.ConfigError: the config or the bin dir, with the kubelet's text.
        ProbeError: no such provider, or an invalid image.
    """
    check_bin_dir(bin_dir)
    config, _ = load_config(config_path, feature_gates)
    provider = next((p for p in config.providers if p.name == name), None)
    if provider is None:
        names = ", ".join(p.name for p in config.providers)
        raise ProbeError(f"no provider {name!r} in {config_path} (providers: {names})")
    path = check_plugin_binary(bin_dir, provider.name)
    try:
        repo = parse_image_name(image)
    except InvalidImageError as exc:
        raise ProbeError(f"invalid image {image!r}: {exc}") from None
    matched = any(urls_match_str(m, repo) for m in provider.match_images)
    plugin = ExecPlugin(
        provider.name, path, provider.api_version, provider.args, provider.env, timeout_ns
    )
    request = internal.CredentialProviderRequest(image=repo)
    result = ProbeResult(matched=matched, repo=repo)
    result.report = {
        "provider": provider.name,
        "command": [path, *provider.args],
        "env": [e.name for e in provider.env],
        "image": image,
        "repo": repo,
        "matched": matched,
        "request": plugin.request_bytes(request).decode("utf-8"),
    }
    try:
        run = plugin.run(request)
    except PluginError as exc:
        result.report["error"] = str(exc)
        result.failed = True
        return result
    _judge(result, plugin, request, run.stdout, run.stderr, show_secrets)
    result.report["durationSeconds"] = round(run.duration, 4)
    return result


def _judge(
    result: ProbeResult,
    plugin: ExecPlugin,
    request: internal.CredentialProviderRequest,
    stdout: bytes,
    stderr: bytes,
    show_secrets: bool,
) -> None:
    report = result.report
    report["stderr"] = plugin.stderr_text(stderr, request)
    report["stdout"] = (
        stdout.decode("utf-8", "replace")
        if show_secrets
        else f"<not shown: it may hold secrets; use --show-secrets ({len(stdout)} bytes)>"
    )
    try:
        response = plugin.decode(stdout)
    except PluginError as exc:
        result.failed = True
        report["error"] = str(exc)
        report["errorDetail"] = exc.detail if show_secrets else None
        return
    if not show_secrets:
        report["stderr"] = Redactor(a.password for a in response.auth.values())(report["stderr"])
    if response.cache_key_type not in internal.CACHE_KEY_TYPES:
        result.failed = True
        report["error"] = (
            "credential provider plugin did not return a valid cacheKeyType: "
            f"{json.dumps(response.cache_key_type)}"
        )
    report["response"] = {
        "cacheKeyType": response.cache_key_type,
        "cacheDuration": (
            format_duration(response.cache_duration)
            if response.cache_duration is not None
            else None
        ),
        "auth": {
            key: {
                "username": a.username,
                "password": a.password if show_secrets else REDACTED,
                "matchesImage": urls_match_str(key, result.repo),
            }
            for key, a in response.auth.items()
        },
    }
