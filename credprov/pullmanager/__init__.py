"""KEP-2535 "ensure secret pulled images": pull records, verification policies, ensure-image.

Public API (stable; snake_case of the upstream names): :class:`ImagePullManager`,
:func:`trim_image_tag_digest`, :func:`validate_allowlist`, :func:`new_verification_policy`,
and the record types :class:`ImagePullIntent`, :class:`ImagePulledRecord`,
:class:`ImagePullCredentials`, :class:`ImagePullSecret`, :class:`ImagePullServiceAccount`.
"""

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
