"""credprov.nodeauth.wiring: the KEP-4412 wiring built (kubelet-valid, RBAC shaped as
NodeRestriction asks) and proven per pod with the Node authorizer, NodeRestriction, RBAC
and the token issuer."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from credprov._go.json import load_yaml_all
from credprov.kubelet.podspec import pod_images
from credprov.nodeauth import wiring as w
from credprov.nodeauth.store import ObjectStore

ROOT = Path(__file__).resolve().parents[3]
AUDIENCE = "registry.example.com"
ROLE_KEY = "registry.example.com/role"
TEAM_KEY = "registry.example.com/team"


def provider(**overrides: Any) -> dict[str, Any]:
    attrs = {
        "serviceAccountTokenAudience": AUDIENCE,
        "cacheType": "ServiceAccount",
        "requiredServiceAccountAnnotationKeys": [ROLE_KEY],
        "optionalServiceAccountAnnotationKeys": [TEAM_KEY],
        **overrides.pop("tokenAttributes", {}),
    }
    return {
        "name": "example-credential-provider",
        "matchImages": ["registry.example.com"],
        "defaultCacheDuration": "5m",
        "tokenAttributes": attrs,
        **overrides,
    }


BUILDER = w.ServiceAccountRef("team-a", "builder", {ROLE_KEY: "puller"})


def spec(*accounts: w.ServiceAccountRef, **overrides: Any) -> w.WiringSpec:
    return w.WiringSpec(provider(**overrides), accounts or (BUILDER,))


def images(pod_spec: Mapping[str, Any]) -> list[str]:
    return [image for _, image, _ in pod_images(pod_spec)]


# -- build --------------------------------------------------------------------------------------


def test_build_writes_the_canonical_entry_the_grant_and_the_annotations() -> None:
    wiring = w.build(spec(BUILDER, w.ServiceAccountRef("team-b", "web", {TEAM_KEY: "b"})))
    config, role, binding, *patches = wiring.manifests
    assert config == {
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": [
            {
                "name": "example-credential-provider",
                "matchImages": ["registry.example.com"],
                "defaultCacheDuration": "5m0s",
                "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                "tokenAttributes": {
                    "serviceAccountTokenAudience": AUDIENCE,
                    "cacheType": "ServiceAccount",
                    "requireServiceAccount": True,
                    "requiredServiceAccountAnnotationKeys": [ROLE_KEY],
                    "optionalServiceAccountAnnotationKeys": [TEAM_KEY],
                },
            }
        ],
    }
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": [AUDIENCE],
            "verbs": ["request-serviceaccounts-token-audience"],
            "resourceNames": ["builder", "web"],
        }
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}
    ]
    assert [p["metadata"] for p in patches] == [
        {"name": "builder", "namespace": "team-a", "annotations": {ROLE_KEY: "puller"}},
        {"name": "web", "namespace": "team-b", "annotations": {TEAM_KEY: "b"}},
    ]
    assert wiring.warnings == (
        "service account team-b/web: no value given for required annotation "
        f"{ROLE_KEY}; its pods get no credentials from the provider unless the cluster's "
        "object has it",
    )


def test_the_yaml_stream_reads_back_as_the_manifests() -> None:
    """What go-yaml (the kubelet's reader) makes of the YAML is the objects built."""
    wiring = w.build(spec(w.ServiceAccountRef("ns", "sa", {ROLE_KEY: "true", TEAM_KEY: "0o17"})))
    text = w.render_yaml(wiring.manifests)
    assert load_yaml_all(text) == wiring.manifests
    assert text.count("\n---\n") == len(wiring.manifests) - 1


TRICKY = ["true", "0o17", "1e3", "0x1F", "null", "~", "yes", "No", "12:30", "2001-12-14",
          "", "-", "a: b", "two\nlines", " lead", "#x", "@x", "!tag", "*alias", "[1]", "{a}",
          "'q'", '"q"', "tab\there", "über", "\u2028", ".inf", "-.5", "<<"]  # fmt: skip


@pytest.mark.parametrize("value", TRICKY, ids=repr)
def test_every_annotation_value_reads_back_as_that_string(value: str) -> None:
    wiring = w.build(spec(w.ServiceAccountRef("ns", "sa", {ROLE_KEY: value})))
    patch = load_yaml_all(w.render_yaml(wiring.service_account_patches))[0]
    assert patch["metadata"]["annotations"] == {ROLE_KEY: value}


def test_explicit_values_beat_the_defaults() -> None:
    wiring = w.build(
        spec(
            w.ServiceAccountRef("team-a", "builder"),
            tokenAttributes={
                "requireServiceAccount": False,
                "requiredServiceAccountAnnotationKeys": [],
                "cacheType": "Token",
            },
        )
    )
    attrs = wiring.provider.token_attributes
    assert (attrs.require_service_account, attrs.cache_type) == (False, "Token")
    assert wiring.service_account_patches == ()


BAD_BUILDS = [
    ("no cacheType", spec(tokenAttributes={"cacheType": ""}),
     "provider entry: failed to validate credential provider config: "
     "providers.tokenAttributes.cacheType: Required value: cacheType is required to be set "
     "when tokenAttributes is specified. Supported values are: ServiceAccount, Token"),
    ("bad cacheType", spec(tokenAttributes={"cacheType": "Pod"}),
     'providers.tokenAttributes.cacheType: Unsupported value: "Pod": supported values: '
     '"ServiceAccount", "Token"'),
    ("no audience", spec(tokenAttributes={"serviceAccountTokenAudience": ""}),
     "providers.tokenAttributes.serviceAccountTokenAudience: Required value"),
    ("required keys without requireServiceAccount",
     spec(tokenAttributes={"requireServiceAccount": False}),
     "requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"),
    ("old exec API", spec(apiVersion="credentialprovider.kubelet.k8s.io/v1beta1"),
     "tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version"),
    ("no defaultCacheDuration", w.WiringSpec(
        {k: v for k, v in provider().items() if k != "defaultCacheDuration"}, (BUILDER,)),
     "providers.defaultCacheDuration: Required value"),
    ("unknown field", spec(tokenAttributes={"audience": "x"}),
     'provider entry: strict decoding error: unknown field "providers[0].tokenAttributes.audience"'),
    ("a key both required and optional",
     spec(tokenAttributes={"optionalServiceAccountAnnotationKeys": [ROLE_KEY]}),
     "annotation keys cannot be both required and optional"),
    ("no provider name", spec(name=""),
     "provider entry: name is required (the plugin's executable name)"),
    ("no service accounts", w.WiringSpec(provider(), ()),
     "no service accounts: list the ones that will use the provider"),
    ("annotation the provider does not forward",
     spec(w.ServiceAccountRef("team-a", "builder", {"other.example.com/x": "1"})),
     "service account team-a/builder: annotation other.example.com/x is neither a required "
     "nor an optional annotation key of the provider"),
    ("service account name with a slash", spec(w.ServiceAccountRef("team-a", "a/b")),
     "service account 'team-a/a/b': metadata.name: Invalid value: a lowercase RFC 1123 "
     "subdomain must consist of"),
    # Issue 32, "Why" 10: accepted before, then refused by the API server half-way through
    # kubectl apply.
    ("upper-case name", spec(w.ServiceAccountRef("team-a", "Builder")),
     "service account 'team-a/Builder': metadata.name: Invalid value: a lowercase RFC 1123"),
    ("name with a space", spec(w.ServiceAccountRef("team-a", "a b")),
     "metadata.name: Invalid value: a lowercase RFC 1123 subdomain"),
    ("name of 4,096 characters", spec(w.ServiceAccountRef("team-a", "a" * 4096)),
     "metadata.name: Invalid value: must be no more than 253 bytes"),
    ("upper-case namespace", spec(w.ServiceAccountRef("Team-A", "builder")),
     "service account 'Team-A/builder': metadata.namespace: Invalid value: a lowercase RFC "
     "1123 label"),
    ("namespace with a dot", spec(w.ServiceAccountRef("team.a", "builder")),
     "metadata.namespace: Invalid value: a lowercase RFC 1123 label"),
    ("namespace of 64 characters", spec(w.ServiceAccountRef("a" * 64, "builder")),
     "metadata.namespace: Invalid value: must be no more than 63 bytes"),
    ("name with U+0085", spec(w.ServiceAccountRef("team-a", "a\u0085b")),
     "metadata.name: Invalid value: a lowercase RFC 1123 subdomain"),
]  # fmt: skip


@pytest.mark.parametrize("case, bad, message", BAD_BUILDS, ids=[c[0] for c in BAD_BUILDS])
def test_bad_wiring_is_one_line(case: str, bad: w.WiringSpec, message: str) -> None:
    with pytest.raises(w.WiringError) as exc:
        w.build(bad)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_the_kubelet_gate_off_refuses_token_attributes() -> None:
    with pytest.raises(w.WiringError, match="feature gate is disabled"):
        w.build(spec(), {"KubeletServiceAccountTokenForCredentialProviders": False})


def test_the_error_is_a_usage_error_and_a_node_access_error() -> None:
    from credprov.errors import NodeAccessError, UsageError

    assert issubclass(w.WiringError, UsageError) and issubclass(w.WiringError, NodeAccessError)


# -- the input ----------------------------------------------------------------------------------


def test_the_example_input_builds() -> None:
    wiring = w.build(w.load_spec(str(ROOT / "config" / "kep4412-wire.yaml")))
    assert wiring.provider.name == "example-credential-provider"
    assert [sa.ref for sa in wiring.service_accounts] == ["team-a/builder", "team-b/default"]


HEADER = "apiVersion: credprov.io/v1alpha1\nkind: KEP4412Wiring\n"
BAD_INPUTS = [
    ("unknown top-level field", HEADER + "providers: []\n",
     'wiring file: strict decoding error: unknown field "providers"'),
    ("unknown service-account field", HEADER + "serviceAccounts: [{namespace: a, nme: b}]\n",
     'unknown field "serviceAccounts[0].nme"'),
    ("duplicate key", HEADER + "provider: {name: a, name: b}\n", "strict decoding error"),
    ("wrong type", HEADER + "serviceAccounts: {a: b}\n", "cannot unmarshal object into Go"),
    ("annotation value not a string",
     HEADER + "serviceAccounts: [{namespace: a, name: b, annotations: {k: [1]}}]\n",
     "cannot unmarshal array into Go"),
    ("wrong kind", "apiVersion: credprov.io/v1alpha1\nkind: Wiring\n",
     "wiring file: want apiVersion credprov.io/v1alpha1 and kind KEP4412Wiring"),
    ("no apiVersion", "kind: KEP4412Wiring\n", "want apiVersion"),
    ("service account without a namespace", HEADER + "serviceAccounts: [{name: b}]\n",
     "wiring file: serviceAccounts[1] needs a namespace and a name"),
    ("not YAML", "provider: [\n", "wiring file: yaml: line"),
]  # fmt: skip


@pytest.mark.parametrize("case, text, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_one_line(case: str, text: str, message: str) -> None:
    with pytest.raises(w.WiringError) as exc:
        w.parse_spec(text.encode())
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_load_spec_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(w.WiringError, match=r"cannot read wiring file .*: No such file"):
        w.load_spec(str(tmp_path / "missing.yaml"))
    with pytest.raises(w.WiringError, match="cannot read wiring file"):
        w.load_spec(str(tmp_path))  # a directory
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (w.MAX_SPEC_BYTES + 1))
    with pytest.raises(w.WiringError, match="is larger than"):
        w.load_spec(str(big))


def test_flags_override_the_file_and_merge_service_accounts() -> None:
    base = spec(BUILDER)
    merged = w.merge_spec(
        base,
        provider={"name": "other"},
        token_attributes={"cacheType": "Token"},
        service_accounts=[
            w.ServiceAccountRef("team-a", "builder", {TEAM_KEY: "a"}),
            w.ServiceAccountRef("team-a", "builder", {ROLE_KEY: "admin"}),
            w.ServiceAccountRef("team-c", "ci"),
        ],
    )
    assert merged.provider["name"] == "other"
    assert merged.provider["tokenAttributes"]["cacheType"] == "Token"
    assert merged.provider["tokenAttributes"]["serviceAccountTokenAudience"] == AUDIENCE
    assert merged.service_accounts == (
        w.ServiceAccountRef("team-a", "builder", {ROLE_KEY: "admin", TEAM_KEY: "a"}),
        w.ServiceAccountRef("team-c", "ci"),
    )
    assert w.merge_spec(None) == w.WiringSpec()


# -- prove --------------------------------------------------------------------------------------


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}"}}


