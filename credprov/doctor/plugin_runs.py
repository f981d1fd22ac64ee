"""What a doctor run's ``plugin.responds`` checks share: how and whether each plugin runs.

One :class:`PluginRuns` per doctor run decides, for each provider's ``<bin-dir>/<name>``:

* whether plugins can run at all: any root but ``/`` needs the confinement of
  :mod:`credprov.doctor.sandbox`, probed once (not per plugin) and only when a plugin is
  about to run (``--no-exec`` probes nothing); when it cannot be had, every plugin is
  skipped with the reason, never run on this host;
* its deadline: all runs share an overall budget (``--plugins-deadline``, starting with the
  first run); each gets the smaller of its own timeout (``--plugin-timeout``) and what is
  left, and once it is spent the remaining plugins are skipped, naming the ones that hung,
  so N hung plugins cost one overall deadline, not N timeouts;
* the launcher of one run (:class:`~credprov.doctor.sandbox.RootLauncher` or
  :class:`~credprov.doctor.sandbox.HostLauncher`).

The clock is injectable (nanoseconds, :func:`time.monotonic_ns` by default).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from credprov._go.durations import format_duration
from credprov.base.redact import shorten
from credprov.base.rootfs import NodeRoot
from credprov.doctor.sandbox import (
    HostLauncher,
    RootLauncher,
    RootPlan,
    SandboxError,
    plan_root,
    probe,
)

__all__ = ["PluginDeadline", "PluginRuns", "refusal_text"]

#: The longest a loader check (``INTERP --list PATH``) may take.
_LOADER_TIMEOUT_NS = 10 * 1_000_000_000


def refusal_text(failure: SandboxError) -> str:
    """The ``plugin.responds`` skip reason when plugins cannot be confined."""
    if failure.errno in (errno.EPERM, errno.EACCES):
        if os.geteuid() == 0:
            return (
                "not run: running a plugin inside --node-root needs CAP_SYS_ADMIN and "
                f"CAP_SYS_CHROOT for a private mount namespace and chroot ({failure}); this "
                "process is root without them (a container: add the capabilities, or run "
                "it privileged) or pass --no-exec"
            )
        return (
            "not run: running a plugin inside --node-root needs root for a private mount "
            f"namespace and chroot ({failure}); run as root or pass --no-exec"
        )
    return (
        f"not run: cannot confine plugins inside --node-root ({failure}); the doctor never runs "
        "them on this host; pass --no-exec"
    )


@dataclass
class PluginDeadline:
    """The overall budget shared by a doctor run's plugin runs (nanoseconds).

    It starts with the first run; ``clock`` is :func:`time.monotonic_ns` unless a test
    injects one.
    """

    total_ns: int
    clock: Callable[[], int] = time.monotonic_ns
    started_ns: int | None = None
    #: Providers whose run was killed at its deadline, in run order.
    hung: list[str] = field(default_factory=list)

    def remaining_ns(self) -> int:
        """Nanoseconds left of the overall budget: all of it before the first run, never
        less than 0."""
        if self.started_ns is None:
            return self.total_ns
        return max(0, self.total_ns - (self.clock() - self.started_ns))

    def allot(self, per_run_ns: int) -> int:
        """The deadline of the next run: its own, or what is left when that is less (0: the
        budget is spent, do not run)."""
        if self.started_ns is None:
            self.started_ns = self.clock()
        return min(per_run_ns, self.remaining_ns())

    def spent_reason(self) -> str:
        """The ``plugin.responds`` skip reason once the budget is spent, naming the plugins
        that hung until their own deadline."""
        hung = f" (hung: {', '.join(self.hung)})" if self.hung else ""
        return (
            f"not run: the plugins' overall deadline ({format_duration(self.total_ns)}) was "
            f"spent{hung}; raise --plugins-deadline or check the slow plugins alone"
        )


class PluginRuns:
    """Everything a doctor run's ``plugin.responds`` checks share: how plugins are started
    (confined in the root, or on this host), the one probe, and the overall deadline."""

    def __init__(
        self,
        root: NodeRoot,
        plugin_timeout_ns: int,
        deadline_ns: int,
        *,
        clock: Callable[[], int] = time.monotonic_ns,
        prober: Callable[[RootPlan], SandboxError | None] = probe,
    ) -> None:
        self.root = root
        self.plugin_timeout_ns = plugin_timeout_ns
        self.deadline = PluginDeadline(deadline_ns, clock)
        self._prober = prober
        self._plan: RootPlan | None = None
        self._refused: str | None = None
        self._probed = False

    @property
    def confined(self) -> bool:
        """Plugins run inside the root (any root but ``/``)."""
        return not self.root.is_host

    def refusal(self, node_path: str) -> str | None:
        """Why the plugin at ``node_path`` is not run (a ``skip`` reason), or None."""
        if self.deadline.remaining_ns() <= 0:
            return self.deadline.spent_reason()
        if not self.confined:
            return None
        if not self._probed:
            self._probed = True
            self._refused = self._probe()
        return self._refused

    def _probe(self) -> str | None:
        try:
            self._plan = plan_root(self.root)
        except SandboxError as exc:
            return f"not run: cannot confine plugins inside --node-root ({exc}); pass --no-exec"
        failure = self._prober(self._plan)
        return None if failure is None else refusal_text(failure)

    def allot(self) -> int:
        """The deadline of the next run (see :meth:`PluginDeadline.allot`)."""
        return self.deadline.allot(self.plugin_timeout_ns)

    @contextlib.contextmanager
    def launcher(self) -> Iterator[RootLauncher | HostLauncher]:
        """A launcher for one plugin run (call :meth:`refusal` first).

        Raises:
            SandboxError: its temporary directory cannot be made.
        """
        if self.confined:
            assert self._plan is not None and self._refused is None, "refusal() first"
            with RootLauncher(self._plan) as root_launcher:
                yield root_launcher
        else:
            with HostLauncher() as host_launcher:
                yield host_launcher

    def loader_check(self, node_path: str, interpreter: str) -> tuple[bool | None, str]:
        """Whether the node's program ``interpreter`` can load ``node_path`` and every library
        it needs, with their symbol versions (``INTERP --list PATH``, ldd's way: the loader
        maps the libraries and runs none of the program), started as a plugin would be.

        Returns:
            ``(True, "")``; ``(False, what the loader said)``; ``(None, why it was not
            run)`` when plugins cannot run here (the refusal) or the loader hung.
        """
        refusal = self.refusal(node_path)
        if refusal is not None:
            return None, refusal
        timeout = min(self.plugin_timeout_ns, _LOADER_TIMEOUT_NS) / 1e9
        try:
            with self.launcher() as launcher:
                launch = launcher.launch([interpreter, "--list", node_path], ())
                try:
                    proc = subprocess.run(
                        launch.argv,
                        env=launch.env,
                        cwd=launch.cwd,
                        preexec_fn=launch.preexec_fn,
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                        timeout=timeout,
                        check=False,
                    )
                except subprocess.TimeoutExpired:
                    return None, f"the loader did not answer within {timeout:g}s"
                except OSError as exc:
                    return False, f"{interpreter}: {exc.strerror or exc}"
                failure = launcher.failure()
        except SandboxError as exc:
            return None, f"not run: {exc}"
        if failure is not None:
            return None, refusal_text(failure)
        said = (proc.stderr + proc.stdout).decode("utf-8", "replace")
        problems = [line.strip() for line in said.splitlines() if "not found" in line]
        if proc.returncode != 0 or problems:
            lines = problems or [line.strip() for line in said.splitlines() if line.strip()]
            said = "; ".join(dict.fromkeys(lines)) or f"exit status {proc.returncode}"
            return False, shorten(said, 400)
        return True, ""

    def finished(self, provider: str, timed_out: bool) -> None:
        """Record a run's end: a run killed at its deadline is named as hung."""
        if timed_out:
            self.deadline.hung.append(provider)
