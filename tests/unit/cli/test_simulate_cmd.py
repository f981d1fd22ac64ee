"""``credprov simulate``: the shipped scenarios, and strict one-line scenario errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from credprov.cli import simulate_cmd
from credprov.errors import CredprovError

CONFIG = Path(__file__).resolve().parents[3] / "config"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="credprov")
    parser.add_argument("-v", dest="verbosity", default=0)
    sub = parser.add_subparsers(dest="command")
    simulate_cmd.add_parser(sub)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


def simulate(capsys: pytest.CaptureFixture[str], path: Path | str, *extra: str) -> Any:
    code = run(["simulate", str(path), "-o", "json", *extra])
    out = json.loads(capsys.readouterr().out)
    out["code"] = code
    return out


def decisions(out: Any) -> list[str | None]:
    return [s.get("decision") for s in out["steps"]]


def test_blog_pod_a_pod_b(capsys: pytest.CaptureFixture[str]) -> None:
    out = simulate(capsys, CONFIG / "simulate-blog-pod-a-pod-b.yaml")
    assert out["code"] == 0 and out["ok"]
    assert decisions(out) == ["pulled", "failed", "never-pull", "present", None, "failed"]
    pod_b, pod_b_never = out["steps"][1], out["steps"][2]
    assert pod_b["metricLabels"] == {
        "pull_policy": "ifnotpresent",
        "present_locally": "true",
        "pull_required": "true",
    }
    assert [a["credential"] for a in pod_b["attempts"]] == ["anonymous"]
    assert pod_b_never["events"] == [
        {
            "type": "Warning",
            "reason": "ErrImageNeverPull",
            "message": 'Container image "registry.example.com/private/foo:1.0" is not present '
            "with pull policy of Never",
        }
    ]
    [record] = out["records"]
    creds = record["credentialMapping"]["registry.example.com/private/foo"]
    assert creds["kubernetesSecrets"][0]["name"] == "secret-1"


def test_tenant_isolation(capsys: pytest.CaptureFixture[str]) -> None:
    out = simulate(capsys, CONFIG / "simulate-tenant-isolation.yaml")
    assert out["code"] == 0
    assert decisions(out) == [
        *("pulled", "failed", "pulled", "present"),
        *("pulled", "present", "present"),
    ]
    snoop = out["steps"][1]
    assert [a["credential"] for a in snoop["attempts"]] == ["secret:team-b/regcred"]
    assert len(out["records"]) == 3


def test_rotation(capsys: pytest.CaptureFixture[str]) -> None:
    out = simulate(capsys, CONFIG / "simulate-rotation.yaml")
    assert out["code"] == 0
    assert decisions(out) == ["pulled", None, None, "present", "present", "never-pull"]
    [record] = out["records"]
    secrets = record["credentialMapping"]["registry.example.com/private/api"]["kubernetesSecrets"]
    # The rotated hash replaced the old one; the copy's coordinates were learnt by hash.
    assert [(s["namespace"], s["name"]) for s in secrets] == [
        ("prod", "regcred"),
        ("staging", "copied-regcred"),
    ]
    assert secrets[0]["credentialHash"] == secrets[1]["credentialHash"]


def test_text_output_redacts_passwords(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["simulate", str(CONFIG / "simulate-blog-pod-a-pod-b.yaml")]) == 0
    text = capsys.readouterr().out
    assert "s3cret-x" not in text
    assert "decision: refused: ErrImageNeverPull  [as expected]" in text
    assert "metric: pull_policy=never present_locally=true pull_required=true" in text
    out = simulate(capsys, CONFIG / "simulate-blog-pod-a-pod-b.yaml")
    assert "s3cret-x" not in json.dumps(out)


def test_root_keeps_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    simulate(capsys, CONFIG / "simulate-blog-pod-a-pod-b.yaml", "--root-dir", str(tmp_path))
    assert len(list((tmp_path / "image_manager" / "pulled").iterdir())) == 1


BASE = """
registry:
  images: [{name: "r.example/p/a:1", id: "sha256:01"}]
  users: [{username: u, password: p, repos: ["r.example/p/*"]}]
