"""End to end: a real containerd 1.6 whose ``config_path`` names a ``certs.d`` directory in
which ``<upstream>/hosts.toml`` sends pulls of an upstream that does not exist to a local
``docker-registry`` (htpasswd) acting as its mirror.

It shows what :mod:`credprov.cri.mirrors` says: the pull goes to the mirror (the mirror's
access log has the request, with ``?ns=<upstream>``), the runtime offers the mirror the
credential the kubelet looked up for the image as written, and a credential that exists only
for the mirror's own name is never handed (the pull there is anonymous and refused).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from credprov.base.rootfs import NodeRoot
from credprov.cri.client import CRIRuntime
from credprov.cri.mirrors import ContainerdHosts, credential_sources, judge_credentials
from credprov.imageauth.images import parse_image_name
from credprov.imageauth.keyring import DockerKeyring, TrackedAuthConfig
from credprov.pullmanager.interfaces import PullError
from tests.e2e.containerd import Containerd
from tests.e2e.registry import Registry, push_image, running_registry

pytestmark = pytest.mark.e2e

#: Never resolvable (RFC 2606): the upstream exists only in the image's name.
UPSTREAM = "registry.credprov-upstream.invalid"


@pytest.fixture(scope="module")
def mirror() -> Iterator[Registry]:
    with running_registry({"mirror-user": "mirror-pass-" + os.urandom(6).hex()}) as registry:
        yield registry


@pytest.fixture(scope="module")
def mirrored(containerd: Containerd, mirror: Registry) -> ContainerdHosts:
    """``certs.d/<UPSTREAM>/hosts.toml``: the mirror first, the (unreachable) upstream last."""
    directory = containerd.certs_d / UPSTREAM
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "hosts.toml").write_text(
        f'server = "https://{UPSTREAM}"\n\n'
        f'[host."{mirror.url}"]\n  capabilities = ["pull", "resolve"]\n'
    )
    return ContainerdHosts(NodeRoot("/"), str(containerd.certs_d))


def kubelet_lookup(image: str, auths: dict[str, dict[str, str]]) -> list[TrackedAuthConfig]:
    """What the kubelet hands for ``image`` from a node docker config holding ``auths``."""
    keyring = DockerKeyring()
    keyring.add(auths)
    return keyring.lookup(parse_image_name(image))


def mirror_requests_since(mirror: Registry, count: int) -> list[str]:
    time.sleep(0.05)  # the access log is written after the response
    return [r.uri for r in mirror.requests(since=count)]


def test_route_names_the_mirror_first(mirrored: ContainerdHosts, mirror: Registry) -> None:
    route = mirrored.route(f"{UPSTREAM}/team/app:v1")
    assert [(c.host.host, c.host.role) for c in route.contacts] == [
        (mirror.address, "mirror"),
        (UPSTREAM, "registry"),
    ]
    assert route.contacts[0].request == (f"{mirror.url}/v2/team/app/manifests/v1?ns={UPSTREAM}")


def test_upstream_credentials_reach_the_mirror(
    mirrored: ContainerdHosts, mirror: Registry, cri_runtime: CRIRuntime
) -> None:
    """The node's credential for the upstream is what the mirror accepts: the pull works,
    through the mirror, with the credential credprov says the kubelet hands."""
    push_image(mirror, "team/ok", "v1")
    image = f"{UPSTREAM}/team/ok:v1"
    user, password = next(iter(mirror.users.items()))
    handed = kubelet_lookup(image, {UPSTREAM: {"username": user, "password": password}})
    assert [c.username for c in handed] == [user]
    verdicts = judge_credentials(
        mirrored.route(image),
        lambda repo: ["node docker config"] if repo.startswith(UPSTREAM) else [],
    )
    assert verdicts[0].handed == ("node docker config",) and not verdicts[0].ok  # no own creds

    before = len(mirror.requests())
    ref = cri_runtime.pull_image(image, handed[0])
    assert ref.startswith("sha256:")
    uris = mirror_requests_since(mirror, before)
    assert f"/v2/team/ok/manifests/v1?ns={UPSTREAM}" in uris
    cri_runtime.remove_image(image)


def test_mirror_only_credentials_are_never_handed(
    mirrored: ContainerdHosts, mirror: Registry, cri_runtime: CRIRuntime
) -> None:
    """A docker config entry for the mirror's own name: the kubelet finds nothing for the
    image as written, the pull reaches the mirror anonymously and is refused (then the
    upstream, which does not exist)."""
    push_image(mirror, "team/anon", "v1")
    image = f"{UPSTREAM}/team/anon:v1"
    user, password = next(iter(mirror.users.items()))
    auths = {mirror.address: {"username": user, "password": password}}
    assert kubelet_lookup(image, auths) == []
    keyring = DockerKeyring()
    keyring.add(auths)
    [at_mirror, _at_upstream] = judge_credentials(
        mirrored.route(image), credential_sources((), keyring)
    )
    assert at_mirror.handed == () and at_mirror.own == ("node docker config",)
    assert not at_mirror.ok and "never looked up" in at_mirror.message

    before = len(mirror.requests())
    with pytest.raises(PullError) as err:
        cri_runtime.pull_image(image, None)
    assert password not in str(err.value)
    statuses = [r.status for r in mirror.requests(since=before)]
    assert 401 in statuses  # the mirror was asked, anonymously
    # With the mirror's own credential handed (an image written with the mirror's name,
    # or a provider answering for the upstream), the same pull works.
    ref = cri_runtime.pull_image(image, TrackedAuthConfig(username=user, password=password))
    assert ref.startswith("sha256:")
    cri_runtime.remove_image(image)


def test_wrong_upstream_credentials_are_refused_at_the_mirror(
    mirrored: ContainerdHosts, mirror: Registry, cri_runtime: CRIRuntime
) -> None:
    push_image(mirror, "team/wrong", "v1")
    image = f"{UPSTREAM}/team/wrong:v1"
    handed = kubelet_lookup(image, {UPSTREAM: {"username": "upstream-user", "password": "up-pass"}})
    before = len(mirror.requests())
    with pytest.raises(PullError) as err:
        cri_runtime.pull_image(image, handed[0])
    assert "up-pass" not in str(err.value)
    assert [r.status for r in mirror.requests(since=before)][:2] != []
    assert all(r.status == 401 for r in mirror.requests(since=before) if "manifests" in r.uri)
