"""Fixtures of the end-to-end tests: a real private registry holding one tiny image."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.e2e.registry import PrivateImage, private_image


@pytest.fixture(scope="session")
def private_registry_image() -> Iterator[PrivateImage]:
    """``docker-registry`` on 127.0.0.1 (htpasswd, one account with a random password) with
    ``private/app:v1`` pushed; stopped and removed after the session, even on failure.
    Skips when ``docker-registry`` or ``skopeo`` is not installed."""
    users = {"e2e-user": "e2e-pass-" + secrets.token_hex(8)}
    with private_image(users) as image:
        yield image
