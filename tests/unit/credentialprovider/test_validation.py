"""``validateCredentialProviderConfig``: messages, their order and the aggregate the kubelet
prints, including every validation case from upstream ``config_test.go``."""

from __future__ import annotations

import pytest

from credprov._go.durations import HOUR, MINUTE, NANOSECOND
from credprov._go.field_errors import ErrorType, aggregate
from credprov.api.internal import (
    CredentialProvider,
    CredentialProviderConfig,
    ExecEnvVar,
    ServiceAccountTokenAttributes,
)
from credprov.credentialprovider.validation import (
    is_qualified_name,
    validate_credential_provider_config,
)

V1 = "credentialprovider.kubelet.k8s.io/v1"
V1ALPHA1 = "credentialprovider.kubelet.k8s.io/v1alpha1"
V1BETA1 = "credentialprovider.kubelet.k8s.io/v1beta1"

QN_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
QN_SLASHES_MSG = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
    "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
QN_PREFIX_MSG = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
GATE_OFF_MSG = (
    "providers.tokenAttributes: Forbidden: tokenAttributes is not supported when "
    "KubeletServiceAccountTokenForCredentialProviders feature gate is disabled"
)
ONLY_V1_MSG = (
    "providers.tokenAttributes: Forbidden: tokenAttributes is only supported for "
    "credentialprovider.kubelet.k8s.io/v1 API version"
)
REQ_KEYS = "providers.tokenAttributes.requiredServiceAccountAnnotationKeys"
OPT_KEYS = "providers.tokenAttributes.optionalServiceAccountAnnotationKeys"


def provider(
    name: str = "foobar",
    match_images: tuple[str, ...] = ("foobar.registry.io",),
    default_cache_duration: int | None = MINUTE,
    api_version: str = V1ALPHA1,
    token_attributes: ServiceAccountTokenAttributes | None = None,
) -> CredentialProvider:
    """A provider the kubelet accepts unless told otherwise (upstream's usual fixture)."""
    return CredentialProvider(
        name=name,
        match_images=match_images,
        default_cache_duration=default_cache_duration,
        api_version=api_version,
        token_attributes=token_attributes,
    )


def attrs(
    audience: str = "audience",
    cache_type: str = "ServiceAccount",
    require_service_account: bool | None = True,
    required: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
) -> ServiceAccountTokenAttributes:
    return ServiceAccountTokenAttributes(
        service_account_token_audience=audience,
        cache_type=cache_type,
        require_service_account=require_service_account,
        required_service_account_annotation_keys=required,
        optional_service_account_annotation_keys=optional,
    )


def v1_provider(token_attributes: ServiceAccountTokenAttributes) -> CredentialProvider:
    return provider(api_version=V1, token_attributes=token_attributes)


def config(*providers: CredentialProvider) -> CredentialProviderConfig:
    return CredentialProviderConfig(providers=providers)


def validate(cfg: CredentialProviderConfig, gate: bool = True) -> str | None:
    return aggregate(validate_credential_provider_config(cfg, gate))


