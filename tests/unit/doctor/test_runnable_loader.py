"""``plugin.runnable`` runs the node's loader on a dynamic plugin (``INTERP --list``): a
binary whose headers are fine but whose libraries or symbol versions the node lacks is a
FAIL (with the loader's own words, whole), not a PASS followed by a ``plugin.responds``
FAIL; ``--no-exec`` says the verdict read headers only."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from credprov.doctor import DoctorOptions, Status, run_doctor
from credprov.doctor.binaries import elf_info

V1 = "credentialprovider.kubelet.k8s.io/v1"
TRUE = shutil.which("true") or "/bin/true"


def _dynamic_true() -> bytes:
    data = Path(TRUE).read_bytes()
    info = elf_info(data[:65536])
    if info is None or info.interpreter is None or b"GLIBC_2.34\0" not in data:
        pytest.skip("needs a dynamically linked glibc `true` that asks for GLIBC_2.34")
    return data


def _node(tmp_path: Path, binary: bytes) -> DoctorOptions:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    plugin = bin_dir / "versioned-provider"
    plugin.write_bytes(binary)
    plugin.chmod(0o755)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        "  - name: versioned-provider\n    matchImages: [registry.example.com]\n"
        f"    defaultCacheDuration: 1m\n    apiVersion: {V1}\n"
    )
    return DoctorOptions(config=str(config), bin_dir=str(bin_dir))


@pytest.mark.parametrize(
    ("version", "no_exec", "status", "says"),
    [
        pytest.param(
            b"GLIBC_2.99", False, Status.FAIL, "version `GLIBC_2.99' not found", id="too new"
        ),
        pytest.param(
            b"GLIBC_2.34", False, Status.PASS, "the node's loader resolves every library", id="ok"
        ),
        pytest.param(b"GLIBC_2.99", True, Status.PASS, "(headers only: --no-exec)", id="no-exec"),
    ],
)
def test_the_loader_judges_a_dynamic_plugin(
    tmp_path: Path, version: bytes, no_exec: bool, status: Status, says: str
) -> None:
    binary = _dynamic_true().replace(b"GLIBC_2.34\0", version + b"\0")
    options = _node(tmp_path, binary)
    options.no_exec = no_exec
    report = run_doctor(options)
    (runnable,) = report.by_id("plugin.runnable")
    assert runnable.status == status, runnable
    assert says in runnable.message, runnable.message
    (responds,) = report.by_id("plugin.responds")
    if status == Status.FAIL:
        assert responds.status == Status.SKIP  # one fault, one FAIL
        assert "node's libc" in runnable.hint


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build an $ORIGIN binary")
def test_a_plugin_installed_as_a_symlink_is_loaded_as_execve_loads_it(tmp_path: Path) -> None:
    """A runtime whose library sits beside it (RUNPATH ``$ORIGIN/lib``, as a frozen runtime),
    its plugin name a symlink in the bin dir: the loader is asked about the link's target, so
    ``$ORIGIN`` is the runtime's directory, as for execve (not a false "not found")."""
    runtime = tmp_path / "runtime"
    (runtime / "lib").mkdir(parents=True)
    (tmp_path / "lib.c").write_text("int credprov_answer(void) { return 0; }\n")
    (tmp_path / "main.c").write_text(
        "int credprov_answer(void);\nint main(void) { return credprov_answer(); }\n"
    )
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(runtime / "lib/libanswer.so"),
                    str(tmp_path / "lib.c")], check=True)  # fmt: skip
    subprocess.run(["gcc", "-o", str(runtime / "credprov-plugins"), str(tmp_path / "main.c"),
                    f"-L{runtime / 'lib'}", "-lanswer", "-Wl,-rpath,$ORIGIN/lib"], check=True)  # fmt: skip
    options = _node(tmp_path / "node", b"")
    plugin = Path(options.bin_dir or "") / "versioned-provider"
    plugin.unlink()
    plugin.symlink_to(runtime / "credprov-plugins")
    (runnable,) = run_doctor(options).by_id("plugin.runnable")
    assert runnable.status == Status.PASS, runnable
    assert runnable.message.endswith("the node's loader resolves every library"), runnable
