"""KEP-4412 wiring: what must exist for a provider's service-account tokens, built and proven.

A credential provider with ``tokenAttributes`` gets a token for each pod from the API
server, as its node. Three things must exist for that (see docs/kep4412.md):

* the provider entry in the kubelet's ``CredentialProviderConfig`` (``tokenAttributes``:
  ``serviceAccountTokenAudience``, ``cacheType``, ``requireServiceAccount``, the required
  and optional annotation keys), valid for the kubelet;
* an RBAC grant of ``request-serviceaccounts-token-audience`` on the audience (RBAC's
  ``resource``) and the service accounts (``resourceNames``) to the nodes: a registry
  audience is never in a pod spec, so NodeRestriction's audience restriction
  (``ServiceAccountNodeAudienceRestriction``) asks the authorizer chain for this verb;
* the service accounts' annotations the provider forwards to the plugin (a required key
  missing on a service account: the kubelet does not run the plugin for its pods).

:func:`build` makes them from a :class:`WiringSpec` (read from a ``KEP4412Wiring`` file by
:func:`load_spec`, or built from flags): a ``CredentialProviderConfig`` document with the
one provider (checked by decoding and validating its YAML as the kubelet would), a
ClusterRole and a ClusterRoleBinding to the group ``system:nodes``, and one partial
ServiceAccount per annotated service account (an ``apply``/merge patch of its annotations).

:func:`prove` replays the kubelet's requests against a cluster's objects with the generated
objects applied: for every bound pod that uses a listed service account (or pulls an image
the provider matches, given the kubelet's image reader), its node's ``get
serviceaccounts``, the required annotations, and the ``TokenRequest`` through the Node
authorizer, NodeRestriction and RBAC (:class:`~credprov.nodeauth.nodeapi.NodeAPI`), the
token then verified with the issuer that signed it. Each pod is ``allowed``, ``denied``
(with the API server's or the kubelet's reason) or ``skipped`` (not bound to a node).
No token is ever returned or printed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from credprov.errors import NodeAccessError, UsageError

__all__ = [
    "API_VERSION",
    "KIND",
    "KNOWN_FEATURE_GATES",
    "PodProof",
    "Proof",
    "ServiceAccountRef",
    "Wiring",
    "WiringError",
    "WiringSpec",
    "build",
    "file_name",
    "load_spec",
    "merge_spec",
    "parse_spec",
    "prove",
    "render_yaml",
    "role_name",
    "write_manifests",
]

#: The input document's ``apiVersion`` and ``kind``.
API_VERSION = "credprov.io/v1alpha1"
KIND = "KEP4412Wiring"
#: The only exec API version that carries ``tokenAttributes``: the default.
EXEC_API_VERSION = "credentialprovider.kubelet.k8s.io/v1"
#: The verb NodeRestriction asks the authorizer for (kept in step with admission's).
AUDIENCE_VERB = "request-serviceaccounts-token-audience"
NODES_GROUP = "system:nodes"
#: An input file is a few hundred bytes; refuse anything past this.
MAX_SPEC_BYTES = 1024 * 1024
_RBAC_GROUP = "rbac.authorization.k8s.io"
_MANAGED_BY = {"app.kubernetes.io/managed-by": "credprov"}
_AUDIENCE_GATE = "ServiceAccountNodeAudienceRestriction"


def _known_gates() -> dict[str, bool]:
    from credprov.credentialprovider.plugin.config import DEFAULT_FEATURE_GATES
    from credprov.nodeauth.admission import FEATURE_GATE_DEFAULTS as ADMISSION_GATES
    from credprov.nodeauth.authorizer import FEATURE_GATE_DEFAULTS as AUTHORIZER_GATES

    return {**DEFAULT_FEATURE_GATES, **AUTHORIZER_GATES, **ADMISSION_GATES}


#: Gates the wiring reads, with their defaults: the kubelet's (config validation) and the
#: API server's (Node authorizer, NodeRestriction); one name may be both.
KNOWN_FEATURE_GATES: Mapping[str, bool] = _known_gates()


class WiringError(NodeAccessError, UsageError):
    """Bad wiring input (file, flags, the provider entry, the objects): one line, exit 2."""


# -- the input ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceAccountRef:
    """A service account that will use the provider, and the annotation values to set."""

    namespace: str
    name: str
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class WiringSpec:
    """What to wire: the provider entry as written in a ``CredentialProviderConfig`` (its
    JSON field names, ``tokenAttributes`` included) and the service accounts using it."""

    provider: Mapping[str, Any] = field(default_factory=dict)
    service_accounts: tuple[ServiceAccountRef, ...] = ()


def _input_struct() -> Any:
    from credprov._go.decode import STRING, Map, Ptr, Slice, Struct
    from credprov.api.specs import config_spec

    providers = config_spec("v1").fields["providers"]
    assert isinstance(providers, Slice)
    account = Struct(
        "ServiceAccount",
        "v1alpha1",
        {"namespace": STRING, "name": STRING, "annotations": Map(STRING)},
    )
    return Struct(
        KIND,
        "v1alpha1",
        {
            "apiVersion": STRING,
            "kind": STRING,
            "provider": Ptr(providers.elem),
            "serviceAccounts": Slice(account),
        },
    )


def _drop_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _one_line(message: str) -> str:
    """Go's multi-line errors (YAML's ``unmarshal errors:`` list) folded onto one line."""
    return re.sub(r"\s*\n\s*", " ", message.strip())


def parse_spec(data: bytes, where: str = "wiring file") -> WiringSpec:
    """A :class:`WiringSpec` from a ``KEP4412Wiring`` document (YAML or JSON), decoded
    strictly: unknown or duplicate fields and wrong types are errors, as in the kubelet.

    Raises:
        WiringError: not such a document (one line naming ``where``).
    """
    from credprov._go.decode import DecodeError, decode_typed, load_document

    try:
        data_out = decode_typed(_input_struct(), load_document(data))
    except DecodeError as exc:
        raise WiringError(f"{where}: {_one_line(str(exc))}") from None
    if data_out.get("apiVersion") != API_VERSION or data_out.get("kind") != KIND:
        raise WiringError(f"{where}: want apiVersion {API_VERSION} and kind {KIND}")
    accounts = []
    for number, sa in enumerate(data_out.get("serviceAccounts") or (), 1):
        accounts.append(
            ServiceAccountRef(
                namespace=str(sa.get("namespace") or ""),
                name=str(sa.get("name") or ""),
                annotations=dict(sa.get("annotations") or {}),
            )
        )
        if not accounts[-1].namespace or not accounts[-1].name:
            raise WiringError(f"{where}: serviceAccounts[{number}] needs a namespace and a name")
    return WiringSpec(_drop_none(data_out.get("provider") or {}), tuple(accounts))


def load_spec(path: str) -> WiringSpec:
    """:func:`parse_spec` of a file (``-``: standard input), read bounded.

    Raises:
        WiringError: unreadable, too large, or not a ``KEP4412Wiring`` document.
    """
    from credprov.base.fileio import InputReadError, read_input

    try:
        data, where = read_input(path, MAX_SPEC_BYTES, "wiring file")
    except InputReadError as exc:
        raise WiringError(str(exc)) from None
    return parse_spec(data, where)


def merge_spec(
    base: WiringSpec | None,
    *,
    provider: Mapping[str, Any] | None = None,
    token_attributes: Mapping[str, Any] | None = None,
    service_accounts: Iterable[ServiceAccountRef] = (),
) -> WiringSpec:
    """``base`` (a file's spec, or nothing) with flags applied: ``provider`` and
    ``token_attributes`` fields replace the file's; service accounts are added, and one
    already listed gets the new annotation values (later values win)."""
    base = base or WiringSpec()
    merged = dict(base.provider)
    merged.update(provider or {})
    attrs = dict(merged.get("tokenAttributes") or {})
    attrs.update(token_attributes or {})
    if attrs:
        merged["tokenAttributes"] = attrs
    accounts: dict[tuple[str, str], dict[str, str]] = {}
    for sa in (*base.service_accounts, *service_accounts):
        accounts.setdefault((sa.namespace, sa.name), {}).update(sa.annotations)
    return WiringSpec(
        merged,
        tuple(ServiceAccountRef(ns, name, ann) for (ns, name), ann in accounts.items()),
    )


# -- building ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wiring:
    """The generated objects (JSON-shaped dicts) and what the generator noticed."""

    provider: Any  # credprov.api.internal.CredentialProvider, validated
    config: Mapping[str, Any]
    cluster_role: Mapping[str, Any]
    cluster_role_binding: Mapping[str, Any]
    service_account_patches: tuple[Mapping[str, Any], ...]
    service_accounts: tuple[ServiceAccountRef, ...]
    warnings: tuple[str, ...] = ()

    @property
    def manifests(self) -> list[Mapping[str, Any]]:
        """Every object, in the order to write them: config, RBAC, service accounts."""
        return [
            self.config,
            self.cluster_role,
            self.cluster_role_binding,
            *self.service_account_patches,
        ]

    @property
    def audience(self) -> str:
        """The provider's ``serviceAccountTokenAudience``."""
        return str(self.provider.token_attributes.service_account_token_audience)


def role_name(provider_name: str) -> str:
    """The ClusterRole's (and its binding's) name for a provider: ``kep4412-<name>``, with
    characters an RBAC object name cannot carry replaced by ``-``."""
    return "kep4412-" + re.sub(r"[^A-Za-z0-9._:-]", "-", provider_name)


def _with_defaults(provider: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(provider)
    out.setdefault("apiVersion", EXEC_API_VERSION)
    attrs = dict(out.get("tokenAttributes") or {})
    attrs.setdefault("requireServiceAccount", True)
    out["tokenAttributes"] = attrs
    return out


def _config(providers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": providers,
    }


def _validated_provider(config: Mapping[str, Any], gates: Mapping[str, bool]) -> Any:
    """The config's one provider after the kubelet's decoding of its YAML and validation."""
    from credprov._go.decode import DecodeError, load_document
    from credprov.api.config import decode_config
    from credprov.credentialprovider.plugin.config import (
        DEFAULT_FEATURE_GATES,
        ConfigError,
        validate_config,
    )

    text = render_yaml([config])
    try:
        decoded = decode_config(load_document(text.encode("utf-8")))
        validate_config(decoded, {k: v for k, v in gates.items() if k in DEFAULT_FEATURE_GATES})
    except (DecodeError, ConfigError) as exc:
        error = WiringError(f"provider entry: {_one_line(str(exc))}")
        raise (error.with_hint(exc.hint) if exc.hint else error) from None
    (provider,) = decoded.providers
    return provider


def _check_accounts(provider: Any, accounts: Sequence[ServiceAccountRef]) -> list[str]:
    """Refuse unusable service accounts; the warnings about the usable ones."""
    if not accounts:
        raise WiringError("no service accounts: list the ones that will use the provider")
    attrs = provider.token_attributes
    required = attrs.required_service_account_annotation_keys
    keys = set(required) | set(attrs.optional_service_account_annotation_keys)
    warnings = []
    from credprov.credentialprovider.validation import is_dns1123_label, is_dns1123_subdomain

    for sa in accounts:
        # As the API server validates them (NameIsDNSLabel, ValidateServiceAccountName):
        # refused here, not by kubectl apply after the ClusterRole went in.
        for field_path, value, check in (
            ("metadata.namespace", sa.namespace, is_dns1123_label),
            ("metadata.name", sa.name, is_dns1123_subdomain),
        ):
            errs = check(value)
            if errs:
                shown = sa.ref if len(sa.ref) <= 80 else sa.ref[:77] + "..."
                raise WiringError(
                    f"service account {shown!r}: {field_path}: Invalid value: {'; '.join(errs)}"
                )
        for key in sa.annotations:
            if key not in keys:
                raise WiringError(
                    f"service account {sa.ref}: annotation {key} is neither a required nor an "
                    "optional annotation key of the provider"
                )
        missing = [k for k in required if k not in sa.annotations]
        if missing:
            warnings.append(
                f"service account {sa.ref}: no value given for required annotation "
                f"{', '.join(missing)}; its pods get no credentials from the provider unless "
                "the cluster's object has it"
            )
    return warnings


def build(spec: WiringSpec, feature_gates: Mapping[str, bool] | None = None) -> Wiring:
    """The objects that wire ``spec``'s provider for its service accounts.

    Defaults: the exec ``apiVersion`` is ``credentialprovider.kubelet.k8s.io/v1`` and
    ``requireServiceAccount`` is true; everything else the kubelet requires must be given.

    Raises:
        WiringError: the provider entry fails the kubelet's decoding or validation (its
            text), a service account is unusable, or none is listed.
    """
    from credprov.api.config import provider_to_dict

    gates = {**KNOWN_FEATURE_GATES, **(feature_gates or {})}
    provider = _validated_provider(_config([_with_defaults(spec.provider)]), gates)
    # Written in the canonical v1 form (field order, durations as Go prints them), and
    # that very text decoded and validated again.
    config = _config([provider_to_dict(provider)])
    provider = _validated_provider(config, gates)
    if not provider.name:  # the kubelet finds out only at LookPath
        raise WiringError("provider entry: name is required (the plugin's executable name)")
    if provider.token_attributes is None:  # pragma: no cover - _with_defaults sets it
        raise WiringError("provider entry: no tokenAttributes")
    accounts = tuple(sorted(spec.service_accounts, key=lambda sa: (sa.namespace, sa.name)))
    warnings = _check_accounts(provider, accounts)
    name = role_name(provider.name)
    audience = provider.token_attributes.service_account_token_audience
    role = {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": dict(_MANAGED_BY)},
        "rules": [
            {
                "apiGroups": [""],
                "resources": [audience],
                "verbs": [AUDIENCE_VERB],
                "resourceNames": sorted({sa.name for sa in accounts}),
            }
        ],
    }
    binding = {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(_MANAGED_BY)},
        "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": _RBAC_GROUP, "kind": "Group", "name": NODES_GROUP}],
    }
    patches = tuple(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": sa.name,
                "namespace": sa.namespace,
                "annotations": dict(sorted(sa.annotations.items())),
            },
        }
        for sa in accounts
        if sa.annotations
    )
    return Wiring(provider, config, role, binding, patches, accounts, tuple(warnings))