# Test_validateCredentialProviderConfig in kubernetes pkg/credentialprovider/plugin/
# config_test.go, case for case; the expected strings are upstream's. Upstream's gate
# defaults to false and is only set where tokenAttributes are under test.
UPSTREAM_CASES = [
    pytest.param(
        config(),
        False,
        "providers: Required value: at least 1 item in plugins is required",
        id="no providers provided",
    ),
    pytest.param(
        config(provider(match_images=())),
        False,
        "providers.matchImages: Required value: at least 1 item in matchImages is required",
        id="no matchImages provided",
    ),
    pytest.param(
        config(provider(default_cache_duration=None)),
        False,
        "providers.defaultCacheDuration: Required value",
        id="no default cache duration provided",
    ),
    pytest.param(
        config(provider(name="foo/../bar")),
        False,
        "providers.name: Invalid value: \"foo/../bar\": provider name cannot contain '/'",
        id="name contains '/'",
    ),
    pytest.param(
        config(provider(name=".")),
        False,
        "providers.name: Invalid value: \".\": provider name cannot be '.'",
        id="name is '.'",
    ),
    pytest.param(
        config(provider(name="..")),
        False,
        "providers.name: Invalid value: \"..\": provider name cannot be '..'",
        id="name is '..'",
    ),
    pytest.param(
        config(provider(name="foo bar")),
        False,
        'providers.name: Invalid value: "foo bar": provider name cannot contain spaces',
        id="name contains spaces",
    ),
    pytest.param(
        config(provider(), provider(match_images=("bar.registry.io",))),
        False,
        'providers.name: Duplicate value: "foobar"',
        id="duplicate names",
    ),
    pytest.param(
        config(provider(api_version="")),
        False,
        "providers.apiVersion: Required value",
        id="no apiVersion",
    ),
    pytest.param(
        config(provider(api_version="credentialprovider.kubelet.k8s.io/v1alpha0")),
        False,
        'providers.apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v1alpha0": '
        'supported values: "credentialprovider.kubelet.k8s.io/v1", '
        '"credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1"',
        id="invalid apiVersion",
    ),
    pytest.param(
        config(provider(default_cache_duration=-1 * MINUTE)),
        False,
        'providers.defaultCacheDuration: Invalid value: "-1m0s": must be greater than or equal to 0',
        id="negative default cache duration",
    ),
    pytest.param(
        config(provider(match_images=("%invalid%",))),
        False,
        'providers.matchImages: Invalid value: "%invalid%": match image is invalid: '
        'parse "https://%invalid%": invalid URL escape "%in"',
        id="invalid match image",
    ),
    pytest.param(config(provider()), False, None, id="valid config"),
    pytest.param(
        config(v1_provider(attrs())),
        False,
        GATE_OFF_MSG,
        id="token attributes set without KubeletServiceAccountTokenForCredentialProviders "
        "feature gate enabled",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(
                    audience="",
                    cache_type="Token",
                    required=("prefix.io/annotation-1", "prefix.io/annotation-2"),
                )
            )
        ),
        True,
        "providers.tokenAttributes.serviceAccountTokenAudience: Required value",
        id="token attributes not nil but empty ServiceAccountTokenAudience",
    ),
    pytest.param(
        config(v1_provider(attrs(cache_type=""))),
        True,
        "providers.tokenAttributes.cacheType: Required value: cacheType is required to be set "
        "when tokenAttributes is specified. Supported values are: ServiceAccount, Token",
        id="token attributes not nil but empty CacheType",
    ),
    pytest.param(
        config(v1_provider(attrs(cache_type="invalid-cache-type"))),
        True,
        'providers.tokenAttributes.cacheType: Unsupported value: "invalid-cache-type": '
        'supported values: "ServiceAccount", "Token"',
        id="token attributes not nil, invalid CacheType",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(
                    require_service_account=None,
                    required=("prefix.io/annotation-1", "prefix.io/annotation-2"),
                )
            )
        ),
        True,
        "providers.tokenAttributes.requireServiceAccount: Required value",
        id="token attributes not nil but empty ServiceAccountTokenRequired",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(cache_type="Token", required=("cantendwithadash-", "now-with-dashes/simple"))
            )
        ),
        True,
        f'{REQ_KEYS}: Invalid value: "cantendwithadash-": {QN_NAME_MSG}',
        id="required service account annotation keys not qualified name",
    ),
    pytest.param(
        config(v1_provider(attrs(optional=("cantendwithadash-", "now-with-dashes/simple")))),
        True,
        f'{OPT_KEYS}: Invalid value: "cantendwithadash-": {QN_NAME_MSG}',
        id="optional service account annotation keys not qualified name",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(
                    cache_type="Token",
                    required=("now-with-dashes/simple", "now-with-dashes/simple"),
                )
            )
        ),
        True,
        f'{REQ_KEYS}: Duplicate value: "now-with-dashes/simple"',
        id="duplicate required service account annotation keys",
    ),
    pytest.param(
        config(v1_provider(attrs(optional=("now-with-dashes/simple", "now-with-dashes/simple")))),
        True,
        f'{OPT_KEYS}: Duplicate value: "now-with-dashes/simple"',
        id="duplicate optional service account annotation keys",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(
                    cache_type="Token",
                    required=("now-with-dashes/simple-1", "now-with-dashes/simple-2"),
                    optional=("now-with-dashes/simple-2", "now-with-dashes/simple-3"),
                )
            )
        ),
        True,
        'providers.tokenAttributes: Invalid value: ["now-with-dashes/simple-2"]: '
        "annotation keys cannot be both required and optional",
        id="annotation key in required and optional keys",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(
                    require_service_account=False,
                    required=("now-with-dashes/simple-1", "now-with-dashes/simple-2"),
                )
            )
        ),
        True,
        f"{REQ_KEYS}: Forbidden: requireServiceAccount cannot be false when "
        "requiredServiceAccountAnnotationKeys is set",
        id="required annotation keys set when requireServiceAccount is false",
    ),
    pytest.param(
        config(
            v1_provider(
                attrs(
                    cache_type="Token",
                    required=("now-with-dashes/simple-1", "now-with-dashes/simple-2"),
                    optional=("now-with-dashes/simple-3",),
                )
            )
        ),
        True,
        None,
        id="valid config with KubeletServiceAccountTokenForCredentialProviders feature gate "
        "enabled",
    ),
    pytest.param(
        config(
            provider(
                api_version=V1ALPHA1,
                token_attributes=attrs(cache_type="Token", required=("now-with-dashes/simple",)),
            )
        ),
        True,
        ONLY_V1_MSG,
        id="tokenAttributes set with credentialprovider.kubelet.k8s.io/v1alpha1 APIVersion",
    ),
    pytest.param(
        config(
            provider(
                api_version=V1BETA1, token_attributes=attrs(required=("now-with-dashes/simple",))
            )
        ),
        True,
        ONLY_V1_MSG,
        id="tokenAttributes set with credentialprovider.kubelet.k8s.io/v1beta1 APIVersion",
    ),
]


