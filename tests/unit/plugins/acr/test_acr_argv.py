"""Upstream's command line → the SDK's, and upstream's identity-bindings flag rules."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from credprov_acr import main as acr_main
from credprov_acr.main import ArgumentError, config_stamp, normalize_argv

CFG = "/etc/kubernetes/azure.json"
STAMP = ["--config-stamp", "missing"]


def cfg(*rest: str) -> list[str]:
    return ["--azure-config", CFG, *STAMP, *rest]


ACCEPTED = [
    ([CFG], cfg()),
    ([CFG, "--registry-mirror=mcr.microsoft.com:x.azurecr.io"],
     cfg("--registry-mirror", "mcr.microsoft.com:x.azurecr.io")),
    (["--registry-mirror", "a:b", CFG], cfg("--registry-mirror", "a:b")),
    ([CFG, "-r", "a:b"], cfg("--registry-mirror", "a:b")),
    ([CFG, "-r=a:b"], cfg("--registry-mirror", "a:b")),
    ([CFG, "-ra:b"], cfg("--registry-mirror", "a:b")),
    ([CFG, "-r", "a:b", "-r", "c:d"], cfg("--registry-mirror", "c:d")),  # last wins, as pflag
    (["-v", "4", CFG], ["--v=4", *cfg()]),
    (["--v=2", CFG], ["--v=2", *cfg()]),
    (["-v3", CFG], ["--v=3", *cfg()]),
    ([CFG, "--vmodule=x=2", "--logtostderr", "--alsologtostderr=false", "--log-file", "f"], cfg()),
    (["--", CFG], cfg()),
    (
        [CFG, "--ib-sni-name=ib.example", "--ib-apiserver-ip", "10.0.0.1",
         "--ib-default-client-id=c", "--ib-default-tenant-id=t"],
        cfg("--ib-apiserver-ip", "10.0.0.1", "--ib-default-client-id", "c",
            "--ib-default-tenant-id", "t", "--ib-sni-name", "ib.example"),
    ),
    (["--help"], ["--help"]),
    (["-h", CFG], ["--help"]),
    (["--version"], ["--version"]),
    (["--clear-cache"], ["--clear-cache"]),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "expected"), ACCEPTED)
def test_accepted(argv: list[str], expected: list[str]) -> None:
    assert normalize_argv(argv) == expected


REFUSED = [
    ([], "config file is not specified"),
    (["-v", "2"], "config file is not specified"),
    (["a.json", "b.json"], "expected exactly one argument (config file); Got arguments: [a.json b.json]"),
    ([CFG, "--unknown"], "unknown flag: --unknown"),
    ([CFG, "-x"], "unknown shorthand flag: 'x' in -x"),
    ([CFG, "--registry-mirror"], "flag needs an argument: --registry-mirror"),
    ([CFG, "-v", "high"], 'invalid argument "high" for "-v, --v" flag'),
    ([CFG, "--logtostderr=maybe"], 'invalid argument "maybe" for "--logtostderr" flag'),
    # upstream identity_bindings_config_test
    ([CFG, "--ib-sni-name=https://ib.example", "--ib-apiserver-ip=1.2.3.4"],
     "--ib-sni-name must not contain protocol prefix (https:// or http://), got: https://ib.example"),
    ([CFG, "--ib-sni-name=http://ib.example", "--ib-apiserver-ip=1.2.3.4"],
     "--ib-sni-name must not contain protocol prefix"),
    ([CFG, "--ib-sni-name=ib.example"], "--ib-apiserver-ip must be set when --ib-sni-name is provided"),
    ([CFG, "--ib-default-client-id=c"], "--ib-sni-name must be set when --ib-default-client-id is provided"),
    ([CFG, "--ib-default-tenant-id=t"], "--ib-sni-name must be set when --ib-default-tenant-id is provided"),
    ([CFG, "--ib-apiserver-ip=1.2.3.4"], "--ib-sni-name must be set when --ib-apiserver-ip is provided"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), REFUSED)
def test_refused(argv: list[str], message: str) -> None:
    with pytest.raises(ArgumentError) as err:
        normalize_argv(argv)
    assert str(err.value).startswith(message)


def test_main_exits_1_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert acr_main.main([CFG, "--nope"]) == 1
    err = capsys.readouterr().err
    assert err == "acr-credential-provider: unknown flag: --nope\n"


def test_help_is_upstream_style(capsys: pytest.CaptureFixture[str]) -> None:
    assert acr_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: acr-credential-provider <azure.json>")
    assert "--registry-mirror" in out and "--ib-sni-name" in out


def test_stamp_follows_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_ENVIRONMENT_FILEPATH", raising=False)
    path = tmp_path / "azure.json"
    assert config_stamp(str(path)) == "missing"
    path.write_text("{}")
    first = config_stamp(str(path))
    path.write_text('{"tenantId": "t"}')
    os.utime(path, ns=(1, 1))
    assert config_stamp(str(path)) != first
    env_file = tmp_path / "env.json"
    monkeypatch.setenv("AZURE_ENVIRONMENT_FILEPATH", str(env_file))
    assert config_stamp(str(path)).endswith(f";{env_file};missing")
    assert normalize_argv([str(path)])[3] == config_stamp(str(path))


def test_stdin_is_not_read_on_argument_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    class Exploding(io.BytesIO):
        def read(self, *args: object) -> bytes:
            raise AssertionError("stdin read")

    monkeypatch.setattr("sys.stdin", Exploding())
    assert acr_main.main([]) == 1