# -- rendering ---------------------------------------------------------------------------------

_COMMENTS = {
    "CredentialProviderConfig": "kubelet: --image-credential-provider-config (a file, or one "
    "file of its directory since 1.34)",
    "ClusterRole": "cluster: nodes may request tokens for this audience for these service "
    "accounts (NodeRestriction asks RBAC)",
    "ClusterRoleBinding": "cluster: to every node (group system:nodes)",
    "ServiceAccount": "cluster: the annotations the provider forwards (kubectl apply "
    "--server-side, or kubectl patch)",
}


#: Characters a plain or single-quoted scalar cannot carry as they are: line breaks (YAML
#: 1.1's NEL, LS and PS too: go-yaml reads U+0085 as a break and folds it to a space),
#: other C0 and C1 controls, DEL, the BOM, surrogates. A string holding one is written
#: double-quoted, where PyYAML writes each as an escape (``\N``, ``\L``, ``\x01``) that
#: go-yaml reads back as the character.
_NEEDS_ESCAPES = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")


def _dumper() -> Any:
    """PyYAML's safe dumper, quoting every string go-yaml would not read back as that
    string: PyYAML resolves plain scalars by YAML 1.1 rules of its own, go-yaml (the
    kubelet's and kubectl's reader) by others (``0o17`` and ``1e3`` are numbers to it), and
    an annotation value read as a number is an object the API server refuses. Strings with
    a line break or a control (:data:`_NEEDS_ESCAPES`) are written double-quoted, escaped.
    ``tests/differential/test_wiring_yaml_diff.py`` reads the output back with go-yaml."""
    import yaml

    from credprov._go.json import YAMLError, load_yaml_all

    class Dumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: Any, value: str) -> Any:
        if _NEEDS_ESCAPES.search(value):
            style: str | None = '"'
        else:
            try:
                plain_ok = load_yaml_all(value) == [value]
            except YAMLError:
                plain_ok = False
            style = None if plain_ok else "'"
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)
    return Dumper


