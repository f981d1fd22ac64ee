"""Running one credential provider plugin binary, exactly as the kubelet's ``execPlugin``.

Mirrors ``ExecPlugin``/``runPlugin`` in ``pkg/credentialprovider/plugin/plugin.go``:
``<bin-dir>/<name> <args...>``, the host environment with the config's ``env`` appended (so
config values win), the request on stdin as the kubelet encodes it, a deadline (one minute),
stderr appended to execution errors, the response apiVersion checked against the config, and
every decode failure reported by one generic message because the output may hold secrets.

Better than upstream: the plugin runs in its own process group and the whole group is killed
on timeout, and stdout/stderr reads are bounded so a runaway plugin cannot exhaust memory.

A :class:`Launcher` may change how the process is started (argv, environment, working
directory, a set-up step in the child between fork and exec): ``credprov doctor`` uses one to
run a node image's plugin confined inside that image. The kubelet's path has none and is
unchanged by it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol

from credprov._go.decode import DecodeError, load_document
from credprov._go.durations import MINUTE
from credprov.api import internal
from credprov.api.exec import decode_response, encode_request, interpret_response_gvk
from credprov.base.redact import Redactor, env_label, terminal_safe
from credprov.credentialprovider.plugin.metrics import Metrics
from credprov.errors import CredentialProviderError

log = logging.getLogger("credprov.plugin")

#: The kubelet's hard-coded plugin deadline.
DEFAULT_PLUGIN_TIMEOUT = 1 * MINUTE

#: Plugin output past these sizes is an error (the kubelet reads without a bound).
MAX_STDOUT_BYTES = 16 * 1024 * 1024
MAX_STDERR_BYTES = 64 * 1024

#: How long to wait for the pipes to close after the plugin itself exited (a grandchild
#: may still hold them) before killing its process group.
_PIPE_GRACE_SECONDS = 1.0

#: Where pidfds are unavailable (Linux < 5.3), how often to check whether the plugin exited.
_EXIT_POLL_SECONDS = 0.005


class PluginError(CredentialProviderError):
    """A plugin execution or response error; ``str()`` is the kubelet's text.

    ``detail`` may hold more (a decode reason) and can quote plugin output: it is for
    conformance tooling, never for logs.
    """

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


@dataclass
class ExecResult:
    """One plugin run: what it printed, and how long it took."""

    stdout: bytes
    stderr: bytes
    duration: float  # seconds


@dataclass(frozen=True)
class Launch:
    """What to start for one plugin run when a :class:`Launcher` decides it.

    ``argv`` and ``env`` replace the kubelet's command line and environment; ``cwd`` is the
    child's working directory (None: this process's); ``preexec_fn`` runs in the child
    between fork and exec (after ``setsid``), as :class:`subprocess.Popen`'s.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    preexec_fn: Callable[[], None] | None = None


class Launcher(Protocol):
    """Decides how a plugin process is started instead of the kubelet's way."""

    def launch(self, argv: Sequence[str], env: Sequence[internal.ExecEnvVar]) -> Launch:
        """What to start for the kubelet's ``argv`` (``<bin-dir>/<name> <args...>``) and the
        provider's ``env`` (in config order)."""
        ...


