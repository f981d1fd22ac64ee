"""``EnsureImageExists``: may this pod use the image, must it be pulled, and with what.

Mirrors ``pkg/kubelet/images/image_manager.go`` (1.34+, feature gate
``KubeletEnsureSecretPulledImages``) and the credential loop of
``pkg/kubelet/kuberuntime/kuberuntime_image.go``:

1. ``applyDefaultImageTag`` (an invalid name is an ``InspectFailed`` event and
   ``InvalidImageName``);
2. ``imagePullPrecheck``: ``Always`` skips the inspection, ``IfNotPresent``/``Never`` ask the
   runtime for the image's ref; ``Never`` and absent is ``ErrImageNeverPull``;
3. a present image is used if the gate is off, or if the pull manager's
   ``MustAttemptImagePull`` says the pod's credentials (looked up lazily, at most once per
   call: PR #133079) are already known to grant it;
4. otherwise ``Never`` fails with the *same* "not present" message (so a pod without
   credentials cannot learn that the image is on the node), and the others pull: a pull
   intent first, then each credential in keyring order (anonymous if there are none),
   the first success recorded (``trackedToImagePullCreds``), a failure recorded too.

Events carry the kubelet's reasons and messages; the ``ensure_image_requests_total`` labels
follow the upstream matrix. Not mirrored: the per-pod pull back-off (``BackOff`` events) and
parallel-pull limits.

Beyond upstream (off by default, ``verify_image_ref=True``): after a pull, compare the ref
``PullImage`` returned with the one ``ImageStatus`` reports; when they differ (the CRI-O
behaviour behind kubernetes#137024, where the record keyed by the pull's ref never matches
a later check and the image then looks preloaded to every pod) warn, and record the pull
under the ref later checks will use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from credprov._go.durations import format_duration
from credprov._go.fmt import go_quote
from credprov.base.clock import Clock, RealClock
from credprov.credentialprovider.chain import CredentialChain, ImageResolution, PodInfo, PullSecrets
from credprov.errors import CredprovError
from credprov.imageauth.images import InvalidImageError
from credprov.imageauth.keyring import TrackedAuthConfig
from credprov.pullmanager.interfaces import REGISTRY_UNAVAILABLE, ImageService, PullError
from credprov.pullmanager.manager import GetPodCredentials
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePullSecret,
    ImagePullServiceAccount,
)

__all__ = [
    "ERR_IMAGE_INSPECT",
    "ERR_IMAGE_NEVER_PULL",
    "ERR_IMAGE_PULL",
    "ERR_INVALID_IMAGE_NAME",
    "ERR_REGISTRY_UNAVAILABLE",
    "PULL_ALWAYS",
    "PULL_IF_NOT_PRESENT",
    "PULL_NEVER",
    "PULL_POLICIES",
    "Container",
    "CredentialLookupError",
    "EnsureImage",
    "EnsureResult",
    "Event",
    "PullManager",
    "Resolver",
    "apply_default_image_tag",
    "credential_label",
    "default_pull_policy",
    "pod_credentials",
    "tracked_to_image_pull_credentials",
]

PULL_ALWAYS = "Always"
PULL_IF_NOT_PRESENT = "IfNotPresent"
PULL_NEVER = "Never"
PULL_POLICIES = (PULL_ALWAYS, PULL_IF_NOT_PRESENT, PULL_NEVER)

# pkg/kubelet/images/types.go: the error values, which become the container's waiting reason.
ERR_IMAGE_PULL = "ErrImagePull"
ERR_IMAGE_NEVER_PULL = "ErrImageNeverPull"
ERR_INVALID_IMAGE_NAME = "InvalidImageName"
ERR_IMAGE_INSPECT = "ImageInspectError"
ERR_REGISTRY_UNAVAILABLE = REGISTRY_UNAVAILABLE  # crierrors.ErrRegistryUnavailable

# pkg/kubelet/events: event reasons.
REASON_PULLING = "Pulling"
REASON_PULLED = "Pulled"
REASON_FAILED = "Failed"
REASON_INSPECT_FAILED = "InspectFailed"
REASON_NEVER_PULL = "ErrImageNeverPull"
#: credprov only (verify_image_ref): PullImage and ImageStatus disagree on the image's ref.
REASON_IMAGE_REF_MISMATCH = "ImageRefMismatch"

NORMAL = "Normal"
WARNING = "Warning"

DEFAULT_IMAGE_TAG = "latest"


class CredentialLookupError(CredprovError):
    """The pod's credentials could not be looked up (bad pull secret, plugin failure)."""


