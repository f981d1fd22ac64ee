"""``static-credential-provider``: file formats, matching, mirror strategies, errors, cache.

Answers are checked the way the kubelet consumes them: the response's ``auth`` goes into a
``credprov.imageauth.keyring.DockerKeyring`` and ``lookup(image)`` gives the credentials the kubelet
would try, in its order.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from credprov_static.main import OPTIONS

from credprov._go.version import use_go
from credprov.imageauth.keyring import DockerKeyring
from credprov.imageauth.matching import urls_match_str
from credprov.sdk import EXIT_ERROR, EXIT_OK, run
from tests.conftest import CANARY

G = "credentialprovider.kubelet.k8s.io"
NAME = "static-credential-provider"
REPO = Path(__file__).resolve().parents[4]


# -- helpers ----------------------------------------------------------------------------------


def request(image: str, version: str = "v1") -> bytes:
    return json.dumps(
        {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/{version}", "image": image}
    ).encode()


def call(
    config: Path | str | None,
    image: str,
    cache_dir: Path,
    version: str = "v1",
    extra: tuple[str, ...] = (),
) -> tuple[int, dict[str, Any] | None, str]:
    """Run the plugin in-process; (exit code, decoded response or None, stderr)."""
    out = io.BytesIO()
    err = io.StringIO()
    argv = ["--config", str(config)] if config is not None else []
    code = run(
        "credprov_static.plugin:provide",
        name=NAME,
        options=OPTIONS,
        cache=True,
        cache_dir=str(cache_dir),
        argv=[*argv, *extra],
        stdin=io.BytesIO(request(image, version)),
        stdout=out,
        stderr=err,
    )
    raw = out.getvalue()
    return code, (json.loads(raw) if raw else None), err.getvalue()


def answer(config: Path | str | None, image: str, cache_dir: Path) -> dict[str, Any]:
    code, resp, err = call(config, image, cache_dir)
    assert code == EXIT_OK, err
    assert resp is not None
    return resp


def tried(resp: dict[str, Any], image: str) -> list[str]:
    """Usernames the kubelet's keyring would try for ``image``, in order."""
    keyring = DockerKeyring()
    keyring.add(resp.get("auth", {}))
    return [c.username for c in keyring.lookup(image)]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def static_yaml(credentials: list[dict[str, Any]], **top: Any) -> str:
    """A StaticCredentials document, as JSON (a YAML subset) to keep the tests exact."""
    doc: dict[str, Any] = {
        "apiVersion": "credprov.io/v1alpha1",
        "kind": "StaticCredentials",
        "credentials": credentials,
    }
    doc.update(top)
    # Leading "#" comment: not "{", so the YAML path is used.
    return "# generated\n" + json.dumps(doc, indent=2)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


# -- file formats -----------------------------------------------------------------------------

AUTH = b64(f"robot:{CANARY}")
DOCKER_JSON = json.dumps({"auths": {"registry.example.com": {"auth": AUTH}}})
DOCKERCFG = json.dumps(
    {"https://registry.example.com": {"username": "robot", "password": CANARY, "email": "x@y"}}
)

FORMATS = {
    "config.json-auth": ("config.json", DOCKER_JSON),
    "config.json-fields": (
        "config.json",
        json.dumps(
            {
                "auths": {
                    "https://registry.example.com/v2/": {"username": "robot", "password": CANARY}
                },
                "credsStore": "desktop",
                "credHelpers": {"gcr.io": "gcloud"},
            }
        ),
    ),
    "dockercfg-legacy": (".dockercfg", DOCKERCFG),
    "secret-yaml-data": (
        "secret.yaml",
        f"""\
        apiVersion: v1
        kind: Secret
        metadata: {{name: regcred, namespace: default}}
        type: kubernetes.io/dockerconfigjson
        data:
          .dockerconfigjson: {b64(DOCKER_JSON)}
        """,
    ),
    "secret-yaml-stringData": (
        "secret.yaml",
        f"""\
        apiVersion: v1
        kind: Secret
        metadata:
          name: regcred
        type: kubernetes.io/dockerconfigjson
        stringData:
          .dockerconfigjson: '{DOCKER_JSON}'
        """,
    ),
    "secret-json": (
        "secret.json",
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "regcred"},
                "type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": b64(DOCKER_JSON)},
            }
        ),
    ),
    "secret-dockercfg": (
        "secret.yaml",
        f"""\
        apiVersion: v1
        kind: Secret
        type: kubernetes.io/dockercfg
        data:
          .dockercfg: {b64(DOCKERCFG)}
        """,
    ),
    "static-yaml": (
        "static.yaml",
        f"""\
        apiVersion: credprov.io/v1alpha1
        kind: StaticCredentials
        credentials:
          - match: ["registry.example.com"]
            username: robot
            password: {CANARY}
        """,
    ),
    "static-yaml-passwordFile": (
        "static.yaml",
        """\
        apiVersion: credprov.io/v1alpha1
        kind: StaticCredentials
        credentials:
          - match: registry.example.com
            username: robot
            passwordFile: robot.password   # relative to this file
        """,
    ),
    "static-json": (
        "static.json",
        json.dumps(
            {
                "apiVersion": "credprov.io/v1alpha1",
                "kind": "StaticCredentials",
                "credentials": [
                    {"match": ["registry.example.com"], "username": "robot", "password": CANARY}
                ],
            }
        ),
    ),
}