@pytest.mark.parametrize(("cfg", "gate", "expected"), UPSTREAM_CASES)
def test_upstream_config_test_cases(
    cfg: CredentialProviderConfig, gate: bool, expected: str | None
) -> None:
    assert validate(cfg, gate) == expected


# One rule per row, beyond upstream's table.
@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        pytest.param(config(provider(api_version=V1)), None, id="v1-exec-api-accepted"),
        pytest.param(config(provider(api_version=V1BETA1)), None, id="v1beta1-exec-api-accepted"),
        pytest.param(
            config(provider(api_version="credentialprovider.kubelet.k8s.io/V1")),
            'providers.apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/V1": '
            'supported values: "credentialprovider.kubelet.k8s.io/v1", '
            '"credentialprovider.kubelet.k8s.io/v1alpha1", '
            '"credentialprovider.kubelet.k8s.io/v1beta1"',
            id="api-version-case-sensitive",
        ),
        pytest.param(
            config(provider(api_version="kubelet.config.k8s.io/v1")),
            'providers.apiVersion: Unsupported value: "kubelet.config.k8s.io/v1": '
            'supported values: "credentialprovider.kubelet.k8s.io/v1", '
            '"credentialprovider.kubelet.k8s.io/v1alpha1", '
            '"credentialprovider.kubelet.k8s.io/v1beta1"',
            id="config-group-is-not-an-exec-api-version",
        ),
        pytest.param(config(provider(name="")), None, id="empty-name-not-validated"),
        pytest.param(config(provider(name="foo\tbar")), None, id="tab-is-not-a-space"),
        pytest.param(config(provider(name="...")), None, id="three-dots-allowed"),
        pytest.param(config(provider(name="a\\b")), None, id="backslash-not-validated"),
        pytest.param(
            config(provider(name="/")),
            "providers.name: Invalid value: \"/\": provider name cannot contain '/'",
            id="slash-alone",
        ),
        pytest.param(
            config(provider(name=" ")),
            'providers.name: Invalid value: " ": provider name cannot contain spaces',
            id="space-alone",
        ),
        pytest.param(
            config(
                CredentialProvider(
                    name="foobar",
                    match_images=("foobar.registry.io",),
                    default_cache_duration=MINUTE,
                    api_version=V1ALPHA1,
                    args=("--v=5",),
                    env=(ExecEnvVar("", "x"), ExecEnvVar("", "y")),
                )
            ),
            None,
            id="env-and-args-not-validated",
        ),
        pytest.param(config(provider(default_cache_duration=0)), None, id="zero-duration-ok"),
        pytest.param(
            config(provider(default_cache_duration=-1 * NANOSECOND)),
            'providers.defaultCacheDuration: Invalid value: "-1ns": '
            "must be greater than or equal to 0",
            id="negative-nanosecond",
        ),
        pytest.param(
            config(provider(default_cache_duration=-(HOUR + 30 * MINUTE))),
            'providers.defaultCacheDuration: Invalid value: "-1h30m0s": '
            "must be greater than or equal to 0",
            id="negative-duration-go-format",
        ),
        pytest.param(
            config(provider(match_images=("*.registry.io", "registry.io:5000/*", "*"))),
            None,
            id="wildcard-match-images-ok",
        ),
        pytest.param(config(provider(match_images=("",))), None, id="empty-match-image-ok"),
        pytest.param(
            config(v1_provider(attrs(cache_type="Token"))), None, id="cache-type-token-ok"
        ),
        pytest.param(
            config(v1_provider(attrs(cache_type="token"))),
            'providers.tokenAttributes.cacheType: Unsupported value: "token": '
            'supported values: "ServiceAccount", "Token"',
            id="cache-type-case-sensitive",
        ),
        pytest.param(
            config(v1_provider(attrs(cache_type="a<b"))),
            'providers.tokenAttributes.cacheType: Unsupported value: "a\\u003cb": '
            'supported values: "ServiceAccount", "Token"',
            id="cache-type-value-json-escaped",
        ),
        pytest.param(
            config(v1_provider(attrs(require_service_account=False))),
            None,
            id="require-sa-false-without-required-keys-ok",
        ),
        pytest.param(
            config(v1_provider(attrs(require_service_account=False, optional=("a.io/b",)))),
            None,
            id="require-sa-false-with-optional-keys-ok",
        ),
        pytest.param(
            config(
                v1_provider(
                    attrs(required=("a", "b", "c"), optional=("c", "b", "d")),
                )
            ),
            'providers.tokenAttributes: Invalid value: ["b","c"]: '
            "annotation keys cannot be both required and optional",
            id="intersection-sorted-json-list",
        ),
        pytest.param(
            config(v1_provider(attrs(required=("Key",), optional=("key",)))),
            None,
            id="intersection-is-case-sensitive",
        ),
        pytest.param(
            config(v1_provider(attrs(required=("Key", "key")))),
            None,
            id="duplicate-is-case-sensitive",
        ),
    ],
)
def test_rules(cfg: CredentialProviderConfig, expected: str | None) -> None:
    assert validate(cfg) == expected


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("simple", id="simple"),
        pytest.param("now-with-dashes/simple", id="prefixed"),
        pytest.param("Uppercase_Is_OK_123", id="uppercase-name"),
        pytest.param("Example.COM/abc", id="uppercase-prefix-ok-after-lowering"),
        pytest.param("1.2.3.4/5678", id="numeric"),
        pytest.param("a" * 63, id="name-63-bytes"),
        pytest.param("a" * 253 + "/" + "b" * 63, id="prefix-253-bytes"),
        pytest.param("\u0130", id="dotted-capital-i-lowers-to-ascii-i"),
    ],
)
def test_annotation_keys_valid(key: str) -> None:
    cfg = config(v1_provider(attrs(required=(key,), optional=(key,))))
    errs = validate_credential_provider_config(cfg)
    # The key is in both lists only so that each list's checks see it; that overlap is the
    # one complaint left when the key itself is valid.
    assert [e.detail for e in errs] == ["annotation keys cannot be both required and optional"]