@dataclass(frozen=True)
class Event:
    """A Kubernetes event the kubelet records on the pod (``type`` Normal or Warning)."""

    type: str
    reason: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """The event as JSON: ``type``, ``reason`` and ``message``."""
        return {"type": self.type, "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class Container:
    """The container fields the image manager reads; an empty policy is API-defaulted."""

    image: str
    image_pull_policy: str = ""
    name: str = ""


class PullManager(Protocol):
    """The part of ``ImagePullManager`` the image manager calls."""

    def record_pull_intent(self, image: str) -> None:
        """Write the intent to pull ``image`` before the pull starts."""

    def record_image_pulled(
        self, image: str, image_ref: str, credentials: ImagePullCredentials | None
    ) -> None:
        """Record that ``image`` was pulled as ``image_ref`` with ``credentials`` (None: none to
        record).
        """

    def record_image_pull_failed(self, image: str) -> None:
        """The pull of ``image`` failed: release its intent (``RecordImagePullFailed``)."""

    def must_attempt_image_pull(
        self, image: str, image_ref: str, get_pod_credentials: GetPodCredentials
    ) -> bool:
        """Whether a pod must pull ``image`` although ``image_ref`` is present
        (``MustAttemptImagePull``); ``get_pod_credentials`` is called only when a record could
        match.
        """


class PullRequestMetrics(Protocol):
    """Where ``kubelet_image_manager_ensure_image_requests_total`` is counted."""

    def ensure_image_request(
        self, pull_policy: str, present_locally: bool | None, pull_required: bool | None
    ) -> None:
        """Count one ``EnsureImageExists`` call by its labels (None: ``unknown``)."""


class Resolver(Protocol):
    """Where a pod's credentials come from: a :class:`credprov.credentialprovider.chain.CredentialChain`
    (the engine is one)."""

    def resolve(
        self, image: str, pull_secrets: Sequence[Mapping[str, Any]] = (), pod: PodInfo | None = None
    ) -> ImageResolution:
        """The credentials to try for ``image``: the pod's pull secrets, the node's, then the
        plugins', with any provider errors.
        """


# -- helpers ----------------------------------------------------------------------------------


def apply_default_image_tag(image: str) -> str:
    """``applyDefaultImageTag``: append ``:latest`` when there is neither tag nor digest,
    without qualifying the name (``busybox`` -> ``busybox:latest``).

    Raises:
        InvalidImageError: with ``parsers.ParseImageName``'s ``couldn't parse image name``.
    """
    from credprov.imageauth.images import image_name_error, split_reference

    try:
        _, tag, digest = split_reference(image)
    except InvalidImageError as exc:
        raise image_name_error(image, exc) from None
    if not tag and not digest:
        return f"{image}:{DEFAULT_IMAGE_TAG}"
    return image


def default_pull_policy(image: str) -> str:
    """The API server's ``SetDefaults_Container``: ``Always`` for ``:latest`` (or no tag and
    no digest), ``IfNotPresent`` otherwise."""
    from credprov.imageauth.images import split_reference

    try:
        _, tag, digest = split_reference(image)
    except InvalidImageError:
        return PULL_IF_NOT_PRESENT  # validation rejects the pod elsewhere
    if tag == DEFAULT_IMAGE_TAG or (not tag and not digest):
        return PULL_ALWAYS
    return PULL_IF_NOT_PRESENT


def pod_credentials(
    creds: Sequence[TrackedAuthConfig],
) -> tuple[list[ImagePullSecret], ImagePullServiceAccount | None]:
    """What ``GetPodCredentials`` hands the pull manager: every secret-sourced credential
    (with its hash) and the *first* service-account-sourced one. Node-wide credentials have
    no source and prove nothing about the pod, so they are left out."""
    secrets: list[ImagePullSecret] = []
    service_account: ImagePullServiceAccount | None = None
    for cred in creds:
        source = cred.source
        if source is None:
            continue
        if source.secret is not None:
            secrets.append(
                ImagePullSecret(
                    uid=source.secret.uid,
                    namespace=source.secret.namespace,
                    name=source.secret.name,
                    credential_hash=cred.credential_hash,
                )
            )
        elif source.service_account is not None and service_account is None:
            sa = source.service_account
            service_account = ImagePullServiceAccount(
                uid=sa.uid, namespace=sa.namespace, name=sa.name
            )
    return secrets, service_account


def tracked_to_image_pull_credentials(cred: TrackedAuthConfig | None) -> ImagePullCredentials:
    """``trackedToImagePullCreds``: anonymous or node-wide -> ``nodePodsAccessible``; a
    secret -> that one secret with the credential's hash; a service account -> that one."""
    source = cred.source if cred is not None else None
    if cred is None or source is None or (source.secret is None and source.service_account is None):
        return ImagePullCredentials(nodePodsAccessible=True)
    if source.secret is not None:
        s = source.secret
        return ImagePullCredentials(
            kubernetesSecrets=[
                ImagePullSecret(
                    uid=s.uid,
                    namespace=s.namespace,
                    name=s.name,
                    credential_hash=cred.credential_hash,
                )
            ]
        )
    assert source.service_account is not None
    sa = source.service_account
    return ImagePullCredentials(
        kubernetesServiceAccounts=[
            ImagePullServiceAccount(uid=sa.uid, namespace=sa.namespace, name=sa.name)
        ]
    )


def credential_label(cred: TrackedAuthConfig | None) -> str:
    """``anonymous``, ``secret:<ns>/<name>``, ``serviceaccount:<ns>/<name>``,
    ``provider:<name>`` or ``node``: who a credential speaks for, never what it is."""
    if cred is None:
        return "anonymous"
    sa = cred.source.service_account if cred.source is not None else None
    if sa is not None and (cred.source is None or cred.source.secret is None):
        return f"serviceaccount:{sa.namespace}/{sa.name}"
    return cred.source_label


def _aggregate(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, duplicates dropped,
    several in brackets."""
    unique = list(dict.fromkeys(errors))
    if len(errors) == 1 or len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def _eval_cri_pull_err(image: str, err: str) -> tuple[str, str]:
    """``evalCRIPullErr``: (message, error) for a failed pull."""
    if err.startswith(REGISTRY_UNAVAILABLE):
        rest = err[len(REGISTRY_UNAVAILABLE) :]
        return (
            f"image pull failed for {image} because the registry is unavailable{rest}",
            ERR_REGISTRY_UNAVAILABLE,
        )
    return err, ERR_IMAGE_PULL


# -- result -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CredentialAttempt:
    """One credential the pull tried (no password: the source label and hash only)."""

    credential: str  # "anonymous", "secret:<ns>/<name>", "provider:<name>" or "node"
    credential_hash: str
    error: str | None


@dataclass
class EnsureResult:
    """What ``EnsureImageExists`` returned and recorded, for one container."""

    image: str
    pull_policy: str
    image_ref: str = ""
    message: str = ""
    #: The kubelet's error (``ErrImagePull``, ``ErrImageNeverPull``, ``InvalidImageName``,
    #: ``ImageInspectError``, ``RegistryUnavailable``) or another error's text; None = ok.
    error: str | None = None
    events: list[Event] = field(default_factory=list)
    present_locally: bool | None = None
    pull_required: bool | None = None
    pulled: bool = False
    attempts: list[CredentialAttempt] = field(default_factory=list)
    #: What ``record_image_pulled`` was given, and under which ref.
    recorded: ImagePullCredentials | None = None
    recorded_ref: str | None = None
    credential_lookups: int = 0

    @property
    def decision(self) -> str:
        """``pulled``, ``present`` (used the image on the node), ``never-pull``
        (ErrImageNeverPull), ``failed`` (a pull was tried and failed) or ``error``."""
        if self.error is None:
            return "pulled" if self.pulled else "present"
        if self.error == ERR_IMAGE_NEVER_PULL:
            return "never-pull"
        if self.attempts:
            return "failed"
        return "error"

    @property
    def labels(self) -> dict[str, str]:
        """The ``kubelet_image_manager_ensure_image_requests_total`` labels."""

        def tri(v: bool | None) -> str:
            return "unknown" if v is None else str(v).lower()

        return {
            "pull_policy": self.pull_policy.lower(),
            "present_locally": tri(self.present_locally),
            "pull_required": tri(self.pull_required),
        }


# -- the engine -------------------------------------------------------------------------------


class _LookupOnce:
    """``sync.OnceValues`` over the credential lookup: the keyring (and any plugin) is
    consulted at most once per request, and only when a decision needs it (a present image
    with no check needed never triggers it); a failure is raised again on each call."""

    def __init__(self, result: EnsureResult, lookup: Callable[[], list[TrackedAuthConfig]]):
        self._result = result
        self._lookup = lookup
        self._outcome: tuple[list[TrackedAuthConfig], Exception | None] | None = None

    def __call__(self) -> list[TrackedAuthConfig]:
        if self._outcome is None:
            self._result.credential_lookups += 1
            try:
                self._outcome = (self._lookup(), None)
            except Exception as exc:
                self._outcome = ([], exc)
        creds, err = self._outcome
        if err is not None:
            raise err
        return creds


def _fail(result: EnsureResult, error: str, message: str) -> None:
    result.error, result.message = error, message


def _never_pull(result: EnsureResult, requested: str) -> None:
    msg = f"Container image {go_quote(requested)} is not present with pull policy of Never"
    result.events.append(Event(WARNING, REASON_NEVER_PULL, msg))
    _fail(result, ERR_IMAGE_NEVER_PULL, msg)


def _present(result: EnsureResult, image_ref: str, message: str) -> None:
    result.image_ref = image_ref
    result.events.append(Event(NORMAL, REASON_PULLED, message))
    result.message = message


class EnsureImage:
    """One node's image manager.

    ``pull_manager`` None means the feature gate is off: present images are used by
    anyone, nothing is recorded. ``credentials`` defaults to the pod's pull secrets alone.
    A provider that fails is skipped, as the kubelet carries on with the other
    credentials; ``on_provider_error(image, provider, error)`` is told about it.
    """

    def __init__(
        self,
        runtime: ImageService,
        pull_manager: PullManager | None = None,
        *,
        credentials: Resolver | None = None,
        metrics: PullRequestMetrics | None = None,
        on_provider_error: Callable[[str, str, str], None] | None = None,
        clock: Clock | None = None,
        verify_image_ref: bool = False,
    ) -> None:
        self.runtime = runtime
        self.pull_manager = pull_manager
        self.credentials = credentials or CredentialChain([PullSecrets()])
        self.on_provider_error = on_provider_error
        self.metrics = metrics
        self.clock = clock or RealClock()
        self.verify_image_ref = verify_image_ref

    def _lookup(
        self, image: str, pull_secrets: Sequence[Mapping[str, Any]], pod: PodInfo
    ) -> list[TrackedAuthConfig]:
        resolution = self.credentials.resolve(image, pull_secrets, pod)
        if resolution.error:
            raise CredentialLookupError(resolution.error)
        if self.on_provider_error is not None:
            for provider in resolution.providers:
                if provider.error:
                    self.on_provider_error(image, provider.name, provider.error)
        return list(resolution.credentials)

    def ensure_image_exists(
        self,
        pod: PodInfo,
        container: Container,
        pull_secrets: Sequence[Mapping[str, Any]] = (),
        pull_policy: str | None = None,
    ) -> EnsureResult:
        """Decide and act for ``container`` of ``pod`` (``pull_secrets``: Secret dicts).

        Raises:
            ValueError: the pull policy is none of Always, IfNotPresent, Never (API
                validation rejects such pods before they reach a kubelet).
        """
        policy = pull_policy or container.image_pull_policy or default_pull_policy(container.image)
        if policy not in PULL_POLICIES:
            raise ValueError(f"unsupported imagePullPolicy {policy!r}")
        result = EnsureResult(image=container.image, pull_policy=policy)
        try:
            self._ensure(result, pod, container.image, pull_secrets, policy)
        finally:
            # Upstream records the request in a defer, whatever the outcome.
            if self.metrics is not None:
                self.metrics.ensure_image_request(
                    policy, result.present_locally, result.pull_required
                )
        return result

    # The steps below keep upstream's order: it decides what is revealed to whom.
    def _ensure(
        self,
        result: EnsureResult,
        pod: PodInfo,
        requested: str,
        pull_secrets: Sequence[Mapping[str, Any]],
        policy: str,
    ) -> None:
        """``EnsureImageExists`` once the policy is known, in upstream's order: default tag,
        ``imagePullPrecheck``, whether a present image may be used, else the pull."""
        try:
            spec = apply_default_image_tag(requested)
        except InvalidImageError as exc:
            msg = f"Failed to apply default image tag {go_quote(requested)}: {exc}"
            result.events.append(Event(WARNING, REASON_INSPECT_FAILED, msg))
            return _fail(result, ERR_INVALID_IMAGE_NAME, msg)
        image_ref = self._precheck(result, requested, spec, policy)
        if result.error is not None:
            return None
        lookup = _LookupOnce(result, lambda: self._lookup(spec, pull_secrets, pod))
        if image_ref is not None and self._use_present(result, requested, image_ref, lookup):
            return None
        if policy == PULL_NEVER:
            # Present but not accessible: the same words as "absent", deliberately.
            return _never_pull(result, requested)
        result.pull_required = True
        try:
            creds = lookup()
        except Exception as exc:
            return _fail(result, str(exc), str(exc))
        self._pull(result, requested, spec, creds)
        return None

    def _precheck(self, result: EnsureResult, requested: str, spec: str, policy: str) -> str | None:
        """``imagePullPrecheck``: the present image's ref (None: absent or not asked, as
        ``Always`` does not ask); an inspection error or an absent image with ``Never``
        ends the request (``result.error``)."""
        if policy == PULL_ALWAYS:
            return None
        try:
            image_ref = self.runtime.image_ref(spec)
        except Exception as exc:
            # Upstream formats the (empty) imageRef here, not the image name.
            msg = f'Failed to inspect image "": {exc}'
            result.events.append(Event(WARNING, REASON_INSPECT_FAILED, msg))
            _fail(result, ERR_IMAGE_INSPECT, msg)
            return None
        result.present_locally = image_ref is not None
        if image_ref is None and policy == PULL_NEVER:
            _never_pull(result, requested)
        return image_ref

    def _use_present(
        self, result: EnsureResult, requested: str, image_ref: str, lookup: _LookupOnce
    ) -> bool:
        """Whether the request ends with the present image: used (the feature gate off, or
        the pull manager says this pod may use it) or an error from the pull manager."""
        if self.pull_manager is None:
            result.pull_required = False
            msg = f"Container image {go_quote(requested)} already present on machine"
            _present(result, image_ref, msg)
            return True
        try:
            must_pull = self.pull_manager.must_attempt_image_pull(
                requested, image_ref, lambda: pod_credentials(lookup())
            )
        except Exception as exc:
            # No event upstream either: the error becomes the container's status.
            _fail(result, str(exc), str(exc))
            return True
        result.pull_required = must_pull
        if must_pull:
            return False
        msg = (
            f"Container image {go_quote(requested)} already present on machine "
            "and can be accessed by the pod"
        )
        _present(result, image_ref, msg)
        return True

    def _pull(
        self, result: EnsureResult, requested: str, spec: str, creds: list[TrackedAuthConfig]
    ) -> None:
        manager = self.pull_manager
        if manager is not None:
            try:
                manager.record_pull_intent(requested)
            except Exception as exc:
                result.error = str(exc)
                result.message = (
                    f"Failed to record image pull intent for container image "
                    f"{go_quote(requested)}: {exc}"
                )
                return
        pull_succeeded = False
        try:
            result.events.append(Event(NORMAL, REASON_PULLING, f"Pulling image {go_quote(spec)}"))
            start = self.clock.now()
            used: TrackedAuthConfig | None = None
            errors: list[str] = []
            ref: str | None = None
            # kuberuntime PullImage: anonymous when there is nothing to try, else every
            # credential in keyring order until one works.
            to_try: list[TrackedAuthConfig | None] = list(creds) if creds else [None]
            for cred in to_try:
                try:
                    ref = self.runtime.pull_image(spec, cred)
                except PullError as exc:
                    errors.append(str(exc))
                    result.attempts.append(self._attempt(cred, str(exc)))
                    continue
                result.attempts.append(self._attempt(cred, None))
                used = cred
                break
            if ref is None:
                err = _aggregate(errors)
                result.events.append(
                    Event(WARNING, REASON_FAILED, f"Failed to pull image {go_quote(spec)}: {err}")
                )
                result.message, result.error = _eval_cri_pull_err(spec, err)
                return
            elapsed = format_duration((self.clock.now() - start) // 1_000_000 * 1_000_000)
            size = self._image_size(ref)
            result.events.append(
                Event(
                    NORMAL,
                    REASON_PULLED,
                    f"Successfully pulled image {go_quote(spec)} in {elapsed} ({elapsed} "
                    f"including waiting). Image size: {size} bytes.",
                )
            )
            result.pulled = True
            result.image_ref = ref
            pull_succeeded = True
            recorded_ref = ref
            if self.verify_image_ref:
                recorded_ref = self._check_image_ref(result, spec, ref)
            if manager is not None:
                recorded = tracked_to_image_pull_credentials(used)
                manager.record_image_pulled(requested, recorded_ref, recorded)
                result.recorded, result.recorded_ref = recorded, recorded_ref
        finally:
            if manager is not None and not pull_succeeded:
                manager.record_image_pull_failed(requested)

    def _image_size(self, ref: str) -> int:
        """The pulled image's size for the ``Pulled`` event; 0 if the runtime cannot say
        (the pull has succeeded: a failing list must not turn it into an error)."""
        try:
            # ImageStatus by id, as the kubelet's GetImageSize; a list for runtimes without.
            status = getattr(self.runtime, "image_status", None)
            if callable(status):
                image = status(ref)
                return int(image.size) if image is not None else 0
            return next((i.size for i in self.runtime.list_images() if i.id == ref), 0)
        except Exception:
            return 0

    def _check_image_ref(self, result: EnsureResult, spec: str, pulled_ref: str) -> str:
        """The ref to record under: what ImageStatus reports (later checks use it)."""
        try:
            status_ref = self.runtime.image_ref(spec)
        except Exception:
            status_ref = None
        if status_ref is None or status_ref == pulled_ref:
            return pulled_ref
        result.events.append(
            Event(
                WARNING,
                REASON_IMAGE_REF_MISMATCH,
                f"The runtime returned image reference {go_quote(pulled_ref)} for "
                f"{go_quote(spec)} but reports {go_quote(status_ref)}; recording the pull "
                f"under {go_quote(status_ref)} so later checks find it",
            )
        )
        return status_ref

    @staticmethod
    def _attempt(cred: TrackedAuthConfig | None, error: str | None) -> CredentialAttempt:
        if cred is None:
            return CredentialAttempt("anonymous", "", error)
        return CredentialAttempt(credential_label(cred), cred.credential_hash, error)
