"""``credprov.sdk.run``: arguments, answers, exit codes, secrets, the warm path."""

from __future__ import annotations

import base64
import io
import json
import os
import stat
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from credprov.sdk import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Context,
    Option,
    ProviderError,
    Request,
    Response,
    run,
)
from tests.conftest import CANARY

G = "credentialprovider.kubelet.k8s.io"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def request(image: str = "r.io/team/app", version: str = "v1", **extra: object) -> bytes:
    body: dict[str, object] = {
        "kind": "CredentialProviderRequest",
        "apiVersion": f"{G}/{version}",
        "image": image,
    }
    body.update(extra)
    return json.dumps(body).encode()


def call(
    handler: Any,
    stdin: bytes,
    argv: list[str] | None = None,
    **kw: Any,
) -> tuple[int, dict[str, Any] | None, str]:
    out = io.BytesIO()
    err = io.StringIO()
    kw.setdefault("name", "test-plugin")
    code = run(handler, argv=argv or [], stdin=io.BytesIO(stdin), stdout=out, stderr=err, **kw)
    raw = out.getvalue()
    return code, (json.loads(raw) if raw.strip().startswith(b"{") else None), err.getvalue()


def static(
    auth: dict[str, tuple[str, str]] | None = None,
    key_type: str = "Registry",
    duration: float | str | None = "1h",
) -> Callable[[Request, Context], Response]:
    calls: list[Request] = []

    def provide(req: Request, ctx: Context) -> Response:
        calls.append(req)
        return Response(auth or {req.registry: ("user", CANARY)}, key_type, duration)

    provide.calls = calls  # type: ignore[attr-defined]
    return provide


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_answers_in_the_requested_version(version: str) -> None:
    code, resp, err = call(static(), request(version=version))
    assert code == EXIT_OK, err
    assert resp == {
        "kind": "CredentialProviderResponse",
        "apiVersion": f"{G}/{version}",
        "cacheKeyType": "Registry",
        "cacheDuration": "1h0m0s",
        "auth": {"r.io": {"username": "user", "password": CANARY}},
    }


@pytest.mark.parametrize(
    ("duration", "wire"),
    [(3600, "1h0m0s"), (1.5, "1.5s"), ("90m", "1h30m0s"), (0, "0s"), (None, None)],
    ids=["int", "float", "go-string", "zero", "absent"],
)
def test_durations(duration: float | str | None, wire: str | None) -> None:
    _, resp, _ = call(static(duration=duration), request())
    assert resp is not None and resp.get("cacheDuration") == wire


@pytest.mark.parametrize(
    ("auth_value",),
    [(("u", "p"),), (["u", "p"],), ({"username": "u", "password": "p"},)],
    ids=["tuple", "list", "mapping"],
)
def test_auth_forms(auth_value: object) -> None:
    def provide(req: Request, ctx: Context) -> Response:
        return Response({"r.io": auth_value})

    _, resp, _ = call(provide, request())
    assert resp is not None and resp["auth"] == {"r.io": {"username": "u", "password": "p"}}


def test_bad_request_exit_1_one_line() -> None:
    code, resp, err = call(static(), b"{nope")
    assert code == EXIT_ERROR and resp is None
    assert err.startswith("test-plugin: invalid request: ") and err.count("\n") == 1


def test_plugin_error_scrubs_token_and_passwords() -> None:
    token = "eyJ" + CANARY

    def provide(req: Request, ctx: Context) -> Response:
        raise ProviderError(f"registry said no to {req.service_account_token}\nsecond line")

    code, _, err = call(provide, request(serviceAccountToken=token))
    assert code == EXIT_ERROR
    assert CANARY not in err and "<redacted>" in err and err.count("\n") == 1


def test_unexpected_exception_prints_type_only() -> None:
    def provide(req: Request, ctx: Context) -> Response:
        raise ValueError(f"leaky {CANARY}")

    code, _, err = call(provide, request())
    assert code == EXIT_INTERNAL
    assert CANARY not in err and "ValueError" in err


def test_traceback_at_v4_is_scrubbed() -> None:
    token = "tok-" + CANARY

    def provide(req: Request, ctx: Context) -> Response:
        raise RuntimeError(req.service_account_token)

    code, _, err = call(provide, request(serviceAccountToken=token), argv=["-v", "4"])
    assert code == EXIT_INTERNAL and "Traceback" in err and CANARY not in err


@pytest.mark.parametrize(
    "bad",
    [Response({"r.io": ("u", "p")}, "Repository"), Response({"r.io": ("u", 3)}), "not a response"],
    ids=["bad-key-type", "bad-password-type", "wrong-return"],
)
def test_bad_handler_results(bad: object) -> None:
    code, resp, err = call(lambda req, ctx: bad, request())
    assert code == EXIT_ERROR and resp is None and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--region", "eu"], {"region": "eu", "fips": False}),
        (["--region=us", "--fips"], {"region": "us", "fips": True}),
        (["--fips=false", "-v", "3"], {"region": "default", "fips": False}),
        (["--v=2"], {"region": "default", "fips": False}),
        (["-v5"], {"region": "default", "fips": False}),
    ],
    ids=["space", "equals-and-flag", "flag-false", "go-style-v", "short-v"],
)
def test_options_from_provider_args(argv: list[str], expected: dict[str, object]) -> None:
    seen: dict[str, object] = {}

    def provide(req: Request, ctx: Context) -> Response:
        seen.update(ctx.options)
        return Response({})

    opts = [Option("region", default="default"), Option("fips", flag=True, default=False)]
    code, _, err = call(provide, request(), argv=argv, options=opts)
    assert code == EXIT_OK, err
    assert seen == expected


