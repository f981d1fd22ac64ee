"""``credprov bundle`` without freezing: every error path is one line, bundle tarballs are
checked whole before use, ``--out`` is created, ``--oci-archive`` alone writes only the
image, one image holds several architectures, and a layer is streamed (bounded memory).

A stand-in runtime (a shell script, laid out by the real ``assemble``) takes the frozen one's
place; where a build is needed, ``build._freeze`` returns it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from credprov.bundle import build
from credprov.bundle.build import assemble, write_tarball
from credprov.bundle.layout import BundleError, go_arch
from credprov.cli.main import main

NAMES = ("static-credential-provider", "ecr-credential-provider")
HOST = go_arch()
OTHER = "arm64" if HOST == "amd64" else "amd64"
needs_busybox = pytest.mark.skipif(
    not Path("/bin/busybox").exists(), reason="busybox-static not installed"
)


def stand_in_runtime(tmp_path: Path, filler: int = 0) -> Path:
    runtime = tmp_path / "runtime-src"
    runtime.mkdir(parents=True, exist_ok=True)
    exe = runtime / "credprov-plugins"
    exe.write_text('#!/bin/sh\necho "$(basename "$0")"\n')
    exe.chmod(0o755)
    if filler:
        with open(runtime / "filler", "wb") as fh:
            for _ in range(filler >> 20):
                fh.write(bytes(1 << 20))
    return runtime


def make_tarball(
    tmp_path: Path,
    arch: str = HOST,
    name: str | None = None,
    edit: Callable[[Path], None] | None = None,
    filler: int = 0,
) -> Path:
    """A stand-in bundle for ``arch`` (REQUIREMENTS rewritten), optionally edited."""
    work = tmp_path / f"bundle-{arch}-{name or 'default'}"
    bundle, _build_id, _glibc = assemble(stand_in_runtime(work, filler), NAMES, work / "out")
    requirements = bundle / "REQUIREMENTS"
    requirements.write_text(requirements.read_text().replace(f"linux/{HOST};", f"linux/{arch};"))
    if edit is not None:
        edit(bundle)
    tarball = tmp_path / (name or f"credprov-plugins-0.1.0-linux-{arch}.tar.gz")
    write_tarball(bundle, tarball)
    return tarball


def elf_header(e_machine: int) -> bytes:
    """A 64-byte little-endian ELF64 executable header with no program headers: what
    ``credprov.base.elf`` reads as a static executable of ``e_machine``."""
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    return ident + struct.pack("<HHIQQQIHHHHHH", 2, e_machine, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)


def fake_sysroot(tmp_path: Path, arch: str) -> Path:
    """A root directory whose /bin/busybox is a (fake) static executable of ``arch``."""
    root = tmp_path / f"sysroot-{arch}"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "busybox").write_bytes(elf_header({"amd64": 62, "arm64": 183}[arch]))
    return root


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- tarballs that are not whole, well-formed bundles --------------------------------------


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def tar_of(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out.getvalue()


def entries_of(tarball: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(tarball) as tar:
        return [
            (m, tar.extractfile(m).read() if m.isreg() else b"")  # type: ignore[union-attr]
            for m in tar
        ]


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


def with_extra(*extra: tuple[tarfile.TarInfo, bytes]) -> Callable[[Path, Path], bytes]:
    def make(good: Path, _tmp: Path) -> bytes:
        return gz(tar_of([*entries_of(good), *extra]))

    return make


def without(name: str) -> Callable[[Path, Path], bytes]:
    def make(good: Path, _tmp: Path) -> bytes:
        return gz(tar_of([(m, d) for m, d in entries_of(good) if m.name != name]))

    return make


def replacing(name: str, data: bytes) -> Callable[[Path, Path], bytes]:
    def make(good: Path, _tmp: Path) -> bytes:
        return gz(tar_of([(m, data if m.name == name else d) for m, d in entries_of(good)]))

    return make


def truncated_tar(good: Path, _tmp: Path) -> bytes:
    """A well-formed gzip of a tar cut before its last member (the runtime): tarfile alone
    reads the others and stops without a word (the old writer made an image of them)."""
    plain = gzip.decompress(good.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        members = tar.getmembers()
    return gz(plain[: members[-1].offset])


def corrupt_header(good: Path, _tmp: Path) -> bytes:
    plain = bytearray(gzip.decompress(good.read_bytes()))
    with tarfile.open(fileobj=io.BytesIO(bytes(plain))) as tar:
        offset = tar.getmembers()[-1].offset
    plain[offset + 150] ^= 0xFF  # the header's checksum field
    return gz(bytes(plain))


def flipped_gzip(good: Path, _tmp: Path) -> bytes:
    data = bytearray(good.read_bytes())
    data[len(data) - 6] ^= 0xFF  # inside the CRC32 trailer
    return bytes(data)


def manifest_of(good: Path, mutate: bool) -> bytes:
    lines = []
    for info, data in entries_of(good):
        if info.isreg() and info.name.startswith("credprov-plugins/runtime/"):
            digest = hashlib.sha256(data + (b"x" if mutate else b"")).hexdigest()
            lines.append(f"{digest}  {info.name.removeprefix('credprov-plugins/runtime/')}\n")
    return "".join(lines).encode()


def with_manifest(mutate: bool) -> Callable[[Path, Path], bytes]:
    """The bundle with its ``MANIFEST`` rewritten (digests of altered content if ``mutate``)."""

    def make(good: Path, _tmp: Path) -> bytes:
        kept = [(m, d) for m, d in entries_of(good) if m.name != "credprov-plugins/MANIFEST"]
        manifest = (member("credprov-plugins/MANIFEST"), manifest_of(good, mutate))
        return gz(tar_of([*kept, manifest]))

    return make


BAD_TARBALLS: dict[str, tuple[Callable[[Path, Path], bytes], str]] = {
    "not gzip": (lambda g, t: b"just text\n", "not a gzip file (want a .tar.gz bundle)"),
    "empty": (lambda g, t: b"", "not a tar archive inside the gzip stream"),
    "gzip of not a tar": (lambda g, t: gz(b"hello" * 300), "not a tar archive inside"),
    "truncated gzip": (lambda g, t: g.read_bytes()[: g.stat().st_size // 2],
                       "truncated (the gzip stream ends early)"),
    "gzip CRC": (flipped_gzip, "corrupt gzip stream"),
    "truncated tar": (truncated_tar, "truncated or corrupt tar: it stops after "),
    "corrupt header": (corrupt_header, "truncated or corrupt tar: it stops after "),
    "outside the bundle": (with_extra((member("etc/cron.d/x"), b"x")),
                           "entry 'etc/cron.d/x' is outside credprov-plugins/"),
    "dot-dot": (with_extra((member("credprov-plugins/../x"), b"x")), "is outside"),
    "absolute": (with_extra((member("/credprov-plugins/x"), b"x")), "is outside"),
    "escaping symlink": (with_extra((member("credprov-plugins/x", tarfile.SYMTYPE,
                                            "../../etc/shadow"), b"")), "points outside"),
    "absolute symlink": (with_extra((member("credprov-plugins/x", tarfile.SYMTYPE,
                                            "/etc/shadow"), b"")), "points outside"),
    "hard link": (with_extra((member("credprov-plugins/x", tarfile.LNKTYPE,
                                     "credprov-plugins/install"), b"")), "is a hard link"),
    "device": (with_extra((member("credprov-plugins/x", tarfile.CHRTYPE), b"")),
               "is a device, FIFO or other special file"),
    "fifo member": (with_extra((member("credprov-plugins/x", tarfile.FIFOTYPE), b"")),
                    "is a device, FIFO or other special file"),
    "duplicate": (with_extra((member("credprov-plugins/install"), b"#!/bin/sh\n")),
                  "credprov-plugins/install appears twice"),
    "no BUILD_ID": (without("credprov-plugins/BUILD_ID"), "no credprov-plugins/BUILD_ID"),
    "no runtime": (without("credprov-plugins/runtime/credprov-plugins"),
                   "no credprov-plugins/runtime/credprov-plugins"),
    "no install": (without("credprov-plugins/install"), "no credprov-plugins/install"),
    "bad BUILD_ID": (replacing("credprov-plugins/BUILD_ID", b"../../x\n"),
                     "BUILD_ID is not '<version>-<12 hex digits>'"),
    "bad PLUGINS": (replacing("credprov-plugins/PLUGINS", b"--bin-dir=/tmp\n"),
                    "PLUGINS is not a list of distinct plugin names"),
    "empty PLUGINS": (replacing("credprov-plugins/PLUGINS", b""), "PLUGINS is not a list"),
    "no arch": (replacing("credprov-plugins/REQUIREMENTS", b"glibc >= 2.17\n"),
                "REQUIREMENTS does not start with linux/<arch> (amd64/arm64)"),
    "runtime of another arch": (replacing("credprov-plugins/runtime/credprov-plugins",
                                          elf_header(183 if HOST == "amd64" else 62)),
                                f"REQUIREMENTS says linux/{HOST} but its runtime is an {OTHER}"),
    "MANIFEST mismatch": (with_manifest(mutate=True),
                          "runtime/credprov-plugins does not match its MANIFEST sha256"),
}  # fmt: skip


@pytest.fixture
def good_tarball(tmp_path: Path) -> Path:
    return make_tarball(tmp_path)


@pytest.mark.parametrize("make, message", BAD_TARBALLS.values(), ids=BAD_TARBALLS.keys())
def test_from_tarball_refuses_what_is_not_a_whole_bundle(
    tmp_path: Path,
    good_tarball: Path,
    make: Callable[[Path, Path], bytes],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(make(good_tarball, tmp_path))
    before = sorted(tmp_path.iterdir())
    image = tmp_path / "image.tar"
    code, out, err = run_cli(
        ["bundle", "--from-tarball", str(bad), "--oci-archive", str(image)], capsys
    )
    assert (code, out) == (1, "")
    assert err.startswith(f"credprov: error: bundle {bad}: ")
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == before, "no image, no temporary file left"


def test_a_manifest_that_matches_is_accepted(tmp_path: Path, good_tarball: Path) -> None:
    from credprov.bundle.tarball import open_bundle

    ok = tmp_path / "ok.tar.gz"
    ok.write_bytes(with_manifest(mutate=False)(good_tarball, tmp_path))
    with open_bundle(ok) as bundle:
        assert bundle.arch == HOST and bundle.plugins == NAMES
        assert "credprov-plugins/MANIFEST" in {m.name for m in bundle.members}


LIMITS = {
    "entries": ({"entries": 5}, "more than 5 entries"),
    "unpacked size": ({"unpacked": 4096}, "unpacks to more than 4096 bytes"),
    "metadata size": ({"metadata": 4}, "BUILD_ID is not a regular file of at most 4 bytes"),
}


@pytest.mark.parametrize("limits, message", LIMITS.values(), ids=LIMITS.keys())
def test_bundles_are_bounded(good_tarball: Path, limits: dict[str, int], message: str) -> None:
    from credprov.bundle.tarball import Limits, open_bundle

    with pytest.raises(BundleError) as caught, open_bundle(good_tarball, Limits(**limits)):
        pass
    assert str(caught.value) == f"bundle {good_tarball}: {message}"


def test_unpack_checks_the_bundle_first(tmp_path: Path, good_tarball: Path) -> None:
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(truncated_tar(good_tarball, tmp_path))
    with pytest.raises(BundleError, match="truncated or corrupt tar"):
        build.unpack(bad, tmp_path / "unpacked")
    assert not (tmp_path / "unpacked").exists()
    bundle = build.unpack(good_tarball, tmp_path / "unpacked")
    assert (bundle / "PLUGINS").read_text().split() == list(NAMES)


# -- every other error path of the command: one line, exit 1 -------------------------------


def special_paths(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo.tar.gz"
    os.mkfifo(fifo)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "misnamed").mkdir()
    misnamed = tmp_path / "misnamed" / f"credprov-plugins-0.1.0-linux-{OTHER}.tar.gz"
    make_tarball(tmp_path, HOST, "x.tar.gz").rename(misnamed)
    return {
        "<FIFO>": str(fifo),
        "<DIR>": str(tmp_path),
        "<FILE>": str(tmp_path / "a-file"),
        "<OTHER_ROOT>": str(fake_sysroot(tmp_path, HOST)),
        "<GOOD>": str(make_tarball(tmp_path)),
        "<GOOD_OTHER>": str(make_tarball(tmp_path, OTHER)),
        "<MISNAMED>": str(misnamed),
        "<IMAGE>": str(tmp_path / "image.tar"),
    }


CLI_ERRORS = {
    "no --out": (["bundle"], "--out DIR is required (where the tarball goes), or --oci-archive "
                 "FILE"),
    "image needs an archive": (["bundle", "--from-tarball", "x.tar.gz"],
                               "--from-tarball needs --oci-archive"),
    "tarball and build": (["bundle", "--from-tarball", "<GOOD>", "--out", "<DIR>", "--oci-archive",
                           "<IMAGE>"], "--from-tarball makes only the image: drop --out and PLUGIN"),
    "keep-dir without out": (["bundle", "--keep-dir", "--oci-archive", "<IMAGE>"],
                             "--keep-dir needs --out DIR"),
    "sysroot without image": (["bundle", "--out", "<DIR>", "--sysroot", "arm64=<DIR>"],
                              "--sysroot is for the image: add --oci-archive FILE"),
    "unknown plugin": (["bundle", "--out", ".", "nope"],
                       "unknown plugin(s) nope; available: static-credential-provider, "
                       "docker-credential-helper-provider, docker-credential-credprov, "
                       "ecr-credential-provider, auth-provider-gcp, acr-credential-provider"),
    "out is a file": (["bundle", "--out", "<FILE>"], "output directory <FILE> is not a directory"),
    "out under a file": (["bundle", "--out", "<FILE>/sub"],
                         "cannot create output directory <FILE>/sub: Not a directory"),
    "missing tarball": (["bundle", "--from-tarball", "<DIR>/nope.tar.gz", "--oci-archive",
                         "<IMAGE>"], "bundle <DIR>/nope.tar.gz: No such file or directory"),
    "tarball is a directory": (["bundle", "--from-tarball", "<DIR>", "--oci-archive", "<IMAGE>"],
                               "bundle <DIR>: not a regular file (a directory)"),
    "tarball is a FIFO": (["bundle", "--from-tarball", "<FIFO>", "--oci-archive", "<IMAGE>"],
                          "bundle <FIFO>: not a regular file (a FIFO)"),
    "tarball is a device": (["bundle", "--from-tarball", "/dev/zero", "--oci-archive", "<IMAGE>"],
                            "bundle /dev/zero: not a regular file (a character device)"),
    "archive is /": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "/"],
                     "cannot write the image to /: a directory (want a file name)"),
    "archive is .": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "."],
                     "cannot write the image to .: a directory (want a file name)"),
    "archive is a dir": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<DIR>"],
                         "cannot write the image to <DIR>: a directory (want a file name)"),
    "archive in no dir": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<DIR>/no/x.tar"],
                          "cannot write <DIR>/no/x.tar: no directory <DIR>/no"),
    "archive only, bad out of plugins": (["bundle", "--oci-archive", "<IMAGE>", "nope"],
                                         "unknown plugin(s) nope; available: "),
    "misnamed tarball": (["bundle", "--from-tarball", "<GOOD>", "--from-tarball", "<MISNAMED>",
                         "--oci-archive", "<IMAGE>"], f"bundle <MISNAMED>: named for linux/{OTHER} "
                        f"but built for linux/{HOST}"),
    "same tarball twice": (["bundle", "--from-tarball", "<GOOD>", "--from-tarball", "<GOOD>",
                            "--oci-archive", "<IMAGE>"],
                           f"two bundles for linux/{HOST}: <GOOD> and <GOOD>"),
    "other arch, no sysroot": (["bundle", "--from-tarball", "<GOOD_OTHER>", "--oci-archive",
                                "<IMAGE>"], f"no busybox and system libraries for linux/{OTHER} "
                               f"on this linux/{HOST} machine: give a sysroot (--sysroot "
                               f"{OTHER}=DIR, a root with busybox-static and glibc, e.g. "
                               f"debootstrap --arch={OTHER} --include=busybox-static)"),
    "sysroot of the wrong arch": (["bundle", "--from-tarball", "<GOOD_OTHER>", "--oci-archive",
                                   "<IMAGE>", "--sysroot", f"{OTHER}=<OTHER_ROOT>"],
                                  f"/bin/busybox (in <OTHER_ROOT>) is an {HOST} program and the bundle is for "
                                  f"linux/{OTHER}"),
    "sysroot without busybox": (["bundle", "--from-tarball", "<GOOD_OTHER>", "--oci-archive",
                                 "<IMAGE>", "--sysroot", f"{OTHER}=<DIR>/no-such-root"],
                                f"sysroot <DIR>/no-such-root for linux/{OTHER} is not a directory"),
    "sysroot for no bundle": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<IMAGE>",
                               "--sysroot", f"{OTHER}=<OTHER_ROOT>"],
                              f"a sysroot for linux/{OTHER}, and no bundle for linux/{OTHER}"),
    "sysroot spelling": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<IMAGE>",
                          "--sysroot", "<OTHER_ROOT>"], "--sysroot <OTHER_ROOT>: want ARCH=DIR"),
    "sysroot arch": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<IMAGE>",
                      "--sysroot", "sparc=<DIR>"], "--sysroot sparc=<DIR>: unknown architecture "
                     "'sparc'; want one of amd64, arm64"),
    "sysroot twice": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<IMAGE>",
                       "--sysroot", "arm64=<DIR>", "--sysroot", "arm64=<DIR>"],
                      "--sysroot arm64= is given twice"),
    "busybox missing": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<IMAGE>",
                         "--busybox", "<DIR>/nope"], "cannot read <DIR>/nope: no such file "
                        "(install Debian's busybox-static)"),
    "busybox not static": (["bundle", "--from-tarball", "<GOOD>", "--oci-archive", "<IMAGE>",
                            "--busybox", "<FILE>"], "<FILE> is not a static executable"),
}  # fmt: skip


@pytest.mark.parametrize("argv, message", CLI_ERRORS.values(), ids=CLI_ERRORS.keys())
def test_every_error_is_one_line(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = special_paths(tmp_path)

    def fill(text: str) -> str:
        for key in sorted(paths, key=len, reverse=True):
            text = text.replace(key, paths[key])
        return text

    code, out, err = run_cli([fill(a) for a in argv], capsys)
    assert (code, out) == (1, ""), err
    assert err.startswith("credprov: error: " + fill(message)), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not Path(paths["<IMAGE>"]).exists()


# -- --out is created, --oci-archive alone -------------------------------------------------


@pytest.fixture
def stand_in_freeze(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``build_bundle`` with a stand-in runtime instead of a frozen one."""
    runtime = stand_in_runtime(tmp_path / "freeze")
    monkeypatch.setattr(build, "_freeze", lambda plugins, workdir, arch: (runtime, None))