@pytest.mark.parametrize(("name", "text"), list(FORMATS.values()), ids=list(FORMATS))
def test_file_formats(tmp_path: Path, cache: Path, name: str, text: str) -> None:
    (tmp_path / "robot.password").write_text(CANARY + "\n")
    config = write(tmp_path, name, text)
    resp = answer(config, "registry.example.com/team/app", cache)
    assert resp["cacheKeyType"] == "Registry"
    assert resp["cacheDuration"] == "1h0m0s"
    assert [(v["username"], v["password"]) for v in resp["auth"].values()] == [("robot", CANARY)]
    assert tried(resp, "registry.example.com/team/app") == ["robot"]
    assert tried(resp, "other.example.com/team/app") == []


def test_keys_are_normalised_like_the_keyring(tmp_path: Path, cache: Path) -> None:
    config = write(tmp_path, "config.json", FORMATS["config.json-fields"][1])
    resp = answer(config, "registry.example.com/app", cache)
    assert list(resp["auth"]) == ["registry.example.com"]


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v1"])
def test_answers_in_the_requested_version(tmp_path: Path, cache: Path, version: str) -> None:
    config = write(tmp_path, "config.json", DOCKER_JSON)
    code, resp, err = call(config, "registry.example.com/app", cache, version=version)
    assert code == EXIT_OK, err
    assert resp == {
        "kind": "CredentialProviderResponse",
        "apiVersion": f"{G}/{version}",
        "cacheKeyType": "Registry",
        "cacheDuration": "1h0m0s",
        "auth": {"registry.example.com": {"username": "robot", "password": CANARY}},
    }


# -- matching ---------------------------------------------------------------------------------

MATCHING = [
    # (pattern, image, matches)
    ("registry.example.com", "registry.example.com/app", True),
    ("registry.example.com", "sub.registry.example.com/app", False),
    ("*.example.com", "registry.example.com/app", True),
    ("*.example.com", "example.com/app", False),
    ("*.example.com", "a.b.example.com/app", False),
    ("*.*.com", "a.b.com/x", True),
    ("reg[0-9].io", "reg7.io/app", True),
    ("reg[0-9].io", "regx.io/app", False),
    ("reg[!x].io", "regy.io/app", False),  # Go's filepath.Match negates with "^" only
    ("reg.io:5000", "reg.io:5000/app", True),
    ("reg.io:5000", "reg.io/app", False),
    ("reg.io", "reg.io:5000/app", False),
    ("*.io:5000", "reg.io:5000/app", True),
    ("reg.io/team", "reg.io/team/app", True),
    ("reg.io/team", "reg.io/teamz/app", True),  # a plain string prefix, as the kubelet's
    ("reg.io/team", "reg.io/other/app", False),
    ("reg.io/team/app", "reg.io/team/app", True),
    ("https://reg.io/v1/", "reg.io/app", True),
    ("http://reg.io", "reg.io/app", True),
    ("index.docker.io", "docker.io/library/nginx", True),  # the Docker Hub fallback
    ("docker.io", "docker.io/library/nginx", True),
    ("Reg.io", "reg.io/app", False),  # case-sensitive
]


@pytest.mark.parametrize(
    ("pattern", "image", "matches"),
    MATCHING,
    ids=[f"{p}~{i}" for p, i, _ in MATCHING],
)
@pytest.mark.parametrize("key_type", ["Image", "Registry"])
def test_matching(
    tmp_path: Path, cache: Path, pattern: str, image: str, matches: bool, key_type: str
) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            [{"match": [pattern], "username": "robot", "password": CANARY}],
            cacheKeyType=key_type,
        ),
    )
    if "[" in pattern:
        # Brackets in a host are globs only for kubelets built with Go before 1.24.8/1.25.2.
        use_go("1.25.1")
    resp = answer(config, image, cache)
    assert tried(resp, image) == (["robot"] if matches else [])
    if key_type == "Image":
        # An Image answer holds only what matches the image.
        assert bool(resp.get("auth")) == matches
    if "://" not in pattern and pattern != "index.docker.io":
        # The table agrees with the kubelet's URLsMatchStr itself.
        assert urls_match_str(pattern, image) == matches


