"""``credprov nodeauth``: ask the Node authorizer about one request, or audit one node.

(Over 300 lines because of two subcommands' options and their text renderers; the
authorizer, graph and audit are :mod:`credprov.nodeauth`.)

``check`` builds the authorizer's graph from an objects file (``kubectl get … -o json``)
and prints the decision for one request with upstream's reason, and how it was reached
(the graph path from the object to the node, or the ``system:node`` rule); exit status 0
when allowed, 1 when not. ``audit`` lists everything a node can read — secrets, config
maps, PVCs/PVs, resource claims, service accounts and the token audiences it may request
for them — for security reviews. Only names are printed, never object content.
"""

from __future__ import annotations

import argparse
from typing import Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.errors import EXIT_FAILURE, EXIT_OK

# API groups of the resources a node deals with, for ``--resource`` without ``--api-group``.
_DEFAULT_GROUPS = {
    "leases": "coordination.k8s.io",
    "csinodes": "storage.k8s.io",
    "csidrivers": "storage.k8s.io",
    "volumeattachments": "storage.k8s.io",
    "storageclasses": "storage.k8s.io",
    "resourceclaims": "resource.k8s.io",
    "resourceslices": "resource.k8s.io",
    "resourceclaimtemplates": "resource.k8s.io",
    "deviceclasses": "resource.k8s.io",
    "podcertificaterequests": "certificates.k8s.io",
    "certificatesigningrequests": "certificates.k8s.io",
    "clustertrustbundles": "certificates.k8s.io",
    "runtimeclasses": "node.k8s.io",
    "tokenreviews": "authentication.k8s.io",
    "subjectaccessreviews": "authorization.k8s.io",
    "localsubjectaccessreviews": "authorization.k8s.io",
    "endpointslices": "discovery.k8s.io",
}
# kubectl's short names for the resources above and the core ones.
_SHORT_NAMES = {
    "cm": "configmaps",
    "csr": "certificatesigningrequests",
    "ep": "endpoints",
    "no": "nodes",
    "ns": "namespaces",
    "po": "pods",
    "pv": "persistentvolumes",
    "pvc": "persistentvolumeclaims",
    "sa": "serviceaccounts",
    "sc": "storageclasses",
    "svc": "services",
}
_DEFAULT_NODE_GROUPS = ("system:nodes", "system:authenticated")
# Gates read by the audit besides the authorizer's own.
_AUDIT_GATES = {"ServiceAccountNodeAudienceRestriction": True}
_GATES_TEXT = (
    " --feature-gates are the API server's: AuthorizeNodeWithSelectors, "
    "KubeletServiceAccountTokenForCredentialProviders, PodCertificateRequest, "
    "DynamicResourceAllocation, ClusterTrustBundleProjection, "
    "ServiceAccountNodeAudienceRestriction."
)


