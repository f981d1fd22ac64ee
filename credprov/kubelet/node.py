"""One kubelet's image path, wired together for the CLI: shared by ``ensure-image``,
``image-gc`` and ``simulate`` (the node's credential chain is assembled by
:func:`credprov.credentialprovider.engine.node_engine`).

* :class:`KubeletNode` builds what a kubelet start builds: the ``ImagePullManager`` over
  ``<root>/image_manager`` (its start-up housekeeping settles intents a previous run left,
  against the runtime's image list) and the image manager (:class:`EnsureImage`) in front
  of it, with the credential sources and metrics given;
* :func:`ensure_result_to_dict` is the JSON form of one ``EnsureImageExists`` outcome, the
  same for the simulator and the real runtime;
* :func:`open_cri_runtime` is the default runtime factory: a CRI client on ``unix:///...``
  (imported lazily: grpc is heavy), checked with ``Version`` so an unreachable endpoint is
  one clear line before anything is decided; :func:`opened_runtime` holds it for one
  command run and turns what goes wrong there into one line naming ``--root-dir`` or ``--cri``;
* :class:`ProviderErrors` logs and keeps (never raises on) a plugin
  that failed, as the kubelet carries on with the other sources.

Nothing here prints: the commands own their output.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from credprov.kubelet import KubeletError

if TYPE_CHECKING:
    # Not at run time: it would import the pull manager's pydantic records and
    # prometheus_client into every get-credentials run.
    from credprov.pullmanager.interfaces import ImageService

log = logging.getLogger("credprov.kubelet")

__all__ = [
    "KubeletNode",
    "ProviderErrors",
    "PullFailuresAsErrors",
    "RuntimeFactory",
    "check_root",
    "credential_kinds",
    "ensure_result_to_dict",
    "is_runtime_error",
    "open_cri_runtime",
    "opened_runtime",
    "parse_cri_endpoint",
    "record_credential_kinds",
    "recorded_to_dict",
    "validate_policy",
]


#: ``--cri`` value -> an open runtime. Raise :class:`KubeletError` for an unusable endpoint.
RuntimeFactory = Callable[[str], "ImageService"]


def parse_cri_endpoint(endpoint: str) -> str:
    """The socket path of a ``unix:///path`` endpoint (the kubelet's
    ``--container-runtime-endpoint`` form).

    Raises:
        KubeletError: another scheme, or no absolute path.
    """
    prefix = "unix://"
    if not endpoint.startswith(prefix) or not endpoint[len(prefix) :].startswith("/"):
        raise KubeletError(
            f"--cri {endpoint}: want unix:///path/to/socket (e.g. "
            "unix:///run/containerd/containerd.sock)"
        )
    return endpoint[len(prefix) :]


def open_cri_runtime(endpoint: str, *, pull_timeout: float = 300.0) -> ImageService:
    """A CRI client on ``endpoint`` that has answered ``Version`` (the client checks it
    when it connects, as the kubelet does).

    Raises:
        KubeletError: a bad endpoint, no socket there, or a runtime that does not answer.
    """
    parse_cri_endpoint(endpoint)
    try:
        from credprov.cri.client import CRIError, CRIRuntime
    except ImportError as exc:  # a broken install; the client imports grpc lazily itself
        raise KubeletError(f"the CRI client cannot be loaded: {exc}") from None
    try:
        runtime: ImageService = CRIRuntime(endpoint, pull_timeout=pull_timeout)
    except CRIError as exc:
        raise KubeletError(f"--cri {endpoint}: {exc}") from None
    return runtime


def is_runtime_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the CRI client's own error (the runtime went away mid-run)."""
    try:
        from credprov.cri.client import CRIError
    except ImportError:
        return False
    return isinstance(exc, CRIError)


class PullFailuresAsErrors:
    """A runtime whose ``pull_image`` reports *every* failure as a
    :class:`credprov.testing.runtime.PullError`.

    The CRI client raises its own error when the runtime cannot be reached or the pull
    outlives its deadline; the kubelet reports those like any failed pull
    (``Failed to pull image ...: rpc error: code = DeadlineExceeded ...``, ``ErrImagePull``)
    for that container and carries on with the next. Everything else is passed through.
    """

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def pull_image(self, image: str, auth: Any) -> str:
        """Pull ``image`` with ``auth``; returns the image ref.

        Raises:
            PullError: the runtime refused the pull (its CRI error, as one line).
        """
        from credprov.pullmanager.interfaces import PullError

        try:
            ref: str = self.runtime.pull_image(image, auth)
        except Exception as exc:
            if not is_runtime_error(exc):
                raise
            raise PullError(str(exc)) from None
        return ref

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runtime, name)


