"""The KEP-2535 and KEP-4412 checks: pull policy, pull records, token RBAC, upgrade preflight.

* ``pull-policy.valid``: the defaulted policy and allowlist through
  :func:`credprov.pullmanager.policies.validate_policy_config` (the kubelet's messages);
* ``pull-records.health``: ``<kubelet root>/image_manager`` read with
  :class:`~credprov.pullmanager.fsstore.FSPullRecordsAccessor` (``migrate=False``: nothing is
  written), against the kubelet's in-memory caps and the 0700/0600 permissions it creates;
* ``kep4412.rbac``: for each ``tokenAttributes`` provider and each pod on the node whose
  images it matches, the service-account GET and the TokenRequest through
  :class:`credprov.nodeauth.NodeAPI` (Node authorizer, NodeRestriction, RBAC);
* ``kep2535.preflight``: each container of the node's pods decided as
  ``MustAttemptImagePull`` would decide it, from the node's images, its records and the
  policy, without any pull.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping
from typing import Any

from credprov.credentialprovider.images import InvalidImageError, parse_image_name
from credprov.credentialprovider.matching import urls_match_str
from credprov.doctor.context import ENSURE_PULLED_GATE, SA_TOKEN_GATE, Context, DoctorUsageError
from credprov.doctor.discovery import ALLOWLIST, POLICY, ROOT_DIR
from credprov.doctor.report import Finding, Status
from credprov.kubelet.podspec import pod_images
from credprov.pullmanager.interfaces import RuntimeImage

__all__ = [
    "MAX_INTENTS",
    "MAX_PULLED_RECORDS",
    "check_kep2535_preflight",
    "check_kep4412_rbac",
    "check_pull_policy",
    "check_pull_records",
    "load_node_images",
]

#: The kubelet's in-memory KEP-2535 cache sizes (``NewCachedPullRecordsAccessor`` caps).
MAX_INTENTS = 1024
MAX_PULLED_RECORDS = 2000


def _skip(check_id: str, why: str, subject: str = "") -> Finding:
    return Finding(check_id, Status.SKIP, subject, why)


# -- pull-policy.valid ---------------------------------------------------------------------------


def effective_policy(ctx: Context) -> tuple[Any, Any, str]:
    """(policy, allowlist, where the policy came from), defaulted as the kubelet does."""
    from credprov.pullmanager.policies import DEFAULT_POLICY

    policy_value = ctx.setup.values.get(POLICY)
    allow_value = ctx.setup.values.get(ALLOWLIST)
    policy = policy_value.value if policy_value else ""
    allowlist = allow_value.value if allow_value else []
    source = policy_value.source if policy_value else "default"
    if ctx.gate(ENSURE_PULLED_GATE) and policy in ("", None):
        policy, source = DEFAULT_POLICY, "default"
    return policy, allowlist, source


def check_pull_policy(ctx: Context) -> list[Finding]:
    from credprov.pullmanager.policies import validate_policy_config

    if ctx.setup.kubelet_configuration_error is not None:
        return [
            Finding(
                "pull-policy.valid",
                Status.FAIL,
                "",
                f"{ctx.setup.kubelet_configuration_error}: the kubelet exits at start",
                "fix the KubeletConfiguration file (--config)",
            )
        ]
    policy, allowlist, source = effective_policy(ctx)
    if not isinstance(policy, str) or not (
        isinstance(allowlist, list) and all(isinstance(p, str) for p in allowlist)
    ):
        return [
            Finding(
                "pull-policy.valid",
                Status.FAIL,
                "",
                "imagePullCredentialsVerificationPolicy must be a string and "
                "preloadedImagesVerificationAllowlist a list of strings: the kubelet exits",
                "fix the types in the KubeletConfiguration",
            )
        ]
    gate = ctx.gate(ENSURE_PULLED_GATE)
    errors = validate_policy_config(policy, allowlist, gate)
    if errors:
        return [
            Finding(
                "pull-policy.valid",
                Status.FAIL,
                policy,
                f"{'; '.join(errors)}: the kubelet exits at start",
                "use one of NeverVerify, NeverVerifyPreloadedImages, "
                "NeverVerifyAllowlistedImages, AlwaysVerify; an allowlist only with "
                "NeverVerifyAllowlistedImages, entries without tag or digest ('/*' suffix)",
            )
        ]
    if not gate:
        return [
            Finding(
                "pull-policy.valid",
                Status.PASS,
                "",
                f"{ENSURE_PULLED_GATE} is off: every present image is used without "
                "verifying the pod's credentials",
            )
        ]
    listed = f", allowlist {len(allowlist)} entr{'y' if len(allowlist) == 1 else 'ies'}"
    return [
        Finding(
            "pull-policy.valid",
            Status.PASS,
            policy,
            f"policy {policy} ({source}){listed if allowlist else ''}",
        )
    ]


# -- pull-records.health --------------------------------------------------------------------------


def check_pull_records(ctx: Context) -> list[Finding]:
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor

    if not ctx.gate(ENSURE_PULLED_GATE):
        return [_skip("pull-records.health", f"{ENSURE_PULLED_GATE} is off")]
    kubelet_root = str(ctx.setup.get(ROOT_DIR) or "/var/lib/kubelet")
    manager_dir = f"{kubelet_root.rstrip('/')}/image_manager"
    subject = manager_dir
    st = ctx.root.stat(manager_dir)
    if st is None:
        return [
            Finding(
                "pull-records.health",
                Status.PASS,
                subject,
                "no records yet: every image present now counts as preloaded",
            )
        ]
    host_root = ctx.root.host_path(kubelet_root)
    store = FSPullRecordsAccessor(host_root, migrate=False)
    intents, intent_errors = store.list_image_pull_intents()
    records, record_errors = store.list_image_pulled_records()
    findings: list[Finding] = []
    strip = ctx.root.root.rstrip("/")

    def shown(text: str) -> str:
        return text.replace(strip, "") if strip else text

    errors = intent_errors + record_errors
    if errors:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"{len(errors)} file(s) the kubelet cannot use, e.g. {shown(errors[0])}: it "
                "treats those images as unverified (re-pull; Never pods fail)",
                "inspect with 'credprov pull-records verify'; remove the broken files "
                "(the kubelet rewrites records on the next pull)",
            )
        )
    loose = _loose_permissions(ctx, manager_dir)
    if loose:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"{len(loose)} path(s) readable by others, e.g. {loose[0]}: records name "
                "the node's images and pull secrets",
                f"chmod 0700 the directories and 0600 the files under {manager_dir}",
            )
        )
    if len(intents) > MAX_INTENTS or len(records) > MAX_PULLED_RECORDS:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"{len(intents)} intents / {len(records)} records exceed the kubelet's "
                f"in-memory caches ({MAX_INTENTS} / {MAX_PULLED_RECORDS}): lookups go to "
                "disk",
                "prune records of images the node no longer has ('credprov pull-records "
                "prune', or the kubelet's image GC)",
            )
        )
    if findings:
        return findings
    dangling = (
        f", {len(intents)} pull intent(s) (in flight or left by a restart)" if intents else ""
    )
    return [
        Finding(
            "pull-records.health",
            Status.PASS,
            subject,
            f"{len(records)} record(s){dangling}; permissions 0700/0600",
        )
    ]


def _loose_permissions(ctx: Context, manager_dir: str) -> list[str]:
    loose = []
    for directory in (manager_dir, f"{manager_dir}/pulling", f"{manager_dir}/pulled"):
        host = ctx.root.host_path(directory)
        try:
            st = os.lstat(host)
        except OSError:
            continue
        if stat.S_IMODE(st.st_mode) & 0o077:
            loose.append(f"{directory} ({stat.S_IMODE(st.st_mode):04o})")
        if directory == manager_dir:
            continue
        for name in ctx.root.listdir(directory):
            try:
                fst = os.lstat(os.path.join(host, name))
            except OSError:
                continue
            if stat.S_ISREG(fst.st_mode) and stat.S_IMODE(fst.st_mode) & 0o077:
                loose.append(f"{directory}/{name} ({stat.S_IMODE(fst.st_mode):04o})")
    return loose


# -- the cluster's objects ---------------------------------------------------------------------------


def load_store(ctx: Context) -> Any:
    """The ``--objects`` store, loaded once. Raises DoctorUsageError."""
    if ctx.store is None and ctx.options.objects:
        from credprov.nodeauth import NodeAuthError, load_objects_file

        try:
            ctx.store = load_objects_file(ctx.options.objects)
        except (OSError, NodeAuthError, ValueError) as exc:
            raise DoctorUsageError(f"--objects {ctx.options.objects}: {exc}") from None
    return ctx.store


def _pods_on_node(store: Any, node: str) -> list[Mapping[str, Any]]:
    return [
        pod
        for pod in store.list("pods")
        if isinstance(pod.get("spec"), Mapping) and pod["spec"].get("nodeName") == node
    ]


def _pod_id(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


# -- kep4412.rbac ----------------------------------------------------------------------------------


def check_kep4412_rbac(ctx: Context) -> list[Finding]:
    """(Over 80 lines on purpose: one pass over the providers with tokenAttributes and the pods that would use them.)"""
    if not ctx.options.objects:
        return [_skip("kep4412.rbac", "needs --objects (the cluster's objects)")]
    if ctx.config is None:
        return [_skip("kep4412.rbac", "no valid provider config")]
    providers = [p for p in ctx.config.providers if p.token_attributes is not None]
    if not providers:
        return [_skip("kep4412.rbac", "no provider has tokenAttributes")]
    if not ctx.gate(SA_TOKEN_GATE):
        return [_skip("kep4412.rbac", f"{SA_TOKEN_GATE} is off")]
    from credprov.credentialprovider.chain import ServiceAccountError, TokenRequest
    from credprov.nodeauth import NodeAPI

    store = load_store(ctx)
    node = ctx.node_name
    api = NodeAPI(store, node)
    pods = _pods_on_node(store, node)
    out: list[Finding] = []
    for provider in providers:
        attrs = provider.token_attributes
        assert attrs is not None
        audience = attrs.service_account_token_audience
        checked: list[str] = []
        failures: list[str] = []
        for pod in pods:
            repos = []
            for _, image, _ in pod_images(pod.get("spec") or {}):
                try:
                    repos.append(parse_image_name(image))
                except InvalidImageError:
                    continue
            if not any(urls_match_str(p, r) for p in provider.match_images for r in repos):
                continue
            namespace, name = _pod_id(pod)
            sa = str((pod.get("spec") or {}).get("serviceAccountName") or "")
            if not sa:
                if attrs.require_service_account:
                    failures.append(
                        f"pod {namespace}/{name} has no service account and the provider "
                        "requires one (the plugin is not run)"
                    )
                continue
            try:
                info = api.get_service_account(namespace, sa)
                token = api.create_token(
                    TokenRequest(
                        namespace=namespace,
                        service_account_name=sa,
                        service_account_uid=info.uid,
                        audience=audience,
                        pod_name=name,
                        pod_uid=str((pod.get("metadata") or {}).get("uid") or ""),
                    )
                )
                ctx.redact_token(token)
                checked.append(f"{namespace}/{name} ({sa})")
            except ServiceAccountError as exc:
                failures.append(f"pod {namespace}/{name} ({sa}): {exc}")
        if failures:
            out.append(
                Finding(
                    "kep4412.rbac",
                    Status.FAIL,
                    provider.name,
                    f"audience {audience!r}: {failures[0]}"
                    + (f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""),
                    "grant the nodes 'request-serviceaccounts-token-audience' on resource "
                    f"{audience!r} (a ClusterRole bound to group system:nodes), see "
                    "docs/kep4412.md",
                )
            )
        elif checked:
            out.append(
                Finding(
                    "kep4412.rbac",
                    Status.PASS,
                    provider.name,
                    f"audience {audience!r}: node {node} may request tokens for "
                    + ", ".join(checked),
                )
            )
        else:
            out.append(
                _skip(
                    "kep4412.rbac",
                    f"no pod on node {node!r} pulls an image this provider matches",
                    provider.name,
                )
            )
    return out


# -- kep2535.preflight ------------------------------------------------------------------------------


def load_node_images(ctx: Context) -> list[RuntimeImage]:
    """The node's images from ``--images FILE`` or ``--cri ENDPOINT``.

    Raises:
        DoctorUsageError: an unreadable or malformed file, an unusable endpoint.
    """
    options = ctx.options
    if options.images_file:
        try:
            with open(options.images_file, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise DoctorUsageError(f"--images {options.images_file}: not a regular file")
                data = fh.read(16 << 20).decode("utf-8", "replace")
        except OSError as exc:
            raise DoctorUsageError(f"--images {options.images_file}: {exc.strerror}") from None
        return parse_images(data, options.images_file)
    assert options.cri is not None
    from credprov.cri.client import CRIError, CRIRuntime

    try:
        with CRIRuntime(options.cri) as runtime:
            return list(runtime.list_images())
    except CRIError as exc:
        raise DoctorUsageError(f"--cri {options.cri}: {exc}") from None


def parse_images(data: str, where: str) -> list[RuntimeImage]:
    """One image reference per line, or ``crictl images -o json``."""
    if data.lstrip().startswith("{"):
        try:
            doc = json.loads(data)
        except json.JSONDecodeError as exc:
            raise DoctorUsageError(f"--images {where}: not JSON ({exc.msg})") from None
        images = doc.get("images") if isinstance(doc, dict) else None
        if not isinstance(images, list):
            raise DoctorUsageError(f"--images {where}: no 'images' list (crictl images -o json)")
        out = []
        for item in images:
            if not isinstance(item, dict):
                continue
            out.append(
                RuntimeImage(
                    id=str(item.get("id") or ""),
                    repo_tags=tuple(str(t) for t in item.get("repoTags") or ()),
                    repo_digests=tuple(str(d) for d in item.get("repoDigests") or ()),
                )
            )
        return out
    lines = [ln.strip() for ln in data.splitlines()]
    return [RuntimeImage(id="", repo_tags=(ln,)) for ln in lines if ln and not ln.startswith("#")]


def _default_pull_policy(image: str) -> str:
    """The API server's default: ``Always`` for ``:latest`` or no tag, else ``IfNotPresent``."""
    from credprov.credentialprovider.images import split_reference

    try:
        _, tag, digest = split_reference(image)
    except InvalidImageError:
        return "IfNotPresent"
    if digest:
        return "IfNotPresent"
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _find_image(image: str, node_images: list[RuntimeImage]) -> RuntimeImage | None:
    from credprov.credentialprovider.images import normalize_reference

    try:
        full = normalize_reference(image)
    except InvalidImageError:
        full = image
    for candidate in node_images:
        names = set(candidate.repo_tags) | set(candidate.repo_digests)
        if image in names or full in names:
            return candidate
        for name in names:
            try:
                if normalize_reference(name) == full:
                    return candidate
            except InvalidImageError:
                continue
    return None