def add_parser(sub: Any) -> None:
    """Add ``nodeauth check|audit`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "nodeauth",
        help="the Node authorizer: check a node's request, audit what a node can read",
        description=(
            "Answer as the API server's Node authorizer would, from the cluster's objects "
            "(kubectl get pods,secrets,configmaps,persistentvolumeclaims,persistentvolumes,"
            "serviceaccounts,... -A -o json). See docs/nodeauth.md."
        ),
    )
    opts.add_common(p, leaf=False)
    nsub = p.add_subparsers(dest="nodeauth_command", metavar="SUBCOMMAND")
    nsub.required = True

    check = nsub.add_parser(
        "check",
        help="the decision for one request (exit 0 allowed, 1 not)",
        description=(
            "Print the Node authorizer's decision for one request, its reason (upstream's "
            "text) and the graph path or rule behind it. Exit 0 when allowed, 1 when not "
            "(the authorizer never denies: a refusal is 'no opinion', which RBAC could still "
            "override)." + _GATES_TEXT
        ),
    )
    opts.OBJECTS.add(check, required=True)
    check.add_argument("--user", required=True, help="user name, e.g. system:node:node-a")
    check.add_argument(
        "--group",
        action="append",
        dest="groups",
        metavar="GROUP",
        help="a group of the user (repeatable; default: system:nodes and system:authenticated)",
    )
    check.add_argument("--verb", required=True, help="get, list, watch, create, update, ...")
    check.add_argument(
        "--resource",
        required=True,
        help="plural resource (secrets), optionally resource/subresource "
        "(serviceaccounts/token) or resource.group (leases.coordination.k8s.io)",
    )
    check.add_argument("--subresource", default="", help="subresource (status, token, ...)")
    check.add_argument(
        "--api-group",
        default=None,
        help='API group ("" for core; default: the group of well-known resources)',
    )
    check.add_argument("--namespace", "-n", default="", help="namespace of the object")
    check.add_argument("--name", default="", help="name of the object")
    check.add_argument(
        "--field-selector", default="", help="field selector of a list/watch (spec.nodeName=X)"
    )
    opts.add_common(check, opts.FEATURE_GATES)

    audit = nsub.add_parser(
        "audit",
        help="everything one node can read (secrets, configmaps, PVCs/PVs, token audiences)",
        description=(
            "List every object the node can read through the Node authorizer, with the pods "
            "or volumes that give it access, the service-account token audiences it may "
            "request, and what the static system:node rules let any node read." + _GATES_TEXT
        ),
    )
    opts.OBJECTS.add(audit, required=True)
    opts.NODE.add(audit, required=True)
    opts.add_common(audit, opts.FEATURE_GATES)
    p.set_defaults(run=run)


def parse_feature_gates(spec: str) -> dict[str, bool]:
    """``Name=bool,...`` for the API server gates ``nodeauth`` reads.

    Raises:
        credprov.credentialprovider.plugin.config.ConfigError: an unknown gate or a value
            that is not a bool (component-base's text).
    """
    from credprov.credentialprovider.plugin.config import parse_feature_gates as parse_gates
    from credprov.nodeauth.authorizer import FEATURE_GATE_DEFAULTS

    return parse_gates(spec, known={**FEATURE_GATE_DEFAULTS, **_AUDIT_GATES})


def _load(path: str) -> Any:
    from credprov.nodeauth.store import load_objects_file

    return load_objects_file(path)


def _request(args: argparse.Namespace) -> tuple[str, str, str]:
    """``(api_group, resource, subresource)`` from ``--resource``/``--subresource``/``--api-group``."""
    resource = args.resource.strip()
    subresource = args.subresource.strip()
    if "/" in resource:
        if subresource:
            raise CLIError("give the subresource either in --resource or in --subresource")
        resource, _, subresource = resource.partition("/")
    group = args.api_group
    if "." in resource:
        if group is not None:
            raise CLIError("give the API group either in --resource or in --api-group")
        resource, _, group = resource.partition(".")
    resource = resource.lower()
    resource = _SHORT_NAMES.get(resource, resource)
    if not resource:
        raise CLIError("--resource is empty")
    if group is None:
        group = _DEFAULT_GROUPS.get(resource, "")
    return group, resource, subresource


def run(args: argparse.Namespace) -> int:
    """Run ``check`` or ``audit``; the exit status."""
    if args.nodeauth_command == "check":
        return _run_check(args)
    return _run_audit(args)


def _run_check(args: argparse.Namespace) -> int:
    from credprov.cmdoptions import print_json
    from credprov.nodeauth.authorizer import NodeAuthorizer
    from credprov.nodeauth.graph import Graph
    from credprov.nodeauth.types import Attributes

    gates = parse_feature_gates(args.feature_gates)
    group, resource, subresource = _request(args)
    store = _load(args.objects)
    attrs = Attributes(
        user=args.user,
        groups=tuple(args.groups) if args.groups else _DEFAULT_NODE_GROUPS,
        verb=args.verb,
        api_group=group,
        resource=resource,
        subresource=subresource,
        namespace=args.namespace,
        name=args.name,
        field_selector=args.field_selector,
    )
    explanation = NodeAuthorizer(Graph.from_store(store), gates).explain(attrs)
    decision = explanation.decision
    if args.output == "json":
        print_json(
            {
                "allowed": decision.allowed,
                "decision": decision.kind.value,
                "reason": decision.reason,
                "request": {
                    "user": attrs.user,
                    "groups": list(attrs.groups),
                    "verb": attrs.verb,
                    "apiGroup": attrs.api_group,
                    "resource": attrs.resource,
                    "subresource": attrs.subresource,
                    "namespace": attrs.namespace,
                    "name": attrs.name,
                    "fieldSelector": attrs.field_selector,
                },
                "node": explanation.node_name or None,
                "route": explanation.route,
                "path": list(explanation.path),
                "detail": explanation.detail,
                "rule": dict(explanation.rule) if explanation.rule else None,
            }
        )
    else:
        for line in _check_lines(attrs, explanation):
            print(line)
    return EXIT_OK if decision.allowed else EXIT_FAILURE


def _check_lines(attrs: Any, explanation: Any) -> list[str]:
    decision = explanation.decision
    what = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.api_group:
        what += f".{attrs.api_group}"
    target = f' "{attrs.name}"' if attrs.name else ""
    where = f' in namespace "{attrs.namespace}"' if attrs.namespace else ""
    selector = f" with field selector {attrs.field_selector}" if attrs.field_selector else ""
    verdict = "allowed" if decision.allowed else "not allowed (no opinion)"
    lines = [
        f"{verdict}: {attrs.user} {attrs.verb} {what}{target}{where}{selector}",
        f"reason: {decision.reason or '(none)'}",
    ]
    route = explanation.route
    if route == "graph":
        if explanation.path:
            lines.append("path: " + " -> ".join(explanation.path))
        else:
            lines.append(f"graph: {explanation.detail}")
    elif route == "node-rules":
        if explanation.rule is not None:
            rule = explanation.rule
            groups = ",".join(g or '""' for g in rule["apiGroups"])
            lines.append(
                f"rule: system:node allows {','.join(rule['verbs'])} "
                f"{','.join(rule['resources'])} in API group {groups}"
            )
        else:
            lines.append("rule: no system:node rule allows this")
    elif route == "node-authorizer":
        lines.append("decided by the Node authorizer's own rule for this resource")
    elif explanation.detail:
        lines.append(explanation.detail)
    return lines


def _run_audit(args: argparse.Namespace) -> int:
    from credprov.cmdoptions import print_json
    from credprov.nodeauth.audit import audit

    gates = parse_feature_gates(args.feature_gates)
    store = _load(args.objects)
    report = audit(store, args.node, feature_gates=gates)
    if args.output == "json":
        print_json(report)
    else:
        for line in audit_lines(report):
            print(line)
    return EXIT_OK


def _ref(entry: dict[str, Any]) -> str:
    name = f"{entry['namespace']}/{entry['name']}" if "namespace" in entry else entry["name"]
    return name if entry.get("exists", True) else f"{name} (not found)"


_SECTION_TITLES = (
    ("secrets", "secrets"),
    ("configmaps", "configmaps"),
    ("persistentVolumeClaims", "persistentvolumeclaims"),
    ("persistentVolumes", "persistentvolumes"),
    ("resourceClaims", "resourceclaims"),
    ("volumeAttachments", "volumeattachments"),
    ("resourceSlices", "resourceslices"),
    ("podCertificateRequests", "podcertificaterequests"),
)


def audit_lines(report: dict[str, Any]) -> list[str]:
    """The text form of :func:`credprov.nodeauth.audit.audit`'s report."""
    node = report["node"]
    lines = [f"node {node}: Node object {'present' if report['nodeExists'] else 'not found'}"]
    if not report["nodeKnown"]:
        lines.append("  no pod, volume attachment or resource slice is bound to this node")
    pods = report["pods"]
    lines.append(f"pods ({len(pods)}):")
    for pod in pods:
        extra = f"  serviceAccount={pod['serviceAccount']}" if pod["serviceAccount"] else ""
        extra += "  (mirror pod)" if pod["mirror"] else ""
        lines.append(f"  {pod['namespace']}/{pod['name']}{extra}")
    for key, title in _SECTION_TITLES:
        entries = report[key]
        if not entries and key not in ("secrets", "configmaps"):
            continue
        lines.append(f"{title} ({len(entries)}):")
        width = max((len(_ref(e)) for e in entries), default=0)
        for entry in entries:
            lines.append(f"  {_ref(entry):<{width}}  via {', '.join(entry['via'])}")
    accounts = report["serviceAccounts"]
    lines.append(f"serviceaccounts ({len(accounts)}):")
    for account in accounts:
        get = "get allowed" if account["get"] else "get not allowed"
        lines.append(f"  {_ref(account)}  {get}; pods {', '.join(account['pods'])}")
        lines.append("    token audiences:")
        if not account["tokenAudiences"]:
            lines.append("      none")
        for audience in account["tokenAudiences"]:
            name = audience["audience"]
            shown = '"" (the API server)' if name == "" else f'"{name}"'
            lines.append(f"      {shown}  via {'; '.join(audience['via'])}")
        if account["podCertificateSigners"]:
            lines.append("    pod certificate signers:")
            for signer in account["podCertificateSigners"]:
                lines.append(f'      "{signer["signer"]}"  via {"; ".join(signer["via"])}')
    lines.append("cluster-wide reads (system:node rules):")
    lines.extend(f"  {rule}" for rule in report["clusterWide"])
    return lines
