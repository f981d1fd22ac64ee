"""``load_config``/``read_config``: upstream ``Test_readCredentialProviderConfig`` and more.

Rows marked "upstream" come from kubernetes/kubernetes
``pkg/credentialprovider/plugin/config_test.go`` (the config data byte for byte, so the
``sha256:`` hashes must match the kubelet's).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from credprov.api import internal
from credprov.credentialprovider.plugin.config import ConfigError, load_config, read_config

MINUTE = 60 * 10**9

_V1ALPHA1_ONE = """---
kind: CredentialProviderConfig
apiVersion: kubelet.config.k8s.io/v1alpha1
providers:
  - name: test
    matchImages:
    - "{image}"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1
    args:
    - --v=5
    env:
    - name: FOO
      value: BAR"""

_JSON_ONE = (
    "{\n"
    '\t\t\t\t  "kind": "CredentialProviderConfig",\n'
    '\t\t\t\t  "apiVersion": "kubelet.config.k8s.io/v1alpha1",\n'
    '\t\t\t\t  "providers": [\n'
    "\t\t\t\t\t{\n"
    '\t\t\t\t\t  "name": "test",\n'
    '\t\t\t\t\t  "matchImages": [\n'
    '\t\t\t\t\t\t"registry.io/foobar"\n'
    "\t\t\t\t\t  ],\n"
    '\t\t\t\t\t  "defaultCacheDuration": "10m",\n'
    '\t\t\t\t\t  "apiVersion": "credentialprovider.kubelet.k8s.io/v1alpha1",\n'
    '\t\t\t\t\t  "args": [\n'
    '\t\t\t\t\t\t"--v=5"\n'
    "\t\t\t\t\t  ],\n"
    '\t\t\t\t\t  "env": [\n'
    "\t\t\t\t\t\t{\n"
    '\t\t\t\t\t\t  "name": "FOO",\n'
    '\t\t\t\t\t\t  "value": "BAR"\n'
    "\t\t\t\t\t\t}\n"
    "\t\t\t\t\t  ]\n"
    "\t\t\t\t\t}\n"
    "\t\t\t\t  ]\n"
    "\t\t\t\t}"
)

_MULTI_IMAGES = """---
kind: CredentialProviderConfig
apiVersion: kubelet.config.k8s.io/v1alpha1
providers:
  - name: test
    matchImages:
    - "registry.io/*"
    - "foobar.registry.io/*"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1
    args:
    - --v=5
    env:
    - name: FOO
      value: BAR"""

_TWO_PROVIDERS = """---
kind: CredentialProviderConfig
apiVersion: kubelet.config.k8s.io/{cv}
providers:
  - name: test1
    matchImages:
    - "registry.io/one"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/{ev}
  - name: test2
    matchImages:
    - "registry.io/two"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/{ev}
    args:
    - --v=5
    env:
    - name: FOO
      value: BAR"""


def _single(name: str, image: str, duration: str, cv: str = "v1", kind: str = "") -> str:
    return (
        "---\n"
        f"kind: {kind or 'CredentialProviderConfig'}\n"
        f"apiVersion: kubelet.config.k8s.io/{cv}\n"
        "providers:\n"
        f"  - name: {name}\n"
        "    matchImages:\n"
        f'    - "{image}"\n'
        f"    defaultCacheDuration: {duration}\n"
        f"    apiVersion: credentialprovider.kubelet.k8s.io/{cv}"
    )


def _json_single(name: str, image: str, duration: str) -> str:
    return (
        "{\n"
        '  "kind": "CredentialProviderConfig",\n'
        '  "apiVersion": "kubelet.config.k8s.io/v1",\n'
        '  "providers": [\n'
        "    {\n"
        f'      "name": "{name}",\n'
        '      "matchImages": [\n'
        f'        "{image}"\n'
        "      ],\n"
        f'      "defaultCacheDuration": "{duration}",\n'
        '      "apiVersion": "credentialprovider.kubelet.k8s.io/v1"\n'
        "    }\n"
        "  ]\n"
        "}"
    )


def _p(
    name: str, images: list[str], minutes: int, version: str, *, with_extras: bool = False
) -> internal.CredentialProvider:
    return internal.CredentialProvider(
        name=name,
        match_images=tuple(images),
        default_cache_duration=minutes * MINUTE,
        api_version=f"credentialprovider.kubelet.k8s.io/{version}",
        args=("--v=5",) if with_extras else (),
        env=(internal.ExecEnvVar("FOO", "BAR"),) if with_extras else (),
    )


def _write(tmp_path: Path, files: list[str], names: list[str] | None, is_dir: bool) -> str:
    if not is_dir:
        path = tmp_path / "config.yaml"
        path.write_text(files[0] if files else "", encoding="utf-8")
        return str(path)
    d = tmp_path / "config-dir"
    d.mkdir()
    for i, data in enumerate(files):
        name = names[i] if names and i < len(names) else f"config-{i:03d}.yaml"
        (d / name).write_text(data, encoding="utf-8")
    return str(d)


# (files, file names, is_dir, expected providers, expected hash)
_OK_CASES = [
    pytest.param(
        [_V1ALPHA1_ONE.format(image="registry.io/foobar")],
        None,
        False,
        [_p("test", ["registry.io/foobar"], 10, "v1alpha1", with_extras=True)],
        "sha256:8a62755289ba50c4ca9495baab69eb861068503f8bd49b853e8ba6cf95c72bb8",
        id="upstream-1-plugin-1-matcher",
    ),
    pytest.param(
        [_JSON_ONE],
        None,
        False,
        [_p("test", ["registry.io/foobar"], 10, "v1alpha1", with_extras=True)],
        "sha256:fd0946c206cc5b8735cd57816f21e139cfe480f27119f1d1f80e7c2fd9dc4636",
        id="upstream-1-plugin-json",
    ),
    pytest.param(
        [_V1ALPHA1_ONE.format(image="registry.io/*")],
        None,
        False,
        [_p("test", ["registry.io/*"], 10, "v1alpha1", with_extras=True)],
        "sha256:5272b0ed7da9c85912217bb9e5293549d7a03cdd510cb73df8d06bd8db363921",
        id="upstream-wildcard-matcher",
    ),
    pytest.param(
        [_MULTI_IMAGES],
        None,
        False,
        [
            _p(
                "test",
                ["registry.io/*", "foobar.registry.io/*"],
                10,
                "v1alpha1",
                with_extras=True,
            )
        ],
        "sha256:e167993fa14ef8a799aebe1ebca7177478f93b8ada2b61286479641a4266d75e",
        id="upstream-multiple-matchers",
    ),
    pytest.param(
        [_TWO_PROVIDERS.format(cv="v1alpha1", ev="v1alpha1")],
        None,
        False,
        [
            _p("test1", ["registry.io/one"], 10, "v1alpha1"),
            _p("test2", ["registry.io/two"], 10, "v1alpha1", with_extras=True),
        ],
        "sha256:04d747035e475d4fed4f2e2ec061941d401172e4447e2262a6269f22a670418b",
        id="upstream-multiple-providers",
    ),
    pytest.param(
        [_TWO_PROVIDERS.format(cv="v1beta1", ev="v1beta1")],
        None,
        False,
        [
            _p("test1", ["registry.io/one"], 10, "v1beta1"),
            _p("test2", ["registry.io/two"], 10, "v1beta1", with_extras=True),
        ],
        "sha256:5d6e9671b548ddcaf4674cfa5e13257bcff06c931a8a4ef13f2577f94ff4cff3",
        id="upstream-v1beta1-multiple-providers",
    ),
    pytest.param(
        [_TWO_PROVIDERS.format(cv="v1", ev="v1")],
        None,
        False,
        [
            _p("test1", ["registry.io/one"], 10, "v1"),
            _p("test2", ["registry.io/two"], 10, "v1", with_extras=True),
        ],
        "sha256:ea93e932f6b7f0ab45cecd6e7141cf5d3a6a037868b59725a60e99a2b702e2a7",
        id="upstream-v1-multiple-providers",
    ),
    pytest.param(
        [_single("test1", "registry.io/one", "10m"), _single("test2", "registry.io/two", "5m")],
        None,
        True,
        [_p("test1", ["registry.io/one"], 10, "v1"), _p("test2", ["registry.io/two"], 5, "v1")],
        "sha256:efef09979a19eee4802fe4b7aa46d5122f16687a8419443647182c1920f76ac9",
        id="upstream-dir-lexicographic-order",
    ),
    pytest.param(
        [
            _single("test-beta", "beta.registry.io/*", "15m", cv="v1beta1"),
            _single("test-v1", "v1.registry.io/*", "20m"),
            _json_single("test-v2", "v2.registry.io/*", "20m"),
        ],
        None,
        True,
        [
            _p("test-beta", ["beta.registry.io/*"], 15, "v1beta1"),
            _p("test-v1", ["v1.registry.io/*"], 20, "v1"),
            _p("test-v2", ["v2.registry.io/*"], 20, "v1"),
        ],
        "sha256:292a674763a5b34f4e51bd0d4c5736375f31a04cb1bed519ca3fcd033ce3e20e",
        id="upstream-dir-mixed-api-versions",
    ),
    pytest.param(
        [
            _single("test1", "registry.io/one", "10m"),
            "This is a text file with unsupported extension that should be skipped",
            _json_single("test2", "registry.io/two", "5m"),
        ],
        ["config-001.yaml", "config-002.txt", "config-003.json"],
        True,
        [_p("test1", ["registry.io/one"], 10, "v1"), _p("test2", ["registry.io/two"], 5, "v1")],
        "sha256:70b4a5afe55ad1045c14f427e33ef10d1bbd82fb0c5b6c944e2c9f8ad2b5d180",
        id="upstream-dir-mixed-extensions",
    ),
]


@pytest.mark.parametrize(("files", "names", "is_dir", "providers", "digest"), _OK_CASES)
def test_read_config_upstream_hashes(
    tmp_path: Path,
    files: list[str],
    names: list[str] | None,
    is_dir: bool,
    providers: list[internal.CredentialProvider],
    digest: str,
) -> None:
    config, got = load_config(_write(tmp_path, files, names, is_dir))
    assert got == digest
    assert list(config.providers) == providers


_ERR_CASES = [
    pytest.param(
        [], None, True, "no configuration files found in directory", id="upstream-empty-dir"
    ),
    pytest.param(
        ["This is a text file with unsupported extension", "This is another text file"],
        ["config.txt", "config.md"],
        True,
        "no configuration files found in directory",
        id="upstream-dir-unsupported-extensions",
    ),
    pytest.param(
        [
            _V1ALPHA1_ONE.format(image="registry.io/foobar").replace(
                "CredentialProviderConfig", "WrongKind"
            )
        ],
        None,
        False,
        'no kind "WrongKind" is registered for version "kubelet.config.k8s.io/v1alpha1"',
        id="upstream-wrong-kind",
    ),
    pytest.param(
        [
            _V1ALPHA1_ONE.format(image="registry.io/foobar").replace(
                "kubelet.config.k8s.io", "foobar"
            )
        ],
        None,
        False,
        'no kind "CredentialProviderConfig" is registered for version "foobar/v1alpha1',
        id="upstream-wrong-apiversion",
    ),
    pytest.param(
        [
            _V1ALPHA1_ONE.format(image="registry.io/foobar")
            .replace("kubelet.config.k8s.io/v1alpha1", "kubelet.config.k8s.io/v1")
            .replace(
                "    defaultCacheDuration: 10m\n",
                "    defaultCacheDuration: 10m\n"
                "    unknownField: should not be here # this field should not be here\n",
            )
        ],
        None,
        False,
        'strict decoding error: unknown field "providers[0].unknownField"',
        id="upstream-invalid-typo",
    ),
    pytest.param(
        [
            _V1ALPHA1_ONE.format(image="registry.io/foobar").replace(
                "    args:\n",
                "    tokenAttributes:\n      serviceAccountTokenAudience: audience\n    args:\n",
            )
        ],
        None,
        False,
        'strict decoding error: unknown field "providers[0].tokenAttributes"',
        id="upstream-v1alpha1-token-attributes",
    ),
    pytest.param(
        [
            _TWO_PROVIDERS.format(cv="v1beta1", ev="v1beta1").replace(
                "    args:\n",
                "    tokenAttributes:\n      serviceAccountTokenAudience: audience\n    args:\n",
            )
        ],
        None,
        False,
        'strict decoding error: unknown field "providers[1].tokenAttributes"',
        id="upstream-v1beta1-token-attributes",
    ),
    pytest.param(
        [
            _single("duplicate", "registry.io/one", "10m"),
            _single("duplicate", "registry.io/two", "5m"),
        ],
        None,
        True,
        'duplicate provider name "duplicate" found in configuration file(s) (in '
        '"{dir}/config-000.yaml" and "{dir}/config-001.yaml")',
        id="upstream-dir-duplicate-names",
    ),
    pytest.param(
        [
            _single("test1", "registry.io/one", "10m"),
            _single("test2", "registry.io/two", "5m", kind="WrongKind"),
        ],
        None,
        True,
        'no kind "WrongKind" is registered for version "kubelet.config.k8s.io/v1"',
        id="upstream-dir-one-invalid-file",
    ),
    pytest.param(
        [_TWO_PROVIDERS.format(cv="v1", ev="v1").replace("name: test2", "name: test1")],
        None,
        False,
        'duplicate provider name "test1" found in configuration file(s) (twice in "{file}")',
        id="duplicate-names-within-one-file",
    ),
]


@pytest.mark.parametrize(("files", "names", "is_dir", "message"), _ERR_CASES)
def test_read_config_upstream_errors(
    tmp_path: Path, files: list[str], names: list[str] | None, is_dir: bool, message: str
) -> None:
    path = _write(tmp_path, files, names, is_dir)
    with pytest.raises(ConfigError) as info:
        read_config(path)
    assert message.format(file=path, dir=path) in str(info.value)


_GOOD_V1 = _single("a", "registry.io", "10m")
_SCHEME = "pkg/credentialprovider/plugin/plugin.go:69"


def _err(path: str, reason: str) -> str:
    return f'error decoding config "{path}": {reason}'


_DECODE_CASES = [
    pytest.param(
        _GOOD_V1.replace("defaultCacheDuration: 10m", "defaultCacheDuration: 10"),
        "json: cannot unmarshal number into Go struct field "
        "CredentialProvider.providers.defaultCacheDuration of type string",
        id="number-where-duration-expected",
    ),
    pytest.param(
        _GOOD_V1.replace("defaultCacheDuration: 10m", "defaultCacheDuration: 10d"),
        'time: unknown unit "d" in duration "10d"',
        id="duration-unknown-unit",
    ),
    pytest.param(
        _GOOD_V1.replace("defaultCacheDuration: 10m", "defaultCacheDuration: '10'"),
        'time: missing unit in duration "10"',
        id="duration-missing-unit",
    ),
    pytest.param(
        _GOOD_V1.replace("  - name: a\n", "  - name: a\n    name: b\n"),
        'strict decoding error: yaml: unmarshal errors:\n  line 6: key "name" already set in map',
        id="yaml-duplicate-key",
    ),
    pytest.param(
        '{"kind":"CredentialProviderConfig","apiVersion":"kubelet.config.k8s.io/v1",'
        '"providers":[{"name":"a","name":"b","matchImages":["r"],'
        '"defaultCacheDuration":"1m","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}',
        'strict decoding error: duplicate field "providers[0].name"',
        id="json-duplicate-key",
    ),
    pytest.param(
        '{"kind":"CredentialProviderConfig","kind":"CredentialProviderConfig",'
        '"apiVersion":"kubelet.config.k8s.io/v1","providers":[{"Name":"a","x":1}]}',
        'strict decoding error: duplicate field "kind", unknown field "providers[0].Name", '
        'unknown field "providers[0].x"',
        id="json-strict-errors-in-document-order",
    ),
    pytest.param(
        _GOOD_V1.replace("matchImages:", "MatchImages:"),
        'strict decoding error: unknown field "providers[0].MatchImages"',
        id="field-names-case-sensitive",
    ),
    pytest.param(
        _GOOD_V1.replace("kind: CredentialProviderConfig", "kind: KubeletConfiguration").replace(
            "kubelet.config.k8s.io/v1\n", "kubelet.config.k8s.io/v1beta1\n"
        ),
        'failed to decode "KubeletConfiguration" (wrong Kind)',
        id="registered-wrong-kind",
    ),
    pytest.param(
        '{"kind":"CredentialProviderRequest",'
        '"apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"x"}',
        'failed to decode "CredentialProviderRequest" (wrong Kind)',
        id="exec-kind-is-wrong-kind",
    ),
    pytest.param(
        _GOOD_V1.replace("kind: CredentialProviderConfig", "kind: KubeletConfiguration"),
        'no kind "KubeletConfiguration" is registered for version "kubelet.config.k8s.io/v1" '
        f'in scheme "{_SCHEME}"',
        id="kind-not-registered-in-v1",
    ),
    pytest.param(
        "apiVersion: kubelet.config.k8s.io/v1\nproviders: []\n",
        "Object 'Kind' is missing in '<51-byte document not shown: it may hold secrets>'",
        id="missing-kind",
    ),
    pytest.param(
        "kind: CredentialProviderConfig\n",
        "Object 'apiVersion' is missing in '<31-byte document not shown: it may hold secrets>'",
        id="missing-apiversion",
    ),
    pytest.param(
        "kind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/\n",
        "Object 'apiVersion' is missing in '<66-byte document not shown: it may hold secrets>'",
        id="empty-version-after-slash",
    ),
    pytest.param(
        "kind: CredentialProviderConfig\napiVersion: a/b/c\n",
        "unexpected GroupVersion string: a/b/c",
        id="apiversion-two-slashes",
    ),
    pytest.param(
        "kind: CredentialProviderConfig\napiVersion: v1\n",
        f'no kind "CredentialProviderConfig" is registered for version "v1" in scheme "{_SCHEME}"',
        id="apiversion-without-group",
    ),
    pytest.param(
        "",
        "Object 'Kind' is missing in ''",
        id="empty-file",
    ),
    pytest.param(
        "- a\n- b\n",
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go "
        'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
        'Kind string "json:\\"kind,omitempty\\"" }',
        id="top-level-list",
    ),
    pytest.param(
        "{",
        "couldn't get version/kind; json parse error: unexpected end of JSON input",
        id="truncated-json",
    ),
    pytest.param(
        '{"kind": 5}',
        "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go "
        "struct field .kind of type string",
        id="kind-not-a-string",
    ),
    pytest.param(
        _GOOD_V1.replace("  - name: a", "  - name: 5"),
        "json: cannot unmarshal number into Go struct field CredentialProvider.providers.name "
        "of type string",
        id="number-where-string-expected",
    ),
    pytest.param(
        _GOOD_V1.replace('    - "registry.io"', "    - [x]"),
        "json: cannot unmarshal array into Go struct field "
        "CredentialProvider.providers.matchImages of type string",
        id="array-in-string-list",
    ),
    pytest.param(
        "kind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/v1beta1\n"
        "providers: {}\n",
        "json: cannot unmarshal object into Go struct field "
        "CredentialProviderConfig.providers of type []v1beta1.CredentialProvider",
        id="object-where-list-expected-names-version",
    ),
    pytest.param(
        _GOOD_V1 + "\n    tokenAttributes: yes",
        "json: cannot unmarshal bool into Go struct field "
        "CredentialProvider.providers.tokenAttributes of type v1.ServiceAccountTokenAttributes",
        id="bool-where-struct-expected",
    ),
    pytest.param(
        _GOOD_V1 + "\n    env:\n    - name: 1\n      bogus: 2",
        "json: cannot unmarshal number into Go struct field ExecEnvVar.providers.env.name "
        "of type string",
        id="type-error-beats-strict-error",
    ),
    pytest.param(
        _GOOD_V1.replace("  - name: a", "  - name: 5") + "\n    defaultCacheDuration: 1x",
        'time: unknown unit "x" in duration "1x"',
        id="duration-error-beats-earlier-type-error",
    ),
]


@pytest.mark.parametrize(("content", "reason"), _DECODE_CASES)
def test_decode_errors_are_exact(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_config(str(path))
    assert str(info.value) == _err(str(path), reason)


_DECODE_OK_CASES = [
    pytest.param(
        _GOOD_V1 + "\n    args: null\n    env: ~",
        _p("a", ["registry.io"], 10, "v1"),
        id="null-lists",
    ),
    pytest.param(
        _GOOD_V1.replace("10m", "1h30m"),
        internal.CredentialProvider(
            "a", ("registry.io",), 90 * MINUTE, "credentialprovider.kubelet.k8s.io/v1"
        ),
        id="composite-duration",
    ),
    pytest.param(
        _GOOD_V1 + "\n    env:\n    - null\n    - {name: X}",
        internal.CredentialProvider(
            "a",
            ("registry.io",),
            10 * MINUTE,
            "credentialprovider.kubelet.k8s.io/v1",
            env=(internal.ExecEnvVar("", ""), internal.ExecEnvVar("X", "")),
        ),
        id="null-struct-element-is-zero",
    ),
    pytest.param(
        _GOOD_V1 + "\n    tokenAttributes:\n      serviceAccountTokenAudience: aud\n"
        "      cacheType: Token\n      requireServiceAccount: false",
        internal.CredentialProvider(
            "a",
            ("registry.io",),
            10 * MINUTE,
            "credentialprovider.kubelet.k8s.io/v1",
            token_attributes=internal.ServiceAccountTokenAttributes(
                "aud", "Token", require_service_account=False
            ),
        ),
        id="v1-token-attributes",
    ),
]


@pytest.mark.parametrize(("content", "provider"), _DECODE_OK_CASES)
def test_decode_ok(tmp_path: Path, content: str, provider: internal.CredentialProvider) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content, encoding="utf-8")
    config, _ = read_config(str(path))
    assert config.providers == (provider,)


def test_directory_order_is_bytewise_and_filters(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "b.yml").write_text(_single("b", "r", "1m"), encoding="utf-8")
    (d / "B.json").write_text(_json_single("B", "r", "1m"), encoding="utf-8")
    (d / "a.yaml").write_text(_single("a", "r", "1m"), encoding="utf-8")
    (d / "c.YAML").write_text("not read", encoding="utf-8")  # extension check is exact
    (d / "notes.txt").write_text("not read", encoding="utf-8")
    (d / ".cfg.yaml.owner").write_text("not read", encoding="utf-8")  # Go: Ext is ".owner"
    (d / ".yaml").write_text(_single("dot", "r", "1m"), encoding="utf-8")  # Go: Ext ".yaml"
    (d / "sub.yaml").mkdir()  # a directory, even with a matching name, is skipped
    (d / "sub.yaml" / "x.yaml").write_text("not read", encoding="utf-8")
    config, _ = read_config(str(d))
    assert [p.name for p in config.providers] == ["dot", "B", "a", "b"]


def test_symlink_in_directory_is_read(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text(_single("linked", "r", "1m"), encoding="utf-8")
    d = tmp_path / "d"
    d.mkdir()
    (d / "link.yaml").symlink_to(target)
    config, _ = read_config(str(d))
    assert [p.name for p in config.providers] == ["linked"]


def test_single_file_any_extension(tmp_path: Path) -> None:
    path = tmp_path / "config.conf"
    path.write_text(_GOOD_V1, encoding="utf-8")
    config, _ = read_config(str(path))
    assert [p.name for p in config.providers] == ["a"]


@pytest.mark.parametrize(
    ("make_path", "message"),
    [
        pytest.param(lambda tmp: "", "credential provider config path is empty", id="empty-path"),
        pytest.param(
            lambda tmp: str(tmp / "missing"),
            'unable to access path "{p}": stat {p}: no such file or directory',
            id="missing-path",
        ),
        pytest.param(
            lambda tmp: (tmp / "d").mkdir() or str(tmp / "d"),
            'no configuration files found in directory "{p}"',
            id="empty-directory",
        ),
    ],
)
def test_path_errors(tmp_path: Path, make_path: object, message: str) -> None:
    path = make_path(tmp_path)  # type: ignore[operator]
    with pytest.raises(ConfigError) as info:
        read_config(path)
    assert str(info.value) == message.format(p=path)


def test_load_config_validates(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(_GOOD_V1.replace("10m", "-1m"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(info.value) == (
        "failed to validate credential provider config: providers.defaultCacheDuration: "
        'Invalid value: "-1m0s": must be greater than or equal to 0'
    )


def test_load_config_feature_gate(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        _GOOD_V1 + "\n    tokenAttributes:\n      serviceAccountTokenAudience: aud\n"
        "      cacheType: Token\n      requireServiceAccount: true",
        encoding="utf-8",
    )
    load_config(str(path))
    with pytest.raises(ConfigError) as info:
        load_config(
            str(path), feature_gates={"KubeletServiceAccountTokenForCredentialProviders": False}
        )
    assert str(info.value) == (
        "failed to validate credential provider config: providers.tokenAttributes: Forbidden: "
        "tokenAttributes is not supported when KubeletServiceAccountTokenForCredentialProviders "
        "feature gate is disabled"
    )


# -- bad input never escapes as anything but ConfigError --------------------------------------


def _unreadable(tmp: Path) -> str:
    if os.geteuid() == 0:
        pytest.skip("root can read a chmod 000 file")
    path = tmp / "c.yaml"
    path.write_text(_GOOD_V1, encoding="utf-8")
    path.chmod(0)
    return str(path)


def _garbage(tmp: Path) -> str:
    path = tmp / "c.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    return str(path)


def _nul_json(tmp: Path) -> str:
    path = tmp / "c.json"
    path.write_bytes(b'{"kind": "\x00\xff"}')
    return str(path)


def _only_txt(tmp: Path) -> str:
    d = tmp / "d"
    d.mkdir()
    (d / "a.txt").write_text(_GOOD_V1, encoding="utf-8")
    return str(d)


def _deep_yaml(tmp: Path) -> str:
    path = tmp / "c.yaml"
    path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    return str(path)


def _deep_yaml_blocks(tmp: Path) -> str:
    path = tmp / "c.yaml"
    path.write_text("".join(f"{' ' * i}k:\n" for i in range(3000)), encoding="utf-8")
    return str(path)


def _deep_json_in_unknown_field(tmp: Path) -> str:
    path = tmp / "c.json"
    path.write_text(
        '{"kind":"CredentialProviderConfig","apiVersion":"kubelet.config.k8s.io/v1",'
        '"x":' + "[" * 100000 + "]" * 100000 + "}",
        encoding="utf-8",
    )
    return str(path)


def _huge(tmp: Path) -> str:
    path = tmp / "c.yaml"
    with path.open("wb") as fh:
        fh.write(b"#" * (20 * 1024 * 1024))
    return str(path)


def _yaml_alias_bomb(tmp: Path) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = tmp / "c.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "make_path",
    [
        pytest.param(_unreadable, id="unreadable-file"),
        pytest.param(_garbage, id="binary-garbage"),
        pytest.param(_nul_json, id="nul-in-json"),
        pytest.param(_only_txt, id="directory-of-txt-only"),
        pytest.param(_deep_yaml, id="deeply-nested-yaml-flow"),
        pytest.param(_deep_yaml_blocks, id="deeply-nested-yaml-blocks"),
        pytest.param(_deep_json_in_unknown_field, id="deeply-nested-json"),
        pytest.param(_huge, id="20-MB-file"),
        pytest.param(_yaml_alias_bomb, id="yaml-alias-expansion"),
    ],
)
def test_bad_input_only_raises_config_error(tmp_path: Path, make_path: object) -> None:
    path = make_path(tmp_path)  # type: ignore[operator]
    with pytest.raises(ConfigError):
        load_config(path)


def test_decode_error_in_later_file_beats_duplicate_name(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "1.yaml").write_text(_single("dup", "r", "1m"), encoding="utf-8")
    (d / "2.yaml").write_text(_single("dup", "r", "1m"), encoding="utf-8")
    (d / "3.yaml").write_text(_single("x", "r", "1m", kind="WrongKind"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_config(str(d))
    assert str(info.value).startswith(f'error decoding config "{d / "3.yaml"}": no kind')