"""


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(body)
    return path


def test_unmet_expectation_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        BASE
        + """
steps:
  - pod: {namespace: ns, name: p, image: "r.example/p/a:1", imagePullPolicy: IfNotPresent}
    expect: pulled
""",
    )
    out = simulate(capsys, path)
    assert out["code"] == 1 and not out["ok"]
    assert decisions(out) == ["failed"]


def test_feature_gate_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        BASE
        + """
featureGate: false
secrets: [{namespace: ns, name: s, auths: {r.example: {username: u, password: p}}}]
steps:
  - pod: {namespace: ns, name: a, image: "r.example/p/a:1", imagePullSecrets: [s]}
    expect: pulled
  - pod: {namespace: other, name: b, image: "r.example/p/a:1", imagePullPolicy: Never}
    expect: present
""",
    )
    out = simulate(capsys, path)
    assert out["code"] == 0 and out["records"] == []
    assert out["steps"][1]["message"].endswith("already present on machine")


IMAGE_VOLUMES = (
    BASE
    + """
secrets: [{namespace: ns, name: s, auths: {r.example: {username: u, password: p}}}]
steps:
  - name: an image volume is pulled with the pod's pull secret
    pod:
      namespace: ns
      name: a
      imageVolume: {name: model, reference: "r.example/p/a:1"}
      imagePullSecrets: [s]
    expect: pulled
  - name: the record grants the secret to a container of another pod
    pod: {namespace: ns, name: b, image: "r.example/p/a:1", imagePullSecrets: [s]}
    expect: present
  - name: a pod without the secret may not use it as an image volume
    pod:
      namespace: other
      name: c
      imageVolume: {name: model, reference: "r.example/p/a:1", pullPolicy: Never}
    expect: never-pull