@pytest.mark.parametrize(
    ("key", "messages"),
    [
        pytest.param("nospecialchars%^=@", [QN_NAME_MSG], id="special-chars"),
        pytest.param("-cantstartwithadash", [QN_NAME_MSG], id="leading-dash"),
        pytest.param("only/one/slash", [QN_SLASHES_MSG], id="two-slashes"),
        pytest.param("example_com/abc", [QN_PREFIX_MSG], id="underscore-in-prefix"),
        pytest.param(".example.com/abc", [QN_PREFIX_MSG], id="prefix-leading-dot"),
        pytest.param(
            "example.com/",
            ["name part must be non-empty", QN_NAME_MSG],
            id="empty-name-two-messages",
        ),
        pytest.param("/simple", ["prefix part must be non-empty"], id="empty-prefix"),
        pytest.param("", ["name part must be non-empty", QN_NAME_MSG], id="empty-key"),
        pytest.param("a" * 64, ["name part must be no more than 63 bytes"], id="name-64-bytes"),
        pytest.param(
            "a" * 62 + "é",
            ["name part must be no more than 63 bytes", QN_NAME_MSG],
            id="length-counts-utf8-bytes",
        ),
        pytest.param(
            "a" * 254 + "/abc",
            ["prefix part must be no more than 253 bytes"],
            id="prefix-254-bytes",
        ),
        pytest.param(
            "-" * 254 + "/-",
            ["prefix part must be no more than 253 bytes", QN_PREFIX_MSG, QN_NAME_MSG],
            id="every-check-at-once",
        ),
        pytest.param("a b", [QN_NAME_MSG], id="space"),
        pytest.param("abc\n", [QN_NAME_MSG], id="trailing-newline-not-anchored-away"),
    ],
)
def test_annotation_keys_invalid(key: str, messages: list[str]) -> None:
    errs = validate_credential_provider_config(config(v1_provider(attrs(required=(key,)))))
    assert [(e.type, e.field, e.bad_value, e.detail) for e in errs] == [
        (ErrorType.INVALID, REQ_KEYS, key, m) for m in messages
    ]


