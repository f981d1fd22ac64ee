"""Types shared by the Node authorizer, NodeRestriction and the kubelet emulator.

They mirror the apiserver's ``authorizer.Attributes`` and ``authorizer.Decision``: a request
is described by who makes it (user name and groups) and what it touches (verb, API group,
resource, subresource, namespace, name). The Node authorizer only ever allows or has no
opinion; it never denies, so other authorizers (RBAC) may still allow what it does not.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Attributes", "Decision", "DecisionKind", "ObjectGetter"]


@dataclass(frozen=True)
class Attributes:
    """One API request, as an authorizer sees it (``authorizer.AttributesRecord``).

    ``resource`` is the lower-case plural (``secrets``, ``persistentvolumeclaims``);
    ``api_group`` is ``""`` for the core group. ``field_selector`` and ``label_selector``
    are the raw query strings (``spec.nodeName=node1``), empty when absent.
    ``resource_request=False`` describes a non-resource URL (``path``).
    """

    user: str
    groups: tuple[str, ...] = ()
    verb: str = ""
    api_group: str = ""
    api_version: str = "v1"
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    resource_request: bool = True
    path: str = ""
    field_selector: str = ""
    label_selector: str = ""


class DecisionKind(enum.Enum):
    """``authorizer.Decision``; the Node authorizer returns only ALLOW and NO_OPINION."""

    ALLOW = "Allow"
    NO_OPINION = "NoOpinion"
    DENY = "Deny"


@dataclass(frozen=True)
class Decision:
    """An authorization decision with the upstream reason string ("" when none)."""

    kind: DecisionKind
    reason: str = ""

    @property
    def allowed(self) -> bool:
        """True when the request is allowed."""
        return self.kind is DecisionKind.ALLOW

    @classmethod
    def allow(cls, reason: str = "") -> Decision:
        """An ALLOW decision."""
        return cls(DecisionKind.ALLOW, reason)

    @classmethod
    def no_opinion(cls, reason: str = "") -> Decision:
        """A NO_OPINION decision (the request is not allowed by this authorizer)."""
        return cls(DecisionKind.NO_OPINION, reason)


class ObjectGetter(Protocol):
    """Read access to the cluster's objects (the apiserver's listers).

    ``resource`` is the lower-case plural (``pods``, ``nodes``, ``serviceaccounts``,
    ``persistentvolumeclaims``, ``persistentvolumes``, ``csidrivers``); ``namespace`` is
    ``""`` for cluster-scoped objects. Returns the object as a JSON-like mapping, or None
    when it does not exist.
    """

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object, or None when absent."""
        ...
