"""``credprov bundle``: the plugins for nodes without Python, and their installer image."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from typing import Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.errors import EXIT_OK


def add_parser(sub: Any) -> None:
    """Add ``bundle`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "bundle",
        help="build the plugins for nodes without Python (tarball, installer image)",
        description=(
            "Freeze PLUGIN... (default: all) with cx_Freeze on freeze-core's manylinux2014 "
            "CPython into one relocatable runtime for Linux (glibc >= 2.17) on this "
            "machine's architecture or each --arch, and write "
            "DIR/credprov-plugins-<version>-linux-<arch>.tar.gz (DIR is created); unpacked, "
            "credprov-plugins/install --bin-dir DIR puts the plugins into a kubelet bin dir. "
            "With --oci-archive, also write the installer image (FROM scratch, static "
            "busybox) as an OCI archive for `ctr images import` or `podman load` (without "
            "--out, only the image); --from-tarball makes the image from existing bundles "
            "without rebuilding: one per architecture gives one multi-architecture image, "
            "each other architecture's busybox and glibc taken from --sysroot ARCH=DIR. "
            '-o json prints {"bundles": [{"tarball" (null without --out), "size", '
            '"unpackedSize", "plugins", "glibc", "cached", "seconds"}], '
            '"image": {"archive", "reference", "platforms", "size"} or null}.'
        ),
    )
    p.add_argument("plugins", nargs="*", metavar="PLUGIN", help="plugins to bundle (all)")
    opts.OUT_DIR.add(p, note="the tarball")
    p.add_argument(
        "--arch",
        metavar="ARCH[,ARCH]",
        help="build for ARCH (amd64, arm64; default: this machine's); either is frozen here "
        "without emulation; another architecture's image (--oci-archive) takes its busybox "
        "and glibc from a cached Debian root made as root under qemu-user-static; several "
        "give one multi-architecture image with --oci-archive",
    )
    p.add_argument("--oci-archive", metavar="FILE", help="write the installer image")
    p.add_argument(
        "--from-tarball",
        metavar="FILE",
        action="append",
        default=[],
        help="make the image from this bundle (no build); repeat for one per architecture",
    )
    p.add_argument(
        "--busybox",
        metavar="PATH",
        default="/bin/busybox",
        help="static busybox for this machine's architecture (Debian busybox-static: /bin/busybox)",
    )
    p.add_argument(
        "--sysroot",
        metavar="ARCH=DIR",
        action="append",
        default=[],
        help="a root directory of ARCH (e.g. arm64) with /bin/busybox (busybox-static) and "
        "glibc, for that architecture's image (debootstrap --arch=ARCH "
        "--include=busybox-static)",
    )
    p.add_argument("--image-ref", metavar="REF", help="the image's name (default "
                   "localhost/credprov-plugins-installer:<version>)")  # fmt: skip
    p.add_argument("--keep-dir", action="store_true", help="also leave DIR/credprov-plugins/")
    opts.add_common(p)
    p.set_defaults(run=run)


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _sysroots(specs: list[str]) -> dict[str, str]:
    """``--sysroot ARCH=DIR`` options as ``{arch: dir}``."""
    from credprov.bundle.layout import ARCHES

    roots: dict[str, str] = {}
    for spec in specs:
        arch, sep, directory = spec.partition("=")
        if not sep or not directory:
            raise CLIError(f"--sysroot {spec}: want ARCH=DIR (e.g. arm64=/srv/arm64-root)")
        if arch not in ARCHES:
            raise CLIError(f"--sysroot {spec}: unknown architecture {arch!r}; want one of "
                           f"{', '.join(sorted(ARCHES))}")  # fmt: skip
        if arch in roots:
            raise CLIError(f"--sysroot {arch}= is given twice")
        roots[arch] = directory
    return roots


def _check_usage(args: argparse.Namespace) -> None:
    if args.from_tarball and (args.out or args.plugins):
        raise CLIError("--from-tarball makes only the image: drop --out and PLUGIN")
    if args.from_tarball and not args.oci_archive:
        raise CLIError("--from-tarball needs --oci-archive")
    if not args.from_tarball and not args.out and not args.oci_archive:
        raise CLIError("--out DIR is required (where the tarball goes), or --oci-archive FILE")
    if args.keep_dir and not args.out:
        raise CLIError("--keep-dir needs --out DIR")
    if args.sysroot and not args.oci_archive:
        raise CLIError("--sysroot is for the image: add --oci-archive FILE")
    if args.arch and args.from_tarball:
        raise CLIError("--arch builds bundles; --from-tarball uses built ones: give one")


def _arches(spec: str | None) -> list[str]:
    """``--arch`` as a list without repeats (this machine's when not given)."""
    from credprov.bundle.cross import check_arch
    from credprov.bundle.layout import go_arch

    if not spec:
        return [go_arch()]
    arches: list[str] = []
    for arch in spec.split(","):
        arch = check_arch(arch.strip())
        if arch not in arches:
            arches.append(arch)
    return arches


def run(args: argparse.Namespace) -> int:
    """Build the bundles and/or the installer image ``args`` ask for. A
    :class:`~credprov.bundle.layout.BundleError` reaches the one error handler."""
    _check_usage(args)
    sysroots = _sysroots(args.sysroot)
    document: dict[str, Any] = {"bundles": [], "image": None}
    with contextlib.ExitStack() as stack:
        if args.from_tarball:
            tarballs = list(args.from_tarball)
        else:
            # Without --out the tarball is only a step towards the image.
            out = args.out or stack.enter_context(_scratch_dir())
            tarballs = _build(args, out, sysroots, document)
        if args.oci_archive:
            document["image"] = _image(args, tarballs, sysroots)
    if args.output == "json":
        opts.print_json(document)
    return EXIT_OK


def _build(
    args: argparse.Namespace, out: str, sysroots: dict[str, str], document: dict[str, Any]
) -> list[Any]:
    """Build one bundle per ``--arch`` into ``out``; their tarballs. Each is reported as it
    is done (a line, or an entry of ``document["bundles"]`` with ``-o json``)."""
    from credprov.bundle.build import build_bundle
    from credprov.bundle.layout import go_arch

    arches = _arches(args.arch)
    if args.keep_dir and arches != [go_arch()]:
        raise CLIError("--keep-dir is for this machine's architecture only")
    tarballs = []
    for arch in arches:
        if arch == go_arch():
            result = build_bundle(out, args.plugins, keep_dir=args.keep_dir)
        else:
            from credprov.bundle.cross import build_for_arch, build_root

            if args.oci_archive:  # that architecture's busybox and glibc, refused first
                sysroots.setdefault(arch, str(build_root(arch)))
            result = build_for_arch(out, arch, args.plugins)
        tarballs.append(result.tarball)
        document["bundles"].append(
            {
                "tarball": str(result.tarball) if args.out else None,
                "size": result.size,
                "unpackedSize": result.unpacked_size,
                "plugins": list(result.plugins),
                "glibc": result.glibc,
                "cached": result.cached,
                "seconds": round(result.seconds, 3),
            }
        )
        if args.output == "text":
            how = (
                "unchanged sources: copied from the cache"
                if result.cached
                else f"built in {result.seconds:.1f} s"
            )
            print(
                f"bundle: {result.tarball if args.out else 'built'} "
                f"({_mb(result.size)} gzipped, {_mb(result.unpacked_size)} unpacked; "
                f"{len(result.plugins)} plugins; needs glibc >= {result.glibc}; {how})"
            )
    return tarballs


def _image(args: argparse.Namespace, tarballs: list[Any], sysroots: dict[str, str]) -> Any:
    """Write the installer image; its ``-o json`` object (the text line is printed)."""
    from credprov.bundle.oci import write_oci_archive

    image = write_oci_archive(
        tarballs,
        args.oci_archive,
        busybox=args.busybox,
        sysroots=sysroots,
        reference=args.image_ref,
    )
    if args.output == "text":
        print(
            f"image: {image.archive} ({image.reference}, {', '.join(image.platforms)}, "
            f"{_mb(image.size)})"
        )
    return {
        "archive": str(image.archive),
        "reference": image.reference,
        "platforms": list(image.platforms),
        "size": image.size,
    }


@contextlib.contextmanager
def _scratch_dir() -> Iterator[str]:
    try:
        scratch = tempfile.TemporaryDirectory(prefix="credprov-bundle-")
    except OSError as exc:
        raise CLIError(f"cannot make a temporary directory: {exc.strerror or exc}") from None
    with scratch as path:
        yield path
