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

    #: A source's reusable answer (see :meth:`CredentialSource.memo`): its credentials in
    #: try order and its per-provider results, as templates the chain copies for callers.
    SourceMemo = tuple[tuple[TrackedAuthConfig, ...], tuple["ProvideResult", ...]]
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

    def copy(self, _new: Any = object.__new__) -> ProvideResult:
        """A copy whose containers (``auth``, ``credentials``) are the caller's own.

        Memoised answers hand every caller copies of shared templates, so that mutating a
        result never changes the next answer. (``__dict__`` is copied rather than
        ``__init__`` called: this runs once per provider on every cache hit.)
        """
        copy = _new(ProvideResult)
        state = self.__dict__.copy()
        auth = state["auth"]
        state["auth"] = auth.copy() if auth else {}
        credentials = state["credentials"]
        state["credentials"] = credentials[:] if credentials else []
        copy.__dict__ = state
        return copy


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

    if not TYPE_CHECKING:  # (a __getattr__ would let mypy accept any attribute)

        def __getattr__(self, name: str) -> Any:
            # A memoised answer (CredentialChain.resolve) is made without ``providers``,
            # holding the memo's shared templates instead: the caller's own copies are made
            # on first read, so a caller that reads only the credentials (the kubelet's
            # pull) does not pay for them. Every read sees the same list.
            if name == "providers":
                state = self.__dict__
                templates = state.get("_provider_templates")
                if templates is not None:
                    providers = state.setdefault("providers", [t.copy() for t in templates])
                    state.pop("_provider_templates", None)
                    return providers
                if "providers" in state:  # made by another thread meanwhile
                    return state["providers"]
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self
            )


class CredentialSource(Protocol):
    """One place credentials come from (a link of the chain).

    A source may also have ``memo(repo) -> SourceMemo | None``: what ``lookup`` answers
    for ``repo`` without pull secrets, whatever the pod, as one object that stays the same
    (``is``) for exactly as long as that answer does; None when it cannot promise that. The
    chain memoises an image only when every source has one (see
    :meth:`CredentialChain.resolve`).
    """

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

    def memo(self, repo: str) -> SourceMemo:
        """Without pull secrets the answer is always nothing."""
        return _NO_MEMO


#: The answer of a source with nothing to add (never mutated: the chain copies).
_NOTHING = SourceAnswer()
#: The same as a memo (see CredentialSource).
_NO_MEMO: SourceMemo = ((), ())


class KeyringSource:
    """A keyring fixed for the node: its docker ``config.json``, for example."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    def lookup(self, request: CredentialRequest) -> SourceAnswer:
        """The keyring's credentials for ``request.repo``."""
        return SourceAnswer(self.keyring.lookup(request.repo))

    def memo(self, repo: str) -> SourceMemo | None:
        """Nothing, while the keyring is an empty :class:`DockerKeyring` (a node without a
        docker config); None otherwise.

        A DockerKeyring that gains a key gains an index entry, so "empty" is checked
        exactly; a filled one can change without a trace (a second credential under a key
        it holds), so it is asked on every lookup.
        """
        keyring = self.keyring
        if type(keyring) is DockerKeyring and not len(keyring):
            return _NO_MEMO
        return None


class _Providers(Protocol):
    def lookup(
        self, image: str, pod: PodInfo | None = None
    ) -> tuple[list[TrackedAuthConfig], list[ProvideResult]]: ...

    # Optional at run time (PluginProviders.memo): without it nothing is memoised.
    def memo(self, image: str) -> SourceMemo | None: ...


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

    def memo(self, repo: str) -> SourceMemo | None:
        """The providers' memoised answer for ``repo`` while it is exact (see
        :meth:`credprov.credentialprovider.plugin.registry.CredentialProviders.memo`)."""
        try:
            memo = self.providers.memo
        except AttributeError:  # another implementation of the providers: no memo
            return None
        return memo(repo)