def account(ns: str, name: str, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-sa-{ns}-{name}"}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def pod(
    ns: str,
    name: str,
    node_name: str | None,
    sa: str | None,
    image: str = "registry.example.com/app:v1",
    **spec_extra: Any,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}], **spec_extra}
    if node_name:
        pod_spec["nodeName"] = node_name
    if sa:
        pod_spec["serviceAccountName"] = sa
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-pod-{ns}-{name}"},
        "spec": pod_spec,
    }


BASE = [node("node-1"), node("node-2"), account("team-a", "builder", {ROLE_KEY: "puller"})]
GRANT_REASON = (
    'RBAC: allowed by ClusterRoleBinding "kep4412-example-credential-provider" of ClusterRole '
    '"kep4412-example-credential-provider" to Group "system:nodes"'
)
TOKEN_VOLUME = {
    "volumes": [
        {
            "name": "token",
            "projected": {
                "sources": [{"serviceAccountToken": {"audience": AUDIENCE, "path": "t"}}]
            },
        }
    ]
}

# (case, wiring spec, extra objects, feature gates, [(pod, status, via, reason part)])
PROOFS: list[tuple[str, w.WiringSpec, list[dict[str, Any]], dict[str, bool], list[Any]]] = [
    ("the generated grant lets each pod's node get the token", spec(),
     [pod("team-a", "app", "node-1", "builder"), pod("team-a", "app2", "node-2", "builder")], {},
     [("team-a/app", "allowed", "serviceAccount", GRANT_REASON),
      ("team-a/app2", "allowed", "serviceAccount", GRANT_REASON)]),
    ("the generated patch supplies the required annotation",
     spec(w.ServiceAccountRef("team-b", "web", {ROLE_KEY: "reader"})),
     [account("team-b", "web"), pod("team-b", "web", "node-2", "web")], {},
     [("team-b/web", "allowed", "serviceAccount", GRANT_REASON)]),
    ("a listed service account without the required annotation",
     spec(w.ServiceAccountRef("team-b", "web")),
     [account("team-b", "web", {TEAM_KEY: "b"}), pod("team-b", "web", "node-2", "web")], {},
     [("team-b/web", "denied", "serviceAccount",
       f"required annotation {ROLE_KEY} not found on service account team-b/web "
       "(the plugin is not run)")]),
    ("a pod on a node whose service account the wiring does not cover", spec(),
     [account("team-c", "deployer", {ROLE_KEY: "x"}), pod("team-c", "job", "node-1", "deployer")],
     {}, [("team-c/job", "denied", "image",
           'serviceaccounts "deployer" is forbidden: system:node:node-1 is not authorized to '
           f'request tokens for audience "{AUDIENCE}"')]),
    ("a listed service account the cluster does not have",
     spec(w.ServiceAccountRef("team-d", "ghost", {ROLE_KEY: "x"})),
     [pod("team-d", "app", "node-1", "ghost")], {},
     [("team-d/app", "denied", "serviceAccount", 'serviceaccounts "ghost" not found')]),
    ("no service account and requireServiceAccount", spec(),
     [pod("team-e", "static", "node-1", None)], {},
     [("team-e/static", "denied", "image",
       "no service account and requireServiceAccount: the plugin is not run")]),
    ("a pod whose images the provider does not match is not checked", spec(),
     [account("team-f", "other"), pod("team-f", "x", "node-1", "other", image="nginx")], {}, []),
    ("an unscheduled pod is skipped", spec(),
     [pod("team-a", "pending", None, "builder")], {},
     [("team-a/pending", "skipped", "serviceAccount", "not bound to a node")]),
    ("a token volume with the audience needs no grant", spec(),
     [pod("team-a", "vol", "node-1", "builder", **TOKEN_VOLUME)], {},
     [("team-a/vol", "allowed", "serviceAccount", "a volume of the pod requests the audience")]),
    ("the audience restriction off admits any audience", spec(),
     [account("team-c", "deployer", {ROLE_KEY: "x"}), pod("team-c", "job", "node-1", "deployer")],
     {"ServiceAccountNodeAudienceRestriction": False},
     [("team-c/job", "allowed", "image",
       "ServiceAccountNodeAudienceRestriction is off: any audience")]),
    ("the Node authorizer refuses the service account with its gate off", spec(),
     [pod("team-a", "app", "node-1", "builder")],
     {"KubeletServiceAccountTokenForCredentialProviders": False},
     [("team-a/app", "denied", "serviceAccount", 'serviceaccounts "builder" is forbidden')]),
]  # fmt: skip


