"""``credprov kep4412 wire``: the objects a KEP-4412 provider needs, generated and proven.

Parses the options and renders; building and proving are
:mod:`credprov.nodeauth.wiring`. The manifests go to stdout as one YAML stream (``-o
text``, the default) or inside a JSON document (``-o json``), or with ``--out DIR`` one
file per object; warnings and the proof's text go to stderr. Exit 0, 1 when the proof
denies a pod, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from credprov import cmdoptions as opts
from credprov.errors import EXIT_FAILURE, EXIT_OK, UsageError

_DESCRIPTION = (
    "Generate what a credential provider with tokenAttributes (KEP-4412) needs: its "
    "CredentialProviderConfig entry (decoded and validated as the kubelet would), a "
    "ClusterRole granting request-serviceaccounts-token-audience on the audience for the "
    "listed service accounts and its ClusterRoleBinding to group system:nodes, and the "
    "service accounts' annotations. The provider and service accounts come from FILE (a "
    "KEP4412Wiring document, apiVersion credprov.io/v1alpha1; - for stdin) and/or the "
    "flags, which win. With --objects, prove it: for every bound pod that uses a listed "
    "service account or pulls an image the provider matches, its node must get the pod's "
    "token (get serviceaccounts, the required annotations, the TokenRequest through the "
    "Node authorizer, NodeRestriction and RBAC, the token verified), with the generated "
    "objects applied (the report on stderr). Output: -o text (the default) is the "
    "manifests as one YAML stream, ready for git; -o json one document with manifests, "
    "files, warnings and proof. --feature-gates are the kubelet's and the API server's. "
    "Exit 0; 1 when a pod is denied; 2 for bad input. See docs/kep4412-wire.md."
)


def add_parser(sub: Any) -> None:
    """Add ``kep4412 wire`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "kep4412",
        help="KEP-4412 service-account tokens: generate and prove a provider's wiring",
        description="KEP-4412 (service-account tokens for credential providers).",
    )
    opts.add_common(p, leaf=False)
    ksub = p.add_subparsers(dest="kep4412_command", metavar="SUBCOMMAND")
    ksub.required = True
    wire = ksub.add_parser(
        "wire",
        help="the provider entry, RBAC and annotations, as YAML manifests; --objects proves them",
        description=_DESCRIPTION,
    )
    wire.add_argument(
        "input", nargs="?", metavar="FILE", help="a KEP4412Wiring document (YAML or JSON)"
    )
    _add_provider_options(wire)
    wire.add_argument(
        "--service-account",
        dest="service_accounts",
        action="append",
        default=[],
        metavar="NS/NAME[:KEY=VALUE]",
        help="a service account that uses the provider, optionally with one annotation "
        "value to set (repeat it for more)",
    )
    opts.OUT_DIR.add(
        wire, note="one YAML file per object, each written atomically, instead of stdout"
    )
    opts.OBJECTS.add(wire)
    opts.add_common(wire, opts.FEATURE_GATES)
    p.set_defaults(run=run)


def _add_provider_options(wire: argparse.ArgumentParser) -> None:
    group = wire.add_argument_group("the provider (override FILE's provider)")
    group.add_argument("--provider", metavar="NAME", help="the provider's (plugin's) name")
    group.add_argument(
        "--match-image",
        dest="match_images",
        action="append",
        metavar="PATTERN",
        help="a matchImages pattern (repeatable; replaces FILE's list)",
    )
    group.add_argument(
        "--audience", metavar="AUDIENCE", help="tokenAttributes.serviceAccountTokenAudience"
    )
    group.add_argument(
        "--cache-type", metavar="TYPE", help="tokenAttributes.cacheType: ServiceAccount or Token"
    )
    group.add_argument(
        "--require-service-account",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="tokenAttributes.requireServiceAccount (default: true)",
    )
    group.add_argument(
        "--required-annotation",
        dest="required_annotations",
        action="append",
        metavar="KEY",
        help="tokenAttributes.requiredServiceAccountAnnotationKeys (repeatable)",
    )
    group.add_argument(
        "--optional-annotation",
        dest="optional_annotations",
        action="append",
        metavar="KEY",
        help="tokenAttributes.optionalServiceAccountAnnotationKeys (repeatable)",
    )
    group.add_argument(
        "--default-cache-duration",
        type=opts.duration,
        metavar="DURATION",
        help="defaultCacheDuration, a Go duration",
    )
    group.add_argument(
        "--plugin-api-version",
        metavar="VERSION",
        help="the provider's apiVersion (default: credentialprovider.kubelet.k8s.io/v1)",
    )


def _service_account(text: str) -> Any:
    """``NS/NAME[:KEY=VALUE]`` → a :class:`~credprov.nodeauth.wiring.ServiceAccountRef`."""
    from credprov.nodeauth.wiring import ServiceAccountRef

    ref, sep, annotation = text.partition(":")
    namespace, slash, name = ref.partition("/")
    key, eq, value = annotation.partition("=")
    if not slash or not namespace or not name or (sep and (not eq or not key)):
        raise UsageError(f"--service-account {text!r}: want NAMESPACE/NAME[:KEY=VALUE]")
    return ServiceAccountRef(namespace, name, {key: value} if sep else {})


def _spec(args: argparse.Namespace) -> Any:
    """The :class:`~credprov.nodeauth.wiring.WiringSpec`: FILE, then the flags."""
    from credprov._go.durations import format_duration
    from credprov.nodeauth.wiring import load_spec, merge_spec

    provider: dict[str, Any] = {}
    for flag, key in (("provider", "name"), ("plugin_api_version", "apiVersion")):
        if getattr(args, flag) is not None:
            provider[key] = getattr(args, flag)
    if args.match_images:
        provider["matchImages"] = list(args.match_images)
    if args.default_cache_duration is not None:
        provider["defaultCacheDuration"] = format_duration(args.default_cache_duration)
    attrs: dict[str, Any] = {}
    for flag, key in (
        ("audience", "serviceAccountTokenAudience"),
        ("cache_type", "cacheType"),
        ("require_service_account", "requireServiceAccount"),
        ("required_annotations", "requiredServiceAccountAnnotationKeys"),
        ("optional_annotations", "optionalServiceAccountAnnotationKeys"),
    ):
        if getattr(args, flag) is not None:
            attrs[key] = getattr(args, flag)
    return merge_spec(
        load_spec(args.input) if args.input else None,
        provider=provider,
        token_attributes=attrs,
        service_accounts=[_service_account(t) for t in args.service_accounts],
    )


def _gates(spec: str) -> dict[str, bool]:
    from credprov.credentialprovider.plugin.config import ConfigError, parse_feature_gates
    from credprov.nodeauth.wiring import KNOWN_FEATURE_GATES

    try:
        return parse_feature_gates(spec, known=KNOWN_FEATURE_GATES)
    except ConfigError as exc:
        raise UsageError(f"--feature-gates: {exc}") from None


def _load_objects(path: str) -> Any:
    from credprov.nodeauth.store import NodeAuthError, load_objects_file
    from credprov.nodeauth.wiring import WiringError

    try:
        return load_objects_file(path)
    except NodeAuthError as exc:
        error = WiringError(str(exc))
        raise (error.with_hint(exc.hint) if exc.hint else error) from None


def _pod_images(spec: Any) -> list[str]:
    from credprov.kubelet.podspec import pod_images

    return [image for _, image, _ in pod_images(spec)]


def run(args: argparse.Namespace) -> int:
    """Build, write or print, prove; the exit status."""
    from credprov.cli.main import warn
    from credprov.nodeauth import wiring as w

    gates = _gates(args.feature_gates)
    spec = _spec(args)
    store = _load_objects(args.objects) if args.objects else None
    built = w.build(spec, gates)
    proof = None
    if store is not None:
        proof = w.prove(built, store, feature_gates=gates, pod_images=_pod_images)
    files = w.write_manifests(built.manifests, args.out) if args.out else []
    if args.output == "json":
        opts.print_json(
            {
                "manifests": built.manifests,
                "files": files,
                "warnings": list(built.warnings),
                "proof": proof.to_dict() if proof is not None else None,
            }
        )
    else:
        for message in built.warnings:
            warn(message)
        if args.out:
            for path in files:
                print(f"wrote {path}")
        else:
            sys.stdout.write(w.render_yaml(built.manifests))
        if proof is not None:
            for line in proof_lines(proof, built.audience, args.objects):
                print(line, file=sys.stderr)
    return EXIT_OK if proof is None or proof.allowed else EXIT_FAILURE


_VIA = {"serviceAccount": "uses a listed service account", "image": "pulls a matched image"}


def proof_lines(proof: Any, audience: str, objects: str) -> list[str]:
    """The text form of a :class:`~credprov.nodeauth.wiring.Proof` (stderr); what came from
    the objects file is folded to one line each."""
    safe = opts.one_line
    lines = [safe(f'proof: {objects} plus the generated objects, audience "{audience}"')]
    if not proof.pods:
        lines.append(
            "  no pod uses a listed service account or pulls an image the provider matches"
        )
    width = max((len(safe(f"{p.namespace}/{p.name}")) for p in proof.pods), default=0)
    for pod in proof.pods:
        where = f"on {pod.node}" if pod.node else "unscheduled"
        account = f"{pod.namespace}/{pod.service_account}" if pod.service_account else "none"
        lines.append(
            f"  {pod.status:<7}  {safe(pod.namespace + '/' + pod.name):<{width}}  "
            + safe(f"{where}, service account {account} ({_VIA[pod.via]}): {pod.reason}")
        )
    counts = {s: sum(1 for p in proof.pods if p.status == s) for s in ("allowed", "denied")}
    skipped = len(proof.pods) - counts["allowed"] - counts["denied"]
    lines.append(
        f"{len(proof.pods)} pods: {counts['allowed']} allowed, {counts['denied']} denied"
        + (f", {skipped} skipped" if skipped else "")
    )
    return lines