@pytest.mark.parametrize(
    "argv",
    [["--nope"], ["--region"], ["-v"], ["-v", "x"], ["--fips=maybe"]],
    ids=["unknown", "missing-value", "v-missing", "v-not-number", "flag-bad"],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    code, _, err = call(
        static(), request(), argv=argv, options=[Option("region"), Option("fips", flag=True)]
    )
    assert code == EXIT_USAGE and err.count("\n") == 1


def test_version_and_help() -> None:
    out = io.BytesIO()
    assert run(static(), name="p", version="9.9", argv=["--version"], stdout=out) == EXIT_OK
    assert out.getvalue().startswith(b"p 9.9 (credprov ")
    out = io.BytesIO()
    run(
        static(),
        name="p",
        argv=["--help"],
        options=[Option("region", help="AWS region")],
        stdout=out,
    )
    assert b"--region" in out.getvalue() and b"AWS region" in out.getvalue()


def test_verbosity_logs_to_stderr_only() -> None:
    def provide(req: Request, ctx: Context) -> Response:
        ctx.log(2, "hello at 2")
        ctx.log(5, "hidden at 5")
        return Response({})

    code, resp, err = call(provide, request(), argv=["-v", "2"])
    assert code == EXIT_OK and resp is not None
    assert "hello at 2" in err and "hidden" not in err


# -- the persistent cache --------------------------------------------------------------------


def test_cache_answers_second_run_without_handler(tmp_path: Path) -> None:
    clock = Clock()
    provide = static()
    kw = {"cache": True, "cache_dir": str(tmp_path / "c"), "clock": clock}
    call(provide, request(), **kw)
    clock.now += 600
    code, resp, _ = call(provide, request(version="v1beta1"), **kw)
    assert code == EXIT_OK and len(provide.calls) == 1  # type: ignore[attr-defined]
    assert resp is not None and resp["apiVersion"] == f"{G}/v1beta1"
    assert resp["cacheDuration"] == "50m0s"  # the remaining lifetime, not the original hour
    clock.now += 3000
    call(provide, request(), **kw)
    assert len(provide.calls) == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("key_type", "second_image", "hit"),
    [
        ("Image", "r.io/team/app", True),
        ("Image", "r.io/team/other", False),
        ("Registry", "r.io/other", True),
        ("Registry", "q.io/other", False),
        ("Global", "q.io/other", True),
    ],
)
def test_cache_key_types(tmp_path: Path, key_type: str, second_image: str, hit: bool) -> None:
    provide = static(key_type=key_type)
    kw = {"cache": True, "cache_dir": str(tmp_path / "c")}
    call(provide, request(), **kw)
    call(provide, request(image=second_image), **kw)
    assert len(provide.calls) == (1 if hit else 2)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "duration", [None, 0, "0s", 0.5], ids=["absent", "zero", "zero-s", "sub-second"]
)
def test_uncacheable_answers_are_not_kept(tmp_path: Path, duration: object) -> None:
    provide = static(duration=duration)  # type: ignore[arg-type]
    kw = {"cache": True, "cache_dir": str(tmp_path / "c")}
    call(provide, request(), **kw)
    call(provide, request(), **kw)
    assert len(provide.calls) == 2  # type: ignore[attr-defined]


