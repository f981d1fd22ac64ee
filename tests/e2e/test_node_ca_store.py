"""The cloud plugins trust the node's CA store as upstream's Go plugins do (issue 30, item 4).

Each plugin, installed as the kubelet runs it, reaches its loopback fake over TLS when the
fake's CA is in the node root's store (Debian's or RHEL's layout) and fails verification
when it is not; ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` work as in Go, ``AWS_CA_BUNDLE``
replaces the store for ECR as in the Go SDK, and ``REQUESTS_CA_BUNDLE`` (which Go ignores)
is not read. The runs go through :mod:`tests.e2e.catrust`, whose runner here is the
installed launchers with the lookup rooted by ``$CREDPROV_CA_ROOT``; the bundle's tests run
the same cases chrooted in a node root.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from credprov.install import install
from tests.e2e.catrust import CLOUDS, LAYOUTS, LauncherRunner, run_over_tls

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> LauncherRunner:
    bin_dir = tmp_path_factory.mktemp("bin")
    install(str(bin_dir), sorted(set(CLOUDS.values())))
    return LauncherRunner(bin_dir)


@pytest.mark.parametrize("trusted", [True, False], ids=["ca-in-store", "ca-absent"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_the_node_store_decides(
    cloud: str, layout: str, trusted: bool, runner: LauncherRunner, tmp_path: Path
) -> None:
    run = run_over_tls(cloud, tmp_path, runner, layout=layout, trusted=trusted)
    if trusted:
        assert run.reached, run.stderr
    else:
        assert run.refused_tls, (run.result.returncode, run.response, run.stderr)


#: (name, clouds, variables, whether the fake is trusted); the store never holds the CA.
#: SSL_CERT_* are node paths (the lookup resolves them in the root, as under chroot); the
#: libraries' own variables are host paths ("@", translated by the runner).
OVERRIDES = [
    (
        "SSL_CERT_FILE names the CA",
        ("ecr", "gcp", "acr"),
        {"SSL_CERT_FILE": "/opt/credprov-test/fake-ca.pem"},
        True,
    ),
    (
        "SSL_CERT_DIR names its directory",
        ("ecr", "gcp", "acr"),
        {"SSL_CERT_DIR": "/nowhere:/opt/credprov-test/certs"},
        True,
    ),
    (
        "SSL_CERT_FILE elsewhere: the store alone",
        ("gcp",),
        {"SSL_CERT_FILE": "/nowhere.pem"},
        False,
    ),
    (
        "REQUESTS_CA_BUNDLE is not read",
        ("gcp", "acr"),
        {"REQUESTS_CA_BUNDLE": "@/opt/credprov-test/fake-ca.pem"},
        False,
    ),
    (
        "CURL_CA_BUNDLE is not read",
        ("acr",),
        {"CURL_CA_BUNDLE": "@/opt/credprov-test/fake-ca.pem"},
        False,
    ),
    (
        "AWS_CA_BUNDLE is the AWS SDK's own",
        ("ecr",),
        {"AWS_CA_BUNDLE": "@/opt/credprov-test/fake-ca.pem"},
        True,
    ),
]


@pytest.mark.parametrize(
    ("cloud", "variables", "trusted"),
    [
        pytest.param(cloud, variables, trusted, id=f"{name}-{cloud}")
        for name, clouds, variables, trusted in OVERRIDES
        for cloud in clouds
    ],
)
def test_variables(
    cloud: str, variables: dict[str, str], trusted: bool, runner: LauncherRunner, tmp_path: Path
) -> None:
    run = run_over_tls(cloud, tmp_path, runner, layout="debian", trusted=False, extra_env=variables)
    if trusted:
        assert run.reached, run.stderr
    else:
        assert run.refused_tls, (run.result.returncode, run.response, run.stderr)


def test_aws_ca_bundle_replaces_the_store(runner: LauncherRunner, tmp_path: Path) -> None:
    """As the Go SDK's ``resolveCustomCABundle``: the bundle starts an empty pool."""
    decoy = "@/usr/share/ca-certificates/decoy.crt"
    run = run_over_tls(
        "ecr", tmp_path, runner, layout="debian", trusted=True, extra_env={"AWS_CA_BUNDLE": decoy}
    )
    assert run.refused_tls, run.stderr
