"""The credential chain: where the credentials for an image come from, in the kubelet's order.

The kubelet asks ``MakeDockerKeyring(podPullSecrets, Union{nodeKeyring, pluginKeyring})``
for a normalised image (``pkg/credentialprovider/secrets``, ``keyring.go``): the pod's pull
secrets first, then the node's docker config, then every matching credential provider
plugin, and the puller tries the credentials in that order. Here that order is data, as in
botocore's credential resolver: a :class:`CredentialChain` is a list of
:class:`CredentialSource` objects, each with one method, walked in order.

* :class:`PullSecrets`: the request's pull secrets (Secret objects);
* :class:`KeyringSource`: a fixed keyring (the node's ``config.json``);
* :class:`PluginProviders`: the credential provider plugins of a provider config.

:class:`CredentialChain.resolve` is the one way credprov resolves an image: the engine
(``get-credentials``), ``ensure-image`` and the simulator, and the Docker credential helper
all go through it. :func:`default_chain` builds the kubelet's chain.

The core types a lookup is made with live here too: :class:`PodInfo` (the pod),
:class:`ServiceAccountInfo`, and :class:`TokenRequest` (what a KEP-4412 token is asked
for) with the callbacks that answer them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from credprov.errors import CredentialProviderError
from credprov.imageauth.images import (
    InvalidImageError,
    image_name_error,
    parse_image_name,
)
from credprov.imageauth.keyring import (
    DockerKeyring,
    Keyring,
    ServiceAccountCoordinates,
    TrackedAuthConfig,
    make_pull_secret_keyring,
)

# typing costs start-up on every CLI run; the protocols below are for type checkers, and
# plain classes at run time (mypy reads TYPE_CHECKING as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any, Protocol

    from credprov.api import internal
else:
    Protocol = object

__all__ = [
    "CredentialChain",
    "CredentialRequest",
    "CredentialSource",
    "GetServiceAccount",
    "GetServiceAccountToken",
    "ImageResolution",
    "KeyringSource",
    "MissingAnnotationError",
    "PluginProviders",
    "PodInfo",
    "ProvideResult",
    "PullSecrets",
    "ServiceAccountAPI",
    "ServiceAccountError",
    "ServiceAccountInfo",
    "SourceAnswer",
    "TokenRequest",
    "default_chain",
]


# -- the pod and its service account (KEP-4412) --------------------------------------------------


@dataclass(frozen=True)
class PodInfo:
    """The pod a lookup is made for (only providers with ``tokenAttributes`` read it)."""

    namespace: str = ""
    name: str = ""
    uid: str = ""
    service_account_name: str = ""


@dataclass(frozen=True)
class ServiceAccountInfo:
    """A service account as a KEP-4412 provider needs it: its uid and annotations."""

    uid: str
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TokenRequest:
    """A service-account token the kubelet requests for a pod (``TokenRequest`` bound to
    the pod), for a provider's ``serviceAccountTokenAudience``."""

    namespace: str
    service_account_name: str
    service_account_uid: str
    audience: str
    pod_name: str
    pod_uid: str


class ServiceAccountError(CredentialProviderError):
    """The service account or its token could not be obtained."""


class MissingAnnotationError(ServiceAccountError):
    """A required service-account annotation is absent (the plugin is skipped quietly)."""


#: ``(namespace, name) -> ServiceAccountInfo``; raises ServiceAccountError.
GetServiceAccount = Callable[[str, str], ServiceAccountInfo]
#: ``TokenRequest -> token``; raises ServiceAccountError.
GetServiceAccountToken = Callable[[TokenRequest], str]


class ServiceAccountAPI(Protocol):
    """What KEP-4412 providers need from the API server, as the node reaches it: a service
    account (``get``) and a token bound to the pod (``TokenRequest``).
    :class:`credprov.nodeauth.NodeAPI` implements it through the Node authorizer and
    NodeRestriction."""

    def get_service_account(self, namespace: str, name: str) -> ServiceAccountInfo:
        """Raises ServiceAccountError."""
        ...

    def get_service_account_token(self, request: TokenRequest) -> str:
        """Raises ServiceAccountError."""
        ...


# -- requests and answers ------------------------------------------------------------------------


class CredentialRequest:
    """One image asked for by one pod: ``repo`` is the normalised image name.

    (A plain class with slots rather than a dataclass: one is made per lookup, on the
    engine's cache-hit path.)
    """

    __slots__ = ("image", "pod", "pull_secrets", "repo")

    def __init__(
        self,
        image: str,
        repo: str,
        pull_secrets: Sequence[Mapping[str, Any]] = (),
        pod: PodInfo | None = None,
    ) -> None:
        self.image = image
        self.repo = repo
        self.pull_secrets = pull_secrets
        self.pod = pod


@dataclass
class ProvideResult:
    """What one provider contributed to one lookup, for callers and for ``-o json``."""

    name: str
    matched: bool = False
    executed: bool = False
    cached: bool = False
    cache_key_type: str | None = None
    cache_duration: int | None = None
    auth: dict[str, internal.AuthConfig] = field(default_factory=dict)
    credentials: list[TrackedAuthConfig] = field(default_factory=list)
    service_account: ServiceAccountCoordinates | None = None
    error: str | None = None
    skipped: str | None = None


class SourceAnswer:
    """What one source contributed: credentials in try order, and per-provider details."""

    __slots__ = ("credentials", "providers")

    def __init__(
        self,
        credentials: list[TrackedAuthConfig] | None = None,
        providers: list[ProvideResult] | None = None,
    ) -> None:
        self.credentials = credentials if credentials is not None else []
        self.providers = providers if providers is not None else []


