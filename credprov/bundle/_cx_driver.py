"""The freezer's own process: cx_Freeze over a target's wheels, for either architecture.

Run by :func:`credprov.bundle.freeze.freeze` as ``python -I -m credprov.bundle._cx_driver
CONFIG.json``; never imported by credprov itself (cx_Freeze is a build-time dependency).

cx_Freeze freezes with the interpreter of `freeze-core`'s wheel (a CPython linked statically
into its ``console`` base, with the standard library's extension modules and OpenSSL built
for manylinux2014): the build machine's CPython only *reads* modules (it compiles the pure
Python ones to bytecode, which does not depend on the architecture) and copies files. So one
architecture can be frozen on another, once cx_Freeze looks at the target's files where it
would look at its own:

* ``freeze_core`` is imported from the target's site directory (its base executable, its
  ``lib/`` and ``share/`` are the target's);
* extension modules are found by the target's suffix (``.cpython-311-aarch64-linux-gnu.so``):
  cx_Freeze's module finder asks ``importlib``'s ``PathFinder``, whose file finders know only
  this interpreter's suffixes, so a ``PathFinder`` whose finders use the target's is put in
  its place, along with the target's ``SOABI`` and ``EXT_SUFFIX``;
* shared-library dependencies are read with ``patchelf`` (``CX_FREEZE_BIND=patchelf``, set by
  the caller before cx_Freeze is imported), which reads any architecture's ELF files, rather
  than with ``ldd``, which runs them.

For the native architecture only the first point applies. One more change for every build:
cx_Freeze's ``ssl`` hook copies the build machine's CA file into the bundle and patches
``ssl.py`` to export ``SSL_CERT_FILE`` pointing at it (inherited by every program a plugin
starts); a plugin on a node trusts the node's store instead, as a Go plugin does, so the hook
is turned off.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    PathFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from typing import Any


def _target_path_finder(suffixes: list[str]) -> type[PathFinder]:
    loaders: list[tuple[Any, list[str]]] = [
        (ExtensionFileLoader, suffixes),
        (SourceFileLoader, SOURCE_SUFFIXES),
        (SourcelessFileLoader, BYTECODE_SUFFIXES),
    ]
    finders: dict[str, FileFinder] = {}

    class TargetPathFinder(PathFinder):
        """``PathFinder`` whose file finders know the target's extension suffixes."""

        @classmethod
        def _path_importer_cache(cls, path: str) -> FileFinder:
            path = path or os.getcwd()
            finder = finders.get(path)
            if finder is None:
                finder = finders[path] = FileFinder(path, *loaders)
            return finder

        @classmethod
        def invalidate_caches(cls) -> None:
            for finder in finders.values():
                finder.invalidate_caches()

    return TargetPathFinder


def _retarget(machine: str) -> None:
    """Point cx_Freeze at ``machine``'s extension modules (see the module docstring)."""
    import cx_Freeze._compat
    import cx_Freeze.executable
    import cx_Freeze.finder
    import cx_Freeze.module

    soabi = f"cpython-{sys.version_info[0]}{sys.version_info[1]}-{machine}-linux-gnu"
    if soabi == sysconfig.get_config_var("SOABI"):
        return
    suffixes = [f".{soabi}.so", ".abi3.so", ".so"]
    config = sysconfig.get_config_vars()
    config["SOABI"], config["EXT_SUFFIX"] = soabi, suffixes[0]
    for module in (cx_Freeze._compat, cx_Freeze.finder, cx_Freeze.executable):
        module.SOABI = soabi
    cx_Freeze._compat.EXT_SUFFIX = suffixes[0]
    cx_Freeze.finder.EXTENSION_SUFFIXES = suffixes
    cx_Freeze.finder.ALL_SUFFIXES = [*SOURCE_SUFFIXES, *BYTECODE_SUFFIXES, *suffixes]
    cx_Freeze.module.EXTENSION_SUFFIXES = suffixes
    cx_Freeze.finder.PathFinder = _target_path_finder(suffixes)


def main(config_path: str) -> int:
    """Freeze as ``config_path`` (JSON written by :mod:`credprov.bundle.freeze`) says."""
    with open(config_path, encoding="utf-8") as fh:
        config = json.load(fh)
    sys.path.insert(0, config["site"])  # the target's freeze_core, before cx_Freeze loads it
    import cx_Freeze.hooks._ssl_
    from cx_Freeze import Executable, Freezer

    cx_Freeze.hooks._ssl_.Hook.ssl = lambda self, finder, module: None
    _retarget(config["machine"])
    freezer = Freezer(
        [
            Executable(
                config["script"],
                base="console",
                init_script=config["init_script"],
                target_name=config["name"],
            )
        ],
        path=[*config["sources"], config["site"], sysconfig.get_paths()["stdlib"]],
        target_dir=config["target"],
        packages=config["packages"],
        includes=config["includes"],
        excludes=config["excludes"],
        bin_excludes=config["bin_excludes"],
        zip_include_packages=config["zip_include"],
        zip_exclude_packages=config["zip_exclude"],
        replace_paths=[("*", "")],
        compress=False,  # unpacked afterwards (credprov.bundle.freeze.unpack_archive)
        zip_filename="library.zip",
        silent=True,
    )
    freezer.freeze()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
