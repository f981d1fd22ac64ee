"""The shared walk over what a pod references (``credprov.nodeauth._refs``).

One walk, :func:`pod_object_names`, feeds both the Node authorizer's graph edges
(:func:`pod_references`) and NodeRestriction's mirror-pod check
(:func:`api_object_reference`). The tables pin the walk to upstream's
``VisitPodSecretNames`` / ``VisitPodConfigmapNames``; the property checks that the two
consumers agree: a mirror pod NodeRestriction lets through would give the graph no edge.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from credprov.nodeauth._refs import (
    CONFIGMAPS,
    SECRETS,
    PodRefs,
    api_object_reference,
    pod_object_names,
    pod_references,
)


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def _vol(name: str = "v", /, **source: Any) -> dict[str, Any]:
    return {"name": name, **source}


def _names(**spec: Any) -> list[tuple[str, str]]:
    return list(pod_object_names(_pod(**spec)))


def _s(name: str) -> tuple[str, str]:
    return (SECRETS, name)


def _c(name: str) -> tuple[str, str]:
    return (CONFIGMAPS, name)


_ENV = {
    "envFrom": [{"secretRef": {"name": "ef-s"}}, {"configMapRef": {"name": "ef-c"}}],
    "env": [
        {"name": "A", "value": "literal"},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "e-s", "key": "k"}}},
        {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "e-c", "key": "k"}}},
        {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ],
}
_ENV_NAMES = [_s("ef-s"), _c("ef-c"), _s("e-s"), _c("e-c")]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"imagePullSecrets": [{"name": "pull"}]}, [_s("pull")], id="pull secret"),
        *(
            pytest.param({key: [{"name": "x", **_ENV}]}, _ENV_NAMES, id=f"{key} env and envFrom")
            for key in ("initContainers", "containers", "ephemeralContainers")
        ),
        pytest.param(
            {"volumes": [_vol(secret={"secretName": "s"})]}, [_s("s")], id="secret volume"
        ),
        pytest.param(
            {"volumes": [_vol(azureFile={"secretName": "s", "shareName": "x"})]},
            [_s("s")],
            id="azureFile volume",
        ),
        *(
            pytest.param(
                {"volumes": [_vol(**{kind: {"secretRef": {"name": "s"}}})]},
                [_s("s")],
                id=f"{kind} secretRef",
            )
            for kind in ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")
        ),
        pytest.param(
            {"volumes": [_vol(csi={"driver": "d", "nodePublishSecretRef": {"name": "s"}})]},
            [_s("s")],
            id="csi node-publish secret",
        ),
        pytest.param({"volumes": [_vol(configMap={"name": "c"})]}, [_c("c")], id="configMap"),
        pytest.param(
            {
                "volumes": [
                    _vol(
                        projected={
                            "sources": [
                                {"configMap": {"name": "c1"}},
                                {"secret": {"name": "s1"}},
                                {"serviceAccountToken": {"path": "t"}},
                                {"downwardAPI": {}},
                                {"secret": {"name": "s2"}},
                                {"configMap": {"name": "c2"}},
                            ]
                        }
                    )
                ]
            },
            # A volume's secrets come before its config maps.
            [_s("s1"), _s("s2"), _c("c1"), _c("c2")],
            id="projected sources",
        ),
        pytest.param(
            {
                "volumes": [
                    _vol(csi={"driver": "d"}),
                    _vol(emptyDir={}),
                    _vol(persistentVolumeClaim={"claimName": "pvc"}),
                    _vol(ephemeral={"volumeClaimTemplate": {}}),
                    _vol(glusterfs={"endpoints": "e", "path": "p"}),
                ]
            },
            [],
            id="volumes naming no secret or config map",
        ),
    ],
)
def test_each_place_a_pod_names_a_secret_or_config_map(
    spec: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert _names(**spec) == expected


def test_order_per_resource_is_upstreams_and_repeats_are_kept() -> None:
    spec = {
        "imagePullSecrets": [{"name": "pull"}, {"name": "shared"}],
        "ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "eph"}}]}],
        "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}}]}],
        "initContainers": [
            {"name": "i", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "init"}}}]}
        ],
        "volumes": [_vol(secret={"secretName": "shared"}), _vol(configMap={"name": "cm"})],
    }
    names = _names(**spec)
    assert [n for r, n in names if r == SECRETS] == ["pull", "shared", "init", "eph", "shared"]
    assert [n for r, n in names if r == CONFIGMAPS] == ["cm", "cm"]
    # The graph counts each object once, in first-seen order.
    refs = pod_references(_pod(**spec))
    assert refs.secrets == ("pull", "shared", "init", "eph")
    assert refs.configmaps == ("cm",)


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        pytest.param(
            _vol(cephfs={"secretRef": {"name": "ceph"}}, secret={"secretName": "sec"}),
            [_s("ceph")],
            id="cephfs before secret",
        ),
        pytest.param(
            _vol(azureFile={"secretName": "az"}, csi={"nodePublishSecretRef": {"name": "csi"}}),
            [_s("az")],
            id="azureFile before csi",
        ),
        pytest.param(
            _vol(
                flexVolume={"secretRef": {"name": "flex"}},
                projected={"sources": [{"secret": {"name": "ps"}}, {"configMap": {"name": "pc"}}]},
            ),
            # The secret switch picks flexVolume; the config map switch its own: projected.
            [_s("flex"), _c("pc")],
            id="secret and config map switches are separate",
        ),
        pytest.param(
            _vol(projected={"sources": []}, configMap={"name": "shadowed"}),
            [],
            id="projected shadows configMap",
        ),
        pytest.param(
            _vol(rbd={}, secret={"secretName": "sec"}),
            [],
            id="a set source without a secret still wins",
        ),
    ],
)
def test_first_set_source_of_a_volume_wins(
    volume: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert _names(volumes=[volume]) == expected


def test_malformed_or_empty_entries_name_nothing() -> None:
    spec = {
        "imagePullSecrets": [{"name": ""}, {"name": None}, {"name": 7}, "pull", None, {}],
        "containers": [
            None,
            "c",
            {
                "name": "c",
                "envFrom": [None, {"secretRef": None}, {"configMapRef": {"name": ""}}],
                "env": [None, {"name": "A", "valueFrom": None}, {"valueFrom": "x"}],
            },
        ],
        "initContainers": {"not": "a list"},
        "volumes": [
            None,
            "v",
            _vol(secret=None, configMap={"name": ["c"]}),
            _vol(projected={"sources": "x"}),
            _vol(projected=None, configMap={}),
        ],
    }
    assert _names(**spec) == []
    assert pod_references(_pod(**spec)) == PodRefs("", (), (), (), ())
    assert list(pod_object_names({})) == []
    assert list(pod_object_names({"spec": None})) == []


def test_tuples_are_walked_like_lists() -> None:
    spec = {
        "imagePullSecrets": ({"name": "pull"},),
        "containers": ({"name": "c", "envFrom": ({"configMapRef": {"name": "cm"}},)},),
    }
    assert _names(**spec) == [_s("pull"), _c("cm")]


class _Untouchable(list[Any]):
    """A list that fails the test when walked."""

    def __iter__(self) -> Iterator[Any]:
        raise AssertionError("walked further than needed")


def test_the_walk_is_lazy() -> None:
    pod = _pod(
        imagePullSecrets=[{"name": "pull"}], containers=_Untouchable(), volumes=_Untouchable()
    )
    assert next(pod_object_names(pod)) == _s("pull")
    assert api_object_reference(pod) == "secrets"


def test_any_secret_outranks_a_config_map_named_earlier() -> None:
    pod = _pod(
        containers=[{"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}}]}],
        volumes=[_vol(secret={"secretName": "late"})],
    )
    assert _names(**pod["spec"]) == [_c("cm"), _s("late")]
    assert api_object_reference(pod) == "secrets"
    pod["spec"]["volumes"] = [_vol(secret={})]
    assert api_object_reference(pod) == "configmaps"


# -- the graph and NodeRestriction agree ----------------------------------------------------

# Mostly empty names, so that many pods get past the by-name checks to the volume types.
_NAME = st.sampled_from(["", "", "", "x"])
_REF = st.builds(lambda n: {"name": n}, _NAME)
_ENV_ENTRY = st.one_of(
    st.just({"name": "A", "value": "v"}),
    st.builds(lambda r: {"name": "S", "valueFrom": {"secretKeyRef": r}}, _REF),
    st.builds(lambda r: {"name": "C", "valueFrom": {"configMapKeyRef": r}}, _REF),
)
_ENV_FROM = st.one_of(
    st.builds(lambda r: {"secretRef": r}, _REF), st.builds(lambda r: {"configMapRef": r}, _REF)
)
_CONTAINERS = st.lists(
    st.builds(
        lambda env, env_from: {"name": "c", "env": env, "envFrom": env_from},
        st.lists(_ENV_ENTRY, max_size=2),
        st.lists(_ENV_FROM, max_size=2),
    ),
    max_size=2,
)
_PROJECTION = st.one_of(
    st.just({"downwardAPI": {}}),
    st.just({"serviceAccountToken": {"path": "t"}}),
    st.builds(lambda r: {"secret": r}, _REF),
    st.builds(lambda r: {"configMap": r}, _REF),
)
# One source per volume, as API validation guarantees before admission runs.
_SOURCE = st.one_of(
    st.sampled_from(
        [
            {"emptyDir": {}},
            {"hostPath": {"path": "/x"}},
            {"downwardAPI": {}},
            {"cephfs": {"monitors": ["m"]}},
            {"csi": {"driver": "d"}},
            {"ephemeral": {"volumeClaimTemplate": {}}},
        ]
    ),
    st.builds(lambda n: {"secret": {"secretName": n}}, _NAME),
    st.builds(lambda n: {"azureFile": {"secretName": n}}, _NAME),
    st.builds(lambda r: {"flexVolume": {"driver": "f", "secretRef": r}}, _REF),
    st.builds(lambda r: {"csi": {"driver": "d", "nodePublishSecretRef": r}}, _REF),
    st.builds(lambda r: {"configMap": r}, _REF),
    st.builds(lambda n: {"persistentVolumeClaim": {"claimName": n}}, _NAME),
    st.builds(lambda s: {"projected": {"sources": s}}, st.lists(_PROJECTION, max_size=3)),
)
_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "serviceAccountName": _NAME,
        "imagePullSecrets": st.lists(_REF, max_size=2),
        "initContainers": _CONTAINERS,
        "containers": _CONTAINERS,
        "ephemeralContainers": _CONTAINERS,
        "volumes": st.lists(st.builds(lambda s: {"name": "v", **s}, _SOURCE), max_size=3),
        "resourceClaims": st.lists(
            st.builds(lambda n: {"name": "r", "resourceClaimName": n}, _NAME), max_size=1
        ),
    },
)


@settings(max_examples=150, deadline=None)
@given(_SPEC)
def test_what_noderestriction_allows_gives_the_graph_no_edge(spec: dict[str, Any]) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
    verdict = api_object_reference(pod)
    refs = pod_references(pod)
    if refs.service_account:
        assert verdict == "serviceaccounts"
    elif refs.secrets:
        assert verdict == "secrets"
    elif refs.configmaps:
        assert verdict == "configmaps"
    elif refs.resource_claims:
        assert verdict == "resourceclaims"
    elif refs.pvcs:
        assert verdict is not None
    if verdict is None:
        assert refs == PodRefs("", (), (), (), ())