def check_kep2535_preflight(ctx: Context) -> list[Finding]:
    """(Over 80 lines on purpose: one pass over the node's pods and images, deciding per container as the kubelet's image manager would.)"""
    if not ctx.options.objects or not (ctx.options.cri or ctx.options.images_file):
        return [
            _skip(
                "kep2535.preflight",
                "needs --objects and the node's images (--cri ENDPOINT or --images FILE)",
            )
        ]
    if not ctx.gate(ENSURE_PULLED_GATE):
        return [_skip("kep2535.preflight", f"{ENSURE_PULLED_GATE} is off: nothing changes")]
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor
    from credprov.pullmanager.policies import (
        NEVER_VERIFY_ALLOWLISTED_IMAGES,
        AllowlistError,
        new_verification_policy,
        trim_image_tag_digest,
        validate_allowlist,
    )

    store = load_store(ctx)
    node_images = load_node_images(ctx)
    policy_name, allowlist, _ = effective_policy(ctx)
    try:
        policy = new_verification_policy(str(policy_name), list(allowlist or ()))
    except (ValueError, AllowlistError, TypeError):
        return [_skip("kep2535.preflight", "the pull policy is invalid (see pull-policy.valid)")]
    kubelet_root = str(ctx.setup.get(ROOT_DIR) or "/var/lib/kubelet")
    records_store = FSPullRecordsAccessor(ctx.root.host_path(kubelet_root), migrate=False)
    records, _ = records_store.list_image_pulled_records()
    intents, _ = records_store.list_image_pull_intents()
    by_ref = {r.image_ref: r for r in records}
    intent_images = {i.image for i in intents}
    node = ctx.node_name
    findings: list[Finding] = []
    suggest: list[str] = []
    counted = 0
    for pod in _pods_on_node(store, node):
        namespace, pod_name = _pod_id(pod)
        spec = pod.get("spec") or {}
        secrets = {
            (namespace, str(ref.get("name")))
            for ref in spec.get("imagePullSecrets") or ()
            if isinstance(ref, Mapping)
        }
        sa_name = str(spec.get("serviceAccountName") or "")
        for container_name, image, written_policy in pod_images(spec):
            counted += 1
            pull = str(written_policy or _default_pull_policy(image))
            subject = f"{namespace}/{pod_name}/{container_name}"
            if pull == "Always":
                continue
            present = _find_image(image, node_images)
            if present is None:
                if pull == "Never":
                    findings.append(
                        Finding(
                            "kep2535.preflight",
                            Status.WARN,
                            subject,
                            f"{image} is not on the node: ErrImageNeverPull already, with or "
                            "without KEP-2535",
                            "preload the image or change imagePullPolicy",
                        )
                    )
                continue
            try:
                key = trim_image_tag_digest(image)
            except InvalidImageError:
                key = image
            record = by_ref.get(present.id) if present.id else None
            if record is None and not present.id:
                record = next((r for r in records if key in r.credential_mapping), None)
            by_kubelet = record is not None or image in intent_images
            if not policy.require_credential_verification(image, by_kubelet):
                continue
            entry = record.credential_mapping.get(key) if record is not None else None
            if entry is not None and (
                entry.node_pods_accessible
                or any((s.namespace, s.name) in secrets for s in entry.secrets)
                or any(
                    (a.namespace, a.name) == (namespace, sa_name) for a in entry.service_accounts
                )
            ):
                continue
            why = (
                "no pull record grants this pod"
                if record is not None
                else "the image counts as kubelet-pulled without a record for it"
                if by_kubelet
                else f"policy {policy_name} verifies it"
            )
            if pull == "Never":
                suggestion = _allowlist_entry(image, key, validate_allowlist)
                if suggestion and suggestion not in suggest:
                    suggest.append(suggestion)
                findings.append(
                    Finding(
                        "kep2535.preflight",
                        Status.FAIL,
                        subject,
                        f"{image} (imagePullPolicy Never): {why}, so the pod stops starting "
                        "(ErrImageNeverPull)",
                        "",
                    )
                )
            else:
                findings.append(
                    Finding(
                        "kep2535.preflight",
                        Status.WARN,
                        subject,
                        f"{image} (IfNotPresent): {why}, so the kubelet pulls it again to "
                        "verify the pod's credentials (the registry must be reachable)",
                        "give the pod a pull secret that pulled it, or allowlist preloaded images",
                    )
                )
    if suggest:
        existing = (
            [str(a) for a in allowlist or ()]
            if policy_name == NEVER_VERIFY_ALLOWLISTED_IMAGES
            else []
        )
        entries = list(dict.fromkeys([*existing, *suggest]))
        hint = (
            f"imagePullCredentialsVerificationPolicy: {NEVER_VERIFY_ALLOWLISTED_IMAGES} with "
            f"preloadedImagesVerificationAllowlist: {json.dumps(entries)}"
        )
        findings = [
            Finding(f.id, f.status, f.subject, f.message, hint) if f.status == Status.FAIL else f
            for f in findings
        ]
    if not findings:
        return [
            Finding(
                "kep2535.preflight",
                Status.PASS,
                node,
                f"{counted} image(s) of containers and image volumes on node {node!r}: none "
                "would stop starting or "
                f"start pulling under {policy_name}",
            )
        ]
    return findings


def _allowlist_entry(image: str, key: str, validate: Any) -> str | None:
    """An allowlist entry for ``image``: the trimmed name, else the normalised one."""
    candidates = [key]
    with contextlib.suppress(InvalidImageError):
        candidates.append(parse_image_name(image))
    for candidate in candidates:
        try:
            validate([candidate])
        except ValueError:
            continue
        return candidate
    return None