@pytest.mark.parametrize(
    "case, wiring_spec, objects, gates, expected", PROOFS, ids=[c[0] for c in PROOFS]
)
def test_prove(
    case: str,
    wiring_spec: w.WiringSpec,
    objects: list[dict[str, Any]],
    gates: dict[str, bool],
    expected: list[tuple[str, str, str, str]],
) -> None:
    store = ObjectStore([*BASE, *objects])
    before = list(store)
    wiring = w.build(wiring_spec)
    proof = w.prove(wiring, store, feature_gates=gates, pod_images=images)
    got = [(f"{p.namespace}/{p.name}", p.status, p.via, p.reason) for p in proof.pods]
    assert [g[:3] for g in got] == [e[:3] for e in expected]
    for (_, _, _, reason), (_, _, _, part) in zip(got, expected, strict=True):
        assert part in reason
    assert proof.allowed == all(e[1] != "denied" for e in expected)
    assert list(store) == before, "the caller's objects are not changed"


def test_without_the_image_reader_only_listed_service_accounts_are_checked() -> None:
    store = ObjectStore(
        [
            *BASE,
            account("team-c", "deployer", {ROLE_KEY: "x"}),
            pod("team-c", "job", "node-1", "deployer"),
            pod("team-a", "app", "node-1", "builder", image="nginx"),
        ]
    )
    proof = w.prove(w.build(spec()), store)
    assert [(p.name, p.status) for p in proof.pods] == [("app", "allowed")]


