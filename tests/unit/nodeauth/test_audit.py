"""``audit``: what a node can read, and the token audiences NodeRestriction would allow."""

from __future__ import annotations

from typing import Any

from credprov.nodeauth.audit import audit
from credprov.nodeauth.store import ObjectStore

from .nodeauth_fixtures import pod, pvc_vol, secret_vol


def objects(*extra: dict[str, Any]) -> ObjectStore:
    app = pod(
        "app",
        "n1",
        sa="runner",
        volumes=[
            secret_vol("s"),
            pvc_vol("claim"),
            {"name": "inline", "csi": {"driver": "inline.csi"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {
                "name": "tokens",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "t"}},
                        {"serviceAccountToken": {"path": "v", "audience": "vault"}},
                    ]
                },
            },
        ],
    )
    other_sa = pod(
        "other",
        "n1",
        sa="other",
        volumes=[
            {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"audience": "x"}}]}}
        ],
    )
    return ObjectStore(
        [
            app,
            other_sa,
            {"kind": "Node", "metadata": {"name": "n1"}},
            {"kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": "ns"}},
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "claim", "namespace": "ns"},
                "spec": {"volumeName": "pv1"},
            },
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "app-scratch", "namespace": "ns"},
                "spec": {"volumeName": "pv2"},
            },
            {
                "kind": "PersistentVolume",
                "metadata": {"name": "pv1"},
                "spec": {
                    "claimRef": {"namespace": "ns", "name": "claim"},
                    "csi": {"driver": "pv.csi"},
                },
            },
            {
                "kind": "PersistentVolume",
                "metadata": {"name": "pv2"},
                "spec": {
                    "claimRef": {"namespace": "ns", "name": "app-scratch"},
                    "csi": {"driver": "eph.csi"},
                },
            },
            *(
                {
                    "kind": "CSIDriver",
                    "metadata": {"name": d},
                    "spec": {"tokenRequests": [{"audience": a}]},
                }
                for d, a in (
                    ("inline.csi", "inline-aud"),
                    ("pv.csi", "pv-aud"),
                    ("eph.csi", "eph-aud"),
                )
            ),
            *extra,
        ]
    )


def audiences(report: dict[str, Any], name: str) -> dict[str, list[str]]:
    [account] = [a for a in report["serviceAccounts"] if a["name"] == name]
    return {a["audience"]: a["via"] for a in account["tokenAudiences"]}


def test_token_audiences_from_volumes() -> None:
    report = audit(objects(), "n1")
    assert audiences(report, "runner") == {
        "": ["pod ns/app volume tokens: projected token"],
        "vault": ["pod ns/app volume tokens: projected token"],
        "inline-aud": ["pod ns/app volume inline: CSI driver inline.csi"],
        "pv-aud": ["pod ns/app volume claim: CSI driver pv.csi"],
        "eph-aud": ["pod ns/app volume scratch: CSI driver eph.csi"],
    }
    # Another service account's pod does not lend its audiences.
    assert audiences(report, "other") == {"x": ["pod ns/other volume t: projected token"]}
    [runner] = [a for a in report["serviceAccounts"] if a["name"] == "runner"]
    assert runner["exists"] and runner["get"] and runner["pods"] == ["ns/app"]


def test_rbac_audience_grants() -> None:
    grants = [
        {
            "kind": "ClusterRole",
            "metadata": {"name": "registry"},
            "rules": [
                {
                    "verbs": ["request-serviceaccounts-token-audience"],
                    "apiGroups": [""],
                    "resources": ["registry.example.com"],
                    "resourceNames": ["runner"],
                },
                {"verbs": ["get"], "apiGroups": [""], "resources": ["not-an-audience"]},
            ],
        },
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "nodes-registry"},
            "roleRef": {"kind": "ClusterRole", "name": "registry"},
            "subjects": [{"kind": "Group", "name": "system:nodes"}],
        },
        {
            "kind": "Role",
            "metadata": {"name": "any", "namespace": "ns"},
            "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "n1-any", "namespace": "ns"},
            "roleRef": {"kind": "Role", "name": "any"},
            "subjects": [{"kind": "User", "name": "system:node:n1"}],
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "elsewhere", "namespace": "other-ns"},
            "roleRef": {"kind": "ClusterRole", "name": "registry"},
            "subjects": [{"kind": "User", "name": "system:node:n1"}],
        },
    ]
    report = audit(objects(*grants), "n1")
    runner = audiences(report, "runner")
    assert runner["registry.example.com"] == [
        'RBAC ClusterRoleBinding "nodes-registry" of ClusterRole "registry"'
    ]
    assert runner["*"] == ['RBAC RoleBinding "n1-any" of Role "any"']
    assert "registry.example.com" not in audiences(report, "other")


