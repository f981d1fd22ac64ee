"""A conformance harness for any credential provider plugin (``credprov plugin test``).

It runs the plugin exactly as the kubelet does (:class:`~credprov.credentialprovider.plugin.exec.ExecPlugin`)
and checks what the kubelet relies on. For every (image, apiVersion) pair:

* ``exit``: the plugin exits 0 (the kubelet's error text otherwise; every later check of the
  pair is then SKIP);
* ``deadline``: FAIL past the deadline (the kubelet kills it), WARN above
  :data:`SLOW_FRACTION` of it;
* ``apiVersion echoed``: the response's apiVersion is the request's;
* ``strict decode``: the response decodes as the kubelet's strict decoder would (decoded in
  the apiVersion the response declares, so a wrong echo and a strictness error are reported
  separately);
* ``cacheKeyType``: ``Image``, ``Registry`` or ``Global``;
* ``cacheDuration``: parses as a Go duration; WARN when absent (the kubelet then uses the
  provider's ``defaultCacheDuration``), zero or negative (the kubelet does not cache);
* ``auth matches image``: FAIL when keys exist but none matches the image (the kubelet would
  never use them), WARN when there are no credentials; ``auth key K`` for every key: FAIL when
  it does not parse as a match pattern, WARN when it does not match the image;
* ``secrets not in stderr``: FAIL when the request's service-account token or a returned
  password (at least :data:`MIN_LEAK_LENGTH` characters: shorter ones match by chance)
  appears on stderr, which the kubelet logs on failure;
* ``token not echoed`` (requests with a token): WARN when a password equals the token; the
  kubelet (1.34+) rejects that unless the provider's ``tokenAttributes.cacheType`` is
  ``Token``.

Service-account token: with ``service_account_token`` every v1 request carries it and the
annotations, as a kubelet with ``tokenAttributes`` would send them. Without one, plain
requests carry no token (as for a provider without ``tokenAttributes``), and one extra v1
request on the first image carries a dummy unsigned JWT and annotations: ``service-account
fields accepted`` is WARN, not FAIL, when the plugin rejects it (a plugin that really uses the
token may reject a fake one), ``token not in stderr`` FAILs when the dummy token is logged.

Negative cases, run once on the newest requested version with a shorter deadline
(:data:`NEGATIVE_TIMEOUT`, the kubelet never sends these so only a hang matters):
malformed stdin, closed stdin (no request at all), an empty image, an unknown apiVersion
(``credentialprovider.kubelet.k8s.io/v2``) and a wrong kind. Each gives ``<case>: rejected``
(PASS on a non-zero exit; FAIL on a hang; on exit 0, FAIL for malformed stdin, WARN
otherwise: answering the unknown apiVersion, even with that version, is a WARN since no
kubelet sends it), ``<case>: stderr``
(WARN when empty, as the kubelet's error would say only ``exit status N``, or when multi-line
or long, e.g. a traceback) and, when the request carried a canary token,
``<case>: no secret in stderr`` (FAIL when the canary appears).

A hung plugin is judged within one deadline: after the first run that overruns its deadline
(a positive case, the service-account probe or a negative case), every remaining run is not
made and is reported as one SKIP check (``exit``, ``service-account fields accepted`` or
``<case>: rejected``) whose detail names that first overrun.

There is no default image: a plugin answers for the registries it serves, so only the caller
knows an image it should answer for. Images are normalised as the kubelet does
(``nginx`` is sent as ``docker.io/library/nginx``).

Nothing here prints a password: every detail is passed through a redactor that knows the
``env`` values (each shown as ``<env NAME of provider P>``, ``P`` the binary's name), the
tokens sent and every password-like value found in the plugin's output (shown as
:data:`REDACTED`).

The report is the model ``credprov doctor`` shares (:mod:`credprov.base.report`): a
:class:`Check` is a finding about the plugin's runs, :class:`Report` a report of them, and
:func:`render_text` prints every name and detail through the same sanitiser, so an auth key
with a newline in a plugin's answer cannot add a line.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from credprov._go.decode import DecodeError
from credprov._go.durations import SECOND, DurationError, format_duration, parse_duration
from credprov.api import internal
from credprov.api.exec import api_version_of, interpret_response_gvk
from credprov.base import report as base
from credprov.base.redact import REDACTED, Redactor, env_label, shorten, terminal_safe
from credprov.base.report import Finding, Status, status_label, text
from credprov.credentialprovider.plugin.exec import (
    DEFAULT_PLUGIN_TIMEOUT,
    ExecPlugin,
    Launcher,
    PluginError,
)
from credprov.imageauth.images import parse_image_name
from credprov.imageauth.matching import explain_match, parse_schemeless_url, urls_match_str

__all__ = [
    "MIN_LEAK_LENGTH",
    "NEGATIVE_TIMEOUT",
    "REDACTED",
    "SLOW_FRACTION",
    "UNKNOWN_API_VERSION",
    "Check",
    "Redactor",
    "Report",
    "Status",
    "format_line",
    "normalize_api_version",
    "render_text",
    "run_conformance",
]

#: A run slower than this fraction of the deadline is a warning.
SLOW_FRACTION = 0.1

#: Deadline for the negative cases (capped by the caller's deadline).
NEGATIVE_TIMEOUT = 10 * SECOND

#: Passwords shorter than this are not searched for in stderr (false positives).
MIN_LEAK_LENGTH = 6

#: An apiVersion no kubelet sends (yet).
UNKNOWN_API_VERSION = f"{internal.EXEC_GROUP}/v2"

_MAX_DETAIL = 300
_MAX_STDERR_LINE = 512


@dataclass(frozen=True, init=False)
class Check(Finding):
    """One verdict about the plugin's runs: a :class:`~credprov.base.report.Finding` whose
    ``id`` is the check's :attr:`name` and ``message`` its :attr:`detail` (``subject`` and
    ``hint`` stay empty), with the run it looked at.

    ``version``/``image`` are ``None`` when the check is not about one (``image`` is ``""``
    for the empty-image case); ``duration`` is the seconds of the plugin run the check
    looked at. The constructor keeps the harness's positional order (name, status, detail,
    duration, version, image), so ``dataclasses.replace`` does not apply: use
    :meth:`scrubbed`.
    """

    duration: float | None = None
    version: str | None = None
    image: str | None = None

    def __init__(
        self,
        name: str,
        status: Status,
        detail: str = "",
        duration: float | None = None,
        version: str | None = None,
        image: str | None = None,
    ) -> None:
        super().__init__(name, status, "", detail)
        object.__setattr__(self, "duration", duration)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "image", image)

    @property
    def name(self) -> str:
        """The check's name (``exit``, ``cacheKeyType``, ``auth key K``, ...)."""
        return self.id

    @property
    def detail(self) -> str:
        """Why the verdict is what it is (redacted, one line, at most 300 characters)."""
        return self.message

    def scrubbed(self, scrub: Callable[[str], str]) -> Self:
        """This check with ``scrub`` applied to its detail."""
        return type(self)(
            self.name, self.status, scrub(self.detail), self.duration, self.version, self.image
        )

    def to_dict(self) -> dict[str, Any]:
        """The check as ``-o json`` prints it (``name``, ``detail``, ``apiVersion``, ...)."""
        return {
            "name": self.name,
            "status": str(self.status),
            "detail": self.detail,
            "apiVersion": self.version,
            "image": self.image,
            "durationSeconds": None if self.duration is None else round(self.duration, 4),
        }


