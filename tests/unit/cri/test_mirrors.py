"""credprov.cri.mirrors: routes from containerd's docs/hosts.md and containers-registries.conf(5)
examples, drop-in order, hostile files, and the credential verdicts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from credprov.base.rootfs import NodeRoot
from credprov.cri.mirrors import (
    ContainerdHosts,
    MirrorConfigError,
    RegistriesConf,
    containerd_config_path,
    judge_credentials,
    load_runtime_mirrors,
)

CERTS = "/etc/containerd/certs.d"
CONF = "/etc/containers/registries.conf"


def plant(root: Path, node_path: str, text: str) -> None:
    path = root / node_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def hosts(root: Path, files: dict[str, str]) -> ContainerdHosts:
    for namespace, text in files.items():
        plant(root, f"{CERTS}/{namespace}/hosts.toml", text)
    (root / CERTS.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return ContainerdHosts(NodeRoot(str(root)), CERTS)


def route_of(runtime: ContainerdHosts | RegistriesConf, image: str) -> list[tuple[str, str, str]]:
    r = runtime.route(image)
    return [(c.host.host, c.host.role, ",".join(c.purposes)) for c in r.contacts]


# -- containerd: the examples of docs/hosts.md --------------------------------------------------

DOCKER_MIRROR = """server = "https://registry-1.docker.io"    # Exclude this to not use upstream

[host."https://public-mirror.example.com"]
  capabilities = ["pull"]                  # Requires less trust, won't resolve tag to digest
[host."https://docker-mirror.internal"]
  capabilities = ["pull", "resolve"]
  ca = "docker-mirror.crt"
"""
DIGEST = "sha256:" + "a" * 64

CONTAINERD_CASES = [
    pytest.param(
        {}, "nginx:1.25",
        [("registry-1.docker.io", "registry", "resolve,pull")],
        id="no-hosts-toml-docker-io-is-registry-1",
    ),
    pytest.param(
        {"docker.io": 'server = "https://docker.io"\n[host."https://registry-1.docker.io"]\n'
                      '  capabilities = ["pull", "resolve"]\n'},
        "nginx",
        [("registry-1.docker.io", "registry", "resolve,pull"), ("docker.io", "registry", "resolve,pull")],
        id="simple-default-host-config",
    ),
    pytest.param(
        {"docker.io": DOCKER_MIRROR}, "nginx",
        [("public-mirror.example.com", "mirror", "pull"),
         ("docker-mirror.internal", "mirror", "resolve,pull"),
         ("registry-1.docker.io", "registry", "resolve,pull")],
        id="local-mirror-tag-pull-only-mirror-serves-content",
    ),
    pytest.param(
        {"docker.io": DOCKER_MIRROR}, f"nginx@{DIGEST}",
        [("public-mirror.example.com", "mirror", "pull"),
         ("docker-mirror.internal", "mirror", "pull"),
         ("registry-1.docker.io", "registry", "pull")],
        id="local-mirror-digest-pull",
    ),
    pytest.param(
        {"_default": '[host."https://registry.example.com"]\n  capabilities = ["pull", "resolve"]\n'},
        "quay.io/team/app:v1",
        [("registry.example.com", "mirror", "resolve,pull"), ("quay.io", "registry", "resolve,pull")],
        id="default-mirror-for-all-registries-upstream-last",
    ),
    pytest.param(
        {"_default": 'server = "https://registry.example.com"\n'},
        "quay.io/team/app:v1",
        [("registry.example.com", "mirror", "resolve,pull")],
        id="default-mirror-as-server-only-mirror",
    ),
    pytest.param(
        {"docker.io": 'server = "https://registry-1.docker.io"\n[host."http://192.168.31.250:5000"]\n'
                      '  capabilities = ["pull", "resolve", "push"]\n  skip_verify = true\n'},
        "nginx",
        [("192.168.31.250:5000", "mirror", "resolve,pull"), ("registry-1.docker.io", "registry", "resolve,pull")],
        id="bypass-tls-verification",
    ),
    pytest.param(
        {"myregistry.io:5000": '[host."https://mymirror.io"]\n'},
        "myregistry.io:5000/image_name:tag_name",
        [("mymirror.io", "mirror", "resolve,pull"), ("myregistry.io:5000", "registry", "resolve,pull")],
        id="port-namespace-capabilities-default-to-all",
    ),
    pytest.param(
        {"myregistry.io_5000_": '[host."https://first.io"]\n',
         "myregistry.io:5000": '[host."https://second.io"]\n'},
        "myregistry.io:5000/app:v1",
        [("first.io", "mirror", "resolve,pull"), ("myregistry.io:5000", "registry", "resolve,pull")],
        id="port-namespace-host_port_-first",
    ),
    pytest.param(
        {"docker.io": '[host."https://push-only.example.com"]\n  capabilities = ["push"]\n'},
        "nginx",
        [("registry-1.docker.io", "registry", "resolve,pull")],
        id="push-only-host-never-pulls",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("files", "image", "expected"), CONTAINERD_CASES)
def test_containerd_routes(
    tmp_path: Path, files: dict[str, str], image: str, expected: list[tuple[str, str, str]]
) -> None:
    assert route_of(hosts(tmp_path, files), image) == expected


def test_containerd_requests_name_the_namespace_at_a_mirror(tmp_path: Path) -> None:
    """docs/hosts.md: the same pull through mymirror.io resolves to
    https://mymirror.io/v2/image_name/manifests/tag_name?ns=myregistry.io:5000."""
    runtime = hosts(tmp_path, {"myregistry.io:5000": '[host."https://mymirror.io"]\n'})
    route = runtime.route("myregistry.io:5000/image_name:tag_name")
    assert [c.request for c in route.contacts] == [
        "https://mymirror.io/v2/image_name/manifests/tag_name?ns=myregistry.io:5000",
        "https://myregistry.io:5000/v2/image_name/manifests/tag_name",
    ]
    assert route.source == f"{CERTS}/myregistry.io:5000/hosts.toml (in {tmp_path})"


