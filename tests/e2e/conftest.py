"""Fixtures of the end-to-end tests, all on real processes bound to 127.0.0.1.

* ``private_registry_image``: Debian's ``docker-registry`` (htpasswd) holding one tiny image,
  for the skopeo and example-node tests;
* ``auth_registry``, ``tls_registry``, ``anonymous_registry`` and ``registry_factory``:
  registries for the CRI tests (plain HTTP with htpasswd, self-signed TLS, no auth, and
  per-test ones that can rotate accounts or go down);
* ``containerd`` and ``cri_runtime``: containerd with its CRI plugin in a private temporary
  directory, and a :class:`credprov.cri.client.CRIRuntime` connected to it;
* ``bundle_tarball``, ``installer_image`` and ``installer_ref``: the plugin bundle and its
  installer image, built once per session, the image imported into a module's containerd;
  ``arm64_bundle_tarball``: the arm64 bundle, built under qemu (or from its cache).

Every fixture stops what it started, also when a test fails.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.containerd import Containerd, running_containerd
from tests.e2e.registry import (
    PrivateImage,
    Registry,
    private_image,
    running_registry,
    start_registry,
)

if TYPE_CHECKING:
    from credprov.cri.client import CRIRuntime


@pytest.fixture(scope="session")
def private_registry_image() -> Iterator[PrivateImage]:
    """``docker-registry`` on 127.0.0.1 (htpasswd, one account with a random password) with
    ``private/app:v1`` pushed; stopped and removed after the session, even on failure.
    Skips when ``docker-registry`` or ``skopeo`` is not installed."""
    users = {"e2e-user": "e2e-pass-" + secrets.token_hex(8)}
    with private_image(users) as image:
        yield image


# -- the CRI end-to-end fixtures (tests/e2e/containerd.py, tests/e2e/registry.py) -----------
#
# Registries are module-scoped and shared by a module's tests: a test that rotates accounts
# or takes a registry down uses ``registry_factory`` instead. containerd is module-scoped
# too (about 0.3 s to start): images a test pulls stay for the module's later tests, so
# each test pulls its own repository or removes what it pulled.


def _random_users() -> dict[str, str]:
    return {"e2e-user": "e2e-pass-" + secrets.token_hex(8)}


@pytest.fixture(scope="module")
def auth_registry() -> Iterator[Registry]:
    """A plain-HTTP ``docker-registry`` with htpasswd auth (one account, random password,
    in ``.users``); empty: push with :func:`tests.e2e.registry.push_image`."""
    with running_registry(_random_users()) as registry:
        yield registry


@pytest.fixture(scope="module")
def tls_registry() -> Iterator[Registry]:
    """An HTTPS ``docker-registry`` with htpasswd auth and a self-signed certificate made
    for this run (``.ca_cert``); containerd trusts it after ``containerd.add_registry``."""
    with running_registry(_random_users(), tls=True) as registry:
        yield registry


@pytest.fixture(scope="module")
def anonymous_registry() -> Iterator[Registry]:
    """A plain-HTTP ``docker-registry`` without auth: anyone may pull (and push)."""
    with running_registry({}) as registry:
        yield registry


@pytest.fixture
def registry_factory() -> Iterator[Callable[..., Registry]]:
    """``make(users, tls=False)`` starts a registry of the test's own (rotate it, stop it,
    restart it); every one is stopped and removed at the end of the test."""
    started: list[Registry] = []

    def make(users: Mapping[str, str] | None = None, *, tls: bool = False) -> Registry:
        registry = start_registry(_random_users() if users is None else users, tls=tls)
        started.append(registry)
        return registry

    try:
        yield make
    finally:
        for registry in started:
            registry.stop()


@pytest.fixture(scope="module")
def containerd() -> Iterator[Containerd]:
    """A real containerd with its CRI plugin (``.endpoint`` is ``unix:///...``), shared by
    the module's tests. Plain-HTTP registries on 127.0.0.1 need no set-up; call
    ``containerd.add_registry(tls_registry)`` before pulling over TLS."""
    with running_containerd() as ctrd:
        yield ctrd


@pytest.fixture
def cri_runtime(containerd: Containerd) -> Iterator[CRIRuntime]:
    """A :class:`credprov.cri.client.CRIRuntime` connected to ``containerd``."""
    from credprov.cri.client import CRIRuntime

    with CRIRuntime(containerd.endpoint) as runtime:
        yield runtime


# -- the plugin bundle (tests/e2e/test_bundle*.py, tests/e2e/noderoot.py) ---------------------


@pytest.fixture(scope="session")
def bundle_tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``credprov bundle`` of every plugin, built once per session (~30 s with cx_Freeze).
    ``CREDPROV_E2E_BUNDLE=FILE`` reuses a tarball built earlier (while developing)."""
    import importlib.util

    prebuilt = os.environ.get("CREDPROV_E2E_BUNDLE")
    if prebuilt:
        return Path(prebuilt)
    if importlib.util.find_spec("cx_Freeze") is None:
        reason = "cx_Freeze is not installed (pip install -e '.[dev]')"
        if os.environ.get("CREDPROV_REQUIRE_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from credprov.bundle.build import tarball_name
    from credprov.cli.main import main

    out = tmp_path_factory.mktemp("bundle")
    assert main(["bundle", "--out", str(out)]) == 0  # README: credprov bundle --out dist
    return out / tarball_name()


@pytest.fixture(scope="session")
def arm64_bundle_tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``credprov bundle --arch arm64`` of every plugin, once per session (frozen here, no
    emulation: ``credprov.bundle.freeze``). Skips (fails under ``CREDPROV_REQUIRE_E2E=1``)
    on a host that cannot run arm64 programs, which the tests that use it need."""
    from credprov.bundle.cross import check_host
    from credprov.bundle.layout import BundleError, go_arch

    if go_arch() != "arm64":
        try:
            check_host("arm64")
        except BundleError as exc:
            if os.environ.get("CREDPROV_REQUIRE_E2E") == "1":
                pytest.fail(str(exc))
            pytest.skip(str(exc))
    from credprov.bundle.build import tarball_name
    from credprov.cli.main import main

    out = tmp_path_factory.mktemp("bundle-arm64")
    assert main(["bundle", "--arch", "arm64", "--out", str(out)]) == 0
    return out / tarball_name("arm64")


@pytest.fixture(scope="session")
def installer_image(bundle_tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installer image's OCI archive, made once per session by README's command:
    ``credprov bundle --from-tarball T --oci-archive FILE``."""
    from credprov.cli.main import main
    from tests.e2e.registry import require_tools

    require_tools("busybox")
    archive = tmp_path_factory.mktemp("image") / "credprov-plugins-installer.oci.tar"
    assert main(["bundle", "--from-tarball", str(bundle_tarball), "--oci-archive",
                 str(archive), "--busybox", "/bin/busybox"]) == 0  # fmt: skip
    return archive


@pytest.fixture(scope="module")
def installer_ref(installer_image: Path, containerd: Containerd) -> str:
    """The installer image imported into the module's ``containerd`` (README: ``ctr -n
    k8s.io images import``); its reference."""
    from credprov import __version__
    from tests.e2e.containerd import require_containerd

    require_containerd()
    proc = containerd.ctr("images", "import", "--snapshotter", "native", str(installer_image))
    assert proc.returncode == 0, proc.stderr
    return f"localhost/credprov-plugins-installer:{__version__}"
