"""The cluster objects credprov reads, typed as the API server decodes them.

An objects file (``--objects``) or a Pod file holds what ``kubectl get`` printed: objects
the API server stored. The API server decodes a request body into the API's Go types
(``k8s.io/api`` ``core/v1`` and ``rbac/v1``) with apimachinery's JSON serializer, leniently
(an unknown field is dropped) but with Go's types: a field that is an ``int32`` takes no
string and no number outside its range, a ``bool`` no string. An object such a decoding
refuses was never stored, so credprov refuses it with the API server's words
(``handlers.transformDecodeError``): ``Pod in version "v1" cannot be handled as a Pod: json:
cannot unmarshal number 1e+40 into Go struct field PodSpec.spec.priority of type int32``.

:data:`SPECS` types the fields credprov reads from Pods, Secrets, ServiceAccounts, Nodes and
the RBAC objects (and the integer and boolean fields beside them in the same structs); a
field left out is not checked (as an unknown field would not be). Not reproduced: where in
a ``Secret``'s ``data`` value that is not base64 the decoder stops (credprov names the first
byte outside the alphabet, or the end), ``metav1.Time``'s RFC 3339 text,
``resource.Quantity``. Checked against apimachinery-style decoding into mirrored Go types by
``tests/differential/test_typed_diff.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from credprov._go.decode import (
    BOOL,
    STRING,
    Bytes,
    DecodeError,
    Document,
    Map,
    Ptr,
    Scalar,
    Slice,
    Spec,
    Struct,
    Time,
    decode_typed,
)

__all__ = ["SPECS", "decode_object"]

_INT32 = Scalar("int", "int32")
_INT64 = Scalar("int", "int64")
_UID = Scalar("string", "types.UID")


def _v1(name: str, fields: dict[str, Spec]) -> Struct:
    return Struct(name, "v1", fields)


def _typed(name: str) -> Scalar:
    """A defined string type of ``core/v1`` (``v1.PullPolicy``)."""
    return Scalar("string", f"v1.{name}")


_OWNER = Struct(
    "OwnerReference",
    "v1",
    {
        "apiVersion": STRING,
        "kind": STRING,
        "name": STRING,
        "uid": _UID,
        "controller": Ptr(BOOL),
        "blockOwnerDeletion": Ptr(BOOL),
    },
)
_META = Struct(
    "ObjectMeta",
    "v1",
    {
        "name": STRING,
        "generateName": STRING,
        "namespace": STRING,
        "uid": _UID,
        "resourceVersion": STRING,
        "generation": _INT64,
        "creationTimestamp": Time(),
        "deletionTimestamp": Ptr(Time()),
        "deletionGracePeriodSeconds": Ptr(_INT64),
        "labels": Map(STRING),
        "annotations": Map(STRING),
        "ownerReferences": Slice(_OWNER),
        "finalizers": Slice(STRING),
    },
)
_LOCAL_REF = _v1("LocalObjectReference", {"name": STRING})
_KEY_TO_PATH = _v1("KeyToPath", {"key": STRING, "path": STRING, "mode": Ptr(_INT32)})


def _container(name: str, extra: dict[str, Spec] | None = None) -> Struct:
    port = _v1(
        "ContainerPort",
        {
            "name": STRING,
            "hostPort": _INT32,
            "containerPort": _INT32,
            "protocol": _typed("Protocol"),
            "hostIP": STRING,
        },
    )
    return _v1(
        name,
        {
            "name": STRING,
            "image": STRING,
            "command": Slice(STRING),
            "args": Slice(STRING),
            "workingDir": STRING,
            "ports": Slice(port),
            "imagePullPolicy": _typed("PullPolicy"),
            "stdin": BOOL,
            "stdinOnce": BOOL,
            "tty": BOOL,
            "terminationMessagePath": STRING,
            **(extra or {}),
        },
    )


_VOLUME = _v1(
    "Volume",
    {
        "name": STRING,
        "secret": Ptr(
            _v1(
                "SecretVolumeSource",
                {
                    "secretName": STRING,
                    "items": Slice(_KEY_TO_PATH),
                    "defaultMode": Ptr(_INT32),
                    "optional": Ptr(BOOL),
                },
            )
        ),
        "configMap": Ptr(
            _v1(
                "ConfigMapVolumeSource",
                {
                    "name": STRING,
                    "items": Slice(_KEY_TO_PATH),
                    "defaultMode": Ptr(_INT32),
                    "optional": Ptr(BOOL),
                },
            )
        ),
        "persistentVolumeClaim": Ptr(
            _v1("PersistentVolumeClaimVolumeSource", {"claimName": STRING, "readOnly": BOOL})
        ),
        "projected": Ptr(
            _v1(
                "ProjectedVolumeSource",
                {
                    "sources": Slice(
                        _v1(
                            "VolumeProjection",
                            {
                                "secret": Ptr(
                                    _v1(
                                        "SecretProjection",
                                        {
                                            "name": STRING,
                                            "items": Slice(_KEY_TO_PATH),
                                            "optional": Ptr(BOOL),
                                        },
                                    )
                                ),
                                "configMap": Ptr(
                                    _v1(
                                        "ConfigMapProjection",
                                        {
                                            "name": STRING,
                                            "items": Slice(_KEY_TO_PATH),
                                            "optional": Ptr(BOOL),
                                        },
                                    )
                                ),
                                "serviceAccountToken": Ptr(
                                    _v1(
                                        "ServiceAccountTokenProjection",
                                        {
                                            "audience": STRING,
                                            "expirationSeconds": Ptr(_INT64),
                                            "path": STRING,
                                        },
                                    )
                                ),
                            },
                        )
                    ),
                    "defaultMode": Ptr(_INT32),
                },
            )
        ),
        "csi": Ptr(
            _v1(
                "CSIVolumeSource",
                {
                    "driver": STRING,
                    "readOnly": Ptr(BOOL),
                    "fsType": Ptr(STRING),
                    "volumeAttributes": Map(STRING),
                    "nodePublishSecretRef": Ptr(_LOCAL_REF),
                },
            )
        ),
        "image": Ptr(
            _v1("ImageVolumeSource", {"reference": STRING, "pullPolicy": _typed("PullPolicy")})
        ),
        "hostPath": Ptr(
            _v1("HostPathVolumeSource", {"path": STRING, "type": Ptr(_typed("HostPathType"))})
        ),
    },
)

_POD_SPEC = _v1(
    "PodSpec",
    {
        "volumes": Slice(_VOLUME),
        "initContainers": Slice(_container("Container")),
        "containers": Slice(_container("Container")),
        "ephemeralContainers": Slice(
            _container("EphemeralContainer", {"targetContainerName": STRING})
        ),
        "restartPolicy": _typed("RestartPolicy"),
        "terminationGracePeriodSeconds": Ptr(_INT64),
        "activeDeadlineSeconds": Ptr(_INT64),
        "dnsPolicy": _typed("DNSPolicy"),
        "nodeSelector": Map(STRING),
        "serviceAccountName": STRING,
        "serviceAccount": STRING,
        "automountServiceAccountToken": Ptr(BOOL),
        "nodeName": STRING,
        "hostNetwork": BOOL,
        "hostPID": BOOL,
        "hostIPC": BOOL,
        "shareProcessNamespace": Ptr(BOOL),
        "imagePullSecrets": Slice(_LOCAL_REF),
        "hostname": STRING,
        "subdomain": STRING,
        "schedulerName": STRING,
        "priorityClassName": STRING,
        "priority": Ptr(_INT32),
        "runtimeClassName": Ptr(STRING),
        "enableServiceLinks": Ptr(BOOL),
        "hostUsers": Ptr(BOOL),
    },
)

_POLICY_RULE = _v1(
    "PolicyRule",
    {
        "verbs": Slice(STRING),
        "apiGroups": Slice(STRING),
        "resources": Slice(STRING),
        "resourceNames": Slice(STRING),
        "nonResourceURLs": Slice(STRING),
    },
)
_SUBJECT = _v1("Subject", {"kind": STRING, "apiGroup": STRING, "name": STRING, "namespace": STRING})
_ROLE_REF = _v1("RoleRef", {"apiGroup": STRING, "kind": STRING, "name": STRING})


def _object(kind: str, fields: dict[str, Spec]) -> Struct:
    return _v1(kind, {"kind": STRING, "apiVersion": STRING, "metadata": _META, **fields})


#: Kind -> (the API group/version it is served as, its Go type).
SPECS: dict[str, tuple[str, Struct]] = {
    "Pod": ("v1", _object("Pod", {"spec": _POD_SPEC})),
    "Secret": (
        "v1",
        _object(
            "Secret",
            {
                "immutable": Ptr(BOOL),
                "data": Map(Bytes()),
                "stringData": Map(STRING),
                "type": _typed("SecretType"),
            },
        ),
    ),
    "ServiceAccount": (
        "v1",
        _object(
            "ServiceAccount",
            {
                "secrets": Slice(
                    _v1(
                        "ObjectReference",
                        {
                            "kind": STRING,
                            "namespace": STRING,
                            "name": STRING,
                            "uid": _UID,
                            "apiVersion": STRING,
                            "resourceVersion": STRING,
                            "fieldPath": STRING,
                        },
                    )
                ),
                "imagePullSecrets": Slice(_LOCAL_REF),
                "automountServiceAccountToken": Ptr(BOOL),
            },
        ),
    ),
    "Node": (
        "v1",
        _object(
            "Node",
            {
                "spec": _v1(
                    "NodeSpec",
                    {
                        "podCIDR": STRING,
                        "podCIDRs": Slice(STRING),
                        "providerID": STRING,
                        "unschedulable": BOOL,
                    },
                )
            },
        ),
    ),
    "Role": ("rbac.authorization.k8s.io/v1", _object("Role", {"rules": Slice(_POLICY_RULE)})),
    "ClusterRole": (
        "rbac.authorization.k8s.io/v1",
        _object("ClusterRole", {"rules": Slice(_POLICY_RULE)}),
    ),
    "RoleBinding": (
        "rbac.authorization.k8s.io/v1",
        _object("RoleBinding", {"subjects": Slice(_SUBJECT), "roleRef": _ROLE_REF}),
    ),
    "ClusterRoleBinding": (
        "rbac.authorization.k8s.io/v1",
        _object("ClusterRoleBinding", {"subjects": Slice(_SUBJECT), "roleRef": _ROLE_REF}),
    ),
}


def decode_object(obj: Mapping[str, Any]) -> None:
    """Decode ``obj`` (parsed JSON or YAML) as the API server decodes a body of its kind;
    nothing for a kind not in :data:`SPECS`.

    Raises:
        DecodeError: the API server's text (``<Kind> in version "<v>" cannot be handled as
            a <Kind>: json: cannot unmarshal ...``).
    """
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in SPECS:
        return
    group_version, spec = SPECS[kind]
    try:
        decode_typed(spec, Document(obj, "", []), strict=False)
    except DecodeError as exc:
        version = group_version.rsplit("/", 1)[-1]  # the version the objects are served as
        raise DecodeError(
            f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}'
        ) from None
