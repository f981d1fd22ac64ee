"""Launchers: the executables ``credprov install`` writes into the kubelet's bin dir.

A launcher is a tiny Python script whose ``#!`` line starts the environment's real
interpreter (not a shell shim) with ``-I -S``: isolated, and without ``site``, which saves
10-15 ms per run. It puts the directories that hold credprov and the plugin on
``sys.path`` and calls the plugin's ``main``. Only when the plugin must run its handler (a
cache miss) does :func:`enable_site` process the environment's site-packages (``.pth``
files included), so heavy dependencies import as usual.
"""

from __future__ import annotations

import sys

#: site-packages directories recorded by the launcher, processed on the cold path.
_SITE_DIRS: list[str] = []

MARKER = "# credprov-launcher v1"


def launch(paths: list[str], site_dirs: list[str], entry: str) -> None:
    """Called by a launcher script: set up ``sys.path`` and run ``entry`` (module:function)."""
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    _SITE_DIRS[:] = site_dirs
    module_name, _, attr = entry.partition(":")
    module = __import__(module_name, fromlist=[attr or "main"])
    sys.exit(getattr(module, attr or "main")())


def enable_site() -> None:
    """Process the recorded site-packages directories (once), as ``site`` would have."""
    if not _SITE_DIRS:
        return
    import site

    for directory in _SITE_DIRS:
        site.addsitedir(directory)
    _SITE_DIRS.clear()
