"""``kubelet.config.k8s.io`` ``CredentialProviderConfig``: v1alpha1, v1beta1 and v1.

Mirrors ``kubernetes/kubelet:config/{v1alpha1,v1beta1,v1}/types.go``: the three versions
are identical except that v1 adds ``tokenAttributes`` (KEP-4412), which is an unknown field
in the older two. There is no defaulting. :func:`decode_config` decodes whatever the
kubelet's scheme decodes (:mod:`credprov.api.scheme`), ``kubelet.config.k8s.io/__internal``
documents with Go field names included, and returns the internal form.
"""

from __future__ import annotations

import functools

from credprov._go.decode import (
    DecodeError,
    Document,
)
from credprov._go.durations import DurationError, format_duration, parse_duration
from credprov._go.fmt import go_quote
from credprov.api import internal, scheme

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any, ClassVar

#: The pydantic models of the wire types, by name, built on first use (importing pydantic
#: and building the models costs about 100 ms, which the CLI and the engine must not pay
#: on every start): ``credprov.api.config.CredentialProviderConfigV1`` etc. still work.
#: Decoding does not need them: ``decode_typed`` already applies the kubelet's strict
#: decoding with its exact errors, and :func:`decode_config` builds the internal form from
#: its output. ``validate_with_models`` runs the models over the same data (tests check
#: that both agree).
_MODEL_NAMES = frozenset(
    (
        "ExecEnvVar",
        "ServiceAccountTokenAttributes",
        "CredentialProviderV1beta1",
        "CredentialProviderV1",
        "CredentialProviderConfigV1alpha1",
        "CredentialProviderConfigV1beta1",
        "CredentialProviderConfigV1",
        "_MODELS",
    )
)


@functools.cache
def _models() -> dict[str, Any]:
    from pydantic import BaseModel, ConfigDict, Field

    _STRICT = ConfigDict(extra="forbid", strict=True, populate_by_name=False, frozen=True)

    class ExecEnvVar(BaseModel):
        model_config = _STRICT
        name: str | None = None
        value: str | None = None

    class ServiceAccountTokenAttributes(BaseModel):
        model_config = _STRICT
        service_account_token_audience: str | None = Field(
            None, alias="serviceAccountTokenAudience"
        )
        cache_type: str | None = Field(None, alias="cacheType")
        require_service_account: bool | None = Field(None, alias="requireServiceAccount")
        required_service_account_annotation_keys: list[str] | None = Field(
            None, alias="requiredServiceAccountAnnotationKeys"
        )
        optional_service_account_annotation_keys: list[str] | None = Field(
            None, alias="optionalServiceAccountAnnotationKeys"
        )

    class CredentialProviderV1beta1(BaseModel):
        """A provider in v1alpha1 and v1beta1 (no ``tokenAttributes``)."""

        model_config = _STRICT
        name: str | None = None
        match_images: list[str] | None = Field(None, alias="matchImages")
        default_cache_duration: str | None = Field(None, alias="defaultCacheDuration")
        api_version: str | None = Field(None, alias="apiVersion")
        args: list[str] | None = None
        env: list[ExecEnvVar] | None = None

    class CredentialProviderV1(CredentialProviderV1beta1):
        token_attributes: ServiceAccountTokenAttributes | None = Field(
            None, alias="tokenAttributes"
        )

    class _ConfigBase(BaseModel):
        model_config = _STRICT
        kind: str | None = None
        api_version: str | None = Field(None, alias="apiVersion")

    class CredentialProviderConfigV1alpha1(_ConfigBase):
        providers: list[CredentialProviderV1beta1] | None = None

    class CredentialProviderConfigV1beta1(_ConfigBase):
        providers: list[CredentialProviderV1beta1] | None = None

    class CredentialProviderConfigV1(_ConfigBase):
        providers: list[CredentialProviderV1] | None = None

    _MODELS: dict[str, type[_ConfigBase]] = {
        "v1alpha1": CredentialProviderConfigV1alpha1,
        "v1beta1": CredentialProviderConfigV1beta1,
        "v1": CredentialProviderConfigV1,
    }
    models = {name: value for name, value in locals().items() if name in _MODEL_NAMES}
    for name, model in models.items():
        if isinstance(model, type):
            model.__qualname__ = name
    return models


