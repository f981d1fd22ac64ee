"""KEP-2535 "ensure secret pulled images": pull records, verification policies, ensure-image.

Public API (stable; snake_case of the upstream names): :class:`ImagePullManager`,
:func:`trim_image_tag_digest`, :func:`validate_allowlist`, :func:`new_verification_policy`,
and the record types :class:`ImagePullIntent`, :class:`ImagePulledRecord`,
:class:`ImagePullCredentials`, :class:`ImagePullSecret`, :class:`ImagePullServiceAccount`.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from credprov.pullmanager.manager import ImagePullManager
    from credprov.pullmanager.policies import (
        new_verification_policy,
        trim_image_tag_digest,
        validate_allowlist,
    )
    from credprov.pullmanager.types import (
        ImagePullCredentials,
        ImagePulledRecord,
        ImagePullIntent,
        ImagePullSecret,
        ImagePullServiceAccount,
    )

#: Name -> the submodule that defines it: imported on first use, so that a tool that needs
#: only the policies or the record store (the doctor) does not load the manager and its
#: Prometheus metrics.
_HOMES = {
    "ImagePullManager": "manager",
    "new_verification_policy": "policies",
    "trim_image_tag_digest": "policies",
    "validate_allowlist": "policies",
    "ImagePullCredentials": "types",
    "ImagePulledRecord": "types",
    "ImagePullIntent": "types",
    "ImagePullSecret": "types",
    "ImagePullServiceAccount": "types",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ImagePullCredentials",
    "ImagePullIntent",
    "ImagePullManager",
    "ImagePullSecret",
    "ImagePullServiceAccount",
    "ImagePulledRecord",
    "new_verification_policy",
    "trim_image_tag_digest",
    "validate_allowlist",
]