def test_audience_restriction_off_allows_any() -> None:
    report = audit(objects(), "n1", feature_gates={"ServiceAccountNodeAudienceRestriction": False})
    assert audiences(report, "runner") == {
        "*": ["ServiceAccountNodeAudienceRestriction is off: any audience"]
    }


def test_readable_objects_and_existence() -> None:
    report = audit(objects(), "n1")
    assert report["nodeKnown"] and report["nodeExists"]
    assert report["secrets"] == [
        {"namespace": "ns", "name": "s", "exists": False, "via": ["pod:ns/app"]}
    ]
    assert [(c["name"], c["exists"]) for c in report["persistentVolumeClaims"]] == [
        ("app-scratch", True),
        ("claim", True),
    ]
    assert [p["name"] for p in report["persistentVolumes"]] == ["pv1", "pv2"]
    assert report["persistentVolumes"][0] == {
        "name": "pv1",
        "exists": True,
        "via": ["pvc:ns/claim"],
    }


def test_unknown_node_reads_nothing_but_cluster_wide_rules() -> None:
    report = audit(objects(), "ghost")
    assert not report["nodeKnown"] and not report["nodeExists"]
    assert report["pods"] == [] and report["secrets"] == [] and report["serviceAccounts"] == []
    assert "get,list,watch services.core" in report["clusterWide"]
    assert not any("secrets" in rule or "pods" in rule for rule in report["clusterWide"])
    with_selectors_off = audit(
        objects(), "ghost", feature_gates={"AuthorizeNodeWithSelectors": False}
    )
    assert "get,list,watch pods.core" in with_selectors_off["clusterWide"]


def _signer_pod(name: str, sa: str, *signers: str) -> dict[str, Any]:
    return pod(
        name,
        "n1",
        sa=sa,
        volumes=[
            {
                "name": "certs",
                "projected": {
                    "sources": [{"podCertificate": {"signerName": s}} for s in signers]
                    + [{"serviceAccountToken": {"path": "t"}}]
                },
            }
        ],
    )


def signers(report: dict[str, Any], name: str) -> dict[str, list[str]]:
    [account] = [a for a in report["serviceAccounts"] if a["name"] == name]
    return {s["signer"]: s["via"] for s in account["podCertificateSigners"]}


SIGNER_GRANTS = [
    {
        "kind": "ClusterRole",
        "metadata": {"name": "signers"},
        "rules": [
            {
                "verbs": ["request-podcertificate-signer"],
                "apiGroups": ["certificates.k8s.io"],
                "resources": ["granted.example.com/s"],
                "resourceNames": ["certs"],
            },
            {
                # The token-audience verb in the core group grants no signer.
                "verbs": ["request-serviceaccounts-token-audience"],
                "apiGroups": [""],
                "resources": ["audience-only"],
            },
            {
                # The signer verb in another group grants nothing either.
                "verbs": ["request-podcertificate-signer"],
                "apiGroups": [""],
                "resources": ["wrong-group.example.com/s"],
            },
        ],
    },
    {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "nodes-signers"},
        "roleRef": {"kind": "ClusterRole", "name": "signers"},
        "subjects": [{"kind": "Group", "name": "system:nodes"}],
    },
]


def test_pod_certificate_signers() -> None:
    store = objects(
        _signer_pod("web", "certs", "example.com/web", "example.com/shared"),
        _signer_pod("job", "other", "example.com/job"),
        *SIGNER_GRANTS,
    )
    report = audit(store, "n1", feature_gates={"PodCertificateRequest": True})
    assert signers(report, "certs") == {
        "example.com/shared": ["pod ns/web volume certs: podCertificate"],
        "example.com/web": ["pod ns/web volume certs: podCertificate"],
        "granted.example.com/s": [
            'RBAC ClusterRoleBinding "nodes-signers" of ClusterRole "signers"'
        ],
    }
    # Another service account's pod does not lend its signers, and the grant names "certs".
    assert signers(report, "other") == {
        "example.com/job": ["pod ns/job volume certs: podCertificate"]
    }
    assert "audience-only" in audiences(report, "certs")

    from credprov.cli.nodeauth_cmd import audit_lines

    lines = audit_lines(report)
    assert "    pod certificate signers:" in lines
    assert '      "example.com/web"  via pod ns/web volume certs: podCertificate' in lines


def test_pod_certificate_signers_need_the_gate() -> None:
    store = objects(_signer_pod("web", "certs", "example.com/web"), *SIGNER_GRANTS)
    report = audit(store, "n1")
    assert signers(report, "certs") == {}
    from credprov.cli.nodeauth_cmd import audit_lines

    assert "    pod certificate signers:" not in audit_lines(report)