def test_every_matching_key_in_kubelet_order(tmp_path: Path, cache: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            [
                {"match": ["reg.io"], "username": "registry", "password": "p1"},
                {"match": ["reg.io/team"], "username": "team", "password": "p2"},
                {"match": ["*.io"], "username": "glob", "password": "p3"},
                {"match": ["reg.io/other"], "username": "other", "password": "p4"},
            ],
            cacheKeyType="Image",
        ),
    )
    resp = answer(config, "reg.io/team/app", cache)
    assert set(resp["auth"]) == {"reg.io", "reg.io/team", "*.io"}
    assert tried(resp, "reg.io/team/app") == ["team", "registry", "glob"]


SHARED = static_yaml(
    [
        {"match": ["reg.io"], "username": "registry", "password": "p1"},
        {"match": ["reg.io/team"], "username": "team", "password": "p2"},
        {"match": ["*.io"], "username": "glob", "password": "p3"},
        {"match": ["other.io"], "username": "other", "password": "p4"},
        {"match": ["index.docker.io"], "username": "hub", "password": "p5"},
        {"match": ["reg.io:5000"], "username": "port", "password": "p6"},
    ]
)


@pytest.mark.parametrize(
    ("key_type", "first", "keys"),
    [
        ("Image", "reg.io/team/app", {"reg.io", "reg.io/team", "*.io"}),
        ("Registry", "reg.io/team/app", {"reg.io", "reg.io/team", "*.io"}),
        ("Registry", "docker.io/library/nginx", {"*.io", "index.docker.io"}),
        (
            "Global",
            "reg.io/team/app",
            {"reg.io", "reg.io/team", "*.io", "other.io", "index.docker.io", "reg.io:5000"},
        ),
    ],
    ids=["image", "registry", "registry-docker-hub", "global"],
)
def test_cache_key_type_answers_hold_for_every_image_sharing_the_key(
    tmp_path: Path, cache: Path, key_type: str, first: str, keys: set[str]
) -> None:
    text = SHARED.replace('"kind"', f'"cacheKeyType": "{key_type}",\n  "kind"', 1)
    config = write(tmp_path, "static.yaml", text)
    resp = answer(config, first, cache)
    assert resp["cacheKeyType"] == key_type
    assert set(resp["auth"]) == keys
    # The kubelet reuses this answer for every image with the same cache key: it must give
    # what a fresh answer for that image gives.
    same_key = {
        "Image": [first],
        "Registry": [f"{first.split('/')[0]}/{p}" for p in ("team/x", "teamz/y", "z", "a/b/c")],
        "Global": ["reg.io/team/x", "other.io/y", "docker.io/library/nginx", "reg.io:5000/z"],
    }[key_type]
    for image in same_key:
        fresh = answer(config, image, tmp_path / f"cache-{len(image)}-{image.count('/')}")
        assert tried(resp, image) == tried(fresh, image), image


# -- mirror -----------------------------------------------------------------------------------

MIRROR_CREDS = [
    {"match": ["mirror.example.com:5000"], "username": "mirror", "password": "mirror-pw"},
    {"match": ["docker.io"], "username": "hub", "password": "hub-pw"},
    {"match": ["quay.io/org"], "username": "quay-org", "password": "quay-pw"},
    {"match": ["registry.example.com"], "username": "plain", "password": "plain-pw"},
]

MIRROR_CASES = [
    # (strategy, image, expected usernames the kubelet tries, in order)
    ("MirrorCredentialsOnly", "docker.io/library/nginx", ["mirror"]),
    ("MirrorCredentialsFirst", "docker.io/library/nginx", ["mirror", "hub"]),
    ("MirrorCredentialsLast", "docker.io/library/nginx", ["hub", "mirror"]),
    ("MirrorCredentialsOnly", "quay.io/org/app", ["mirror"]),
    ("MirrorCredentialsFirst", "quay.io/org/app", ["mirror", "quay-org"]),
    ("MirrorCredentialsLast", "quay.io/org/app", ["quay-org", "mirror"]),
    # No upstream credential for quay.io/else: the mirror's alone, whatever the strategy.
    ("MirrorCredentialsFirst", "quay.io/else/app", ["mirror"]),
    ("MirrorCredentialsLast", "quay.io/else/app", ["mirror"]),
    # Not an upstream of the mirror: a plain answer.
    ("MirrorCredentialsOnly", "registry.example.com/app", ["plain"]),
    ("MirrorCredentialsFirst", "registry.example.com/app", ["plain"]),
    # The mirror's own images are never mirrored.
    ("MirrorCredentialsLast", "mirror.example.com:5000/library/nginx", ["mirror"]),
]


