"""RBAC rule matching for the emulator's ``Node,RBAC`` chain (rbac/v1 semantics)."""

from __future__ import annotations

from typing import Any

import pytest

from credprov.nodeauth.rbac import RBACAuthorizer, Rule
from credprov.nodeauth.types import Attributes

NODE = Attributes(user="system:node:n1", groups=("system:nodes", "system:authenticated"))


def attrs(**kw: Any) -> Attributes:
    base = {"user": NODE.user, "groups": NODE.groups, "verb": "get", "resource": "secrets"}
    base.update(kw)
    return Attributes(**base)


@pytest.mark.parametrize(
    ("rule", "request_", "allowed"),
    [
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}, {}, True),
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]}, {}, False),
        ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {}, True),
        ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["secrets"]}, {}, False),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]},
            {"subresource": "x"},
            False,
        ),
        (
            {"verbs": ["create"], "apiGroups": [""], "resources": ["serviceaccounts/token"]},
            {"verb": "create", "resource": "serviceaccounts", "subresource": "token"},
            True,
        ),
        (
            {"verbs": ["create"], "apiGroups": [""], "resources": ["*/token"]},
            {"verb": "create", "resource": "serviceaccounts", "subresource": "token"},
            True,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
            {"name": "a"},
            True,
        ),
        (
            {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
            {"name": "b"},
            False,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            {"resource_request": False, "path": "/healthz", "resource": ""},
            True,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["/metrics/*"]},
            {"resource_request": False, "path": "/metrics/x", "resource": ""},
            True,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["/metrics/**"]},
            {"resource_request": False, "path": "/metrics/x", "resource": ""},
            True,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["/metrics/*"]},
            {"resource_request": False, "path": "/healthz", "resource": ""},
            False,
        ),
        (
            {
                "verbs": ["request-serviceaccounts-token-audience"],
                "apiGroups": [""],
                "resources": ["registry.example"],
                "resourceNames": ["builder"],
            },
            {
                "verb": "request-serviceaccounts-token-audience",
                "resource": "registry.example",
                "name": "builder",
                "namespace": "team-a",
            },
            True,
        ),
    ],
)
def test_rule_matching(rule: dict[str, Any], request_: dict[str, Any], allowed: bool) -> None:
    assert Rule.from_dict(rule).allows(attrs(**request_)) is allowed


def _objects(subject: dict[str, Any], binding_kind: str = "ClusterRoleBinding") -> list[Any]:
    binding: dict[str, Any] = {
        "kind": binding_kind,
        "metadata": {"name": "b"},
        "roleRef": {"kind": "ClusterRole", "name": "r"},
        "subjects": [subject],
    }
    if binding_kind == "RoleBinding":
        binding["metadata"]["namespace"] = "team-a"
    return [
        {
            "kind": "ClusterRole",
            "metadata": {"name": "r"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}],
        },
        binding,
    ]


@pytest.mark.parametrize(
    ("subject", "binding_kind", "namespace", "allowed"),
    [
        ({"kind": "Group", "name": "system:nodes"}, "ClusterRoleBinding", "x", True),
        ({"kind": "User", "name": "system:node:n1"}, "ClusterRoleBinding", "x", True),
        ({"kind": "User", "name": "system:node:n2"}, "ClusterRoleBinding", "x", False),
        ({"kind": "Group", "name": "system:nodes"}, "RoleBinding", "team-a", True),
        ({"kind": "Group", "name": "system:nodes"}, "RoleBinding", "team-b", False),
        (
            {"kind": "ServiceAccount", "name": "n1", "namespace": "x"},
            "ClusterRoleBinding",
            "x",
            False,
        ),
    ],
)
def test_bindings(
    subject: dict[str, Any], binding_kind: str, namespace: str, allowed: bool
) -> None:
    rbac = RBACAuthorizer(_objects(subject, binding_kind))
    decision = rbac.authorize(attrs(namespace=namespace, name="s"))
    assert decision.allowed is allowed
    if allowed:
        assert decision.reason.startswith(f'RBAC: allowed by {binding_kind} "b" of ClusterRole "r"')
    else:
        assert decision.reason == ""


def test_role_binding_to_role() -> None:
    objects = [
        {
            "kind": "Role",
            "metadata": {"name": "r", "namespace": "team-a"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}],
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "team-a"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "Group", "name": "system:nodes"}],
        },
        {"kind": "ConfigMap", "metadata": {"name": "ignored"}},
    ]
    rbac = RBACAuthorizer(objects)
    assert rbac.authorize(attrs(namespace="team-a")).allowed
    assert not rbac.authorize(attrs(namespace="team-b")).allowed


def test_malformed_objects_are_ignored() -> None:
    rbac = RBACAuthorizer(
        [
            {"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": ["nonsense", {"verbs": 3}]},
            {"kind": "ClusterRoleBinding", "roleRef": {}, "subjects": ["x"]},
        ]
    )
    assert not rbac.authorize(attrs()).allowed


@pytest.mark.parametrize(
    ("subject", "binding_kind", "user", "allowed"),
    [
        (
            {"kind": "ServiceAccount", "name": "sa", "namespace": "team-a"},
            "ClusterRoleBinding",
            "system:serviceaccount:team-a:sa",
            True,
        ),
        # No namespace: the RoleBinding's own; a ClusterRoleBinding has none to lend, so
        # the subject matches nobody (not even a user named "system:serviceaccount::sa").
        (
            {"kind": "ServiceAccount", "name": "sa"},
            "RoleBinding",
            "system:serviceaccount:team-a:sa",
            True,
        ),
        (
            {"kind": "ServiceAccount", "name": "sa"},
            "ClusterRoleBinding",
            "system:serviceaccount::sa",
            False,
        ),
    ],
)
def test_service_account_subjects(
    subject: dict[str, Any], binding_kind: str, user: str, allowed: bool
) -> None:
    rbac = RBACAuthorizer(_objects(subject, binding_kind))
    request = Attributes(user=user, verb="get", resource="secrets", namespace="team-a", name="s")
    assert rbac.authorize(request).allowed is allowed