@dataclass
class ImageResolution:
    """The credentials for one image, in the order the kubelet would try them."""

    image: str
    repo: str | None = None
    credentials: list[TrackedAuthConfig] = field(default_factory=list)
    providers: list[ProvideResult] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> bool:
        """True when the image is invalid or a matching provider failed."""
        return self.error is not None or any(p.error for p in self.providers)


class CredentialSource(Protocol):
    """One place credentials come from (a link of the chain)."""

    def lookup(self, request: CredentialRequest) -> SourceAnswer:
        """Credentials for ``request.repo``.

        Raises:
            credprov.imageauth.keyring.KeyringError: a pull secret whose payload does not parse.
        """
        ...


# -- the sources ---------------------------------------------------------------------------------


class PullSecrets:
    """The pod's pull secrets (``kubernetes.io/dockerconfigjson`` / ``dockercfg`` Secrets);
    Secrets of other types are ignored, as the kubelet ignores them."""

    def lookup(self, request: CredentialRequest) -> SourceAnswer:
        """The pull secrets' credentials for ``request.repo``.

        Raises:
            credprov.imageauth.keyring.KeyringError: a payload that does not parse.
        """
        if not request.pull_secrets:
            return _NOTHING
        keyring = make_pull_secret_keyring(request.pull_secrets)
        return SourceAnswer(keyring.lookup(request.repo))


#: The answer of a source with nothing to add (never mutated: the chain copies).
_NOTHING = SourceAnswer()


class KeyringSource:
    """A keyring fixed for the node: its docker ``config.json``, for example."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    def lookup(self, request: CredentialRequest) -> SourceAnswer:
        """The keyring's credentials for ``request.repo``."""
        return SourceAnswer(self.keyring.lookup(request.repo))


class _Providers(Protocol):
    def lookup(
        self, image: str, pod: PodInfo | None = None
    ) -> tuple[list[TrackedAuthConfig], list[ProvideResult]]: ...


class PluginProviders:
    """The credential provider plugins of a provider config
    (:class:`credprov.credentialprovider.plugin.registry.CredentialProviders`): every matching provider is
    asked, a failing one is reported in :attr:`SourceAnswer.providers` and skipped."""

    def __init__(self, providers: _Providers) -> None:
        self.providers = providers

    def lookup(self, request: CredentialRequest) -> SourceAnswer:
        """Every matching provider's credentials, with each provider's result."""
        credentials, results = self.providers.lookup(request.repo, request.pod)
        return SourceAnswer(credentials, results)


# -- the chain -----------------------------------------------------------------------------------


class CredentialChain:
    """Sources walked in order; see the module docstring. Thread-safe when its sources are
    (the plugin providers are: concurrent lookups share their caches and singleflight)."""

    def __init__(self, sources: Iterable[CredentialSource]) -> None:
        self.sources: list[CredentialSource] = list(sources)

    def resolve(
        self,
        image: str,
        pull_secrets: Sequence[Mapping[str, Any]] = (),
        pod: PodInfo | None = None,
    ) -> ImageResolution:
        """The credentials for ``image`` for a pod with ``pull_secrets``, in try order.

        An invalid image name is reported in :attr:`ImageResolution.error` with the
        kubelet's text (``couldn't parse image name ...``).

        Raises:
            credprov.imageauth.keyring.KeyringError: a pull secret whose payload does not parse.
        """
        resolution = ImageResolution(image=image)
        try:
            repo = parse_image_name(image)
        except InvalidImageError as exc:
            # pkg/util/parsers.ParseImageName's wrapping.
            resolution.error = str(image_name_error(image, exc))
            return resolution
        return self._ask(resolution, CredentialRequest(image, repo, pull_secrets, pod))

    def resolve_registry(
        self,
        registry: str,
        pull_secrets: Sequence[Mapping[str, Any]] = (),
        pod: PodInfo | None = None,
    ) -> ImageResolution:
        """The credentials for the registry host ``registry`` itself, in try order: every
        source is asked about the host, as it is about an image's repository.

        For callers that name a registry rather than an image (a Docker credential helper's
        server URL): :func:`parse_image_name` would read a bare host as a Docker Hub
        repository.

        Raises:
            credprov.imageauth.keyring.KeyringError: a pull secret whose payload does not parse.
        """
        resolution = ImageResolution(image=registry, repo=registry)
        return self._ask(resolution, CredentialRequest(registry, registry, pull_secrets, pod))

    def _ask(self, resolution: ImageResolution, request: CredentialRequest) -> ImageResolution:
        """Walk the sources in order for ``request``; their answers fill ``resolution``."""
        resolution.repo = request.repo
        credentials: list[TrackedAuthConfig] = []
        providers: list[ProvideResult] = []
        for source in self.sources:
            answer = source.lookup(request)
            credentials += answer.credentials
            providers += answer.providers
        resolution.credentials = credentials
        resolution.providers = providers
        return resolution


def default_chain(
    providers: _Providers | None = None, node_keyring: Keyring | None = None
) -> CredentialChain:
    """The kubelet's chain: pull secrets, then ``node_keyring``, then ``providers``."""
    sources: list[CredentialSource] = [
        PullSecrets(),
        KeyringSource(node_keyring or DockerKeyring()),
    ]
    if providers is not None:
        sources.append(PluginProviders(providers))
    return CredentialChain(sources)
