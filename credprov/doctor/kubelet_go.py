"""``kubelet.go``: the Go the node's kubelet was built with, read from its binary, and what
credprov follows because of it.

What the kubelet accepts in ``matchImages``, image names and docker config keys is Go's
``url.Parse``, and that depends on the Go release that built it and on its ``GODEBUG``
settings (:mod:`credprov._go.godebug`): the binary's ``DefaultGODEBUG`` (from its
``go.mod`` and ``//go:debug`` lines), then the running process's ``GODEBUG`` environment
variable, then the operator's ``--go-debug``. The binary is the one discovery found (the
running process's ``argv[0]``, else the systemd unit's ``ExecStart=``), read inside the node
root with bounded reads (:mod:`credprov._go.buildinfo`) and never run; of the process's
environment only ``GODEBUG`` is looked at (the rest may hold secrets).

Unless the operator chose a Go behaviour (``--go-version``, ``--kubelet-version``,
``--kubelet-binary``, ``$CREDPROV_GO_VERSION``), the doctor follows the binary for every
later check; when one was chosen and the binary says otherwise, the finding warns.
"""

from __future__ import annotations

import os

from credprov._go.buildinfo import BuildInfo, BuildInfoError, read_build_info_fd
from credprov._go.godebug import SETTINGS, format_godebug, parse_godebug
from credprov._go.goenv import release_of_binary
from credprov._go.version import GoRelease, GoVersionError, current_go, use_go
from credprov.base.rootfs import describe_error
from credprov.doctor.context import Context
from credprov.doctor.report import Finding, Status

__all__ = ["CHECK_ID", "check_kubelet_go"]

CHECK_ID = "kubelet.go"

_ENVIRON_BYTES = 256 * 1024


def check_kubelet_go(ctx: Context) -> list[Finding]:
    """One finding: PASS with the binary's Go and the ``GODEBUG`` settings that change what
    it accepts (and credprov then follows it); WARN when the binary cannot be read or is
    not a Go binary credprov can place, or contradicts the operator's choice; SKIP when the
    kubelet's binary is not known or not in the root."""
    chosen = ctx.options.go_choice
    path = _binary_path(ctx)
    if path is None:
        return [
            Finding(
                CHECK_ID,
                Status.SKIP,
                "",
                f"the kubelet's binary is not known; credprov follows Go {current_go()}",
            )
        ]
    try:
        info = _read(ctx, path)
    except FileNotFoundError:
        # Nothing to judge, and nothing wrong with credentials: a SKIP, never a WARN that
        # every node without that file (a root laid out for a check) would raise.
        return [
            Finding(
                CHECK_ID,
                Status.SKIP,
                "",
                f"the kubelet's binary {path} is not in the node's root; credprov follows "
                f"Go {current_go()}" + (f" ({chosen})" if chosen else " (the default)"),
                "" if chosen else "give --kubelet-binary, --kubelet-version or --go-version",
            )
        ]
    except OSError as exc:
        return [_cannot(path, describe_error(exc), chosen)]
    except BuildInfoError as exc:
        return [_cannot(path, str(exc), chosen)]
    process = _process_godebug(ctx)
    operator = ctx.options.go_debug or ""
    runtime = {**process, **parse_godebug(operator, strict=False)}
    try:
        release = release_of_binary(info, format_godebug(_normalised(runtime)))
    except GoVersionError as exc:
        return [_cannot(path, str(exc), chosen)]
    built = f"{path}: built with {info.go_version} ({info.machine or 'unknown machine'})"
    if info.main[0]:
        built += f", module {info.main[0]}"
    said = f"{built}; {_settings_text(release, info, process, operator)}"
    if chosen is None:
        use_go(release)
        return [Finding(CHECK_ID, Status.PASS, "", f"{said}; credprov follows Go {release}")]
    current = current_go()
    if current == release:
        return [
            Finding(CHECK_ID, Status.PASS, "", f"{said}; credprov follows Go {current} ({chosen})")
        ]
    return [
        Finding(
            CHECK_ID,
            Status.WARN,
            "",
            f"{said}, but credprov follows Go {current} ({chosen}): matchImages, image names "
            "and docker config keys may be judged otherwise than this kubelet judges them",
            f"drop {chosen} to follow the kubelet's binary",
        )
    ]


def _binary_path(ctx: Context) -> str | None:
    kubelet = ctx.setup.kubelet
    if kubelet is None:
        return None
    path = str(kubelet.value).split(" ", 1)[0]
    return path if path.startswith("/") else None


def _read(ctx: Context, path: str) -> BuildInfo:
    fd = ctx.root.open_regular(path)
    try:
        return read_build_info_fd(fd)
    finally:
        os.close(fd)


def _cannot(path: str, why: str, chosen: str | None) -> Finding:
    follows = f"Go {current_go()}" + (f" ({chosen})" if chosen else " (the default)")
    return Finding(
        CHECK_ID,
        Status.WARN,
        "",
        f"cannot read the kubelet's Go build from {path} ({why}); credprov follows {follows}",
        "" if chosen else "give --kubelet-binary, --kubelet-version or --go-version",
    )


def _process_godebug(ctx: Context) -> dict[str, str]:
    """``GODEBUG`` of the running kubelet's environment (nothing else of it is kept)."""
    pid = ctx.setup.pid
    if pid is None:
        return {}
    try:
        raw = ctx.root.read(f"/proc/{pid}/environ", _ENVIRON_BYTES, head=True)
    except OSError:
        return {}
    value = ""
    for entry in raw.split(b"\0"):
        if entry.startswith(b"GODEBUG="):
            value = entry[len(b"GODEBUG=") :].decode("utf-8", "replace")
    return parse_godebug(value, strict=False)


def _normalised(settings: dict[str, str]) -> dict[str, str]:
    """Go reads a value it does not know as "not the old one": say so with a value credprov
    takes."""
    out = {}
    for name, value in settings.items():
        known = SETTINGS.get(name)
        out[name] = value if known is None or value in known.values else known.values[-1]
    return out


def _settings_text(
    release: GoRelease, info: BuildInfo, process: dict[str, str], operator: str
) -> str:
    if not release.godebug:
        return "no GODEBUG setting changes what it accepts"
    parts = []
    operator_settings = parse_godebug(operator, strict=False)
    for name, value in release.godebug:
        if name in operator_settings:
            origin = "--go-debug"
        elif name in process:
            origin = "the process's GODEBUG"
        else:
            origin = "its DefaultGODEBUG"
        parts.append(f"GODEBUG {name}={value} (from {origin}; {SETTINGS[name].effect})")
    return "; ".join(parts)