@pytest.mark.parametrize(
    ("strategy", "image", "order"),
    MIRROR_CASES,
    ids=[f"{s.removeprefix('MirrorCredentials')}-{i}" for s, i, _ in MIRROR_CASES],
)
def test_mirror_strategies(
    tmp_path: Path, cache: Path, strategy: str, image: str, order: list[str]
) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            MIRROR_CREDS,
            mirror={
                "endpoint": "mirror.example.com:5000",
                "upstreams": ["docker.io", "*.docker.io", "quay.io"],
                "credentialsStrategy": strategy,
            },
        ),
    )
    resp = answer(config, image, cache)
    assert tried(resp, image) == order
    mirrored = not image.startswith(("registry.example.com", "mirror.example.com"))
    assert resp["cacheKeyType"] == ("Image" if mirrored else "Registry")
    if mirrored:
        # One credential per key: the repository (tried first) and its registry.
        assert set(resp["auth"]) <= {image, image.split("/")[0]}
        assert len(resp["auth"]) == len(order)


def test_mirror_answer_keys_follow_the_strategy(tmp_path: Path, cache: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            MIRROR_CREDS,
            mirror={
                "endpoint": "mirror.example.com:5000",
                "credentialsStrategy": "MirrorCredentialsFirst",
            },
        ),
    )
    resp = answer(config, "docker.io/library/nginx", cache)
    assert resp["auth"] == {
        "docker.io/library/nginx": {"username": "mirror", "password": "mirror-pw"},
        "docker.io": {"username": "hub", "password": "hub-pw"},
    }


def test_mirror_strategy_defaults_to_only(tmp_path: Path, cache: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(MIRROR_CREDS, mirror={"endpoint": "mirror.example.com:5000"}),
    )
    # Without upstreams every image (but the mirror's own) is mirrored.
    for image in ("docker.io/library/nginx", "registry.example.com/app"):
        assert tried(answer(config, image, cache), image) == ["mirror"], image


def test_mirror_endpoint_path_and_path_credentials(tmp_path: Path, cache: Path) -> None:
    creds = [
        {"match": ["mirror.example.com/hub"], "username": "hub-mirror", "password": "a"},
        {"match": ["mirror.example.com/quay"], "username": "quay-mirror", "password": "b"},
        {"match": ["docker.io"], "username": "hub", "password": "c"},
    ]
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            creds,
            mirror={
                "endpoint": "https://mirror.example.com/hub/",
                "upstreams": ["docker.io"],
                "credentialsStrategy": "MirrorCredentialsLast",
            },
        ),
    )
    resp = answer(config, "docker.io/library/nginx", cache)
    assert tried(resp, "docker.io/library/nginx") == ["hub", "hub-mirror"]


def test_mirror_without_a_mirror_credential_for_the_image(tmp_path: Path, cache: Path) -> None:
    creds = [
        {"match": ["mirror.example.com/team"], "username": "mirror", "password": "a"},
        {"match": ["docker.io"], "username": "hub", "password": "c"},
    ]
    for strategy, order in (("MirrorCredentialsOnly", []), ("MirrorCredentialsFirst", ["hub"])):
        config = write(
            tmp_path,
            f"{strategy}.yaml",
            static_yaml(
                creds,
                mirror={"endpoint": "mirror.example.com", "credentialsStrategy": strategy},
            ),
        )
        resp = answer(config, "docker.io/library/nginx", tmp_path / strategy)
        assert tried(resp, "docker.io/library/nginx") == order, strategy


def test_same_registry_as_an_upstream_is_cached_per_image(tmp_path: Path, cache: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            MIRROR_CREDS,
            mirror={"endpoint": "mirror.example.com:5000", "upstreams": ["docker.io/library"]},
        ),
    )
    plain = answer(config, "docker.io/bitnami/redis", cache)
    assert plain["cacheKeyType"] == "Image"  # docker.io/library/* must not reuse it
    assert tried(plain, "docker.io/bitnami/redis") == ["hub"]
    mirrored = answer(config, "docker.io/library/nginx", cache)
    assert tried(mirrored, "docker.io/library/nginx") == ["mirror"]