@pytest.mark.usefixtures("stand_in_freeze")
def test_out_dir_is_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from credprov.bundle.tarball import open_bundle

    out = tmp_path / "dist" / "nested"
    code, stdout, err = run_cli(["bundle", "--out", str(out), *NAMES], capsys)
    assert code == 0, err
    tarball = out / build.tarball_name()
    assert stdout.startswith(f"bundle: {tarball} (")
    assert sorted(p.name for p in out.iterdir()) == [tarball.name]
    with open_bundle(tarball) as bundle:
        assert bundle.plugins == NAMES


@needs_busybox
@pytest.mark.usefixtures("stand_in_freeze")
def test_oci_archive_alone_writes_only_the_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)
    image = tmp_path / "images" / "installer.tar"
    image.parent.mkdir()
    code, out, err = run_cli(["bundle", "--oci-archive", str(image), NAMES[0]], capsys)
    assert code == 0, err
    assert out.startswith("bundle: built (")
    assert f"image: {image} (localhost/credprov-plugins-installer:" in out
    assert sorted(p.name for p in image.parent.iterdir()) == ["installer.tar"]
    assert list(scratch.iterdir()) == [], "the tarball's temporary directory is removed"
    layer = layers_of(image)[HOST]
    assert layer["credprov-plugins/PLUGINS"] == f"{NAMES[0]}\n".encode()