@pytest.mark.parametrize(
    ("value", "messages"),
    [
        pytest.param("example.com/MyName", [], id="valid"),
        pytest.param(
            "Example.com/abc",
            [QN_PREFIX_MSG],
            id="uppercase-prefix-invalid-without-lowering",
        ),
        pytest.param("a/b/c", [QN_SLASHES_MSG], id="slashes-short-circuit"),
        pytest.param("a" * 63, [], id="name-at-limit"),
    ],
)
def test_is_qualified_name(value: str, messages: list[str]) -> None:
    assert is_qualified_name(value) == messages


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        pytest.param(
            config(provider(name="a/ b")),
            [
                "providers.name: Invalid value: \"a/ b\": provider name cannot contain '/'",
                'providers.name: Invalid value: "a/ b": provider name cannot contain spaces',
            ],
            id="slash-before-space",
        ),
        pytest.param(
            config(provider(name=".."), provider(name="..")),
            [
                "providers.name: Invalid value: \"..\": provider name cannot be '..'",
                "providers.name: Invalid value: \"..\": provider name cannot be '..'",
                'providers.name: Duplicate value: ".."',
            ],
            id="dotdot-then-duplicate",
        ),
        pytest.param(
            config(
                provider(
                    name="x y",
                    api_version="",
                    match_images=(),
                    default_cache_duration=None,
                )
            ),
            [
                'providers.name: Invalid value: "x y": provider name cannot contain spaces',
                "providers.apiVersion: Required value",
                "providers.matchImages: Required value: at least 1 item in matchImages is required",
                "providers.defaultCacheDuration: Required value",
            ],
            id="name-apiversion-matchimages-duration",
        ),
        pytest.param(
            config(
                provider(
                    api_version="bogus",
                    match_images=("%zz", "ok.io", "%yy"),
                    default_cache_duration=-MINUTE,
                )
            ),
            [
                'providers.apiVersion: Unsupported value: "bogus": supported values: '
                '"credentialprovider.kubelet.k8s.io/v1", '
                '"credentialprovider.kubelet.k8s.io/v1alpha1", '
                '"credentialprovider.kubelet.k8s.io/v1beta1"',
                'providers.matchImages: Invalid value: "%zz": match image is invalid: '
                'parse "https://%zz": invalid URL escape "%zz"',
                'providers.matchImages: Invalid value: "%yy": match image is invalid: '
                'parse "https://%yy": invalid URL escape "%yy"',
                'providers.defaultCacheDuration: Invalid value: "-1m0s": must be greater '
                "than or equal to 0",
            ],
            id="apiversion-each-matchimage-duration",
        ),
        pytest.param(
            config(
                provider(
                    api_version=V1BETA1,
                    token_attributes=attrs(
                        audience="",
                        require_service_account=None,
                        cache_type="",
                    ),
                )
            ),
            [
                GATE_OFF_MSG,
                "providers.tokenAttributes.serviceAccountTokenAudience: Required value",
                "providers.tokenAttributes.requireServiceAccount: Required value",
                ONLY_V1_MSG,
                "providers.tokenAttributes.cacheType: Required value: cacheType is required "
                "to be set when tokenAttributes is specified. Supported values are: "
                "ServiceAccount, Token",
            ],
            id="token-attributes-gate-audience-require-version-cachetype",
        ),
        pytest.param(
            config(
                v1_provider(
                    attrs(
                        require_service_account=False,
                        required=("-bad", "-bad", "x"),
                        optional=("x", "-opt"),
                        cache_type="Nope",
                    )
                )
            ),
            [
                GATE_OFF_MSG,
                f"{REQ_KEYS}: Forbidden: requireServiceAccount cannot be false when "
                "requiredServiceAccountAnnotationKeys is set",
                f'{REQ_KEYS}: Invalid value: "-bad": {QN_NAME_MSG}',
                f'{REQ_KEYS}: Invalid value: "-bad": {QN_NAME_MSG}',
                f'{REQ_KEYS}: Duplicate value: "-bad"',
                f'{OPT_KEYS}: Invalid value: "-opt": {QN_NAME_MSG}',
                'providers.tokenAttributes: Invalid value: ["x"]: annotation keys cannot be '
                "both required and optional",
                'providers.tokenAttributes.cacheType: Unsupported value: "Nope": supported '
                'values: "ServiceAccount", "Token"',
            ],
            id="forbidden-required-optional-intersection-cachetype",
        ),
        pytest.param(
            config(provider(name="a b"), provider(name="c/d")),
            [
                'providers.name: Invalid value: "a b": provider name cannot contain spaces',
                "providers.name: Invalid value: \"c/d\": provider name cannot contain '/'",
            ],
            id="providers-in-config-order",
        ),
    ],
)
def test_error_order(cfg: CredentialProviderConfig, expected: list[str]) -> None:
    assert [str(e) for e in validate_credential_provider_config(cfg, False)] == expected


