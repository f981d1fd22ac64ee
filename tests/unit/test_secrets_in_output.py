"""Secrets never reach output, whatever escaping a plugin used (issue 11, §2).

Plugins here are ``#!/bin/sh`` scripts printing prepared bytes, so the response holds the
password exactly as Go's encoder writes it (``\\u0026``, ``\\u003c``, ``\\u003e``, ``\\/``,
raw non-ASCII), which a substring redactor misses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from credprov.base.redact import Redactor, json_terminal_safe, spellings, terminal_safe
from credprov.cli.main import main
from tests.conftest import write_config

V1 = "credentialprovider.kubelet.k8s.io/v1"
# Every character Go's encoder escapes or may write raw, around a distinctive marker.
GO_PASSWORD = "Zq9-CANARY&<>/é\u2028-x"
GO_SPELLING = "Zq9-CANARY\\u0026\\u003c\\u003e\\/é\\u2028-x"
ENV_CANARY = "env-canary-5b2e9a"


def _sh_plugin(bin_dir: Path, name: str, stdout: str, stderr: str = "", code: int = 0) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / f"{name}.out").write_text(stdout)
    (bin_dir / f"{name}.err").write_text(stderr)
    script = bin_dir / name
    script.write_text(
        f"#!/bin/sh\ncat '{bin_dir}/{name}.err' >&2\ncat '{bin_dir}/{name}.out'\nexit {code}\n"
    )
    script.chmod(0o755)


def _response(password_json: str, username: str = "u") -> str:
    return (
        f'{{"kind":"CredentialProviderResponse","apiVersion":"{V1}","cacheKeyType":"Registry",'
        f'"auth":{{"registry.io":{{"username":"{username}","password":"{password_json}"}}}}}}\n'
    )


def _config(tmp_path: Path, name: str, env: dict[str, str] | None = None) -> Path:
    provider: dict[str, object] = {
        "name": name,
        "matchImages": ["registry.io"],
        "defaultCacheDuration": "1m",
        "apiVersion": V1,
    }
    if env:
        provider["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return write_config(tmp_path / "c.json", [provider])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_go_escaped_password_is_never_printed_by_plugin_exec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    _sh_plugin(bin_dir, "p", _response(GO_SPELLING), stderr=f"using {GO_SPELLING}\n")
    cfg = _config(tmp_path, "p")
    for output in ("text", "json"):
        code, out, err = _run(
            capsys, "plugin", "exec", "p", "--config", str(cfg), "--bin-dir", str(bin_dir),
            "--image", "registry.io/app", "-o", output,
        )  # fmt: skip
        assert code == 0, err
        assert "CANARY" not in out + err, output
    # --show-secrets shows the decoded password and the raw bytes.
    code, out, _ = _run(
        capsys, "plugin", "exec", "p", "--config", str(cfg), "--bin-dir", str(bin_dir),
        "--image", "registry.io/app", "-o", "json", "--show-secrets",
    )  # fmt: skip
    doc = json.loads(out)
    assert doc["response"]["auth"]["registry.io"]["password"] == GO_PASSWORD
    assert GO_SPELLING in doc["stdout"]


def test_config_env_values_are_scrubbed_from_plugin_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    _sh_plugin(bin_dir, "p", "", stderr=f"env=API_KEY={ENV_CANARY}\nsecond line\n", code=1)
    cfg = _config(tmp_path, "p", env={"API_KEY": ENV_CANARY, "SHORT": "on"})
    for command in (
        ["plugin", "exec", "p", "--config", str(cfg), "--bin-dir", str(bin_dir)],
        ["get-credentials", "--config", str(cfg), "--bin-dir", str(bin_dir)],
    ):
        for output in ("text", "json"):
            argv = [*command, *(["--image"] if command[0] == "plugin" else [])]
            code, out, err = _run(capsys, *argv, "registry.io/app", "-o", output)
            assert code == 1
            assert ENV_CANARY not in out + err, (command, output)
            # Which variable, not its value.
            assert "env=API_KEY=<env API_KEY of provider p>" in out + err
            if output == "text":
                assert "second line" in out + err
                error_lines = [ln for ln in (out + err).splitlines() if "second line" in ln]
                assert len(error_lines) == 1
                assert "env=API_KEY=<env API_KEY of provider p>" in error_lines[0]


def test_one_character_password_does_not_garble_conformance_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    script = bin_dir / "p"
    bin_dir.mkdir()
    # Answers in the version it was asked in, with the password "p".
    script.write_text(
        "#!/bin/sh\n"
        'v=$(sed -n \'s/.*"apiVersion":"\\([^"]*\\)".*/\\1/p\')\n'
        'printf \'{"kind":"CredentialProviderResponse","apiVersion":"%s","cacheKeyType":'
        '"Registry","auth":{"registry.io":{"username":"u","password":"p"}}}\\n\' "$v"\n'
    )
    script.chmod(0o755)
    _, out, _ = _run(capsys, "plugin", "test", str(script), "--image", "registry.io/app")
    assert "credentialprovider.kubelet.k8s.io/v1" in out
    assert "credential<redacted>" not in out and "<redacted>rovider" not in out


def test_plugin_stderr_control_characters_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    _sh_plugin(bin_dir, "p", "", stderr="\x1b[31mred\x1b[0m\rover\nnext\x07\n", code=1)
    cfg = _config(tmp_path, "p")
    for verbosity in ("0", "4"):
        code, out, err = _run(
            capsys, "get-credentials", "registry.io/app", "--config", str(cfg),
            "--bin-dir", str(bin_dir), "-v", verbosity,
        )  # fmt: skip
        assert code == 1
        assert "\x1b" not in out + err and "\x07" not in out + err and "\r" not in out + err
        assert "\\x1b[31mred\\x1b[0m over next\\x07" in out
        failure_lines = [ln for ln in (out + err).splitlines() if "red\\x1b[0m" in ln]
        assert len(failure_lines) >= 1
        assert all("next" in ln for ln in failure_lines)  # never split over two lines


@pytest.mark.parametrize(
    ("secret", "text", "expected"),
    [
        ("p4ss&w<rd>", 'x "p4ss\\u0026w\\u003crd\\u003e" y', 'x "<redacted>" y'),
        ("a/b/c/d", '"a\\/b\\/c\\/d"', '"<redacted>"'),
        ("päss-wörd", '"p\\u00e4ss-w\\u00f6rd"', '"<redacted>"'),
        ("päss-wörd", '"päss-wörd"', '"<redacted>"'),
        (
            "p",
            "credentialprovider.kubelet.k8s.io/v1alpha1",
            "credentialprovider.kubelet.k8s.io/v1alpha1",
        ),
        ("abc", "abcabc", "abcabc"),
    ],
    ids=[
        "go-html-escapes",
        "escaped-slash",
        "ascii-escaped",
        "raw-non-ascii",
        "one-char-skipped",
        "short-skipped",
    ],
)
def test_redactor_spellings(secret: str, text: str, expected: str) -> None:
    assert Redactor([secret])(text) == expected


def test_spellings_cover_go_and_python_encoders() -> None:
    forms = spellings("a&é")
    assert {"a&é", "a\\u0026é", "a\\u0026\\u00e9", "a&\\u00e9"} <= forms


def test_terminal_safe_keeps_double_spaces_and_folds_lines() -> None:
    assert (
        terminal_safe("executable  did\nnot\x1b[2J exist\t!")
        == "executable  did not\\x1b[2J exist !"
    )


@pytest.mark.parametrize(
    ("text", "fold_lines", "expected"),
    [
        ("a\n  PASS forged", True, "a PASS forged"),
        ("a\n  PASS forged", False, "a\\n  PASS forged"),
        ("a\r\nb\rc", False, "a\\r\\nb\\rc"),
        ("tab\there", True, "tab here"),
        ("tab\there", False, "tab\\there"),
        ("x\x1b[2Jy\x07", False, "x\\x1b[2Jy\\x07"),
        ("csi\x9b31m del\x7f", False, "csi\\x9b31m del\\x7f"),
        (
            "abc\u202edef \u2066x\u2069 \u200f\u061c",
            True,
            "abc\\u202edef \\u2066x\\u2069 \\u200f\\u061c",
        ),
        ("para\u2029graph", False, "para\\u2029graph"),
        ("päss wörd 日本  two spaces", False, "päss wörd 日本  two spaces"),
        ("", False, ""),
    ],
    ids=[
        "folded",
        "newline-escaped",
        "carriage-returns",
        "tab-folded",
        "tab-escaped",
        "escape-sequence-and-bell",
        "c1-csi-and-del",
        "bidi-controls",
        "paragraph-separator",
        "printable-kept",
        "empty",
    ],
)
def test_terminal_safe(text: str, fold_lines: bool, expected: str) -> None:
    assert terminal_safe(text, fold_lines=fold_lines) == expected


def test_json_terminal_safe_keeps_values_exact() -> None:
    value = {"v": "csi\x9b rlo\u202e nl\n esc\x1b é"}
    document = json_terminal_safe(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(document) == value
    assert "\x9b" not in document and "\u202e" not in document and "é" in document


def test_redactor_labels_say_which_secret() -> None:
    scrub = Redactor(["token-value-1"])
    scrub.add("p&ss-w0rd", "<env API_KEY of provider p>")
    scrub.add("p&ss-w0rd", "<redacted>")  # the first label stays
    assert scrub('t=token-value-1 k="p\\u0026ss-w0rd" raw p&ss-w0rd') == (
        't=<redacted> k="<env API_KEY of provider p>" raw <env API_KEY of provider p>'
    )