# -- several architectures in one image ---------------------------------------------------


def read_archive(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def layers_of(archive: Path) -> dict[str, dict[str, bytes | tarfile.TarInfo]]:
    """arch → the image's one layer (name → contents for files, the member otherwise),
    following index.json → (image index →) manifests; checks every digest and size."""
    files = read_archive(archive)

    def blob(descriptor: dict[str, object]) -> bytes:
        digest = str(descriptor["digest"])
        data = files["blobs/sha256/" + digest.removeprefix("sha256:")]
        assert hashlib.sha256(data).hexdigest() == digest.removeprefix("sha256:")
        assert len(data) == descriptor["size"]
        return data

    (top,) = json.loads(files["index.json"])["manifests"]
    if top["mediaType"] == "application/vnd.oci.image.index.v1+json":
        manifests = json.loads(blob(top))["manifests"]
    else:
        manifests = [top]
    out: dict[str, dict[str, bytes | tarfile.TarInfo]] = {}
    for descriptor in manifests:
        manifest = json.loads(blob(descriptor))
        config = json.loads(blob(manifest["config"]))
        arch = descriptor["platform"]["architecture"]
        assert config["architecture"] == arch and descriptor["platform"]["os"] == "linux"
        (layer_descriptor,) = manifest["layers"]
        plain = gzip.decompress(blob(layer_descriptor))
        assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(plain).hexdigest()]
        entries: dict[str, bytes | tarfile.TarInfo] = {}
        with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
            for m in tar:
                fh = tar.extractfile(m) if m.isfile() else None
                entries[m.name] = fh.read() if fh is not None else m
        out[arch] = entries
    return out


