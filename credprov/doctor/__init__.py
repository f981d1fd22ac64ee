"""``credprov doctor``: why a node gets no credentials, checked from the node's own setup.

:func:`run_doctor` finds the kubelet's effective setup under a node root
(:mod:`~credprov.doctor.discovery`), runs every check (:mod:`~credprov.doctor.checks` for
flags, config and plugins, :mod:`~credprov.doctor.kep` for KEP-2535/KEP-4412) and returns a
:class:`~credprov.doctor.report.Report`. Read-only: nothing on the node is written; plugins
run only for ``plugin.responds`` (not with ``no_exec``). Known secrets (provider ``env``
values, passwords a plugin returned, tokens) are redacted from every finding.
"""

from __future__ import annotations

from credprov.doctor.context import Context, DoctorOptions, DoctorUsageError
from credprov.doctor.discovery import KubeletSetup, Overrides, discover
from credprov.doctor.report import Finding, Report, Status, render_text
from credprov.doctor.rootfs import NodeRoot

__all__ = [
    "DoctorOptions",
    "DoctorUsageError",
    "Finding",
    "KubeletSetup",
    "Report",
    "Status",
    "render_text",
    "run_doctor",
]


def run_doctor(options: DoctorOptions) -> Report:
    """Every check, in report order.

    Raises:
        DoctorUsageError: an option that cannot be used (an unreadable ``--objects`` or
            ``--images`` file, an unreachable ``--cri`` endpoint, ``--cri`` where the CRI
            client is not installed, a root that is not a directory).
    """
    import os

    from credprov.doctor import checks, kep
    from credprov.doctor.binaries import node_machine

    if not os.path.isdir(options.root):
        raise DoctorUsageError(f"--root {options.root}: not a directory")
    if options.cri:
        _require_cri_client()
    root = NodeRoot(options.root)
    setup = discover(
        root,
        Overrides(
            config=options.config,
            bin_dir=options.bin_dir,
            kubelet_config=options.kubelet_config,
            node=options.node,
        ),
    )
    ctx = Context(options=options, root=root, setup=setup, machine=node_machine(root))
    if options.objects:
        kep.load_store(ctx)  # usage errors before anything runs
    report = Report(node=setup.to_dict())
    for check in (
        checks.check_flags,
        checks.check_feature_gates,
        checks.check_provider_config,
        checks.check_lint,
        checks.check_bin_dir,
        checks.check_plugins,
        checks.check_image_match,
        kep.check_pull_policy,
        kep.check_pull_records,
        kep.check_kep4412_rbac,
        kep.check_kep2535_preflight,
    ):
        report.checks.extend(check(ctx))
    report.redact(ctx.secrets)
    return report


#: Why ``--cri`` cannot be used: the CRI client (gRPC) is an extra of the credprov CLI, and
#: the plugin bundle's doctor leaves it out.
CRI_UNAVAILABLE = (
    "--cri needs the credprov CLI with the cri extra; pass --images FILE (crictl images -o json)"
)


def _require_cri_client() -> None:
    """Raise DoctorUsageError unless the CRI client imports (before anything runs)."""
    try:
        import credprov.cri.client  # noqa: F401
    except ImportError:
        raise DoctorUsageError(CRI_UNAVAILABLE) from None
