"""The kubelet's scheme: what ``UniversalDecoder().Decode`` does with each registered kind.

Every row names the upstream behaviour it reproduces. The sources, all in kubernetes/kubernetes:

* ``plugin.go`` ``init()``: ``install.Install`` (credentialprovider internal, v1alpha1,
  v1beta1, v1) and ``kubeletconfig{,v1alpha1,v1beta1,v1}.AddToScheme``; its ``scheme =
  runtime.NewScheme()`` is line 69, which names the scheme.
* ``pkg/kubelet/apis/config/register.go``: the ``__internal`` kubelet config kinds;
  ``types.go`` there: untagged Go fields (``register_test.go`` runs
  ``VerifyInternalTypePackage``, which forbids JSON tags).
* ``staging/src/k8s.io/kubelet/pkg/apis/credentialprovider/{v1alpha1,v1beta1,v1}/register.go``
  call ``metav1.AddToGroupVersion``; the kubelet config register files do not.
* apimachinery ``meta/v1/register.go`` ``AddToGroupVersion``: ``WatchEvent`` (external),
  ``InternalEvent`` as ``__internal`` ``WatchEvent``, ``optionsTypes`` and the unversioned
  ``Status``, ``APIVersions``, ``APIGroupList``, ``APIGroup``, ``APIResourceList``.
* apimachinery ``runtime/scheme.go``: ``New`` falls back to unversioned kinds by name for any
  group/version; ``convertToVersion`` leaves unversioned and already-internal types alone
  and otherwise needs ``New(<group>/__internal, kind)``.
* apimachinery ``serializer/versioning/versioning.go`` ``Decode``: a conversion error replaces
  strict decoding errors; after a successful conversion the strict error is returned.
* ``config.go`` ``decode`` and ``plugin.go`` ``decodeResponse``: the kind and group checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from credprov._go.decode import DecodeError, load_document
from credprov.api import internal
from credprov.api.config import decode_config, validate_with_models
from credprov.api.exec import decode_request, decode_response, interpret_response_gvk
from credprov.api.scheme import SCHEME_NAME
from credprov.credentialprovider.plugin.config import ConfigError, load_config

CP = "credentialprovider.kubelet.k8s.io"
KC = "kubelet.config.k8s.io"
MINUTE = 60 * 10**9


def _doc(api_version: str, kind: str, body: str = "") -> str:
    return f"kind: {kind}\napiVersion: {api_version}\n{body}"


def _not_registered(kind: str, gv: str) -> str:
    return f'no kind "{kind}" is registered for version "{gv}" in scheme "{SCHEME_NAME}"'


def _not_internal(kind: str, group: str) -> str:
    return (
        f'no kind "{kind}" is registered for the internal version of group "{group}" '
        f'in scheme "{SCHEME_NAME}"'
    )


_INTERNAL_CONFIG = _doc(
    f"{KC}/__internal",
    "CredentialProviderConfig",
    "Providers:\n"
    "- Name: ecr\n"
    "  MatchImages: ['*.dkr.ecr.*.amazonaws.com']\n"
    "  DefaultCacheDuration: 12h\n"
    f"  APIVersion: {CP}/v1\n"
    "  Args: [get-credentials]\n"
    "  Env: [{Name: AWS_PROFILE, Value: temp}]\n"
    "  TokenAttributes:\n"
    "    ServiceAccountTokenAudience: sts.amazonaws.com\n"
    "    CacheType: ServiceAccount\n"
    "    RequireServiceAccount: true\n"
    "    RequiredServiceAccountAnnotationKeys: [a.io/role]\n"
    "    OptionalServiceAccountAnnotationKeys: [a.io/region]\n",
)
_INTERNAL_WANT = internal.CredentialProviderConfig(
    providers=(
        internal.CredentialProvider(
            name="ecr",
            match_images=("*.dkr.ecr.*.amazonaws.com",),
            default_cache_duration=12 * 60 * MINUTE,
            api_version=f"{CP}/v1",
            args=("get-credentials",),
            env=(internal.ExecEnvVar("AWS_PROFILE", "temp"),),
            token_attributes=internal.ServiceAccountTokenAttributes(
                service_account_token_audience="sts.amazonaws.com",
                cache_type="ServiceAccount",
                require_service_account=True,
                required_service_account_annotation_keys=("a.io/role",),
                optional_service_account_annotation_keys=("a.io/region",),
            ),
        ),
    )
)

_CONFIG_OK = [
    pytest.param(
        _INTERNAL_CONFIG,
        _INTERNAL_WANT,
        id="internal-version-decodes-with-go-field-names",  # register.go + untagged types.go
    ),
    pytest.param(
        '{"kind":"CredentialProviderConfig","apiVersion":"kubelet.config.k8s.io/__internal",'
        '"Providers":[{"Name":"a","MatchImages":["r.io"],"DefaultCacheDuration":"1m",'
        '"APIVersion":"credentialprovider.kubelet.k8s.io/v1alpha1"}]}',
        internal.CredentialProviderConfig(
            providers=(
                internal.CredentialProvider(
                    name="a",
                    match_images=("r.io",),
                    default_cache_duration=MINUTE,
                    api_version=f"{CP}/v1alpha1",
                ),
            )
        ),
        id="internal-version-json",
    ),
    pytest.param(
        # Already internal: convertToVersion sets the kind and returns it; no defaulting
        # function is registered, so absent fields stay absent.
        _doc(f"{KC}/__internal", "CredentialProviderConfig", "Providers:\n- Name: a\n"),
        internal.CredentialProviderConfig(providers=(internal.CredentialProvider(name="a"),)),
        id="internal-version-not-defaulted",
    ),
]


@pytest.mark.parametrize(("data", "want"), _CONFIG_OK)
def test_decode_config_scheme_kinds(data: str, want: internal.CredentialProviderConfig) -> None:
    doc = load_document(data.encode())
    assert decode_config(doc) == want
    assert validate_with_models(doc) == want


_CONFIG_ERR = [
    # -- kubelet.config.k8s.io/__internal: Go field names, case-sensitive (sigs.k8s.io/json)
    pytest.param(
        _doc(f"{KC}/__internal", "CredentialProviderConfig", "providers: []\n"),
        'strict decoding error: unknown field "providers"',
        id="internal-version-rejects-json-names",
    ),
    pytest.param(
        _doc(
            f"{KC}/__internal",
            "CredentialProviderConfig",
            "Providers:\n- name: a\n  Env: [{name: A, Value: b}]\n",
        ),
        # YAML reaches the decoder as JSON written from a Go map: keys sorted, so "Env"
        # (and its errors) comes before "name".
        'strict decoding error: unknown field "Providers[0].Env[0].name", '
        'unknown field "Providers[0].name"',
        id="internal-version-nested-json-names",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "CredentialProviderConfig", "Providers:\n- APIversion: x\n"),
        'strict decoding error: unknown field "Providers[0].APIversion"',
        id="internal-version-case-sensitive",
    ),
    pytest.param(
        # Interpret matches "APIVersion" case-insensitively; the typed decode does not.
        _doc(f"{KC}/__internal", "CredentialProviderConfig", f"APIVersion: {KC}/__internal\n"),
        'strict decoding error: unknown field "APIVersion"',
        id="internal-version-typemeta-keeps-its-tags",
    ),
    pytest.param(
        _doc(
            f"{KC}/__internal",
            "CredentialProviderConfig",
            "Providers:\n- DefaultCacheDuration: 10\n",
        ),
        "json: cannot unmarshal number into Go struct field "
        "CredentialProvider.Providers.DefaultCacheDuration of type string",
        id="internal-version-type-error-names-go-fields",
    ),
    pytest.param(
        _doc(
            f"{KC}/__internal",
            "CredentialProviderConfig",
            "Providers:\n- TokenAttributes: {CacheType: 1}\n",
        ),
        "json: cannot unmarshal number into Go struct field "
        "ServiceAccountTokenAttributes.Providers.TokenAttributes.CacheType "
        "of type config.ServiceAccountTokenCacheType",
        id="internal-version-types-in-package-config",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "CredentialProviderConfig", "Providers:\n- Args: x\n"),
        "json: cannot unmarshal string into Go struct field CredentialProvider.Providers.Args "
        "of type []string",
        id="internal-version-slice-type-error",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "KubeletConfiguration"),
        'failed to decode "KubeletConfiguration" (wrong Kind)',
        id="internal-version-other-registered-kind",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "ImagePulledRecord"),
        'failed to decode "ImagePulledRecord" (wrong Kind)',
        id="internal-version-image-pulled-record",
    ),
    # The kubelet's scheme decodes a KEP-2535 record strictly before the kind is checked.
    pytest.param(
        _doc(f"{KC}/v1beta1", "ImagePulledRecord", "imageRef: x\nbogus: 1\n"),
        'strict decoding error: unknown field "bogus"',
        id="image-pulled-record-unknown-field",
    ),
    pytest.param(
        _doc(f"{KC}/v1alpha1", "ImagePullIntent", "image: a\nimage: b\nz: 1\n"),
        'strict decoding error: yaml: unmarshal errors:\n  line 4: key "image" already set in '
        'map, unknown field "z"',
        id="image-pull-intent-duplicate-and-unknown",
    ),
    pytest.param(
        _doc(
            f"{KC}/v1beta1",
            "ImagePulledRecord",
            "credentialMapping:\n  r:\n    nodePodsAccessible: 1\n",
        ),
        "json: cannot unmarshal number into Go struct field "
        "ImagePullCredentials.credentialMapping.nodePodsAccessible of type bool",
        id="image-pulled-record-type-error",
    ),
    pytest.param(
        _doc(f"{KC}/v1beta1", "ImagePulledRecord", "imageRef: x\n"),
        'failed to decode "ImagePulledRecord" (wrong Kind)',
        id="image-pulled-record-decodes-then-wrong-kind",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "Foo"),
        _not_internal("Foo", KC),
        id="internal-version-unregistered-kind",
    ),
    pytest.param(
        _doc("__internal", "CredentialProviderConfig"),
        _not_internal("CredentialProviderConfig", ""),
        id="internal-version-without-group",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "CredentialProviderRequest", "Image: x\n"),
        'failed to decode "CredentialProviderRequest" (wrong Kind)',
        id="internal-exec-kind-decodes-then-wrong-kind",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "CredentialProviderRequest", "image: x\n"),
        'strict decoding error: unknown field "image"',
        id="internal-exec-kind-strict-error-first",
    ),
    # -- unversioned kinds: Scheme.New finds them by name in any group and version
    pytest.param(
        _doc("v1", "Status"),
        'failed to decode "Status" (wrong Kind)',
        id="status-v1",
    ),
    pytest.param(
        _doc(f"{KC}/v1", "Status"),
        'failed to decode "Status" (wrong Kind)',
        id="status-in-kubelet-config-group",
    ),
    pytest.param(
        _doc("example.com/v7", "Status"),
        'failed to decode "Status" (wrong Kind)',
        id="status-in-unknown-group",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "Status"),
        'failed to decode "Status" (wrong Kind)',
        id="status-in-internal-version",
    ),
    pytest.param(
        _doc(
            "v1",
            "Status",
            "metadata: {resourceVersion: '1', remainingItemCount: 3}\nstatus: Failure\n"
            "message: m\nreason: NotFound\ncode: 404\n"
            "details: {name: nm, uid: u1, causes: [{reason: r, field: f}], retryAfterSeconds: 5}\n",
        ),
        'failed to decode "Status" (wrong Kind)',
        id="status-full",
    ),
    pytest.param(
        _doc(f"{KC}/v1", "Status", "providers: []\n"),
        'strict decoding error: unknown field "providers"',
        id="status-strict-error-before-kind",
    ),
    pytest.param(
        _doc("v1", "Status", "code: '404'\n"),
        "json: cannot unmarshal string into Go struct field Status.code of type int32",
        id="status-code-is-int32",
    ),
    pytest.param(
        _doc("v1", "Status", "details: {retryAfterSeconds: [1]}\n"),
        "json: cannot unmarshal array into Go struct field "
        "StatusDetails.details.retryAfterSeconds of type int32",
        id="status-details-int32",
    ),
    pytest.param(
        _doc("v1", "Status", "metadata: x\n"),
        "json: cannot unmarshal string into Go struct field Status.metadata of type v1.ListMeta",
        id="status-metadata-type",
    ),
    pytest.param(
        _doc("v1", "Status", "details: {uid: 1}\n"),
        "json: cannot unmarshal number into Go struct field StatusDetails.details.uid "
        "of type types.UID",
        id="status-details-uid-type",
    ),
    pytest.param(
        _doc("v1", "APIVersions", "versions: [v1]\nserverAddressByClientCIDRs: []\n"),
        'failed to decode "APIVersions" (wrong Kind)',
        id="apiversions",
    ),
    pytest.param(
        _doc(
            "v1",
            "APIGroupList",
            "groups: [{kind: APIGroup, name: g, preferredVersion: {groupVersion: g/v1}}]\n",
        ),
        'failed to decode "APIGroupList" (wrong Kind)',
        id="apigrouplist",
    ),
    pytest.param(
        _doc("v1", "APIGroup", "preferredVersion: g/v1\n"),
        "json: cannot unmarshal string into Go struct field APIGroup.preferredVersion "
        "of type v1.GroupVersionForDiscovery",
        id="apigroup-type-error",
    ),
    pytest.param(
        _doc("v1", "APIResourceList", "resources: [{name: r, verbs: get}]\n"),
        "json: cannot unmarshal string into Go struct field APIResource.resources.verbs "
        "of type v1.Verbs",
        id="apiresourcelist-verbs-type",
    ),
    pytest.param(
        _doc("v1", "APIResourceList", "resources: [{name: r, verbs: [get], scope: x}]\n"),
        'strict decoding error: unknown field "resources[0].scope"',
        id="apiresourcelist-strict",
    ),
    # -- WatchEvent: registered in the exec versions only, without TypeMeta
    pytest.param(
        _doc(f"{CP}/v1", "WatchEvent", "type: ADDED\nobject: {anything: [1, {x: y}]}\n"),
        'strict decoding error: unknown field "apiVersion", unknown field "kind"',
        id="watch-event-has-no-typemeta",
    ),
    pytest.param(
        '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1","kind":"WatchEvent",'
        '"object":null,"type":"x"}',
        'strict decoding error: unknown field "apiVersion", unknown field "kind"',
        id="watch-event-strict-errors-in-document-order",
    ),
    pytest.param(
        _doc(f"{CP}/v1beta1", "WatchEvent", "type: 1\nobject: 2\n"),
        "json: cannot unmarshal number into Go struct field WatchEvent.type of type string",
        id="watch-event-raw-object-takes-anything",
    ),
    pytest.param(
        _doc(f"{KC}/v1", "WatchEvent"),
        _not_registered("WatchEvent", f"{KC}/v1"),
        id="watch-event-not-in-kubelet-config-group",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "WatchEvent", "Type: ADDED\nObject: null\n"),
        'strict decoding error: unknown field "apiVersion", unknown field "kind"',
        id="internal-watch-event",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "WatchEvent", "type: ADDED\n"),
        'strict decoding error: unknown field "apiVersion", unknown field "kind", '
        'unknown field "type"',
        id="internal-watch-event-go-field-names",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "WatchEvent", "Object: {kind: Status}\n"),
        "json: cannot unmarshal object into Go struct field InternalEvent.Object "
        "of type runtime.Object",
        id="internal-watch-event-object-is-an-interface",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "WatchEvent"),
        _not_internal("WatchEvent", KC),
        id="internal-watch-event-not-in-kubelet-config-group",
    ),
    # -- options kinds: external only, so converting to the internal version fails
    *(
        pytest.param(
            _doc(f"{CP}/{version}", kind),
            _not_internal(kind, CP),
            id=f"options-{kind}-{version}",
        )
        for kind, version in (
            ("ListOptions", "v1"),
            ("GetOptions", "v1beta1"),
            ("DeleteOptions", "v1alpha1"),
            ("CreateOptions", "v1"),
            ("UpdateOptions", "v1"),
            ("PatchOptions", "v1"),
        )
    ),
    pytest.param(
        _doc(f"{CP}/v1", "ListOptions", "limit: 5\ntimeoutSeconds: 3\nbogus: 1\n"),
        _not_internal("ListOptions", CP),
        id="options-conversion-error-replaces-strict-errors",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "ListOptions", "limit: '5'\n"),
        "json: cannot unmarshal string into Go struct field ListOptions.limit of type int64",
        id="options-type-error-before-conversion",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "DeleteOptions", "preconditions: {uid: 1}\n"),
        "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid "
        "of type types.UID",
        id="options-nested-type-error",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "DeleteOptions", "propagationPolicy: 1\n"),
        "json: cannot unmarshal number into Go struct field DeleteOptions.propagationPolicy "
        "of type v1.DeletionPropagation",
        id="options-named-string-type",
    ),
    pytest.param(
        _doc(f"{KC}/v1", "ListOptions"),
        _not_registered("ListOptions", f"{KC}/v1"),
        id="options-not-in-kubelet-config-group",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "GetOptions"),
        _not_internal("GetOptions", CP),
        id="options-not-in-internal-version",
    ),
]


@pytest.mark.parametrize(("data", "message"), _CONFIG_ERR)
def test_decode_config_scheme_errors(data: str, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_config(load_document(data.encode()))
    assert str(info.value) == message


# Go's texts for integer and runtime.Object fields: the number named by its literal.
_INT_AND_INTERFACE = [
    pytest.param(
        _doc("v1", "Status", "code: 1.5\n"),
        "json: cannot unmarshal number 1.5 into Go struct field Status.code of type int32",
        id="status-code-fraction",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "ListOptions", "limit: true\n"),
        "json: cannot unmarshal bool into Go struct field ListOptions.limit of type int64",
        id="int-field-bool",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "WatchEvent", "Object: true\n"),
        "json: cannot unmarshal bool into Go struct field InternalEvent.Object "
        "of type runtime.Object",
        id="interface-field-bool",
    ),
    pytest.param(
        _doc("v1", "Status", "code: 3000000000\n"),
        "json: cannot unmarshal number 3000000000 into Go struct field Status.code of type int32",
        id="status-code-out-of-range",
    ),
    pytest.param(
        _doc("v1", "Status", "code: 1e22\n"),  # the number as json.Marshal writes it
        "json: cannot unmarshal number 1e+22 into Go struct field Status.code of type int32",
        id="status-code-exponent",
    ),
    pytest.param(
        '{"kind":"Status","apiVersion":"v1","code":1.50}',  # JSON keeps its literal
        "json: cannot unmarshal number 1.50 into Go struct field Status.code of type int32",
        id="status-code-json-literal",
    ),
    pytest.param(
        _doc("v1", "Status", "code: 1.0\nmessage: 1\n"),  # 1.0 is written "1": an int32
        "json: cannot unmarshal number into Go struct field Status.message of type string",
        id="integral-float-is-an-integer",
    ),
]


@pytest.mark.parametrize(("data", "message"), _INT_AND_INTERFACE)
def test_decode_config_integer_and_interface_fields(data: str, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_config(load_document(data.encode()))
    assert str(info.value) == message


def test_internal_config_is_validated_like_any_other(tmp_path: Path) -> None:
    """``readCredentialProviderConfig`` then ``validateCredentialProviderConfig``: an internal
    document gets no defaults, so a missing duration is the usual Required error."""
    path = tmp_path / "config.yaml"
    path.write_text(
        _doc(
            f"{KC}/__internal",
            "CredentialProviderConfig",
            f"Providers:\n- Name: a\n  MatchImages: [r.io]\n  APIVersion: {CP}/v1\n",
        )
    )
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(info.value) == (
        "failed to validate credential provider config: "
        "providers.defaultCacheDuration: Required value"
    )
    path.write_text(_INTERNAL_CONFIG)
    config, _ = load_config(str(path))
    assert config == _INTERNAL_WANT


# -- the exec response decoder (decodeResponse), same scheme ------------------------------------

_RESPONSE_OK = [
    pytest.param(
        _doc(
            f"{CP}/__internal",
            "CredentialProviderResponse",
            "CacheKeyType: Registry\nCacheDuration: 5m\nAuth: {r.io: {Username: u, Password: p}}\n",
        ),
        internal.CredentialProviderResponse(
            "Registry", 5 * MINUTE, {"r.io": internal.AuthConfig("u", "p")}
        ),
        id="internal-version-response",  # credentialprovider/register.go, untagged types.go
    ),
]


@pytest.mark.parametrize(("data", "want"), _RESPONSE_OK)
def test_decode_response_scheme_kinds(data: str, want: internal.CredentialProviderResponse) -> None:
    assert decode_response(load_document(data.encode())) == want


_RESPONSE_ERR = [
    pytest.param(
        _doc(f"{CP}/__internal", "CredentialProviderResponse", "cacheKeyType: Image\n"),
        'strict decoding error: unknown field "cacheKeyType"',
        id="internal-version-rejects-json-names",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "CredentialProviderResponse", "Auth: {r: {Password: 1}}\n"),
        "json: cannot unmarshal number into Go struct field AuthConfig.Auth.Password "
        "of type string",
        id="internal-version-type-error",
    ),
    pytest.param(
        _doc(f"{CP}/__internal", "CredentialProviderResponse", "CacheKeyType: 1\n"),
        "json: cannot unmarshal number into Go struct field "
        "CredentialProviderResponse.CacheKeyType of type credentialprovider.PluginCacheKeyType",
        id="internal-version-types-in-package-credentialprovider",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "Status", "status: Failure\ncode: 500\n"),
        'failed to decode CredentialProviderResponse, unexpected Kind: "Status"',
        id="status",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "Status", "cacheKeyType: Image\n"),
        'strict decoding error: unknown field "cacheKeyType"',
        id="status-strict-error-first",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "WatchEvent", "type: ERROR\nobject: {kind: Status}\n"),
        'strict decoding error: unknown field "apiVersion", unknown field "kind"',
        id="watch-event",
    ),
    pytest.param(
        _doc(f"{CP}/v1", "GetOptions", "resourceVersion: '1'\n"),
        _not_internal("GetOptions", CP),
        id="options",
    ),
    pytest.param(
        _doc(f"{KC}/__internal", "CredentialProviderConfig", "Providers: []\n"),
        'failed to decode CredentialProviderResponse, unexpected Kind: "CredentialProviderConfig"',
        id="internal-config",
    ),
    pytest.param(
        _doc(f"{CP}/v1alpha1", "Foo"),
        _not_registered("Foo", f"{CP}/v1alpha1"),
        id="unregistered",
    ),
]


@pytest.mark.parametrize(("data", "message"), _RESPONSE_ERR)
def test_decode_response_scheme_errors(data: str, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_response(load_document(data.encode()))
    assert str(info.value) == message


def test_internal_response_never_matches_a_configured_version() -> None:
    """``execPlugin`` compares the response's group/version with the provider's apiVersion
    (one of the three external versions) before decoding, so an internal response is refused
    there even though ``decodeResponse`` alone would accept it."""
    stdout = b'{"kind":"CredentialProviderResponse","apiVersion":"' + CP.encode() + b'/__internal"}'
    assert interpret_response_gvk(stdout) == f"{CP}/__internal"
    assert interpret_response_gvk(stdout) not in internal.EXEC_API_VERSIONS


def test_decode_request_internal_version() -> None:
    data = _doc(
        f"{CP}/__internal",
        "CredentialProviderRequest",
        "Image: r.io/a\nServiceAccountToken: t\nServiceAccountAnnotations: {k: v}\n",
    )
    assert decode_request(load_document(data.encode())) == (
        f"{CP}/__internal",
        internal.CredentialProviderRequest("r.io/a", "t", {"k": "v"}),
    )