def render_yaml(manifests: Iterable[Mapping[str, Any]]) -> str:
    """The manifests as one YAML stream: each document after ``---`` and a comment saying
    where it goes; keys in the order built, long strings never folded, and every string
    read back by go-yaml as the same string."""
    import yaml

    dumper = _dumper()
    parts = []
    for obj in manifests:
        comment = _COMMENTS.get(str(obj.get("kind")), "")
        body = yaml.dump(
            _plain(obj),
            Dumper=dumper,
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
            width=1 << 16,
        )
        parts.append("---\n" + (f"# {comment}\n" if comment else "") + body)
    return "".join(parts)


def _plain(value: Any) -> Any:
    """Mappings and sequences as dicts and lists (what the YAML dumper knows)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def file_name(obj: Mapping[str, Any]) -> str:
    """The file an object is written to with ``--out``: ``<kind>-<name>.yaml``, or
    ``<kind>-<namespace>.<name>.yaml`` for a namespaced object; lower case, characters
    other than ``[a-z0-9._-]`` replaced by ``_``. A namespace is a DNS-1123 label (no
    ``.``), so two service accounts never share a file (``a-b/c`` and ``a/b-c`` did with a
    ``-``); :func:`write_manifests` refuses two objects that would all the same."""
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind", "")).lower()
    if kind == "credentialproviderconfig":
        name = str(obj["providers"][0]["name"])
    else:
        name = ".".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
    return re.sub(r"[^a-z0-9._-]", "_", f"{kind}-{name}".lower()) + ".yaml"


# -- proving -----------------------------------------------------------------------------------

ALLOWED = "allowed"
DENIED = "denied"
SKIPPED = "skipped"


@dataclass(frozen=True)
class PodProof:
    """One pod's answer: ``status`` is ``allowed``, ``denied`` or ``skipped``; ``reason``
    the API server's or the kubelet's words; ``via`` why the pod was checked
    (``serviceAccount``: it uses a listed one; ``image``: it pulls an image the provider
    matches)."""

    namespace: str
    name: str
    node: str
    service_account: str
    status: str
    reason: str
    via: str

    def to_dict(self) -> dict[str, str]:
        """The JSON form (``-o json``)."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "node": self.node,
            "serviceAccount": self.service_account,
            "status": self.status,
            "reason": self.reason,
            "via": self.via,
        }