class ExecPlugin:
    """One provider's binary, arguments and environment.

    ``launcher`` (None for the kubelet's way) decides the command line, environment, working
    directory and child set-up of every run; everything else (stdin, deadline, bounded
    output, process-group kill, error texts) is the same.
    """

    def __init__(
        self,
        name: str,
        path: str,
        api_version: str,
        args: Sequence[str] = (),
        env: Sequence[internal.ExecEnvVar] = (),
        timeout_ns: int = DEFAULT_PLUGIN_TIMEOUT,
        metrics: Metrics | None = None,
        base_environ: Mapping[str, str] | None = None,
        max_stdout: int = MAX_STDOUT_BYTES,
        max_stderr: int = MAX_STDERR_BYTES,
        launcher: Launcher | None = None,
    ) -> None:
        self.name = name
        self.path = path
        self.api_version = api_version
        self.args = list(args)
        self.env = list(env)
        self.timeout_ns = timeout_ns
        self.metrics = metrics
        self.base_environ = base_environ
        self.max_stdout = max_stdout
        self.max_stderr = max_stderr
        self.launcher = launcher

    def environment(self) -> dict[str, str]:
        """The plugin's environment: the base (this process's unless given) with the
        config's ``env`` applied over it, as the kubelet builds it.
        """
        environ = dict(os.environ if self.base_environ is None else self.base_environ)
        for var in self.env:
            environ[var.name] = var.value
        return environ

    def request_bytes(self, request: internal.CredentialProviderRequest) -> bytes:
        """``request`` encoded as the kubelet writes it to the plugin's stdin."""
        return encode_request(request, self.api_version)

    def run(self, request: internal.CredentialProviderRequest) -> ExecResult:
        """Execute the plugin; returns its raw output.

        Raises:
            PluginError: start failure, non-zero exit, timeout or oversized output, with
                the plugin's stderr appended as the kubelet does (on one line, control
                characters escaped, the service-account token and the config's ``env``
                values scrubbed).
        """
        stdin = self.request_bytes(request)
        image = request.image
        prefix = f"error execing credential provider plugin {self.name} for image {image}"
        start = time.monotonic()
        log.info("running plugin %s for image %s", self.name, image)
        if self.launcher is None:
            launch = Launch([self.path, *self.args], self.environment())
        else:
            launch = self.launcher.launch([self.path, *self.args], self.env)
        try:
            proc = subprocess.Popen(
                launch.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=launch.env,
                cwd=launch.cwd,
                preexec_fn=launch.preexec_fn,
                start_new_session=True,  # its own process group, killed as a whole
                close_fds=True,
            )
        except OSError as exc:
            self._observe(start)
            self._count_error()
            reason = f"fork/exec {self.path}: {_errno_text(exc)}"
            raise PluginError(f"{prefix}: {reason}: ") from None
        try:
            stdout, stderr, failure = self._communicate(proc, stdin)
        finally:
            # The leader has exited (or was killed) but is not reaped yet, so its process
            # group id still names this group: anything the plugin left behind dies with it.
            _kill_group(proc)
            proc.wait()
            self._observe(start)
        duration = time.monotonic() - start
        log.info(
            "plugin %s for image %s finished in %.1f ms (%s)",
            self.name,
            image,
            duration * 1000,
            failure or _status_text(proc.returncode),
        )
        if failure is None and proc.returncode == 0:
            return ExecResult(stdout=stdout, stderr=stderr, duration=duration)
        self._count_error()
        stderr_text = self.stderr_text(stderr, request)
        if failure is not None:
            raise PluginError(f"{prefix}: {failure}: {stderr_text}")
        raise PluginError(f"{prefix}: {_status_text(proc.returncode)}: {stderr_text}")

    def stderr_text(self, stderr: bytes, request: internal.CredentialProviderRequest) -> str:
        """The plugin's stderr as it may be shown: one line, no control characters, and
        neither the pod's service-account token nor the config's ``env`` values in it.

        Beyond the kubelet, which appends stderr verbatim: a plugin that echoes its stdin
        or environment on failure must not put secrets or terminal escapes into logs. An
        ``env`` value is replaced by a label naming its variable (``open <env
        AWS_CONFIG_FILE of provider ecr>: no such file``), the token by ``<redacted>``.
        """
        scrub = Redactor([request.service_account_token])
        for var in self.env:
            scrub.add(var.value, env_label(var.name, self.name))
        return terminal_safe(scrub(stderr.decode("utf-8", "replace")))

    def _communicate(
        self, proc: subprocess.Popen[bytes], stdin: bytes
    ) -> tuple[bytes, bytes, str | None]:
        """Feed stdin, read stdout/stderr and wait for the plugin to exit.

        As the kubelet (``cmd.Run`` under a context), success needs both end-of-output and
        the process's exit; a plugin that closes its pipes and then takes a while to exit is
        waited for. The process group is killed only at the deadline or when output exceeds
        the caps. A plugin that exited while something it started still holds the pipes is
        given :data:`_PIPE_GRACE_SECONDS`, then the group is killed.

        Returns:
            ``(stdout, stderr, failure)``; ``failure`` is the kubelet-style reason or None.
            On return the process has exited (or been killed) but is not yet reaped.
        """
        deadline = time.monotonic() + self.timeout_ns / 1e9
        pipes = _Pipes(proc, stdin, self.max_stdout, self.max_stderr)
        exit_watch = _ExitWatch(proc)
        sel = selectors.DefaultSelector()
        try:
            pipes.register(sel)
            if exit_watch.fd is not None:
                sel.register(exit_watch.fd, selectors.EVENT_READ)
            exited_at: float | None = None
            waiting_logged = False
            while pipes.failure is None:
                now = time.monotonic()
                if exited_at is None and exit_watch.exited():
                    exited_at = now
                    if exit_watch.fd is not None:
                        sel.unregister(exit_watch.fd)
                if self._done(proc, pipes, now, deadline, exited_at):
                    break
                if pipes.open == 0 and not waiting_logged:
                    log.debug(
                        "plugin %s (pid %d) closed its output; waiting for it to exit",
                        self.name,
                        proc.pid,
                    )
                    waiting_logged = True
                wait = deadline - now
                if exited_at is not None:
                    wait = min(wait, exited_at + _PIPE_GRACE_SECONDS - now)
                elif exit_watch.fd is None:
                    wait = min(wait, _EXIT_POLL_SECONDS)
                for key, _ in sel.select(timeout=max(wait, 0.0)):
                    if not isinstance(key.fileobj, int):  # the pidfd: seen at the loop's top
                        pipes.ready(sel, key.fileobj)
                    if pipes.failure is not None:
                        break
        finally:
            sel.close()
            exit_watch.close()
            pipes.close()
        if pipes.failure is not None:
            _kill_group(proc)
        return bytes(pipes.out), bytes(pipes.err), pipes.failure

    def _done(
        self,
        proc: subprocess.Popen[bytes],
        pipes: _Pipes,
        now: float,
        deadline: float,
        exited_at: float | None,
    ) -> bool:
        """Whether to stop waiting: the plugin exited with its output closed, the deadline
        passed (``pipes.failure`` says so), or its pipes outlived it by the grace period."""
        if exited_at is not None and pipes.open == 0:
            return True
        if now >= deadline:
            pipes.failure = "context deadline exceeded"
            log.debug("plugin %s (pid %d) passed its deadline", self.name, proc.pid)
            return True
        if exited_at is not None and now - exited_at > _PIPE_GRACE_SECONDS:
            log.debug(
                "plugin %s (pid %d) exited but its pipes are still open after %.1fs; stopping",
                self.name,
                proc.pid,
                _PIPE_GRACE_SECONDS,
            )
            return True  # a grandchild holds the pipes; stop waiting for it
        return False

    def _observe(self, start: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_duration(self.name, time.monotonic() - start)

    def _count_error(self) -> None:
        if self.metrics is not None:
            self.metrics.count_error(self.name)

    def exec(
        self, request: internal.CredentialProviderRequest
    ) -> internal.CredentialProviderResponse:
        """Run the plugin and decode its response as the kubelet does.

        Raises:
            PluginError: execution errors (with stderr) or response errors.
        """
        result = self.run(request)
        return self.decode(result.stdout)

    def decode(self, stdout: bytes) -> internal.CredentialProviderResponse:
        """Check and strictly decode a response.

        Raises:
            PluginError: ``error reading GVK from response: ...``, the apiVersion mismatch,
                or the generic decode message (with the reason in ``detail``).
        """
        try:
            api_version = interpret_response_gvk(stdout)
        except DecodeError as exc:
            raise PluginError(f"error reading GVK from response: {exc}") from None
        if api_version != self.api_version:
            raise PluginError(
                "apiVersion from credential plugin response did not match expected "
                f"apiVersion:{self.api_version}, actual apiVersion:{api_version}"
            )
        try:
            return decode_response(load_document(stdout))
        except DecodeError as exc:
            raise PluginError(
                "error decoding credential provider plugin response from stdout", detail=str(exc)
            ) from None


class _Pipes:
    """A running plugin's three pipes: the request still to write, the output read so far
    (stdout up to its cap, stderr truncated at its cap), and how many are still open."""

    def __init__(
        self, proc: subprocess.Popen[bytes], stdin: bytes, max_stdout: int, max_stderr: int
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr
        self.pending = memoryview(stdin)
        self.out = bytearray()
        self.err = bytearray()
        self.max_stdout = max_stdout
        self.max_stderr = max_stderr
        self.open = 0
        self.failure: str | None = None

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
        """Write to or read from the pipe ``sel`` found ready; sets :attr:`failure` when
        stdout passes its cap."""
        if pipe is self.stdin:
            try:
                written = os.write(self.stdin.fileno(), self.pending[:65536])
            except OSError:  # the plugin does not read its stdin: fine
                written = len(self.pending)
            self.pending = self.pending[written:]
            if not self.pending:
                self._closed(sel, self.stdin)
                with contextlib.suppress(OSError):
                    self.stdin.close()
            return
        reader = self.stdout if pipe is self.stdout else self.stderr
        chunk = os.read(reader.fileno(), 65536)
        if not chunk:
            self._closed(sel, reader)
        elif reader is self.stdout:
            self.out += chunk
            if len(self.out) > self.max_stdout:
                self.failure = f"stdout exceeded {self.max_stdout} bytes"
        else:
            room = self.max_stderr - len(self.err)
            if room > 0:
                self.err += chunk[:room]

    def _closed(self, sel: selectors.BaseSelector, pipe: IO[bytes]) -> None:
        sel.unregister(pipe)
        self.open -= 1

    def close(self) -> None:
        """Close all three (whatever the plugin left behind gets EOF or EPIPE)."""
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
        if not self._exited:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # already reaped elsewhere
                info = True  # type: ignore[assignment]
            self._exited = info is not None
        return self._exited

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _status_text(returncode: int | None) -> str:
    """Go's ``os.ProcessState.String()``: ``exit status 1``, ``signal: killed``."""
    if returncode is None:
        return "running"
    if returncode < 0:
        return f"signal: {_signal_name(-returncode)}"
    return f"exit status {returncode}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def _errno_text(exc: OSError) -> str:
    from credprov._go.fmt import errno_text

    return errno_text(exc)


def _signal_name(signum: int) -> str:
    # Go's os.ProcessState.String() spells signals like "killed", "terminated".
    names = {
        signal.SIGKILL: "killed",
        signal.SIGTERM: "terminated",
        signal.SIGINT: "interrupt",
        signal.SIGSEGV: "segmentation fault",
        signal.SIGABRT: "aborted",
        signal.SIGPIPE: "broken pipe",
    }
    try:
        return names.get(signal.Signals(signum), signal.Signals(signum).name)
    except ValueError:
        return f"signal {signum}"