def test_example_config_is_runnable(cache: Path) -> None:
    config = REPO / "config" / "static-credentials.yaml"
    resp = answer(config, "docker.io/library/nginx", cache)
    assert tried(resp, "docker.io/library/nginx") == ["mirror-user", "hub-user"]
    resp = answer(config, "registry.example.com/team-b/app", cache)
    assert tried(resp, "registry.example.com/team-b/app") == ["team-b-robot", "robot"]


# -- bad configs ------------------------------------------------------------------------------

HEAD = "apiVersion: credprov.io/v1alpha1\nkind: StaticCredentials\n"
CRED = f"credentials:\n  - match: [r.io]\n    username: u\n    password: {CANARY}\n"

BAD = {
    "json-syntax": ('{"auths": {"r.io": {"password": "' + CANARY + '"}', "invalid JSON at line"),
    "json-duplicate": (
        '{"auths": {"r.io": {"password": "x"}, "r.io": {"password": "' + CANARY + '"}}}',
        'duplicate key "r.io"',
    ),
    "yaml-syntax": (HEAD + f'credentials:\n  - password: "{CANARY}\n', "invalid YAML at line"),
    "yaml-tab": (
        HEAD + f"credentials:\n\t- password: {CANARY}\n",
        "invalid YAML at line 4, column 1",
    ),
    "yaml-duplicate": (CRED + f"    password: {CANARY}x\n" + HEAD, 'duplicate key "password"'),
    "not-a-mapping": (f"- {CANARY}\n", "not a mapping"),
    "unknown-kind": ("apiVersion: v1\nkind: ConfigMap\n", 'unsupported kind "ConfigMap"'),
    "wrong-apiVersion": (
        "apiVersion: credprov.io/v2\nkind: StaticCredentials\n" + CRED,
        'apiVersion "credprov.io/v2" is not credprov.io/v1alpha1',
    ),
    "unknown-top-field": (HEAD + CRED + "mirrors: {}\n", 'unknown field "mirrors"'),
    "unknown-credential-field": (
        HEAD + f"credentials:\n  - match: [r.io]\n    username: u\n    pasword: {CANARY}\n",
        'credentials[0]: unknown field "pasword"',
    ),
    "password-not-a-string": (
        HEAD + f"credentials:\n  - match: [r.io]\n    username: u\n    password: [{CANARY}]\n",
        "credentials[0].password must be a string, not a list",
    ),
    "password-number": (
        HEAD + "credentials:\n  - match: [r.io]\n    username: u\n    password: 12345678\n",
        "credentials[0].password must be a string, not a number",
    ),
    "password-and-file": (
        HEAD + CRED + "    passwordFile: /x\n",
        "needs exactly one of password or passwordFile",
    ),
    "no-password": (
        HEAD + "credentials:\n  - match: [r.io]\n    username: u\n",
        "needs exactly one of password or passwordFile",
    ),
    "no-match": (
        HEAD + f"credentials:\n  - username: u\n    password: {CANARY}\n",
        "credentials[0].match is required",
    ),
    "empty-match": (
        HEAD + f"credentials:\n  - match: []\n    username: u\n    password: {CANARY}\n",
        "credentials[0].match must be a non-empty list of strings",
    ),
    "no-username": (
        HEAD + f"credentials:\n  - match: [r.io]\n    password: {CANARY}\n",
        "credentials[0].username is required",
    ),
    "not-a-url": (
        HEAD + f"credentials:\n  - match: ['[r.io']\n    username: u\n    password: {CANARY}\n",
        'credentials[0].match[0]: "[r.io" is not a registry pattern',
    ),
    "duplicate-pattern": (
        HEAD
        + "credentials:\n  - match: [r.io, 'https://r.io/v2/']\n    username: u\n"
        + f"    password: {CANARY}\n",
        "is the same registry key as credentials[0].match[0]",
    ),
    "question-mark": (
        HEAD + f"credentials:\n  - match: ['reg?.io']\n    username: u\n    password: {CANARY}\n",
        'credentials[0].match[0]: "reg?.io" holds "?" or "#"',
    ),
    "credentials-null": (HEAD + "credentials:\n", "credentials must be a non-empty list"),
    "credential-not-a-mapping": (
        HEAD + f"credentials: [{CANARY}]\n",
        "credentials[0] must be a mapping",
    ),
    "username-null": (
        HEAD + f"credentials:\n  - match: r.io\n    username:\n    password: {CANARY}\n",
        "credentials[0].username must be a string, not a null",
    ),
    "password-and-null-file": (
        HEAD + CRED + "    passwordFile:\n",
        "credentials[0] needs exactly one of password or passwordFile",
    ),
    "second-credential-unknown-fields": (
        HEAD + CRED + f"  - {{match: [s.io], username: u, pasword: {CANARY}, x: 1}}\n",
        'credentials[1]: unknown fields "pasword", "x" (allowed: match, password, '
        "passwordFile, username)",
    ),
    "duration-null": (
        HEAD + CRED + "cacheDuration:\n",
        "cacheDuration must be a string, not a null",
    ),
    "cacheKeyType-null": (HEAD + CRED + "cacheKeyType:\n", "cacheKeyType null is not one of"),
    "mirror-not-a-mapping": (HEAD + CRED + "mirror: r.io\n", "mirror must be a mapping"),
    "mirror-upstreams-null": (
        HEAD + CRED + "mirror: {endpoint: r.io, upstreams: null}\n",
        "mirror.upstreams must be a non-empty list of strings",
    ),
    "no-credentials": (HEAD, "credentials is required"),
    "bad-duration": (HEAD + CRED + "cacheDuration: 1 hour\n", "cacheDuration: time: "),
    "negative-duration": (HEAD + CRED + "cacheDuration: -1h\n", "must not be negative"),
    "bad-cacheKeyType": (HEAD + CRED + "cacheKeyType: Repo\n", 'cacheKeyType "Repo" is not'),
    "mirror-no-endpoint": (
        HEAD + CRED + "mirror: {upstreams: [docker.io]}\n",
        "endpoint is required",
    ),
    "mirror-glob-endpoint": (HEAD + CRED + "mirror: {endpoint: '*.r.io'}\n", "host[:port][/path]"),
    "mirror-bad-strategy": (
        HEAD + CRED + "mirror: {endpoint: r.io, credentialsStrategy: Both}\n",
        'credentialsStrategy "Both" is not one of MirrorCredentialsOnly',
    ),
    "mirror-unknown-field": (
        HEAD + CRED + "mirror: {endpoint: r.io, strategy: x}\n",
        "mirror: unknown field",
    ),
    "mirror-no-credentials": (
        HEAD + CRED + "mirror: {endpoint: m.io}\n",
        'mirror.endpoint "m.io": no credentials match its host',
    ),
    "mirror-upstreams-type": (
        HEAD + CRED + "mirror: {endpoint: r.io, upstreams: [1]}\n",
        "mirror.upstreams[0] must be a string, not a number",
    ),
    "mirror-global": (
        HEAD + CRED + "mirror: {endpoint: r.io}\ncacheKeyType: Global\n",
        "cacheKeyType Global cannot be used with a mirror",
    ),
    "passwordFile-missing": (
        HEAD + "credentials:\n  - match: [r.io]\n    username: u\n    passwordFile: nope.txt\n",
        "cannot read credentials[0].passwordFile ",
    ),
    "passwordFile-empty": (
        HEAD + "credentials:\n  - match: [r.io]\n    username: u\n    passwordFile: empty.txt\n",
        "empty.txt is empty",
    ),
    "secret-type": (
        "apiVersion: v1\nkind: Secret\ntype: Opaque\nstringData: {password: " + CANARY + "}\n",
        'Secret type "Opaque" is not kubernetes.io/dockerconfigjson',
    ),
    "secret-base64": (
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\n"
        f"data: {{.dockerconfigjson: '{CANARY}!'}}\n",
        "'.dockerconfigjson' is not valid base64",
    ),
    "secret-missing-key": (
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockercfg\ndata: {}\n",
        "Secret has no .dockercfg in data or stringData",
    ),
    "secret-unknown-field": (
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockercfg\nstrinData: {}\n",
        'Secret: unknown field "strinData"',
    ),
    "secret-bad-payload": (
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\n"
        f"stringData: {{.dockerconfigjson: '{{\"auths\": {CANARY}'}}\n",
        ".dockerconfigjson is not valid JSON",
    ),
    "docker-auth-base64": (
        json.dumps({"auths": {"r.io": {"auth": CANARY + "!"}}}),
        'entry "r.io": illegal base64 data',
    ),
    "docker-auth-no-colon": (
        json.dumps({"auths": {"r.io": {"auth": b64(CANARY)}}}),
        "must be formatted as base64(username:password)",
    ),
    "docker-not-a-config": (json.dumps({"credsStore": CANARY}), "not a docker config"),
}


