"""The kubelet's credential provider scheme, and its ``UniversalDecoder().Decode``.

``pkg/credentialprovider/plugin/plugin.go`` builds one ``runtime.Scheme`` and decodes both the
config files (``decode`` in ``config.go``) and plugin responses (``decodeResponse``) with
``serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()``. What that
decoder does depends on what the scheme registers, by group, version and kind:

* ``kubelet.config.k8s.io``: ``v1alpha1`` CredentialProviderConfig, ImagePullIntent,
  ImagePulledRecord; ``v1beta1`` those and KubeletConfiguration, SerializedNodeConfigSource;
  ``v1`` CredentialProviderConfig; ``__internal`` the v1beta1 kinds as the internal Go types
  (``pkg/kubelet/apis/config/register.go``).
* ``credentialprovider.kubelet.k8s.io``: CredentialProviderRequest and -Response in
  ``v1alpha1``, ``v1beta1``, ``v1`` and ``__internal``; ``metav1.AddToGroupVersion`` adds
  WatchEvent and the options kinds to the external versions and WatchEvent
  (``metav1.InternalEvent``) to ``__internal`` (see :mod:`credprov.api.meta`).
* Any group and version: the unversioned Status, APIVersions, APIGroupList, APIGroup and
  APIResourceList (``Scheme.New`` falls back to them by kind name).

The kubelet config register files do not call ``AddToGroupVersion``: ``WatchEvent`` there is
unregistered. Internal Go types have no JSON tags (``VerifyInternalTypePackage`` enforces it),
so an ``__internal`` document spells its fields as Go does (``Providers``, ``MatchImages``,
``APIVersion``), case-sensitively, while ``kind`` and ``apiVersion`` keep their names (they
come from the embedded ``metav1.TypeMeta``).

:func:`decode` follows ``versioning.codec.Decode``: ``Scheme.New`` (or "not registered"),
strict decoding (type errors first, strict errors kept), then ``ConvertToVersion`` to the
internal version: its error replaces any strict error; on success the strict error, if any,
is returned. Nothing is defaulted (no defaulting function is registered for these types), and
an internal document is used as it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from credprov._go.decode import (
    DecodeError,
    Document,
    Map,
    Ptr,
    Scalar,
    Slice,
    Spec,
    StrictDecodingError,
    Struct,
    decode_typed,
    group_version_string,
    interpret_gvk,
)
from credprov._go.fmt import go_quote
from credprov.api import internal, meta
from credprov.api.specs import config_spec, exec_spec, pull_record_spec

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any

#: ``runtime.NewScheme()`` names a scheme after its call site; the kubelet's is in
#: ``plugin.go`` (line 69 in the newest source; ``-trimpath`` builds drop the module prefix).
SCHEME_NAME = "pkg/credentialprovider/plugin/plugin.go:69"
INTERNAL_VERSION = "__internal"

#: Kubelet config kinds per version. Decoding any but ``CredentialProviderConfig`` as a
#: provider config is "wrong Kind", after the kind's own type and strict decoding errors,
#: which come first: those of ``ImagePullIntent`` and ``ImagePulledRecord`` (external
#: versions) are reproduced (:func:`credprov.api.specs.pull_record_spec`); the other types
#: (``KubeletConfiguration``, ``SerializedNodeConfigSource``, internal versions) are not
#: modelled, so theirs are not. The external
#: lists are the kubelet staging repository's at its newest (the source index here holds only
#: older register.go blobs, with CredentialProviderConfig alone in v1alpha1); test data in
#: kubernetes/kubernetes already has an ImagePreloadedRecord kind that no released
#: register.go adds yet, so it is left out.
CONFIG_KINDS: dict[str, frozenset[str]] = {
    "v1alpha1": frozenset({"CredentialProviderConfig", "ImagePullIntent", "ImagePulledRecord"}),
    "v1beta1": frozenset(
        {
            "KubeletConfiguration",
            "SerializedNodeConfigSource",
            "CredentialProviderConfig",
            "ImagePullIntent",
            "ImagePulledRecord",
        }
    ),
    "v1": frozenset({"CredentialProviderConfig"}),
    INTERNAL_VERSION: frozenset(
        {
            "KubeletConfiguration",
            "SerializedNodeConfigSource",
            "CredentialProviderConfig",
            "ImagePullIntent",
            "ImagePulledRecord",
        }
    ),
}
EXEC_KINDS = frozenset({internal.REQUEST_KIND, internal.RESPONSE_KIND})
_PULL_KINDS = frozenset({"ImagePullIntent", "ImagePulledRecord"})
_INTERNAL_PACKAGE = {internal.CONFIG_GROUP: "config", internal.EXEC_GROUP: "credentialprovider"}


@dataclass(frozen=True)
class Decoded:
    """A document the scheme decoded and converted to the internal version.

    ``data`` holds the fields of a ``CredentialProviderConfig``, ``CredentialProviderRequest``
    or ``CredentialProviderResponse`` under their versioned (JSON) names, whatever version the
    document was in; it is ``None`` for every other kind.
    """

    group: str
    version: str
    kind: str
    data: dict[str, Any] | None


@dataclass(frozen=True)
class _Type:
    spec: Struct | None  # None: a kubelet type credprov does not model
    go_names: bool = False  # an internal type: fields decode under their Go names
    prepare: bool = False  # a meta type: integers and RawExtension need meta.prepare()
    convert_error: str | None = None  # ConvertToVersion(obj, internal) fails with this
    keep: bool = False  # a credential provider type: return its data


def decode(doc: Document) -> Decoded:
    """``UniversalDecoder().Decode(data, nil, nil)`` of the kubelet's scheme.

    Raises:
        DecodeError: apimachinery's text: missing kind or version, ``no kind ... is
            registered ...``, a type or duration error, a strict decoding error, or a
            conversion error.
    """
    group, version, kind = interpret_gvk(doc)
    target = _new(group, version, kind)
    data = None
    if target.spec is not None:
        source = meta.prepare(target.spec, doc) if target.prepare else doc
        try:
            data = decode_typed(target.spec, source)
        except StrictDecodingError:
            if target.convert_error is None:
                raise
    if target.convert_error is not None:
        raise DecodeError(target.convert_error)
    if not target.keep or data is None:
        return Decoded(group, version, kind, None)
    if target.go_names:
        data = _json_named(_versioned_spec(group, "v1", kind), data)
    return Decoded(group, version, kind, data)


def _new(group: str, version: str, kind: str) -> _Type:
    """``Scheme.New``: the Go type for a group/version/kind (registered kinds first, then
    unversioned kinds by name), and what converting it to the internal version does."""
    if group == internal.CONFIG_GROUP and kind in CONFIG_KINDS.get(version, ()):
        if kind in _PULL_KINDS and version != INTERNAL_VERSION:
            return _Type(pull_record_spec(kind, version))
        if kind != internal.CONFIG_KIND:
            return _Type(None)
        return _credential_provider_type(group, version, kind)
    if group == internal.EXEC_GROUP and version in (*internal.EXEC_VERSIONS, INTERNAL_VERSION):
        if kind in EXEC_KINDS:
            return _credential_provider_type(group, version, kind)
        if kind == meta.WATCH_EVENT_KIND:
            if version == INTERNAL_VERSION:
                return _Type(meta.INTERNAL_EVENT)
            # Converts to InternalEvent through the metav1 conversion functions.
            return _Type(meta.WATCH_EVENT, prepare=True)
        if kind in meta.OPTIONS and version != INTERNAL_VERSION:
            # Registered only in the external versions: there is no internal type to
            # convert to, so ConvertToVersion's Scheme.New fails.
            return _Type(
                meta.OPTIONS[kind],
                prepare=True,
                convert_error=_not_registered(group, INTERNAL_VERSION, kind),
            )
    if kind in meta.UNVERSIONED:
        return _Type(meta.UNVERSIONED[kind], prepare=True)  # unversioned: no conversion
    raise DecodeError(_not_registered(group, version, kind))


def _credential_provider_type(group: str, version: str, kind: str) -> _Type:
    if version == INTERNAL_VERSION:
        return _Type(_internal_spec(group, kind), go_names=True, keep=True)
    return _Type(_versioned_spec(group, version, kind), keep=True)


def _not_registered(group: str, version: str, kind: str) -> str:
    """``runtime.notRegisteredErr`` for a kind."""
    if version == INTERNAL_VERSION:
        where = f"the internal version of group {go_quote(group)}"
    else:
        where = f"version {go_quote(group_version_string(group, version))}"
    return f'no kind {go_quote(kind)} is registered for {where} in scheme "{SCHEME_NAME}"'


def _versioned_spec(group: str, version: str, kind: str) -> Struct:
    if group == internal.CONFIG_GROUP:
        return config_spec(version)
    return exec_spec(kind, version)


# -- internal types: the v1 fields under their Go names ----------------------------------------


def go_field_name(json_name: str) -> str:
    """The Go field behind a versioned JSON name (``apiVersion`` -> ``APIVersion``)."""
    if json_name.startswith("api"):
        return "API" + json_name[3:]
    return json_name[:1].upper() + json_name[1:]


@functools.cache
def _internal_spec(group: str, kind: str) -> Struct:
    """The internal Go type of ``kind``: exactly the v1 type's fields, untagged, in the
    internal package (``config.CredentialProvider``, ``credentialprovider.AuthConfig``)."""
    return _go_named_struct(_versioned_spec(group, "v1", kind), _INTERNAL_PACKAGE[group], True)


def _go_named_struct(spec: Struct, pkg: str, top: bool = False) -> Struct:
    fields = {_go_key(name, top): _go_named(field, pkg) for name, field in spec.fields.items()}
    return Struct(spec.name, pkg, fields)


def _go_key(json_name: str, top: bool) -> str:
    # The embedded metav1.TypeMeta keeps its tags: kind and apiVersion at the top level.
    return json_name if top and json_name in ("kind", "apiVersion") else go_field_name(json_name)


def _go_named(spec: Spec, pkg: str) -> Spec:
    if isinstance(spec, Struct):
        return _go_named_struct(spec, pkg)
    if isinstance(spec, Scalar) and "." in spec.go_name:
        return Scalar(spec.kind, f"{pkg}.{spec.go_name.split('.', 1)[1]}")
    if isinstance(spec, Ptr):
        return Ptr(_go_named(spec.elem, pkg))
    if isinstance(spec, Slice):
        return Slice(_go_named(spec.elem, pkg))
    if isinstance(spec, Map):
        return Map(_go_named(spec.elem, pkg))
    return spec  # plain scalars and metav1.Duration are the same Go types


def _json_named(spec: Spec, value: Any, top: bool = True) -> Any:
    """Decoded internal data re-keyed by the versioned JSON names of ``spec``."""
    if isinstance(spec, Struct) and isinstance(value, dict):
        out = {}
        for name, field in spec.fields.items():
            key = _go_key(name, top)
            if key in value:
                out[name] = _json_named(field, value[key], top=False)
        return out
    if isinstance(spec, Ptr):
        return _json_named(spec.elem, value, top=False)
    if isinstance(spec, Slice) and isinstance(value, list):
        return [_json_named(spec.elem, item, top=False) for item in value]
    if isinstance(spec, Map) and isinstance(value, dict):
        return {k: _json_named(spec.elem, v, top=False) for k, v in value.items()}
    return value
