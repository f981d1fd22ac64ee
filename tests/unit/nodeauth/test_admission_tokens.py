"""NodeRestriction on ``serviceaccounts/token``: pod binding and the KEP-4412 audience rules.

Upstream's admission_test cases (pod-bound tokens; ServiceAccountNodeAudienceRestriction
with projected-token, CSI, PVC, ephemeral and in-tree volumes) plus the authorizer
fallback (``request-serviceaccounts-token-audience``) that lets RBAC grant registry
audiences no pod spec names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from credprov.nodeauth.admission import AdmissionError, AdmissionRequest, NodeRestriction
from credprov.nodeauth.types import Attributes, Decision
from tests.unit.nodeauth.admission_fixtures import (
    NODE_GROUPS,
    NODE_USER,
    Objects,
    forbidden,
    node,
    outcome,
    pod,
    request,
)

DRIVER = "com.example.csi.mydriver"


def _vol(name: str, **source: Any) -> dict[str, Any]:
    return {"name": name, **source}


def _sa_token(audience: str | None) -> dict[str, Any]:
    token: dict[str, Any] = {"path": "token"}
    if audience is not None:
        token["audience"] = audience
    return {"projected": {"sources": [{"serviceAccountToken": token}]}}


def csi_driver(name: str, *audiences: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"tokenRequests": [{"audience": a} for a in audiences]},
    }


def claim(name: str, volume_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"volumeName": volume_name},
    }


def volume(name: str, **source: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": source,
    }


PODS = [
    pod("mypod"),
    pod("otherpod", "othernode"),
    pod("mysapod", volumes=[_vol("t", **_sa_token("foo"))]),
    pod("defaultaudpod", volumes=[_vol("t", **_sa_token(None))]),
    pod("mycsipod", volumes=[_vol("c", csi={"driver": DRIVER})]),
    pod("mypvcpod", volumes=[_vol("p", persistentVolumeClaim={"claimName": "pvclaim"})]),
    pod("myephemeralpod", volumes=[_vol("myvol", ephemeral={"volumeClaimTemplate": {}})]),
    pod(
        "mypvcandcsipod",
        volumes=[
            _vol("p", persistentVolumeClaim={"claimName": "pvclaim"}),
            _vol("c", csi={"driver": DRIVER}),
        ],
    ),
    pod(
        "twopvcpod",
        volumes=[
            _vol("p", persistentVolumeClaim={"claimName": "pvclaim"}),
            _vol("q", persistentVolumeClaim={"claimName": "pvclaim"}),
        ],
    ),
    pod("unboundpvcpod", volumes=[_vol("p", persistentVolumeClaim={"claimName": "unbound"})]),
    pod(
        "myintreeinlinepod",
        volumes=[_vol("a", azureFile={"shareName": "default", "secretName": "secret"})],
    ),
    pod(
        "myintreepvpod",
        volumes=[_vol("p", persistentVolumeClaim={"claimName": "pvclaim-azurefile"})],
    ),
]
STORAGE = [
    csi_driver(DRIVER, "foo"),
    csi_driver("file.csi.azure.com", "foo"),
    claim("pvclaim", "pvname"),
    claim("pvclaim-azurefile", "pvname-azurefile"),
    claim("myephemeralpod-myvol", "pvname"),
    claim("unbound", ""),
    volume("pvname", csi={"driver": DRIVER}),
    volume(
        "pvname-azurefile",
        claimRef={"namespace": "ns"},
        azureFile={"shareName": "default", "secretName": "secret"},
    ),
]
ALL = Objects([node(), *PODS, *STORAGE])


def without(*names: str) -> Objects:
    """All objects except those named."""
    return Objects(o for o in [node(), *PODS, *STORAGE] if o["metadata"]["name"] not in names)


def token_request(
    pod_name: str = "mypod",
    uid: str = "pod-uid",
    audiences: list[str] | None = None,
    ref: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if audiences is not None:
        spec["audiences"] = audiences
    if ref is not None:
        spec["boundObjectRef"] = dict(ref)
    elif pod_name:
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid}
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def create_token(body: dict[str, Any], sa: str = "mysa") -> AdmissionRequest:
    return request(
        "CREATE", "serviceaccounts", obj=body, name=sa, namespace="ns", subresource="token"
    )


def not_found(audience: str) -> tuple[str, str]:
    return forbidden(f'{NODE_USER} is not authorized to request tokens for audience "{audience}"')


def validating(audience: str, error: str) -> tuple[str, str]:
    return forbidden(f'error validating audience "{audience}": {error}')


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(
            create_token(token_request("", audiences=["foo"])),
            forbidden("node requested token not bound to a pod"),
            id="unbound token",
        ),
        pytest.param(
            create_token(
                token_request(ref={"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u"})
            ),
            forbidden("node requested token not bound to a pod"),
            id="bound to a secret",
        ),
        pytest.param(
            create_token(
                token_request(ref={"apiVersion": "v2", "kind": "Pod", "name": "mypod", "uid": "u"})
            ),
            forbidden("node requested token not bound to a pod"),
            id="pod reference with another apiVersion",
        ),
        pytest.param(
            create_token(token_request(ref={"apiVersion": "v1", "kind": "Pod", "uid": "u"})),
            forbidden("node requested token not bound to a pod"),
            id="pod reference without a name",
        ),
        pytest.param(
            create_token(token_request("mypod", "")),
            forbidden("node requested token with a pod binding without a uid"),
            id="pod binding without a uid",
        ),
        pytest.param(
            create_token(token_request("nopod", "someuid")),
            ("NotFound", 'pod "nopod" not found'),
            id="bound to a pod that does not exist",
        ),
        pytest.param(
            create_token(token_request("mypod", "other-uid")),
            forbidden(
                "the UID in the bound object reference (other-uid) does not match the UID in "
                "record. The object might have been deleted and then recreated"
            ),
            id="pod uid mismatch",
        ),
        pytest.param(
            create_token(token_request("otherpod")),
            forbidden("node requested token bound to a pod scheduled on a different node"),
            id="pod on another node",
        ),
        pytest.param(
            create_token(None),  # type: ignore[arg-type]
            forbidden("unexpected type <nil>"),
            id="no TokenRequest",
        ),
        pytest.param(
            request("UPDATE", "serviceaccounts", obj={}, old={}, name="mysa", namespace="ns"),
            None,
            id="service account update is not checked",
        ),
        pytest.param(
            request("CREATE", "serviceaccounts", obj={"kind": "ServiceAccount"}, name="x"),
            None,
            id="service account create is not checked",
        ),
    ],
)
def test_token_binding(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(NodeRestriction(ALL), req) == expected


@pytest.mark.parametrize(
    ("pod_name", "audiences", "objects", "expected"),
    [
        pytest.param("mysapod", ["foo"], ALL, None, id="audience of a projected token volume"),
        pytest.param("mysapod", ["bar"], ALL, not_found("bar"), id="other projected audience"),
        pytest.param(
            "mysapod",
            ["foo", "bar"],
            ALL,
            forbidden("node may only request 0 or 1 audiences"),
            id="two audiences",
        ),
        pytest.param("defaultaudpod", None, ALL, None, id="no audience, default token volume"),
        pytest.param("defaultaudpod", [], ALL, None, id="empty audiences, default token volume"),
        pytest.param("mypod", None, ALL, not_found(""), id="no audience, no token volume"),
        pytest.param("mypod", ["foo"], ALL, not_found("foo"), id="pod without volumes"),
        pytest.param("mycsipod", ["foo"], ALL, None, id="pod -> csi -> driver"),
        pytest.param("mycsipod", ["bar"], ALL, not_found("bar"), id="csi driver lacks audience"),
        pytest.param(
            "mycsipod",
            ["foo"],
            without(DRIVER),
            validating("foo", f'csidriver.storage.k8s.io "{DRIVER}" not found'),
            id="csi driver not found",
        ),
        pytest.param("mypvcpod", ["foo"], ALL, None, id="pod -> pvc -> pv -> csi -> driver"),
        pytest.param("mypvcpod", ["bar"], ALL, not_found("bar"), id="pvc driver lacks audience"),
        pytest.param(
            "mypvcpod",
            ["foo"],
            without("pvclaim"),
            validating("foo", 'persistentvolumeclaim "pvclaim" not found'),
            id="pvc not found",
        ),
        pytest.param(
            "mypvcpod",
            ["foo"],
            without("pvname"),
            validating("foo", 'persistentvolume "pvname" not found'),
            id="pv not found",
        ),
        pytest.param(
            "unboundpvcpod",
            ["foo"],
            ALL,
            validating("foo", 'persistentvolume "" not found'),
            id="unbound pvc",
        ),
        pytest.param("myephemeralpod", ["foo"], ALL, None, id="pod -> ephemeral -> pvc -> pv"),
        pytest.param(
            "myephemeralpod", ["bar"], ALL, not_found("bar"), id="ephemeral driver lacks audience"
        ),
        pytest.param(
            "mypvcandcsipod",
            ["foo"],
            without("pvclaim"),
            None,
            id="a later volume wins over an earlier lookup error",
        ),
        pytest.param(
            "mypvcandcsipod",
            ["foo"],
            without("pvclaim", DRIVER),
            validating(
                "foo",
                f'[persistentvolumeclaim "pvclaim" not found, csidriver.storage.k8s.io "{DRIVER}"'
                " not found]",
            ),
            id="lookup errors are aggregated",
        ),
        pytest.param(
            "twopvcpod",
            ["foo"],
            without("pvclaim"),
            validating("foo", 'persistentvolumeclaim "pvclaim" not found'),
            id="repeated lookup errors appear once",
        ),
        pytest.param("myintreeinlinepod", ["foo"], ALL, None, id="in-tree inline volume -> csi"),
        pytest.param("myintreepvpod", ["foo"], ALL, None, id="in-tree pv -> csi"),
        pytest.param(
            "myintreepvpod", ["bar"], ALL, not_found("bar"), id="in-tree driver lacks audience"
        ),
    ],
)
def test_audience_restriction(
    pod_name: str, audiences: list[str] | None, objects: Objects, expected: tuple[str, str] | None
) -> None:
    req = create_token(token_request(pod_name, audiences=audiences))
    assert outcome(NodeRestriction(objects), req) == expected


@pytest.mark.parametrize(
    ("pod_name", "objects"),
    [
        pytest.param("mypod", ALL, id="audience in no volume"),
        pytest.param("mycsipod", without(DRIVER), id="csi driver not found is not looked up"),
        pytest.param("mypvcpod", without("pvclaim"), id="pvc not found is not looked up"),
        pytest.param("mypvcpod", without("pvname"), id="pv not found is not looked up"),
    ],
)
def test_audience_restriction_disabled(pod_name: str, objects: Objects) -> None:
    plugin = NodeRestriction(
        objects, feature_gates={"ServiceAccountNodeAudienceRestriction": False}
    )
    seen = len(objects.lookups)
    assert outcome(plugin, create_token(token_request(pod_name, audiences=["foo", "bar"]))) is None
    assert [r for r, _, _ in objects.lookups[seen:]] == ["pods"]


class RecordingAuthorizer:
    """Allows exactly the given (audience, service account) pairs; records every call."""

    def __init__(self, *allowed: tuple[str, str], error: Exception | None = None) -> None:
        self.allowed = set(allowed)
        self.error = error
        self.calls: list[Attributes] = []

    def __call__(self, attrs: Attributes) -> Decision:
        self.calls.append(attrs)
        if self.error is not None:
            raise self.error
        if (attrs.resource, attrs.name) in self.allowed:
            return Decision.allow("RBAC: allowed")
        return Decision.no_opinion()


REGISTRY = "registry.example.com"


def test_authorizer_fallback_allows_a_granted_audience() -> None:
    authz = RecordingAuthorizer((REGISTRY, "mysa"))
    plugin = NodeRestriction(ALL, authorizer=authz)
    assert outcome(plugin, create_token(token_request("mypod", audiences=[REGISTRY]))) is None
    assert authz.calls == [
        Attributes(
            user=NODE_USER,
            groups=NODE_GROUPS,
            verb="request-serviceaccounts-token-audience",
            api_group="",
            api_version="v1",
            resource=REGISTRY,
            name="mysa",
            namespace="ns",
            resource_request=True,
        )
    ]


@pytest.mark.parametrize(
    ("authz", "sa", "pod_name", "expected"),
    [
        pytest.param(
            RecordingAuthorizer((REGISTRY, "mysa")),
            "othersa",
            "mypod",
            not_found(REGISTRY),
            id="granted for another service account",
        ),
        pytest.param(
            RecordingAuthorizer(("*", "mysa")),
            "mysa",
            "mypod",
            not_found(REGISTRY),
            id="the authorizer decides what matches",
        ),
        pytest.param(
            RecordingAuthorizer(error=RuntimeError("evaluation error")),
            "mysa",
            "mypod",
            forbidden(
                f'error authorizing {NODE_USER} to request tokens for audience "{REGISTRY}": '
                "evaluation error"
            ),
            id="authorizer error",
        ),
        pytest.param(
            RecordingAuthorizer((REGISTRY, "mysa")),
            "mysa",
            "mypvcpod",
            None,
            id="granted audience with volumes that do not use it",
        ),
    ],
)
def test_authorizer_fallback_refusals(
    authz: RecordingAuthorizer, sa: str, pod_name: str, expected: tuple[str, str] | None
) -> None:
    plugin = NodeRestriction(ALL, authorizer=authz)
    req = create_token(token_request(pod_name, audiences=[REGISTRY]), sa=sa)
    assert outcome(plugin, req) == expected


@pytest.mark.parametrize(
    ("pod_name", "objects", "error"),
    [
        pytest.param(
            "mycsipod",
            without(DRIVER),
            f'csidriver.storage.k8s.io "{DRIVER}" not found',
            id="csidriver not found",
        ),
        pytest.param(
            "mypvcpod",
            without("pvclaim"),
            'persistentvolumeclaim "pvclaim" not found',
            id="pvc not found",
        ),
        pytest.param(
            "mypvcpod", without("pvname"), 'persistentvolume "pvname" not found', id="pv not found"
        ),
        pytest.param(
            "unboundpvcpod", ALL, 'persistentvolume "" not found', id="pvc bound to no pv"
        ),
    ],
)
@pytest.mark.parametrize(
    ("authz", "granted"),
    [
        pytest.param(RecordingAuthorizer((REGISTRY, "mysa")), True, id="granted"),
        pytest.param(RecordingAuthorizer(), False, id="not granted"),
        pytest.param(RecordingAuthorizer(error=RuntimeError("boom")), False, id="authorizer error"),
        pytest.param(None, False, id="no authorizer"),
    ],
)
def test_lookup_errors_still_ask_the_authorizer(
    pod_name: str,
    objects: Objects,
    error: str,
    authz: RecordingAuthorizer | None,
    granted: bool,
) -> None:
    """1.38 (kubernetes#140607): a failed volume lookup no longer skips the RBAC grant; when
    the grant is refused, the lookup errors are what the node is told."""
    if authz is not None:
        authz.calls.clear()
    plugin = NodeRestriction(objects, authorizer=authz)
    req = create_token(token_request(pod_name, audiences=[REGISTRY]))
    expected = None if granted else validating(REGISTRY, error)
    assert outcome(plugin, req) == expected
    if authz is not None:
        assert [(a.verb, a.resource, a.name) for a in authz.calls] == [
            ("request-serviceaccounts-token-audience", REGISTRY, "mysa")
        ]


def test_audience_in_a_pod_volume_skips_the_authorizer() -> None:
    authz = RecordingAuthorizer()
    assert (
        outcome(
            NodeRestriction(ALL, authorizer=authz),
            create_token(token_request("mysapod", audiences=["foo"])),
        )
        is None
    )
    assert authz.calls == []


class FailingTranslator:
    """A CSI translator whose translations fail."""

    def is_inline_migratable(self, volume: Mapping[str, Any]) -> bool:
        return "azureFile" in volume

    def translate_inline_volume(self, volume: Mapping[str, Any], namespace: str) -> str:
        raise ValueError("cannot translate inline azureFile")

    def is_pv_migratable(self, pv: Mapping[str, Any]) -> bool:
        return "azureFile" in pv.get("spec", {})

    def translate_pv(self, pv: Mapping[str, Any]) -> str:
        raise ValueError("cannot translate azureFile PV")


@pytest.mark.parametrize(
    ("pod_name", "error"),
    [
        pytest.param("myintreeinlinepod", "cannot translate inline azureFile", id="inline"),
        pytest.param("myintreepvpod", "cannot translate azureFile PV", id="pv"),
    ],
)
def test_translation_errors(pod_name: str, error: str) -> None:
    plugin = NodeRestriction(ALL, csi_translator=FailingTranslator())
    req = create_token(token_request(pod_name, audiences=["foo"]))
    assert outcome(plugin, req) == validating("foo", error)


def test_apiserver_message() -> None:
    with pytest.raises(AdmissionError) as info:
        NodeRestriction(ALL).admit(create_token(token_request("mypod", audiences=["foo"])))
    assert str(info.value) == (
        f'serviceaccounts "mysa" is forbidden: {NODE_USER} is not authorized to request tokens '
        'for audience "foo"'
    )
