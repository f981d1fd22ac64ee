"""Which registries get the token, under which auth keys (upstream's key set).

Upstream answers the ``gcr`` flow with the image's registry (the text before the first
``/``) plus the fixed patterns below, all with the same token, and never checks whether the
registry is Google's: with a broad ``matchImages`` the node's token goes to any registry.
credprov answers a registry outside the fixed patterns with no credentials unless
``--allow-non-google-registries`` is given.
"""

from __future__ import annotations

from credprov.sdk import urls_match_str

#: Upstream's fixed keys; they also define "a Google registry" (Artifact Registry is
#: ``LOCATION-docker.pkg.dev``).
GOOGLE_REGISTRY_KEYS = ("container.cloud.google.com", "gcr.io", "*.gcr.io", "*.pkg.dev")

#: The username upstream answers with; the password is the access token.
TOKEN_USERNAME = "_token"


def image_registry(image: str) -> str | None:
    """The image's registry as upstream takes it: before the first ``/``, if there is one."""
    registry, slash, _ = image.partition("/")
    return registry if slash else None


def is_google_registry(registry: str) -> bool:
    """Whether ``registry`` (host[:port]) matches one of :data:`GOOGLE_REGISTRY_KEYS` with
    the kubelet's matching rules (so ``gcr.io:443`` and ``evilgcr.io`` do not)."""
    return any(urls_match_str(key, registry) for key in GOOGLE_REGISTRY_KEYS)


def registry_keys(image: str) -> list[str]:
    """Upstream's auth keys for ``image``: its registry, then the fixed keys, no repeats."""
    keys: list[str] = []
    registry = image_registry(image)
    for key in ([registry] if registry else []) + list(GOOGLE_REGISTRY_KEYS):
        if key not in keys:
            keys.append(key)
    return keys