def test_the_proof_holds_no_token() -> None:
    store = ObjectStore([*BASE, pod("team-a", "app", "node-1", "builder")])
    proof = w.prove(w.build(spec()), store, pod_images=images)
    assert proof.to_dict() == {
        "allowed": True,
        "pods": [
            {
                "namespace": "team-a",
                "name": "app",
                "node": "node-1",
                "serviceAccount": "builder",
                "status": "allowed",
                "reason": GRANT_REASON,
                "via": "serviceAccount",
            }
        ],
    }
    assert "eyJ" not in repr(proof)  # a JWT's header


def test_the_example_cluster_is_proven_as_documented() -> None:
    from credprov.nodeauth.store import load_objects_file

    wiring = w.build(w.load_spec(str(ROOT / "config" / "kep4412-wire.yaml")))
    proof = w.prove(
        wiring,
        load_objects_file(str(ROOT / "config" / "kep4412-wire-objects.yaml")),
        pod_images=images,
    )
    assert [(p.name, p.status) for p in proof.pods] == [
        ("app", "allowed"),
        ("app-canary", "allowed"),
        ("web", "denied"),
        ("job", "denied"),
        ("pending", "skipped"),
    ]


# -- files --------------------------------------------------------------------------------------


def test_write_manifests_one_file_per_object(tmp_path: Path) -> None:
    wiring = w.build(spec())
    out = tmp_path / "out" / "deeper"
    paths = w.write_manifests(wiring.manifests, str(out))
    assert [os.path.basename(p) for p in paths] == [
        "credentialproviderconfig-example-credential-provider.yaml",
        "clusterrole-kep4412-example-credential-provider.yaml",
        "clusterrolebinding-kep4412-example-credential-provider.yaml",
        "serviceaccount-team-a.builder.yaml",
    ]
    for path, obj in zip(paths, wiring.manifests, strict=True):
        assert load_yaml_all(Path(path).read_text()) == [obj]
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(out)) == sorted(os.path.basename(p) for p in paths), "no temp files"
    w.write_manifests(wiring.manifests, str(out))  # again: replaced, not refused