@needs_busybox
def test_one_image_for_several_architectures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = make_tarball(tmp_path, HOST)
    other = make_tarball(tmp_path, OTHER)
    sysroot = fake_sysroot(tmp_path, OTHER)
    image = tmp_path / "multi.tar"
    argv = ["bundle", "--from-tarball", str(other), "--from-tarball", str(host),
            "--sysroot", f"{OTHER}={sysroot}", "--oci-archive", str(image),
            "--image-ref", "example.com/installer:1"]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    assert out == f"image: {image} (example.com/installer:1, linux/amd64, linux/arm64, " + (
        f"{image.stat().st_size / 1e6:.1f} MB)\n"
    )
    files = read_archive(image)
    (top,) = json.loads(files["index.json"])["manifests"]
    assert top["mediaType"] == "application/vnd.oci.image.index.v1+json"
    assert top["annotations"] == {
        "org.opencontainers.image.ref.name": "example.com/installer:1",
        "io.containerd.image.name": "example.com/installer:1",
    }
    index = json.loads(files["blobs/sha256/" + top["digest"][7:]])
    assert [m["platform"] for m in index["manifests"]] == [
        {"architecture": "amd64", "os": "linux"},
        {"architecture": "arm64", "os": "linux"},
    ]
    layers = layers_of(image)
    assert layers[HOST]["bin/busybox"] == Path("/bin/busybox").read_bytes()
    assert layers[OTHER]["bin/busybox"] == (sysroot / "bin" / "busybox").read_bytes()
    for layer in layers.values():
        assert layer["credprov-plugins/PLUGINS"] == "".join(f"{n}\n" for n in NAMES).encode()
    # Reproducible: the same inputs give the same bytes.
    again = tmp_path / "again.tar"
    assert main([*argv[:-3], str(again), *argv[-2:]]) == 0
    assert again.read_bytes() == image.read_bytes()


