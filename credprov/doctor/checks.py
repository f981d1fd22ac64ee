"""The node-side checks: flags, the provider config, the bin dir and every plugin.

Each function takes the :class:`~credprov.doctor.context.Context` and returns findings.
They call the library rather than re-implementing it: the config is read and validated by
:func:`credprov.credentialprovider.plugin.config.load_config` (the kubelet's text), linted by
:func:`credprov.credentialprovider.lint.lint_config`, matching is :func:`credprov.imageauth.matching.explain_match`, and
a plugin's answer is judged by :func:`credprov.credentialprovider.plugin.conformance.run_conformance`.
"""

from __future__ import annotations

import os
import re
import stat

from credprov._go.durations import format_duration
from credprov.api import internal
from credprov.credentialprovider.plugin.conformance import (
    SLOW_FRACTION,
    Check,
    run_conformance,
)
from credprov.credentialprovider.plugin.conformance import Report as ConformanceReport
from credprov.doctor.binaries import Verdict, check_executable, elf_info
from credprov.doctor.context import SA_TOKEN_GATE, Context
from credprov.doctor.discovery import BIN_DIR, CONFIG, Value
from credprov.doctor.hints import config_check_command, plugin_check_command
from credprov.doctor.plugin_runs import PluginRuns, refusal_text
from credprov.doctor.report import Finding, Status
from credprov.doctor.samples import HOST_RULES, derive_sample, plugin_kind
from credprov.doctor.sandbox import SandboxError
from credprov.imageauth.images import InvalidImageError, parse_image_name
from credprov.imageauth.matching import explain_match

__all__ = [
    "check_bin_dir",
    "check_feature_gates",
    "check_flags",
    "check_image_match",
    "check_lint",
    "check_plugins",
    "check_provider_config",
    "sample_image",
]

_FLAGS = "--image-credential-provider-config / --image-credential-provider-bin-dir"


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


# -- kubelet.flags -------------------------------------------------------------------------------


def no_kubelet(ctx: Context) -> bool:
    """Nothing to check: no kubelet was found and the operator named no setup."""
    operator = ("--config", "--bin-dir", "--kubelet-config")
    named = [v for v in ctx.setup.values.values() if v.source in operator]
    return ctx.setup.kubelet is None and not named


def check_flags(ctx: Context) -> list[Finding]:
    """``kubelet.flags``: both provider flags set (or neither), from where, and for k3s/RKE2
    whether the providers are enabled at all.

    Returns:
        One finding: FAIL without a kubelet, with one flag of the two, or (k3s/RKE2) with
        one provider path missing; WARN with neither flag, or both k3s/RKE2 paths missing
        (then :attr:`Context.providers_off` is set for the later checks); PASS otherwise.
    """
    setup = ctx.setup
    config, bin_dir = setup.values.get(CONFIG), setup.values.get(BIN_DIR)
    if no_kubelet(ctx):
        return [_no_kubelet_finding(ctx)]
    found_by = setup.kubelet.source if setup.kubelet else "no running kubelet or systemd unit"
    if config is None and bin_dir is None:
        return [
            Finding(
                "kubelet.flags",
                Status.WARN,
                "",
                f"no credential provider flags found ({found_by}): the kubelet runs no "
                "plugin and pulls with pull secrets and the node's docker config only",
                f"set {_FLAGS}, or run with --config and --bin-dir to check a setup",
            )
        ]
    if config is None or bin_dir is None:
        return [_one_flag_missing(ctx, config, bin_dir)]
    if setup.flavor in ("k3s", "rke2"):
        off = _rancher_providers_off(ctx, config, bin_dir)
        if off is not None:
            return [off]
    notes = ""
    if setup.config_file_provider_fields:
        notes = (
            " (the KubeletConfiguration sets "
            + ", ".join(setup.config_file_provider_fields)
            + ": upstream kubelets read only the flags)"
        )
    return [
        Finding(
            "kubelet.flags",
            Status.PASS,
            "",
            f"config {config.value} ({config.source}); bin dir {bin_dir.value} "
            f"({bin_dir.source}){notes}",
        )
    ]


