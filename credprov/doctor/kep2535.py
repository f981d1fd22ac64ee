"""The KEP-2535 checks: the pull policy, the node's pull records, the upgrade preflight.

* ``pull-policy.valid``: the defaulted policy and allowlist through
  :func:`credprov.pullmanager.policies.validate_policy_config` (the kubelet's messages);
* ``pull-records.health``: ``<kubelet root>/image_manager`` read through the node root
  (:class:`~credprov.doctor.pullrecords.NodePullRecords`: nothing is written, nothing
  outside the root is read), against the kubelet's in-memory caps and the 0700/0600
  permissions it creates;
* ``kep2535.preflight``: each container and image volume of the node's pods decided as
  ``MustAttemptImagePull`` would decide it, from the node's images, its records and the
  policy, without any pull. An empty pull policy is defaulted by the one implementation
  of the API server's rule, :func:`credprov.kubelet.ensure.default_pull_policy`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from credprov.doctor.cluster import (
    NodeImages,
    load_node_images,
    load_store,
    pod_id,
    pod_pull_secrets,
    pod_service_account,
    pods_on_node,
)
from credprov.doctor.context import ENSURE_PULLED_GATE, Context
from credprov.doctor.discovery import ALLOWLIST, POLICY, ROOT_DIR
from credprov.doctor.pullrecords import NodePullRecords, RecordsScan
from credprov.doctor.report import Finding, Status
from credprov.imageauth.images import InvalidImageError, parse_image_name
from credprov.kubelet.podspec import pod_images
from credprov.pullmanager.interfaces import RuntimeImage, StoreReadError
from credprov.pullmanager.types import ImagePulledRecord

if TYPE_CHECKING:
    from credprov.pullmanager.policies import VerificationPolicy

__all__ = [
    "MAX_INTENTS",
    "MAX_PULLED_RECORDS",
    "check_kep2535_preflight",
    "check_pull_policy",
    "check_pull_records",
    "effective_policy",
    "policy_errors",
    "typed_policy",
    "valid_policy",
]

_T = TypeVar("_T")

#: The kubelet's in-memory KEP-2535 cache sizes (``NewCachedPullRecordsAccessor`` caps).
MAX_INTENTS = 1024
MAX_PULLED_RECORDS = 2000


def _skip(check_id: str, why: str, subject: str = "") -> Finding:
    return Finding(check_id, Status.SKIP, subject, why)


def _kubelet_root(ctx: Context) -> str:
    return str(ctx.setup.get(ROOT_DIR) or "/var/lib/kubelet")


# -- pull-policy.valid ---------------------------------------------------------------------------


def effective_policy(ctx: Context) -> tuple[object, object, str]:
    """The verification policy and allowlist the node's kubelet runs with.

    Args:
        ctx: the doctor's context (the KubeletConfiguration's values and the gates).

    Returns:
        ``(policy, allowlist, where the policy came from)``: a YAML ``null`` is unset (Go
        decodes it to the zero value) and the policy is defaulted by the kubelet's rule,
        :func:`credprov.pullmanager.policies.default_policy`. The values are the
        KubeletConfiguration's, of whatever type it holds; only :func:`typed_policy`
        promises strings.
    """
    from credprov.pullmanager.policies import default_policy

    policy_value = ctx.setup.values.get(POLICY)
    allow_value = ctx.setup.values.get(ALLOWLIST)
    policy: object = (
        "" if policy_value is None or policy_value.value is None else policy_value.value
    )
    allowlist: object = (
        [] if allow_value is None or allow_value.value is None else allow_value.value
    )
    source = policy_value.source if policy_value else "default"
    if isinstance(policy, str):
        defaulted = default_policy(policy, ctx.gate(ENSURE_PULLED_GATE))
        if defaulted != policy:
            policy, source = defaulted, "default"
    return policy, allowlist, source


def typed_policy(ctx: Context) -> tuple[str, list[str], str] | None:
    """:func:`effective_policy` when the policy is a string and the allowlist a list of
    strings, else None (the kubelet would not start)."""
    policy, allowlist, source = effective_policy(ctx)
    if not isinstance(policy, str) or not isinstance(allowlist, list):
        return None
    if not all(isinstance(entry, str) for entry in allowlist):
        return None
    return policy, [str(entry) for entry in allowlist], source


def policy_errors(ctx: Context, policy: str, allowlist: list[str]) -> list[str]:
    """The kubelet's start-up errors for these settings
    (:func:`credprov.pullmanager.policies.validate_policy_config`; empty when valid)."""
    from credprov.pullmanager.policies import validate_policy_config

    return validate_policy_config(policy, allowlist, ctx.gate(ENSURE_PULLED_GATE))


def valid_policy(ctx: Context) -> tuple[str, list[str]] | None:
    """``(policy, allowlist)`` when the kubelet starts with them, else None: the one
    judgement ``pull-policy.valid`` reports and ``kep2535.preflight`` relies on."""
    typed = typed_policy(ctx)
    if typed is None:
        return None
    policy, allowlist, _ = typed
    return None if policy_errors(ctx, policy, allowlist) else (policy, allowlist)


def check_pull_policy(ctx: Context) -> list[Finding]:
    """``pull-policy.valid``: the policy and allowlist the kubelet validates at start.

    Returns:
        One finding: FAIL when the KubeletConfiguration is unreadable, the fields have the
        wrong types or the kubelet's validation refuses them; PASS otherwise.
    """
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
    typed = typed_policy(ctx)
    if typed is None:
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
    policy, allowlist, source = typed
    gate = ctx.gate(ENSURE_PULLED_GATE)
    errors = policy_errors(ctx, policy, allowlist)
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
    """``pull-records.health``: files the kubelet cannot use, loose permissions, cache size."""
    if not ctx.gate(ENSURE_PULLED_GATE):
        return [_skip("pull-records.health", f"{ENSURE_PULLED_GATE} is off")]
    reader = NodePullRecords(ctx.root, _kubelet_root(ctx))
    subject = reader.manager_dir
    if not reader.exists():
        return [
            Finding(
                "pull-records.health",
                Status.PASS,
                subject,
                "no records yet: every image present now counts as preloaded",
            )
        ]
    scan = reader.scan()
    findings = _records_problems(scan, reader)
    if findings:
        return findings
    dangling = (
        f", {len(scan.intents)} pull intent(s) (in flight or left by a restart)"
        if scan.intents
        else ""
    )
    return [
        Finding(
            "pull-records.health",
            Status.PASS,
            subject,
            f"{len(scan.records)} record(s){dangling}; permissions 0700/0600",
        )
    ]


def _records_problems(scan: RecordsScan, reader: NodePullRecords) -> list[Finding]:
    """``pull-records.health`` WARNs for a scan: unusable files, loose permissions, more
    records than the kubelet caches, files left unread (empty when healthy)."""
    subject = reader.manager_dir
    prune = (
        "prune records of images the node no longer has ('credprov pull-records prune', or "
        "the kubelet's image GC)"
    )
    findings: list[Finding] = []
    if scan.errors:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"{len(scan.errors)} file(s) the kubelet cannot use, e.g. {scan.errors[0]}: it "
                "treats those images as unverified (re-pull; Never pods fail)",
                "inspect with 'credprov pull-records verify'; remove the broken files "
                "(the kubelet rewrites records on the next pull)",
            )
        )
    if scan.loose:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"{len(scan.loose)} path(s) readable by others, e.g. {scan.loose[0]}: records "
                "name the node's images and pull secrets",
                f"chmod 0700 the directories and 0600 the files under {subject}",
            )
        )
    intents, records = scan.intent_count, scan.record_count
    if intents > MAX_INTENTS or records > MAX_PULLED_RECORDS:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"{intents} intents / {records} records exceed the kubelet's in-memory caches "
                f"({MAX_INTENTS} / {MAX_PULLED_RECORDS}): lookups go to disk",
                prune,
            )
        )
    if scan.unread_intents or scan.unread_records:
        findings.append(
            Finding(
                "pull-records.health",
                Status.WARN,
                subject,
                f"more than {reader.limit} intent or record files, not all read: "
                f"{scan.unread_intents + scan.unread_records} file(s) after the first "
                f"{reader.limit} of each kind (by name) were not checked",
                prune,
            )
        )
    return findings


# -- kep2535.preflight ------------------------------------------------------------------------------


@dataclass
class _Records:
    """The node's records as ``MustAttemptImagePull`` reads them, each file read once."""

    reader: NodePullRecords
    _by_ref: dict[str, ImagePulledRecord | StoreReadError | None] = field(default_factory=dict)
    _intents: dict[str, bool | StoreReadError] = field(default_factory=dict)
    _by_key: dict[str, ImagePulledRecord] | None = None

    def record(self, image_ref: str) -> ImagePulledRecord | StoreReadError | None:
        """The record of ``image_ref``; the error when its file is unusable."""
        return _read_once(self._by_ref, image_ref, self.reader.get_image_pulled_record)

    def intent(self, image: str) -> bool | StoreReadError:
        """Whether a pull intent for ``image`` exists; the error when its file is unusable."""
        return _read_once(self._intents, image, self.reader.image_pull_intent_exists)

    def granting(self, key: str) -> ImagePulledRecord | None:
        """The first record that maps ``key`` (for an image whose id the file does not
        give: the kubelet would look it up by that id)."""
        if self._by_key is None:
            self._by_key = {}
            for record in self.reader.scan().records:
                for mapped in record.credential_mapping:
                    self._by_key.setdefault(mapped, record)
        return self._by_key.get(key)


