"""Which Go release a command follows: ``--go-version``, else ``$CREDPROV_GO_VERSION``.

Shared by the ``credprov`` CLI and the bundle's standalone doctor (which may not import the
CLI). Only ``os`` at import: every command calls :func:`follow_go_version`, and
:mod:`credprov._go.version` (about 10 ms) is imported only when a release is named.
"""

from __future__ import annotations

import os

__all__ = ["GO_VERSION_ENV", "follow_go_version"]

#: The environment variable with the default of ``--go-version`` (every command follows it).
GO_VERSION_ENV = "CREDPROV_GO_VERSION"


def follow_go_version(value: str | None) -> str | None:
    """Follow ``--go-version``'s ``value``, else ``$CREDPROV_GO_VERSION``, else nothing (the
    default stays); the one-line error (naming where the value came from) when it is not a
    Go release credprov reproduces."""
    source = "--go-version"
    if value is None:
        value = os.environ.get(GO_VERSION_ENV) or None
        source = GO_VERSION_ENV
    if value is None:
        return None
    from credprov._go.version import GoVersionError, use_go

    try:
        use_go(value)
    except GoVersionError as exc:
        return f"{source}: {exc}"
    return None
