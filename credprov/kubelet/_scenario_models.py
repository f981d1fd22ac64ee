"""The scenario file's schema as pydantic models, and their errors in the scenario's words.

:func:`validate` checks a parsed scenario document against :class:`ScenarioModel` and turns
the first problem into ``(where, reason)``, e.g. ``("steps[2].pod.image", "must be a
string, not int")``, the texts ``credprov simulate`` has always printed
(:mod:`credprov.kubelet.scenario` adds the file name).

Which problem is "first" follows the order the scenario is documented in (top-level fields
in :class:`ScenarioModel`'s order, each list item in turn) and, inside one mapping, unknown
fields, then missing ones, then the values: pydantic collects every error, :func:`_first`
picks that one. Checks that depend on which keys are present (exactly one step action,
``expect`` only on pod steps, image or image volume, a credential hash or a password) run
before the mapping's values are checked (``_Strict.check_keys``); checks across fields or
against earlier parts of the file (the verification policy, duplicate and referenced
Secrets) run as each field is validated, through ``info.data`` and the validation context.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from credprov.kubelet import KubeletError
from credprov.kubelet.ensure import PULL_POLICIES

STEP_ACTIONS = (
    "pod",
    "restart",
    "removeImage",
    "addImage",
    "rotateSecret",
    "pruneRecords",
    "registryAvailable",
)
DECISIONS = ("pulled", "present", "never-pull", "failed", "error")


def _fail(message: str, *, up: int = 0, down: str = "") -> PydanticCustomError:
    """A scenario error at the validated value's location, ``up`` levels higher, then at
    its field ``down`` (a check made on one field may be about another)."""
    return PydanticCustomError(
        "scenario", "{message}", {"message": message, "up": up, "down": down}
    )


def type_name(value: Any) -> str:
    """The YAML-ish name of ``value``'s type, as the messages say it (``null`` for None)."""
    return "null" if value is None else type(value).__name__


# -- checked scalars -------------------------------------------------------------------------


def _image_name(name: str) -> str:
    from credprov.imageauth.images import InvalidImageError, parse_image_name

    try:
        parse_image_name(name)
    except InvalidImageError as exc:
        raise _fail(f"invalid image reference {name!r}: {exc}") from None
    return name


def _digest(digest: str) -> str:
    if not digest.startswith("sha256:"):
        raise _fail("must look like sha256:<hex>")
    return digest