def _read_once(
    memo: dict[str, _T | StoreReadError], key: str, read: Callable[[str], _T]
) -> _T | StoreReadError:
    """``read(key)``, or the StoreReadError it raised, read once per ``key`` (kept in
    ``memo``)."""
    if key not in memo:
        try:
            memo[key] = read(key)
        except StoreReadError as exc:
            memo[key] = exc
    return memo[key]


@dataclass(frozen=True)
class _Pod:
    """What a record is compared with: the pod's pull secrets and service account."""

    namespace: str
    name: str
    secrets: frozenset[tuple[str, str]]  # (namespace, name)
    service_account: str


def _granted(record: ImagePulledRecord, key: str, pod: _Pod) -> bool:
    """Whether ``record`` lets ``pod`` use the image without a pull (as far as the doctor
    can tell: pull secrets are compared by name, not by credential hash)."""
    entry = record.credential_mapping.get(key)
    return entry is not None and (
        entry.node_pods_accessible
        or any((s.namespace, s.name) in pod.secrets for s in entry.secrets)
        or any(
            (a.namespace, a.name) == (pod.namespace, pod.service_account)
            for a in entry.service_accounts
        )
    )


def _verified_because(
    records: _Records,
    policy: VerificationPolicy,
    policy_name: str,
    image: str,
    key: str,
    present: RuntimeImage,
    pod: _Pod,
) -> str | None:
    """Why ``MustAttemptImagePull`` would make ``pod`` pull the present ``image`` again (the
    finding's reason), or None when the pod may use it as it is.

    Steps in the kubelet's order: the record by the image's id (else, for a node image
    without one, the first record mapping ``key``), the intent when there is no record; an
    unreadable one of them means "verify" whatever the policy; then the policy, then the
    record's grants.
    """
    found = records.record(present.id) if present.id else records.granting(key)
    record = found if isinstance(found, ImagePulledRecord) else None
    intent = False if found is not None else records.intent(image)
    if isinstance(found, StoreReadError) or isinstance(intent, StoreReadError):
        return "its pull record cannot be read (see pull-records.health)"
    by_kubelet = record is not None or intent
    if not policy.require_credential_verification(image, by_kubelet):
        return None
    if record is not None:
        return None if _granted(record, key, pod) else "no pull record grants this pod"
    if by_kubelet:
        return "the image counts as kubelet-pulled without a record for it"
    return f"policy {policy_name} verifies it"


