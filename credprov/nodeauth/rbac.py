"""A small RBAC authorizer over the Roles and bindings in an objects file.

The apiserver's authorizer chain on a node-restricted cluster is ``Node,RBAC``: what the
Node authorizer has no opinion about may still be allowed by RBAC. The kubelet emulator
needs that second link for one rule in particular: KEP-4412 registry audiences never
appear in pod specs, so NodeRestriction lets a node request such a token only when the
node is allowed the ``request-serviceaccounts-token-audience`` verb on the audience
(``resource``) and the service account (``resourceNames``), which admins grant with a
ClusterRole bound to ``system:nodes`` or to one ``system:node:<name>``. NodeRestriction's
PodCertificateRequest rule (1.37) asks the same way with ``request-podcertificate-signer``
on a signer name (``resource``) in ``certificates.k8s.io``.

Rules are matched as ``rbac/v1`` documents them: ``*`` wildcards for verbs, API groups and
resources, ``resource/subresource`` and ``*/subresource``, ``resourceNames`` only
restricting requests with a name, and RoleBindings granting in their own namespace only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from credprov.nodeauth.types import Attributes, Decision

__all__ = ["RBACAuthorizer", "Rule"]


@dataclass(frozen=True)
class Rule:
    """One ``PolicyRule``."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Mapping[str, Any]) -> Rule:
        """A rule from its JSON form; missing lists are empty."""

        def strs(key: str) -> tuple[str, ...]:
            value = rule.get(key) or ()
            return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()

        return cls(
            verbs=strs("verbs"),
            api_groups=strs("apiGroups"),
            resources=strs("resources"),
            resource_names=strs("resourceNames"),
            non_resource_urls=strs("nonResourceURLs"),
        )

    def allows(self, attrs: Attributes) -> bool:
        """Whether this rule covers the request."""
        if "*" not in self.verbs and attrs.verb not in self.verbs:
            return False
        if not attrs.resource_request:
            return any(
                u == attrs.path
                or u == "*"
                or (u.endswith("*") and attrs.path.startswith(u.rstrip("*")))
                for u in self.non_resource_urls
            )
        if "*" not in self.api_groups and attrs.api_group not in self.api_groups:
            return False
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        sub = f"*/{attrs.subresource}" if attrs.subresource else None
        resource_ok = any(r in ("*", combined) or r == sub for r in self.resources)
        if not resource_ok:
            return False
        return not self.resource_names or attrs.name in self.resource_names


def _items(value: Any) -> list[Any]:
    """A list field, or [] when the object holds something else there (the API server
    would refuse such an object; an objects file may still carry one)."""
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    """An object field, or {} when the object holds something else there."""
    return value if isinstance(value, Mapping) else {}


def _subject_matches(subject: Mapping[str, Any], attrs: Attributes, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return name == attrs.user
    if kind == "Group":
        return name in attrs.groups
    if kind == "ServiceAccount":
        # A subject without a namespace means the binding's; a ClusterRoleBinding has none.
        ns = subject.get("namespace") or binding_ns
        return bool(ns) and attrs.user == f"system:serviceaccount:{ns}:{name}"
    return False


class RBACAuthorizer:
    """Allow what a (Cluster)Role bound to the user or one of its groups allows.

    Args:
        objects: every object of the cluster (Roles, ClusterRoles and their bindings are
            picked out; everything else is ignored).
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._cluster_roles: dict[str, tuple[Rule, ...]] = {}
        self._roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self._bindings: list[Mapping[str, Any]] = []
        for obj in objects:
            kind = obj.get("kind")
            meta = obj.get("metadata") or {}
            name = str(meta.get("name", ""))
            if kind in ("ClusterRole", "Role"):
                rules = tuple(
                    Rule.from_dict(r) for r in _items(obj.get("rules")) if isinstance(r, dict)
                )
                if kind == "ClusterRole":
                    self._cluster_roles[name] = rules
                else:
                    self._roles[(str(meta.get("namespace", "")), name)] = rules
            elif kind in ("ClusterRoleBinding", "RoleBinding"):
                self._bindings.append(obj)

    def _rules(self, binding: Mapping[str, Any]) -> Sequence[Rule]:
        ref = _mapping(binding.get("roleRef"))
        if ref.get("kind") == "ClusterRole":
            return self._cluster_roles.get(str(ref.get("name", "")), ())
        ns = str((binding.get("metadata") or {}).get("namespace", ""))
        return self._roles.get((ns, str(ref.get("name", ""))), ())

    def authorize(self, attrs: Attributes) -> Decision:
        """ALLOW with RBAC's reason, or NO_OPINION."""
        for binding in self._bindings:
            meta = binding.get("metadata") or {}
            binding_ns = str(meta.get("namespace", ""))
            kind = binding.get("kind")
            if kind == "RoleBinding" and binding_ns != attrs.namespace:
                continue
            subjects = [s for s in _items(binding.get("subjects")) if isinstance(s, dict)]
            subject = next((s for s in subjects if _subject_matches(s, attrs, binding_ns)), None)
            if subject is None:
                continue
            if any(rule.allows(attrs) for rule in self._rules(binding)):
                ref = _mapping(binding.get("roleRef"))
                where = f' in namespace "{binding_ns}"' if kind == "RoleBinding" else ""
                return Decision.allow(
                    f'RBAC: allowed by {kind} "{meta.get("name", "")}" of {ref.get("kind")} '
                    f'"{ref.get("name")}" to {subject.get("kind")} "{subject.get("name")}"{where}'
                )
        return Decision.no_opinion()
