"""``install --node-root`` and ``--prefix`` with the real bundle, run from this host as the
installer image runs it (the node's ``/`` mounted somewhere, the bin dir inside it).

The runtime must be checked inside the node's root, against the node's glibc, not where
install runs: on a bookworm minbase root (no Python) it installs and the prefixed names
answer like the plain ones; on a root without glibc (the bundle's floor is 2.17, and the
oldest root the archive here serves, bullseye, runs it) it is refused with the loader's own
words and the floor, and the bin dir is left as it was.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.noderoot import BIN_DIR, chroot, glibcless_root, inside, node_root

pytestmark = pytest.mark.e2e

REQUEST = json.dumps(
    {
        "kind": "CredentialProviderRequest",
        "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
        "image": "registry.example.com/team/app",
    }
).encode()


@pytest.fixture(scope="module")
def bundle_dir(bundle_tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("unpacked")
    subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(out)], check=True)
    return out / "credprov-plugins"


def install_into(root: Path, bundle_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    bin_dir = inside(root, BIN_DIR)
    argv = ["sh", str(bundle_dir / "install"), "--bin-dir", str(bin_dir),
            "--node-root", str(root), "--node-bin-dir", BIN_DIR, *args]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_prefixed_names_installed_from_outside_answer_inside_the_root(bundle_dir: Path) -> None:
    plugins = (bundle_dir / "PLUGINS").read_text().split()
    with node_root() as root:
        bin_dir = inside(root, BIN_DIR)
        proc = install_into(root, bundle_dir, "--prefix", "credprov-")
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.splitlines()
        assert out[0].startswith(f"unpacked: {bin_dir}/.credprov-plugins-")
        assert out[1:] == [f"installed: {bin_dir}/credprov-{n}" for n in plugins]
        runtime = f"{BIN_DIR}/{out[0].rpartition('/')[2]}/credprov-plugins"
        # The same answer as the runtime dispatching on its first argument: the prefix is
        # understood (no "not a plugin name"), for every plugin.
        for name in plugins:
            prefixed = chroot(root, [f"{BIN_DIR}/credprov-{name}"], stdin=REQUEST)
            direct = chroot(root, [runtime, name], stdin=REQUEST)
            assert b"not a plugin name" not in prefixed.stderr, name
            assert prefixed.returncode == direct.returncode, (name, prefixed.stderr)
        again = install_into(root, bundle_dir, "--prefix", "credprov-")
        assert again.stdout.splitlines() == [f"unchanged: {bin_dir}/credprov-{n}" for n in plugins]


def test_a_root_without_glibc_is_refused_with_the_loaders_words(bundle_dir: Path) -> None:
    with glibcless_root() as root:
        bin_dir = inside(root, BIN_DIR)
        (bin_dir / "ecr-credential-provider").write_text("#!/bin/sh\n# the node's own\n")
        proc = install_into(root, bundle_dir, "--prefix", "credprov-")
        assert (proc.returncode, proc.stdout) == (1, "")
        line = proc.stderr.strip()
        assert "\n" not in line
        assert line.startswith("install: error: the runtime cannot run on this node: ")
        assert "No such file or directory" in line  # no loader: the kernel's words
        assert "glibc >= 2.17 (the floor: manylinux2014" in line
        assert f"(ran chroot {root} {BIN_DIR}/.credprov-plugins-" in line
        assert "inside --node-root: exit " in line
        assert line.endswith((bundle_dir / "REQUIREMENTS").read_text().splitlines()[0])
        assert [p.name for p in bin_dir.iterdir()] == ["ecr-credential-provider"]