def jwt(ns: str, name: str, uid: str, nonce: str = "") -> str:
    claims = {"kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}}}
    claims["jti"] = nonce  # type: ignore[assignment]
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJSUzI1NiJ9.{payload}.sig"


@pytest.mark.parametrize(
    ("identity", "second_token", "hit"),
    [
        ("ServiceAccount", jwt("ns", "sa", "u1", "other-pod"), True),
        ("ServiceAccount", jwt("ns", "sa2", "u2"), False),
        ("ServiceAccount", jwt("other", "sa", "u1"), False),
        ("Token", jwt("ns", "sa", "u1", "other-pod"), False),
        ("Token", jwt("ns", "sa", "u1", "first"), True),
    ],
    ids=[
        "same-sa-new-token",
        "other-sa",
        "other-namespace",
        "token-mode-new-token",
        "token-mode-same",
    ],
)
def test_service_account_identity(
    tmp_path: Path, identity: str, second_token: str, hit: bool
) -> None:
    provide = static(key_type="Global")
    kw = {"cache": True, "cache_dir": str(tmp_path / "c"), "cache_identity": identity}
    call(provide, request(serviceAccountToken=jwt("ns", "sa", "u1", "first")), **kw)
    call(provide, request(serviceAccountToken=second_token), **kw)
    assert len(provide.calls) == (1 if hit else 2)  # type: ignore[attr-defined]


def test_annotations_and_anonymous_are_separate(tmp_path: Path) -> None:
    provide = static(key_type="Global")
    kw = {"cache": True, "cache_dir": str(tmp_path / "c")}
    tok = jwt("ns", "sa", "u1")
    call(provide, request(serviceAccountToken=tok, serviceAccountAnnotations={"a": "1"}), **kw)
    call(provide, request(serviceAccountToken=tok, serviceAccountAnnotations={"a": "2"}), **kw)
    call(provide, request(), **kw)
    assert len(provide.calls) == 3  # type: ignore[attr-defined]


def test_plugin_args_scope_the_cache(tmp_path: Path) -> None:
    provide = static(key_type="Global")
    opts = [Option("region")]
    kw = {"cache": True, "cache_dir": str(tmp_path / "c"), "options": opts}
    call(provide, request(), argv=["--region", "a"], **kw)
    call(provide, request(), argv=["--region", "b"], **kw)
    call(provide, request(), argv=["--region", "a"], **kw)
    assert len(provide.calls) == 2  # type: ignore[attr-defined]


def test_cache_files_are_private_and_atomic(tmp_path: Path) -> None:
    cache_dir = tmp_path / "deep" / "c"
    call(static(), request(), cache=True, cache_dir=str(cache_dir))
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    files = list(cache_dir.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert not [f for f in files if f.name.endswith(".tmp")]


def test_unsafe_directory_is_not_used(tmp_path: Path) -> None:
    cache_dir = tmp_path / "c"
    cache_dir.mkdir(mode=0o755)
    cache_dir.chmod(0o755)
    provide = static()
    code, _, _ = call(provide, request(), cache=True, cache_dir=str(cache_dir))
    call(provide, request(), cache=True, cache_dir=str(cache_dir))
    assert code == EXIT_OK and len(provide.calls) == 2  # type: ignore[attr-defined]
    assert list(cache_dir.iterdir()) == []


def test_symlinked_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    provide = static()
    call(provide, request(), cache=True, cache_dir=str(link))
    assert list(real.iterdir()) == []


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncate", "symlink", "chmod", "foreign-key", "bad-auth"],
)
def test_damaged_entries_are_ignored(tmp_path: Path, damage: str) -> None:
    cache_dir = tmp_path / "c"
    provide = static()
    kw = {"cache": True, "cache_dir": str(cache_dir)}
    call(provide, request(), **kw)
    (entry,) = cache_dir.iterdir()
    data = json.loads(entry.read_text())
    if damage == "garbage":
        entry.write_bytes(b"\x00garbage")
    elif damage == "truncate":
        entry.write_text(entry.read_text()[:20])
    elif damage == "symlink":
        target = tmp_path / "elsewhere"
        target.write_text(entry.read_text())
        target.chmod(0o600)
        entry.unlink()
        entry.symlink_to(target)
    elif damage == "chmod":
        entry.chmod(0o644)
    elif damage == "foreign-key":
        data["key"] = "something else"
        entry.write_text(json.dumps(data))
    elif damage == "bad-auth":
        data["auth"] = {"r.io": "nope"}
        entry.write_text(json.dumps(data))
    code, resp, _ = call(provide, request(), **kw)
    assert code == EXIT_OK and resp is not None and resp["auth"]
    assert len(provide.calls) == 2  # type: ignore[attr-defined]


def test_clear_cache(tmp_path: Path) -> None:
    provide = static()
    kw = {"cache": True, "cache_dir": str(tmp_path / "c")}
    call(provide, request(), **kw)
    assert call(provide, b"", argv=["--clear-cache"], **kw)[0] == EXIT_OK
    call(provide, request(), **kw)
    assert len(provide.calls) == 2  # type: ignore[attr-defined]


def test_warm_path_does_not_import_the_handler_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "heavy_handler_mod.py"
    module.write_text(
        textwrap.dedent(
            """
            from credprov.sdk import Response
            IMPORTS = [1]
            def provide(req, ctx):
                return Response({req.registry: ("u", "p")}, "Registry", 3600)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    kw = {"cache": True, "cache_dir": str(tmp_path / "c")}
    assert call("heavy_handler_mod:provide", request(), **kw)[0] == EXIT_OK
    assert "heavy_handler_mod" in sys.modules
    del sys.modules["heavy_handler_mod"]
    code, resp, _ = call("heavy_handler_mod:provide", request(), **kw)
    assert code == EXIT_OK and resp is not None and resp["auth"]
    assert "heavy_handler_mod" not in sys.modules
    assert os.listdir(tmp_path / "c")


def test_verbosity_does_not_scope_the_cache(tmp_path: Path) -> None:
    provide = static()
    kw = {"cache": True, "cache_dir": str(tmp_path / "c")}
    call(provide, request(), argv=[], **kw)
    call(provide, request(), argv=["-v", "3"], **kw)
    assert len(provide.calls) == 1  # type: ignore[attr-defined]
