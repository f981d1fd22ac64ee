"""The ``GODEBUG`` settings that change what a kubelet accepts, and how a binary gets them.

A Go binary's behaviour depends on more than its toolchain: each ``GODEBUG`` setting has a
default, and the linker records the binary's own defaults in its build information as the
``DefaultGODEBUG`` build setting (:mod:`credprov._go.buildinfo`). Go computes them when it
builds the main package (``cmd/go/internal/load/godebug.go``, ``defaultGODEBUG``):

1. the ``go`` line of the main module's ``go.mod`` gives a language version ``1.N``
   (``godebug default=go1.M`` in ``go.mod`` or a ``//go:debug default=go1.M`` line
   replaces it); every setting whose default changed in a Go release later than that
   version gets its old value (``godebugForGoVersion`` over ``internal/godebugs``' table);
2. ``godebug name=value`` lines of ``go.mod`` and ``//go:debug name=value`` lines of the
   main package are applied on top.

At run time the ``GODEBUG`` environment variable overrides those defaults setting by
setting; ``--go-debug`` is credprov's spelling of it.

credprov honours the settings in :data:`SETTINGS` (the ones that change what the kubelet
accepts or the text of its errors); others are parsed and reported as not mattering.
Sources: Go 1.26's ``src/internal/godebugs/table.go`` (``urlstrictcolons``: ``Changed: 26,
Old: "0"``), ``src/net/url/url.go`` of Go 1.26.0, 1.26.1 and 1.26.6 (strict colons are
skipped exactly when ``urlstrictcolons`` is ``"0"``), ``doc/godebug.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from credprov.errors import GoError

__all__ = [
    "SETTINGS",
    "GoDebugError",
    "GoDebugSetting",
    "defaults_for_language",
    "format_godebug",
    "honoured",
    "parse_godebug",
]


class GoDebugError(GoError, ValueError):
    """A ``GODEBUG`` value credprov cannot take: ``str()`` is one line."""


@dataclass(frozen=True, slots=True)
class GoDebugSetting:
    """One ``GODEBUG`` setting: its name, the Go line (``1.N``) that introduced it and
    changed its default (``changed``), the value that restores the old behaviour (``old``),
    the values Go reads, and what it changes for the kubelet."""

    name: str
    changed: int
    old: str
    values: tuple[str, ...]
    effect: str


#: The settings credprov honours, by name.
SETTINGS: dict[str, GoDebugSetting] = {
    "urlstrictcolons": GoDebugSetting(
        name="urlstrictcolons",
        changed=26,
        old="0",
        values=("0", "1"),
        effect="0: url.Parse takes the port after the last ':' of an http(s) host, so "
        "matchImages, image names and docker config keys such as host::5000 are accepted",
    ),
}

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_MAX_ITEMS = 256


def parse_godebug(text: str, *, strict: bool = True) -> dict[str, str]:
    """``name=value,name=value`` (``GODEBUG``'s syntax) as a dict, later items winning.

    ``strict`` (an operator's ``--go-debug``): every item must be ``name=value`` and a
    setting in :data:`SETTINGS` must have one of its values; otherwise (a binary's
    ``DefaultGODEBUG``, a process environment) malformed items are skipped as Go skips them.

    Raises:
        GoDebugError: ``strict`` and a malformed item or a value credprov cannot take.
    """
    out: dict[str, str] = {}
    items = [item for item in text.split(",") if item.strip()]
    if len(items) > _MAX_ITEMS:
        if strict:
            raise GoDebugError(f"more than {_MAX_ITEMS} settings")
        items = items[:_MAX_ITEMS]
    for item in items:
        name, sep, value = item.strip().partition("=")
        if not sep or _NAME.fullmatch(name) is None:
            if strict:
                raise GoDebugError(
                    f"invalid GODEBUG setting {item.strip()!r}: want name=value, e.g. "
                    "urlstrictcolons=0"
                )
            continue
        known = SETTINGS.get(name)
        if strict and known is not None and value not in known.values:
            raise GoDebugError(
                f"invalid value {value!r} for GODEBUG setting {name}: want "
                + " or ".join(known.values)
            )
        out[name] = value
    return out


def format_godebug(settings: dict[str, str] | tuple[tuple[str, str], ...]) -> str:
    """``name=value,...`` in name order (as ``DefaultGODEBUG`` is written)."""
    pairs = settings.items() if isinstance(settings, dict) else settings
    return ",".join(f"{k}={v}" for k, v in sorted(pairs))


def defaults_for_language(language_minor: int, toolchain_minor: int) -> dict[str, str]:
    """The honoured settings' defaults of a binary built by Go ``1.<toolchain_minor>`` for a
    main module whose language version (``go`` line or ``godebug default=``) is
    ``1.<language_minor>``: the old value of each setting changed after the language
    version, by the toolchain or earlier."""
    return {
        s.name: s.old for s in SETTINGS.values() if language_minor < s.changed <= toolchain_minor
    }


def honoured(settings: dict[str, str], toolchain_minor: int) -> tuple[tuple[str, str], ...]:
    """The settings of ``settings`` that change what a binary of Go ``1.<toolchain_minor>``
    does, as credprov keys its Go releases by: only :data:`SETTINGS` that the toolchain
    knows, and only values that differ from the toolchain's own default."""
    out = []
    for name, value in settings.items():
        known = SETTINGS.get(name)
        if known is None or toolchain_minor < known.changed:
            continue
        if value == known.old:
            out.append((name, value))
    return tuple(sorted(out))
