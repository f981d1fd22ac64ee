"""``credprov_static.shape`` against the pydantic schema: same documents accepted, same values.

The hand-written check answers only for documents it is sure of; everything else goes to
``credprov_static.schema.validate``. So the properties are: where the check answers, pydantic
accepts with equal values; where pydantic accepts a document YAML could produce, the check
answers too (never a fallback); and through ``config.load`` the result or the one-line error
is the same with or without the check. Documents are generated valid and near-valid (every
field, missing, extra, ``null``, wrong types, lone strings, unicode, long lists).
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from credprov_static import config, schema, shape
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[4]
HEAD = {"apiVersion": config.API_VERSION, "kind": config.KIND}
VOCABULARY = shape.Vocabulary(
    cache_key_types=config.CACHE_KEY_TYPES,
    strategies=config.STRATEGIES,
    default_cache_duration=config.DEFAULT_CACHE_DURATION,
    default_cache_key_type=config.DEFAULT_CACHE_KEY_TYPE,
    default_strategy=config.MIRROR_ONLY,
)


def values(model: Any) -> Any:
    """Every value a model holds, with its exact type (``str`` is not a ``str`` subclass)."""

    def typed(value: Any) -> Any:
        if isinstance(value, list):
            return ("list", [typed(v) for v in value])
        return (type(value).__name__, value)

    mirror = model.mirror
    return (
        typed(model.api_version),
        typed(model.kind),
        [
            (typed(c.match), typed(c.username), typed(c.password), typed(c.password_file))
            for c in model.credentials
        ],
        typed(model.cache_duration),
        typed(model.cache_key_type),
        None
        if mirror is None
        else (typed(mirror.endpoint), typed(mirror.upstreams), typed(mirror.credentials_strategy)),
    )


def pydantic_values(doc: Any) -> tuple[Any, str | None]:
    """(values, None) if pydantic accepts ``doc``, else (None, its one-line error)."""
    try:
        return values(schema.validate("f.yaml", doc)), None
    except config.ConfigError as exc:
        return None, str(exc)


def compare(doc: Any, *, plain: bool = True) -> str:
    """Check the properties for one document; which way it went."""
    found = shape.check(doc, VOCABULARY)
    want, error = pydantic_values(doc)
    if found is not None:
        assert error is None, f"shape accepted what pydantic refuses: {error}"
        assert values(found) == want
        return "fast"
    if want is None:
        return "refused"
    assert not plain, "pydantic accepts a plain document the shape check falls back on"
    return "fallback"


# -- the table --------------------------------------------------------------------------------

CRED = {"match": ["r.io"], "username": "u", "password": "p"}


class Str(str):
    pass


class Dict(dict[str, Any]):
    pass


def doc(**fields: Any) -> dict[str, Any]:
    return {**HEAD, "credentials": [CRED], **fields}


def cred(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in {**CRED, **fields}.items() if v is not ...}


VALID = {
    "minimal": doc(),
    "every-field": doc(
        credentials=[
            cred(match=["a.io", "*.b.io:5000/x"]),
            cred(password=..., passwordFile="p.txt"),
        ],
        cacheDuration="90m",
        cacheKeyType="Image",
        mirror={
            "endpoint": "m.io",
            "upstreams": ["docker.io", "quay.io"],
            "credentialsStrategy": "MirrorCredentialsLast",
        },
    ),
    "lone-match": doc(credentials=[cred(match="r.io")]),
    "lone-upstream": doc(mirror={"endpoint": "m.io", "upstreams": "docker.io"}),
    "mirror-null": doc(mirror=None),
    "mirror-defaults": doc(mirror={"endpoint": "m.io"}),
    "empty-strings": doc(credentials=[cred(match="", username="", password="")]),
    "global": doc(cacheKeyType="Global"),
    "first": doc(mirror={"endpoint": "m", "credentialsStrategy": "MirrorCredentialsFirst"}),
    "unicode": doc(credentials=[cred(match=["réğ.io", "😀"], username="ü\x00", password="\u2028")]),
    "large-lists": doc(credentials=[cred(match=[f"r{i}.io" for i in range(5000)])] * 200),
}

INVALID = {
    "no-credentials": {**HEAD},
    "credentials-empty": doc(credentials=[]),
    "credentials-null": doc(credentials=None),
    "credentials-mapping": doc(credentials={"match": "r.io"}),
    "credential-string": doc(credentials=["r.io"]),
    "credentials-tuple": doc(credentials=(CRED,)),
    "no-apiVersion": {"kind": config.KIND, "credentials": [CRED]},
    "kind-number": doc(kind=1),
    "unknown-top": doc(mirrors={}),
    "snake-case-top": doc(cache_duration="1h"),
    "number-key": {**doc(), 1: "x"},
    "unknown-credential-field": doc(credentials=[cred(pasword="x")]),
    "snake-case-passwordFile": doc(credentials=[cred(password=..., password_file="x")]),
    "no-match": doc(credentials=[cred(match=...)]),
    "match-empty": doc(credentials=[cred(match=[])]),
    "match-null": doc(credentials=[cred(match=None)]),
    "match-number": doc(credentials=[cred(match=["r.io", 1])]),
    "match-nested": doc(credentials=[cred(match=[["r.io"]])]),
    "match-tuple": doc(credentials=[cred(match=("r.io",))]),
    "match-bytes": doc(credentials=[cred(match=[b"r.io"])]),
    "username-null": doc(credentials=[cred(username=None)]),
    "username-number": doc(credentials=[cred(username=7)]),
    "username-bool": doc(credentials=[cred(username=True)]),
    "no-username": doc(credentials=[cred(username=...)]),
    "password-null": doc(credentials=[cred(password=None)]),
    "password-number": doc(credentials=[cred(password=12345678)]),
    "password-float": doc(credentials=[cred(password=1.5)]),
    "password-list": doc(credentials=[cred(password=["p"])]),
    "password-and-file": doc(credentials=[cred(passwordFile="x")]),
    "password-and-null-file": doc(credentials=[cred(passwordFile=None)]),
    "neither-password": doc(credentials=[cred(password=...)]),
    "null-file-alone": doc(credentials=[cred(password=..., passwordFile=None)]),
    "duration-null": doc(cacheDuration=None),
    "duration-number": doc(cacheDuration=3600),
    "cacheKeyType-null": doc(cacheKeyType=None),
    "cacheKeyType-case": doc(cacheKeyType="registry"),
    "cacheKeyType-padded": doc(cacheKeyType="Registry "),
    "mirror-string": doc(mirror="m.io"),
    "mirror-list": doc(mirror=[{"endpoint": "m.io"}]),
    "mirror-empty": doc(mirror={}),
    "mirror-endpoint-null": doc(mirror={"endpoint": None}),
    "mirror-upstreams-null": doc(mirror={"endpoint": "m", "upstreams": None}),
    "mirror-upstreams-empty": doc(mirror={"endpoint": "m", "upstreams": []}),
    "mirror-upstreams-number": doc(mirror={"endpoint": "m", "upstreams": [1]}),
    "mirror-strategy-null": doc(mirror={"endpoint": "m", "credentialsStrategy": None}),
    "mirror-strategy-other": doc(mirror={"endpoint": "m", "credentialsStrategy": "Both"}),
    "mirror-unknown": doc(mirror={"endpoint": "m", "strategy": "x"}),
}

#: Accepted by pydantic, never produced by YAML or JSON: the check leaves them to pydantic.
NOT_PLAIN = {
    "str-subclass": doc(credentials=[cred(username=Str("u"))]),
    "lone-str-subclass": doc(credentials=[cred(match=Str("r.io"))]),
    "dict-subclass": doc(credentials=[Dict(CRED)]),
    "choice-subclass": doc(cacheKeyType=Str("Image")),
}


@pytest.mark.parametrize("document", list(VALID.values()), ids=list(VALID))
def test_valid_documents_are_answered_by_the_check(document: dict[str, Any]) -> None:
    assert compare(document) == "fast"


@pytest.mark.parametrize("document", list(INVALID.values()), ids=list(INVALID))
def test_invalid_documents_go_to_pydantic(document: dict[str, Any]) -> None:
    assert compare(document) == "refused"


@pytest.mark.parametrize("document", list(NOT_PLAIN.values()), ids=list(NOT_PLAIN))
def test_other_types_go_to_pydantic_which_accepts_them(document: dict[str, Any]) -> None:
    assert compare(document, plain=False) == "fallback"
    # What config then gets: pydantic's values, in the check's classes, as plain strings.
    model = shape.from_model(schema.validate("f.yaml", document))
    assert values(model) == pydantic_values(document)[0]


def test_the_check_knows_the_schemas_fields() -> None:
    """A field added to the schema and not to the check would make every file using it
    fall back (slow, not wrong): keep them the same."""

    def aliases(model: Any) -> frozenset[str]:
        return frozenset(f.alias or name for name, f in model.model_fields.items())

    assert aliases(schema.StaticCredentialsModel) == shape._TOP
    assert aliases(schema.CredentialModel) == shape._CREDENTIAL
    assert aliases(schema.MirrorModel) == shape._MIRROR


# -- generated documents ----------------------------------------------------------------------

texts = st.text(max_size=12) | st.sampled_from(["r.io", "*.r.io:5000/p", "", " ", "ü\x00😀"])
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
junk = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=5,
)


def maybe(draw: Any, out: dict[str, Any], name: str, value: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        out[name] = draw(value)


patterns = (
    texts
    | st.lists(texts, min_size=1, max_size=4)
    | st.integers(1, 3000).map(lambda n: [f"r{i}.io" for i in range(n)])
)


@st.composite
def valid_credentials(draw: Any) -> dict[str, Any]:
    item = {"match": draw(patterns), "username": draw(texts)}
    item[draw(st.sampled_from(["password", "passwordFile"]))] = draw(texts)
    return item


@st.composite
def valid_mirrors(draw: Any) -> dict[str, Any]:
    mirror = {"endpoint": draw(texts)}
    maybe(draw, mirror, "upstreams", patterns)
    maybe(draw, mirror, "credentialsStrategy", st.sampled_from(config.STRATEGIES))
    return mirror


@st.composite
def valid_documents(draw: Any) -> dict[str, Any]:
    document: dict[str, Any] = {**HEAD}
    document["credentials"] = draw(st.lists(valid_credentials(), min_size=1, max_size=4))
    maybe(draw, document, "cacheDuration", st.sampled_from(["1h", "0s", "5m30s"]) | texts)
    maybe(draw, document, "cacheKeyType", st.sampled_from(config.CACHE_KEY_TYPES))
    maybe(draw, document, "mirror", st.none() | valid_mirrors())
    return dict(draw(st.permutations(list(document.items()))))


def _containers(value: Any) -> list[Any]:
    found = []
    if isinstance(value, dict):
        found.append(value)
        for item in value.values():
            found += _containers(item)
    elif isinstance(value, list) and len(value) < 50:
        found.append(value)
        for item in value:
            found += _containers(item)
    return found


#: Near misses: the names a careless hand writes, values of the wrong type.
extra_keys = st.sampled_from(
    ["x", "password", "passwordFile", "password_file", "cache_duration", "Match", "mirrors", 1]
)
wrong = (
    st.sampled_from([None, [], {}, 0, 1.5, True, "", "Image", [None], ["r.io", 1]]).map(
        copy.deepcopy  # a fresh list or mapping each time: later changes must not share it
    )
    | junk
)


@st.composite
def near_valid_documents(draw: Any) -> Any:
    """A valid document with one or two things changed: a field dropped, added, replaced."""
    document = draw(valid_documents())
    for _ in range(draw(st.integers(1, 2))):
        target = draw(st.sampled_from(_containers(document)))
        op = draw(st.sampled_from(["drop", "add", "replace"]))
        if isinstance(target, dict):
            keys = list(target)
            if op == "add" or not keys:
                target[draw(extra_keys | texts)] = draw(wrong | texts)
            elif op == "drop":
                del target[draw(st.sampled_from(keys))]
            else:
                target[draw(st.sampled_from(keys))] = draw(wrong)
        elif op == "drop" or not target:
            target.clear()
        else:
            target[draw(st.integers(0, len(target) - 1))] = draw(wrong | texts)
    return document


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["valid", "near", "near", "junk"]), st.data())
def test_generated_documents_agree_with_pydantic(kind: str, data: st.DataObject) -> None:
    generate = {"valid": valid_documents(), "near": near_valid_documents(), "junk": junk}[kind]
    way = compare(data.draw(generate))
    event(f"{kind}: {way}")
    if kind == "valid":
        assert way == "fast"


# -- through config.load: the same result or the same line --------------------------------------


def load_both(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    path = tmp_path / "creds.yaml"
    path.write_text(text)
    (tmp_path / "p.txt").write_text("secret\n")

    def outcome() -> Any:
        try:
            return config.load(str(path))
        except Exception as exc:  # the comparison is the point (a NUL in a path: ValueError)
            return type(exc).__name__, str(exc)

    got = outcome()
    with monkeypatch.context() as m:
        m.setattr(shape, "check", lambda doc, vocabulary: None)  # always pydantic
        want = outcome()
    return got, want


@pytest.mark.parametrize("document", [*VALID.values(), *INVALID.values()], ids=[*VALID, *INVALID])
def test_load_gives_what_pydantic_alone_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, document: dict[str, Any]
) -> None:
    if document is VALID["large-lists"] or any(
        isinstance(v, tuple | bytes) for v in _leaves(document)
    ):
        pytest.skip("not representable in YAML, or too slow to parse as YAML")
    got, want = load_both(tmp_path, yaml.safe_dump(document), monkeypatch)
    assert got == want


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(valid_documents() | near_valid_documents())
def test_load_of_generated_files_gives_what_pydantic_alone_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, document: Any
) -> None:
    got, want = load_both(tmp_path, yaml.safe_dump(document), monkeypatch)
    assert got == want


# -- valid files never import pydantic --------------------------------------------------------


def readme_example() -> str:
    text = (REPO / "plugins" / "credprov_static" / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    return next(b for b in blocks if "kind: StaticCredentials" in b)


LOADER = textwrap.dedent(
    """
    import sys
    from credprov_static.config import load
    for path in sys.argv[1:]:
        cfg = load(path)
        print(path, cfg.format, len(cfg.credentials), cfg.mirror is not None)
    print("pydantic-imported=%s" % any(m.split(".")[0] in ("pydantic", "pydantic_core")
                                       for m in sys.modules))
    """
)


def run_loader(*paths: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", LOADER, *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'plugins'}"},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_valid_files_never_import_pydantic(tmp_path: Path) -> None:
    readme = tmp_path / "readme.yaml"
    readme.write_text(readme_example())
    (tmp_path / "robot.password").write_text("not-a-real-password\n")
    example = REPO / "config" / "static-credentials.yaml"
    out = run_loader(example, readme)
    assert f"{readme} StaticCredentials 3 True" in out
    assert f"{example} StaticCredentials 5 True" in out
    assert "pydantic-imported=False" in out


def test_an_invalid_file_still_gets_pydantics_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc(credentials=[cred(password=7)])))
    proc = subprocess.run(
        [sys.executable, "-c", LOADER, str(bad)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'plugins'}"},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"credprov_static.fields.ConfigError: {bad}: credentials[0].password must be a string, "
        "not a number"
    )


PLUGIN = textwrap.dedent(
    """
    import sys
    from credprov_static.main import main
    code = main()
    sys.stderr.write("pydantic-imported=%s\\n" % ("pydantic" in sys.modules))
    raise SystemExit(code)
    """
)


def test_a_cold_run_of_the_plugin_never_imports_pydantic(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    request = (
        '{"kind": "CredentialProviderRequest", "image": "registry.example.com/team/app",'
        ' "apiVersion": "credentialprovider.kubelet.k8s.io/v1"}'
    )
    proc = subprocess.run(
        [sys.executable, "-c", PLUGIN, "--config", "config/static-credentials.yaml"],
        input=request,
        capture_output=True,
        text=True,
        cwd=REPO,
        # Under a regular file: the answer cache can never be used, every run reads the file.
        env={
            "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'plugins'}",
            "CREDPROV_PLUGIN_CACHE_DIR": str(tmp_path / "file" / "cache"),
        },
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"username":"team-b-robot"' in proc.stdout.replace(" ", "")
    assert "pydantic-imported=False" in proc.stderr
