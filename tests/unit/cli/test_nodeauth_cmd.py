"""``credprov nodeauth check`` and ``audit`` on the shipped example cluster."""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from credprov.cli import nodeauth_cmd
from credprov.errors import CredprovError
from tests.conftest import CANARY

ROOT = Path(__file__).resolve().parents[3]
OBJECTS = ROOT / "config" / "nodeauth-objects.yaml"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="credprov")
    parser.add_argument("-v", dest="verbosity", default=0)
    sub = parser.add_subparsers(dest="command")
    nodeauth_cmd.add_parser(sub)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


def check(capsys: pytest.CaptureFixture[str], *argv: str, node: str = "node-a") -> tuple[int, Any]:
    code = run(
        [
            "nodeauth",
            "check",
            "--objects",
            str(OBJECTS),
            "--user",
            f"system:node:{node}",
            "-o",
            "json",
            *argv,
        ]
    )
    return code, json.loads(capsys.readouterr().out)


def test_allowed_secret_text(capsys: pytest.CaptureFixture[str]) -> None:
    code = run(
        [
            "nodeauth",
            "check",
            "--objects",
            str(OBJECTS),
            "--user",
            "system:node:node-a",
            "--verb",
            "get",
            "--resource",
            "secrets",
            "-n",
            "team-a",
            "--name",
            "regcred",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        'allowed: system:node:node-a get secrets "regcred" in namespace "team-a"',
        "reason: (none)",
        "path: secret:team-a/regcred -> pod:team-a/web-0 -> node:node-a",
    ]


def test_refused_secret_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["nodeauth", "check", "--objects", str(OBJECTS), "--user", "system:node:node-a"]
    argv += ["--verb", "get", "--resource", "secrets", "-n", "team-b", "--name", "db-password"]
    assert run(argv) == 1
    assert capsys.readouterr().out.splitlines() == [
        'not allowed (no opinion): system:node:node-a get secrets "db-password" in namespace '
        '"team-b"',
        "reason: no relationship found between node 'node-a' and this object",
        "graph: node 'node-a' cannot get secret team-b/db-password, no relationship to this "
        "object was found in the node authorizer graph",
    ]


@pytest.mark.parametrize(
    ("argv", "node", "allowed", "reason"),
    [
        (
            ["--verb", "get", "--resource", "secrets", "-n", "team-b", "--name", "db-password"],
            "node-b",
            True,
            "",
        ),
        (
            ["--verb", "get", "--resource", "secrets", "-n", "team-a", "--name", "pending-secret"],
            "node-a",
            False,
            "no relationship found between node 'node-a' and this object",
        ),
        (
            ["--verb", "get", "--resource", "secrets", "-n", "storage", "--name", "csi-node-creds"],
            "node-a",
            True,
            "",
        ),
        (
            [
                "--verb",
                "get",
                "--resource",
                "secrets",
                "-n",
                "storage",
                "--name",
                "csi-controller-creds",
            ],
            "node-a",
            False,
            "no relationship found between node 'node-a' and this object",
        ),
        (
            ["--verb", "get", "--resource", "cm", "-n", "team-a", "--name", "report-config"],
            "node-b",
            True,
            "",
        ),
        (
            ["--verb", "get", "--resource", "pvc", "-n", "team-a", "--name", "data"],
            "node-a",
            True,
            "",
        ),
        (
            ["--verb", "get", "--resource", "pv", "--name", "pv-data"],
            "node-b",
            False,
            "no relationship found between node 'node-b' and this object",
        ),
        (
            [
                "--verb",
                "create",
                "--resource",
                "serviceaccounts/token",
                "-n",
                "team-a",
                "--name",
                "builder",
            ],
            "node-a",
            True,
            "",
        ),
        (
            [
                "--verb",
                "create",
                "--resource",
                "serviceaccounts",
                "--subresource",
                "token",
                "-n",
                "team-a",
                "--name",
                "builder",
            ],
            "node-b",
            False,
            "no relationship found between node 'node-b' and this object",
        ),
        (
            ["--verb", "get", "--resource", "sa", "-n", "team-a", "--name", "builder"],
            "node-a",
            True,
            "",
        ),
        (
            [
                "--verb",
                "get",
                "--resource",
                "sa",
                "-n",
                "team-a",
                "--name",
                "builder",
                "--feature-gates",
                "KubeletServiceAccountTokenForCredentialProviders=false",
            ],
            "node-a",
            False,
            "not allowed to get service accounts",
        ),
        (
            ["--verb", "get", "--resource", "volumeattachments", "--name", "csi-0001"],
            "node-a",
            True,
            "",
        ),
        (
            [
                "--verb",
                "get",
                "--resource",
                "volumeattachments.storage.k8s.io",
                "--name",
                "csi-0001",
            ],
            "node-b",
            False,
            "no relationship found between node 'node-b' and this object",
        ),
        (
            [
                "--verb",
                "update",
                "--resource",
                "leases",
                "-n",
                "kube-node-lease",
                "--name",
                "node-a",
            ],
            "node-a",
            True,
            "",
        ),
        (
            ["--verb", "list", "--resource", "pods", "--field-selector", "spec.nodeName=node-a"],
            "node-a",
            True,
            "",
        ),
        (
            ["--verb", "list", "--resource", "pods"],
            "node-a",
            False,
            "can only list/watch pods with spec.nodeName field selector",
        ),
        (
            [
                "--verb",
                "list",
                "--resource",
                "pods",
                "--feature-gates",
                "AuthorizeNodeWithSelectors=false",
            ],
            "node-a",
            True,
            "",
        ),
        (
            [
                "--verb",
                "get",
                "--resource",
                "pods",
                "-n",
                "kube-system",
                "--name",
                "kube-proxy-node-a",
            ],
            "node-a",
            True,
            "",
        ),
        (["--verb", "watch", "--resource", "services"], "node-b", True, ""),
    ],
)
def test_check_table(
    capsys: pytest.CaptureFixture[str], argv: list[str], node: str, allowed: bool, reason: str
) -> None:
    code, out = check(capsys, *argv, node=node)
    assert (out["allowed"], out["reason"]) == (allowed, reason)
    assert code == (0 if allowed else 1)
    assert out["decision"] == ("Allow" if allowed else "NoOpinion")


def test_check_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = check(capsys, "--verb", "get", "--resource", "pv", "--name", "pv-data")
    assert out["request"] == {
        "user": "system:node:node-a",
        "groups": ["system:nodes", "system:authenticated"],
        "verb": "get",
        "apiGroup": "",
        "resource": "persistentvolumes",
        "subresource": "",
        "namespace": "",
        "name": "pv-data",
        "fieldSelector": "",
    }
    assert out["route"] == "graph" and out["node"] == "node-a"
    assert out["path"] == ["pv:pv-data", "pvc:team-a/data", "pod:team-a/web-0", "node:node-a"]


def test_groups_decide_whether_it_is_a_node(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--verb", "get", "--resource", "secrets", "-n", "team-a", "--name", "regcred"]
    code, out = check(capsys, *argv, "--group", "system:authenticated")
    assert code == 1 and out["route"] == "not-a-node" and out["node"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--resource", "a/b", "--subresource", "c"], "either in --resource or in --subresource"),
        (
            ["--resource", "leases.coordination.k8s.io", "--api-group", "x"],
            "either in --resource or in --api-group",
        ),
        (
            ["--resource", "secrets", "--feature-gates", "Nope=true"],
            "unrecognized feature gate: Nope",
        ),
        (
            ["--resource", "secrets", "--feature-gates", "PodCertificateRequest=maybe"],
            "invalid value of PodCertificateRequest=maybe",
        ),
        (
            ["--resource", "secrets", "--feature-gates", "PodCertificateRequest"],
            "missing bool value",
        ),
    ],
)
def test_check_argument_errors(argv: list[str], message: str) -> None:
    base = [
        "nodeauth",
        "check",
        "--objects",
        str(OBJECTS),
        "--user",
        "system:node:a",
        "--verb",
        "get",
    ]
    with pytest.raises(CredprovError, match=message):  # CLIError or the library's own
        run(base + argv)


def test_bad_objects_file_is_a_one_line_cli_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"kind: Secret\ndata: {{x: {CANARY}\n")
    with pytest.raises(CredprovError) as err:
        run(["nodeauth", "audit", "--objects", str(bad), "--node", "n"])
    assert "is not valid YAML or JSON" in str(err.value) and CANARY not in str(err.value)


