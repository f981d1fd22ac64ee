"""``credprov.sdk.telemetry``: opt-in plugin metrics in a node_exporter textfile.

Checked: the registry label (a host, never the image path, tag or digest), each metric
after runs that answer, fail for each reason or hit the plugin cache, the expiry, the file
read back across runs (and a corrupt or foreign one started over), the series cap, the
file's mode and atomic replacement, the option and the environment, telemetry that fails
without changing the answer or the exit code, nothing imported when it is off, and a
sample parsed by Prometheus's own parser.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from credprov.sdk import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    ProviderError,
    Response,
    run,
)
from credprov.sdk import telemetry as tm
from credprov.sdk._runtime import METRICS_FILE_ENV
from tests.conftest import CANARY

ROOT = Path(__file__).resolve().parents[3]
G = "credentialprovider.kubelet.k8s.io"
NAME = "test-provider"
NOW = 1_700_000_000.0


def request(image: str = "r.example.com/team/app:v1") -> bytes:
    return json.dumps(
        {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", "image": image}
    ).encode()


def ok(request: Any, ctx: Any) -> Response:
    return Response({request.registry: ("user", CANARY)}, "Registry", "1h")


def call(
    handler: Callable[..., Response] | str = ok,
    *,
    image: str = "r.example.com/team/app:v1",
    argv: tuple[str, ...] = (),
    cache_dir: Path | None = None,
    stdin: bytes | None = None,
) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    code = run(
        handler,
        name=NAME,
        cache=cache_dir is not None,
        cache_dir=str(cache_dir) if cache_dir else None,
        argv=list(argv),
        stdin=io.BytesIO(request(image) if stdin is None else stdin),
        stdout=out,
        stderr=err,
        clock=lambda: NOW,
    )
    return code, out.getvalue(), err.getvalue()


def metrics(path: Path) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Sample name -> {sorted labels: value}, as Prometheus's parser reads the file."""
    got: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            got.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return got


def value(got: dict[str, Any], name: str, registry: str = "r.example.com", **labels: str) -> float:
    key = tuple(sorted({"plugin": NAME, "registry": registry, **labels}.items()))
    return float(got[name][key])


@pytest.fixture
def prom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "textfile" / f"credprov_plugin_{NAME}.prom"
    path.parent.mkdir()
    monkeypatch.setenv(METRICS_FILE_ENV, str(path))
    return path


# -- the registry label -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "host"),
    [
        ("nginx", "docker.io"),
        ("nginx:1.25", "docker.io"),
        ("nginx@sha256:" + "a" * 64, "docker.io"),
        ("library/nginx:latest", "docker.io"),
        ("r.example.com/team/app:v1", "r.example.com"),
        ("r.example.com:5000/a@sha256:" + "b" * 64, "r.example.com:5000"),
        ("localhost/app", "localhost"),
        ("Upper/app", "Upper"),
        ("[::1]:5000/app", "[::1]:5000"),
        ("user:pass@r.example.com/app", "invalid"),
        ("r.exa mple.com/app", "invalid"),
        ("a" * 300 + ".com/app", "invalid"),
        ("", ""),
    ],
)
def test_registry_is_the_host_never_the_repository_tag_or_digest(image: str, host: str) -> None:
    assert tm.registry_host(image) == host


# -- what a run records -----------------------------------------------------------------------


def test_an_answer_counts_a_call_latency_and_the_expiry(prom: Path) -> None:
    code, out, _ = call()
    assert code == EXIT_OK and json.loads(out)["cacheDuration"] == "1h0m0s"
    got = metrics(prom)
    assert value(got, "credprov_plugin_calls_total", result="ok") == 1
    assert value(got, "credprov_plugin_calls_total", result="error") == 0
    assert value(got, "credprov_plugin_duration_seconds_count") == 1
    assert value(got, "credprov_plugin_duration_seconds_bucket", le="+Inf") == 1
    assert 0 < value(got, "credprov_plugin_duration_seconds_sum") < 30
    assert value(got, "credprov_plugin_cache_hits_total") == 0
    assert value(got, "credprov_plugin_credentials_expiry_timestamp_seconds") == NOW + 3600
    assert value(got, "credprov_plugin_last_call_timestamp_seconds") == NOW
    assert "credprov_plugin_errors_total" not in got
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644


