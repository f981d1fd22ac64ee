"""Whole messages: a long finding keeps its cause (the middle gives way, never the end), and
hints name commands that exist where the doctor runs (the bundle has no ``credprov``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from credprov.base.redact import shorten
from credprov.doctor import DoctorOptions, Status, hints, run_doctor
from credprov.doctor.npd import bounded

V1 = "credentialprovider.kubelet.k8s.io/v1"
CAUSE = "version `GLIBC_2.35' not found (required by libpython3.11.so.1.0)"
LONG = (
    "Failed to load Python shared library '/usr/libexec/kubernetes/kubelet-plugins/"
    "credential-provider/exec/.credprov-plugins-0.1.0-452895d1e4a0b1c2d3e4f5a6b7c8d9e0f1a2b3"
    "c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d"
    "7e8f9/credprov-plugins/_internal/libpython3.11.so.1.0': /lib/x86_64-linux-gnu/libc.so.6: "
    + CAUSE
)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        pytest.param("short", 10, "short", id="fits"),
        pytest.param("abcdefghij", 7, "ab...ij", id="middle out"),
        pytest.param("abcdefghijk", 8, "ab...ijk", id="the end keeps the odd one"),
        pytest.param("abcdef", 2, "ab", id="no room for the marker"),
    ],
)
def test_shorten_leaves_out_the_middle(text: str, limit: int, expected: str) -> None:
    assert shorten(text, limit) == expected


def _failing_node(tmp_path: Path, stderr: str) -> DoctorOptions:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    plugin = bin_dir / "broken-provider"
    plugin.write_text(f'#!/bin/sh\ncat >/dev/null\necho "{stderr}" >&2\nexit 1\n')
    plugin.chmod(0o755)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        "  - name: broken-provider\n    matchImages: [registry.example.com]\n"
        f"    defaultCacheDuration: 1m\n    apiVersion: {V1}\n    args: [--region, eu]\n"
    )
    return DoctorOptions(config=str(config), bin_dir=str(bin_dir))


def test_a_long_plugin_error_keeps_its_cause(tmp_path: Path) -> None:
    report = run_doctor(_failing_node(tmp_path, LONG.replace("`", "\\`")))
    (responds,) = report.by_id("plugin.responds")
    assert responds.status == Status.FAIL
    assert responds.message.endswith(CAUSE), responds.message
    assert responds.message.startswith("for registry.example.com/credprov-doctor/sample: exit: ")
    assert "..." in responds.message  # the middle gave way


@pytest.mark.parametrize(
    ("full_cli", "expected"),
    [
        pytest.param(
            True,
            "see every check with: credprov plugin test {bin}/broken-provider --image "
            "registry.example.com/credprov-doctor/sample --arg --region --arg eu",
            id="credprov CLI",
        ),
        pytest.param(
            False,
            'see every check with: printf \'%s\\n\' \'{{"apiVersion":"{v1}","kind":'
            '"CredentialProviderRequest","image":"registry.example.com/credprov-doctor/sample"}}'
            "' | {bin}/broken-provider --region eu (with the provider's env)",
            id="the bundle: no credprov CLI",
        ),
    ],
)
def test_hints_name_commands_that_exist_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, full_cli: bool, expected: str
) -> None:
    monkeypatch.setattr(hints, "full_cli", lambda: full_cli)
    report = run_doctor(_failing_node(tmp_path, "refused"))
    (responds,) = report.by_id("plugin.responds")
    assert responds.hint.endswith(expected.format(bin=tmp_path / "bin", v1=V1)), responds.hint
    if not full_cli:
        assert "credprov " not in responds.hint


def test_npd_lines_keep_their_end() -> None:
    line = bounded("plugin.responds failed for " + "x" * 100 + " (+2 more)")
    assert len(line) == 80 and line.endswith("x (+2 more)")


def test_extra_auth_keys_are_no_warning_when_one_matches(tmp_path: Path) -> None:
    """Upstream's GCP plugin answers every Google key for any image: the kubelet uses the
    matching one (and caches the rest), so the doctor does not warn a healthy node."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    plugin = bin_dir / "auth-provider-gcp"
    plugin.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        'printf \'%s\' \'{"kind":"CredentialProviderResponse","apiVersion":"' + V1 + "\",'\n"
        'printf \'%s\\n\' \'"cacheKeyType":"Registry","cacheDuration":"5m","auth":{'
        '"gcr.io":{"username":"_token","password":"p"},'
        '"*.gcr.io":{"username":"_token","password":"p"}}}\'\n'
    )
    plugin.chmod(0o755)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        "  - name: auth-provider-gcp\n    matchImages: [gcr.io, '*.gcr.io']\n"
        f"    defaultCacheDuration: 1m\n    apiVersion: {V1}\n"
    )
    report = run_doctor(DoctorOptions(config=str(config), bin_dir=str(bin_dir)))
    (responds,) = report.by_id("plugin.responds")
    assert responds.status == Status.PASS, responds