def test_containerd_override_path_and_path_prefix(tmp_path: Path) -> None:
    runtime = hosts(
        tmp_path,
        {"docker.io": '[host."https://mirror-bak.registry/us"]\n  capabilities = ["pull", "resolve"]\n'
                      '[host."https://non-compliant-mirror.registry/v2/upstream"]\n'
                      '  capabilities = ["pull", "resolve"]\n  override_path = true\n'},
    )  # fmt: skip
    requests = [c.request for c in runtime.route("nginx:1").contacts]
    assert requests[:2] == [
        "https://mirror-bak.registry/us/v2/library/nginx/manifests/1?ns=docker.io",
        "https://non-compliant-mirror.registry/v2/upstream/library/nginx/manifests/1?ns=docker.io",
    ]


def test_a_host_directory_without_hosts_toml_shadows_default(tmp_path: Path) -> None:
    runtime = hosts(tmp_path, {"_default": '[host."https://mirror.example.com"]\n'})
    (tmp_path / CERTS.lstrip("/") / "quay.io").mkdir()
    assert route_of(runtime, "quay.io/a/b") == [("quay.io", "registry", "resolve,pull")]


def test_localhost_without_hosts_toml_is_plain_http(tmp_path: Path) -> None:
    route = hosts(tmp_path, {}).route("127.0.0.1:5000/private/app:v1")
    assert route.contacts[0].request == "http://127.0.0.1:5000/v2/private/app/manifests/v1"


@pytest.mark.parametrize(
    ("version", "text"),
    [
        (2, '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n'),
        (3, '[plugins."io.containerd.cri.v1.images".registry]\n  config_path = "/etc/containerd/certs.d"\n'),
    ],
)  # fmt: skip
def test_config_path_from_config_toml(tmp_path: Path, version: int, text: str) -> None:
    plant(tmp_path, "/etc/containerd/config.toml", f"version = {version}\n{text}")
    assert containerd_config_path(NodeRoot(str(tmp_path))) == CERTS


def test_no_config_toml_or_no_config_path(tmp_path: Path) -> None:
    root = NodeRoot(str(tmp_path))
    assert containerd_config_path(root) is None
    plant(tmp_path, "/etc/containerd/config.toml", "version = 2\n")
    assert containerd_config_path(root) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("server = [", "invalid TOML"),
        ('server = "ftp://x"', "unsupported scheme 'ftp'"),
        ('[host."https://m"]\n  capabilities = ["pull", "fly"]', "unknown capability 'fly'"),
        ('[host."https://m"]\n  skip_verify = "yes"', "skip_verify: want true or false"),
        ("server = 1", "server: want a string"),
        ('host = "x"', "host: want a table"),
    ],
)
def test_bad_hosts_toml_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    runtime = hosts(tmp_path, {"docker.io": text})
    with pytest.raises(MirrorConfigError) as err:
        runtime.route("nginx")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert "docker.io/hosts.toml" in str(err.value)


