"""The arm64 bundle on the oldest node root this machine can make: Debian bullseye (glibc 2.31).

The bundle's floor is glibc 2.17 (every ELF file is audited at build time and in
tests/e2e/test_bundle_floor.py); bullseye is the oldest release the Debian archive here
serves, so it is the oldest glibc the bundle can be *run* on here. Every test of
tests/e2e/test_bundle.py runs again in a Python-less ``debootstrap --variant=minbase
bullseye`` root for arm64 (under qemu-user-static through binfmt_misc): install, every plugin answering (static with a
canary password, ECR against moto, GCP against a metadata server, ACR, the docker helper
bridges starting the root's own helper binaries with the root's libc), the engine and
``plugin test`` driving them, ``--force`` and ``--uninstall``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e._bundle_suite import TESTS, installed
from tests.e2e.noderoot import chroot, find_python, inside, node_root
from tests.e2e.test_bundle import STATIC_FILE, STATIC_YAML

pytestmark = pytest.mark.e2e

__all__ = ["installed", *TESTS]
globals().update(TESTS)


@pytest.fixture(scope="module")
def root(arm64_bundle_tarball: Path) -> Iterator[Path]:
    """A Python-less bullseye node root with the bundle unpacked in /opt."""
    with node_root(
        "bullseye",
        arch="arm64",
    ) as node:
        assert find_python(node) == [], "the node root must not have Python"
        libc = chroot(node, ["sh", "-c", "ls /lib/*-linux-gnu/libc-2.*.so"])
        assert b"libc-2.31.so" in libc.stdout, libc.stderr
        opt = inside(node, "/opt")
        subprocess.run(["tar", "xzf", str(arm64_bundle_tarball), "-C", str(opt)], check=True)
        static = inside(node, STATIC_FILE)
        static.parent.mkdir(parents=True, exist_ok=True)
        static.write_text(STATIC_YAML)
        yield node
