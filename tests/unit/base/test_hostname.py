"""``is_domain_and_port``: Docker's ``domainAndPort`` without ``re``, the same as the
reference regexp's production in :mod:`credprov.imageauth.images`."""

from __future__ import annotations

import re

import pytest

from credprov.base.hostname import is_domain_and_port
from credprov.imageauth import images

CASES = [
    ("docker.io", True),
    ("localhost", True),
    ("localhost:5000", True),
    ("registry-1.docker.io", True),
    ("Upper.Example.COM", True),
    ("[::1]", True),
    ("[::1]:5000", True),
    ("[fe80::a]:1", True),
    ("10.0.0.1:80", True),
    (":::", False),
    ("a:", False),
    (":80", False),
    ("a:b", False),
    ("a:1:2", False),
    ("[::1", False),
    ("[]", False),
    ("[::1]x", False),
    ("[::1]:", False),
    ("[g::1]", False),
    ("-a.io", False),
    ("a-.io", False),
    ("a..io", False),
    (".a.io", False),
    ("a.io.", False),
    ("a b.io", False),
    ("a_b.io", False),
    ("a\x1b.io", False),
    ("é.io", False),
    ("", False),
]


@pytest.mark.parametrize(("text", "valid"), CASES)
def test_is_domain_and_port(text: str, valid: bool) -> None:
    assert is_domain_and_port(text) is valid
    assert bool(re.fullmatch(images._DOMAIN_AND_PORT, text, re.ASCII)) is valid