def test_hostile_hosts_files(tmp_path: Path) -> None:
    """A FIFO, a huge file and a link out of the root are refused, never followed or read."""
    runtime = hosts(tmp_path, {})
    base = tmp_path / CERTS.lstrip("/")
    (base / "fifo.example").mkdir()
    os.mkfifo(base / "fifo.example" / "hosts.toml")
    (base / "big.example").mkdir()
    (base / "big.example" / "hosts.toml").write_text("# " + "x" * 300_000)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "hosts.toml").write_text('server = "https://evil.example"\n')
    (base / "link.example").symlink_to(outside)
    for image, reason in [("fifo.example/a", "fifo"), ("big.example/a", "bytes")]:
        with pytest.raises(MirrorConfigError) as err:
            runtime.route(image)
        assert reason in str(err.value).lower() or "not a regular" in str(err.value).lower()
    # The absolute link target resolves inside the root, where nothing is: no mirror.
    assert route_of(runtime, "link.example/a") == [("link.example", "registry", "resolve,pull")]


def test_named_config_path_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(MirrorConfigError, match="not a directory"):
        load_runtime_mirrors(NodeRoot(str(tmp_path)), containerd_config_path="/nope")


# -- CRI-O: the examples of containers-registries.conf(5) ---------------------------------------

EXAMPLE = """unqualified-search-registries = ["example.com"]

[[registry]]
prefix = "example.com/foo"
insecure = false
blocked = false
location = "internal-registry-for-example.com/bar"

[[registry.mirror]]
location = "example-mirror-0.local/mirror-for-foo"

[[registry.mirror]]
location = "example-mirror-1.local/mirrors/foo"
insecure = true
"""


def crio(root: Path, main: str, dropins: dict[str, str] | None = None) -> RegistriesConf:
    plant(root, CONF, main)
    for name, text in (dropins or {}).items():
        plant(root, f"{CONF}.d/{name}", text)
    return RegistriesConf.load(NodeRoot(str(root)), CONF)


def test_crio_man_page_example(tmp_path: Path) -> None:
    """'a pull of example.com/foo/image:latest will try' the two mirrors, then the location."""
    route = crio(tmp_path, EXAMPLE).route("example.com/foo/image:latest")
    assert [c.request for c in route.contacts] == [
        "example-mirror-0.local/mirror-for-foo/image:latest",
        "example-mirror-1.local/mirrors/foo/image:latest",
        "internal-registry-for-example.com/bar/image:latest",
    ]
    assert [c.host.role for c in route.contacts] == ["mirror", "mirror", "location"]
    assert route.contacts[1].host.insecure


MIRROR = '[[registry]]\nprefix = "{prefix}"\nlocation = "{location}"\n{extra}\n[[registry.mirror]]\nlocation = "mirror.local/{path}"\n{mextra}\n'

