"""The emulator's local service-account token issuer."""

from __future__ import annotations

import pytest

from credprov._go.durations import SECOND
from credprov.base.clock import FakeClock
from credprov.nodeauth.nodeapi import TokenIssuer


def test_issue_and_verify_bound_token() -> None:
    clock = FakeClock(wall=1_700_000_000.0)
    issuer = TokenIssuer(key=b"k" * 32, clock=clock)
    token = issuer.issue_token(
        namespace="team-a",
        service_account="builder",
        service_account_uid="sa-uid",
        audiences=["registry.example"],
        pod=("app", "pod-uid"),
        node=("n1", "node-uid"),
    ).token
    claims = issuer.verify(token, audience="registry.example")
    assert claims["sub"] == "system:serviceaccount:team-a:builder"
    assert claims["aud"] == ["registry.example"]
    assert claims["exp"] - claims["iat"] == 3600
    k8s = claims["kubernetes.io"]
    assert k8s["serviceaccount"] == {"name": "builder", "uid": "sa-uid"}
    assert k8s["pod"] == {"name": "app", "uid": "pod-uid"}
    assert k8s["node"] == {"name": "n1", "uid": "node-uid"}
    assert issuer.issued == 1

    with pytest.raises(ValueError, match="audience"):
        issuer.verify(token, audience="other")
    clock.step(3600 * SECOND)
    with pytest.raises(ValueError, match="expired"):
        issuer.verify(token)


def test_other_key_and_garbage_rejected() -> None:
    token = (
        TokenIssuer(key=b"a" * 32)
        .issue_token(namespace="n", service_account="s", service_account_uid="u", audiences=["x"])
        .token
    )
    with pytest.raises(ValueError, match="signature"):
        TokenIssuer(key=b"b" * 32).verify(token)
    with pytest.raises(ValueError, match="not a JWT"):
        TokenIssuer().verify("garbage")
    # Random keys: two issuers never accept each other's tokens.
    assert TokenIssuer()._key != TokenIssuer()._key


def test_issue_token_reports_the_expiry() -> None:
    issuer = TokenIssuer(key=b"k" * 32, clock=FakeClock(wall=1_700_000_000.5))
    issued = issuer.issue_token(
        namespace="n", service_account="s", service_account_uid="u", audiences=["x"],
        expiration_seconds=600,
    )  # fmt: skip
    assert (issued.expires_at, issued.expiration_seconds) == (1_700_000_600.0, 600)
    assert issued.issued_at == issuer.verify(issued.token)["iat"] == issuer.now() // 1
    assert issued.token not in repr(issued)
