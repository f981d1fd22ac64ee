"""Running a child process bounded in time and output: the one implementation.

The engine runs credential provider plugins (:mod:`credprov.credentialprovider.plugin.exec`)
and the docker-helper plugin runs ``docker-credential-*`` helpers; both need the same
things, which :mod:`subprocess` does not give together:

* the request written to stdin without blocking on a child that does not read it;
* stdout and stderr read as they come, stdout up to a cap (past it, the run fails) and
  stderr up to a cap (past it, truncated or failed, as the caller asks);
* success only with both end-of-output and the child's exit, as Go's ``cmd.Run`` under a
  context: a child that closes its pipes and then takes a while to exit is waited for;
* a child that exited while something it started still holds the pipes is given
  :data:`PIPE_GRACE_SECONDS`, not the whole deadline;
* the child's whole process group killed at the deadline, on overflow, and at the end
  (the child is started with ``start_new_session=True``, so its pid names the group until
  it is reaped; :func:`run_bounded` kills the group *before* reaping).

Hand-written because ``subprocess.run(timeout=...)`` kills only the child (a grandchild
holding the pipes makes ``communicate`` hang past the timeout) and reads without a bound.
Standard library only: the plugin SDK imports it on its cold path.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

# Annotations only: logging and typing cost start-up on the paths that run a child (the
# docker-helper plugin, the engine's plugin runs), and dataclasses more (inspect, ast...).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import IO

#: How long to wait for the pipes to close after the child itself exited (a grandchild may
#: still hold them) before killing its process group.
PIPE_GRACE_SECONDS = 1.0

#: Where pidfds are unavailable (Linux < 5.3), how often to check whether the child exited.
_EXIT_POLL_SECONDS = 0.005

_CHUNK = 65536


class Outcome:
    """How a bounded run ended.

    ``timed_out``: the deadline passed; ``overflow``: ``"stdout"`` or ``"stderr"`` when that
    stream passed its cap (and the run was stopped); ``returncode``: the child's status once
    reaped (``-SIGKILL`` when it was killed). Output is what was read up to the stop.
    """

    __slots__ = ("overflow", "returncode", "stderr", "stdout", "timed_out")

    def __init__(
        self,
        stdout: bytes,
        stderr: bytes,
        returncode: int,
        timed_out: bool = False,
        overflow: str | None = None,
    ) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.returncode = returncode
        self.timed_out = timed_out
        self.overflow = overflow

    def __repr__(self) -> str:  # never the output: it may hold a secret
        return (f"Outcome(returncode={self.returncode}, stdout={len(self.stdout)} bytes, "
                f"stderr={len(self.stderr)} bytes, timed_out={self.timed_out}, "
                f"overflow={self.overflow!r})")  # fmt: skip

    @property
    def failed(self) -> bool:
        """Stopped by the deadline or a cap (the exit status then says nothing)."""
        return self.timed_out or self.overflow is not None


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s process group (it was started in a new session); quiet if gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_bounded(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    timeout: float,
    *,
    max_stdout: int,
    max_stderr: int,
    stderr_overflow_fails: bool = False,
    log: logging.Logger | None = None,
    label: str = "child",
) -> Outcome:
    """Feed ``stdin`` to ``proc``, read its output within ``timeout`` seconds and the caps,
    then kill its process group and reap it.

    ``proc`` must have been started with three pipes and ``start_new_session=True``. Debug
    lines about waiting go to ``log`` (naming ``label``), never any output of the child.
    """
    deadline = time.monotonic() + timeout
    pipes = _Pipes(proc, stdin, max_stdout, max_stderr, stderr_overflow_fails)
    try:
        timed_out = _pump(proc, pipes, deadline, log, label)
    finally:
        kill_group(proc)  # the leader is not reaped yet: its pid still names the group
        proc.wait()
    return Outcome(bytes(pipes.out), bytes(pipes.err), proc.returncode, timed_out, pipes.overflow)


def _pump(
    proc: subprocess.Popen[bytes],
    pipes: _Pipes,
    deadline: float,
    log: logging.Logger | None,
    label: str,
) -> bool:
    """The select loop over the pipes and the exit watch; whether the deadline passed."""
    exit_watch = _ExitWatch(proc)
    sel = selectors.DefaultSelector()
    try:
        pipes.register(sel)
        if exit_watch.fd is not None:
            sel.register(exit_watch.fd, selectors.EVENT_READ)
        exited_at: float | None = None
        waiting_logged = False
        while pipes.overflow is None:
            now = time.monotonic()
            if exited_at is None and exit_watch.exited():
                exited_at = now
                if exit_watch.fd is not None:
                    sel.unregister(exit_watch.fd)
            if exited_at is not None and pipes.open == 0:
                return False
            if now >= deadline:
                _debug(log, "%s (pid %d) passed its deadline", label, proc.pid)
                return True
            if exited_at is not None and now - exited_at > PIPE_GRACE_SECONDS:
                _debug(
                    log,
                    "%s (pid %d) exited but its pipes are still open after %.1fs; stopping",
                    label,
                    proc.pid,
                    PIPE_GRACE_SECONDS,
                )
                return False  # a grandchild holds the pipes; stop waiting for it
            if pipes.open == 0 and not waiting_logged:
                _debug(
                    log, "%s (pid %d) closed its output; waiting for it to exit", label, proc.pid
                )
                waiting_logged = True
            wait = deadline - now
            if exited_at is not None:
                wait = min(wait, exited_at + PIPE_GRACE_SECONDS - now)
            elif exit_watch.fd is None:
                wait = min(wait, _EXIT_POLL_SECONDS)
            for key, _ in sel.select(timeout=max(wait, 0.0)):
                if not isinstance(key.fileobj, int):  # the pidfd: seen at the loop's top
                    pipes.ready(sel, key.fileobj)
                if pipes.overflow is not None:
                    break
        return False
    finally:
        sel.close()
        exit_watch.close()
        pipes.close()


def _debug(log: logging.Logger | None, message: str, *args: object) -> None:
    if log is not None:
        log.debug(message, *args)


class _Pipes:
    """A running child's three pipes: the input still to write, the output read so far, and
    how many are still open."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stdin: bytes,
        max_stdout: int,
        max_stderr: int,
        stderr_overflow_fails: bool,
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr
        self.pending = memoryview(stdin)
        self.out = bytearray()
        self.err = bytearray()
        self.max_stdout = max_stdout
        self.max_stderr = max_stderr
        self.stderr_overflow_fails = stderr_overflow_fails
        self.open = 0
        self.overflow: str | None = None

    def register(self, sel: selectors.BaseSelector) -> None:
        """Watch the pipes (stdin only while there is something to write)."""
        os.set_blocking(self.stdin.fileno(), False)
        if self.pending:
            sel.register(self.stdin, selectors.EVENT_WRITE)
            self.open += 1
        else:
            self.stdin.close()
        sel.register(self.stdout, selectors.EVENT_READ)
        sel.register(self.stderr, selectors.EVENT_READ)
        self.open += 2

    def ready(self, sel: selectors.BaseSelector, pipe: object) -> None:
        """Write to or read from the pipe ``sel`` found ready; sets :attr:`overflow` when a
        stream passes a cap that fails the run."""
        if pipe is self.stdin:
            try:
                written = os.write(self.stdin.fileno(), self.pending[:_CHUNK])
            except OSError:  # the child does not read its stdin: fine
                written = len(self.pending)
            self.pending = self.pending[written:]
            if not self.pending:
                self._closed(sel, self.stdin)
                with contextlib.suppress(OSError):
                    self.stdin.close()
            return
        reader = self.stdout if pipe is self.stdout else self.stderr
        chunk = os.read(reader.fileno(), _CHUNK)
        if not chunk:
            self._closed(sel, reader)
        elif reader is self.stdout:
            self.out += chunk
            if len(self.out) > self.max_stdout:
                self.overflow = "stdout"
        elif self.stderr_overflow_fails:
            self.err += chunk
            if len(self.err) > self.max_stderr:
                self.overflow = "stderr"
        else:
            self.err += chunk[: max(self.max_stderr - len(self.err), 0)]

    def _closed(self, sel: selectors.BaseSelector, pipe: IO[bytes]) -> None:
        sel.unregister(pipe)
        self.open -= 1

    def close(self) -> None:
        """Close all three (whatever the child left behind gets EOF or EPIPE)."""
        for pipe in (self.stdin, self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                pipe.close()


class _ExitWatch:
    """Tells when a child has exited without reaping it (its pid stays its group's id).

    Uses a pidfd (readable once the process exits) so the select loop wakes on exit; falls
    back to ``waitid(WNOWAIT)`` polling where pidfds are unavailable.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.pid = proc.pid
        self.fd: int | None = None
        self._exited = False
        with contextlib.suppress(AttributeError, OSError):
            self.fd = os.pidfd_open(proc.pid)

    def exited(self) -> bool:
        """Whether the child has exited (it stays unreaped)."""
        if not self._exited:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # already reaped elsewhere
                info = True  # type: ignore[assignment]
            self._exited = info is not None
        return self._exited

    def close(self) -> None:
        """Close the pidfd, if one was opened."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