CRIO_CASES = [
    pytest.param(
        MIRROR.format(prefix="docker.io/library", location="docker.io/library", extra="", path="lib", mextra=""),
        "nginx:1.25",
        ["mirror.local/lib/nginx:1.25", "docker.io/library/nginx:1.25"],
        id="docker-io-normalised-with-library",
    ),
    pytest.param(
        MIRROR.format(prefix="docker.io/nginx", location="docker.io/nginx", extra="", path="x", mextra=""),
        "docker.io/library/nginx:1",
        ["docker.io/library/nginx:1"],
        id="prefix-without-library-does-not-match-official-image",
    ),
    pytest.param(
        MIRROR.format(prefix="quay.io", location="quay.io", extra="mirror-by-digest-only = true", path="q", mextra=""),
        "quay.io/a/b:v1",
        ["quay.io/a/b:v1"],
        id="mirror-by-digest-only-tag-uses-primary",
    ),
    pytest.param(
        MIRROR.format(prefix="quay.io", location="quay.io", extra="mirror-by-digest-only = true", path="q", mextra=""),
        f"quay.io/a/b@{DIGEST}",
        [f"mirror.local/q/a/b@{DIGEST}", f"quay.io/a/b@{DIGEST}"],
        id="mirror-by-digest-only-digest-uses-mirror",
    ),
    pytest.param(
        MIRROR.format(prefix="quay.io", location="quay.io", extra="", path="q", mextra='pull-from-mirror = "tag-only"'),
        f"quay.io/a/b@{DIGEST}",
        [f"quay.io/a/b@{DIGEST}"],
        id="pull-from-mirror-tag-only",
    ),
    pytest.param(
        MIRROR.format(prefix="quay.io", location="quay.io", extra="", path="q", mextra='pull-from-mirror = "digest-only"'),
        "quay.io/a/b:v1",
        ["quay.io/a/b:v1"],
        id="pull-from-mirror-digest-only",
    ),
    pytest.param(
        MIRROR.format(prefix="*.example.com", location="", extra="", path="w", mextra=""),
        "blah.example.com/foo/myimage:latest",
        ["mirror.local/w/foo/myimage:latest", "blah.example.com/foo/myimage:latest"],
        id="wildcard-prefix-used-as-is",
    ),
    pytest.param(
        MIRROR.format(prefix="example.com", location="example.com", extra="", path="e", mextra=""),
        "example.community/a:v1",
        ["example.community/a:v1"],
        id="prefix-needs-a-separator",
    ),
    pytest.param(
        MIRROR.format(prefix="quay.io", location="quay.io", extra="blocked = true", path="q", mextra=""),
        "quay.io/a/b:v1",
        [],
        id="blocked",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "image", "expected"), CRIO_CASES)
def test_crio_routes(tmp_path: Path, text: str, image: str, expected: list[str]) -> None:
    assert [c.request for c in crio(tmp_path, text).route(image).contacts] == expected


def test_crio_longest_prefix_wins(tmp_path: Path) -> None:
    text = (
        MIRROR.format(prefix="quay.io", location="quay.io", extra="", path="all", mextra="")
        + MIRROR.format(prefix="quay.io/team", location="quay.io/team", extra="", path="team", mextra="")
    )  # fmt: skip
    assert crio(tmp_path, text).route("quay.io/team/app:v1").contacts[0].request == (
        "mirror.local/team/app:v1"
    )


def test_crio_dropins_in_order_overwrite_same_prefix(tmp_path: Path) -> None:
    first = MIRROR.format(prefix="quay.io", location="quay.io", extra="", path="one", mextra="")
    conf = crio(
        tmp_path,
        first,
        {
            "10-a.conf": MIRROR.format(prefix="quay.io", location="quay.io", extra="", path="two", mextra=""),
            "20-b.conf": 'unqualified-search-registries = ["registry.example"]\n',
            "30-c.conf.disabled": MIRROR.format(prefix="quay.io", location="quay.io", extra="", path="no", mextra=""),
        },
    )  # fmt: skip
    assert conf.route("quay.io/a:v1").contacts[0].request == "mirror.local/two/a:v1"
    assert conf.unqualified_search == ["registry.example"]
    assert len(conf.sources) == 3