@dataclass(frozen=True)
class Proof:
    """Every checked pod, in the objects' order."""

    pods: tuple[PodProof, ...]

    @property
    def allowed(self) -> bool:
        """No pod was denied."""
        return all(p.status != DENIED for p in self.pods)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``-o json``)."""
        return {"allowed": self.allowed, "pods": [p.to_dict() for p in self.pods]}


def _with_wiring(store: Any, wiring: Wiring) -> Any:
    """A copy of ``store`` with the RBAC objects added and the annotations applied."""
    from credprov.nodeauth.store import ObjectStore

    out = ObjectStore(store)
    out.apply(wiring.cluster_role)
    out.apply(wiring.cluster_role_binding)
    for patch in wiring.service_account_patches:
        meta = patch["metadata"]
        current = out.get("serviceaccounts", meta["namespace"], meta["name"])
        if current is None:
            continue  # not in the cluster: the pods using it are denied (NotFound)
        current_meta = dict(current.get("metadata") or {})
        current_meta["annotations"] = {
            **(current_meta.get("annotations") or {}),
            **meta["annotations"],
        }
        out.apply({**current, "metadata": current_meta})
    return out


PodImages = Callable[[Mapping[str, Any]], Iterable[str]]


def _pods_to_check(
    store: Any, wiring: Wiring, pod_images: PodImages | None
) -> list[tuple[Mapping[str, Any], str]]:
    """``(pod, via)`` for the pods using a listed service account or a matched image."""
    from credprov.imageauth.images import InvalidImageError, parse_image_name
    from credprov.imageauth.matching import urls_match_str
    from credprov.nodeauth._objects import meta, s, spec

    listed = {(sa.namespace, sa.name) for sa in wiring.service_accounts}
    out = []
    for pod in store.list("pods"):
        namespace = s(meta(pod).get("namespace")) or "default"
        if (namespace, s(spec(pod).get("serviceAccountName"))) in listed:
            out.append((pod, "serviceAccount"))
            continue
        if pod_images is None:
            continue
        repos = []
        for image in pod_images(spec(pod)):
            try:
                repos.append(parse_image_name(image))
            except InvalidImageError:
                continue
        patterns = wiring.provider.match_images
        if any(urls_match_str(p, repo) for p in patterns for repo in repos):
            out.append((pod, "image"))
    return out


def prove(
    wiring: Wiring,
    store: Any,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    pod_images: PodImages | None = None,
) -> Proof:
    """Whether each pod's node gets the pod's token once ``wiring`` is applied to ``store``.

    Args:
        wiring: what :func:`build` made.
        store: the cluster's objects (:class:`~credprov.nodeauth.store.ObjectStore`); not
            changed (a copy gets the generated objects).
        feature_gates: API-server gates (and the kubelet's, ignored here).
        pod_images: the images the kubelet pulls for a pod spec
            (``credprov.kubelet.podspec``'s reader, above this layer); with it, pods that
            pull an image the provider matches are checked too, whatever their service
            account; without it, only pods using a listed service account.
    """
    from credprov.nodeauth._objects import meta, s, spec

    cluster = _with_wiring(store, wiring)
    gates = {**KNOWN_FEATURE_GATES, **(feature_gates or {})}
    apis: dict[str, Any] = {}
    results = []
    for pod, via in _pods_to_check(cluster, wiring, pod_images):
        pod_meta, pod_spec = meta(pod), spec(pod)
        namespace = s(pod_meta.get("namespace")) or "default"
        name, node = s(pod_meta.get("name")), s(pod_spec.get("nodeName"))
        sa = s(pod_spec.get("serviceAccountName"))
        if not node:
            status, reason = SKIPPED, "not bound to a node (spec.nodeName is empty)"
        else:
            if node not in apis:
                from credprov.nodeauth.nodeapi import NodeAPI

                shared = next(iter(apis.values())).populator if apis else None
                apis[node] = NodeAPI(cluster, node, feature_gates=gates, populator=shared)
            status, reason = _prove_pod(apis[node], wiring, pod, sa, gates)
        results.append(PodProof(namespace, name, node, sa, status, reason, via))
    return Proof(tuple(results))


def _prove_pod(
    api: Any, wiring: Wiring, pod: Mapping[str, Any], sa: str, gates: Mapping[str, bool]
) -> tuple[str, str]:
    """The kubelet's requests for one pod, as its node: ``(status, reason)``."""
    from credprov.credentialprovider.chain import ServiceAccountError, TokenRequest
    from credprov.nodeauth._objects import meta, s

    attrs = wiring.provider.token_attributes
    namespace = s(meta(pod).get("namespace")) or "default"
    name = s(meta(pod).get("name"))
    if not sa:
        if attrs.require_service_account:
            return DENIED, "no service account and requireServiceAccount: the plugin is not run"
        return SKIPPED, "no service account: the plugin runs without a token"
    seen = len(api.audit_log)
    try:
        info = api.get_service_account(namespace, sa)
        missing = [
            k for k in attrs.required_service_account_annotation_keys if k not in info.annotations
        ]
        if missing:
            return DENIED, (
                f"required annotation {missing[0]} not found on service account "
                f"{namespace}/{sa} (the plugin is not run)"
            )
        token = api.create_token(
            TokenRequest(
                namespace=namespace,
                service_account_name=sa,
                service_account_uid=info.uid,
                audience=wiring.audience,
                pod_name=name,
                pod_uid=s(meta(pod).get("uid")),
            )
        )
    except ServiceAccountError as exc:
        return DENIED, str(exc)
    try:
        claims = api.issuer.verify(token, wiring.audience)
    except ValueError as exc:  # pragma: no cover - the issuer just signed it
        return DENIED, f"the issued token does not verify: {exc}"
    bound = claims.get("kubernetes.io", {})
    if bound.get("pod", {}).get("name") != name or bound.get("node", {}).get("name") not in (
        None,
        api.node_name,
    ):  # pragma: no cover - NodeRestriction checked the binding
        return DENIED, "the issued token is bound to another pod or node"
    return ALLOWED, _grant_reason(api.audit_log[seen:], gates)


def _grant_reason(decisions: Sequence[tuple[Any, Any]], gates: Mapping[str, bool]) -> str:
    """Why the token's audience was admitted: the RBAC grant, a pod volume, or no check."""
    for attrs, decision in decisions:
        if attrs.verb == AUDIENCE_VERB and decision.allowed:
            return str(decision.reason)
    if not gates.get(_AUDIENCE_GATE, True):
        return f"{_AUDIENCE_GATE} is off: any audience"
    return "a volume of the pod requests the audience"


def write_manifests(manifests: Iterable[Mapping[str, Any]], directory: str) -> list[str]:
    """Write each object to its own ``directory/<file_name(obj)>`` (YAML, 0644) atomically:
    a reader sees the old file or the new one. The directory is created if missing.

    Returns:
        The paths written, in order.

    Raises:
        WiringError: ``directory`` exists and is not a directory, or two objects map to
            one file (nothing is written then).
        credprov.base.fileio.AtomicWriteError: a file could not be written.
    """
    import os

    from credprov.base.fileio import write_atomic

    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise WiringError(f"--out {directory}: not a directory")
    objects = list(manifests)
    names = [file_name(obj) for obj in objects]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise WiringError(f"--out {directory}: two objects would be written to {name}")
    os.makedirs(directory, exist_ok=True)
    paths = []
    for obj, name in zip(objects, names, strict=True):
        path = os.path.join(directory, name)
        write_atomic(path, render_yaml([obj]).encode("utf-8"))
        paths.append(path)
    return paths