def check_kep2535_preflight(ctx: Context) -> list[Finding]:
    """``kep2535.preflight``: which containers would stop starting (``Never``) or pull again
    (``IfNotPresent``) once the kubelet verifies the pods' credentials.

    One pass over the node's pods and images (``--objects`` and ``--cri``/``--node-images``),
    deciding per container and image volume as the kubelet's image manager would.

    Returns:
        SKIP without the inputs, with the gate off or an invalid policy; else a FAIL per
        ``Never`` container that would stop starting (hinting at an allowlist that keeps
        them running), a WARN per container that would pull again, or one PASS.

    Raises:
        DoctorUsageError: an unreadable ``--objects``/``--node-images`` file or ``--cri``.
    """
    if not ctx.options.objects or not (ctx.options.cri or ctx.options.images_file):
        return [
            _skip(
                "kep2535.preflight",
                "needs --objects and the node's images (--cri ENDPOINT or --node-images FILE)",
            )
        ]
    if not ctx.gate(ENSURE_PULLED_GATE):
        return [_skip("kep2535.preflight", f"{ENSURE_PULLED_GATE} is off: nothing changes")]
    store = load_store(ctx)
    assert store is not None  # --objects was given
    preflight = _Preflight.start(ctx)
    if preflight is None:
        return [_skip("kep2535.preflight", "the pull policy is invalid (see pull-policy.valid)")]
    node = ctx.node_name
    counted = 0
    for raw_pod in pods_on_node(store, node):
        spec = raw_pod["spec"]
        namespace, pod_name = pod_id(raw_pod)
        secrets = frozenset((namespace, name) for name in pod_pull_secrets(spec))
        pod = _Pod(namespace, pod_name, secrets, pod_service_account(spec))
        for container_name, image, written_policy in pod_images(spec):
            counted += 1
            preflight.judge(pod, str(container_name), image, written_policy)
    findings = preflight.with_allowlist_hint()
    if not findings:
        return [
            Finding(
                "kep2535.preflight",
                Status.PASS,
                node,
                f"{counted} image(s) of containers and image volumes on node {node!r}: none "
                "would stop starting or "
                f"start pulling under {preflight.policy_name}",
            )
        ]
    return findings