def test_crio_short_names(tmp_path: Path) -> None:
    conf = crio(tmp_path, 'unqualified-search-registries = ["registry.example", "docker.io"]\n')
    route = conf.route("nginx")
    assert [c.request for c in route.contacts] == [
        "registry.example/nginx:latest",
        "docker.io/library/nginx:latest",
    ]
    assert route.contacts[0].host.role == "location"
    assert "the kubelet looks credentials up for docker.io/library/nginx" in route.notes[0]
    enforcing = crio(
        tmp_path,
        'short-name-mode = "enforcing"\nunqualified-search-registries = ["a.example", "b.example"]\n',
    )
    assert enforcing.route("nginx").contacts == ()
    aliased = crio(tmp_path, '[aliases]\n"nginx" = "quay.io/mirror/nginx"\n')
    assert [c.request for c in aliased.route("nginx:1").contacts] == ["quay.io/mirror/nginx:1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[registry]]\ninsecure = true\n", "neither prefix nor location"),
        ('[[registry]]\nprefix = "*.example.com/foo"\n', "a wildcard prefix is only"),
        (
            '[[registry]]\nlocation = "q.io"\nmirror-by-digest-only = true\n[[registry.mirror]]\n'
            'location = "m"\npull-from-mirror = "all"\n',
            "allowed only when mirror-by-digest-only is not set",
        ),
        ('[[registry]]\nlocation = "q.io"\n[[registry.mirror]]\npull-from-mirror = "x"\nlocation = "m"\n', "unknown value 'x'"),
        ('short-name-mode = "loose"\n', "unknown mode"),
        ("[[registry]\n", "invalid TOML"),
    ],
)  # fmt: skip
def test_bad_registries_conf_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(MirrorConfigError) as err:
        crio(tmp_path, text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_registries_conf(tmp_path: Path) -> None:
    with pytest.raises(MirrorConfigError, match="no such file"):
        RegistriesConf.load(NodeRoot(str(tmp_path)), CONF)


# -- credentials --------------------------------------------------------------------------------


def sources_from(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def sources(repository: str) -> list[str]:
        host = repository.split("/", 1)[0]
        return table.get(host, [])

    return sources


VERDICT_CASES = [
    pytest.param({"docker.io": ["provider hub"]}, False, "no source has credentials for mirror.internal", id="upstream-only-trap"),
    pytest.param({"mirror.internal": ["node docker config"]}, False, "never looked up", id="mirror-only-anonymous"),
    pytest.param({"docker.io": ["provider a"], "mirror.internal": ["provider b"]}, False, "not its own", id="different"),
    pytest.param({"docker.io": ["provider a"], "mirror.internal": ["provider a"]}, True, "also cover", id="shared"),
    pytest.param({}, True, "anonymous", id="anonymous-everywhere"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "ok", "says"), VERDICT_CASES)
def test_judge_credentials(
    tmp_path: Path, table: dict[str, list[str]], ok: bool, says: str
) -> None:
    runtime = hosts(tmp_path, {"docker.io": '[host."https://mirror.internal"]\n'})
    verdicts = judge_credentials(runtime.route("nginx"), sources_from(table))
    mirror, registry = verdicts
    assert mirror.contact.host.host == "mirror.internal"
    assert (mirror.ok, says in mirror.message) == (ok, True), mirror.message
    assert registry.ok


# -- hosts validated as the runtime validates them (issue 32, item 7) -------------------------


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("https://mirror.example.com", None),
        ("mirror.example.com:5000/path", None),
        ("http://[::1]:5000", None),
        ("https://a b.example", 'invalid character " " in host name'),
        ("https://a\x01.example", "invalid control character in URL"),
        ("https://mirror\n.example/PASS", "invalid control character in URL"),
        ("https://a.example:port", 'invalid port ":port" after host'),
        ("https://%zz.example", 'invalid URL escape "%zz"'),
        ("https://a\x7f.example", "invalid control character in URL"),
        ("ftp://a.example", "unsupported scheme 'ftp'"),
    ],
)
def test_hosts_are_parsed_as_containerd_parses_them(
    tmp_path: Path, url: str, error: str | None
) -> None:
    """Before: every one of these PASSed; containerd's url.Parse refuses them."""
    quoted = json.dumps(url, ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML too
    for text in (f"server = {quoted}\n", f"[host.{quoted}]\n"):
        runtime = hosts(tmp_path, {"docker.io": text})
        if error is None:
            assert runtime.route("nginx").contacts
            continue
        with pytest.raises(MirrorConfigError) as exc:
            runtime.route("nginx")
        assert error in str(exc.value) and "hosts.toml" in str(exc.value)


@pytest.mark.parametrize(
    ("location", "error"),
    [
        ("mirror.example.com/hub", None),
        ("[::1]:5000", None),
        ("a b.example/hub", "'a b.example' is not a registry host"),
        ("a\\u001b[31m.example", "is not a registry host"),
        (":::/hub", "is not a registry host"),
        ("https://mirror.example.com", "URI schemes are not supported"),
    ],
)
def test_crio_locations_are_registry_hosts(
    tmp_path: Path, location: str, error: str | None
) -> None:
    for text in (
        f'[[registry]]\nprefix = "docker.io"\nlocation = "{location}"\n',
        f'[[registry]]\nlocation = "docker.io"\n[[registry.mirror]]\nlocation = "{location}"\n',
    ):
        plant(tmp_path, CONF, text)
        if error is None:
            RegistriesConf.load(NodeRoot(str(tmp_path)), CONF)
            continue
        with pytest.raises(MirrorConfigError, match=error.replace("[", r"\[")):
            RegistriesConf.load(NodeRoot(str(tmp_path)), CONF)
