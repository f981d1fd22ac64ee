"""SHA-256 without loading OpenSSL: start-up matters on every path that hashes once.

``hashlib.sha256`` comes from OpenSSL, and importing ``hashlib`` loads ``libcrypto`` (about
3 ms of every process start). The interpreter ships its own SHA-256 (``_sha256`` in 3.11,
``_sha2`` from 3.12) with the same digests; ``hashlib`` is the fallback where neither exists.
"""

from __future__ import annotations

try:
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - other versions
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256"]
