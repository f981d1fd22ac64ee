"""The Go types of the kubelet's credential provider API, as specs for the strict decoder.

``CredentialProviderConfig`` (``kubelet.config.k8s.io``, :func:`config_spec`), the KEP-2535
records ``ImagePullIntent``/``ImagePulledRecord`` of the same group (:func:`pull_record_spec`:
a document of those kinds given as a provider config gets their strict decoding errors
first, as the kubelet's scheme decodes it before checking the kind) and
``CredentialProviderRequest``/``-Response`` (``credentialprovider.kubelet.k8s.io``,
:func:`exec_spec`), per version. They are data only: the scheme (:mod:`credprov.api.scheme`)
looks them up by group, version and kind, and :mod:`credprov.api.config` and
:mod:`credprov.api.exec` decode through the scheme. Keeping the types here, below all three,
is what lets the scheme find them without importing the modules that use it.
"""

from __future__ import annotations

from credprov._go.decode import (
    BOOL,
    STRING,
    Duration,
    Map,
    Ptr,
    Scalar,
    Slice,
    Spec,
    Struct,
    Time,
)
from credprov.api import internal

__all__ = ["config_spec", "exec_spec", "pull_record_spec"]


def config_spec(version: str) -> Struct:
    """The Go type ``CredentialProviderConfig`` of ``kubelet.config.k8s.io/<version>``."""
    env = Struct("ExecEnvVar", version, {"name": STRING, "value": STRING})
    provider_fields: dict[str, Spec] = {
        "name": STRING,
        "matchImages": Slice(STRING),
        "defaultCacheDuration": Ptr(Duration()),
        "apiVersion": STRING,
        "args": Slice(STRING),
        "env": Slice(env),
    }
    if version == "v1":
        provider_fields["tokenAttributes"] = Ptr(
            Struct(
                "ServiceAccountTokenAttributes",
                version,
                {
                    "serviceAccountTokenAudience": STRING,
                    "cacheType": Scalar("string", f"{version}.ServiceAccountTokenCacheType"),
                    "requireServiceAccount": Ptr(BOOL),
                    "requiredServiceAccountAnnotationKeys": Slice(STRING),
                    "optionalServiceAccountAnnotationKeys": Slice(STRING),
                },
            )
        )
    provider = Struct("CredentialProvider", version, provider_fields)
    return Struct(
        "CredentialProviderConfig",
        version,
        {"kind": STRING, "apiVersion": STRING, "providers": Slice(provider)},
    )


def exec_spec(kind: str, version: str) -> Struct:
    """The Go type of ``credentialprovider.kubelet.k8s.io/<version>`` ``kind``."""
    if kind == internal.REQUEST_KIND:
        fields: dict[str, Spec] = {"kind": STRING, "apiVersion": STRING, "image": STRING}
        if version == "v1":
            fields["serviceAccountToken"] = STRING
            fields["serviceAccountAnnotations"] = Map(STRING)
        return Struct(internal.REQUEST_KIND, version, fields)
    auth = Struct("AuthConfig", version, {"username": STRING, "password": STRING})
    return Struct(
        internal.RESPONSE_KIND,
        version,
        {
            "kind": STRING,
            "apiVersion": STRING,
            "cacheKeyType": Scalar("string", f"{version}.PluginCacheKeyType"),
            "cacheDuration": Ptr(Duration()),
            "auth": Map(auth),
        },
    )


def pull_record_spec(kind: str, version: str) -> Struct:
    """The Go type ``ImagePullIntent`` or ``ImagePulledRecord`` of
    ``kubelet.config.k8s.io/<version>`` (``v1alpha1``, ``v1beta1``: the same fields; the
    field names are those :mod:`credprov.pullmanager.types` reads and writes)."""
    if kind == "ImagePullIntent":
        return Struct(kind, version, {"kind": STRING, "apiVersion": STRING, "image": STRING})
    secret = Struct(
        "ImagePullSecret",
        version,
        {"uid": STRING, "namespace": STRING, "name": STRING, "credentialHash": STRING},
    )
    account = Struct(
        "ImagePullServiceAccount", version, {"uid": STRING, "namespace": STRING, "name": STRING}
    )
    credentials = Struct(
        "ImagePullCredentials",
        version,
        {
            "kubernetesSecrets": Slice(secret),
            "kubernetesServiceAccounts": Slice(account),
            "nodePodsAccessible": BOOL,
        },
    )
    return Struct(
        kind,
        version,
        {
            "kind": STRING,
            "apiVersion": STRING,
            "lastUpdatedTime": Time(),
            "imageRef": STRING,
            "credentialMapping": Map(credentials),
        },
    )
