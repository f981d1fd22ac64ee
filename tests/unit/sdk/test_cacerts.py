"""``credprov.sdk.cacerts``: the node's CA store found in Go's order, inside a root.

Each case lays out a node root in a temporary directory (files, symlinks, directories)
and says which certificates the pool holds, in which order, and where they came from, as
Go's ``loadSystemRoots`` (``root_unix.go``, ``root_linux.go``) would find them.
"""

from __future__ import annotations

import base64
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from credprov.sdk import cacerts
from credprov.sdk.cacerts import CERT_DIRECTORIES, CERT_FILES, load_cert_pool, system_cert_pool
from tests.conftest import modules_loaded_by
from tests.fakes.tls import TestCA

DEBIAN = "/etc/ssl/certs/ca-certificates.crt"
RHEL6 = "/etc/pki/tls/certs/ca-bundle.crt"
RHEL7 = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"


@pytest.fixture(scope="module")
def cas() -> dict[str, TestCA]:
    return {name: TestCA(f"test CA {name}") for name in "ABCZ"}


def _pem(spec: str, cas: Mapping[str, TestCA]) -> bytes:
    """Text of a file: ``AB`` is CA A's then B's certificate; ``""`` an empty file."""
    return b"".join(cas[name].pem for name in spec)


@dataclass
class Case:
    name: str
    #: node path -> "<CAs>" (file), "-> target" (symlink), "/" (directory)
    layout: dict[str, str]
    want: str  # the CAs in the pool, in order
    sources: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    bundle: str | None = None


CASES = [
    Case(
        "debian: the bundle, then /etc/ssl/certs (hash links skipped, absolute links in root)",
        {
            DEBIAN: "AB",
            "/etc/ssl/certs/B.pem": "-> /usr/share/ca-certificates/mozilla/B.crt",
            "/etc/ssl/certs/1234abcd.0": "-> B.pem",
            "/usr/share/ca-certificates/mozilla/B.crt": "B",
        },
        "AB",
        (DEBIAN, "/etc/ssl/certs"),
        bundle=DEBIAN,
    ),
    Case(
        "rhel: ca-bundle.crt is a link to the extracted bundle; TRUSTED CERTIFICATE skipped",
        {
            RHEL6: f"-> {RHEL7}",
            RHEL7: "A",
            "/etc/pki/tls/certs/ca-bundle.trust.crt": "trusted:B",
            "/etc/ssl/certs": "-> /etc/pki/tls/certs",
        },
        "A",
        (RHEL6, "/etc/ssl/certs", "/etc/pki/tls/certs"),
        bundle=RHEL6,
    ),
    Case(
        "centos 7: only the extracted bundle (the fifth file) exists",
        {RHEL7: "C"},
        "C",
        (RHEL7,),
        bundle=RHEL7,
    ),
    Case(
        "the first file that reads wins: Debian's before RHEL's",
        {DEBIAN: "A", "/etc/pki/tls/cacert.pem": "B"},
        "A",
        (DEBIAN, "/etc/ssl/certs"),
        bundle=DEBIAN,
    ),
    Case(
        "an empty file still wins (Go stops at the first file it reads)",
        {"/etc/ssl/ca-bundle.pem": "", "/etc/pki/tls/cacert.pem": "B"},
        "",
    ),
    Case(
        "an unreadable file (a directory) is passed over",
        {"/etc/ssl/ca-bundle.pem": "/", "/etc/pki/tls/cacert.pem": "B"},
        "B",
        ("/etc/pki/tls/cacert.pem",),
        bundle="/etc/pki/tls/cacert.pem",
    ),
    Case(
        "alpine: /etc/ssl/cert.pem, the last file",
        {"/etc/ssl/cert.pem": "Z"},
        "Z",
        ("/etc/ssl/cert.pem",),
        bundle="/etc/ssl/cert.pem",
    ),
    Case(
        "directories add what the bundle lacks (no single file holds the pool)",
        {DEBIAN: "A", "/etc/pki/tls/certs/corp.pem": "C"},
        "AC",
        (DEBIAN, "/etc/ssl/certs", "/etc/pki/tls/certs"),
    ),
    Case(
        "a same-directory link is skipped (the order shows it), other links are followed",
        {
            "/etc/ssl/certs/0000.0": "-> z.pem",
            "/etc/ssl/certs/a.pem": "A",
            "/etc/ssl/certs/b.pem": "-> ../../../b/b.pem",
            "/b/b.pem": "B",
            "/etc/ssl/certs/z.pem": "Z",
        },
        "ABZ",
        ("/etc/ssl/certs",),
    ),
    Case(
        "SSL_CERT_FILE replaces the list of files, not the directories (Debian's bundle is in one)",
        {DEBIAN: "A", "/custom/ca.pem": "C", "/etc/pki/tls/certs/b.pem": "B"},
        "CAB",
        ("/custom/ca.pem", "/etc/ssl/certs", "/etc/pki/tls/certs"),
        env={"SSL_CERT_FILE": "/custom/ca.pem"},
    ),
    Case(
        "a missing SSL_CERT_FILE gives no file, silently",
        {DEBIAN: "A"},
        "A",
        ("/etc/ssl/certs",),
        env={"SSL_CERT_FILE": "/nowhere.pem"},
    ),
    Case(
        "SSL_CERT_DIR replaces the directories (':'-separated, empty and missing ones skipped)",
        {"/d1/a.pem": "A", "/d2/b.pem": "B", "/etc/ssl/certs/z.pem": "Z", DEBIAN: "C"},
        "CAB",
        (DEBIAN, "/d1", "/d2"),
        env={"SSL_CERT_DIR": "/d1::/missing:/d2"},
    ),
    Case(
        "links never leave the root: an absolute target resolves inside it",
        {DEBIAN: "-> /etc/real.pem", "/etc/real.pem": "A"},
        "A",
        (DEBIAN, "/etc/ssl/certs"),
        bundle=DEBIAN,
    ),
    Case(
        "blocks with headers, keys, comments and bad base64 are skipped",
        {DEBIAN: "junk:A"},
        "A",
        (DEBIAN, "/etc/ssl/certs"),
    ),
    Case("nothing at all", {}, ""),
]