"""
)


def test_image_volume_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Image volumes (GA in 1.36) are pulled with the pod's credentials like container
    images, so a pod step may name one: same decisions, same records."""
    from credprov.cli.main import main as credprov_main

    path = write(tmp_path, IMAGE_VOLUMES)
    assert credprov_main(["simulate", str(path), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert decisions(out) == ["pulled", "present", "never-pull"]
    assert [s.get("imageVolume") for s in out["steps"]] == ["model", None, "model"]
    assert out["steps"][0]["imagePullPolicy"] == "IfNotPresent"  # defaulted like a container's
    assert [a["credential"] for a in out["steps"][0]["attempts"]] == ["secret:ns/s"]
    [record] = out["records"]
    assert record["credentialMapping"]["r.example/p/a"]["kubernetesSecrets"][0]["name"] == "s"

    assert credprov_main(["simulate", str(path)]) == 0
    text = capsys.readouterr().out
    assert "    pod ns/a image volume model: r.example/p/a:1 (IfNotPresent)" in text.splitlines()
    assert "    pod ns/b image r.example/p/a:1 (IfNotPresent)" in text.splitlines()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("steps: []", "steps: must hold at least one step"),
        ("stepz: []", "scenario: unknown field 'stepz'"),
        ("steps: [{restart: true, removeImage: x}]", "steps[0]: needs exactly one of"),
        (
            "steps: [{pod: {namespace: ns, name: p, image: x, imagePullPolicy: Sometimes}}]",
            "steps[0].pod.imagePullPolicy: must be one of Always, IfNotPresent, Never",
        ),
        (
            "steps: [{pod: {namespace: ns, name: p, image: x, imagePullSecrets: [nope]}}]",
            "steps[0].pod.imagePullSecrets[0]: no secret ns/nope in 'secrets'",
        ),
        ("policy: Sometimes\nsteps: [{restart: true}]", "policy: invalid configuration: option"),
        (
            "allowlist: [a.io/*]\nsteps: [{restart: true}]",
            "policy: invalid configuration: can't set `preloadedImagesVerificationAllowlist`",
        ),
        ("registry: {users: [{username: u, repos: []}]}\nsteps: [{restart: true}]",
         "registry.users[0]: needs username and password"),
        ("images: [{id: x, names: ['a/Bad']}]\nsteps: [{restart: true}]",
         "images[0].names[0]: invalid image reference 'a/Bad'"),
        ("steps: [{restart: true, expect: pulled}]",
         "steps[0].expect: only pod steps have an expected decision"),
        ("secrets: [{namespace: ns, name: s, auths: {r: {auth: '!!'}}}]\nsteps: [{restart: true}]",
         "secrets[0].auths: illegal base64"),
        ("steps: [{pod: {namespace: ns, name: p}}]",
         "steps[0].pod: needs exactly one of image, imageVolume"),
        ("steps: [{pod: {namespace: ns, name: p, image: x, imageVolume: {name: v, reference: x}}}]",
         "steps[0].pod: needs exactly one of image, imageVolume"),
        ("steps: [{pod: {namespace: ns, name: p, imageVolume: {name: v}}}]",
         "steps[0].pod.imageVolume: missing required field 'reference'"),
        ("steps: [{pod: {namespace: ns, name: p, imageVolume: {name: v, reference: x, pullPolicy: Sometimes}}}]",
         "steps[0].pod.imageVolume.pullPolicy: must be one of Always, IfNotPresent, Never"),
        ("steps: [{pod: {namespace: ns, name: p, imageVolume: {name: v, reference: x}, imagePullPolicy: Never}}]",
         "steps[0].pod.imagePullPolicy: use imageVolume.pullPolicy for an image volume"),
        ("steps: [{pod: {namespace: ns, name: p, imageVolume: [v]}}]",
         "steps[0].pod.imageVolume: must be a mapping, not list"),
        ("- a list", "scenario: must be a mapping, not list"),
        ("root: /tmp\nsteps: [{restart: true}]",
         "root: a scenario cannot choose where records are written; "
         "give --root-dir DIR on the command line"),
        ("steps: [", "is not valid YAML"),
    ],
)  # fmt: skip
def test_invalid_scenarios(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(CredprovError) as info:
        run(["simulate", str(path)])
    text = str(info.value)
    assert "\n" not in text and message in text, text
    assert text.startswith(f"scenario {path}")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CredprovError, match="cannot read scenario"):
        run(["simulate", str(tmp_path / "nope.yaml")])


def test_preloaded_tracking_example_and_the_upstream_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from credprov.cli.main import main as credprov_main

    example = Path(__file__).resolve().parents[3] / "config" / "simulate-preloaded-same-digest.yaml"
    assert credprov_main(["simulate", str(example)]) == 0
    upstream = tmp_path / "upstream.yaml"
    upstream.write_text(
        example.read_text().replace("trackPreloadedImages: true", "trackPreloadedImages: false")
    )
    assert credprov_main(["simulate", str(upstream)]) == 1
    assert "step 3: expected present, got never-pull" in capsys.readouterr().err


def test_each_pull_names_the_hosts_the_runtime_contacts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    certs = tmp_path / "certs.d" / "registry.example.com"
    certs.mkdir(parents=True)
    (certs / "hosts.toml").write_text('[host."https://cache.internal"]\n')
    scenario = CONFIG / "simulate-blog-pod-a-pod-b.yaml"
    out = simulate(capsys, scenario, "--containerd-config-path", str(tmp_path / "certs.d"))
    routes = out["steps"][0]["runtimeRoutes"]
    assert [c["host"] for c in routes[0]["contacts"]] == ["cache.internal", "registry.example.com"]
    assert "runtimeRoutes" not in out["steps"][2]  # Never: no pull, no route
    assert "runtimeRoutes" not in simulate(capsys, scenario)["steps"][0]
    assert run(["simulate", str(scenario), "--containerd-config-path", str(certs)]) == 0
    text = capsys.readouterr().out
    assert (
        "    runtime containerd contacts: registry.example.com (registry; resolve, pull)\n" in text
    )
