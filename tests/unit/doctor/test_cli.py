"""The doctor's standalone entry point (``credprov.doctor.cli.main``, the bundle's
``doctor``) against ``credprov doctor``: the same options, help, output and exit statuses,
one-line usage errors, ``--cri`` refused where no CRI client is installed, and no import of
``credprov.cli`` (the bundle leaves it out)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from credprov.cli.main import main as credprov_main
from credprov.doctor.cli import build_parser, main
from tests.unit.doctor import nodes

CRI_LINE = (
    "credprov doctor: error: --cri needs the credprov CLI with the cri extra; pass "
    "--node-images FILE (crictl images -o json)"
)


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return nodes.kubeadm_node(tmp_path / "node")


@pytest.mark.parametrize("output", [[], ["-o", "json"]], ids=["text", "json"])
def test_standalone_prints_what_credprov_doctor_prints(
    node: Path, tmp_path: Path, output: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--node-root", str(node), "--no-exec", "--image", nodes.APP_IMAGE, "--objects",
            str(nodes.write_objects(tmp_path / "cluster.json")), "--node-images",
            str(nodes.write_images(tmp_path / "images.json")), *output]  # fmt: skip
    assert credprov_main(["doctor", *args]) == 0
    expected = capsys.readouterr()
    assert main(args) == 0
    got = capsys.readouterr()
    assert (got.out, got.err) == (expected.out, expected.err)
    if output:
        assert json.loads(got.out)["node"]["flavor"] == "kubeadm"


def test_a_failing_check_is_exit_1_in_both(node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes.write(node, nodes.CONFIG, "apiVersion: nope\n")
    assert credprov_main(["doctor", "--node-root", str(node), "--no-exec"]) == 1
    expected = capsys.readouterr().out
    assert main(["--node-root", str(node), "--no-exec"]) == 1
    assert capsys.readouterr().out == expected


def test_help_is_credprov_doctors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exc:
        credprov_main(["doctor", "--help"])
    assert exc.value.code == 0
    expected = capsys.readouterr().out
    assert build_parser().format_help() == expected
    assert "--go-version VERSION" in expected and "-o {text,json}" in expected


USAGE = {
    "unknown option": (["--bogus"], "credprov doctor: error: unrecognized arguments: --bogus"),
    "bad output": (["-o", "yaml"], "credprov doctor: error: argument -o/--output: invalid "
                   "choice: 'yaml' (choose from 'text', 'json')"),
    "cri and images": (["--cri", "unix:///x", "--node-images", "f"], "credprov doctor: error: "
                       "argument --node-images: not allowed with argument --cri"),
    "bad verbosity": (["-v", "x"], "credprov doctor: error: argument -v/--v: invalid "
                      "verbosity 'x': want an integer"),
    "bad timeout": (["--plugin-timeout", "x"],
                    'credprov doctor: error: argument --plugin-timeout: time: invalid duration '
                    '"x"'),
    "zero timeout": (["--plugin-timeout", "0s"],
                     "credprov doctor: error: argument --plugin-timeout: must be positive"),
    "bad go version": (["--go-version", "1.2"], "credprov doctor: error: --go-version: "),
    "missing root": (["--node-root", "/nonexistent/credprov"],
                     "credprov doctor: error: --node-root /nonexistent/credprov: not a directory"),
}  # fmt: skip


@pytest.mark.parametrize("argv, line", USAGE.values(), ids=USAGE.keys())
def test_usage_errors_are_one_line_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(line), err
    assert "Traceback" not in err


def test_go_version_from_the_option_or_the_environment(
    node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from credprov._go.version import current_go

    assert main(["--node-root", str(node), "--no-exec", "--go-version", "1.26.1"]) == 0
    assert (current_go().minor, current_go().patch) == (26, 1)
    monkeypatch.setenv("CREDPROV_GO_VERSION", "1.2")
    assert main(["--node-root", str(node), "--no-exec"]) == 2
    assert capsys.readouterr().err.startswith("credprov doctor: error: CREDPROV_GO_VERSION: ")


@pytest.mark.parametrize("front", ["standalone", "credprov"])
def test_cri_without_a_cri_client_is_refused_before_anything_runs(
    front: str,
    node: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bundle leaves gRPC and ``credprov.cri`` out: importing the client fails."""
    ran = tmp_path / "plugin-ran"
    nodes.write(node, f"{nodes.BIN}/registry-a-provider", f"#!/bin/sh\ntouch {ran}\n", 0o755)
    monkeypatch.setitem(sys.modules, "credprov.cri.client", None)
    args = ["--node-root", str(node), "--cri", "unix:///run/containerd/containerd.sock"]
    code = main(args) if front == "standalone" else credprov_main(["doctor", *args])
    assert code == 2
    assert capsys.readouterr() == ("", CRI_LINE + "\n")
    assert not ran.exists()


def test_an_unexpected_error_is_one_line_not_a_traceback(
    node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import credprov.doctor

    def broken(options: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(credprov.doctor, "run_doctor", broken)
    assert main(["--node-root", str(node)]) == 70
    assert capsys.readouterr().err == (
        "credprov doctor: internal error (RuntimeError); rerun with -v 4 and report it\n"
    )


def test_standalone_entry_does_not_import_the_credprov_cli(node: Path) -> None:
    code = (
        "import sys\n"
        "from credprov.doctor.cli import main\n"
        f"code = main(['--node-root', {str(node)!r}, '--no-exec', '-o', 'json'])\n"
        "assert code == 0, code\n"
        "print(sorted(m for m in sys.modules if m.startswith('credprov.cli')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"


# -- relative paths: the working directory's on this machine, refused inside --node-root --------


@pytest.mark.parametrize("front", [main, credprov_main], ids=["standalone", "credprov"])
def test_relative_paths_are_the_working_directorys(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    front: object,
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "config.yaml").write_text(nodes.provider_config(token_provider=False))
    monkeypatch.chdir(tmp_path)
    prefix = ["doctor"] if front is credprov_main else []
    code = front(
        [*prefix, "--config", "config.yaml", "--bin-dir", "bin", "--no-exec", "-o", "json"]
    )  # type: ignore[operator]
    doc = json.loads(capsys.readouterr().out)
    assert doc["node"]["imageCredentialProviderConfig"]["value"] == str(tmp_path / "config.yaml")
    assert doc["node"]["imageCredentialProviderBinDir"]["value"] == str(tmp_path / "bin")
    statuses = {c["id"]: c["status"] for c in doc["checks"]}
    assert statuses["provider-config.valid"] == "pass" and statuses["bin-dir.exec"] != "fail"
    assert code == 1  # the plugins are not in bin/: plugin.present fails, nothing else


def test_relative_paths_inside_a_node_root_are_a_usage_error(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--node-root", str(node), "--config", "etc/kubernetes/x.yaml"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (
        "credprov doctor: error: --config etc/kubernetes/x.yaml: a path inside --node-root must "
        "be absolute (the node's own path, e.g. /etc/kubernetes/credential-providers)\n"
    )