def _no_kubelet_finding(ctx: Context) -> Finding:
    """``kubelet.flags`` FAIL: nothing on the node (or under the root) runs a kubelet."""
    return Finding(
        "kubelet.flags",
        Status.FAIL,
        "",
        "no kubelet found on this node: no running kubelet, k3s or rke2 process and "
        "no kubelet.service, k3s or rke2 unit"
        + ("" if ctx.root.is_host else f" under {ctx.root.root}"),
        "run the doctor on a node (or --node-root at a node's filesystem), or name the "
        "setup with --config, --bin-dir and --kubelet-config",
    )


def _one_flag_missing(ctx: Context, config: Value | None, bin_dir: Value | None) -> Finding:
    """``kubelet.flags`` FAIL: one provider flag of the two is set."""
    have, missing = (
        (config, "--image-credential-provider-bin-dir")
        if bin_dir is None
        else (bin_dir, "--image-credential-provider-config")
    )
    assert have is not None
    flavor = ctx.setup.flavor
    if flavor in ("k3s", "rke2"):
        consequence = f"{flavor} enables the providers only when both exist"
    else:
        consequence = "the kubelet exits at start (it registers plugins when either is set)"
    return Finding(
        "kubelet.flags",
        Status.FAIL,
        "",
        f"{have.value} is set ({have.source}) but {missing} is not: {consequence}",
        f"set both {_FLAGS} in the same place",
    )


def _rancher_providers_off(ctx: Context, config: Value, bin_dir: Value) -> Finding | None:
    """k3s/RKE2 enable the providers only when both paths exist: the finding when one is
    missing (and :attr:`Context.providers_off` set), None when both exist."""
    flavor = ctx.setup.flavor
    missing_paths = [v.value for v in (config, bin_dir) if not ctx.root.exists(str(v.value))]
    if not missing_paths:
        return None
    ctx.providers_off = (
        f"{flavor} runs no credential provider ({', '.join(missing_paths)} does not exist)"
    )
    return Finding(
        "kubelet.flags",
        Status.WARN if len(missing_paths) == 2 else Status.FAIL,
        "",
        f"credential providers are not enabled: {flavor} enables them only "
        f"when both the bin dir and the config exist, and "
        f"{', '.join(missing_paths)} does not",
        "to use credential providers, create the config and the bin dir (or point "
        "the agent flags at them)",
    )


# -- provider-config.valid / .lint -----------------------------------------------------------------


def check_provider_config(ctx: Context) -> list[Finding]:
    """``provider-config.valid``: the provider config loaded as the kubelet loads it, every
    file read inside the node root.

    On success the config is kept in :attr:`Context.config` for the later checks and every
    provider's ``env`` values are registered as secrets.

    Returns:
        One finding: SKIP when the providers are off or no config is set, FAIL with the
        kubelet's own error text, PASS with the providers and the config's hash.
    """
    from credprov.credentialprovider.plugin.config import ConfigError, load_config

    path = ctx.setup.get(CONFIG)
    if ctx.providers_off:
        return [_skip("provider-config.valid", ctx.providers_off)]
    if path is None:
        return [_skip("provider-config.valid", "no provider config is set")]
    try:
        # Every file (a config directory's entries too) is read inside the root.
        config, digest = load_config(
            str(path), {SA_TOKEN_GATE: ctx.gate(SA_TOKEN_GATE)}, files=ctx.root
        )
    except ConfigError as exc:
        message = _one_line(str(exc))
        return [
            Finding(
                "provider-config.valid",
                Status.FAIL,
                str(path),
                message,
                "the kubelet exits at start with this config (Failed to register CRI auth "
                f"plugins); fix it and check it with: {config_check_command(str(path))}",
            )
        ]
    ctx.config = config
    for provider in config.providers:
        ctx.redact_env(provider)
    names = ", ".join(p.name for p in config.providers)
    return [
        Finding(
            "provider-config.valid",
            Status.PASS,
            str(path),
            f"{len(config.providers)} provider(s) ({names}), hash {digest}",
        )
    ]


