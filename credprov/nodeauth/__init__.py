"""The Node authorizer, NodeRestriction admission and the object graph behind them."""

from credprov.nodeauth.admission import AdmissionError, AdmissionRequest, NodeRestriction
from credprov.nodeauth.audit import audit
from credprov.nodeauth.authorizer import (
    FEATURE_GATE_DEFAULTS,
    Explanation,
    NodeAuthorizer,
    node_rules,
    parse_field_selector,
)
from credprov.nodeauth.graph import Graph, GraphPopulator
from credprov.nodeauth.identity import node_identity
from credprov.nodeauth.nodeapi import APIError, NodeAPI, TokenIssuer
from credprov.nodeauth.rbac import RBACAuthorizer
from credprov.nodeauth.store import NodeAuthError, ObjectStore, load_objects_file
from credprov.nodeauth.types import Attributes, Decision, DecisionKind, ObjectGetter

__all__ = [
    "FEATURE_GATE_DEFAULTS",
    "APIError",
    "AdmissionError",
    "AdmissionRequest",
    "Attributes",
    "Decision",
    "DecisionKind",
    "Explanation",
    "Graph",
    "GraphPopulator",
    "NodeAPI",
    "NodeAuthError",
    "NodeAuthorizer",
    "NodeRestriction",
    "ObjectGetter",
    "ObjectStore",
    "RBACAuthorizer",
    "TokenIssuer",
    "audit",
    "load_objects_file",
    "node_identity",
    "node_rules",
    "parse_field_selector",
]