def _lay_out(root: Path, layout: Mapping[str, str], cas: Mapping[str, TestCA]) -> None:
    for node_path, spec in layout.items():
        path = root / node_path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if spec == "/":
            path.mkdir()
        elif spec.startswith("-> "):
            path.symlink_to(spec[3:])
        elif spec.startswith("trusted:"):
            pem = _pem(spec.removeprefix("trusted:"), cas)
            path.write_bytes(pem.replace(b" CERTIFICATE-----", b" TRUSTED CERTIFICATE-----"))
        elif spec.startswith("junk:"):
            junk = (
                b"# a comment\n"
                b"-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n"
                b"-----END CERTIFICATE-----\n"
                b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
                b"-----BEGIN CERTIFICATE-----\n!!not base64!!\n-----END CERTIFICATE-----\n"
            )
            path.write_bytes(junk + _pem(spec.removeprefix("junk:"), cas))
        else:
            path.write_bytes(_pem(spec, cas))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_lookup_order(case: Case, tmp_path: Path, cas: dict[str, TestCA]) -> None:
    _lay_out(tmp_path, case.layout, cas)
    pool = load_cert_pool(str(tmp_path), case.env)
    assert pool.certs == tuple(cas[name].der for name in case.want)
    assert pool.sources == case.sources
    assert pool.bundle == case.bundle


def test_the_lists_are_gos() -> None:
    """root_linux.go of Go 1.21-1.26, in order (a change upstream is a change here)."""
    assert CERT_FILES == (
        DEBIAN,
        RHEL6,
        "/etc/ssl/ca-bundle.pem",
        "/etc/pki/tls/cacert.pem",
        RHEL7,
        "/etc/ssl/cert.pem",
    )
    assert CERT_DIRECTORIES == (
        "/etc/ssl/certs",
        "/etc/pki/tls/certs",
        "/system/etc/security/cacerts",
        "/data/misc/keychain/certs-added",
    )


