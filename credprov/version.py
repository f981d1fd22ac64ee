"""credprov's release: one place for the version every part reports.

A module of its own, importing nothing, so that the plugin SDK, the bundle builder and the
CLI can name the release without importing :mod:`credprov` itself, whose curated API
(seen by type checkers) reaches into every layer. ``credprov.__version__`` resolves here,
and pyproject.toml's ``dynamic = ["version"]`` reads it (setuptools, statically).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