def _one_of(choices: tuple[str, ...]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in choices:
            raise _fail(f"must be one of {', '.join(choices)}")
        return value

    return AfterValidator(check)


def _true(value: Any) -> Any:
    if value is not True:
        raise _fail("must be true")
    return value


def _strings(value: Any) -> bool:
    # Whether a key check may speak: these values are reported on before the keys.
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


Str = Annotated[str, Field(min_length=1)]
ImageName = Annotated[Str, AfterValidator(_image_name)]
Digest = Annotated[Str, AfterValidator(_digest)]
Size = Annotated[int, Field(ge=0)]
PullPolicy = Annotated[Str, _one_of(PULL_POLICIES)]
Decision = Annotated[Str, _one_of(DECISIONS)]
TrueFlag = Annotated[Any, AfterValidator(_true)]


class _Strict(BaseModel):
    """Strict types, no unknown fields, and a hook for checks on which keys are present."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)
    #: The order missing fields are reported in, when it is not the fields' order.
    required_order: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _present_keys(cls, data: Any) -> Any:
        # Unknown or missing fields come first (pydantic reports them): check only the rest.
        if cls.well_formed(data):
            cls.check_keys(data)
        return data

    @classmethod
    def well_formed(cls, data: Any) -> bool:
        """Whether ``data`` is a mapping with no unknown field and every required one."""
        if not isinstance(data, dict):
            return False
        aliases = {f.alias or name: f for name, f in cls.model_fields.items()}
        required = {a for a, f in aliases.items() if f.is_required()}
        return set(data) <= set(aliases) and required <= set(data)

    @classmethod
    def check_keys(cls, data: dict[str, Any]) -> None:
        """Checks on which keys ``data`` holds (nothing by default); raise with :func:`_fail`."""


# -- registry credentials --------------------------------------------------------------------


class AuthEntry(_Strict):
    """One ``auths`` entry of a docker config (its values are the keyring's to check)."""

    username: Any = None
    password: Any = None
    auth: Any = None
    email: Any = None


def _auths(value: Any, handler: Any) -> Any:
    # The entries' shapes through the model; the raw mapping (its order too) is kept.
    from credprov.imageauth.keyring import KeyringError, tracked_auth_configs

    if not handler(value):
        raise _fail("must hold at least one registry entry")
    try:
        tracked_auth_configs(value)
    except KeyringError as exc:
        raise _fail(str(exc)) from None
    return value


Auths = Annotated[dict[str, AuthEntry], WrapValidator(_auths)]


class NodeDockerConfig(_Strict):
    """The node's docker config (``nodeDockerConfig``)."""

    auths: Auths


class Secret(_Strict):
    """A ``kubernetes.io/dockerconfigjson`` Secret of ``secrets``; unique by namespace/name."""

    #: The validation context's set of the names seen so far.
    seen: ClassVar[str] = "secrets"
    namespace: Str
    name: Str
    uid: Str = None  # type: ignore[assignment]  # absent: derived from the name
    auths: Auths

    @field_validator("auths", mode="before")
    @classmethod
    def _unique(cls, auths: Any, info: ValidationInfo) -> Any:
        # A duplicate is reported after a bad uid and before bad auths: check it here.
        if "namespace" in info.data and "name" in info.data and info.context is not None:
            key = (info.data["namespace"], info.data["name"])
            if key in info.context[cls.seen]:
                raise _fail(f"duplicate {key[0]}/{key[1]}", up=1)
            info.context[cls.seen].add(key)
        return auths


class ServiceAccount(Secret):
    """A service account of ``serviceAccounts`` with the plugin credentials it gets."""

    seen: ClassVar[str] = "serviceAccounts"


# -- images and the registry -----------------------------------------------------------------


class Image(_Strict):
    """An image present on the node (``images[]``, ``addImage``)."""

    # Names are checked before the ID, but a missing ID is reported before missing names.
    required_order: ClassVar[tuple[str, ...]] = ("id", "names")
    names: list[ImageName]
    id: Str
    digest: Digest = None  # type: ignore[assignment]
    size: Size = 0


class RegistryImage(_Strict):
    """An image the fake registry serves (``registry.images[]``)."""

    name: ImageName
    id: Str = None  # type: ignore[assignment]
    digest: Digest = None  # type: ignore[assignment]
    size: Size = 0


def _credential_hash(value: Any) -> Any:
    # Reported at the user's entry, not at the field (the message users have seen).
    if not isinstance(value, str):
        raise _fail(f"must be a string, not {type_name(value)}", up=1)
    if not value:
        raise _fail("must not be empty", up=1)
    return value


class RegistryUser(_Strict):
    """A user of the fake registry: a password (or a credential hash) and its repositories."""

    repos: list[Str]
    credential_hash: Annotated[Any, AfterValidator(_credential_hash)] = Field(
        None, alias="credentialHash"
    )
    username: Str = None  # type: ignore[assignment]
    password: str = None  # type: ignore[assignment]

    @classmethod
    def check_keys(cls, data: dict[str, Any]) -> None:
        """A credential hash or a username and password, not both (after the repos)."""
        if not _strings(data["repos"]):
            return
        if "credentialHash" in data:
            if "username" in data or "password" in data:
                raise _fail("give either credentialHash or username/password, not both")
        elif "username" not in data or "password" not in data:
            raise _fail("needs username and password (or credentialHash)")


class Registry(_Strict):
    """The fake registry: its images, anonymous repositories and users."""

    images: list[RegistryImage] = []
    anonymous: list[Str] = []
    users: list[RegistryUser] = []


# -- steps -----------------------------------------------------------------------------------


class InlineSecret(_Strict):
    """A pull secret written inline in a pod step (in the pod's namespace)."""

    name: Str
    uid: Str = None  # type: ignore[assignment]
    auths: Auths


def _secret_ref(value: Any, handler: Any, info: ValidationInfo) -> Any:
    # A name refers to an entry of ``secrets`` in the pod's namespace.
    if not isinstance(value, str):
        return handler(value)
    namespace = info.data.get("namespace")
    if namespace is not None and (namespace, value) not in (info.context or {})["secrets"]:
        raise _fail(f"no secret {namespace}/{value} in 'secrets'")
    return value


class ImageVolume(_Strict):
    """An image volume (``spec.volumes[].image``): its name, reference and pull policy."""

    name: Str
    reference: Str  # an invalid name is a kubelet outcome, not a scenario error
    pull_policy: PullPolicy = Field("", alias="pullPolicy")


class PodStep(_Strict):
    """A pod asking for one image: a container's or an image volume's."""

    namespace: Str
    name: Str
    image_volume: ImageVolume = Field(None, alias="imageVolume")  # type: ignore[assignment]
    image: Str = None  # type: ignore[assignment]  # an invalid name is a kubelet outcome
    image_pull_policy: PullPolicy = Field("", alias="imagePullPolicy")
    image_pull_secrets: list[Annotated[InlineSecret, WrapValidator(_secret_ref)]] = Field(
        [], alias="imagePullSecrets"
    )
    service_account: Str = Field("default", alias="serviceAccount")
    uid: Str = None  # type: ignore[assignment]

    @classmethod
    def check_keys(cls, data: dict[str, Any]) -> None:
        """An image or an image volume (after the pod's name); a volume's pull policy is
        its own (once the volume is a mapping)."""
        if not _strings([data["namespace"], data["name"]]):
            return
        if ("image" in data) == ("imageVolume" in data):
            raise _fail("needs exactly one of image, imageVolume")
        volume = data.get("imageVolume")
        if ImageVolume.well_formed(volume) and "imagePullPolicy" in data:
            raise _fail("use imageVolume.pullPolicy for an image volume", down="imagePullPolicy")


class RotateSecret(_Strict):
    """New content for a Secret of ``secrets``."""

    namespace: Str
    name: Str
    auths: Auths

    @field_validator("name")
    @classmethod
    def _known(cls, name: str, info: ValidationInfo) -> str:
        namespace = info.data.get("namespace")
        if namespace is not None and (namespace, name) not in (info.context or {})["secrets"]:
            raise _fail(f"no secret {namespace}/{name} in 'secrets'", up=1)
        return name


class Step(_Strict):
    """One step: exactly one action, an optional name and (pod steps) expected decision."""

    expect: Decision = None  # type: ignore[assignment]
    pod: PodStep = None  # type: ignore[assignment]
    restart: TrueFlag = None
    remove_image: Str = Field(None, alias="removeImage")  # type: ignore[assignment]
    add_image: Image = Field(None, alias="addImage")  # type: ignore[assignment]
    rotate_secret: RotateSecret = Field(None, alias="rotateSecret")  # type: ignore[assignment]
    prune_records: TrueFlag = Field(None, alias="pruneRecords")
    registry_available: bool = Field(None, alias="registryAvailable")  # type: ignore[assignment]
    name: Str = ""

    def action(self) -> tuple[str, Any]:
        """The step's action (its key in the file) and that action's value."""
        names = {f.alias or n: n for n, f in type(self).model_fields.items()}
        action = next(a for a in STEP_ACTIONS if names[a] in self.model_fields_set)
        return action, getattr(self, names[action])

    @classmethod
    def check_keys(cls, data: dict[str, Any]) -> None:
        """Exactly one action; ``expect`` on a pod step only."""
        actions = [a for a in STEP_ACTIONS if a in data]
        if len(actions) != 1:
            raise _fail(f"needs exactly one of {', '.join(STEP_ACTIONS)}")
        if "expect" in data and actions[0] != "pod":
            raise _fail("only pod steps have an expected decision", down="expect")


# -- the file --------------------------------------------------------------------------------


def _no_root(value: Any) -> Any:
    raise _fail(
        "a scenario cannot choose where records are written; "
        "give --root-dir DIR on the command line"
    )


def _steps(steps: list[Step]) -> list[Step]:
    if not steps:
        raise _fail("must hold at least one step")
    return steps


class ScenarioModel(_Strict):
    """A scenario file (``docs/simulate.md``), its fields in the order they are checked."""

    feature_gate: bool = Field(True, alias="featureGate")
    policy: str = ""
    allowlist: list[Str] = Field([], validate_default=True)
    root: Annotated[Any, AfterValidator(_no_root)] = None
    images: list[Image] = []
    node_docker_config: NodeDockerConfig = Field(None, alias="nodeDockerConfig")  # type: ignore[assignment]
    secrets: list[Secret] = []
    service_accounts: list[ServiceAccount] = Field([], alias="serviceAccounts")
    registry: Registry = Field(default_factory=Registry)
    verify_image_ref: bool = Field(False, alias="verifyImageRef")
    track_preloaded_images: bool = Field(False, alias="trackPreloadedImages")
    cri_image_ref_mismatch: bool = Field(False, alias="criImageRefMismatch")
    steps: Annotated[list[Step], AfterValidator(_steps)]
    description: Any = None

    @field_validator("allowlist")
    @classmethod
    def _policy(cls, allowlist: list[str], info: ValidationInfo) -> list[str]:
        # The kubelet's configuration checks, on the defaulted policy (named "policy").
        from credprov.pullmanager.policies import default_policy, validate_policy_config

        if "feature_gate" in info.data and "policy" in info.data:
            gate = info.data["feature_gate"]
            policy = default_policy(info.data["policy"], gate)
            problems = validate_policy_config(policy, allowlist, gate)
            if problems:
                raise _fail(problems[0], up=1, down="policy")
        return allowlist


# -- errors ----------------------------------------------------------------------------------

_MESSAGES = {
    "model_type": "must be a mapping, not {type}",
    "dict_type": "must be a mapping, not {type}",
    "list_type": "must be a list, not {type}",
    "string_type": "must be a string, not {type}",
    "string_too_short": "must not be empty",
    "bool_type": "must be true or false, not {type}",
}


def validate(doc: Any) -> ScenarioModel:
    """``doc`` (a parsed scenario) as a :class:`ScenarioModel`.

    Raises:
        ScenarioSchemaError: the first problem, as ``(where, reason)``.
    """
    try:
        return ScenarioModel.model_validate(
            doc, context={"secrets": set(), "serviceAccounts": set()}
        )
    except ValidationError as exc:
        raise ScenarioSchemaError(*_describe(_first(exc.errors()))) from None


class ScenarioSchemaError(KubeletError):
    """Where a scenario is invalid and why (``load_scenario`` turns it into a ScenarioError)."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


def _first(errors: list[Any]) -> Any:
    """The error the scenario's checks meet first: pydantic reports a mapping's unknown and
    missing fields after its values, the scenario before them (outermost mapping first)."""
    loc = errors[0]["loc"]
    for depth in range(len(loc)):
        node = loc[:depth]
        for kind in ("extra_forbidden", "missing"):
            found = [e for e in errors if e["type"] == kind and e["loc"][:-1] == node]
            if found:
                if kind == "missing":
                    order = _container(node)[0].required_order
                    found.sort(key=lambda e: order.index(e["loc"][-1]) if order else 0)
                return found[0]
    return errors[0]


def _describe(error: Any) -> tuple[str, str]:
    loc, kind = tuple(error["loc"]), error["type"]
    ctx = error.get("ctx") or {}
    if kind == "scenario":
        loc = loc[: len(loc) - ctx["up"]] + ((ctx["down"],) if ctx["down"] else ())
        return _where(loc), ctx["message"]
    if kind in ("extra_forbidden", "missing"):
        model = _container(loc[:-1])[0]
        if kind == "missing":
            return _where(loc[:-1]), f"missing required field {loc[-1]!r}"
        allowed = sorted(f.alias or n for n, f in model.model_fields.items())
        return _where(loc[:-1]), f"unknown field {loc[-1]!r} (allowed: {', '.join(allowed)})"
    if kind in _MESSAGES:
        return _where(loc), _MESSAGES[kind].format(type=type_name(error["input"]))
    if kind in ("int_type", "greater_than_equal"):
        return _where(loc), "must be a non-negative integer"
    return _where(loc), str(error["msg"])  # pragma: no cover - no other check is declared


def _container(loc: tuple[Any, ...]) -> tuple[Any, list[str]]:
    """The type at ``loc`` of a :class:`ScenarioModel`, and each part of ``loc`` as it is
    written in a message (``.field``, ``[index]``, ``['registry key']``)."""
    tp: Any = ScenarioModel
    parts: list[str] = []
    for part in loc:
        while typing.get_origin(tp) is Annotated:
            tp = typing.get_args(tp)[0]
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = next(f for n, f in tp.model_fields.items() if (f.alias or n) == part)
            tp = field.annotation
            parts.append(f".{part}")
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
            parts.append(f"[{part!r}]")
        else:
            tp = typing.get_args(tp)[0] if typing.get_origin(tp) is list else Any
            parts.append(f"[{part}]")
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp, parts


def _where(loc: tuple[Any, ...]) -> str:
    return "".join(_container(loc)[1]).lstrip(".") or "scenario"