def test_write_manifests_refuses_a_file_as_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(w.WiringError, match="not a directory"):
        w.write_manifests([], str(target))


@pytest.mark.parametrize(
    "provider_name, expected",
    [("ecr-credential-provider", "kep4412-ecr-credential-provider"),
     ("odd%name", "kep4412-odd-name")],
)  # fmt: skip
def test_role_name(provider_name: str, expected: str) -> None:
    assert w.role_name(provider_name) == expected


def test_prove_builds_the_graph_once_for_all_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """One graph per node would make a cluster's proof quadratic (nodes x objects)."""
    import credprov.nodeauth.graph as graph

    built = []
    original = graph.GraphPopulator.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(graph.GraphPopulator, "__init__", counting)
    objects = [node(f"node-{i}") for i in range(3)]
    objects += [pod("team-a", f"app-{i}", f"node-{i}", "builder") for i in range(3)]
    store = ObjectStore([*BASE, *objects])
    proof = w.prove(w.build(spec()), store, pod_images=images)
    assert [p.status for p in proof.pods] == ["allowed"] * 3
    assert len(built) == 1


def test_service_accounts_never_share_a_file(tmp_path: Path) -> None:
    """Issue 32, "Why" 10: ``a-b/c`` and ``a/b-c`` were both ``serviceaccount-a-b-c.yaml``:
    one overwrote the other, and both were reported written."""
    built = w.build(
        spec(
            w.ServiceAccountRef("a-b", "c", {ROLE_KEY: "1"}),
            w.ServiceAccountRef("a", "b-c", {ROLE_KEY: "2"}),
        )
    )
    paths = w.write_manifests(built.manifests, str(tmp_path))
    assert len(set(paths)) == len(paths) == len(built.manifests)
    names = {Path(p).name for p in paths}
    assert {"serviceaccount-a-b.c.yaml", "serviceaccount-a.b-c.yaml"} <= names


def test_two_objects_for_one_file_are_refused(tmp_path: Path) -> None:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": "a", "name": "b"}}
    with pytest.raises(
        w.WiringError, match=r"two objects would be written to serviceaccount-a\.b\.yaml"
    ):
        w.write_manifests([sa, dict(sa)], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