def __getattr__(name: str) -> Any:
    if name in _MODEL_NAMES:
        return _models()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _duration(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except DurationError as exc:  # pragma: no cover - decode_typed checked it already
        raise DecodeError(str(exc)) from None


def decode_config(doc: Document) -> internal.CredentialProviderConfig:
    """Decode a parsed document as the kubelet's ``decode()`` in ``config.go`` does.

    Any version the scheme knows is accepted, ``kubelet.config.k8s.io/__internal`` (Go field
    names) included; the result is not defaulted.

    Raises:
        DecodeError: with the kubelet's text (missing kind, unregistered kind, strict
            decoding errors, type errors, bad durations, wrong kind).
    """
    decoded = scheme.decode(doc)
    if decoded.kind != internal.CONFIG_KIND:
        raise DecodeError(f"failed to decode {go_quote(decoded.kind)} (wrong Kind)")
    if decoded.group != internal.CONFIG_GROUP:  # no other group registers the kind
        raise DecodeError(
            f"failed to decode CredentialProviderConfig, unexpected Group: {decoded.group}"
        )
    return _to_internal(_Fields.wrap(_drop_none(decoded.data or {})))


def validate_with_models(doc: Document) -> internal.CredentialProviderConfig:
    """``decode_config`` through the pydantic models (imports pydantic; for tests)."""
    decode_config(doc)  # the kubelet's checks and errors first
    decoded = scheme.decode(doc)
    models = _models()["_MODELS"]
    model = models.get(decoded.version, models["v1"])  # the internal type has v1's fields
    return _to_internal(model.model_validate(_drop_none(decoded.data or {})))


class _Fields:
    """Attribute access to a decoded dict by the models' field names (``match_images``),
    so :func:`_to_internal` reads decoded data and validated models alike."""

    __slots__ = ("_data",)
    _ALIASES: ClassVar[dict[str, str]] = {
        "match_images": "matchImages",
        "default_cache_duration": "defaultCacheDuration",
        "api_version": "apiVersion",
        "token_attributes": "tokenAttributes",
        "service_account_token_audience": "serviceAccountTokenAudience",
        "cache_type": "cacheType",
        "require_service_account": "requireServiceAccount",
        "required_service_account_annotation_keys": "requiredServiceAccountAnnotationKeys",
        "optional_service_account_annotation_keys": "optionalServiceAccountAnnotationKeys",
    }

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @classmethod
    def wrap(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return cls(value)
        if isinstance(value, list):
            return [cls.wrap(v) for v in value]
        return value

    def __getattr__(self, name: str) -> Any:
        return _Fields.wrap(self._data.get(self._ALIASES.get(name, name)))


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _to_internal(obj: Any) -> internal.CredentialProviderConfig:
    providers = []
    for p in obj.providers or ():
        ta = getattr(p, "token_attributes", None)
        token_attributes = None
        if ta is not None:
            token_attributes = internal.ServiceAccountTokenAttributes(
                service_account_token_audience=ta.service_account_token_audience or "",
                cache_type=ta.cache_type or "",
                require_service_account=ta.require_service_account,
                required_service_account_annotation_keys=tuple(
                    ta.required_service_account_annotation_keys or ()
                ),
                optional_service_account_annotation_keys=tuple(
                    ta.optional_service_account_annotation_keys or ()
                ),
            )
        providers.append(
            internal.CredentialProvider(
                name=p.name or "",
                match_images=tuple(p.match_images or ()),
                default_cache_duration=_duration(p.default_cache_duration),
                api_version=p.api_version or "",
                args=tuple(p.args or ()),
                env=tuple(internal.ExecEnvVar(e.name or "", e.value or "") for e in p.env or ()),
                token_attributes=token_attributes,
            )
        )
    return internal.CredentialProviderConfig(providers=tuple(providers))


def provider_to_dict(p: internal.CredentialProvider) -> dict[str, Any]:
    """The v1 wire form of one provider (for ``config validate -o json``)."""
    out: dict[str, Any] = {
        "name": p.name,
        "matchImages": list(p.match_images),
        "defaultCacheDuration": (
            format_duration(p.default_cache_duration)
            if p.default_cache_duration is not None
            else None
        ),
        "apiVersion": p.api_version,
    }
    if p.args:
        out["args"] = list(p.args)
    if p.env:
        out["env"] = [{"name": e.name, "value": e.value} for e in p.env]
    ta = p.token_attributes
    if ta is not None:
        attrs: dict[str, Any] = {
            "serviceAccountTokenAudience": ta.service_account_token_audience,
            "cacheType": ta.cache_type,
            "requireServiceAccount": ta.require_service_account,
        }
        if ta.required_service_account_annotation_keys:
            attrs["requiredServiceAccountAnnotationKeys"] = list(
                ta.required_service_account_annotation_keys
            )
        if ta.optional_service_account_annotation_keys:
            attrs["optionalServiceAccountAnnotationKeys"] = list(
                ta.optional_service_account_annotation_keys
            )
        out["tokenAttributes"] = attrs
    return out