def check_lint(ctx: Context) -> list[Finding]:
    """``provider-config.lint``: entries the kubelet accepts but that do not do what they
    say (:func:`credprov.credentialprovider.lint.lint_config`).

    Returns:
        SKIP without a valid config, one WARN per lint warning (subject: the provider), or
        one PASS.
    """
    from credprov.credentialprovider.lint import lint_config

    if ctx.config is None:
        return [_skip("provider-config.lint", ctx.providers_off or "no valid provider config")]
    warnings = lint_config(ctx.config)
    if not warnings:
        return [Finding("provider-config.lint", Status.PASS, "", "no findings")]
    return [
        Finding(
            "provider-config.lint",
            Status.WARN,
            _provider_of(w),
            w,
            "fix the entry: the kubelet accepts it but it does not do what it says",
        )
        for w in warnings
    ]


def _provider_of(warning: str) -> str:
    if warning.startswith("provider '"):
        return warning.split("'", 2)[1]
    return ""


# -- bin-dir.exec ------------------------------------------------------------------------------


def check_bin_dir(ctx: Context) -> list[Finding]:
    """``bin-dir.exec``: the plugin directory exists, is a directory and is not on a
    ``noexec`` mount (from the kubelet's, this machine's or the root's mount table).

    Returns:
        One finding: SKIP when no bin dir is set or no mount table can be read, FAIL when
        the kubelet could run no plugin from it, PASS with the mount point.
    """
    bin_dir = ctx.setup.get(BIN_DIR)
    if ctx.providers_off:
        return [_skip("bin-dir.exec", ctx.providers_off)]
    if bin_dir is None:
        return [_skip("bin-dir.exec", "no bin dir is set")]
    subject = str(bin_dir)
    st = ctx.root.stat(subject)
    if st is None:
        return [
            Finding(
                "bin-dir.exec",
                Status.FAIL,
                subject,
                f"the bin dir does not exist: the kubelet exits at start (plugin binary "
                f"directory {subject} did not exist)",
                "create it and install the plugins, or fix --image-credential-provider-bin-dir",
            )
        ]
    if not stat.S_ISDIR(st.st_mode):
        return [
            Finding(
                "bin-dir.exec",
                Status.FAIL,
                subject,
                "the bin dir is not a directory: no plugin can be found in it",
                "point --image-credential-provider-bin-dir at the plugins' directory",
            )
        ]
    try:
        resolved = ctx.root.resolve(subject)
    except OSError:
        resolved = subject
    mount = _mount_of(ctx, resolved)
    if mount is None:
        return [
            Finding(
                "bin-dir.exec",
                Status.SKIP,
                subject,
                "a directory; noexec was not checked: no mount table (/proc) in the root",
            )
        ]
    point, options, table = mount
    if "noexec" in options:
        ctx.bin_dir_noexec = f"the bin dir is on {point}, mounted noexec (see bin-dir.exec)"
        return [
            Finding(
                "bin-dir.exec",
                Status.FAIL,
                subject,
                f"the bin dir is on {point}, mounted noexec ({table}): every plugin fails "
                "with 'permission denied'",
                "move the plugins to an exec mount (e.g. under /var/lib or /opt) and point "
                "--image-credential-provider-bin-dir there",
            )
        ]
    return [Finding("bin-dir.exec", Status.PASS, subject, f"a directory on {point} (exec)")]