def test_the_credentials_own_expiry_wins_and_survives_the_plugin_cache(
    prom: Path, tmp_path: Path
) -> None:
    def own(request: Any, ctx: Any) -> Response:
        return Response({request.registry: ("u", "p")}, "Registry", "1h", expires_at=NOW + 600)

    for _ in range(2):
        assert call(own, cache_dir=tmp_path / "cache")[0] == EXIT_OK
    got = metrics(prom)
    assert value(got, "credprov_plugin_credentials_expiry_timestamp_seconds") == NOW + 600
    assert value(got, "credprov_plugin_cache_hits_total") == 1
    assert value(got, "credprov_plugin_calls_total", result="ok") == 2


def test_no_expiry_when_the_answer_leaves_the_duration_to_the_kubelet(prom: Path) -> None:
    assert call(lambda r, c: Response({r.registry: ("u", "p")}))[0] == EXIT_OK
    assert "credprov_plugin_credentials_expiry_timestamp_seconds" not in metrics(prom)


def test_the_default_cache_directory_still_serves_hits(
    prom: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREDPROV_PLUGIN_CACHE_DIR", str(tmp_path / "default-cache"))
    for _ in range(3):
        out, err = io.BytesIO(), io.StringIO()
        run(ok, name=NAME, cache=True, argv=[], stdin=io.BytesIO(request()), stdout=out, stderr=err)
    assert value(metrics(prom), "credprov_plugin_cache_hits_total") == 2


def _raise(exc: BaseException) -> Callable[..., Response]:
    def handler(request: Any, ctx: Any) -> Response:
        raise exc

    return handler


def _timeout_chain(request: Any, ctx: Any) -> Response:
    try:
        raise TimeoutError("timed out")
    except TimeoutError as exc:
        raise ProviderError("token exchange failed") from exc


@pytest.mark.parametrize(
    ("kwargs", "code", "reason", "registry"),
    [
        ({"handler": _raise(ProviderError("no"))}, EXIT_ERROR, "provider", "r.example.com"),
        ({"handler": _raise(RuntimeError("bug"))}, EXIT_INTERNAL, "internal", "r.example.com"),
        ({"handler": _raise(TimeoutError())}, EXIT_INTERNAL, "timeout", "r.example.com"),
        ({"handler": _timeout_chain}, EXIT_ERROR, "timeout", "r.example.com"),
        ({"handler": _raise(KeyboardInterrupt())}, 130, "interrupted", "r.example.com"),
        ({"stdin": b"{not json"}, EXIT_ERROR, "request", ""),
        ({"argv": ("--bogus",)}, EXIT_USAGE, "usage", ""),
    ],
)
def test_a_failure_counts_an_error_with_its_reason(
    prom: Path, kwargs: dict[str, Any], code: int, reason: str, registry: str
) -> None:
    assert call(**kwargs)[0] == code
    got = metrics(prom)
    assert value(got, "credprov_plugin_calls_total", registry, result="error") == 1
    assert value(got, "credprov_plugin_errors_total", registry, reason=reason) == 1
    assert set(got["credprov_plugin_errors_total"]) == {
        tuple(sorted({"plugin": NAME, "registry": registry, "reason": reason}.items()))
    }


def test_help_version_and_clear_cache_are_not_calls(prom: Path, tmp_path: Path) -> None:
    for argv in (("--help",), ("--version",), ("--clear-cache",)):
        assert call(argv=argv, cache_dir=tmp_path / "c")[0] == EXIT_OK
    assert not prom.exists()


def test_runs_accumulate_per_registry(prom: Path) -> None:
    for image in ("r.example.com/a", "r.example.com/b:1", "nginx", "other.io:5000/x"):
        call(image=image)
    got = metrics(prom)
    assert value(got, "credprov_plugin_calls_total", result="ok") == 2
    assert value(got, "credprov_plugin_calls_total", "docker.io", result="ok") == 1
    assert value(got, "credprov_plugin_calls_total", "other.io:5000", result="ok") == 1


def test_no_secret_and_no_image_path_in_the_file(prom: Path) -> None:
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln" + CANARY
    body = json.dumps(
        {
            "kind": "CredentialProviderRequest",
            "apiVersion": f"{G}/v1",
            "image": "r.example.com/secret-team/app:tag-" + CANARY,
            "serviceAccountToken": token,
        }
    ).encode()
    call(stdin=body)
    call(_raise(ProviderError(f"refused {CANARY}")))
    text = prom.read_text()
    assert CANARY not in text and "secret-team" not in text and "user" not in text


# -- the option and the environment -----------------------------------------------------------


def test_off_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METRICS_FILE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert call()[0] == EXIT_OK
    assert list(tmp_path.iterdir()) == []


def test_the_option_wins_over_the_environment_and_empty_is_off(prom: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.prom"
    assert call(argv=("--metrics-file", str(other)))[0] == EXIT_OK
    assert other.exists() and not prom.exists()
    assert call(argv=("--metrics-file=",))[0] == EXIT_OK
    assert not prom.exists()


def test_the_option_does_not_scope_the_plugin_cache(prom: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    call(cache_dir=cache)
    call(cache_dir=cache, argv=("--metrics-file", str(prom)))
    assert value(metrics(prom), "credprov_plugin_cache_hits_total") == 1


def test_help_documents_the_option() -> None:
    _, out, _ = call(argv=("--help",))
    assert b"--metrics-file PATH" in out and b"$CREDPROV_METRICS_FILE" in out


def test_telemetry_off_imports_nothing_more() -> None:
    code = (
        "import io, os, sys; os.environ.pop('CREDPROV_METRICS_FILE', None)\n"
        "from credprov.sdk import Response, run\n"
        'req = b\'{"kind":"CredentialProviderRequest","apiVersion":"' + G + "/v1\",'"
        ' b\'"image":"r.example.com/a"}\'\n'
        "run(lambda r, c: Response({}), name='x', argv=[], stdin=io.BytesIO(req),"
        " stdout=io.BytesIO(), stderr=io.StringIO())\n"
        "print('credprov.sdk.telemetry' in sys.modules, 'fcntl' in sys.modules,"
        " 'credprov.base.textfile' in sys.modules)\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["False", "False", "False"]


# -- failures never change the answer ---------------------------------------------------------


@pytest.mark.parametrize("case", ["directory", "no-such-dir", "not-prom", "symlink", "locked"])
def test_a_telemetry_failure_keeps_the_answer_and_says_one_line_at_v1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    target = tmp_path / "m.prom"
    if case == "directory":
        target.mkdir()
    elif case == "no-such-dir":
        target = tmp_path / "missing" / "m.prom"
    elif case == "not-prom":
        target = tmp_path / "m.txt"
    elif case == "symlink":
        (tmp_path / "real").write_text("keep\n")
        target.symlink_to(tmp_path / "real")
    elif case == "locked":
        import fcntl

        fd = os.open(str(target) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        monkeypatch.setattr(tm, "LOCK_TIMEOUT_SECONDS", 0.05)
    monkeypatch.setenv(METRICS_FILE_ENV, str(target))
    quiet = call()
    monkeypatch.delenv(METRICS_FILE_ENV)
    assert quiet == call()  # same answer, exit code and (empty) stderr as telemetry off
    monkeypatch.setenv(METRICS_FILE_ENV, str(target))
    code, out, err = call(argv=("-v", "1"))
    assert code == EXIT_OK and json.loads(out)["auth"]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{NAME}: telemetry: ")
    assert CANARY not in err
    if case == "symlink":
        assert (tmp_path / "real").read_text() == "keep\n"


@pytest.mark.parametrize(
    "content",
    [
        b"something else 1\n",
        tm.HEADER.encode() + b'credprov_plugin_calls_total{plugin="x"} 1\n',
        tm.HEADER.encode()
        + b'credprov_plugin_calls_total{plugin="x",registry="r",result="ok"} -1\n',
        tm.HEADER.encode()
        + b'credprov_plugin_calls_total{plugin="x",registry="r",result="ok"} 1.5\n',
        tm.HEADER.encode() + b'credprov_plugin_other{plugin="x",registry="r"} 1\n',
        tm.HEADER.encode()
        + b'credprov_plugin_errors_total{plugin="x",registry="r",reason="new"} 1\n',
        tm.HEADER.encode() + b"broken{\n",
        b"\xff\xfe not utf-8",
    ],
)
def test_a_corrupt_or_foreign_file_is_started_over(prom: Path, content: bytes) -> None:
    prom.write_bytes(content)
    code, _, err = call(argv=("-v", "1"))
    assert code == EXIT_OK
    assert err.startswith(f"{NAME}: telemetry: started {prom} over (") and err.count("\n") == 1
    got = metrics(prom)
    assert got["credprov_plugin_calls_total"] == {
        (("plugin", NAME), ("registry", "r.example.com"), ("result", "error")): 0,
        (("plugin", NAME), ("registry", "r.example.com"), ("result", "ok")): 1,
    }


def test_a_file_too_large_is_started_over(prom: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tm, "MAX_FILE_BYTES", 100)
    call()
    assert prom.stat().st_size > 100
    assert "larger than 100 bytes" in call(argv=("-v", "1"))[2]
    assert value(metrics(prom), "credprov_plugin_calls_total", result="ok") == 1


# -- the file ---------------------------------------------------------------------------------


def test_the_file_reads_back_exactly() -> None:
    t = tm.Telemetry()
    for i, (registry, reason) in enumerate(
        [("a.io", None), ("a.io", "provider"), ("b.io", "timeout"), ("a.io", None)]
    ):
        t.observe(
            tm.Observation(
                "p", registry, reason=reason, seconds=0.01 * i, now=NOW + i, expiry=NOW + 60
            )
        )
    data = t.dumps()
    assert tm.Telemetry.loads(data.decode()).dumps() == data


def test_series_are_capped_and_the_oldest_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tm, "MAX_SERIES", 3)
    t = tm.Telemetry()
    for i, registry in enumerate(["a.io", "b.io", "c.io", "a.io", "d.io"]):
        t.observe(tm.Observation("p", registry, now=NOW + i))
    assert sorted(r for _, r in t.series) == ["a.io", "c.io", "d.io"]
    assert t.series[("p", "a.io")].calls["ok"] == 2


def test_unknown_reasons_are_refused() -> None:
    with pytest.raises(ValueError):
        tm.Observation("p", "a.io", reason="because")
    assert tm.failure_reason("nonsense", None) == "internal"


def test_a_sample_parses_with_prometheus_client(prom: Path) -> None:
    call()
    call(image="nginx")
    call(_raise(ProviderError("no")))
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert {n: f.type for n, f in families.items()} == {
        "credprov_plugin_calls": "counter",
        "credprov_plugin_errors": "counter",
        "credprov_plugin_duration_seconds": "histogram",
        "credprov_plugin_cache_hits": "counter",
        "credprov_plugin_credentials_expiry_timestamp_seconds": "gauge",
        "credprov_plugin_last_call_timestamp_seconds": "gauge",
    }
    buckets = [
        s
        for s in families["credprov_plugin_duration_seconds"].samples
        if s.name.endswith("_bucket") and s.labels["registry"] == "r.example.com"
    ]
    assert [s.labels["le"] for s in buckets] == [*(str(b) for b in tm.BUCKETS), "+Inf"]
    counts = [s.value for s in buckets]
    assert counts == sorted(counts) and counts[-1] == 2
