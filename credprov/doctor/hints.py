"""Commands the doctor's hints name: ones that exist where the doctor runs.

The credprov CLI has ``credprov plugin test`` and ``credprov config validate``; the plugin
bundle's doctor (``credprov-plugins/doctor``, no Python, no ``credprov.cli``) has neither,
so there a hint names what the node does have: the bundle's ``validate-config`` and the
plugin itself, run by hand with the kubelet's request on stdin.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shlex
from collections.abc import Sequence

__all__ = ["config_check_command", "full_cli", "plugin_check_command"]

#: How the bundle's tools are started (``credprov.bundle._multicall``).
BUNDLE_RUNTIME = "credprov-plugins/runtime/credprov-plugins"


@functools.cache
def full_cli() -> bool:
    """Whether the credprov CLI is here (not in the plugin bundle)."""
    return importlib.util.find_spec("credprov.cli") is not None


def config_check_command(path: str) -> str:
    """The command that checks the provider config at ``path`` as the kubelet would."""
    if full_cli():
        return f"credprov config validate {shlex.quote(path)}"
    return f"{BUNDLE_RUNTIME} validate-config {shlex.quote(path)}"


def plugin_check_command(path: str, image: str, api_version: str, args: Sequence[str]) -> str:
    """The command that shows every check of the plugin at ``path`` (the CLI), or its
    answer to the kubelet's request for ``image`` (run on the node); the provider's
    ``env`` (maybe secret) is not spelt out."""
    if full_cli():
        flags = "".join(f" --arg {shlex.quote(a)}" for a in args)
        return f"credprov plugin test {shlex.quote(path)} --image {shlex.quote(image)}{flags}"
    request = json.dumps(
        {"apiVersion": api_version, "kind": "CredentialProviderRequest", "image": image},
        separators=(",", ":"),
    )
    command = shlex.join([path, *args])
    return f"printf '%s\\n' {shlex.quote(request)} | {command} (with the provider's env)"