# -- the chain -----------------------------------------------------------------------------------


class CredentialChain:
    """Sources walked in order; see the module docstring. Thread-safe when its sources are
    (the plugin providers are: concurrent lookups share their caches and singleflight).

    A cache hit is the hot path (every pull of an image whose credentials are cached), so
    ``resolve`` without pull secrets memoises its answer per image string when every source
    offers a memo (:class:`CredentialSource`): no normalising, matching or merging on a hit,
    only a check that each source still gives the very memo the answer was built from. The
    memo is a plain dict rather than a ``cachetools`` cache: its entries are never stale by
    age but by their sources' memos (checked on every hit), and when it holds
    ``_MEMO_SIZE`` images it is simply emptied, which a dict does without a lock.
    """

    def __init__(self, sources: Iterable[CredentialSource]) -> None:
        self.sources: list[CredentialSource] = list(sources)
        # image -> (repo, the sources, ((memo method, memo) of each source whose memo can
        # change, ...), credentials, results)
        self._memo: dict[str, _ChainMemo] = {}

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
        if not pull_secrets:
            hit = self._memo.get(image)
            # The same sources (a list compares its items by identity first), each still
            # giving the memo the answer was built from.
            if hit is not None and hit[1] == self.sources:
                repo = hit[0]
                for memo, part in hit[2]:
                    if memo(repo) is not part:
                        break
                else:
                    resolution = _new(ImageResolution)
                    resolution.__dict__ = {
                        "image": image,
                        "repo": repo,
                        "credentials": list(hit[3]),
                        "error": None,
                        "_provider_templates": hit[4],  # see ImageResolution.__getattr__
                    }
                    return resolution
        resolution = ImageResolution(image=image)
        try:
            repo = parse_image_name(image)
        except InvalidImageError as exc:
            # pkg/util/parsers.ParseImageName's wrapping.
            resolution.error = str(image_name_error(image, exc))
            return resolution
        self._ask(resolution, CredentialRequest(image, repo, pull_secrets, pod))
        if not pull_secrets:
            self._remember(image, repo)
        return resolution

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

    def _remember(self, image: str, repo: str) -> None:
        # Built from the sources' memos, not from the answer just returned: each memo is
        # exact when it is handed out, whatever other threads changed meanwhile.
        checks: list[tuple[Callable[[str], SourceMemo | None], SourceMemo]] = []
        creds: tuple[TrackedAuthConfig, ...] = ()
        templates: tuple[ProvideResult, ...] = ()
        for source in self.sources:
            memo: Callable[[str], SourceMemo | None] | None = getattr(source, "memo", None)
            if memo is None:
                return
            part = memo(repo)
            if part is None:
                return
            if type(source) is not PullSecrets:  # its memo never changes: not checked
                checks.append((memo, part))
            creds += part[0]
            templates += part[1]
        if len(self._memo) >= _MEMO_SIZE:
            self._memo = {}
        self._memo[image] = (repo, list(self.sources), tuple(checks), creds, templates)


_MEMO_SIZE = 16384
_new = object.__new__
if TYPE_CHECKING:
    _ChainMemo = tuple[
        str,
        list[CredentialSource],
        tuple[tuple[Callable[[str], "SourceMemo | None"], SourceMemo], ...],
        tuple[TrackedAuthConfig, ...],
        tuple[ProvideResult, ...],
    ]


def default_chain(
    providers: _Providers | None = None, node_keyring: Keyring | None = None
) -> CredentialChain:
    """The kubelet's chain: pull secrets, then ``node_keyring``, then ``providers``."""
    sources: list[CredentialSource] = [
        PullSecrets(),
        # (not ``or``: an empty DockerKeyring is falsy, and the caller's must be the one used)
        KeyringSource(node_keyring if node_keyring is not None else DockerKeyring()),
    ]
    if providers is not None:
        sources.append(PluginProviders(providers))
    return CredentialChain(sources)
