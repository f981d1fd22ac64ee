"""The ``meta.k8s.io/v1`` types that ``metav1.AddToGroupVersion`` puts in the kubelet's scheme.

The exec API's register files (``credentialprovider/{v1alpha1,v1beta1,v1}/register.go``) call
``metav1.AddToGroupVersion`` for their group version, so the kubelet's scheme can build, and
strictly decode into, these Go types as well as the credential provider ones:

* ``WatchEvent`` in each exec version (``metav1.WatchEvent``: ``type`` and a
  ``runtime.RawExtension`` ``object``, and *no* ``kind``/``apiVersion`` fields), and in the
  exec group's ``__internal`` version (``metav1.InternalEvent``: Go field names ``Type`` and
  ``Object``, the latter a ``runtime.Object`` interface that only JSON null decodes into);
* the options types ``ListOptions``, ``GetOptions``, ``DeleteOptions``, ``CreateOptions``,
  ``UpdateOptions``, ``PatchOptions`` in each exec version;
* the *unversioned* ``Status``, ``APIVersions``, ``APIGroupList``, ``APIGroup`` and
  ``APIResourceList``, which ``Scheme.New`` builds for *any* group and version.

Fields follow ``apimachinery/pkg/apis/meta/v1/types.go`` as of Kubernetes 1.34 (the source
index here holds only older blobs of that file; DeleteOptions' newest field,
``ignoreStoreReadErrorWithClusterBreakingPotential``, was checked against its OpenAPI schema).

Integers and ``InternalEvent.Object`` are :mod:`credprov._go.decode`'s ``int`` and ``object``
scalar kinds: an integer field takes an integral JSON number in range and names any other by
its literal (``cannot unmarshal number 1.5 into ... of type int32``), and a ``runtime.Object``
takes only null. ``runtime.RawExtension`` keeps any JSON value unchecked, so :func:`prepare`
sets those values to null before strict decoding (null is accepted by every field and
changes no strict or duplicate-field error).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from credprov._go.decode import BOOL, STRING, Document, Map, Ptr, Scalar, Slice, Spec, Struct

TYPE_CHECKING = False  # typing costs start-up; the annotations need it only when checked
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class _NamedSlice(Slice):
    """A defined slice type (``type Verbs []string``): errors name the type, not ``[]string``."""

    name: str = ""

    @property
    def go_type(self) -> str:
        return self.name


# A RawExtension is modelled by a spec whose values prepare() turns into null first.
INT32 = Scalar("int", "int32")
INT64 = Scalar("int", "int64")
RAW_EXTENSION = Ptr(Scalar("string", "runtime.RawExtension"))
_RUNTIME_OBJECT = Scalar("object", "runtime.Object")  # null only; other JSON kinds fail

_TYPE_META: dict[str, Spec] = {"kind": STRING, "apiVersion": STRING}
_UID = Scalar("string", "types.UID")


def _v1(name: str, fields: dict[str, Spec], type_meta: bool = True) -> Struct:
    return Struct(name, "v1", {**_TYPE_META, **fields} if type_meta else fields)


_LIST_META = _v1(
    "ListMeta",
    {
        "selfLink": STRING,
        "resourceVersion": STRING,
        "continue": STRING,
        "remainingItemCount": Ptr(INT64),
    },
    type_meta=False,
)
_STATUS_CAUSE = _v1(
    "StatusCause",
    {"reason": Scalar("string", "v1.CauseType"), "message": STRING, "field": STRING},
    type_meta=False,
)
_STATUS_DETAILS = _v1(
    "StatusDetails",
    {
        "name": STRING,
        "group": STRING,
        "kind": STRING,
        "uid": _UID,
        "causes": Slice(_STATUS_CAUSE),
        "retryAfterSeconds": INT32,
    },
    type_meta=False,
)
_SERVER_ADDRESS = _v1(
    "ServerAddressByClientCIDR", {"clientCIDR": STRING, "serverAddress": STRING}, type_meta=False
)
_GROUP_VERSION = _v1(
    "GroupVersionForDiscovery", {"groupVersion": STRING, "version": STRING}, type_meta=False
)
_API_GROUP = _v1(
    "APIGroup",
    {
        "name": STRING,
        "versions": Slice(_GROUP_VERSION),
        "preferredVersion": _GROUP_VERSION,
        "serverAddressByClientCIDRs": Slice(_SERVER_ADDRESS),
    },
)
_API_RESOURCE = _v1(
    "APIResource",
    {
        "name": STRING,
        "singularName": STRING,
        "namespaced": BOOL,
        "group": STRING,
        "version": STRING,
        "kind": STRING,
        "verbs": _NamedSlice(STRING, "v1.Verbs"),
        "shortNames": Slice(STRING),
        "categories": Slice(STRING),
        "storageVersionHash": STRING,
    },
    type_meta=False,
)

#: Registered with ``AddUnversionedTypes(Unversioned, ...)``: ``Scheme.New`` falls back to
#: these by kind name alone, whatever the group and version.
UNVERSIONED: dict[str, Struct] = {
    "Status": _v1(
        "Status",
        {
            "metadata": _LIST_META,
            "status": STRING,
            "message": STRING,
            "reason": Scalar("string", "v1.StatusReason"),
            "details": Ptr(_STATUS_DETAILS),
            "code": INT32,
        },
    ),
    "APIVersions": _v1(
        "APIVersions",
        {"versions": Slice(STRING), "serverAddressByClientCIDRs": Slice(_SERVER_ADDRESS)},
    ),
    "APIGroupList": _v1("APIGroupList", {"groups": Slice(_API_GROUP)}),
    "APIGroup": _API_GROUP,
    "APIResourceList": _v1(
        "APIResourceList", {"groupVersion": STRING, "resources": Slice(_API_RESOURCE)}
    ),
}

_DRY_RUN_AND_MANAGER: dict[str, Spec] = {
    "dryRun": Slice(STRING),
    "fieldManager": STRING,
    "fieldValidation": STRING,
}

#: ``optionsTypes``, registered in every group version given to ``AddToGroupVersion``.
OPTIONS: dict[str, Struct] = {
    "ListOptions": _v1(
        "ListOptions",
        {
            "labelSelector": STRING,
            "fieldSelector": STRING,
            "watch": BOOL,
            "allowWatchBookmarks": BOOL,
            "resourceVersion": STRING,
            "resourceVersionMatch": Scalar("string", "v1.ResourceVersionMatch"),
            "timeoutSeconds": Ptr(INT64),
            "limit": INT64,
            "continue": STRING,
            "sendInitialEvents": Ptr(BOOL),
        },
    ),
    "GetOptions": _v1("GetOptions", {"resourceVersion": STRING}),
    "DeleteOptions": _v1(
        "DeleteOptions",
        {
            "gracePeriodSeconds": Ptr(INT64),
            "preconditions": Ptr(
                _v1(
                    "Preconditions",
                    {"uid": Ptr(_UID), "resourceVersion": Ptr(STRING)},
                    type_meta=False,
                )
            ),
            "orphanDependents": Ptr(BOOL),
            "propagationPolicy": Ptr(Scalar("string", "v1.DeletionPropagation")),
            "dryRun": Slice(STRING),
            "ignoreStoreReadErrorWithClusterBreakingPotential": Ptr(BOOL),
        },
    ),
    "CreateOptions": _v1("CreateOptions", _DRY_RUN_AND_MANAGER),
    "UpdateOptions": _v1("UpdateOptions", _DRY_RUN_AND_MANAGER),
    "PatchOptions": _v1(
        "PatchOptions",
        {
            "dryRun": Slice(STRING),
            "force": Ptr(BOOL),
            "fieldManager": STRING,
            "fieldValidation": STRING,
        },
    ),
}

WATCH_EVENT_KIND = "WatchEvent"
#: ``metav1.WatchEvent``: no TypeMeta, so a document's own ``kind`` and ``apiVersion`` are
#: unknown fields to it.
WATCH_EVENT = _v1("WatchEvent", {"type": STRING, "object": RAW_EXTENSION}, type_meta=False)
#: ``metav1.InternalEvent`` (``watch.Event``): untagged Go fields, registered as ``WatchEvent``
#: in the ``__internal`` version of every group given to ``AddToGroupVersion``.
INTERNAL_EVENT = _v1(
    "InternalEvent",
    {"Type": Scalar("string", "watch.EventType"), "Object": _RUNTIME_OBJECT},
    type_meta=False,
)


def prepare(spec: Struct, doc: Document) -> Document:
    """``doc`` with every value of a RawExtension field set to null.

    Only the meta types above need this; the document itself is left unchanged.
    """
    data = copy.deepcopy(doc.data)
    return Document(_neutralise(spec, data), doc.original, doc.strict_errors)


def _neutralise(spec: Spec, value: Any) -> Any:
    if value is None:
        return None
    if spec == RAW_EXTENSION:
        return None  # RawExtension.UnmarshalJSON keeps any JSON value, unchecked
    if isinstance(spec, Ptr):
        return _neutralise(spec.elem, value)
    if isinstance(spec, Slice) and isinstance(value, list):
        return [_neutralise(spec.elem, item) for item in value]
    if isinstance(spec, Map | Struct) and isinstance(value, dict):
        pairs = getattr(value, "pairs", None)
        items = list(pairs if pairs is not None else value.items())
        out = []
        for key, item in items:
            field = spec.elem if isinstance(spec, Map) else spec.fields.get(key)
            out.append((key, item if field is None else _neutralise(field, item)))
        value.clear()
        value.update(out)
        if pairs is not None:
            value.pairs = out  # type: ignore[attr-defined]  # the parser's duplicate-keeping dict
        return value
    return value
