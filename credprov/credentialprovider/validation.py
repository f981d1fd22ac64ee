"""Validation of a decoded ``CredentialProviderConfig``, as the kubelet does it.

Mirrors ``validateCredentialProviderConfig`` and ``validateServiceAccountAnnotationKeys``
in ``kubernetes/pkg/credentialprovider/plugin/config.go``: the same checks, in the same
order, producing the same ``field.Error`` texts, so that the aggregate the kubelet prints
(``failed to validate credential provider config: ...``) comes out byte for byte.

``is_qualified_name`` mirrors apimachinery's ``validation.IsQualifiedName`` (now
``content.IsLabelKey`` in ``pkg/api/validate/content/kube.go``) with the DNS-1123 subdomain
check from ``content/dns.go``. Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from credprov._go.durations import format_duration
from credprov.api.internal import (
    EXEC_API_VERSIONS,
    EXEC_GROUP,
    TOKEN_CACHE_TYPE_SERVICE_ACCOUNT,
    TOKEN_CACHE_TYPE_TOKEN,
    CredentialProvider,
    CredentialProviderConfig,
    ServiceAccountTokenAttributes,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from credprov._go import field_errors as fe
else:

    class _FieldErrors:
        """``credprov._go.field_errors``, imported when a first error is built (a valid config
        never needs it: it costs start-up time)."""

        def __getattr__(self, name: str) -> object:
            from credprov._go import field_errors

            return getattr(field_errors, name)

    fe = _FieldErrors()

EXEC_API_VERSION_V1 = f"{EXEC_GROUP}/v1"

# Go builds both lists with sets.List, which sorts.
_SUPPORTED_API_VERSIONS = tuple(sorted(EXEC_API_VERSIONS))
_VALID_CACHE_TYPES = tuple(sorted((TOKEN_CACHE_TYPE_SERVICE_ACCOUNT, TOKEN_CACHE_TYPE_TOKEN)))

_PROVIDERS = "providers"
_TOKEN_ATTRIBUTES = f"{_PROVIDERS}.tokenAttributes"


def validate_credential_provider_config(
    config: CredentialProviderConfig, service_account_token_gate: bool = True
) -> list[fe.FieldError]:
    """Every problem with ``config``, in the kubelet's order.

    ``service_account_token_gate`` is the ``KubeletServiceAccountTokenForCredentialProviders``
    feature gate (beta and on by default since 1.34). Field paths carry no list index,
    exactly as upstream builds them.
    """
    errs: list[fe.FieldError] = []
    if not config.providers:
        errs.append(fe.required(_PROVIDERS, "at least 1 item in plugins is required"))

    seen_names: set[str] = set()
    for provider in config.providers:
        _validate_name(provider.name, seen_names, errs)
        seen_names.add(provider.name)
        _validate_exec_fields(provider, errs)
        if provider.token_attributes is not None:
            _validate_token_attributes(
                provider.token_attributes, provider.api_version, service_account_token_gate, errs
            )
    return errs


def _validate_name(name: str, seen: set[str], errs: list[fe.FieldError]) -> None:
    # The name becomes a path under the plugin bin dir, hence the path-safety checks.
    path = f"{_PROVIDERS}.name"
    if "/" in name:
        errs.append(fe.invalid(path, name, "provider name cannot contain '/'"))
    # Only U+0020: upstream uses strings.Contains(name, " "), not unicode.IsSpace.
    if " " in name:
        errs.append(fe.invalid(path, name, "provider name cannot contain spaces"))
    if name == ".":
        errs.append(fe.invalid(path, name, "provider name cannot be '.'"))
    if name == "..":
        errs.append(fe.invalid(path, name, "provider name cannot be '..'"))
    if name in seen:
        errs.append(fe.duplicate(path, name))


def _validate_exec_fields(provider: CredentialProvider, errs: list[fe.FieldError]) -> None:
    api_version_path = f"{_PROVIDERS}.apiVersion"
    if provider.api_version == "":
        errs.append(fe.required(api_version_path, ""))
    elif provider.api_version not in _SUPPORTED_API_VERSIONS:
        errs.append(
            fe.not_supported(api_version_path, provider.api_version, _SUPPORTED_API_VERSIONS)
        )

    match_images_path = f"{_PROVIDERS}.matchImages"
    if not provider.match_images:
        errs.append(fe.required(match_images_path, "at least 1 item in matchImages is required"))
    else:
        # Imported on use: config validation should not pull in the image-matching code
        # (and its imports) just to be loaded.
        from credprov._go.url import GoURLError
        from credprov.imageauth.matching import parse_schemeless_url

        for match_image in provider.match_images:
            try:
                parse_schemeless_url(match_image)
            except GoURLError as exc:
                errs.append(
                    fe.invalid(match_images_path, match_image, f"match image is invalid: {exc}")
                )

    duration_path = f"{_PROVIDERS}.defaultCacheDuration"
    duration = provider.default_cache_duration
    if duration is None:
        errs.append(fe.required(duration_path, ""))
    elif duration < 0:
        # The bad value is a *metav1.Duration, which json.Marshal writes as its string.
        errs.append(
            fe.invalid(
                duration_path,
                fe.GoJSONValue(format_duration(duration)),
                "must be greater than or equal to 0",
            )
        )


def _validate_token_attributes(
    attrs: ServiceAccountTokenAttributes,
    api_version: str,
    gate_enabled: bool,
    errs: list[fe.FieldError],
) -> None:
    if not gate_enabled:
        errs.append(
            fe.forbidden(
                _TOKEN_ATTRIBUTES,
                "tokenAttributes is not supported when "
                "KubeletServiceAccountTokenForCredentialProviders feature gate is disabled",
            )
        )
    if not attrs.service_account_token_audience:
        errs.append(fe.required(f"{_TOKEN_ATTRIBUTES}.serviceAccountTokenAudience", ""))
    if attrs.require_service_account is None:
        errs.append(fe.required(f"{_TOKEN_ATTRIBUTES}.requireServiceAccount", ""))
    if api_version != EXEC_API_VERSION_V1:
        errs.append(
            fe.forbidden(
                _TOKEN_ATTRIBUTES,
                f"tokenAttributes is only supported for {EXEC_API_VERSION_V1} API version",
            )
        )

    required_path = f"{_TOKEN_ATTRIBUTES}.requiredServiceAccountAnnotationKeys"
    optional_path = f"{_TOKEN_ATTRIBUTES}.optionalServiceAccountAnnotationKeys"
    required_keys = attrs.required_service_account_annotation_keys
    optional_keys = attrs.optional_service_account_annotation_keys
    if attrs.require_service_account is False and required_keys:
        errs.append(
            fe.forbidden(
                required_path,
                "requireServiceAccount cannot be false when "
                "requiredServiceAccountAnnotationKeys is set",
            )
        )
    errs.extend(_validate_annotation_keys(required_path, required_keys))
    errs.extend(_validate_annotation_keys(optional_path, optional_keys))

    both = sorted(set(required_keys) & set(optional_keys))
    if both:
        errs.append(
            fe.invalid(
                _TOKEN_ATTRIBUTES, both, "annotation keys cannot be both required and optional"
            )
        )

    cache_type_path = f"{_TOKEN_ATTRIBUTES}.cacheType"
    if not attrs.cache_type:
        errs.append(
            fe.required(
                cache_type_path,
                "cacheType is required to be set when tokenAttributes is specified. "
                f"Supported values are: {', '.join(_VALID_CACHE_TYPES)}",
            )
        )
    elif attrs.cache_type not in _VALID_CACHE_TYPES:
        # CacheType is a named string type, so ErrorBody marshals it as JSON, not %q.
        errs.append(
            fe.not_supported(cache_type_path, fe.GoJSONValue(attrs.cache_type), _VALID_CACHE_TYPES)
        )


def _validate_annotation_keys(path: str, keys: Sequence[str]) -> list[fe.FieldError]:
    errs: list[fe.FieldError] = []
    seen: set[str] = set()
    for key in keys:
        # Annotation keys are qualified names except that case does not matter, as in
        # ObjectMeta validation; the error still shows the key as written.
        for msg in is_qualified_name(_go_to_lower(key)):
            errs.append(fe.invalid(path, key, msg))
        # Duplicates are exact matches: keys differing only in case are both kept.
        if key in seen:
            errs.append(fe.duplicate(path, key))
        seen.add(key)
    return errs


# --- apimachinery qualified names ---------------------------------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_KEY_MAX_LENGTH = 63

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_LABEL_KEY_INNER = _ALNUM | frozenset("-_.")
_LOWER_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_DNS_LABEL_INNER = _LOWER_ALNUM | frozenset("-")


def is_qualified_name(value: str) -> list[str]:
    """apimachinery ``IsQualifiedName``: the reasons ``value`` is not a qualified name.

    A qualified name is an optional DNS-1123 subdomain prefix and ``/`` followed by a name
    of at most 63 bytes. An empty list means valid.
    """
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part " + _empty_error())
        else:
            errs.extend("prefix part " + msg for msg in _is_dns1123_subdomain(prefix))

    if not name:
        errs.append("name part " + _empty_error())
    elif _byte_len(name) > _LABEL_KEY_MAX_LENGTH:
        errs.append("name part " + _max_len_error(_LABEL_KEY_MAX_LENGTH))
    if not _is_label_key_name(name):
        errs.append(
            "name part "
            + _regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


_DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_MAX_LENGTH = 63


def is_dns1123_label(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Label`` (a namespace's name, ``NameIsDNSLabel``): the
    reasons ``value`` is not one; an empty list means valid."""
    errs: list[str] = []
    if _byte_len(value) > _DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_error(_DNS1123_LABEL_MAX_LENGTH))
    if not _is_dns1123_label(value):
        errs.append(_regex_error(_DNS1123_LABEL_ERR, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Subdomain`` (most objects' names, ``NameIsDNSSubdomain``: a
    service account's): the reasons ``value`` is not one; an empty list means valid."""
    return _is_dns1123_subdomain(value)


def _is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > _DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(_DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not all(_is_dns1123_label(label) for label in value.split(".")):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


# Hand-written matchers equal to the anchored regexes: linear time on any input, where a
# backtracking engine on these patterns is not.
def _is_label_key_name(s: str) -> bool:
    return (
        bool(s)
        and s[0] in _ALNUM
        and s[-1] in _ALNUM
        and all(c in _LABEL_KEY_INNER for c in s[1:-1])
    )


def _is_dns1123_label(s: str) -> bool:
    return (
        bool(s)
        and s[0] in _LOWER_ALNUM
        and s[-1] in _LOWER_ALNUM
        and all(c in _DNS_LABEL_INNER for c in s[1:-1])
    )


def _empty_error() -> str:
    return "must be non-empty"


def _max_len_error(length: int) -> str:
    # Go's len() counts bytes, and newer apimachinery says so in the message.
    return f"must be no more than {length} bytes"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # The stray double spaces (", " then " or ") are upstream's and must be kept.
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = [f"'{example}', " for example in examples]
    return f"{msg} (e.g. {' or '.join(parts)}regex used for validation is '{fmt}')"


def _byte_len(s: str) -> int:
    """Go's ``len``: UTF-8 bytes, where an escaped non-UTF-8 byte counts as one."""
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return sum(
            1 if 0xDC80 <= ord(c) <= 0xDCFF else len(c.encode("utf-8", "surrogatepass")) for c in s
        )


def _go_to_lower(s: str) -> str:
    """``strings.ToLower``: per-rune simple case mapping, not Python's full mapping."""
    if s.isascii():
        return s.lower()
    out = []
    for ch in s:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            # Bytes that are not UTF-8 come back as U+FFFD, one per byte.
            out.append("\ufffd" * (1 if 0xDC80 <= code <= 0xDCFF else 3))
            continue
        lowered = ch.lower()
        # Only U+0130 has a multi-rune full lowercase; its simple mapping is plain 'i'.
        out.append(lowered if len(lowered) == 1 else "i")
    return "".join(out)
