"""Will this executable start on the node? ELF headers and ``#!`` lines, read from the root.

What ``execve`` needs before a plugin prints anything, and what goes wrong on real nodes:

* an ELF binary must be built for the node's machine (``e_machine``, class and byte order),
  and its program interpreter (``PT_INTERP``, e.g. ``/lib64/ld-linux-x86-64.so.2``) must
  exist in the node's root: a glibc binary on a musl or busybox node fails with "no such
  file or directory" although the file is there (Talos);
* a script's ``#!`` interpreter must exist in the root; ``#!/usr/bin/env python3`` needs
  ``env`` and then ``python3`` on ``PATH`` (Flatcar, Fedora CoreOS and Bottlerocket have no
  Python); a ``\\r`` at the end of the line (a file saved with CRLF) names an interpreter
  that never exists.

Only headers are read (bounded); nothing is executed. The ELF layout is read by credprov's one
ELF reader, :mod:`credprov.base.elf`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from credprov.base import elf
from credprov.base.arch import by_e_machine
from credprov.base.rootfs import NodeRoot

__all__ = [
    "DEFAULT_PATH",
    "ElfInfo",
    "Verdict",
    "check_executable",
    "elf_info",
    "node_machine",
]

#: ``PATH`` of a systemd service (and of the kubelet's plugin runs) when nothing sets one.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class ElfInfo:
    """What the ELF header of a plugin binary says about where it can run.

    ``machine`` is ``e_machine`` (62 is x86-64), ``bits`` 32 or 64, ``interpreter`` the
    ``PT_INTERP`` path a dynamic binary needs (None for a static one).
    """

    machine: int
    bits: int
    little_endian: bool
    interpreter: str | None

    @property
    def machine_name(self) -> str:
        """The machine in ``uname -m`` spelling (``x86_64``, ``aarch64``), or
        ``machine <number>`` for one the doctor does not know."""
        known = by_e_machine(self.machine)
        return known.name if known is not None else f"machine {self.machine}"


@dataclass(frozen=True)
class Verdict:
    """Whether a binary can start on the node: ``ok``, the one-line ``message`` of the
    finding and, when not ok, a ``hint`` saying what to do."""

    ok: bool
    message: str
    hint: str = ""


def elf_info(data: bytes) -> ElfInfo | None:
    """The machine, class and interpreter of an ELF file's first bytes; None if not ELF."""
    info = elf.parse(data)
    if info is None:
        return None
    return ElfInfo(info.machine, info.bits, info.little_endian, info.interpreter)


def node_machine(root: NodeRoot) -> str:
    """The node's ``uname -m``: this machine's for ``/``, else read from the root's shell."""
    if root.is_host:
        return os.uname().machine
    for probe in ("/bin/sh", "/usr/bin/env", "/bin/busybox", "/usr/bin/bash"):
        try:
            info = elf_info(root.read(probe, 4096, head=True))
        except OSError:
            continue
        known = by_e_machine(info.machine) if info is not None else None
        if known is not None:
            return known.machine
    return os.uname().machine


def _machine_matches(info: ElfInfo, machine: str) -> bool:
    known = by_e_machine(info.machine)
    return known is not None and machine in known.unames


def check_executable(
    root: NodeRoot, node_path: str, machine: str, path_dirs: str = DEFAULT_PATH, depth: int = 0
) -> Verdict:
    """Whether ``execve(node_path)`` would get as far as running the program on the node."""
    try:
        head = root.read(node_path, _HEAD_BYTES, head=True)
    except OSError as exc:
        return Verdict(False, f"cannot read {node_path}: {exc.strerror or exc}")
    info = elf_info(head)
    if info is not None:
        if not _machine_matches(info, machine):
            return Verdict(
                False,
                f"ELF {info.bits}-bit {info.machine_name} binary on a {machine} node "
                "(exec format error)",
                f"install the {machine} build of the plugin",
            )
        if info.interpreter is None:
            return Verdict(True, f"ELF {info.bits}-bit {info.machine_name}, statically linked")
        if not root.exists(info.interpreter):
            return Verdict(
                False,
                f"ELF {info.machine_name} binary needs the program interpreter "
                f"{info.interpreter}, which the node does not have (execve says 'no such "
                "file or directory')",
                "install a static build of the plugin, or one linked for the node's libc",
            )
        return Verdict(
            True, f"ELF {info.bits}-bit {info.machine_name}, interpreter {info.interpreter}"
        )
    if head.startswith(b"#!"):
        return _check_shebang(root, node_path, head, machine, path_dirs, depth)
    return Verdict(
        False,
        f"{node_path} is neither an ELF binary nor a '#!' script (exec format error)",
        "install the plugin's binary, not an archive or a wrapper meant for another OS",
    )


def _check_shebang(
    root: NodeRoot, node_path: str, head: bytes, machine: str, path_dirs: str, depth: int
) -> Verdict:
    line = head[2:].split(b"\n", 1)[0]
    if line.endswith(b"\r"):
        return Verdict(
            False,
            f"the '#!' line of {node_path} ends with a carriage return (CRLF line endings): "
            "the interpreter name includes '\\r' and never exists",
            "convert the script to LF line endings (dos2unix)",
        )
    text = line.decode("utf-8", "replace").strip()
    interpreter, _, arg = text.partition(" ")
    arg = arg.strip()
    if not interpreter:
        return Verdict(False, f"{node_path} has an empty '#!' line", "name an interpreter")
    if not root.is_executable_file(interpreter):
        return Verdict(
            False,
            f"script interpreter {interpreter} (from '#!{text}') does not exist on the node",
            "install the interpreter, or a self-contained build of the plugin",
        )
    if os.path.basename(interpreter) == "env" and arg:
        words = [w for w in arg.split() if not w.startswith("-")]
        if words:
            program = words[0]
            found = _which(root, program, path_dirs)
            if found is None:
                return Verdict(
                    False,
                    f"'#!{text}' needs {program} on PATH, and the node has none (PATH {path_dirs})",
                    f"install {program} on the node, or a self-contained build of the plugin "
                    "(credprov's bundle: README, 'Put it on your nodes')",
                )
            return Verdict(True, f"script run by {found} (via {interpreter})")
    if depth == 0:
        nested = check_executable(root, interpreter, machine, path_dirs, depth + 1)
        if not nested.ok:
            return Verdict(
                False, f"script interpreter {interpreter}: {nested.message}", nested.hint
            )
    return Verdict(True, f"script run by {interpreter}")


def _which(root: NodeRoot, program: str, path_dirs: str) -> str | None:
    if "/" in program:
        return program if root.is_executable_file(program) else None
    for directory in path_dirs.split(":"):
        if directory and root.is_executable_file(f"{directory}/{program}"):
            return f"{directory}/{program}"
    return None
