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

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from credprov._go.decode import DecodeError, load_document
from credprov._go.durations import MINUTE
from credprov.api import internal
from credprov.api.exec import decode_response, encode_request, interpret_response_gvk
from credprov.base.proc import run_bounded
from credprov.base.redact import Redactor, env_label, terminal_safe
from credprov.credentialprovider.plugin.metrics import Metrics
from credprov.errors import CredentialProviderError

log = logging.getLogger("credprov.plugin")

#: The kubelet's hard-coded plugin deadline.
DEFAULT_PLUGIN_TIMEOUT = 1 * MINUTE

#: Plugin output past these sizes is an error (the kubelet reads without a bound).
MAX_STDOUT_BYTES = 16 * 1024 * 1024
MAX_STDERR_BYTES = 64 * 1024


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
            # Anything the plugin left behind dies with its process group.
            stdout, stderr, failure = self._communicate(proc, stdin)
        finally:
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
        """Feed stdin, read stdout/stderr and wait for the plugin to exit, bounded by the
        deadline and the caps (:func:`credprov.base.proc.run_bounded`: success needs both
        end-of-output and the exit, as the kubelet's ``cmd.Run`` under a context).

        Returns:
            ``(stdout, stderr, failure)``; ``failure`` is the kubelet-style reason or None.
            On return the plugin's process group has been killed and the plugin reaped.
        """
        outcome = run_bounded(
            proc,
            stdin,
            self.timeout_ns / 1e9,
            max_stdout=self.max_stdout,
            max_stderr=self.max_stderr,
            log=log,
            label=f"plugin {self.name}",
        )
        failure = None
        if outcome.timed_out:
            failure = "context deadline exceeded"
        elif outcome.overflow is not None:
            failure = f"stdout exceeded {self.max_stdout} bytes"
        return outcome.stdout, outcome.stderr, failure

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


def _status_text(returncode: int | None) -> str:
    """Go's ``os.ProcessState.String()``: ``exit status 1``, ``signal: killed``."""
    if returncode is None:
        return "running"
    if returncode < 0:
        return f"signal: {_signal_name(-returncode)}"
    return f"exit status {returncode}"


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
