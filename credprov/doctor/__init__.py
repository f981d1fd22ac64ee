"""``credprov doctor``: why a node gets no credentials, checked from the node's own setup.

:func:`run_doctor` finds the kubelet's effective setup under a node root
(:mod:`~credprov.doctor.discovery`), runs every check (:mod:`~credprov.doctor.checks` for
flags, config and plugins, :mod:`~credprov.doctor.kep2535` and
:mod:`~credprov.doctor.kep4412` for the KEPs, over the cluster's objects and the node's
images loaded by :mod:`~credprov.doctor.cluster`) and returns a
:class:`~credprov.doctor.report.Report`. Read-only: nothing on the node is written; plugins
run only for ``plugin.responds`` (not with ``no_exec``), and a node image's plugins only
confined inside it (:mod:`~credprov.doctor.sandbox`). Known secrets are replaced in every
finding by a label that says which secret it was (``<env NAME of provider P>``,
``<service-account token>``); passwords a plugin returned are redacted by the conformance
harness that judged its answer. Option errors are ``DoctorUsageError``, a
:class:`~credprov.errors.UsageError`: the CLI exits 2 on them.
"""

from __future__ import annotations

from credprov.base.rootfs import NodeRoot
from credprov.doctor.context import Context, DoctorOptions, DoctorUsageError
from credprov.doctor.discovery import KubeletSetup, Overrides, discover
from credprov.doctor.report import Finding, Report, Status, render_text

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
            ``--node-images`` file, an unreachable ``--cri`` endpoint, ``--cri`` where the CRI
            client is not installed, a root that is not a directory).
    """
    import os

    from credprov.doctor import checks, cluster, kep2535, kep4412, kubelet_go, mirrors
    from credprov.doctor.binaries import node_machine

    if not os.path.isdir(options.root):
        raise DoctorUsageError(f"--node-root {options.root}: not a directory")
    if options.cri:
        _require_cri_client()
    root = NodeRoot(options.root)
    paths = {
        flag: _node_path(root, flag, value)
        for flag, value in (
            ("--config", options.config),
            ("--bin-dir", options.bin_dir),
            ("--kubelet-config", options.kubelet_config),
        )
    }
    setup = discover(
        root,
        Overrides(
            config=paths["--config"],
            bin_dir=paths["--bin-dir"],
            kubelet_config=paths["--kubelet-config"],
            node=options.node,
        ),
    )
    ctx = Context(options=options, root=root, setup=setup, machine=node_machine(root))
    if options.objects:
        cluster.load_store(ctx)  # usage errors before anything runs
    report = Report(node=setup.to_dict())
    if checks.no_kubelet(ctx):
        # Nothing on this node to judge: defaults would only produce PASS lines.
        report.checks.extend(checks.check_flags(ctx))
        report.checks.extend(
            Finding(check_id, Status.SKIP, "", "no kubelet found")
            for check_id in ("provider-config.valid", "feature-gates", "pull-policy.valid")
        )
        return report
    for check in (
        checks.check_flags,
        kubelet_go.check_kubelet_go,  # first: the Go it settles on judges what follows
        checks.check_provider_config,  # before feature-gates: it needs the providers
        checks.check_feature_gates,
        checks.check_lint,
        checks.check_bin_dir,
        checks.check_plugins,
        checks.check_image_match,
        mirrors.check_runtime_mirrors,
        kep2535.check_pull_policy,
        kep2535.check_pull_records,
        kep4412.check_kep4412_rbac,
        kep2535.check_kep2535_preflight,
    ):
        report.checks.extend(check(ctx))
    report.redact(ctx.secrets)
    return report


def _node_path(root: NodeRoot, flag: str, value: str | None) -> str | None:
    """An operator's path as a node path: on this machine a relative one is the working
    directory's, as every command line reads it; inside ``--node-root`` there is no such
    directory, so it must be absolute.

    Raises:
        DoctorUsageError: a relative path with ``--node-root``.
    """
    import os

    if value is None or os.path.isabs(value):
        return value
    if root.is_host:
        return os.path.abspath(value)
    raise DoctorUsageError(
        f"{flag} {value}: a path inside --node-root must be absolute (the node's own path, "
        "e.g. /etc/kubernetes/credential-providers)"
    )


#: Why ``--cri`` cannot be used: the CRI client (gRPC) is an extra of the credprov CLI, and
#: the plugin bundle's doctor leaves it out.
CRI_UNAVAILABLE = (
    "--cri needs the credprov CLI with the cri extra; "
    "pass --node-images FILE (crictl images -o json)"
)


def _require_cri_client() -> None:
    """Raise DoctorUsageError unless the CRI client imports (before anything runs)."""
    try:
        import credprov.cri.client  # noqa: F401
    except ImportError:
        raise DoctorUsageError(CRI_UNAVAILABLE) from None