PREFIX = "failed to validate credential provider config: "


@pytest.mark.parametrize(
    ("cfg", "gate", "expected"),
    [
        pytest.param(
            config(),
            True,
            PREFIX + "providers: Required value: at least 1 item in plugins is required",
            id="single-error",
        ),
        pytest.param(
            config(provider(name=".", api_version="")),
            True,
            PREFIX + "[providers.name: Invalid value: \".\": provider name cannot be '.', "
            "providers.apiVersion: Required value]",
            id="two-errors-bracketed",
        ),
        pytest.param(
            config(provider(), provider(), provider()),
            True,
            PREFIX + 'providers.name: Duplicate value: "foobar"',
            id="repeated-duplicates-collapse",
        ),
        pytest.param(
            config(provider(api_version=""), provider(name="other", api_version="")),
            True,
            PREFIX + "providers.apiVersion: Required value",
            id="same-error-in-two-providers-collapses",
        ),
        pytest.param(
            config(v1_provider(attrs(required=("-a", "-a")))),
            True,
            PREFIX + f'[{REQ_KEYS}: Invalid value: "-a": {QN_NAME_MSG}, '
            f'{REQ_KEYS}: Duplicate value: "-a"]',
            id="repeated-invalid-key-collapses",
        ),
        pytest.param(
            config(v1_provider(attrs())),
            False,
            PREFIX + GATE_OFF_MSG,
            id="gate-off",
        ),
    ],
)
def test_kubelet_error_text(cfg: CredentialProviderConfig, gate: bool, expected: str) -> None:
    agg = validate(cfg, gate)
    assert agg is not None
    assert PREFIX + agg == expected


def test_gate_only_matters_with_token_attributes() -> None:
    cfg = config(provider())
    assert validate_credential_provider_config(cfg, False) == []
    assert validate_credential_provider_config(cfg, True) == []


def test_gate_defaults_on() -> None:
    assert validate_credential_provider_config(config(v1_provider(attrs()))) == []
