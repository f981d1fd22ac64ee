"""Certificates made at test time, and TLS for the loopback fakes.

:class:`TestCA` is a CA (an EC key, made with ``cryptography`` when a test runs; nothing is
committed) that issues server certificates for ``127.0.0.1`` and ``localhost``
(:meth:`TestCA.issue`). :class:`TLSServerMixin` makes an ``http.server`` server speak TLS,
the handshake done in the request's own thread (a client that refuses the certificate
blocks nobody else). :mod:`tests.fakes.server`, :mod:`tests.fakes.ecr` and
:mod:`tests.fakes.acr` serve over TLS with it when given a :class:`ServerCertificate`.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ServerCertificate", "TLSServerMixin", "TestCA", "pem_certificates"]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class ServerCertificate:
    """A server's certificate chain and key, written to files."""

    cert_file: Path
    key_file: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
        return ctx


class TestCA:
    """A certificate authority of one test run (see the module docstring)."""

    __test__ = False  # not a pytest test class

    def __init__(self, name: str = "credprov test CA") -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = _now()
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        """The CA certificate, PEM."""
        from cryptography.hazmat.primitives import serialization

        return self._cert.public_bytes(serialization.Encoding.PEM)

    @property
    def der(self) -> bytes:
        """The CA certificate, DER."""
        from cryptography.hazmat.primitives import serialization

        return self._cert.public_bytes(serialization.Encoding.DER)

    def issue(
        self, directory: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
    ) -> ServerCertificate:
        """A server certificate for ``hosts`` (IP addresses or DNS names) in ``directory``."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        directory.mkdir(parents=True, exist_ok=True)
        cert_file = directory / "server.pem"
        key_file = directory / "server-key.pem"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        key_file.chmod(0o600)
        return ServerCertificate(cert_file, key_file)


def pem_certificates(*cas: TestCA) -> bytes:
    """A bundle of the CAs' certificates."""
    return b"".join(ca.pem for ca in cas)


class TLSServerMixin:
    """Mix into a ``socketserver`` TCP server before it: ``tls`` (an ``SSLContext`` or None)
    wraps each accepted connection in the request's thread."""

    tls: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                request.close()
                return
        super().finish_request(request, client_address)  # type: ignore[misc]
