"""Inputs that used to end in "internal error" (exit 70), and what the kubelet says instead.

Issue 11, §4/§5/§8: lone UTF-16 surrogates, deep nesting, wrong types, 5,000-digit
integers, an argument that is not UTF-8; YAML that is not UTF-8; the CLI's error and hint
lines; ``config validate -``; the plugin's start and wait logs; ``simulate``'s root.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from credprov.cli.main import main
from credprov.pullmanager.types import cache_filename

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "config" / "credential-provider-config.yaml")
BIN_DIR = str(ROOT / "config" / "bin")
DEEP_YAML = "a: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_JSON = "[" * 5000 + "]" * 5000
BIG = "1" * 5000
RECORD_REF = "sha256:" + "5e" * 32

FILES = {
    "surrogate-config.json": (
        '{"kind":"CredentialProviderConfig","apiVersion":"kubelet.config.k8s.io/v1",'
        '"providers":[{"name":"a\\ud800","matchImages":["x.io"],"defaultCacheDuration":"1m",'
        '"apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}'
    ),
    "deep.yaml": DEEP_YAML,
    "deep.json": DEEP_JSON,
    "metadata-list.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata: [1]\ntype: kubernetes.io/dockerconfigjson\n"
        "stringData: {.dockerconfigjson: '{}'}\n"
    ),
    "bigint-secret.yaml": f"apiVersion: v1\nkind: Secret\nmetadata: {{name: a, uid: {BIG}}}\n",
    "bigint-objects.yaml": (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n, uid: x, generation: {BIG}}}\n"
    ),
    "sa-annotations.yaml": (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n, uid: x}}\n"
        "- {apiVersion: v1, kind: ServiceAccount, metadata: {name: s, namespace: d, uid: u, "
        "annotations: x}}\n"
    ),
    "surrogate-objects.json": (
        '{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node",'
        '"metadata":{"name":"n\\ud800","uid":"x"}},{"apiVersion":"v1","kind":"Pod",'
        '"metadata":{"name":"p\\udc00","namespace":"d","uid":"u"},"spec":{"nodeName":'
        '"n\\ud800","imagePullSecrets":[{"name":"s\\ud800"}],"containers":[{"name":"c",'
        '"image":"r.io/x"}]}}]}'
    ),
    "bigint-scenario.yaml": f"policy: {BIG}\nsteps: []\n",
    "surrogate-docker-config.json": '{"auths":{"r.io":{"username":"u\\ud800","password":"p"}}}',
}


def _root_with_surrogate_record(tmp: Path) -> str:
    pulled = tmp / "kubelet" / "image_manager" / "pulled"
    pulled.mkdir(parents=True)
    (pulled / cache_filename(RECORD_REF)).write_text(
        '{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1",'
        f'"lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"{RECORD_REF}",'
        '"credentialMapping":{"docker.io/a\\udc00":{"nodePodsAccessible":true}}}'
    )
    return str(tmp / "kubelet")


def _get_credentials(*extra: str) -> list[str]:
    return ["get-credentials", "r.io/x", "--config", CONFIG, "--bin-dir", BIN_DIR, *extra]


CASES = [
    ("config-surrogate-json", ["config", "validate", "{surrogate-config.json}", "-o", "json"], 0),
    ("pull-secret-deep-yaml", _get_credentials("--pull-secret", "{deep.yaml}"), 0),
    ("pull-secret-deep-json", _get_credentials("--pull-secret", "{deep.json}"), 1),
    ("pull-secret-metadata-list", _get_credentials("--pull-secret", "{metadata-list.yaml}"), 1),
    # go-yaml reads a 5,000-digit plain scalar as a string (it is neither an int64, a uint64 nor
    # a finite float), so the uid is a valid string: the Secret decodes (and carries no type).
    ("pull-secret-bigint", _get_credentials("--pull-secret", "{bigint-secret.yaml}"), 0),
    ("objects-deep", ["nodeauth", "audit", "--objects", "{deep.yaml}", "--node", "n"], 1),
    ("objects-bigint", ["nodeauth", "audit", "--objects", "{bigint-objects.yaml}", "--node", "n"], 1),
    ("objects-sa-annotations", ["nodeauth", "audit", "--objects", "{sa-annotations.yaml}", "--node", "n"], 1),
    ("objects-surrogate-names", ["nodeauth", "audit", "--objects", "{surrogate-objects.json}", "--node", "n\ufffd", "-o", "json"], 0),
    ("scenario-deep", ["simulate", "{deep.yaml}"], 1),
    ("scenario-bigint", ["simulate", "{bigint-scenario.yaml}"], 1),
    ("docker-config-surrogate-json", _get_credentials("--node-docker-config", "{surrogate-docker-config.json}", "-o", "json"), 0),
    ("docker-config-surrogate-text", _get_credentials("--node-docker-config", "{surrogate-docker-config.json}"), 0),
    ("records-surrogate-verify", ["pull-records", "verify", "--root-dir", "{root}"], 0),
    ("records-surrogate-list", ["pull-records", "list", "--root-dir", "{root}", "-o", "json"], 0),
    ("records-surrogate-migrate", ["pull-records", "migrate", "--root-dir", "{root}"], 0),
    ("records-show-not-utf8", ["pull-records", "show", b"\xff".decode("utf-8", "surrogateescape"), "--root-dir", "{root}"], 1),
]  # fmt: skip


class _Bytes(io.TextIOWrapper):
    """A text stream over bytes, encoding strictly as a UTF-8 terminal would."""


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, like a real stdout
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(argv)
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))  # type: ignore[attr-defined]
    monkeypatch.undo()
    return code, texts[0] + texts[1]


@pytest.mark.parametrize(("name", "argv", "expected"), CASES, ids=[c[0] for c in CASES])
def test_no_internal_error(
    name: str, argv: list[str], expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for file, text in FILES.items():
        (tmp_path / file).write_text(text, encoding="utf-8", errors="surrogatepass")
    values = {f: str(tmp_path / f) for f in FILES}
    values["root"] = _root_with_surrogate_record(tmp_path)
    argv = [values[a[1:-1]] if a.startswith("{") else a for a in argv]
    code, output = _run(argv, monkeypatch)
    assert code == expected, output
    assert "internal error" not in output and "Traceback" not in output
    if code == 1:
        errors = [ln for ln in output.splitlines() if ln.startswith("credprov: error: ")]
        assert len(errors) == 1, output


def test_lone_surrogates_become_replacement_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.json"
    path.write_text(FILES["surrogate-config.json"])
    code, output = _run(["config", "validate", str(path), "-o", "json"], monkeypatch)
    assert code == 0 and json.loads(output)["providers"][0]["name"] == "a\ufffd"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"# \xff\n", "invalid leading UTF-8 octet"),
        (b"# caf\xe9 au lait\n", "invalid trailing UTF-8 octet"),
        (b"apiVersion: x\n# \xe2\x82", "incomplete UTF-8 octet sequence"),
    ],
    ids=["bad-leading-byte", "latin-1-in-comment", "truncated-at-end"],
)
def test_yaml_that_is_not_utf8_is_refused_as_the_kubelet_does(
    data: bytes, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(Path(CONFIG).read_bytes() + data)
    code, output = _run(["config", "validate", str(path)], monkeypatch)
    assert code == 1
    assert output.strip() == (f'credprov: error: error decoding config "{path}": yaml: {problem}')


def test_config_validate_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(Path(CONFIG).read_bytes())))
    code, output = _run(["config", "validate", "-"], monkeypatch)
    assert code == 0 and output.startswith("valid: 1 provider(s), hash sha256:")


def test_missing_plugin_keeps_the_kubelet_text_and_adds_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output = _run([*_get_credentials()[:4], "--bin-dir", str(tmp_path)], monkeypatch)
    assert code == 1
    assert output.splitlines() == [
        "credprov: error: plugin binary executable  did not exist",
        f"credprov: hint: no file at {tmp_path}/example-credential-provider: the provider "
        "name must be the executable's file name in the bin dir",
    ]


def test_plugin_runs_are_logged_with_duration_and_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    image = "registry.example.com/team/app:v1"
    code, output = _run(
        ["get-credentials", image, "--config", CONFIG, "--bin-dir", BIN_DIR, "-v", "4"],
        monkeypatch,
    )
    assert code == 0
    assert (
        "running plugin example-credential-provider for image registry.example.com/team/app"
        in output
    )
    assert "finished in" in output and "ms (exit status 0)" in output
    assert "not-a-real-password" not in output
    code, output = _run(
        ["get-credentials", image, "--config", CONFIG, "--bin-dir", BIN_DIR, "-v", "1"],
        monkeypatch,
    )
    assert "running plugin" not in output


def test_simulate_writes_where_the_command_line_says_and_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "s.yaml"
    text = (ROOT / "config" / "simulate-rotation.yaml").read_text()
    scenario.write_text(text + "root: ../..\n")
    code, output = _run(["simulate", str(scenario)], monkeypatch)
    assert code == 1 and "a scenario cannot choose where records are written" in output
    scenario.write_text(text)
    code, output = _run(["simulate", str(scenario), "-o", "json"], monkeypatch)
    doc = json.loads(output)
    assert code == 0 and doc["rootTemporary"] is True and not Path(doc["root"]).exists()
    code, output = _run(["simulate", str(scenario), "--root-dir", str(tmp_path / "k")], monkeypatch)
    assert code == 0
    assert output.splitlines()[-1] == f"records were written under {tmp_path / 'k'}"
    assert (tmp_path / "k" / "image_manager" / "pulled").is_dir()