def _mount_of(ctx: Context, node_path: str) -> tuple[str, set[str], str] | None:
    """(mount point as the node names it, options, table) of the mount holding
    ``node_path``.

    On this machine: the kubelet's own mount table when it runs, else the doctor's. Under
    ``--node-root`` at a live node (a ``proc`` mounted at the root's ``/proc``): the mounts
    this doctor reads the node through, from its own table at the root's path, with that
    path stripped (a table read inside the root names another namespace's view: a host's
    ``/proc/1`` seen from a container, or this machine's own with the root's prefix). Else,
    for an image, a ``/proc/mounts`` file of the root.
    """
    if not ctx.root.is_host:
        through = _node_mounts_seen_here(ctx.root.root, node_path)
        if through is not None:
            return through
        st = ctx.root.lstat("/proc/mounts")
        if st is None or not stat.S_ISREG(st.st_mode):
            return None
        try:
            text = ctx.root.read_text("/proc/mounts", 4 << 20)
        except OSError:
            return None
        best = _covering(_parse_mounts(text), node_path)
        return None if best is None else (best[0], best[1], "/proc/mounts")
    tables = []
    if ctx.setup.pid is not None:
        tables.append(f"/proc/{ctx.setup.pid}/mountinfo")
    tables += ["/proc/self/mountinfo", "/proc/mounts"]
    for table in tables:
        try:
            text = ctx.root.read_text(table, 4 << 20)
        except OSError:
            continue
        mounts = _parse_mountinfo(text) if table.endswith("mountinfo") else _parse_mounts(text)
        best = _covering(mounts, node_path)
        if best is not None:
            return best[0], best[1], table
    return None


def _covering(mounts: list[tuple[str, set[str]]], path: str) -> tuple[str, set[str]] | None:
    """The last-mounted of the deepest mounts holding ``path``."""
    best: tuple[str, set[str]] | None = None
    for point, options in mounts:
        inside = point == "/" or path == point or path.startswith(point + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, options)
    return best


