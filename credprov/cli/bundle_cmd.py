"""``credprov bundle``: the plugins for nodes without Python, and their installer image."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from credprov.cli.main import CLIError, add_common


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bundle",
        help="build the plugins for nodes without Python (tarball, installer image)",
        description=(
            "Freeze PLUGIN... (default: all) with PyInstaller into one relocatable runtime "
            "for this machine's OS and architecture and write "
            "DIR/credprov-plugins-<version>-linux-<arch>.tar.gz; unpacked, "
            "credprov-plugins/install --bin-dir DIR puts the plugins into a kubelet bin dir. "
            "With --oci-archive, also write the installer image (FROM scratch, static "
            "busybox) as an OCI archive for `ctr images import` or `podman load`; "
            "--from-tarball makes the image from an existing bundle without rebuilding."
        ),
    )
    p.add_argument("plugins", nargs="*", metavar="PLUGIN", help="plugins to bundle (all)")
    p.add_argument("--out", metavar="DIR", help="directory for the tarball")
    p.add_argument(
        "--arch",
        metavar="ARCH",
        help="build for ARCH (amd64, arm64; default: this machine's); another architecture "
        "is built as root under qemu-user-static in a cached Debian root (credprov.bundle.cross)",
    )
    p.add_argument("--oci-archive", metavar="FILE", help="also write the installer image")
    p.add_argument(
        "--from-tarball", metavar="FILE", help="make the image from this bundle (no build)"
    )
    p.add_argument(
        "--busybox",
        metavar="PATH",
        default="/bin/busybox",
        help="static busybox for the image (Debian busybox-static: /bin/busybox)",
    )
    p.add_argument("--image-ref", metavar="REF", help="the image's name (default "
                   "localhost/credprov-plugins-installer:<version>)")  # fmt: skip
    p.add_argument("--keep-dir", action="store_true", help="also leave DIR/credprov-plugins/")
    add_common(p)
    p.set_defaults(run=run)


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def run(args: argparse.Namespace) -> int:
    from credprov.bundle.build import BundleError, build_bundle, go_arch

    if args.from_tarball and (args.out or args.plugins):
        raise CLIError("--from-tarball makes only the image: drop --out and PLUGIN")
    if args.from_tarball and not args.oci_archive:
        raise CLIError("--from-tarball needs --oci-archive")
    if not args.from_tarball and not args.out:
        raise CLIError("--out DIR is required (where the tarball goes)")
    try:
        if args.from_tarball:
            tarball = Path(args.from_tarball)
            if not tarball.is_file():
                raise CLIError(f"bundle {tarball} does not exist")
        elif args.arch and args.arch != go_arch():
            from credprov.bundle.cross import build_for_arch, check_arch

            if check_arch(args.arch) and (args.oci_archive or args.keep_dir):
                raise CLIError("--arch of another architecture writes only the tarball")
            result = build_for_arch(args.out, args.arch, args.plugins)
        else:
            result = build_bundle(args.out, args.plugins, keep_dir=args.keep_dir)
        if not args.from_tarball:
            tarball = result.tarball
            print(
                f"bundle: {tarball} ({_mb(result.size)} gzipped, {_mb(result.unpacked_size)} "
                f"unpacked; {len(result.plugins)} plugins; needs glibc >= {result.glibc}; "
                f"built in {result.seconds:.1f} s)"
            )
        if args.oci_archive:
            from credprov.bundle.oci import write_oci_archive

            image = write_oci_archive(
                tarball, args.oci_archive, busybox=args.busybox, reference=args.image_ref
            )
            print(f"image: {image.archive} ({image.reference}, {_mb(image.size)})")
    except BundleError as exc:
        raise CLIError(str(exc)) from None
    return 0
