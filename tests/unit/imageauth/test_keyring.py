"""Docker keyring semantics (``BasicDockerKeyring``, ``MakeDockerKeyring``)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from credprov.imageauth.keyring import (
    CredentialOrigin,
    DockerKeyring,
    KeyringError,
    SecretCoordinates,
    UnionDockerKeyring,
    hash_auth_config,
    make_docker_keyring,
    make_pull_secret_keyring,
    normalize_key,
    parse_docker_config,
)


def entry(user: str, pw: str = "pw") -> dict[str, str]:
    return {"username": user, "password": pw}


@pytest.mark.parametrize(
    ("location", "key"),
    [
        ("quay.io", "quay.io"),
        ("https://quay.io", "quay.io"),
        ("http://quay.io", "quay.io"),
        ("https://index.docker.io/v1/", "index.docker.io"),
        ("https://quay.io/v2/", "quay.io"),
        ("quay.io/v2/foo", "quay.io/foo"),
        ("quay.io/v1/foo/bar", "quay.io/foo/bar"),
        ("quay.io/", "quay.io"),
        ("quay.io/foo", "quay.io/foo"),
        ("quay.io/v3/foo", "quay.io/v3/foo"),
        ("localhost:5000", "localhost:5000"),
        ("*.example.com", "*.example.com"),
        ("%zz", None),
    ],
)
def test_normalize_key(location: str, key: str | None) -> None:
    assert normalize_key(location) == key


@pytest.mark.parametrize(
    ("keys", "image", "expected_users"),
    [
        (["quay.io"], "quay.io/foo/bar", ["quay.io"]),
        (["quay.io", "quay.io/foo"], "quay.io/foo/bar", ["quay.io/foo", "quay.io"]),
        (["quay.io/foo", "quay.io/bar"], "quay.io/foo/bar", ["quay.io/foo"]),
        (["*.quay.io", "quay.io"], "a.quay.io/x", ["*.quay.io"]),
        (["quay.io"], "quay.io:5000/x", []),
        (["quay.io:5000"], "quay.io/x", []),
        (["quay.io/pong"], "quay.io/pongz/x", ["quay.io/pong"]),
        (
            ["https://index.docker.io/v1/"],
            "docker.io/library/nginx",
            ["https://index.docker.io/v1/"],
        ),
        (["https://index.docker.io/v1/"], "foo/bar", ["https://index.docker.io/v1/"]),
        (["https://index.docker.io/v1/"], "quay.io/bar", []),
        (["docker.io"], "docker.io/library/nginx", ["docker.io"]),
        (["a.io", "b.io", "c.io"], "b.io/x", ["b.io"]),
    ],
    ids=[
        "host",
        "all-matches-reverse-order",
        "path-mismatch",
        "wildcard",
        "target-port",
        "glob-port",
        "plain-path-prefix",
        "docker-hub-fallback",
        "docker-hub-fallback-short-name",
        "no-fallback-other-registry",
        "docker-io-key",
        "one-of-many",
    ],
)
def test_lookup(keys: list[str], image: str, expected_users: list[str]) -> None:
    kr = DockerKeyring()
    kr.add({k: entry(k) for k in keys})
    assert [c.username for c in kr.lookup(image)] == expected_users


def test_reverse_bytewise_order_and_insertion_order_within_key() -> None:
    kr = DockerKeyring()
    kr.add({"registry.io": entry("first")}, provider="a")
    kr.add({"registry.io/team": entry("team")})
    kr.add({"https://registry.io/v2/": entry("second")}, provider="b")
    creds = kr.lookup("registry.io/team/app")
    assert [c.username for c in creds] == ["team", "first", "second"]
    assert kr.keys() == ["registry.io/team", "registry.io"]


def test_auth_field_decoded_and_hash() -> None:
    kr = DockerKeyring()
    auth = base64.b64encode(b"user:pass\x00").decode()
    kr.add({"r.io": {"auth": auth, "email": ""}})
    (cred,) = kr.lookup("r.io/x")
    assert (cred.username, cred.password) == ("user", "pass")
    expected = hashlib.sha256(b'{"username":"user","password":"pass"}').hexdigest()
    assert cred.credential_hash == expected == hash_auth_config("user", "pass")


@pytest.mark.parametrize(
    ("fields", "body"),
    [
        (("u", "p", ""), b'{"username":"u","password":"p"}'),
        (("u", "", ""), b'{"username":"u"}'),
        (("", "", ""), b"{}"),
        (("u", "p", "e@x"), b'{"username":"u","password":"p","email":"e@x"}'),
        (("u", "<&>", ""), b'{"username":"u","password":"\\u003c\\u0026\\u003e"}'),
    ],
    ids=["user-pass", "omitempty", "empty", "email", "html-escaped"],
)
def test_hash_is_go_json_marshal(fields: tuple[str, str, str], body: bytes) -> None:
    assert hash_auth_config(*fields) == hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize(
    "bad",
    [{"auth": "!!!"}, {"auth": base64.b64encode(b"nocolon").decode()}, {"username": 3}, "x"],
    ids=["bad-base64", "no-colon", "wrong-type", "not-object"],
)
def test_bad_entries_raise_without_secret(bad: object) -> None:
    kr = DockerKeyring()
    with pytest.raises(KeyringError) as err:
        kr.add({"r.io": bad})
    assert "nocolon" not in str(err.value)


def dockerconfigjson_secret(name: str, auths: dict[str, object], ns: str = "default") -> dict:
    payload = json.dumps({"auths": auths}).encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "data": {".dockerconfigjson": base64.b64encode(payload).decode()},
    }


def dockercfg_secret(name: str, auths: dict[str, object]) -> dict:
    return {
        "kind": "Secret",
        "type": "kubernetes.io/dockercfg",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "stringData": {".dockercfg": json.dumps(auths)},
    }


def test_pull_secrets_share_one_keyring_and_carry_coordinates() -> None:
    secrets = [
        dockerconfigjson_secret("s1", {"r.io": entry("one")}),
        dockercfg_secret("s2", {"r.io/team": entry("two")}),
        dockerconfigjson_secret("s3", {"r.io": entry("three")}),
        {"kind": "Secret", "type": "Opaque", "metadata": {"name": "o"}, "data": {"x": "eA=="}},
        {"kind": "Secret", "type": "kubernetes.io/dockerconfigjson", "metadata": {"name": "e"}},
    ]
    creds = make_pull_secret_keyring(secrets).lookup("r.io/team/app")
    assert [c.username for c in creds] == ["two", "one", "three"]
    assert creds[0].source == CredentialOrigin(secret=SecretCoordinates("uid-s2", "default", "s2"))
    assert [c.source_label for c in creds] == [
        "secret:default/s2",
        "secret:default/s1",
        "secret:default/s3",
    ]


def test_malformed_secret_payload() -> None:
    bad = dockerconfigjson_secret("bad", {})
    bad["data"][".dockerconfigjson"] = base64.b64encode(b"{not json").decode()
    with pytest.raises(KeyringError, match="secret default/bad"):
        make_pull_secret_keyring([bad])


def test_kubelet_order_secrets_then_node_then_plugins() -> None:
    node = DockerKeyring()
    node.add(parse_docker_config(json.dumps({"auths": {"r.io": entry("node")}})))
    plugins = DockerKeyring()
    plugins.add({"r.io": entry("plugin")}, provider="p")
    keyring = make_docker_keyring(
        [dockerconfigjson_secret("s", {"r.io": entry("secret")})],
        UnionDockerKeyring([node, plugins]),
    )
    creds = keyring.lookup("r.io/app")
    assert [(c.username, c.source_label) for c in creds] == [
        ("secret", "secret:default/s"),
        ("node", "node"),
        ("plugin", "provider:p"),
    ]


@pytest.mark.parametrize(
    "doc",
    [{"auths": {"r.io": entry("u")}}, {"r.io": entry("u")}],
    ids=["config.json", "legacy-dockercfg"],
)
def test_parse_docker_config_formats(doc: dict) -> None:
    assert list(parse_docker_config(json.dumps(doc))) == ["r.io"]


def test_repr_never_shows_password() -> None:
    kr = DockerKeyring()
    kr.add({"r.io": entry("u", "hunter2")})
    (cred,) = kr.lookup("r.io/x")
    assert "hunter2" not in repr(cred)