@dataclass
class _Preflight:
    """One preflight's inputs and what it found so far (see :meth:`judge`)."""

    policy: VerificationPolicy
    policy_name: str
    allowlist: list[str]
    node_images: NodeImages
    records: _Records
    findings: list[Finding] = field(default_factory=list)
    #: Allowlist entries that would keep the failing ``Never`` containers running.
    suggest: dict[str, None] = field(default_factory=dict)

    @classmethod
    def start(cls, ctx: Context) -> _Preflight | None:
        """The preflight over the node's images and records, None when the policy is
        invalid (the kubelet would not start).

        Raises:
            DoctorUsageError: an unreadable ``--node-images`` file or ``--cri`` endpoint.
        """
        from credprov.pullmanager.policies import new_verification_policy

        node_images = NodeImages(load_node_images(ctx))  # usage errors first
        valid = valid_policy(ctx)
        if valid is None:
            return None
        policy_name, allowlist = valid
        try:
            policy = new_verification_policy(policy_name, allowlist)
        except ValueError:  # AllowlistError too
            return None
        records = _Records(NodePullRecords(ctx.root, _kubelet_root(ctx)))
        return cls(policy, policy_name, allowlist, node_images, records)

    def judge(self, pod: _Pod, container: str, image: str, written_policy: object) -> None:
        """Decide one container or image volume of ``pod``; add a finding when it would
        stop starting or pull again."""
        from credprov.kubelet.ensure import PULL_ALWAYS, PULL_NEVER, default_pull_policy
        from credprov.pullmanager.policies import trim_image_tag_digest, validate_allowlist

        pull = str(written_policy or default_pull_policy(image))
        subject = f"{pod.namespace}/{pod.name}/{container}"
        if pull == PULL_ALWAYS:
            return
        present = self.node_images.find(image)
        if present is None:
            if pull == PULL_NEVER:
                self.findings.append(
                    Finding(
                        "kep2535.preflight",
                        Status.WARN,
                        subject,
                        f"{image} is not on the node: ErrImageNeverPull already, with or "
                        "without KEP-2535",
                        "preload the image or change imagePullPolicy",
                    )
                )
            return
        try:
            key = trim_image_tag_digest(image)
        except InvalidImageError:
            key = image
        why = _verified_because(
            self.records, self.policy, self.policy_name, image, key, present, pod
        )
        if why is None:
            return
        if pull == PULL_NEVER:
            suggestion = _allowlist_entry(image, key, validate_allowlist)
            if suggestion:
                self.suggest[suggestion] = None
            self.findings.append(
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
            self.findings.append(
                Finding(
                    "kep2535.preflight",
                    Status.WARN,
                    subject,
                    f"{image} (IfNotPresent): {why}, so the kubelet pulls it again to "
                    "verify the pod's credentials (the registry must be reachable)",
                    "give the pod a pull secret that pulled it, or allowlist preloaded images",
                )
            )

    def with_allowlist_hint(self) -> list[Finding]:
        """The findings, each FAIL hinting at the allowlist that keeps every failing
        ``Never`` container running (the configured entries first)."""
        from credprov.pullmanager.policies import NEVER_VERIFY_ALLOWLISTED_IMAGES

        if not self.suggest:
            return list(self.findings)
        existing = self.allowlist if self.policy_name == NEVER_VERIFY_ALLOWLISTED_IMAGES else []
        entries = list(dict.fromkeys([*existing, *self.suggest]))
        hint = (
            f"imagePullCredentialsVerificationPolicy: {NEVER_VERIFY_ALLOWLISTED_IMAGES} with "
            f"preloadedImagesVerificationAllowlist: {json.dumps(entries)}"
        )
        return [
            Finding(f.id, f.status, f.subject, f.message, hint) if f.status == Status.FAIL else f
            for f in self.findings
        ]


def _allowlist_entry(image: str, key: str, validate: Callable[[Iterable[str]], None]) -> str | None:
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