def test_audit_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["nodeauth", "audit", "--objects", str(OBJECTS), "--node", "node-a"]) == 0
    out = capsys.readouterr().out
    assert "  team-a/regcred          via pod:team-a/web-0" in out
    assert "  storage/csi-node-creds  via pv:pv-data" in out
    assert "db-password" not in out and "pending-secret" not in out
    assert '      "vault"  via pod team-a/web-0 volume vault-token: projected token' in out
    assert '"registry.example.com"  via RBAC ClusterRoleBinding "registry-audience-nodes"' in out


def test_audit_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(["nodeauth", "audit", "--objects", str(OBJECTS), "--node", "node-b", "-o", "json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert [(p["namespace"], p["name"]) for p in report["pods"]] == [
        ("team-a", "report-job"),
        ("team-b", "db-0"),
    ]
    assert report["secrets"] == [
        {"namespace": "team-b", "name": "db-password", "exists": True, "via": ["pod:team-b/db-0"]}
    ]
    assert [c["name"] for c in report["configmaps"]] == ["report-config"]
    assert report["persistentVolumes"] == [] and report["volumeAttachments"] == []
    accounts = {(a["namespace"], a["name"]): a for a in report["serviceAccounts"]}
    assert set(accounts) == {("team-a", "default"), ("team-b", "default")}
    # No projected token volume in these pods: no audience at all.
    assert accounts[("team-b", "default")]["tokenAudiences"] == []
    assert "get,list,watch services.core" in report["clusterWide"]


def test_no_secret_value_in_any_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = tmp_path / "objects.json"
    encoded = base64.b64encode(CANARY.encode()).decode()  # data values are base64, as stored
    secret = {
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns"},
        "data": {"k": encoded},
        "stringData": {"j": CANARY},
    }
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n", "volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
    }
    objects.write_text(json.dumps({"kind": "List", "items": [secret, pod]}))
    run(["nodeauth", "audit", "--objects", str(objects), "--node", "n", "-o", "json"])
    run(["nodeauth", "audit", "--objects", str(objects), "--node", "n"])
    run(
        [
            *("nodeauth", "check", "--objects", str(objects), "--user", "system:node:n"),
            *("--verb", "get", "--resource", "secrets", "-n", "ns", "--name", "s", "-o", "json"),
        ]
    )
    captured = capsys.readouterr()
    assert CANARY not in captured.out + captured.err
    assert encoded not in captured.out + captured.err
    assert '"name": "s"' in captured.out


def test_real_command_reads_stdin_and_fails_in_one_line() -> None:
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "credprov",
            "nodeauth",
            "audit",
            "--objects",
            "-",
            "--node",
            "node-a",
        ],
        input=OBJECTS.read_bytes(),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert b"team-a/regcred" in ok.stdout
    bad = subprocess.run(
        [
            *(sys.executable, "-m", "credprov", "nodeauth", "check", "--objects", "/nonexistent"),
            *("--user", "system:node:a", "--verb", "get", "--resource", "secrets"),
        ],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stderr.decode().splitlines() == [
        "credprov: error: cannot read objects file /nonexistent: No such file or directory"
    ]


def test_docs_show_the_real_audit_output(capsys: pytest.CaptureFixture[str]) -> None:
    run(["nodeauth", "audit", "--objects", str(OBJECTS), "--node", "node-a"])
    doc = (ROOT / "docs" / "nodeauth.md").read_text()
    assert capsys.readouterr().out in doc