def test_ca_file_is_the_bundle_when_it_holds_the_pool(
    tmp_path: Path, cas: dict[str, TestCA]
) -> None:
    _lay_out(tmp_path, {DEBIAN: "AB", "/etc/ssl/certs/b.pem": "B"}, cas)
    assert load_cert_pool(str(tmp_path), {}).ca_file() == str(tmp_path / DEBIAN.lstrip("/"))


def test_ca_file_holds_exactly_the_pool_otherwise(tmp_path: Path, cas: dict[str, TestCA]) -> None:
    broken = b"-----BEGIN CERTIFICATE-----\n" + base64.b64encode(b"not DER") + b"\n"
    broken += b"-----END CERTIFICATE-----\n"
    _lay_out(tmp_path, {DEBIAN: "A", "/etc/pki/tls/certs/c.pem": "C"}, cas)
    (tmp_path / "etc/pki/tls/certs/broken.pem").write_bytes(broken)
    pool = load_cert_pool(str(tmp_path), {})
    path = pool.ca_file()
    assert path != str(tmp_path / DEBIAN.lstrip("/"))
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(path)  # a certificate that does not parse was left out
    assert sorted(ctx.get_ca_certs(binary_form=True)) == sorted([cas["A"].der, cas["C"].der])
    assert pool.ca_file() == path  # written once


def test_an_empty_pool_writes_no_file(tmp_path: Path) -> None:
    assert load_cert_pool(str(tmp_path), {}).ca_file() == os.devnull


def test_describe_says_where_from_or_what_was_tried(tmp_path: Path, cas: dict[str, TestCA]) -> None:
    assert load_cert_pool(str(tmp_path), {"SSL_CERT_DIR": "/x"}).describe() == (
        "no CA certificates found in the node's store; looked at " + ", ".join([*CERT_FILES, "/x"])
    )
    _lay_out(tmp_path, {RHEL7: "AB"}, cas)
    assert load_cert_pool(str(tmp_path), {}).describe() == f"2 CA certificates from {RHEL7}"


def test_a_read_error_is_reported_when_nothing_was_found(tmp_path: Path) -> None:
    _lay_out(tmp_path, {"/etc/ssl/ca-bundle.pem": "/"}, {})
    pool = load_cert_pool(str(tmp_path), {})
    assert pool.error == "/etc/ssl/ca-bundle.pem: not a regular file (a directory)"
    assert "(/etc/ssl/ca-bundle.pem: not a regular file (a directory))" in pool.describe()


def test_the_root_comes_from_the_environment_only_when_set(
    tmp_path: Path, cas: dict[str, TestCA]
) -> None:
    _lay_out(tmp_path, {RHEL7: "Z"}, cas)
    env = {"CREDPROV_CA_ROOT": str(tmp_path), "SSL_CERT_DIR": "/none"}
    pool = system_cert_pool(env)
    assert pool.certs == (cas["Z"].der,)
    assert system_cert_pool(env) is pool  # read once per process
    assert system_cert_pool({"SSL_CERT_FILE": "/none", "SSL_CERT_DIR": "/none"}).root == "/"


@pytest.mark.parametrize(
    ("text", "count", "skipped"),
    [
        (b"-----BEGIN CERTIFICATE-----\r\nAAEC\r\n-----END CERTIFICATE-----\r\n", 1, False),
        (b"x -----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n", 0, False),
        (b"-----BEGIN CERTIFICATE-----\nAAEC\n-----END X509 CRL-----\n", 0, False),
        (b"-----BEGIN X509 CRL-----\nAAEC\n-----END X509 CRL-----\n", 0, True),
        (b"-----BEGIN CERTIFICATE-----\nAA EC\n\tAAEC\n-----END CERTIFICATE-----", 1, False),
    ],
    ids=["crlf", "begin-not-at-line-start", "end-of-another-type", "a-crl", "white-space"],
)
def test_pem_blocks_as_go_decodes_them(text: bytes, count: int, skipped: bool) -> None:
    ders, was_skipped = cacerts.parse_pem_certificates(text)
    assert (len(ders), was_skipped) == (count, skipped)


def test_importing_it_loads_no_tls_or_third_party_module() -> None:
    loaded = modules_loaded_by("import credprov.sdk.cacerts")
    assert not {m.split(".")[0] for m in loaded} & {"ssl", "_ssl", "requests", "urllib3"}
