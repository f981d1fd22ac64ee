"""``credprov kep4412 wire``: arguments, output forms, files, the proof's report and exit
statuses, through :func:`credprov.cli.main.main`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from credprov._go.json import load_yaml_all
from credprov.cli.main import main
from credprov.nodeauth import wiring as w

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = str(ROOT / "config" / "kep4412-wire.yaml")
OBJECTS = str(ROOT / "config" / "kep4412-wire-objects.yaml")
FLAGS = [
    "--provider", "example-credential-provider",
    "--match-image", "registry.example.com",
    "--audience", "registry.example.com",
    "--cache-type", "ServiceAccount",
    "--required-annotation", "registry.example.com/role",
    "--default-cache-duration", "5m",
    "--service-account", "team-a/builder:registry.example.com/role=puller",
]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["kep4412", "wire", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_prints_the_manifests(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, EXAMPLE)
    assert code == 0
    expected = w.build(w.load_spec(EXAMPLE))
    assert out == w.render_yaml(expected.manifests)
    assert [d["kind"] for d in load_yaml_all(out)] == [
        "CredentialProviderConfig",
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
    ]
    assert err == (
        "credprov: warning: service account team-b/default: no value given for required "
        "annotation registry.example.com/role; its pods get no credentials from the provider "
        "unless the cluster's object has it\n"
    )


def test_the_config_document_is_a_config_the_kubelet_loads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from credprov.credentialprovider.plugin.config import load_config

    code, out, _ = run(capsys, *FLAGS)
    assert code == 0
    config = tmp_path / "config.yaml"
    config.write_text(out.split("\n---\n")[0])
    loaded, _ = load_config(str(config))
    assert loaded.providers[0].token_attributes is not None


def test_flags_alone_and_flags_over_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *FLAGS, "-o", "json")
    assert code == 0
    document = json.loads(out)
    entry = document["manifests"][0]["providers"][0]
    assert entry["tokenAttributes"]["requireServiceAccount"] is True
    assert entry["defaultCacheDuration"] == "5m0s"
    assert document["warnings"] == [] and document["files"] == [] and document["proof"] is None

    code, out, _ = run(
        capsys, EXAMPLE, "--cache-type", "Token", "--no-require-service-account",
        "--required-annotation", "registry.example.com/team", "--optional-annotation", "x/y",
        "--service-account", "team-c/ci", "-o", "json",
    )  # fmt: skip
    assert code == 2  # requiredServiceAccountAnnotationKeys with requireServiceAccount false
    code, out, _ = run(
        capsys, EXAMPLE, "--cache-type", "Token", "--provider", "renamed",
        "--service-account", "team-c/ci", "-o", "json",
    )  # fmt: skip
    assert code == 0
    manifests = json.loads(out)["manifests"]
    assert manifests[0]["providers"][0]["name"] == "renamed"
    assert manifests[0]["providers"][0]["tokenAttributes"]["cacheType"] == "Token"
    assert manifests[1]["metadata"]["name"] == "kep4412-renamed"
    assert manifests[1]["rules"][0]["resourceNames"] == ["builder", "ci", "default"]


def test_out_writes_one_file_per_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "wiring"
    code, out, _ = run(capsys, EXAMPLE, "--out", str(out_dir))
    assert code == 0
    names = sorted(os.listdir(out_dir))
    assert len(names) == 4
    assert out == "".join(
        f"wrote {out_dir / n}\n"
        for n in (
            "credentialproviderconfig-example-credential-provider.yaml",
            "clusterrole-kep4412-example-credential-provider.yaml",
            "clusterrolebinding-kep4412-example-credential-provider.yaml",
            "serviceaccount-team-a.builder.yaml",
        )
    )
    code, out, _ = run(capsys, EXAMPLE, "--out", str(out_dir), "-o", "json")
    assert code == 0 and len(json.loads(out)["files"]) == 4


def test_the_proof_reports_each_pod_and_exits_1_when_one_is_denied(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, EXAMPLE, "--objects", OBJECTS)
    assert code == 1
    assert out == w.render_yaml(w.build(w.load_spec(EXAMPLE)).manifests)
    report = err.splitlines()[1:]
    assert report[0] == (
        f'proof: {OBJECTS} plus the generated objects, audience "registry.example.com"'
    )
    assert [line.split()[:2] for line in report[1:-1]] == [
        ["allowed", "team-a/app"],
        ["allowed", "team-a/app-canary"],
        ["denied", "team-b/web"],
        ["denied", "team-c/job"],
        ["skipped", "team-a/pending"],
    ]
    assert "required annotation registry.example.com/role not found" in report[3]
    assert "pulls a matched image" in report[4]
    assert 'not authorized to request tokens for audience "registry.example.com"' in report[4]
    assert report[-1] == "5 pods: 2 allowed, 2 denied, 1 skipped"


def test_the_proof_passes_once_the_missing_pieces_are_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        capsys, EXAMPLE, "--objects", OBJECTS, "-o", "json",
        "--service-account", "team-b/default:registry.example.com/role=reader",
        "--service-account", "team-c/deployer",
    )  # fmt: skip
    assert code == 0
    proof = json.loads(out)["proof"]
    assert proof["allowed"] is True
    assert {p["name"]: p["status"] for p in proof["pods"]} == {
        "app": "allowed",
        "app-canary": "allowed",
        "web": "allowed",
        "job": "allowed",
        "pending": "skipped",
    }
    assert "eyJ" not in out  # no token


BAD: list[tuple[str, list[str], str]] = [
    ("a missing file", ["missing.yaml"], "cannot read wiring file missing.yaml"),
    ("no service account", [*FLAGS[:-2]], "no service accounts"),
    ("a bad --service-account", [*FLAGS, "--service-account", "builder"],
     "--service-account 'builder': want NAMESPACE/NAME[:KEY=VALUE]"),
    ("a --service-account annotation without a value", [*FLAGS, "--service-account", "a/b:k"],
     "want NAMESPACE/NAME[:KEY=VALUE]"),
    ("an unknown gate", [*FLAGS, "--feature-gates", "Nope=true"],
     "--feature-gates: unrecognized feature gate: Nope"),
    ("the kubelet's validation", [*FLAGS, "--cache-type", "Pod"],
     'providers.tokenAttributes.cacheType: Unsupported value: "Pod"'),
    ("an unreadable objects file", [*FLAGS, "--objects", "nope.yaml"],
     "cannot read objects file nope.yaml"),
    ("nothing at all", [], "providers.matchImages: Required value"),
    ("no provider name", FLAGS[2:], "provider entry: name is required"),
]  # fmt: skip


@pytest.mark.parametrize("case, argv, message", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_one_line_exit_2(
    case: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("credprov: error: ") and message in err
    assert [line for line in err.splitlines() if not line.startswith("credprov: hint: ")] == [
        err.splitlines()[0]
    ]


def test_bad_input_files_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: credprov.io/v1alpha1\nkind: KEP4412Wiring\nprovider: {a: 1}\n")
    code, _, err = run(capsys, str(bad))
    assert code == 2
    assert err == (
        f'credprov: error: wiring file {bad}: strict decoding error: unknown field "provider.a"\n'
    )
    objects = tmp_path / "objects.yaml"
    objects.write_text("- 1\n")
    code, _, err = run(capsys, *FLAGS, "--objects", str(objects))
    assert code == 2 and err.count("\n") == 1 and "not an object" in err


def test_a_bad_duration_is_argparse_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["kep4412", "wire", "--default-cache-duration", "soon"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith(
        "credprov kep4412 wire: error: argument --default-cache-duration:"
    )


def test_stdin_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    data = Path(EXAMPLE).read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "-")
    assert code == 0 and out.startswith("---\n# kubelet:")


def test_help_says_what_it_makes_and_proves(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["kep4412", "wire", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in (
        "request-serviceaccounts-token-audience",
        "system:nodes",
        "KEP4412Wiring",
        "--objects FILE",
        "--service-account NS/NAME[:KEY=VALUE]",
        "--out DIR",
        "Exit 0; 1 when a pod is denied; 2 for bad input",
    ):
        assert words in text, words


def _json(out: str) -> Any:
    return json.loads(out)


def test_json_manifests_equal_the_yaml_ones(capsys: pytest.CaptureFixture[str]) -> None:
    _, yaml_out, _ = run(capsys, EXAMPLE)
    _, json_out, _ = run(capsys, EXAMPLE, "-o", "json")
    assert _json(json_out)["manifests"] == load_yaml_all(yaml_out)