def close_runtime(runtime: Any) -> None:
    """Close a runtime that has ``close()``; never raises."""
    close = getattr(runtime, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            log.debug("closing the runtime failed", exc_info=True)


@contextlib.contextmanager
def opened_runtime(
    endpoint: str,
    root: str,
    runtime_factory: RuntimeFactory | None = None,
    *,
    pull_timeout: float = 300.0,
) -> Iterator[ImageService]:
    """The runtime at ``endpoint`` for one command run over the records under ``root``,
    closed afterwards.

    ``runtime_factory(endpoint)`` opens it (default: :func:`open_cri_runtime` with
    ``pull_timeout``). What the run raises becomes one line: an ``OSError`` is the records'
    (``--root-dir``), the CRI client's own error the runtime's (``--cri``); anything else passes.

    Raises:
        KubeletError: the runtime could not be opened, or the run failed as above.
    """
    if runtime_factory is None:
        runtime = open_cri_runtime(endpoint, pull_timeout=pull_timeout)
    else:
        runtime = runtime_factory(endpoint)
    try:
        yield runtime
    except OSError as exc:
        raise KubeletError(f"--root-dir {root}: {exc.strerror or exc}") from None
    except Exception as exc:
        if is_runtime_error(exc):
            raise KubeletError(f"--cri {endpoint}: {exc}") from None
        raise
    finally:
        close_runtime(runtime)


def check_root(root: str) -> str:
    """``root`` if it is a directory.

    It is not created: a mistyped root would silently start with no records, and every
    image on the node would then look preloaded, usable by any pod.

    Raises:
        KubeletError: not a directory.
    """
    if not os.path.isdir(root):
        raise KubeletError(f"--root-dir {root}: not a directory (create the kubelet root first)")
    return root


def validate_policy(policy: str, allowlist: Sequence[str]) -> None:
    """The kubelet's configuration checks for the policy and allowlist, its words.

    Raises:
        KubeletError: the first problem.
    """
    from credprov.pullmanager.policies import validate_policy_config

    problems = validate_policy_config(policy, list(allowlist), True)
    if problems:
        raise KubeletError(problems[0])


class ProviderErrors:
    """Collects (and logs) every plugin failure during ``ensure-image``: pass it as the
    image manager's ``on_provider_error``. The error text is already scrubbed of secrets by
    the exec layer; a token request the Node authorizer or NodeRestriction refused is what
    an operator looks for in a report. The kubelet carries on with the other credentials."""

    def __init__(self) -> None:
        #: ``{"image", "provider", "error"}`` per failed provider lookup, in order.
        self.errors: list[dict[str, str]] = []

    def __call__(self, image: str, provider: str, error: str) -> None:
        log.warning("credential provider %s failed for %s: %s", provider, image, error)
        self.errors.append({"image": image, "provider": provider, "error": error})


@dataclass(eq=False)
class KubeletNode:
    """A kubelet's image manager and pull manager over ``root`` and ``runtime``.

    ``feature_gate`` False is ``KubeletEnsureSecretPulledImages=false``: no records, present
    images are used by anyone. :meth:`restart` rebuilds both, as a kubelet restart does
    (in-memory state dropped, start-up housekeeping run again); construction is the first
    start.
    """

    runtime: Any
    root: str
    policy: str
    allowlist: Iterable[str] = ()
    _: KW_ONLY
    credentials: Any = None
    on_provider_error: Any = None
    metrics: Any = None
    feature_gate: bool = True
    verify_image_ref: bool = False
    track_preloaded: bool = False
    shared_root: bool = False
    manager: Any = field(default=None, init=False)
    ensure: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.allowlist = list(self.allowlist)
        self.restart()

    def restart(self) -> None:
        """Build the pull manager (running its start-up housekeeping) and image manager.

        Raises:
            ValueError: an unknown policy or invalid allowlist pattern.
        """
        from credprov.kubelet.ensure import EnsureImage

        self.manager = None
        if self.feature_gate:
            from credprov.pullmanager.manager import ImagePullManager

            # runtime= runs initialize(): intents of images the runtime has become records.
            self.manager = ImagePullManager(
                self.root,
                self.policy,
                self.allowlist,
                runtime=self.runtime,
                metrics=self.metrics,
                track_preloaded=self.track_preloaded,
                shared_root=self.shared_root,
            )
        self.ensure = EnsureImage(
            self.runtime,
            self.manager,
            credentials=self.credentials,
            on_provider_error=self.on_provider_error,
            metrics=self.metrics,
            verify_image_ref=self.verify_image_ref,
        )

    def ensure_pod(
        self, pod: Any, secrets: list[dict[str, Any]], missing: list[str]
    ) -> dict[str, Any]:
        """Run ``EnsureImageExists`` for every image of ``pod`` (a
        :class:`credprov.kubelet.podspec.PodSpec`: its image volumes, then its init,
        regular and ephemeral containers) with its pull ``secrets``; ``missing`` are the
        pull secret names that could not be retrieved. Returns the report ``ensure-image -o
        json`` prints: per image its decision, events and provider errors.

        ``FailedToRetrieveImagePullSecret`` follows Kubernetes 1.37 (kubernetes#138432):
        it is recorded on the pod once, after the pulls, and only when some pull failed with
        ``ErrImagePull`` and a pull secret was missing. Before 1.37 it came at the start of
        every sync with a missing secret, whatever became of the pulls. It is the last of
        ``events`` and the one entry of ``podEvents`` (events on the pod that belong to no
        container or image volume).
        """
        from credprov.credentialprovider.chain import PodInfo
        from credprov.kubelet.ensure import ERR_IMAGE_PULL, Container

        events: list[dict[str, str]] = []
        info = PodInfo(pod.namespace, pod.name, pod.uid, pod.service_account_name)
        provider_errors: list[dict[str, str]] = (
            self.on_provider_error.errors if self.on_provider_error is not None else []
        )
        containers = []
        for c in pod.containers:
            seen = len(provider_errors)
            result = self.ensure.ensure_image_exists(
                info, Container(c.image, c.image_pull_policy, c.name), secrets
            )
            entry = {
                "name": c.name,
                "type": c.kind,
                "fieldPath": c.field_path,
                "ready": result.error is None,
                **ensure_result_to_dict(result),
            }
            if len(provider_errors) > seen:
                entry["providerErrors"] = provider_errors[seen:]
            containers.append(entry)
            events.extend({**e, "object": c.field_path} for e in entry["events"])
        pod_events: list[dict[str, str]] = []
        if missing and any(c["error"] == ERR_IMAGE_PULL for c in containers):
            pod_events.append(
                {
                    "type": "Warning",
                    "reason": "FailedToRetrieveImagePullSecret",
                    "message": "Unable to retrieve some image pull secrets "
                    f"({', '.join(missing)}); attempting to pull the image may not succeed.",
                    "object": "",
                }
            )
        events.extend(pod_events)
        return {
            "pod": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "policy": self.policy,
            "ready": all(c["ready"] for c in containers),
            "missingSecrets": missing,
            "containers": containers,
            "events": events,
            "podEvents": pod_events,
        }


def recorded_to_dict(result: Any) -> dict[str, Any] | None:
    """What a successful pull recorded (``imageRef`` and the credentials' JSON), or None."""
    if result.recorded is None:
        return None
    creds = result.recorded.model_dump(by_alias=True, exclude_defaults=True)
    return {"imageRef": result.recorded_ref, "credentials": creds}


def ensure_result_to_dict(result: Any) -> dict[str, Any]:
    """The JSON form of an :class:`credprov.kubelet.ensure.EnsureResult` (no secret:
    credentials appear as their source label and KEP-2535 hash only)."""
    return {
        "image": result.image,
        "imagePullPolicy": result.pull_policy,
        "decision": result.decision,
        "error": result.error,
        "message": result.message,
        "imageRef": result.image_ref or None,
        "events": [e.to_dict() for e in result.events],
        "metricLabels": result.labels,
        "credentialLookups": result.credential_lookups,
        "attempts": [
            {"credential": a.credential, "credentialHash": a.credential_hash, "error": a.error}
            for a in result.attempts
        ],
        "recorded": recorded_to_dict(result),
    }


def credential_kinds(creds: Mapping[str, Any]) -> str:
    """``node-wide``, ``secret ns/name``, ``serviceaccount ns/name``... of one
    ``credentialMapping`` entry, for text output."""
    parts = []
    if creds.get("nodePodsAccessible"):
        parts.append("node-wide")
    for s in creds.get("kubernetesSecrets") or []:
        parts.append(f"secret {s['namespace']}/{s['name']}")
    for s in creds.get("kubernetesServiceAccounts") or []:
        parts.append(f"serviceaccount {s['namespace']}/{s['name']}")
    return ", ".join(parts) or "none"


def record_credential_kinds(record: Mapping[str, Any], sep: str) -> str:
    """``<cache key>: <kinds>`` of every ``credentialMapping`` entry of a pull record's
    JSON, joined by ``sep``, or ``no credentials``, for text output."""
    mapping = record.get("credentialMapping") or {}
    kinds = sep.join(f"{k}: {credential_kinds(c)}" for k, c in mapping.items())
    return kinds or "no credentials"
