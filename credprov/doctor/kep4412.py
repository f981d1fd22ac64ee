"""The KEP-4412 check: may this node request the tokens its plugins need?

``kep4412.rbac``: for each provider with ``tokenAttributes`` and each pod on the node whose
images it matches, the service-account GET and the TokenRequest the kubelet would send,
answered by :class:`credprov.nodeauth.NodeAPI` (the Node authorizer, NodeRestriction and
RBAC over ``--objects``). Registry audiences never appear in pod specs, so the usual
failure is a missing ``request-serviceaccounts-token-audience`` grant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from credprov.api import internal
from credprov.doctor.cluster import load_store, pod_id, pod_service_account, pod_uid, pods_on_node
from credprov.doctor.context import SA_TOKEN_GATE, Context
from credprov.doctor.report import Finding, Status
from credprov.imageauth.images import InvalidImageError, parse_image_name
from credprov.imageauth.matching import urls_match_str
from credprov.kubelet.podspec import pod_images

if TYPE_CHECKING:
    from credprov.nodeauth import NodeAPI

__all__ = ["check_kep4412_rbac"]


def _skip(why: str, subject: str = "") -> Finding:
    return Finding("kep4412.rbac", Status.SKIP, subject, why)


def _matches(provider: internal.CredentialProvider, spec: Mapping[str, Any]) -> bool:
    """Whether the provider's ``matchImages`` match any image the pod pulls."""
    repos = []
    for _, image, _ in pod_images(spec):
        try:
            repos.append(parse_image_name(image))
        except InvalidImageError:
            continue
    return any(urls_match_str(p, r) for p in provider.match_images for r in repos)


def check_kep4412_rbac(ctx: Context) -> list[Finding]:
    """``kep4412.rbac``: one finding per provider with ``tokenAttributes``.

    Each pod on the node whose images the provider matches is asked for as the kubelet
    would (service-account GET, then a TokenRequest for the provider's audience) through
    :class:`credprov.nodeauth.NodeAPI`; tokens it mints are registered for redaction.

    Returns:
        SKIP without ``--objects``, a valid config, such providers or the gate; else per
        provider FAIL (the first refusal, and how many more), PASS (the pods checked) or
        SKIP (no pod on the node uses it).

    Raises:
        DoctorUsageError: an unreadable ``--objects`` file.
    """
    if not ctx.options.objects:
        return [_skip("needs --objects (the cluster's objects)")]
    if ctx.config is None:
        return [_skip("no valid provider config")]
    providers = [p for p in ctx.config.providers if p.token_attributes is not None]
    if not providers:
        return [_skip("no provider has tokenAttributes")]
    if not ctx.gate(SA_TOKEN_GATE):
        return [_skip(f"{SA_TOKEN_GATE} is off")]
    from credprov.nodeauth import NodeAPI

    store = load_store(ctx)
    assert store is not None  # --objects was given
    node = ctx.node_name
    api = NodeAPI(store, node)
    pods = pods_on_node(store, node)
    return [_provider_finding(ctx, api, provider, pods) for provider in providers]


def _provider_finding(
    ctx: Context,
    api: NodeAPI,
    provider: internal.CredentialProvider,
    pods: list[Mapping[str, Any]],
) -> Finding:
    """``kep4412.rbac`` for one provider with ``tokenAttributes`` over the node's pods."""
    attrs = provider.token_attributes
    assert attrs is not None
    audience = attrs.service_account_token_audience
    checked: list[str] = []
    failures: list[str] = []
    for pod in pods:
        spec = pod["spec"]
        if not _matches(provider, spec):
            continue
        namespace, name = pod_id(pod)
        sa = pod_service_account(spec)
        if not sa:
            if attrs.require_service_account:
                failures.append(
                    f"pod {namespace}/{name} has no service account and the provider "
                    "requires one (the plugin is not run)"
                )
            continue
        failure = _request_token(ctx, api, pod, sa, audience)
        if failure is None:
            checked.append(f"{namespace}/{name} ({sa})")
        else:
            failures.append(failure)
    if failures:
        return Finding(
            "kep4412.rbac",
            Status.FAIL,
            provider.name,
            f"audience {audience!r}: {failures[0]}"
            + (f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""),
            "grant the nodes 'request-serviceaccounts-token-audience' on resource "
            f"{audience!r} (a ClusterRole bound to group system:nodes), see "
            "docs/kep4412.md",
        )
    if checked:
        return Finding(
            "kep4412.rbac",
            Status.PASS,
            provider.name,
            f"audience {audience!r}: node {api.node_name} may request tokens for "
            + ", ".join(checked),
        )
    return _skip(
        f"no pod on node {api.node_name!r} pulls an image this provider matches", provider.name
    )


def _request_token(
    ctx: Context, api: NodeAPI, pod: Mapping[str, Any], sa: str, audience: str
) -> str | None:
    """Ask for ``pod``'s token as its node would: None when granted (the token is
    registered for redaction), else why not (``pod ns/name (sa): <refusal>``)."""
    from credprov.credentialprovider.chain import ServiceAccountError, TokenRequest

    namespace, name = pod_id(pod)
    try:
        info = api.get_service_account(namespace, sa)
        token = api.create_token(
            TokenRequest(
                namespace=namespace,
                service_account_name=sa,
                service_account_uid=info.uid,
                audience=audience,
                pod_name=name,
                pod_uid=pod_uid(pod),
            )
        )
    except ServiceAccountError as exc:
        return f"pod {namespace}/{name} ({sa}): {exc}"
    ctx.redact_token(token)
    return None
