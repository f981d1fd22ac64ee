"""The subject common name of a PEM certificate signing request (``certapi.ParseCSR``).

The PEM layer follows Go's ``pem.Decode`` (the first well-formed block; its type must be
``CERTIFICATE REQUEST``) and the two errors kubelet CSR tests meet are Go's own text. The
DER is parsed with ``cryptography``, imported here only, so nothing else pays for it.
Like Go's ``pkix.Name``, the last CN attribute wins.
"""

from __future__ import annotations

import base64
import binascii
import re

from credprov.errors import NodeAccessError

__all__ = ["CSRParseError", "csr_common_name", "pem_csr_der"]

_PEM_BLOCK = re.compile(rb"-----BEGIN ([^\r\n]*?)-----[ \t]*\r?\n(.*?)-----END \1-----", re.DOTALL)


class CSRParseError(NodeAccessError, ValueError):
    """The request is not a parseable CSR; the message follows Go's where it can."""


def pem_csr_der(pem: bytes) -> bytes:
    """The DER bytes of the first PEM block, which must be a ``CERTIFICATE REQUEST``."""
    for match in _PEM_BLOCK.finditer(pem):
        body = match.group(2)
        # Go accepts RFC 1421 headers ("Key: value" lines, then a blank line) before the body.
        if b":" in body.split(b"\n", 1)[0]:
            _, _, body = body.partition(b"\n\n")
        try:
            der = base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            continue
        if match.group(1) != b"CERTIFICATE REQUEST":
            break
        return der
    raise CSRParseError("PEM block type must be CERTIFICATE REQUEST")


def csr_common_name(pem: bytes) -> str:
    """The subject CN of a PEM CSR ("" when it has none).

    Raises:
        CSRParseError: not a PEM CSR, or the DER does not parse.
    """
    der = pem_csr_der(pem)
    if not der:
        raise CSRParseError("asn1: syntax error: sequence truncated")
    try:
        from cryptography import x509
        from cryptography.x509.oid import NameOID
    except ImportError:  # pragma: no cover - cryptography is present wherever tests run
        raise CSRParseError("the cryptography package is required to read CSRs") from None
    try:
        csr = x509.load_der_x509_csr(der)
        names = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    except ValueError as exc:
        raise CSRParseError(f"x509: {exc}") from None
    values = [n.value for n in names if isinstance(n.value, str)]
    return values[-1] if values else ""
