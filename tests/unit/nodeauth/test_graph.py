"""The Node authorizer's graph: edges, orphan removal and the destination-edge index.

The tables are upstream's graph_test.go (TestIndex, TestIndex2, newest version: secrets
indexed through PVs, de-duplicated references, pod certificate requests), with the graph
and index written in upstream's ``type:ns/name`` notation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from credprov.nodeauth import graph as g
from credprov.nodeauth.graph import Graph, GraphPopulator
from credprov.nodeauth.store import ObjectStore

from .nodeauth_fixtures import cm_vol, pcr, pod, pv, pvc_vol, secret_vol

ALL3 = ["node:node1=1", "node:node2=1", "node:node3=1"]


def check(graph: Graph, edges: dict[str, list[str]], index: dict[str, list[str]]) -> None:
    assert graph.edges() == edges
    assert graph.indexes() == index
    assert graph.verify() == []


# -- TestIndex -----------------------------------------------------------------------------


def test_index_lifecycle() -> None:
    graph = Graph(index_threshold=3)

    def add_pv(n: int) -> None:
        graph.add_pv(
            pv(f"pv{n}", f"pv-pvc-{n}", "pv-secret", claim_ns="pv-pvc-ns", secret_ns="pv-secret-ns")
        )

    def add_pod(n: int, node: int) -> None:
        graph.add_pod(
            pod(
                f"pod{n}",
                f"node{node}",
                sa="sa1",
                volumes=[
                    cm_vol("cm1", "volume1"),
                    cm_vol("cm2", "volume2"),
                    cm_vol("cm3", "volume3"),
                    cm_vol("cm3", "volume4"),
                    secret_vol("secret1", "secret1.1"),
                    secret_vol("secret1", "secret1.2"),
                    secret_vol("secret2", "secret2.1"),
                    secret_vol("secret2", "secret2.2"),
                    pvc_vol("pvc1", "pvc1.1"),
                    pvc_vol("pvc1", "pvc1.2"),
                    pvc_vol("pvc2", "pvc2.1"),
                    pvc_vol("pvc2", "pvc2.2"),
                ],
                claims=[
                    {"name": "rc1.1", "resourceClaimName": "rc1"},
                    {"name": "rc1.2", "resourceClaimName": "rc1"},
                    {"name": "rc2.1", "resourceClaimName": "rc2"},
                    {"name": "rc2.2", "resourceClaimName": "rc2"},
                ],
                extended_claim="rc2",
            )
        )
        assert graph.has_path_from(f"node{node}", g.CONFIGMAP, "ns", "cm1")

    for n in (1, 2, 3):
        add_pv(n)
    check(
        graph,
        {
            "pv:pv1": ["pvc:pv-pvc-ns/pv-pvc-1"],
            "pv:pv2": ["pvc:pv-pvc-ns/pv-pvc-2"],
            "pv:pv3": ["pvc:pv-pvc-ns/pv-pvc-3"],
            "pvc:pv-pvc-ns/pv-pvc-1": [],
            "pvc:pv-pvc-ns/pv-pvc-2": [],
            "pvc:pv-pvc-ns/pv-pvc-3": [],
            "secret:pv-secret-ns/pv-secret": ["pv:pv1", "pv:pv2", "pv:pv3"],
        },
        {"secret:pv-secret-ns/pv-secret": []},
    )
    for n in (1, 2, 3):
        graph.delete_pv(f"pv{n}")
    assert graph.edges() == {}

    objects = ["configmap:ns/cm1", "configmap:ns/cm2", "configmap:ns/cm3", "serviceAccount:ns/sa1"]
    objects += ["pvc:ns/pvc1", "pvc:ns/pvc2", "resourceclaim:ns/rc1", "resourceclaim:ns/rc2"]
    objects += ["secret:ns/secret1", "secret:ns/secret2"]

    def shape(pods: dict[str, str]) -> dict[str, list[str]]:
        edges: dict[str, list[str]] = {f"node:{n}": [] for n in sorted(set(pods.values()))}
        edges.update({f"pod:ns/{p}": [f"node:{node}"] for p, node in pods.items()})
        edges.update({o: sorted(f"pod:ns/{p}" for p in pods) for o in objects})
        return edges

    for n in (1, 2, 3):
        add_pod(n, n)
        if n < 3:
            assert graph.indexes() == {}
    check(
        graph,
        shape({"pod1": "node1", "pod2": "node2", "pod3": "node3"}),
        dict.fromkeys(objects, ALL3),
    )

    graph.delete_pod("pod1", "ns")  # below the threshold: every index dropped
    check(graph, shape({"pod2": "node2", "pod3": "node3"}), {})

    add_pod(1, 1)
    add_pod(4, 1)
    check(
        graph,
        shape({"pod1": "node1", "pod2": "node2", "pod3": "node3", "pod4": "node1"}),
        {key: ["node:node1=2", "node:node2=1", "node:node3=1"] for key in objects},
    )

    graph.delete_pod("pod1", "ns")  # still at the threshold
    check(
        graph,
        shape({"pod2": "node2", "pod3": "node3", "pod4": "node1"}),
        dict.fromkeys(objects, ALL3),
    )


# -- TestIndex2 -----------------------------------------------------------------------------


def sa_cms(name: str, node: str) -> dict[str, Any]:
    return pod(name, node, sa="sa1", volumes=[cm_vol("cm1"), cm_vol("cm2"), cm_vol("cm3")])


def secrets(name: str, node: str) -> dict[str, Any]:
    return pod(name, node, volumes=[secret_vol("s1"), secret_vol("s2"), secret_vol("s3")])


def pvcs(name: str, node: str) -> dict[str, Any]:
    return pod(name, node, volumes=[pvc_vol("pvc1"), pvc_vol("pvc2"), pvc_vol("pvc3")])


def rcs(name: str, node: str) -> dict[str, Any]:
    claims = [{"resourceClaimName": rc} for rc in ("rc1", "rc2", "rc3")]
    return pod(name, node, claims=claims, extended_claim="rc4")


def one_pvc(name: str, node: str, claim: str) -> dict[str, Any]:
    return pod(name, node, volumes=[pvc_vol(claim)])


Step = Callable[[Graph], None]


def add_pods(*pods: dict[str, Any]) -> Step:
    def run(graph: Graph) -> None:
        for p in pods:
            graph.add_pod(p)

    return run


def add_pvs(*pvs: dict[str, Any]) -> Step:
    def run(graph: Graph) -> None:
        for p in pvs:
            graph.add_pv(p)

    return run


def add_slices(*names: int) -> Step:
    def run(graph: Graph) -> None:
        for i in names:
            graph.add_resource_slice(f"s{i}", f"node{i}")

    return run


def add_attachments(*names: int) -> Step:
    def run(graph: Graph) -> None:
        for i in names:
            graph.add_volume_attachment(f"va{i}", f"node{i}")

    return run


def add_pcrs(*requests: dict[str, Any]) -> Step:
    def run(graph: Graph) -> None:
        for r in requests:
            graph.add_pod_certificate_request(r)

    return run


def steps(*parts: Step) -> Step:
    def run(graph: Graph) -> None:
        for part in parts:
            part(graph)

    return run


def nothing(graph: Graph) -> None:
    return None


def sa_cm_graph(pods: dict[str, str]) -> dict[str, list[str]]:
    edges: dict[str, list[str]] = {f"node:{n}": [] for n in sorted(set(pods.values()))}
    edges.update({f"pod:ns/{p}": [f"node:{n}"] for p, n in pods.items()})
    for o in ("configmap:ns/cm1", "configmap:ns/cm2", "configmap:ns/cm3", "serviceAccount:ns/sa1"):
        edges[o] = sorted(f"pod:ns/{p}" for p in pods)
    return edges


def fan_graph(objects: list[str], pods: dict[str, str]) -> dict[str, list[str]]:
    edges: dict[str, list[str]] = {f"node:{n}": [] for n in sorted(set(pods.values()))}
    edges.update({f"pod:ns/{p}": [f"node:{n}"] for p, n in pods.items()})
    for o in objects:
        edges[o] = sorted(f"pod:ns/{p}" for p in pods)
    return edges


SECRETS = ["secret:ns/s1", "secret:ns/s2", "secret:ns/s3"]
PVCS = ["pvc:ns/pvc1", "pvc:ns/pvc2", "pvc:ns/pvc3"]
RCS = [
    "resourceclaim:ns/rc1",
    "resourceclaim:ns/rc2",
    "resourceclaim:ns/rc3",
    "resourceclaim:ns/rc4",
]
SA_CMS = ["configmap:ns/cm1", "configmap:ns/cm2", "configmap:ns/cm3", "serviceAccount:ns/sa1"]
P123 = {"pod1": "node1", "pod2": "node2", "pod3": "node3"}
P23 = {"pod2": "node2", "pod3": "node3"}
PV_S1 = [pv("pv1", "pvc1", "s1"), pv("pv2", "pvc2", "s1"), pv("pv3", "pvc3", "s1")]


def pv_pod_graph(
    pvs: list[int], pods: dict[str, tuple[str, str]], secret_from: list[str]
) -> dict[str, list[str]]:
    """PVs pvN -> pvc:ns/pvcN, pods with one PVC each, and s1 -> ``secret_from``."""
    edges: dict[str, list[str]] = {f"node:{n}": [] for n, _ in pods.values()}
    for p, (n, _) in pods.items():
        edges[f"pod:ns/{p}"] = [f"node:{n}"]
    claims = {f"pvc{i}" for i in pvs} | {c for _, c in pods.values()}
    for claim in claims:
        edges[f"pvc:ns/{claim}"] = sorted(f"pod:ns/{p}" for p, (_, c) in pods.items() if c == claim)
    for i in pvs:
        edges[f"pv:pv{i}"] = [f"pvc:ns/pvc{i}"]
    edges["secret:ns/s1"] = sorted(secret_from)
    return dict(sorted(edges.items()))


INDEX2_CASES: list[tuple[str, Step, Step, dict[str, list[str]], dict[str, list[str]]]] = [
    ("empty graph", nothing, nothing, {}, {}),
    (
        "outdeg below destination edge index threshold",
        nothing,
        add_pods(sa_cms("pod1", "node1"), sa_cms("pod2", "node2")),
        sa_cm_graph({"pod1": "node1", "pod2": "node2"}),
        {},
    ),
    (
        "index built for configmaps and serviceaccounts",
        add_pods(sa_cms("pod1", "node1"), sa_cms("pod2", "node2")),
        add_pods(sa_cms("pod3", "node3")),
        sa_cm_graph(P123),
        dict.fromkeys(SA_CMS, ALL3),
    ),
    (
        "no index for configmaps and serviceaccounts - dropping below threshold",
        add_pods(sa_cms("pod1", "node1"), sa_cms("pod2", "node2"), sa_cms("pod3", "node3")),
        lambda graph: graph.delete_pod("pod1", "ns"),
        sa_cm_graph(P23),
        {},
    ),
    (
        "removing pod but staying above threshold",
        add_pods(*(sa_cms(f"pod{i}", f"node{(i - 1) % 3 + 1}") for i in (1, 2, 3, 4))),
        lambda graph: graph.delete_pod("pod1", "ns"),
        sa_cm_graph({"pod2": "node2", "pod3": "node3", "pod4": "node1"}),
        dict.fromkeys(SA_CMS, ALL3),
    ),
    (
        "index built for secrets",
        add_pods(secrets("pod1", "node1"), secrets("pod2", "node2")),
        add_pods(secrets("pod3", "node3")),
        fan_graph(SECRETS, P123),
        dict.fromkeys(SECRETS, ALL3),
    ),
    (
        "no index for secrets - dropping below threshold",
        add_pods(secrets("pod1", "node1"), secrets("pod2", "node2"), secrets("pod3", "node3")),
        lambda graph: graph.delete_pod("pod1", "ns"),
        fan_graph(SECRETS, P23),
        {},
    ),
    (
        "index built for pvcs",
        add_pods(pvcs("pod1", "node1"), pvcs("pod2", "node2")),
        add_pods(pvcs("pod3", "node3")),
        fan_graph(PVCS, P123),
        dict.fromkeys(PVCS, ALL3),
    ),
    (
        "no index for pvcs - dropping below threshold",
        add_pods(pvcs("pod1", "node1"), pvcs("pod2", "node2"), pvcs("pod3", "node3")),
        lambda graph: graph.delete_pod("pod1", "ns"),
        fan_graph(PVCS, P23),
        {},
    ),
    (
        "index built for resourceclaims",
        nothing,
        add_pods(rcs("pod1", "node1"), rcs("pod2", "node2"), rcs("pod3", "node3")),
        fan_graph(RCS, P123),
        dict.fromkeys(RCS, ALL3),
    ),
    (
        "no index for resourceclaims - dropping below threshold",
        add_pods(rcs("pod1", "node1"), rcs("pod2", "node2"), rcs("pod3", "node3")),
        lambda graph: graph.delete_pod("pod1", "ns"),
        fan_graph(RCS, P23),
        {},
    ),
    (
        "resourceslices adding",
        nothing,
        add_slices(1, 2, 3),
        {
            "node:node1": [],
            "node:node2": [],
            "node:node3": [],
            "resourceslice:s1": ["node:node1"],
            "resourceslice:s2": ["node:node2"],
            "resourceslice:s3": ["node:node3"],
        },
        {},
    ),
    (
        "resourceslices deleting",
        add_slices(1, 2, 3),
        lambda graph: graph.delete_resource_slice("s1"),
        {
            "node:node2": [],
            "node:node3": [],
            "resourceslice:s2": ["node:node2"],
            "resourceslice:s3": ["node:node3"],
        },
        {},
    ),
    (
        "volumeattachments adding",
        nothing,
        add_attachments(1, 2, 3),
        {
            "node:node1": [],
            "node:node2": [],
            "node:node3": [],
            "volumeattachment:va1": ["node:node1"],
            "volumeattachment:va2": ["node:node2"],
            "volumeattachment:va3": ["node:node3"],
        },
        {},
    ),
    (
        "volumeattachments deleting",
        add_attachments(1, 2, 3),
        lambda graph: graph.delete_volume_attachment("va1"),
        {
            "node:node2": [],
            "node:node3": [],
            "volumeattachment:va2": ["node:node2"],
            "volumeattachment:va3": ["node:node3"],
        },
        {},
    ),
    (
        "persistentvolumes adding",
        nothing,
        add_pvs(
            pv("pv1", "pvc1", "pvsecret"),
            pv("pv2", "pvc2", "pvsecret"),
            pv("pv3", "pvc3", "pvsecret"),
        ),
        {
            "pv:pv1": ["pvc:ns/pvc1"],
            "pv:pv2": ["pvc:ns/pvc2"],
            "pv:pv3": ["pvc:ns/pvc3"],
            "pvc:ns/pvc1": [],
            "pvc:ns/pvc2": [],
            "pvc:ns/pvc3": [],
            "secret:ns/pvsecret": ["pv:pv1", "pv:pv2", "pv:pv3"],
        },
        {"secret:ns/pvsecret": []},
    ),
    (
        "persistentvolumes deleting",
        add_pvs(pv("pv1", "pvc1"), pv("pv2", "pvc2"), pv("pv3", "pvc3")),
        lambda graph: graph.delete_pv("pv1"),
        {
            "pv:pv2": ["pvc:ns/pvc2"],
            "pv:pv3": ["pvc:ns/pvc3"],
            "pvc:ns/pvc2": [],
            "pvc:ns/pvc3": [],
        },
        {},
    ),
    (
        "persistentvolumes with secrets",
        nothing,
        add_pvs(pv("pv1", "pvc1", "s1"), pv("pv2", "pvc2", "s2"), pv("pv3", "pvc3", "s3")),
        {
            "pv:pv1": ["pvc:ns/pvc1"],
            "pv:pv2": ["pvc:ns/pvc2"],
            "pv:pv3": ["pvc:ns/pvc3"],
            "pvc:ns/pvc1": [],
            "pvc:ns/pvc2": [],
            "pvc:ns/pvc3": [],
            "secret:ns/s1": ["pv:pv1"],
            "secret:ns/s2": ["pv:pv2"],
            "secret:ns/s3": ["pv:pv3"],
        },
        {},
    ),
    (
        "index built for secret via persistentvolumes when pods added after PVs",
        add_pvs(*PV_S1),
        add_pods(
            one_pvc("pod1", "node1", "pvc1"),
            one_pvc("pod2", "node2", "pvc2"),
            one_pvc("pod3", "node1", "pvc3"),
        ),
        pv_pod_graph(
            [1, 2, 3],
            {"pod1": ("node1", "pvc1"), "pod2": ("node2", "pvc2"), "pod3": ("node1", "pvc3")},
            ["pv:pv1", "pv:pv2", "pv:pv3"],
        ),
        {"secret:ns/s1": ["node:node1=2", "node:node2=1"]},
    ),
    (
        "index built for secret via persistentvolumes when PVs added after pods",
        steps(
            add_pods(
                one_pvc("pod1", "node1", "pvc1"),
                one_pvc("pod2", "node2", "pvc2"),
                one_pvc("pod3", "node3", "pvc3"),
            ),
            add_pvs(*PV_S1[:2]),
        ),
        add_pvs(PV_S1[2]),
        pv_pod_graph(
            [1, 2, 3],
            {"pod1": ("node1", "pvc1"), "pod2": ("node2", "pvc2"), "pod3": ("node3", "pvc3")},
            ["pv:pv1", "pv:pv2", "pv:pv3"],
        ),
        {"secret:ns/s1": ALL3},
    ),
    (
        "secret via persistentvolumes index updated on pod deletion",
        steps(
            add_pvs(*PV_S1),
            add_pods(
                one_pvc("pod1", "node1", "pvc1"),
                one_pvc("pod2", "node2", "pvc2"),
                one_pvc("pod3", "node1", "pvc3"),
            ),
        ),
        lambda graph: graph.delete_pod("pod1", "ns"),
        pv_pod_graph(
            [1, 2, 3],
            {"pod2": ("node2", "pvc2"), "pod3": ("node1", "pvc3")},
            ["pv:pv1", "pv:pv2", "pv:pv3"],
        ),
        {"secret:ns/s1": ["node:node1=1", "node:node2=1"]},
    ),
    (
        "secret via persistentvolumes index updated on PV deletion staying above threshold",
        steps(
            add_pvs(*PV_S1, pv("pv4", "pvc4", "s1")),
            add_pods(
                one_pvc("pod1", "node1", "pvc1"),
                one_pvc("pod2", "node2", "pvc2"),
                one_pvc("pod3", "node1", "pvc3"),
                one_pvc("pod4", "node3", "pvc4"),
            ),
        ),
        lambda graph: graph.delete_pv("pv1"),
        pv_pod_graph(
            [2, 3, 4],
            {
                "pod1": ("node1", "pvc1"),
                "pod2": ("node2", "pvc2"),
                "pod3": ("node1", "pvc3"),
                "pod4": ("node3", "pvc4"),
            },
            ["pv:pv2", "pv:pv3", "pv:pv4"],
        ),
        {"secret:ns/s1": ALL3},
    ),
    (
        "no index for secret via persistentvolumes - dropping below threshold on PV deletion",
        steps(
            add_pvs(*PV_S1),
            add_pods(
                one_pvc("pod1", "node1", "pvc1"),
                one_pvc("pod2", "node2", "pvc2"),
                one_pvc("pod3", "node1", "pvc3"),
            ),
        ),
        lambda graph: graph.delete_pv("pv1"),
        pv_pod_graph(
            [2, 3],
            {"pod1": ("node1", "pvc1"), "pod2": ("node2", "pvc2"), "pod3": ("node1", "pvc3")},
            ["pv:pv2", "pv:pv3"],
        ),
        {},
    ),
    (
        "index built for secret referenced by mix of direct pods and persistentvolumes",
        steps(
            add_pods(
                pod("pod1", "node1", volumes=[secret_vol("s1"), pvc_vol("pvc1")]),
                pod("pod2", "node2", volumes=[secret_vol("s1")]),
                pod("pod3", "node3", volumes=[pvc_vol("pvc2")]),
            ),
            add_pvs(pv("pv1", "pvc1", "s1")),
        ),
        add_pvs(pv("pv2", "pvc2", "s1")),
        {
            "node:node1": [],
            "node:node2": [],
            "node:node3": [],
            "pod:ns/pod1": ["node:node1"],
            "pod:ns/pod2": ["node:node2"],
            "pod:ns/pod3": ["node:node3"],
            "pv:pv1": ["pvc:ns/pvc1"],
            "pv:pv2": ["pvc:ns/pvc2"],
            "pvc:ns/pvc1": ["pod:ns/pod1"],
            "pvc:ns/pvc2": ["pod:ns/pod3"],
            "secret:ns/s1": ["pod:ns/pod1", "pod:ns/pod2", "pv:pv1", "pv:pv2"],
        },
        {"secret:ns/s1": ["node:node1=2", "node:node2=1", "node:node3=1"]},
    ),
    (
        "mixed direct pod and PV secret index updated when PV deleted",
        steps(
            add_pods(
                pod("pod1", "node1", volumes=[secret_vol("s1"), pvc_vol("pvc1")]),
                pod("pod2", "node2", volumes=[secret_vol("s1")]),
                pod("pod3", "node3", volumes=[pvc_vol("pvc2")]),
            ),
            add_pvs(pv("pv1", "pvc1", "s1"), pv("pv2", "pvc2", "s1")),
        ),
        lambda graph: graph.delete_pv("pv1"),
        {
            "node:node1": [],
            "node:node2": [],
            "node:node3": [],
            "pod:ns/pod1": ["node:node1"],
            "pod:ns/pod2": ["node:node2"],
            "pod:ns/pod3": ["node:node3"],
            "pv:pv2": ["pvc:ns/pvc2"],
            "pvc:ns/pvc1": ["pod:ns/pod1"],
            "pvc:ns/pvc2": ["pod:ns/pod3"],
            "secret:ns/s1": ["pod:ns/pod1", "pod:ns/pod2", "pv:pv2"],
        },
        {"secret:ns/s1": ALL3},
    ),
    (
        "podcertificaterequest adding",
        nothing,
        add_pcrs(
            pcr("foo", "pcr1", "pod1", "sa1", "node1"),
            pcr("foo", "pcr2", "pod1", "sa1", "node1"),
            pcr("foo", "pcr3", "pod2", "sa2", "node1"),
            pcr("foo", "pcr4", "pod4", "sa4", "node2"),
        ),
        {
            "node:node1": [],
            "node:node2": [],
            "podcertificaterequest:foo/pcr1": ["node:node1"],
            "podcertificaterequest:foo/pcr2": ["node:node1"],
            "podcertificaterequest:foo/pcr3": ["node:node1"],
            "podcertificaterequest:foo/pcr4": ["node:node2"],
        },
        {},
    ),
    (
        "podcertificaterequest deleting (check namespace/name ordering)",
        add_pcrs(
            pcr("foo", "bar", "pod1", "sa1", "node1"), pcr("bar", "foo", "pod2", "sa2", "node2")
        ),
        lambda graph: graph.delete_pod_certificate_request("foo", "bar"),
        {"node:node2": [], "podcertificaterequest:bar/foo": ["node:node2"]},
        {},
    ),
]


@pytest.mark.parametrize(
    ("start", "transform", "edges", "index"),
    [case[1:] for case in INDEX2_CASES],
    ids=[case[0] for case in INDEX2_CASES],
)
def test_index2(
    start: Step, transform: Step, edges: dict[str, list[str]], index: dict[str, list[str]]
) -> None:
    graph = Graph(index_threshold=3)
    start(graph)
    transform(graph)
    check(graph, edges, index)


# -- edges a pod creates ----------------------------------------------------------------------


def test_every_reference_of_a_pod_is_an_edge() -> None:
    graph = Graph()
    graph.add_pod(
        pod(
            "p",
            "n1",
            sa="sa",
            imagePullSecrets=[{"name": "pull"}, {"name": ""}],
            initContainers=[
                {
                    "name": "i",
                    "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "init-env"}}}],
                }
            ],
            containers=[
                {
                    "name": "c",
                    "envFrom": [
                        {"secretRef": {"name": "c-envfrom"}},
                        {"configMapRef": {"name": "cm-envfrom"}},
                    ],
                    "env": [
                        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-env"}}},
                        {"name": "C", "value": "literal"},
                    ],
                }
            ],
            ephemeralContainers=[
                {"name": "e", "envFrom": [{"secretRef": {"name": "ephemeral-envfrom"}}]}
            ],
            volumes=[
                secret_vol("vol-secret"),
                cm_vol("vol-cm"),
                {
                    "name": "proj",
                    "projected": {
                        "sources": [
                            {"secret": {"name": "proj-secret"}},
                            {"configMap": {"name": "proj-cm"}},
                            {"serviceAccountToken": {"audience": "vault", "path": "t"}},
                            {"downwardAPI": {"items": []}},
                        ]
                    },
                },
                {
                    "name": "csi",
                    "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret"}},
                },
                {"name": "az", "azureFile": {"secretName": "az-secret", "shareName": "s"}},
                {"name": "ceph", "cephfs": {"monitors": [], "secretRef": {"name": "ceph-secret"}}},
                {
                    "name": "flex",
                    "flexVolume": {"driver": "x", "secretRef": {"name": "flex-secret"}},
                },
                {"name": "rbd", "rbd": {"image": "i", "secretRef": {"name": "rbd-secret"}}},
                {"name": "iscsi", "iscsi": {"secretRef": {"name": "iscsi-secret"}}},
                {"name": "scaleio", "scaleIO": {"secretRef": {"name": "scaleio-secret"}}},
                {"name": "sos", "storageos": {"secretRef": {"name": "storageos-secret"}}},
                {"name": "cinder", "cinder": {"secretRef": {"name": "cinder-secret"}}},
                pvc_vol("claim"),
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "empty", "emptyDir": {}},
                {"name": "host", "hostPath": {"path": "/x"}},
            ],
            claims=[
                {"name": "direct", "resourceClaimName": "rc-direct"},
                {"name": "templ", "resourceClaimTemplateName": "t"},
                {"name": "pending", "resourceClaimTemplateName": "t"},
            ],
            claim_statuses=[
                {"name": "templ", "resourceClaimName": "rc-generated"},
                {"name": "pending"},
                {"name": "unrelated", "resourceClaimName": "rc-not-in-spec"},
            ],
            extended_claim="rc-extended",
        )
    )
    into_pod = {src for src, dsts in graph.edges().items() if dsts == ["pod:ns/p"]}
    assert into_pod == {
        "serviceAccount:ns/sa",
        *(
            f"secret:ns/{s}"
            for s in (
                "pull",
                "init-env",
                "c-envfrom",
                "ephemeral-envfrom",
                "vol-secret",
                "proj-secret",
                "csi-secret",
                "az-secret",
                "ceph-secret",
                "flex-secret",
                "rbd-secret",
                "iscsi-secret",
                "scaleio-secret",
                "storageos-secret",
                "cinder-secret",
            )
        ),
        *(f"configmap:ns/{c}" for c in ("cm-envfrom", "cm-env", "vol-cm", "proj-cm")),
        "pvc:ns/claim",
        "pvc:ns/p-scratch",
        "resourceclaim:ns/rc-direct",
        "resourceclaim:ns/rc-generated",
        "resourceclaim:ns/rc-extended",
    }


def test_mirror_pods_only_reach_their_node() -> None:
    graph = Graph()
    graph.add_pod(pod("m", "n1", sa="sa", volumes=[secret_vol("s")], mirror=True))
    assert graph.edges() == {"node:n1": [], "pod:ns/m": ["node:n1"]}


def test_unbound_pods_are_not_in_the_graph() -> None:
    graph = Graph()
    graph.add_pod(pod("p", "", volumes=[secret_vol("s")]))
    assert graph.edges() == {}


def test_pod_without_namespace_is_in_default() -> None:
    graph = Graph()
    p = pod("p", "n1", volumes=[secret_vol("s")])
    del p["metadata"]["namespace"]
    graph.add_pod(p)
    assert graph.has_path_from("n1", g.SECRET, "default", "s")


def test_readding_a_pod_replaces_its_edges_and_drops_orphans() -> None:
    graph = Graph()
    graph.add_pod(pod("p", "n1", volumes=[secret_vol("old")]))
    graph.add_pod(pod("p", "n2", volumes=[secret_vol("new")]))
    assert graph.edges() == {
        "node:n2": [],
        "pod:ns/p": ["node:n2"],
        "secret:ns/new": ["pod:ns/p"],
    }


def test_pv_secrets_only_kubelet_visible_ones() -> None:
    graph = Graph()
    graph.add_pv(
        pv(
            "csi",
            "claim",
            source={
                "csi": {
                    "driver": "d",
                    "nodePublishSecretRef": {"name": "publish", "namespace": "s"},
                    "nodeStageSecretRef": {"name": "stage", "namespace": "s"},
                    "nodeExpandSecretRef": {"name": "expand", "namespace": "s"},
                    "controllerPublishSecretRef": {"name": "ctl-publish", "namespace": "s"},
                    "controllerExpandSecretRef": {"name": "ctl-expand", "namespace": "s"},
                }
            },
        )
    )
    graph.add_pv(
        pv("flex", "c2", source={"flexVolume": {"driver": "x", "secretRef": {"name": "f"}}})
    )
    graph.add_pv(
        pv("az", "c3", source={"azureFile": {"secretName": "a", "secretNamespace": "other"}})
    )
    graph.add_pv(pv("cinder", "c4", source={"cinder": {"secretRef": {"name": "c"}}}))
    graph.add_pv(pv("unbound", None, source={"flexVolume": {"secretRef": {"name": "never"}}}))
    into_pv = {src: dst for src, dst in graph.edges().items() if src.startswith("secret:")}
    assert into_pv == {
        "secret:s/publish": ["pv:csi"],
        "secret:s/stage": ["pv:csi"],
        "secret:s/expand": ["pv:csi"],
        "secret:ns/f": ["pv:flex"],  # no namespace: the claim's
        "secret:other/a": ["pv:az"],
        "secret:c": ["pv:cinder"],  # cinder has no claim-namespace fallback
    }


# -- reachability ---------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [1, 3, 200])
def test_shared_resources(threshold: int) -> None:
    """Upstream TestNodeAuthorizerSharedResources (run with every kind of index)."""
    graph = Graph(index_threshold=threshold)
    graph.add_pod(
        pod(
            "pod1-node1",
            "node1",
            namespace="ns1",
            volumes=[secret_vol(s) for s in ("node1-only", "node1-node2-only", "shared-all")],
        )
    )
    graph.add_pod(
        pod(
            "pod2-node2",
            "node2",
            namespace="ns1",
            volumes=[secret_vol(s) for s in ("node1-node2-only", "shared-all")],
        )
    )
    pod3 = pod("pod3-node3", "node3", namespace="ns1", volumes=[secret_vol("shared-all")])
    graph.add_pod(pod3)
    table = [
        ("node1", "node1-only", True),
        ("node1", "node1-node2-only", True),
        ("node1", "shared-all", True),
        ("node2", "node1-only", False),
        ("node2", "node1-node2-only", True),
        ("node2", "shared-all", True),
        ("node3", "node1-only", False),
        ("node3", "node1-node2-only", False),
        ("node3", "shared-all", True),
    ]
    for node, secret, allowed in table:
        assert graph.has_path_from(node, g.SECRET, "ns1", secret) is allowed, (node, secret)
    pod3["spec"]["volumes"] = []
    graph.add_pod(pod3)  # recomputes the shared secret's index
    assert not graph.has_path_from("node3", g.SECRET, "ns1", "shared-all")
    assert graph.verify() == []


def test_explain_path_and_upstream_messages() -> None:
    graph = Graph()
    graph.add_pv(pv("pv1", "pvc1", "s1"))
    graph.add_pod(one_pvc("pod1", "node1", "pvc1"))
    graph.add_pod(pod("pod2", "node2"))
    assert graph.explain_path("node1", g.SECRET, "ns", "s1") == (
        ["secret:ns/s1", "pv:pv1", "pvc:ns/pvc1", "pod:ns/pod1", "node:node1"],
        "",
    )
    assert graph.explain_path("nodeX", g.SECRET, "ns", "s1") == (
        None,
        "unknown node 'nodeX' cannot get secret ns/s1",
    )
    assert graph.explain_path("node1", g.SECRET, "ns", "nope") == (
        None,
        "node 'node1' cannot get unknown secret ns/nope",
    )
    assert graph.explain_path("node2", g.SECRET, "ns", "s1") == (
        None,
        "node 'node2' cannot get secret ns/s1, no relationship to this object was found in "
        "the node authorizer graph",
    )


def test_readable_by_is_the_reverse_of_has_path_from() -> None:
    graph = Graph(index_threshold=2)
    graph.add_pv(pv("pv1", "pvc1", "s1"))
    graph.add_pod(pod("pod1", "node1", sa="sa", volumes=[pvc_vol("pvc1"), secret_vol("s2")]))
    graph.add_pod(pod("pod2", "node2", volumes=[secret_vol("s2")]))
    graph.add_volume_attachment("va1", "node1")
    readable = {str(v) for v in graph.readable_by("node1")}
    assert readable == {
        "pod:ns/pod1",
        "serviceAccount:ns/sa",
        "pvc:ns/pvc1",
        "pv:pv1",
        "secret:ns/s1",
        "secret:ns/s2",
        "volumeattachment:va1",
    }
    for vertex in graph.vertices():
        if vertex.kind != g.NODE:
            assert graph.has_path_from("node1", vertex.kind, vertex.namespace, vertex.name) is (
                str(vertex) in readable
            )
    assert graph.readable_by("nobody") == {}


def test_index_threshold_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Graph(index_threshold=0)


# -- the populator ------------------------------------------------------------------------------


def test_populator_follows_events() -> None:
    store = ObjectStore()
    graph = Graph()
    populator = GraphPopulator(store, graph)
    pending = pod("p", "", volumes=[secret_vol("s")])
    populator.apply(pending)
    assert graph.edges() == {}
    bound = pod("p", "n1", volumes=[secret_vol("s")])
    populator.apply(bound)
    assert graph.has_path_from("n1", g.SECRET, "ns", "s")
    # Status-only updates change no edge and leave the graph alone.
    populator.apply({**bound, "status": {"phase": "Running"}})
    assert graph.has_path_from("n1", g.SECRET, "ns", "s")
    # A new ephemeral container adds its references.
    with_debug = {
        **bound,
        "spec": {
            **bound["spec"],
            "ephemeralContainers": [{"name": "dbg", "envFrom": [{"secretRef": {"name": "dbg"}}]}],
        },
    }
    populator.apply(with_debug)
    assert graph.has_path_from("n1", g.SECRET, "ns", "dbg")
    populator.apply(pv("pv1", "claim", "pvs"))
    populator.apply(
        {"kind": "VolumeAttachment", "metadata": {"name": "va"}, "spec": {"nodeName": "n1"}}
    )
    populator.apply(
        {"kind": "VolumeAttachment", "metadata": {"name": "va"}, "spec": {"nodeName": "n2"}}
    )
    assert graph.has_path_from("n2", g.VOLUME_ATTACHMENT, "", "va")
    assert not graph.has_path_from("n1", g.VOLUME_ATTACHMENT, "", "va")
    populator.apply(
        {"kind": "ResourceSlice", "metadata": {"name": "rs"}, "spec": {"nodeName": "n1"}}
    )
    populator.apply(pcr("ns", "r", "p", "sa", "n1"))
    assert graph.has_path_from("n1", g.POD_CERTIFICATE_REQUEST, "ns", "r")
    for obj in (
        with_debug,
        pv("pv1", "claim"),
        {"kind": "VolumeAttachment", "metadata": {"name": "va"}},
        {"kind": "ResourceSlice", "metadata": {"name": "rs"}},
        pcr("ns", "r", "", "", ""),
    ):
        assert populator.delete(obj) is not None
    assert populator.delete(pod("gone")) is None
    assert graph.edges() == {}
    assert len(store) == 0


def test_from_store() -> None:
    store = ObjectStore([pod("p", "n1", volumes=[pvc_vol("c")]), pv("v", "c", "s")])
    graph = Graph.from_store(store, index_threshold=1)
    assert graph.has_path_from("n1", g.SECRET, "ns", "s")
    assert graph.stats() == {"vertices": 5, "edges": 4, "indexedVertices": 4, "indexEntries": 4}
