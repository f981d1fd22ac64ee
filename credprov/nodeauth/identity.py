"""Which node, if any, a request comes from (``pkg/auth/nodeidentifier``).

A kubelet authenticates as ``system:node:<nodeName>`` in the group ``system:nodes``: the
identity kubelet TLS bootstrapping puts in its client certificate (``CN=system:node:<name>,
O=system:nodes``). Both halves are required. The part after the prefix is not validated
(it may be empty or contain ``:``); an empty node name is still a node identity, which the
Node authorizer and NodeRestriction then refuse as "unknown node".
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NODES_GROUP", "NODE_USER_PREFIX", "node_identity"]

#: The user-name prefix of node identities.
NODE_USER_PREFIX = "system:node:"
#: The group every node identity belongs to (``user.NodesGroup``).
NODES_GROUP = "system:nodes"


def node_identity(user_name: str, groups: Sequence[str]) -> tuple[str, bool]:
    """``NodeIdentity``: ``(node_name, is_node)`` for a user.

    Returns ``("", False)`` unless the name starts with ``system:node:`` *and* the groups
    contain ``system:nodes``; otherwise the name after the prefix (possibly ``""``) and True.
    """
    if not user_name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in groups:
        return "", False
    return user_name[len(NODE_USER_PREFIX) :], True