def _node_mounts_seen_here(root: str, node_path: str) -> tuple[str, set[str], str] | None:
    """The mount holding ``node_path`` of a live node's root, from this process's own mount
    table (None when the root has no ``proc`` at its ``/proc``, or no table is readable)."""
    real = os.path.realpath(root).rstrip("/")
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            text = fh.read(4 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    mounts = _parse_mountinfo(text, with_type=True)
    if not any(point == f"{real}/proc" and "fstype=proc" in options for point, options in mounts):
        return None
    best = _covering(mounts, real + node_path)
    if best is None:
        return None
    point, options = best
    # A root that is no mount of its own is held by a mount above it: the node's "/".
    shown = point[len(real) :] if point.startswith(real + "/") else "/"
    options = {o for o in options if not o.startswith("fstype=")}
    return shown, options, f"the node's mounts under {real} in /proc/self/mountinfo"


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")


def _parse_mountinfo(text: str, with_type: bool = False) -> list[tuple[str, set[str]]]:
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6:
            continue
        options = set(fields[5].split(","))
        if " - " in line:
            super_options = line.split(" - ", 1)[1].split()
            if len(super_options) >= 3:
                options |= set(super_options[2].split(","))
            if with_type and super_options:
                options.add(f"fstype={super_options[0]}")
        out.append((_unescape(fields[4]), options))
    return out


def _parse_mounts(text: str) -> list[tuple[str, set[str]]]:
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4:
            out.append((_unescape(fields[1]), set(fields[3].split(","))))
    return out


# -- plugin.present / plugin.runnable / plugin.responds ---------------------------------------------


def check_plugins(ctx: Context) -> list[Finding]:
    """``plugin.present``, ``plugin.runnable`` and ``plugin.responds`` for every provider.

    A plugin is run (``plugin.responds``) only when it is present and can start on the
    node, and not with ``--no-exec``; runs share the overall ``--plugins-deadline``.
    :attr:`Context.runnable` records which plugins can start.

    Returns:
        Three findings per provider (later ones SKIP when an earlier one fails), or three
        SKIPs when the providers are off or there is no valid config and bin dir.
    """
    bin_dir = ctx.setup.get(BIN_DIR)
    ids = ("plugin.present", "plugin.runnable", "plugin.responds")
    if ctx.providers_off:
        return [_skip(i, ctx.providers_off) for i in ids]
    if ctx.config is None or bin_dir is None:
        return [_skip(i, "no valid provider config and bin dir") for i in ids]
    bin_dir = str(bin_dir)
    bin_ok = ctx.root.stat(bin_dir) is not None
    runs = PluginRuns(ctx.root, ctx.options.plugin_timeout_ns, ctx.options.plugin_deadline_ns)
    out: list[Finding] = []
    for provider in ctx.config.providers:
        present = _present(ctx, bin_dir, provider.name) if bin_ok else None
        if present is None:
            present = Finding(
                "plugin.present",
                Status.FAIL,
                provider.name,
                "the bin dir does not exist",
                "see bin-dir.exec",
            )
        out.append(present)
        path = f"{bin_dir.rstrip('/')}/{provider.name}"
        if present.status != Status.PASS:
            out.append(_skip("plugin.runnable", "the plugin is not present", provider.name))
            out.append(_skip("plugin.responds", "the plugin is not present", provider.name))
            continue
        if ctx.bin_dir_noexec:
            out.append(_skip("plugin.runnable", ctx.bin_dir_noexec, provider.name))
            out.append(_skip("plugin.responds", ctx.bin_dir_noexec, provider.name))
            ctx.runnable[provider.name] = False
            continue
        verdict = check_executable(ctx.root, path, ctx.machine)
        if verdict.ok:
            verdict = _loader_verdict(ctx, path, verdict, runs)
        out.append(
            Finding(
                "plugin.runnable",
                Status.PASS if verdict.ok else Status.FAIL,
                provider.name,
                verdict.message,
                verdict.hint,
            )
        )
        ctx.runnable[provider.name] = verdict.ok
        if not verdict.ok:
            out.append(_skip("plugin.responds", "the plugin cannot start", provider.name))
        elif ctx.options.no_exec:
            out.append(_skip("plugin.responds", "--no-exec: not run", provider.name))
        else:
            out.append(_responds(ctx, provider, path, runs))
    return out


def _loader_verdict(ctx: Context, path: str, verdict: Verdict, runs: PluginRuns) -> Verdict:
    """``plugin.runnable`` past the headers: a dynamic binary's loader run on it (``--list``,
    :meth:`PluginRuns.loader_check`), so a library or symbol version the node lacks
    (``GLIBC_2.35 not found``) is a FAIL; the verdict says when only headers were read."""
    try:
        info = elf_info(ctx.root.read(path, 64 * 1024, head=True))
    except OSError:
        return verdict
    if info is None or info.interpreter is None:
        return verdict
    if ctx.options.no_exec:
        return Verdict(True, f"{verdict.message} (headers only: --no-exec)")
    # The loader names $ORIGIN after the path it is given; execve, after the file itself
    # (/proc/self/exe): a plugin installed as a symlink is checked at its target.
    try:
        target = ctx.root.resolve(path)
    except OSError:
        target = path
    ok, said = runs.loader_check(target, info.interpreter)
    if ok is None:
        return Verdict(True, f"{verdict.message} (headers only, the loader was not run: {said})")
    if ok:
        return Verdict(True, f"{verdict.message}; the node's loader resolves every library")
    return Verdict(
        False,
        f"the node's loader cannot start it: {said}",
        "install a build linked for the node's libc and libraries (a static build, or one "
        "built against the node's glibc or older)",
    )


#: What a downloaded or renamed plugin file carries besides its name: a version, an OS and
#: architecture, an extension.
_DECORATIONS = re.compile(
    r"([-_.]v?\d+(\.\d+)+([-+][0-9a-z.]+)?|[-_.](linux|windows|darwin)|[-_.](amd64|x86_64|"
    r"arm64|aarch64)|\.(exe|bin|sh|py))+$"
)


def _plugin_stem(name: str) -> str:
    """A plugin file name as a reader compares it with a provider's: case, ``_`` for ``-``,
    the ``credprov-`` prefix, a version, OS, architecture or extension do not count. Names
    one edit apart (``ecr-``/``acr-credential-provider``) are different plugins."""
    stem = name.lower().replace("_", "-").removeprefix("credprov-")
    return _DECORATIONS.sub("", stem)


#: Plugins one edit apart that are different programs: never offered for one another.
_KNOWN_PLUGINS = frozenset(
    (*HOST_RULES, "static-credential-provider", "docker-credential-helper-provider")
)


def _near_miss(entry: str, name: str) -> bool:
    """Whether a reader would take file ``entry`` for provider ``name``'s plugin: the same
    :func:`_plugin_stem`, or a one-character slip in a name that is no known plugin's."""
    a, b = _plugin_stem(entry), _plugin_stem(name)
    if a == b:
        return True
    if a in _KNOWN_PLUGINS or b in _KNOWN_PLUGINS or min(len(a), len(b)) < 6:
        return False
    return _one_edit(a, b)


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one inserted, deleted or replaced character."""
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] or a[i + 1 :] == b[i:] or a[i:] == b[i + 1 :]


def _present(ctx: Context, bin_dir: str, name: str) -> Finding:
    path = f"{bin_dir.rstrip('/')}/{name}"
    st = ctx.root.stat(path) if name else None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
        return Finding("plugin.present", Status.PASS, name, f"{path} is executable")
    if st is not None and stat.S_ISDIR(st.st_mode):
        return Finding(
            "plugin.present",
            Status.FAIL,
            name,
            f"{path} is a directory",
            "install the plugin binary under the provider's name",
        )
    if st is not None:
        return Finding(
            "plugin.present",
            Status.FAIL,
            name,
            f"{path} is not executable (mode {stat.S_IMODE(st.st_mode):04o}): the kubelet "
            "exits at start (permission denied)",
            f"chmod 0755 {path}",
        )
    # Near misses are files no provider uses (another provider's plugin is not one), and
    # not the bundle's hidden runtimes.
    used = {p.name for p in ctx.config.providers} if ctx.config else set()
    entries = [e for e in ctx.root.listdir(bin_dir) if e not in used and not e.startswith(".")]
    hint = "install the plugin in the bin dir under exactly the provider's name"
    if f"{name}.exe" in entries:
        hint = (
            f"{name}.exe is there: the provider name must equal the file name; on Linux "
            f"rename it to {name}, on Windows name the provider {name}.exe"
        )
    else:
        close = [e for e in entries if _near_miss(e, name)]
        if close:
            hint = (
                f"did you mean {', '.join(close[:3])} (in the bin dir, used by no provider)? The "
                "provider name must equal the file name: rename the file or the provider"
            )
    return Finding(
        "plugin.present",
        Status.FAIL,
        name,
        f"{path} does not exist: the kubelet exits at start (plugin binary executable "
        "did not exist)",
        hint,
    )


def sample_image(provider: internal.CredentialProvider, images: list[str]) -> str | None:
    """An image the provider's ``matchImages`` match and its plugin accepts: one of
    ``images``, else derived (:func:`credprov.doctor.samples.derive_sample`)."""
    sample = derive_sample(provider, images)
    return None if sample is None else sample.image


def _responds(
    ctx: Context, provider: internal.CredentialProvider, path: str, runs: PluginRuns
) -> Finding:
    """``plugin.responds`` for one provider: its plugin run once on a sample image, its
    answer judged by the conformance harness (SKIP when it cannot or may not run)."""
    sample = derive_sample(provider, ctx.options.images)
    if sample is None:
        kind = plugin_kind(provider.name)
        why = f" {kind} accepts" if kind else ""
        return _skip(
            "plugin.responds",
            f"no image{why} can be derived from matchImages; pass --image",
            provider.name,
        )
    image = sample.image
    # Run by its node path, as the kubelet does (a multicall runtime installed as symlinks
    # dispatches on it): confined inside --node-root, or as the kubelet would on this host.
    refusal = runs.refusal(path)
    if refusal is not None:
        return _skip("plugin.responds", refusal, provider.name)
    timeout_ns = runs.allot()
    report = _run_plugin(provider, path, image, runs, timeout_ns)
    if isinstance(report, Finding):
        return report
    if timeout_ns < ctx.options.plugin_timeout_ns:
        # The overall deadline, not the plugin's own, bounded this run: judge its time
        # against the plugin's own deadline.
        if _check(report, "deadline").status == Status.FAIL:
            return _skip(
                "plugin.responds",
                f"not judged: stopped after {format_duration(timeout_ns)}, when the plugins' "
                f"overall deadline ({format_duration(ctx.options.plugin_deadline_ns)}) ran out",
                provider.name,
            )
        slow = ctx.options.plugin_timeout_ns / 1e9 * SLOW_FRACTION
        report.checks = [
            c for c in report.checks if c.name != "deadline" or (c.duration or 0.0) > slow
        ]
    finding = _judge_answer(provider, report, path)
    if sample.made_up and finding.status == Status.FAIL:
        # A host the doctor made up for a plugin it does not know: no verdict on the node.
        return Finding(
            "plugin.responds",
            Status.WARN,
            provider.name,
            f"{finding.message} (a made-up image: the plugin may serve none like it)",
            "pass --image with an image this plugin serves to judge it",
        )
    return finding


def _check(report: ConformanceReport, name: str) -> Check:
    """The (last) conformance check called ``name``; every run has ``deadline`` and
    ``exit``."""
    return {c.name: c for c in report.checks}[name]


def _run_plugin(
    provider: internal.CredentialProvider,
    path: str,
    image: str,
    runs: PluginRuns,
    timeout_ns: int,
) -> ConformanceReport | Finding:
    """The conformance report of one run of the plugin at ``path`` for ``image``, or the
    ``plugin.responds`` SKIP when it could not be run (the run is recorded in ``runs``)."""
    try:
        with runs.launcher() as launcher:
            report = run_conformance(
                path,
                [image],
                [provider.api_version],
                args=provider.args,
                env={var.name: var.value for var in provider.env},
                timeout_ns=timeout_ns,
                probes=False,
                launcher=launcher,
            )
            failure = launcher.failure()
    except ValueError as exc:
        return _skip("plugin.responds", f"cannot run: {exc}", provider.name)
    except SandboxError as exc:
        return _skip("plugin.responds", f"not run: {exc}", provider.name)
    runs.finished(provider.name, _check(report, "deadline").status == Status.FAIL)
    if failure is not None:
        return _skip("plugin.responds", refusal_text(failure), provider.name)
    return report


def _judge_answer(
    provider: internal.CredentialProvider, report: ConformanceReport, path: str
) -> Finding:
    """``plugin.responds`` from the conformance checks: the first failure, else the first
    warning, else PASS with the answer's time and cache key type.

    Extra auth keys that do not match the image are no warning here when one key does: the
    kubelet uses the matching one and caches the others for the images they match
    (upstream's GCP plugin answers every Google registry key for any image, by design).
    """
    by_name = {c.name: c for c in report.checks}
    matched = by_name.get("auth matches image")
    extra_keys_fine = matched is not None and matched.status == Status.PASS
    failures = [c for c in report.checks if c.status == Status.FAIL]
    warnings = [
        c
        for c in report.checks
        if c.status == Status.WARN
        and not (
            extra_keys_fine
            and c.name.startswith("auth key ")
            and c.detail.startswith("does not match the image")
        )
    ]
    took = by_name["exit"].duration or 0.0
    check = plugin_check_command(path, report.images[0], provider.api_version, provider.args)
    where = f"for {report.images[0]}"
    if failures:
        first = failures[0]
        return Finding(
            "plugin.responds",
            Status.FAIL,
            provider.name,
            f"{where}: {first.name}: {first.detail}",
            f"the kubelet gets no credentials from this answer; see every check with: {check}",
        )
    cache_key = by_name.get("cacheKeyType")
    summary = f"{where}: answered in {took * 1000:.0f}ms" + (
        f", cacheKeyType {cache_key.detail}" if cache_key and cache_key.detail else ""
    )
    if warnings:
        first = warnings[0]
        return Finding(
            "plugin.responds",
            Status.WARN,
            provider.name,
            f"{summary}; {first.name}: {first.detail}",
            f"check the plugin's answer with: {check}",
        )
    return Finding("plugin.responds", Status.PASS, provider.name, summary)


# -- image.match ---------------------------------------------------------------------------------


def check_image_match(ctx: Context) -> list[Finding]:
    """``image.match``: for each ``--image``, which providers' ``matchImages`` match it,
    or why none does (:func:`credprov.imageauth.matching.explain_match`).

    Returns:
        Nothing without ``--image``; else one finding per image: PASS naming the matching
        providers, WARN for an invalid image or one no provider matches, SKIP without a
        valid config.
    """
    if not ctx.options.images:
        return []
    if ctx.config is None:
        return [
            _skip("image.match", "no valid provider config", image) for image in ctx.options.images
        ]
    out = []
    for image in ctx.options.images:
        try:
            repo = parse_image_name(image)
        except InvalidImageError as exc:
            out.append(Finding("image.match", Status.WARN, image, f"invalid image: {exc}", ""))
            continue
        matched: list[str] = []
        reasons: list[str] = []
        for provider in ctx.config.providers:
            hit = None
            why = []
            for pattern in provider.match_images:
                explanation = explain_match(pattern, repo)
                if explanation.matched:
                    hit = pattern
                    break
                why.append(f"{pattern!r}: {explanation.reason}")
            if hit is not None:
                matched.append(f"{provider.name} (matchImages {hit!r})")
            else:
                reasons.append(f"{provider.name}: " + "; ".join(why))
        if matched:
            out.append(
                Finding(
                    "image.match",
                    Status.PASS,
                    image,
                    f"requested as {repo}; matched by {', '.join(matched)}",
                )
            )
        else:
            out.append(
                Finding(
                    "image.match",
                    Status.WARN,
                    image,
                    f"requested as {repo}; no provider matches ({' | '.join(reasons)})",
                    "add a matchImages entry for this registry (host labels and port must "
                    "match exactly; '*' covers one label)",
                )
            )
    return out


# -- feature-gates -------------------------------------------------------------------------------


def check_feature_gates(ctx: Context) -> list[Finding]:
    """``feature-gates``: the credential gates' effective values and where each came from.

    Returns:
        One finding: FAIL for a ``--feature-gates`` value the kubelet refuses, or for
        providers with ``tokenAttributes`` while KEP-4412's gate is off; PASS otherwise.
    """
    from credprov.doctor.context import GATE_DEFAULTS

    if ctx.setup.feature_gates_error is not None:
        return [
            Finding(
                "feature-gates",
                Status.FAIL,
                "",
                f"{ctx.setup.feature_gates_error}: the kubelet exits at start",
                "write each gate as Name=true or Name=false",
            )
        ]
    parts = []
    for name in GATE_DEFAULTS:
        value = ctx.setup.feature_gates.get(name)
        source = "default" if value is None else value.source
        parts.append(f"{name}={str(ctx.gate(name)).lower()} ({source})")
    uses_tokens = ctx.config is not None and any(
        p.token_attributes is not None for p in ctx.config.providers
    )
    if uses_tokens and not ctx.gate(SA_TOKEN_GATE):
        return [
            Finding(
                "feature-gates",
                Status.FAIL,
                "",
                "; ".join(parts),
                f"providers use tokenAttributes: enable {SA_TOKEN_GATE}",
            )
        ]
    return [Finding("feature-gates", Status.PASS, "", "; ".join(parts))]


def _skip(check_id: str, why: str, subject: str = "") -> Finding:
    return Finding(check_id, Status.SKIP, subject, why)
