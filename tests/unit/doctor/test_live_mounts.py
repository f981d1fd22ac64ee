"""``bin-dir.exec`` under ``--node-root`` at a live node: the node's mounts, not a table read
inside the root that names another view.

A real ``noexec`` bind mount on the root's bin dir and a real ``proc`` at the root's
``/proc`` (this machine's, whose ``/proc/1/mountinfo`` names every mount with the root's
prefix: the false PASS of old). With and without ``--no-exec`` the run has exactly one
FAIL, ``bin-dir.exec``; the plugin checks skip, pointing at it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from credprov.doctor import DoctorOptions, Status, run_doctor
from tests.unit.doctor import nodes

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not nodes.busybox_available(),
    reason="mounting (a noexec bind, proc) needs root; the fixture roots need a static busybox",
)


def _mount(stack: ExitStack, *argv: str) -> None:
    target = argv[-1]
    subprocess.run(["mount", *argv], check=True, capture_output=True)
    stack.callback(subprocess.run, ["umount", "-l", target], check=False, capture_output=True)


@contextmanager
def live_node(root: Path, *, bin_noexec: bool) -> Iterator[Path]:
    """``root`` with ``proc`` at its ``/proc`` and (``bin_noexec``) its bin dir bind-mounted
    onto itself ``noexec``; unmounted afterwards."""
    (root / "proc/mounts").unlink()  # the image's table: a live node has procfs there
    with ExitStack() as stack:
        _mount(stack, "-t", "proc", "proc", str(root / "proc"))
        if bin_noexec:
            bin_dir = str(root / nodes.BIN.lstrip("/"))
            _mount(stack, "--bind", bin_dir, bin_dir)
            _mount(stack, "-o", "remount,bind,noexec", bin_dir)
        yield root


@pytest.mark.parametrize("no_exec", [False, True], ids=["plugins run", "--no-exec"])
@pytest.mark.parametrize(
    ("bin_noexec", "expected"),
    [
        pytest.param(True, Status.FAIL, id="noexec bin dir"),
        pytest.param(False, Status.PASS, id="exec bin dir"),
    ],
)
def test_bin_dir_exec_reads_the_nodes_mounts(
    tmp_path: Path, no_exec: bool, bin_noexec: bool, expected: Status
) -> None:
    root = nodes.kubeadm_node(tmp_path / "node")
    with live_node(root, bin_noexec=bin_noexec):
        report = run_doctor(DoctorOptions(root=str(root), no_exec=no_exec))
    (exec_check,) = report.by_id("bin-dir.exec")
    assert exec_check.status == expected, exec_check
    failed = [c for c in report.checks if c.status == Status.FAIL]
    if bin_noexec:
        assert exec_check.message.startswith(
            f"the bin dir is on {nodes.BIN}, mounted noexec (the node's mounts under "
        ), exec_check.message
        assert failed == [exec_check]
        for check_id in ("plugin.runnable", "plugin.responds"):
            assert {c.status for c in report.by_id(check_id)} == {Status.SKIP}
            assert {c.message for c in report.by_id(check_id)} == {
                f"the bin dir is on {nodes.BIN}, mounted noexec (see bin-dir.exec)"
            }
    else:
        assert exec_check.message == "a directory on / (exec)"
        assert failed == []