@pytest.mark.parametrize(("text", "message"), list(BAD.values()), ids=list(BAD))
def test_bad_config_is_one_line_without_secrets(
    tmp_path: Path, cache: Path, text: str, message: str
) -> None:
    (tmp_path / "empty.txt").write_text("\n")
    config = tmp_path / "creds.yaml"
    config.write_text(text)
    code, resp, err = call(config, "r.io/app", cache)
    assert code == EXIT_ERROR and resp is None
    assert err.startswith(f"{NAME}: {config}") or err.startswith(f"{NAME}: cannot read"), err
    assert message in err, err
    assert err.count("\n") == 1, err
    assert CANARY not in err


@pytest.mark.parametrize(
    ("go_version", "message"),
    [
        ("1.25.1", 'credentials[0].match[0]: "r[.io" is not a valid glob'),
        # Go 1.25.2 and later read "[.io" as an IP literal: no URL, so no key.
        ("1.25.5", 'credentials[0].match[0]: "r[.io" is not a registry pattern'),
    ],
)
def test_bad_glob_as_the_kubelets_go_reads_it(
    tmp_path: Path, cache: Path, go_version: str, message: str
) -> None:
    use_go(go_version)
    config = tmp_path / "creds.yaml"
    config.write_text(
        HEAD + f"credentials:\n  - match: ['r[.io']\n    username: u\n    password: {CANARY}\n"
    )
    code, resp, err = call(config, "r.io/app", cache)
    assert code == EXIT_ERROR and resp is None
    assert message in err and err.count("\n") == 1, err


