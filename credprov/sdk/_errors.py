"""The SDK's errors, under credprov's root (:class:`credprov.errors.PluginSDKError`).

A handler's refusal is a :class:`ProviderError` (exit 1), a bad command line a
:class:`UsageError` (exit 2); the request's and the cache's errors live with their modules
(:class:`credprov.sdk._wire.RequestError`, :class:`credprov.sdk._cache.CacheUnavailable`).
"""

from __future__ import annotations

from credprov import errors
from credprov.errors import PluginSDKError


class ProviderError(PluginSDKError):
    """Raise from a handler to fail the request with this message (exit 1); every plugin's
    own errors derive from it.

    Any occurrence of the request's token or of a password the handler produced is
    redacted before printing, but do not put secrets in messages on purpose. (The engine
    side has its own :class:`credprov.credentialprovider.plugin.exec.PluginError`, for a
    plugin that failed as the kubelet sees it; this one is the plugin's own refusal.)
    """


class UsageError(PluginSDKError, errors.UsageError):
    """Bad command-line arguments (exit 2)."""
