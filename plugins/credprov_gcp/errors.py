"""The plugin's one exception type.

:class:`GCPError` is a :class:`credprov.sdk.ProviderError`, so the SDK prints it as one line on
stderr and exits 1. Messages never quote a token, a password or a server's response body.
"""

from __future__ import annotations

from credprov.sdk import ProviderError


class GCPError(ProviderError):
    """A credential could not be obtained, or the configuration is unusable."""