def test_go_version_option(tmp_path: Path, cache: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml([{"match": ["reg[0-9].io"], "username": "robot", "password": CANARY}]),
    )
    code, _, err = call(config, "reg7.io/app", cache)
    assert code == EXIT_ERROR and '"reg[0-9].io" is not a registry pattern' in err, err
    code, resp, _ = call(config, "reg7.io/app", cache, extra=("--go-version", "1.25.1"))
    assert code == EXIT_OK and resp is not None and tried(resp, "reg7.io/app") == ["robot"]
    code, _, err = call(config, "reg7.io/app", cache, extra=("--go-version", "1.25"))
    assert code == EXIT_ERROR and "--go-version: Go version '1.25' is ambiguous" in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("path", "message"),
    [("missing.yaml", "cannot read credentials file "), (".", "cannot read credentials file ")],
    ids=["missing", "directory"],
)
def test_unreadable_file_names_the_path(
    tmp_path: Path, cache: Path, path: str, message: str
) -> None:
    full = tmp_path / path
    code, _, err = call(full, "r.io/app", cache)
    assert code == EXIT_ERROR
    assert err.startswith(f"{NAME}: {message}{full}: ") and err.count("\n") == 1, err


def test_no_config_at_all(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATIC_CREDENTIAL_PROVIDER_CONFIG", raising=False)
    code, _, err = call(None, "r.io/app", cache)
    assert code == EXIT_ERROR
    assert "pass --config PATH or set STATIC_CREDENTIAL_PROVIDER_CONFIG" in err


def test_config_from_environment_and_option_precedence(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = write(tmp_path, "env.json", DOCKER_JSON)
    monkeypatch.setenv("STATIC_CREDENTIAL_PROVIDER_CONFIG", str(env_file))
    resp = answer(None, "registry.example.com/a", cache)
    assert tried(resp, "registry.example.com/a") == ["robot"]
    opt_file = write(tmp_path, "opt.json", json.dumps({"auths": {"other.io": {"auth": AUTH}}}))
    resp = answer(opt_file, "other.io/a", tmp_path / "cache2")
    assert tried(resp, "other.io/a") == ["robot"]


def test_invalid_image_is_refused(tmp_path: Path, cache: Path) -> None:
    config = write(tmp_path, "config.json", DOCKER_JSON)
    code, _, err = call(config, "Registry.example.com/App", cache)
    assert code == EXIT_ERROR and "invalid image" in err


# -- the plugin cache -------------------------------------------------------------------------


def test_second_run_is_answered_from_the_plugin_cache(tmp_path: Path, cache: Path) -> None:
    config = write(tmp_path, "config.json", DOCKER_JSON)
    # The plugin cache is scoped by the whole argument list, -v included: same args twice.
    code, first, err = call(config, "registry.example.com/app", cache, extra=("-v", "2"))
    assert code == EXIT_OK and first is not None, err
    sys.modules.pop("credprov_static.plugin", None)
    config.unlink()  # a handler run would now fail
    code, second, err = call(config, "registry.example.com/app", cache, extra=("-v", "2"))
    assert code == EXIT_OK, err
    assert "credprov_static.plugin" not in sys.modules
    assert "answered registry.example.com/app from the plugin cache" in err
    assert second is not None and second["auth"] == first["auth"]


def test_zero_cache_duration_is_not_cached(tmp_path: Path, cache: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml([{"match": ["r.io"], "username": "u", "password": "p"}], cacheDuration="0s"),
    )
    assert answer(config, "r.io/app", cache)["cacheDuration"] == "0s"
    config.unlink()
    code, _, err = call(config, "r.io/app", cache)
    assert code == EXIT_ERROR and "cannot read credentials file" in err


# -- as a real process ------------------------------------------------------------------------

MAIN = (
    "import sys\n"
    "from credprov_static.main import main\n"
    "code = main()\n"
    "sys.stderr.write('yaml-imported=%s\\n' % ('yaml' in sys.modules))\n"
    "raise SystemExit(code)\n"
)


def spawn(
    tmp_path: Path, image: str, args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    environ = {k: v for k, v in os.environ.items() if k != "STATIC_CREDENTIAL_PROVIDER_CONFIG"}
    environ["CREDPROV_PLUGIN_CACHE_DIR"] = str(tmp_path / "plugin-cache")
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        input=request(image),
        capture_output=True,
        env=environ,
        timeout=60,
        check=False,
    )


def test_subprocess_mirror_first_then_cache(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml(
            MIRROR_CREDS,
            mirror={
                "endpoint": "mirror.example.com:5000",
                "upstreams": ["docker.io"],
                "credentialsStrategy": "MirrorCredentialsFirst",
            },
        ),
    )
    args = ["--config", str(config), "-v", "2"]
    first = spawn(tmp_path, "docker.io/library/nginx", args)
    assert first.returncode == 0, first.stderr
    resp = json.loads(first.stdout)
    assert resp["cacheKeyType"] == "Image"
    assert tried(resp, "docker.io/library/nginx") == ["mirror", "hub"]
    assert b"yaml-imported=True" in first.stderr

    second = spawn(tmp_path, "docker.io/library/nginx", args)
    assert second.returncode == 0, second.stderr
    assert b"answered docker.io/library/nginx from the plugin cache" in second.stderr
    assert b"yaml-imported=False" in second.stderr
    assert json.loads(second.stdout)["auth"] == resp["auth"]


def test_subprocess_json_config_never_imports_yaml(tmp_path: Path) -> None:
    config = write(tmp_path, "config.json", DOCKER_JSON)
    proc = spawn(tmp_path, "registry.example.com/app", ["--config", str(config)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["auth"]["registry.example.com"]["username"] == "robot"
    assert b"yaml-imported=False" in proc.stderr


def test_subprocess_config_from_environment_scopes_the_cache(tmp_path: Path) -> None:
    one = write(tmp_path, "one.json", json.dumps({"auths": {"r.io": {"auth": b64("one:p")}}}))
    two = write(tmp_path, "two.json", json.dumps({"auths": {"r.io": {"auth": b64("two:p")}}}))
    for path, user in ((one, "one"), (two, "two"), (one, "one")):
        proc = spawn(
            tmp_path, "r.io/app", ["-v", "2"], {"STATIC_CREDENTIAL_PROVIDER_CONFIG": str(path)}
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["auth"]["r.io"]["username"] == user


def test_subprocess_bad_config(tmp_path: Path) -> None:
    config = write(tmp_path, "static.yaml", BAD["password-not-a-string"][0])
    proc = spawn(tmp_path, "r.io/app", ["--config", str(config)])
    assert proc.returncode == EXIT_ERROR
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert lines[0].startswith(f"{NAME}: {config}: credentials[0].password must be a string")
    assert CANARY.encode() not in proc.stderr


def test_subprocess_go_version_from_the_environment(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "static.yaml",
        static_yaml([{"match": ["reg[0-9].io"], "username": "robot", "password": CANARY}]),
    )
    proc = spawn(tmp_path, "reg7.io/app", ["--config", str(config)])
    assert proc.returncode == EXIT_ERROR and b"is not a registry pattern" in proc.stderr
    proc = spawn(
        tmp_path, "reg7.io/app", ["--config", str(config)], {"CREDPROV_GO_VERSION": "1.25.1"}
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert json.loads(proc.stdout)["auth"]["reg[0-9].io"]["username"] == "robot"
