"""The node's CA certificates, found as Go's ``crypto/x509`` finds them on Linux.

Upstream's plugins are Go programs: they verify TLS against ``x509.SystemCertPool()``, which
reads the node's store, so a TLS-inspecting proxy whose CA only the node trusts works with
them. A frozen Python would trust whatever its build machine or ``certifi`` had instead. The
cloud plugins therefore take their trust from :func:`system_cert_pool`, which mirrors
``loadSystemRoots`` of ``src/crypto/x509/root_unix.go`` with the lists of
``root_linux.go`` (Go 1.21 to 1.26 alike):

1. the first of :data:`CERT_FILES` that can be read (``$SSL_CERT_FILE`` instead of the whole
   list when set and not empty; a missing one is skipped silently, as Go does);
2. then every file of every directory of :data:`CERT_DIRECTORIES` (``$SSL_CERT_DIR``, a
   ``:``-separated list, instead when set and not empty), in name order, leaving out the
   symlinks whose target has no ``/`` (OpenSSL's ``<hash>.0`` links to a file beside them);
   unreadable entries are skipped. Setting one variable leaves the other's defaults on.

From each file, as ``CertPool.AppendCertsFromPEM``: the ``CERTIFICATE`` PEM blocks without
headers that parse; anything else (``TRUSTED CERTIFICATE``, keys, comments, a broken block)
is skipped. No certificate at all means every TLS connection fails verification, as in Go.

Paths are node paths, resolved inside a root directory as ``openat2(RESOLVE_IN_ROOT)``
would (:class:`credprov.base.rootfs.NodeRoot`): ``/`` on a node; a temporary directory in
tests, given as ``root`` or, for a plugin run as a subprocess, by ``$CREDPROV_CA_ROOT``
(:data:`ROOT_ENV`, read only when set; the same lookup then runs as it would chrooted there).

The pool is handed to the HTTP stacks in the form each takes: :meth:`CertPool.ca_file` (a
PEM file holding exactly the pool: the store's own bundle when that is all the pool holds,
else a private temporary file removed at exit) for botocore, ``requests`` and azure-core,
which take a path; :meth:`CertPool.ssl_context` for code that takes a context.

Only the standard library (and credprov's foundation) is imported; ``ssl`` when a context
is made. Plugins import this module on their network path only.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import os
import posixpath
from collections.abc import Iterable, Mapping

from credprov.base.fileio import read_bounded
from credprov.base.rootfs import NodeRoot
from credprov.errors import CredprovError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ssl

__all__ = [
    "CERT_DIRECTORIES",
    "CERT_DIR_ENV",
    "CERT_FILES",
    "CERT_FILE_ENV",
    "ROOT_ENV",
    "CertPool",
    "CertPoolError",
    "load_cert_pool",
    "system_cert_pool",
]

#: Possible certificate files; the first one that reads wins (``root_linux.go``).
CERT_FILES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian/Ubuntu/Gentoo etc.
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora/RHEL 6
    "/etc/ssl/ca-bundle.pem",  # OpenSUSE
    "/etc/pki/tls/cacert.pem",  # OpenELEC
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # CentOS/RHEL 7
    "/etc/ssl/cert.pem",  # Alpine Linux
)

#: Possible directories with certificate files; all are read (``root_linux.go``).
CERT_DIRECTORIES = (
    "/etc/ssl/certs",  # SLES10/SLES11
    "/etc/pki/tls/certs",  # Fedora/RHEL
    "/system/etc/security/cacerts",  # Android
    "/data/misc/keychain/certs-added",  # Android user trusted CA folder (Go 1.21+)
)

#: Replaces :data:`CERT_FILES` with one file (Go, OpenSSL).
CERT_FILE_ENV = "SSL_CERT_FILE"
#: Replaces :data:`CERT_DIRECTORIES` with a ``:``-separated list (Go, OpenSSL).
CERT_DIR_ENV = "SSL_CERT_DIR"
#: Tests and diagnostics only: the directory the store's paths are resolved in (default ``/``).
ROOT_ENV = "CREDPROV_CA_ROOT"

#: The largest file read (Debian's bundle is ~220 KB).
MAX_FILE_BYTES = 16 * 1024 * 1024


class CertPoolError(CredprovError):
    """The pool cannot be handed over (its file cannot be written); one line."""


def parse_pem_certificates(data: bytes) -> tuple[list[bytes], bool]:
    """(DER of each ``CERTIFICATE`` block without headers, whether anything was skipped).

    Blocks are found as Go's ``pem.Decode`` finds them: ``-----BEGIN <type>-----`` at the
    start of a line, up to the next line ``-----END <type>-----`` of the same type, base64
    read ignoring white space; a block that does not decode is skipped. Whether a DER parses
    as a certificate is for :meth:`CertPool.ssl_context` to say.
    """
    ders: list[bytes] = []
    skipped = False
    pos = 0
    while (start := data.find(b"-----BEGIN ", pos)) >= 0:
        pos = start + 11
        if start > 0 and data[start - 1] != 0x0A:
            continue
        eol = data.find(b"\n", pos)
        if eol < 0:
            break
        type_line = data[pos:eol].rstrip(b" \t\r")
        if not type_line.endswith(b"-----"):
            continue
        kind = type_line[:-5]
        end = data.find(b"\n-----END " + kind + b"-----", eol)
        if end < 0:
            continue
        body = data[eol + 1 : end]
        pos = end + 1
        first_line = body.split(b"\n", 1)[0]
        if kind != b"CERTIFICATE" or b":" in first_line:
            skipped = True
            continue
        try:
            ders.append(base64.b64decode(b"".join(body.split()), validate=True))
        except (binascii.Error, ValueError):
            skipped = True
    return ders, skipped


class CertPool:
    """The CA certificates found (DER, first-seen order, no duplicates) and where.

    Attributes:
        certs: the certificates, as DER.
        sources: the node paths that gave at least one certificate, in reading order.
        tried: the files and directories looked at, in order (for messages).
        error: the first read error other than "no such file" (Go's ``firstErr``), or None.
    """

    def __init__(
        self,
        root: str,
        certs: Iterable[bytes],
        sources: Iterable[str],
        tried: Iterable[str],
        error: str | None = None,
        bundle: str | None = None,
    ) -> None:
        self.root = root
        self.certs = tuple(dict.fromkeys(certs))
        self.sources = tuple(sources)
        self.tried = tuple(tried)
        self.error = error
        #: the node path of a file holding exactly :attr:`certs` and nothing else, if any
        self.bundle = bundle
        self._context: ssl.SSLContext | None = None
        self._file: str | None = None

    def __len__(self) -> int:
        return len(self.certs)

    def describe(self) -> str:
        """One line: how many certificates from where (for messages about failed TLS)."""
        if not self.certs:
            where = ", ".join(self.tried)
            why = f" ({self.error})" if self.error else ""
            return f"no CA certificates found in the node's store{why}; looked at {where}"
        count = len(self.certs)
        noun = "certificate" if count == 1 else "certificates"
        return f"{count} CA {noun} from {', '.join(self.sources)}"

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS client context (hostname checked, TLS 1.2 or newer, as Go's default)
        trusting exactly this pool; certificates OpenSSL cannot parse are left out, as
        ``AppendCertsFromPEM`` leaves out what ``ParseCertificate`` refuses."""
        if self._context is None:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            try:  # all at once (fast); one by one only when something does not parse
                if self.certs:
                    ctx.load_verify_locations(cadata=b"".join(self.certs))
            except (ssl.SSLError, ValueError):
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.minimum_version = ssl.TLSVersion.TLSv1_2
                valid = []
                for der in self.certs:
                    try:
                        ctx.load_verify_locations(cadata=der)
                    except (ssl.SSLError, ValueError):
                        continue
                    valid.append(der)
                self.certs = tuple(valid)
                self.bundle = None
            self._context = ctx
        return self._context

    def ca_file(self) -> str:
        """A path (on this machine) of a PEM file holding exactly this pool.

        The store's own bundle when it holds the whole pool and nothing else (the usual
        case: Debian's and RHEL's directories repeat their bundle; it is handed over
        unparsed, so a certificate in it that OpenSSL cannot parse would fail the
        connections where Go skips it: distribution bundles hold none); otherwise a
        private temporary file of the certificates that parse, written once and removed
        when the process exits. An empty pool is ``os.devnull``, which holds no
        certificate: every TLS connection then fails verification, as in Go, while plain
        HTTP (a metadata server, a local fake) needs no file to be written.

        Raises:
            CertPoolError: the temporary file cannot be written.
        """
        if self._file is None:
            if not self.certs:
                self._file = os.devnull
            elif self.bundle is not None:
                self._file = NodeRoot(self.root).host_path(self.bundle)
            else:
                self.ssl_context()  # leaves out what does not parse
                self._file = _write_temporary(self.certs)
        return self._file


def _write_temporary(certs: Iterable[bytes]) -> str:
    import atexit
    import tempfile
    import textwrap

    pem = "".join(
        "-----BEGIN CERTIFICATE-----\n"
        + textwrap.fill(base64.b64encode(der).decode("ascii"), 64)
        + "\n-----END CERTIFICATE-----\n"
        for der in certs
    )
    try:
        fd, path = tempfile.mkstemp(prefix="credprov-ca-", suffix=".pem")
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(pem)
    except OSError as exc:
        raise CertPoolError(
            f"cannot write the node's CA certificates to a temporary file: {exc.strerror or exc}"
        ) from None
    atexit.register(_remove, path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _node_path(path: str) -> str:
    """A variable's path as a node path (a relative one is relative to the working
    directory, as Go's ``os.ReadFile`` reads it)."""
    return path if path.startswith("/") else posixpath.join(os.getcwd(), path)


class _Store:
    """Reads node paths: inside ``root`` through :class:`NodeRoot`, or directly when the
    root is ``/`` (where the kernel resolves paths exactly as ``RESOLVE_IN_ROOT`` would, for
    a fraction of the system calls)."""

    def __init__(self, root: str) -> None:
        self.node = NodeRoot(root)
        self.direct = self.node.is_host

    def read(self, path: str) -> bytes:
        if self.direct:
            return read_bounded(path, MAX_FILE_BYTES)
        return self.node.read(path, MAX_FILE_BYTES)

    def names(self, directory: str) -> list[str]:
        """Entry names in Go's ``os.ReadDir`` order (by bytes)."""
        if self.direct:
            names = os.listdir(directory)
            return sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape"))
        return [name for name, _ in self.node.entries(directory)]

    def is_same_dir_symlink(self, path: str) -> bool:
        """Go's ``isSameDirSymlink``: a symlink whose target contains no ``/``."""
        if self.direct:
            try:
                target: str | None = os.readlink(path)
            except OSError:
                target = None
        else:
            target = self.node.readlink(path)
        return target is not None and "/" not in target


def load_cert_pool(root: str = "/", environ: Mapping[str, str] | None = None) -> CertPool:
    """The CA certificates of the node whose filesystem is at ``root``, read as Go's
    ``loadSystemRoots`` reads them (see the module docstring), ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` taken from ``environ`` (default: this process's environment)."""
    env = os.environ if environ is None else environ
    store = _Store(root)
    certs: list[bytes] = []
    sources: list[str] = []
    tried: list[str] = []
    first_error: str | None = None
    bundle: str | None = None
    bundle_clean = False

    cert_file = env.get(CERT_FILE_ENV, "")
    files = [_node_path(cert_file)] if cert_file else list(CERT_FILES)
    for path in files:
        tried.append(path)
        try:
            data = store.read(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            first_error = first_error or _describe(path, exc)
            continue
        found, skipped = parse_pem_certificates(data)
        certs.extend(found)
        if found:
            sources.append(path)
            bundle, bundle_clean = path, not skipped
        break

    bundle_certs = set(certs)
    cert_dir = env.get(CERT_DIR_ENV, "")
    directories = (
        [_node_path(d) if d else "" for d in cert_dir.split(":")]
        if cert_dir
        else list(CERT_DIRECTORIES)
    )
    for directory in directories:
        tried.append(directory or '""')
        if not directory:  # Go: os.ReadDir("") fails with "no such file"
            continue
        try:
            names = store.names(directory)
        except FileNotFoundError:
            continue
        except OSError as exc:
            first_error = first_error or _describe(directory, exc)
            continue
        gave = False
        for name in names:
            path = posixpath.join(directory, name)
            if store.is_same_dir_symlink(path):
                continue
            try:
                data = store.read(path)
            except OSError:
                continue
            found, _ = parse_pem_certificates(data)
            certs.extend(found)
            gave = gave or bool(found)
        if gave:
            sources.append(directory)

    pool = CertPool(store.node.root, certs, sources, tried, first_error if not certs else None)
    if bundle is not None and bundle_clean and set(pool.certs) == bundle_certs:
        pool.bundle = bundle
    return pool


def _describe(path: str, exc: OSError) -> str:
    return f"{path}: {exc.strerror or type(exc).__name__}"


@functools.lru_cache(maxsize=8)
def _cached(root: str, cert_file: str, cert_dir: str) -> CertPool:
    return load_cert_pool(root, {CERT_FILE_ENV: cert_file, CERT_DIR_ENV: cert_dir})


def system_cert_pool(environ: Mapping[str, str] | None = None) -> CertPool:
    """The node's pool for this process (read once per root and variables): Go's
    ``x509.SystemCertPool()``. The root is ``$CREDPROV_CA_ROOT`` when set, else ``/``."""
    env = os.environ if environ is None else environ
    root = env.get(ROOT_ENV, "") or "/"
    return _cached(root, env.get(CERT_FILE_ENV, ""), env.get(CERT_DIR_ENV, ""))
