"""The bundled cloud plugins trust the node's CA store, chrooted in a node root (issue 30).

The bundle is installed (README steps) into Python-less bullseye roots, amd64 and arm64
(under qemu), and each cloud plugin runs chrooted there, as the node's kubelet runs it,
against its loopback fake served over TLS by a CA that exists only in the root's store:
Debian's layout (``/etc/ssl/certs/ca-certificates.crt``) and RHEL's
(``/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem`` and its links). With the CA absent,
verification fails. The frozen runtime carries no CA file of its own on that path
(cx_Freeze's ``ssl`` hook, which would export ``SSL_CERT_FILE`` for its bundled copy, is
off: ``credprov/bundle/_cx_driver.py``). The same cases run with the venv launchers in
``tests/e2e/test_node_ca_store.py``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.catrust import CLOUDS, LAYOUTS, ChrootRunner, run_over_tls
from tests.e2e.noderoot import BIN_DIR, chroot, inside, node_root

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", params=["amd64", "arm64"])
def installed(request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    arch = request.param
    tarball = request.getfixturevalue(
        "bundle_tarball" if arch == "amd64" else "arm64_bundle_tarball"
    )
    with node_root("bullseye", arch=None if arch == "amd64" else arch) as root:
        subprocess.run(["tar", "xzf", str(tarball), "-C", str(inside(root, "/opt"))], check=True)
        proc = chroot(root, ["/opt/credprov-plugins/install", "--bin-dir", BIN_DIR])
        assert proc.returncode == 0, proc.stderr
        yield arch, root


#: One HTTPS client per plugin (the launchers' test covers every client of each).
CASES = ["ecr", "gcp", "acr"]


@pytest.mark.parametrize("trusted", [True, False], ids=["ca-in-store", "ca-absent"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("cloud", CASES)
def test_the_node_store_decides_for_the_bundle(
    cloud: str, layout: str, trusted: bool, installed: tuple[str, Path]
) -> None:
    assert cloud in CLOUDS
    _arch, root = installed
    run = run_over_tls(cloud, root, ChrootRunner(BIN_DIR), layout=layout, trusted=trusted)
    if trusted:
        assert run.reached, run.stderr
    else:
        assert run.refused_tls, (run.result.returncode, run.response, run.stderr)
