"""Registry host names as Docker's reference grammar reads them (``distribution/reference``).

``domainAndPort``: a host (a domain name of components of letters, digits and inner ``-``,
joined by ``.``; or ``[`` hex digits and ``:`` ``]``), then optionally ``:`` and a port of
digits. :mod:`credprov.imageauth.images` matches the same production with a
regular expression inside its reference regexp; this is the same grammar without ``re``,
for the plugins' telemetry (its warm path imports the standard library's cheapest modules
only), and ``tests/unit/base/test_hostname.py`` compares the two. Standard library only.
"""

from __future__ import annotations

__all__ = ["is_domain_and_port"]

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX_COLON = frozenset("0123456789abcdefABCDEF:")
_DIGITS = frozenset("0123456789")


def _domain_component(part: str) -> bool:
    return (
        bool(part)
        and part[0] in _ALNUM
        and part[-1] in _ALNUM
        and _ALNUM.union("-").issuperset(part)
    )


def is_domain_and_port(text: str) -> bool:
    """Whether ``text`` is ``host[:port]`` by Docker's reference grammar (``docker.io``,
    ``localhost:5000``, ``[::1]:5000``); ``:::``, ``a b``, ``-a.io`` and ``a..io`` are not."""
    host, port = text, ""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return False
        host, rest = text[: end + 1], text[end + 1 :]
        if rest and (rest[0] != ":" or len(rest) == 1 or not _DIGITS.issuperset(rest[1:])):
            return False
        inner = host[1:-1]
        return bool(inner) and _HEX_COLON.issuperset(inner)
    if ":" in text:
        host, _, port = text.rpartition(":")
        if not port or not _DIGITS.issuperset(port):
            return False
    return all(_domain_component(p) for p in host.split("."))