@dataclass
class Report(base.Report[Check]):
    """What :func:`run_conformance` found: the run's inputs, every check in order and the
    whole run's wall time in seconds."""

    binary: str
    images: list[str]
    api_versions: list[str]
    timeout_ns: int
    checks: list[Check] = field(default_factory=list)
    duration: float = 0.0

    def summary(self) -> str:
        """The text's last line: the verdict, the counts and the time taken."""
        verdict = "PASS" if self.ok else "FAIL"
        return (
            f"{verdict}: {len(self.checks)} checks: {self.count(Status.PASS)} passed, "
            f"{self.count(Status.FAIL)} failed, {self.count(Status.WARN)} warnings, "
            f"{self.count(Status.SKIP)} skipped in {self.duration:.2f}s"
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as ``-o json`` prints it."""
        return {
            "binary": self.binary,
            "images": list(self.images),
            "apiVersions": list(self.api_versions),
            "timeout": format_duration(self.timeout_ns),
            "ok": self.ok,
            "counts": self.counts(),
            "durationSeconds": round(self.duration, 4),
            "checks": [c.to_dict() for c in self.checks],
        }


def format_line(check: Check) -> str:
    """``STATUS  <version> <image>  <check>: <detail>``; ``-`` for what does not apply.

    The name may quote the plugin's answer (``auth key K``) and the detail its output: both
    are printed through :func:`~credprov.base.report.text`, so the line stays one line.
    """
    version = "-" if check.version is None else check.version.rsplit("/", 1)[-1]
    # '""' marks the empty-image case, "-" a check that is not about an image.
    image = "-" if check.image is None else check.image or '""'
    detail = f": {text(check.detail)}" if check.detail else ""
    return (
        f"{status_label(check.status)}  {text(version)} {text(image)}  {text(check.name)}{detail}"
    )


def render_text(report: Report) -> str:
    """``plugin test``'s text output: one :func:`format_line` per check, the summary last."""
    return "".join(f"{format_line(c)}\n" for c in report.checks) + report.summary() + "\n"


def normalize_api_version(version: str) -> str:
    """``v1`` or ``credentialprovider.kubelet.k8s.io/v1`` → the full apiVersion.

    Raises:
        ValueError: not a version the kubelet speaks.
    """
    full = version if "/" in version else api_version_of(version)
    if full not in internal.EXEC_API_VERSIONS:
        known = ", ".join(internal.EXEC_VERSIONS)
        raise ValueError(f"unknown apiVersion {version!r} (known: {known})")
    return full


def run_conformance(
    binary: str,
    images: Sequence[str],
    api_versions: Sequence[str],
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout_ns: int = DEFAULT_PLUGIN_TIMEOUT,
    service_account_token: str | None = None,
    annotations: Mapping[str, str] | None = None,
    probes: bool = True,
    launcher: Launcher | None = None,
) -> Report:
    """Run every check against ``binary``; requests run one after the other.

    ``probes=False`` runs only the requests a kubelet sends (no service-account probe, no
    negative cases): one run per (image, apiVersion), as ``credprov doctor`` needs.

    ``api_versions`` empty means all three; ``env`` is appended to this process's
    environment as a provider's ``env`` is, unless ``launcher`` (see
    :class:`~credprov.credentialprovider.plugin.exec.Launcher`) starts the plugin its own way.

    Raises:
        ValueError: no image, an invalid image, an unknown apiVersion or a non-positive
            timeout (caller errors, not plugin failures).
    """
    if not images:
        raise ValueError("at least one image is required")
    if timeout_ns <= 0:
        raise ValueError("the timeout must be positive")
    repos: list[str] = []
    for image in images:
        try:
            repo = parse_image_name(image)
        except ValueError as exc:
            raise ValueError(f"invalid image {image!r}: {exc}") from None
        if repo not in repos:
            repos.append(repo)
    versions = _dedupe(normalize_api_version(v) for v in api_versions) or list(
        internal.EXEC_API_VERSIONS
    )

    ctx = _Context(
        binary=binary,
        args=list(args),
        env=[internal.ExecEnvVar(k, v) for k, v in (env or {}).items()],
        timeout_ns=timeout_ns,
        launcher=launcher,
    )
    for name, value in (env or {}).items():
        # Before the passwords it learns: a value that is both keeps its variable's name.
        ctx.redactor.add(value, env_label(name, ctx.name))
    token = service_account_token or ""
    if token:
        ctx.redactor.add(token)
    report = Report(binary=binary, images=repos, api_versions=versions, timeout_ns=timeout_ns)
    start = time.monotonic()
    for repo in repos:
        for version in versions:
            v1 = version.endswith("/v1")
            request = internal.CredentialProviderRequest(
                image=repo,
                service_account_token=token if v1 else "",
                service_account_annotations=dict(annotations or {}) if v1 else {},
            )
            report.checks.extend(_positive_checks(ctx, version, request))
    v1_version = api_version_of("v1")
    if probes and not token and v1_version in versions:
        report.checks.extend(_service_account_checks(ctx, repos[0], annotations))
    if probes:
        report.checks.extend(_negative_checks(ctx, _newest(versions), repos[0]))
    report.duration = time.monotonic() - start
    return report


# -- running -----------------------------------------------------------------------------------


@dataclass
class _Outcome:
    stdout: bytes
    stderr: bytes
    returncode: int | None  # None: the plugin did not start
    error: str | None  # the kubelet's execution error, unredacted
    timed_out: bool
    duration: float


class _ProbePlugin(ExecPlugin):
    """An ExecPlugin that can send raw stdin and keeps the raw outcome of its run.

    The kubelet's error text folds exit status and stderr together; the negative checks need
    them apart, so the pipes' result is captured where ExecPlugin collects it.
    """

    raw_stdin: bytes | None = None
    captured: tuple[bytes, bytes, str | None] | None = None
    proc: subprocess.Popen[bytes] | None = None

    def request_bytes(self, request: internal.CredentialProviderRequest) -> bytes:
        if self.raw_stdin is not None:
            return self.raw_stdin
        return super().request_bytes(request)

    def _communicate(
        self, proc: subprocess.Popen[bytes], stdin: bytes
    ) -> tuple[bytes, bytes, str | None]:
        result = super()._communicate(proc, stdin)
        self.captured = result
        self.proc = proc
        return result


@dataclass
class _Context:
    binary: str
    args: list[str]
    env: list[internal.ExecEnvVar]
    timeout_ns: int
    launcher: Launcher | None = None
    redactor: Redactor = field(default_factory=Redactor)
    # Values searched for in stderr: tokens sent and long enough passwords received.
    leak_values: dict[str, str] = field(default_factory=dict)
    # The first run that overran its deadline (a hung plugin): later runs are skipped.
    overrun: str | None = None

    @property
    def name(self) -> str:
        return self.binary.rstrip("/").rsplit("/", 1)[-1] or self.binary

    def plugin(self, api_version: str, timeout_ns: int | None = None) -> _ProbePlugin:
        return _ProbePlugin(
            self.name,
            self.binary,
            api_version,
            self.args,
            self.env,
            self.timeout_ns if timeout_ns is None else timeout_ns,
            launcher=self.launcher,
        )

    def execute(
        self,
        what: str,
        api_version: str,
        request: internal.CredentialProviderRequest,
        raw_stdin: bytes | None = None,
        timeout_ns: int | None = None,
    ) -> _Outcome:
        """Run the plugin once; ``what`` names the run if it is the first to overrun."""
        out = self._execute(api_version, request, raw_stdin, timeout_ns)
        deadline_ns = self.timeout_ns if timeout_ns is None else timeout_ns
        if self.overrun is None and (out.timed_out or out.duration > deadline_ns / 1e9):
            self.overrun = f"{what} overran the {format_duration(deadline_ns)} deadline"
        return out

    def skip_reason(self) -> str:
        """Why a run is not made: the first overrun (call only when there was one)."""
        return self.detail(f"not run: {self.overrun}; a hung plugin is judged within one deadline")

    def _execute(
        self,
        api_version: str,
        request: internal.CredentialProviderRequest,
        raw_stdin: bytes | None,
        timeout_ns: int | None,
    ) -> _Outcome:
        plugin = self.plugin(api_version, timeout_ns)
        plugin.raw_stdin = raw_stdin
        start = time.monotonic()
        error: str | None = None
        try:
            result = plugin.run(request)
        except PluginError as exc:
            error = str(exc)
        duration = time.monotonic() - start
        if error is None:
            return _Outcome(result.stdout, result.stderr, 0, None, False, result.duration)
        stdout, stderr, failure = plugin.captured or (b"", b"", None)
        returncode = plugin.proc.returncode if plugin.proc is not None else None
        timed_out = failure == "context deadline exceeded"
        return _Outcome(stdout, stderr, returncode, error, timed_out, duration)

    def detail(self, text: str) -> str:
        return _clip(self.redactor(terminal_safe(text)))

    def learn(self, stdout: bytes) -> None:
        """Remember every password-like value of a response, even one that does not decode."""
        data = _lenient_json(stdout)
        if not isinstance(data, dict):
            return
        for key, value in data.items():
            if isinstance(key, str) and key.lower() == "auth":
                for secret in _auth_strings(value):
                    self.redactor.add(secret)
                    if len(secret) >= MIN_LEAK_LENGTH:
                        self.leak_values[secret] = "a password"


def _auth_strings(value: Any, under_username: bool = False) -> Iterable[str]:
    # Strings under ``auth`` (not its keys, which are registries); usernames are not secret
    # and redacting them would only make details harder to read.
    if isinstance(value, str):
        if not under_username:
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _auth_strings(v, isinstance(k, str) and k.lower() == "username")
    elif isinstance(value, list):
        for item in value:
            yield from _auth_strings(item)


# -- the positive checks -----------------------------------------------------------------------

_AFTER_EXIT = (
    "apiVersion echoed",
    "strict decode",
    "cacheKeyType",
    "cacheDuration",
    "auth matches image",
)


def _positive_checks(
    ctx: _Context, version: str, request: internal.CredentialProviderRequest
) -> list[Check]:
    if ctx.overrun is not None:
        return [Check("exit", Status.SKIP, ctx.skip_reason(), None, version, request.image)]
    short = version.rsplit("/", 1)[-1]
    out = ctx.execute(f"the {short} request for {request.image}", version, request)
    checks: list[Check] = []

    def add(name: str, status: Status, detail: str = "") -> None:
        checks.append(Check(name, status, ctx.detail(detail), out.duration, version, request.image))

    add("exit", *_exit_verdict(out))
    add("deadline", *_deadline_verdict(out, ctx.timeout_ns))
    token = request.service_account_token
    if out.error is not None:
        for name in _AFTER_EXIT:
            add(name, Status.SKIP, "the plugin failed")
        add("secrets not in stderr", *_leak_verdict(ctx, out.stderr, token))
        return checks
    ctx.learn(out.stdout)

    try:
        actual: str | None = interpret_response_gvk(out.stdout)
    except DecodeError as exc:
        actual = None
        add("apiVersion echoed", Status.FAIL, f"cannot read the apiVersion: {exc}")
    else:
        if actual == version:
            add("apiVersion echoed", Status.PASS, version)
        else:
            add(
                "apiVersion echoed",
                Status.FAIL,
                f"response apiVersion {actual!r}, request {version!r}: the kubelet rejects "
                "the response",
            )

    # Decode in the version the response declares, so that strictness is judged on its own.
    decode_as = actual if actual in internal.EXEC_API_VERSIONS else version
    response: internal.CredentialProviderResponse | None = None
    try:
        response = ctx.plugin(decode_as).decode(out.stdout)
    except PluginError as exc:
        add("strict decode", Status.FAIL, f"{exc}: {exc.detail}" if exc.detail else str(exc))
    else:
        note = "" if decode_as == version else f" (as {decode_as}, the version it declares)"
        add("strict decode", Status.PASS, f"decodes strictly{note}")

    raw = _lenient_json(out.stdout)
    add("cacheKeyType", *_cache_key_type_verdict(response, raw))
    add("cacheDuration", *_cache_duration_verdict(response, raw))
    if response is None:
        add("auth matches image", Status.SKIP, "the response does not decode")
    else:
        for key in sorted(response.auth):
            add(f"auth key {key}", *_auth_key_verdict(key, request.image))
        add("auth matches image", *_auth_match_verdict(response, request.image))
    add("secrets not in stderr", *_leak_verdict(ctx, out.stderr, token))
    if token and response is not None:
        add("token not echoed", *_echo_verdict(response, token))
    return checks


def _exit_verdict(out: _Outcome) -> tuple[Status, str]:
    if out.error is None:
        return Status.PASS, "exit status 0"
    return Status.FAIL, out.error


def _deadline_verdict(out: _Outcome, timeout_ns: int) -> tuple[Status, str]:
    deadline = timeout_ns / 1e9
    took = f"{out.duration * 1000:.0f}ms of the {format_duration(timeout_ns)} deadline"
    if out.timed_out or out.duration > deadline:
        return Status.FAIL, f"killed at the {format_duration(timeout_ns)} deadline"
    if out.duration > deadline * SLOW_FRACTION:
        return Status.WARN, f"slow: {took}"
    return Status.PASS, took


def _cache_key_type_verdict(
    response: internal.CredentialProviderResponse | None, raw: Any
) -> tuple[Status, str]:
    if response is not None:
        value: Any = response.cache_key_type
    elif isinstance(raw, dict):
        value = raw.get("cacheKeyType", "")
    else:
        return Status.SKIP, "the response is not a JSON object"
    if value in internal.CACHE_KEY_TYPES:
        return Status.PASS, str(value)
    valid = ", ".join(internal.CACHE_KEY_TYPES)
    return (
        Status.FAIL,
        f"{json.dumps(value)} is not one of {valid}: the kubelet ignores the response",
    )


def _cache_duration_verdict(
    response: internal.CredentialProviderResponse | None, raw: Any
) -> tuple[Status, str]:
    if response is not None:
        ns = response.cache_duration
    elif isinstance(raw, dict):
        # The response did not decode; say whether the duration is one of the reasons.
        if raw.get("cacheDuration") is None:
            ns = None
        elif not isinstance(raw["cacheDuration"], str):
            return Status.FAIL, f"not a string: {type(raw['cacheDuration']).__name__}"
        else:
            try:
                ns = parse_duration(raw["cacheDuration"])
            except DurationError as exc:
                return Status.FAIL, str(exc)
    else:
        return Status.SKIP, "the response is not a JSON object"
    if ns is None:
        return Status.WARN, "absent: the kubelet uses the provider's defaultCacheDuration"
    if ns == 0:
        return Status.WARN, "0s: the kubelet does not cache, and runs the plugin on every pull"
    if ns < 0:
        return Status.WARN, f"{format_duration(ns)}: negative, the kubelet does not cache"
    return Status.PASS, format_duration(ns)


def _auth_key_verdict(key: str, image: str) -> tuple[Status, str]:
    try:
        parse_schemeless_url(key)
    except ValueError as exc:
        return Status.FAIL, f"not a valid match pattern, the kubelet drops it: {exc}"
    if urls_match_str(key, image):
        return Status.PASS, "matches the image"
    return Status.WARN, f"does not match the image: {explain_match(key, image).reason}"


def _auth_match_verdict(
    response: internal.CredentialProviderResponse, image: str
) -> tuple[Status, str]:
    keys = list(response.auth)
    if not keys:
        return Status.WARN, "no credentials: the kubelet caches the empty result"
    matching = [k for k in keys if urls_match_str(k, image)]
    if not matching:
        return (
            Status.FAIL,
            f"none of the {len(keys)} auth keys matches the image: the kubelet never uses them",
        )
    return Status.PASS, f"{len(matching)} of {len(keys)} auth keys match"


def _leak_verdict(ctx: _Context, stderr: bytes, token: str = "") -> tuple[Status, str]:
    text = stderr.decode("utf-8", "replace")
    found = sorted(
        {what for value, what in ctx.leak_values.items() if value in text}
        | ({"the service-account token"} if token and token in text else set())
    )
    if found:
        return Status.FAIL, f"stderr contains {' and '.join(found)} ({REDACTED} here)"
    return Status.PASS, "no known secret on stderr" if text.strip() else "stderr empty"


def _echo_verdict(response: internal.CredentialProviderResponse, token: str) -> tuple[Status, str]:
    echoed = sorted(k for k, a in response.auth.items() if a.password == token)
    if echoed:
        return (
            Status.WARN,
            f"the password of {', '.join(echoed)} is the service-account token: the kubelet "
            "rejects it unless tokenAttributes.cacheType is Token",
        )
    return Status.PASS, "no password is the service-account token"


# -- service-account fields --------------------------------------------------------------------


def _dummy_token(marker: str) -> str:
    """An unsigned JWT-shaped token carrying ``marker`` (as its signature) to spot leaks."""

    def b64(obj: dict[str, Any]) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    header = b64({"alg": "none", "typ": "JWT"})
    payload = b64(
        {
            "iss": "credprov-conformance",
            "sub": "system:serviceaccount:default:credprov-conformance",
            "aud": ["credprov-conformance"],
            "exp": int(time.time()) + 3600,
        }
    )
    return f"{header}.{payload}.{marker}"


def _service_account_checks(
    ctx: _Context, image: str, annotations: Mapping[str, str] | None
) -> list[Check]:
    version = api_version_of("v1")
    if ctx.overrun is not None:
        name = "service-account fields accepted"
        return [Check(name, Status.SKIP, ctx.skip_reason(), None, version, image)]
    marker = secrets.token_hex(16)
    token = _dummy_token(marker)
    ctx.redactor.add(token)
    ctx.redactor.add(marker)
    request = internal.CredentialProviderRequest(
        image=image,
        service_account_token=token,
        service_account_annotations=dict(annotations or {"credprov.io/conformance": "probe"}),
    )
    out = ctx.execute(f"the v1 request with a token for {image}", version, request)
    checks: list[Check] = []

    def add(name: str, status: Status, detail: str = "") -> None:
        checks.append(Check(name, status, ctx.detail(detail), out.duration, version, image))

    response: internal.CredentialProviderResponse | None = None
    if out.error is not None:
        verdict = (Status.WARN, f"rejected a request with a (dummy) token: {out.error}")
    else:
        ctx.learn(out.stdout)
        try:
            response = ctx.plugin(version).decode(out.stdout)
        except PluginError as exc:
            reason = f"{exc}: {exc.detail}" if exc.detail else str(exc)
            verdict = (Status.WARN, f"the response to a request with a token: {reason}")
        else:
            verdict = (Status.PASS, "serviceAccountToken and serviceAccountAnnotations accepted")
    add("service-account fields accepted", *verdict)
    stderr = out.stderr.decode("utf-8", "replace")
    if marker in stderr:
        add("token not in stderr", Status.FAIL, f"stderr contains the token ({REDACTED} here)")
    else:
        add("token not in stderr", Status.PASS, "the token is not on stderr")
    if response is not None:
        add("token not echoed", *_echo_verdict(response, token))
    return checks


# -- negative cases ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Case:
    name: str
    version: str | None
    image: str | None
    stdin: bytes
    canary: str | None  # the marker to look for in stderr
    on_exit_zero: Status


def _negative_cases(version: str, image: str) -> list[_Case]:
    v1 = version.endswith("/v1")

    def canary() -> tuple[str, str]:
        marker = secrets.token_hex(16)
        return marker, _dummy_token(marker)

    def request(kind: str, api_version: str, img: str, token: str | None) -> bytes:
        body: dict[str, Any] = {"kind": kind, "apiVersion": api_version, "image": img}
        if token is not None:
            body["serviceAccountToken"] = token
        return (json.dumps(body, separators=(",", ":")) + "\n").encode()

    cases: list[_Case] = []
    marker, token = canary()
    cases.append(
        _Case(
            "malformed stdin",
            None,
            None,
            b'{not json "serviceAccountToken":"' + token.encode() + b'"\n',
            marker,
            Status.FAIL,
        )
    )
    cases.append(_Case("closed stdin", None, None, b"", None, Status.WARN))
    marker, token = canary()
    cases.append(
        _Case(
            "empty image",
            version,
            "",
            request(internal.REQUEST_KIND, version, "", token if v1 else None),
            marker if v1 else None,
            Status.WARN,
        )
    )
    marker, token = canary()
    cases.append(
        _Case(
            "unknown apiVersion",
            UNKNOWN_API_VERSION,
            image,
            request(internal.REQUEST_KIND, UNKNOWN_API_VERSION, image, token),
            marker,
            Status.WARN,
        )
    )
    marker, token = canary()
    cases.append(
        _Case(
            "wrong kind",
            version,
            image,
            request(internal.RESPONSE_KIND, version, image, token if v1 else None),
            marker if v1 else None,
            Status.WARN,
        )
    )
    return cases


def _negative_checks(ctx: _Context, version: str, image: str) -> list[Check]:
    checks: list[Check] = []
    timeout_ns = min(ctx.timeout_ns, NEGATIVE_TIMEOUT)
    for case in _negative_cases(version, image):
        if ctx.overrun is not None:
            checks.append(
                Check(
                    f"{case.name}: rejected",
                    Status.SKIP,
                    ctx.skip_reason(),
                    None,
                    case.version,
                    case.image,
                )
            )
            continue
        if case.canary is not None:
            ctx.redactor.add(case.canary)
        # The probe's own apiVersion only matters for decoding, which is not used here.
        out = ctx.execute(
            f"the {case.name} case",
            case.version if case.version in internal.EXEC_API_VERSIONS else version,
            internal.CredentialProviderRequest(image=case.image or ""),
            raw_stdin=case.stdin,
            timeout_ns=timeout_ns,
        )
        checks.extend(_case_checks(ctx, case, out, timeout_ns))
    return checks


def _case_checks(ctx: _Context, case: _Case, out: _Outcome, timeout_ns: int) -> list[Check]:
    checks: list[Check] = []

    def add(name: str, status: Status, detail: str) -> None:
        checks.append(
            Check(
                f"{case.name}: {name}",
                status,
                ctx.detail(detail),
                out.duration,
                case.version,
                case.image,
            )
        )

    add("rejected", *_rejected_verdict(case, out, timeout_ns))
    if out.returncode not in (None, 0) and not out.timed_out:
        add("stderr", *_stderr_verdict(out.stderr))
    if case.canary is not None:
        if case.canary in out.stderr.decode("utf-8", "replace"):
            add(
                "no secret in stderr",
                Status.FAIL,
                f"stderr contains the request's token ({REDACTED} here): the kubelet logs it",
            )
        else:
            add("no secret in stderr", Status.PASS, "the request's token is not on stderr")
    return checks


def _rejected_verdict(case: _Case, out: _Outcome, timeout_ns: int) -> tuple[Status, str]:
    if out.timed_out:
        return Status.FAIL, f"hangs: killed after {format_duration(timeout_ns)}"
    if out.returncode is None:
        return Status.FAIL, out.error or "the plugin did not start"
    if out.returncode != 0:
        how = (
            f"killed by signal {-out.returncode}"
            if out.returncode < 0
            else f"exit status {out.returncode}"
        )
        return Status.PASS, f"{how} after {out.duration * 1000:.0f}ms"
    if case.version == UNKNOWN_API_VERSION:
        with contextlib.suppress(DecodeError):
            if interpret_response_gvk(out.stdout) == UNKNOWN_API_VERSION:
                # No kubelet sends it, so nothing is misused: a warning, not a failure.
                return (
                    Status.WARN,
                    f"answered {UNKNOWN_API_VERSION} with that version: it does not check "
                    "the request's apiVersion (no kubelet sends it)",
                )
    return case.on_exit_zero, "exit status 0: the plugin should reject this request"


def _stderr_verdict(stderr: bytes) -> tuple[Status, str]:
    text = stderr.decode("utf-8", "replace").strip()
    if not text:
        return Status.WARN, "empty: the kubelet's error would say only the exit status"
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        # The last line of a traceback is the one that says what went wrong.
        return (
            Status.WARN,
            f"{len(lines)} lines (one short line reads best in the kubelet's log), the last: "
            f"{lines[-1].strip()}",
        )
    if len(text) > _MAX_STDERR_LINE:
        return Status.WARN, f"{len(text)} characters (keep it short): {text}"
    return Status.PASS, text


# -- helpers -----------------------------------------------------------------------------------


def _newest(versions: Sequence[str]) -> str:
    return max(versions, key=internal.EXEC_API_VERSIONS.index)


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _lenient_json(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None


def _clip(text: str) -> str:
    return shorten(text, _MAX_DETAIL)