@needs_busybox
def test_a_single_architecture_image_is_named_directly(tmp_path: Path) -> None:
    """As before: index.json names the image manifest, with its platform."""
    from credprov.bundle.oci import write_oci_archive

    result = write_oci_archive(make_tarball(tmp_path), tmp_path / "one.tar", reference="x/y:1")
    (top,) = json.loads(read_archive(tmp_path / "one.tar")["index.json"])["manifests"]
    assert top["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert top["platform"] == {"architecture": HOST, "os": "linux"}
    assert top["digest"] == result.manifest_digest and result.platforms == (f"linux/{HOST}",)


# -- memory: layers are streamed ------------------------------------------------------------

MEMORY_CHILD = textwrap.dedent(
    """
    import resource, sys
    from credprov.bundle.oci import write_oci_archive

    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    limit = vm + int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    write_oci_archive(sys.argv[1], sys.argv[2], busybox="/bin/busybox")
    """
)


@needs_busybox
def test_a_big_bundle_is_written_in_bounded_memory(tmp_path: Path) -> None:
    """A bundle with 96 MiB of filler becomes an image with 48 MiB of address space to
    spare: layers are streamed through temporary files, never held whole (the old writer
    held the layer, its gzip and the bundle's members: several times the bundle)."""
    filler = 96 << 20
    tarball = make_tarball(tmp_path, filler=filler)
    image = tmp_path / "big.tar"
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(tarball), str(image), str(48 << 20)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert entries_in_layer(image)["credprov-plugins/runtime/filler"] == filler


def entries_in_layer(archive: Path) -> dict[str, int]:
    """name → size of the single-arch image's layer entries, read as a stream."""
    with tarfile.open(archive) as tar:
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
        manifest = json.loads(
            tar.extractfile("blobs/sha256/" + index["manifests"][0]["digest"][7:]).read()  # type: ignore[union-attr]
        )
        blob = tar.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"][7:])
        with tarfile.open(fileobj=blob, mode="r|gz") as layer:
            return {m.name: m.size for m in layer}


def test_the_tarball_is_not_written_through_a_planted_link(tmp_path: Path) -> None:
    """The old predictable temp name (``.NAME.tmpPID``) with a symlink planted under it."""
    from credprov.bundle.tarball import open_bundle

    make_tarball(tmp_path)
    bundle = tmp_path / f"bundle-{HOST}-default" / "out" / "credprov-plugins"
    target = tmp_path / "victim"
    target.write_text("keep")
    tarball = tmp_path / "t.tar.gz"
    (tmp_path / f".{tarball.name}.tmp{os.getpid()}").symlink_to(target)
    write_tarball(bundle, tarball)
    assert target.read_text() == "keep"
    with open_bundle(tarball) as checked:
        assert checked.plugins == NAMES


def test_readme_build_commands_have_credprov_on_path() -> None:
    """README's build block puts ``credprov`` on ``PATH`` before using it, and the line it
    gives does: after ``./scripts/setup.sh`` (this checkout's ``.venv``), activating it."""
    import shutil
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    readme = (repo / "README.md").read_text()
    block = readme.split("# On a build machine (this checkout)", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines()[1:] if ln.strip() and not ln.startswith("#")]
    activate, first = lines[0].split("#", 1)[0].strip(), lines[1]
    assert activate == "./scripts/setup.sh && . .venv/bin/activate"
    assert first.startswith("credprov bundle ")
    if not (repo / ".venv/bin/activate").exists() or shutil.which("bash") is None:
        return
    found = subprocess.run(
        ["bash", "-c", ". .venv/bin/activate && command -v credprov"],
        cwd=repo, capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )  # fmt: skip
    assert found.stdout.strip() == str(repo / ".venv/bin/credprov"), found.stderr
