"""Running a plugin: arguments, the warm path, the handler, the answer and the exit code.

``run()`` is a plugin's whole ``main``. In order: parse the arguments the provider config
passed (``--version``, ``-v N``/``--v=N`` and the plugin's own options), read and strictly
decode the request, answer from the persistent cache if a valid entry exists — before the
handler's module is even imported — else import and call the handler, encode its answer
in the request's apiVersion, cache it, and exit 0. Errors print one line on stderr that
never quotes the token or a password.

Exit codes: 0 answered; 1 bad request or the handler raised :class:`ProviderError`;
2 bad arguments; 3 unexpected exception (only its type is printed).

Telemetry (opt-in: ``$CREDPROV_METRICS_FILE`` or ``--metrics-file``): after the answer is
written, :mod:`credprov.sdk.telemetry` adds what the run did to a node_exporter textfile;
off, that module is not imported.
"""

from __future__ import annotations

import sys
import time

from credprov.errors import PluginSDKError
from credprov.sdk import flags
from credprov.sdk._errors import ProviderError, UsageError
from credprov.sdk._wire import CACHE_KEY_TYPES, Request, RequestError, encode_response
from credprov.sdk.flags import VERBOSITY, FlagError, Option

# typing costs ~10 ms of start-up (re, enum, contextlib) on a plugin's warm path; the
# annotations need it only for type checkers (mypy reads this name as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from credprov.sdk._cache import ResponseCache

    Handler = Callable[["Request", "Context"], "Response"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

#: The environment variable that turns telemetry on: the metrics file's path
#: (:mod:`credprov.sdk.telemetry`).
METRICS_FILE_ENV = "CREDPROV_METRICS_FILE"


class Response:
    """A handler's answer.

    Args:
        auth: registry pattern → ``(username, password)`` (or an object with ``username``
            and ``password``, or a mapping with those keys).
        cache_key_type: ``Image``, ``Registry`` (default) or ``Global``.
        cache_duration: seconds (int/float), a Go duration string (``"12h"``), or None to
            let the kubelet apply the provider's ``defaultCacheDuration``. ``0`` means "do not
            cache". Only answers with a positive duration are kept in the plugin cache.
        expires_at: when the credentials themselves expire (Unix seconds), where the
            handler knows it (a registry token's expiry); reported by telemetry only
            (``credprov_plugin_credentials_expiry_timestamp_seconds``), never sent.
    """

    __slots__ = ("auth", "cache_duration", "cache_key_type", "expires_at")

    def __init__(
        self,
        auth: Mapping[str, Any] | None = None,
        cache_key_type: str = "Registry",
        cache_duration: float | str | None = None,
        expires_at: float | None = None,
    ) -> None:
        self.auth = dict(auth or {})
        self.cache_key_type = cache_key_type
        self.cache_duration = cache_duration
        self.expires_at = expires_at


class Context:
    """What a handler gets besides the request: options, verbosity and a logger."""

    def __init__(
        self, name: str, options: dict[str, Any], verbosity: int, stream: Any = None
    ) -> None:
        self.name = name
        self.options = options
        self.verbosity = verbosity
        self._stream = stream

    def log(self, level: int, message: str) -> None:
        """Print ``message`` on stderr when ``-v`` is at least ``level``. Never log secrets."""
        if self.verbosity >= level:
            stream = self._stream if self._stream is not None else sys.stderr
            stream.write(f"{self.name}: {message}\n")


def _seconds_to_go(seconds: float) -> str:
    from credprov._go.durations import SECOND, format_duration

    return format_duration(int(seconds * SECOND))


def _duration_seconds(value: float | str | None) -> tuple[str | None, float | None]:
    """(Go string for the wire, seconds for the plugin cache) of a handler's duration."""
    if value is None:
        return None, None
    if isinstance(value, str):
        from credprov._go.durations import SECOND, DurationError, format_duration, parse_duration

        try:
            ns = parse_duration(value)
        except DurationError as exc:
            raise ProviderError(f"handler returned an invalid cacheDuration: {exc}") from None
        return format_duration(ns), ns / SECOND
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProviderError("handler returned a cacheDuration that is not a number or string")
    if hasattr(value, "total_seconds"):  # pragma: no cover - timedelta is not int|float
        value = value.total_seconds()
    return _seconds_to_go(float(value)), float(value)


def _auth_pairs(auth: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    from collections.abc import Mapping  # not on the warm path (a cached answer)

    out: dict[str, tuple[str, str]] = {}
    for key, value in auth.items():
        if isinstance(value, tuple | list) and len(value) == 2:
            user, password = value
        elif isinstance(value, Mapping):
            user, password = value.get("username", ""), value.get("password", "")
        else:
            user = getattr(value, "username", None)
            password = getattr(value, "password", None)
        if not isinstance(key, str) or not isinstance(user, str) or not isinstance(password, str):
            raise ProviderError("handler returned an auth entry that is not (username, password)")
        out[key] = (user, password)
    return out


def _scrub(message: str, secrets: Sequence[str]) -> str:
    from credprov.base.redact import Redactor  # the error path only

    return " ".join(Redactor(secrets)(message).split())  # one line


#: The option that turns telemetry on (wins over ``$CREDPROV_METRICS_FILE``; empty: off).
METRICS_FILE = Option(
    "metrics-file",
    None,
    f"add each run's metrics to this node_exporter textfile (default ${METRICS_FILE_ENV})",
)

#: The options every plugin has (besides its own): klog's ``-v``, ``--help``, ``--version``,
#: ``--clear-cache`` and ``--metrics-file``.
BUILTIN_OPTIONS = (
    VERBOSITY,
    Option("help", False, "print this help and exit", flag=True, shorthand="h"),
    Option("version", False, "print the version and exit", flag=True),
    Option("clear-cache", False, "remove this plugin's cached answers and exit", flag=True),
    METRICS_FILE,
)
_ACTIONS = ("help", "version", "clear-cache")


def parse_args(
    argv: Sequence[str], options: Sequence[Option], *, name: str = "", allow_args: bool = False
) -> tuple[dict[str, Any], int, set[str]]:
    """Parse ``argv`` into (the plugin's options, verbosity, actions), pflag's way
    (:func:`credprov.sdk.flags.parse`).

    Args:
        allow_args: ignore arguments that are not options (cobra's ``ArbitraryArgs``);
            by default one is refused as cobra refuses an unknown command.

    Raises:
        FlagError: unknown option, missing or invalid value, or an argument.
    """
    values, verbosity, actions, _ = _parse_args(argv, options, name, allow_args)
    return values, verbosity, actions


def _parse_args(
    argv: Sequence[str], options: Sequence[Option], name: str, allow_args: bool
) -> tuple[dict[str, Any], int, set[str], str | None]:
    """:func:`parse_args`, and ``--metrics-file`` (None when not given)."""
    parsed = flags.parse(argv, (*BUILTIN_OPTIONS, *options))
    if parsed.positional and not allow_args:
        from credprov._go.fmt import go_quote

        raise FlagError(f"unknown command {go_quote(parsed.positional[0])} for {go_quote(name)}")
    values = parsed.values
    actions = {a for a in _ACTIONS if values.pop(a)}
    verbosity = max(values.pop(VERBOSITY.name), 0)
    # Not a handler option, and not part of the cache scope: telemetry never changes answers.
    metrics_file = values.pop(METRICS_FILE.name)
    return values, verbosity, actions, metrics_file


def _usage(name: str, description: str, options: Sequence[Option]) -> str:
    options = [o for o in options if not o.hidden]
    lines = [
        f"usage: {name} [--version] [-v N] [--clear-cache] "
        + " ".join(f"[--{o.name}{'' if o.flag else ' VALUE'}]" for o in options),
        "",
        description or "A kubelet image credential provider plugin.",
        "Reads a CredentialProviderRequest on stdin and writes a CredentialProviderResponse "
        "in the same apiVersion on stdout.",
        "",
        "  --version      print the version and exit",
        "  -v N, --v=N    log verbosity on stderr (secrets are never logged)",
        "  --clear-cache  remove this plugin's cached answers and exit",
        "  --metrics-file PATH",
        f"                 add each run's metrics to this node_exporter textfile (default "
        f"${METRICS_FILE_ENV})",
    ]
    for o in options:
        default = f" (default {o.default!r})" if o.default not in (None, False) else ""
        lines.append(f"  --{o.name:<13} {o.help}{default}")
    return "\n".join(lines) + "\n"


def _load_handler(handler: Handler | str) -> Handler:
    if callable(handler):
        return handler
    module_name, _, attr = handler.partition(":")
    # The cold path: let site-packages' .pth files apply before importing heavy modules
    # (launchers start the interpreter with -S to keep the warm path lean).
    from credprov.sdk import _launch

    _launch.enable_site()
    import importlib

    module = importlib.import_module(module_name)
    fn = getattr(module, attr or "provide")
    return fn


def run(
    handler: Handler | str,
    *,
    name: str,
    version: str = "",
    description: str = "",
    options: Sequence[Option] = (),
    cache: bool = False,
    cache_dir: str | None = None,
    cache_identity: str = "ServiceAccount",
    argv: Sequence[str] | None = None,
    stdin: Any = None,
    stdout: Any = None,
    stderr: Any = None,
    clock: Callable[[], float] | None = None,
    empty_image_error: str | None = None,
    allow_args: bool = False,
) -> int:
    """Run a plugin once; returns the exit code (call ``sys.exit(run(...))``).

    Args:
        handler: ``provide(request, ctx) -> Response``, or ``"module:function"`` to import
            it only when the cache cannot answer (keep heavy imports in that module).
        name: the executable's name, used in messages and the cache directory.
        options: the plugin's own command-line options (passed via the config's ``args``).
        cache: keep answers in the persistent plugin cache (opt-in).
        cache_dir: where; default :func:`credprov.sdk._cache.default_cache_dir`.
        cache_identity: ``ServiceAccount`` or ``Token``: how a service-account token keys
            the cache (as the kubelet's ``tokenAttributes.cacheType``).
        empty_image_error: the plugin's own text for a request with an empty image (e.g.
            upstream ECR's ``image in plugin request was empty``), printed as
            ``<name>: <text>`` with exit 1 once the rest of the request decoded; by
            default the SDK's ``invalid request: request has an empty image``.
        allow_args: ignore command-line arguments that are not options (upstream ECR's
            cobra command does); by default they are refused (exit 2).
        clock: the wall clock (Unix seconds) of the cache and of telemetry.

    With telemetry on (``$CREDPROV_METRICS_FILE`` or ``--metrics-file``), a run that read
    a request or refused its arguments is added to the metrics file after its answer
    (:mod:`credprov.sdk.telemetry`); the exit code stays the run's.
    """
    started = time.monotonic()
    import os  # loaded by the cache anyway; the environment names the metrics file

    plugin = _Plugin(
        name,
        stdout if stdout is not None else sys.stdout.buffer,
        stderr if stderr is not None else sys.stderr,
        metrics_file=os.environ.get(METRICS_FILE_ENV, ""),
        clock=clock,
    )
    code = _run(
        plugin,
        handler,
        argv=sys.argv[1:] if argv is None else argv,
        stdin=stdin if stdin is not None else sys.stdin.buffer,
        version=version,
        description=description,
        options=options,
        cache_dir=(cache_dir or "") if cache else None,
        cache_identity=cache_identity,
        empty_image_error=empty_image_error,
        allow_args=allow_args,
    )
    if plugin.metrics_file and plugin.observed:
        plugin.report(code, time.monotonic() - started)
    return code


def _run(
    plugin: _Plugin,
    handler: Handler | str,
    *,
    argv: Sequence[str],
    stdin: Any,
    version: str,
    description: str,
    options: Sequence[Option],
    cache_dir: str | None,
    cache_identity: str,
    empty_image_error: str | None,
    allow_args: bool,
) -> int:
    """:func:`run`'s steps, in the order its exit codes document (``cache_dir`` None: no
    plugin cache, "": the default directory)."""
    name, stdout = plugin.name, plugin.stdout
    try:
        values, verbosity, actions, metrics_file = _parse_args(argv, options, name, allow_args)
    except UsageError as exc:
        return plugin.fail(EXIT_USAGE, f"{exc} (see --help)", "usage")
    plugin.verbosity = verbosity
    if metrics_file is not None:
        plugin.metrics_file = metrics_file
    plugin.observed = not actions & {"help", "version"}
    if "help" in actions:
        stdout.write(_usage(name, description, options).encode("utf-8"))
        return EXIT_OK
    if "version" in actions:
        from credprov.version import __version__

        stdout.write(f"{name} {version or __version__} (credprov {__version__})\n".encode())
        return EXIT_OK
    ctx = Context(name, values, verbosity, plugin.stderr)

    response_cache = None
    if cache_dir is not None:
        response_cache = _open_cache(cache_dir, ctx, plugin.clock)
        if "clear-cache" in actions:
            plugin.observed = False
            removed = response_cache.clear()
            ctx.log(1, f"removed {removed} cached answer(s)")
            return EXIT_OK

    request = plugin.read_request(stdin, empty_image_error)
    if isinstance(request, int):
        return request

    identity = ""
    if response_cache is not None:
        from credprov.sdk._cache import service_account_identity

        identity = service_account_identity(
            request.service_account_token, request.service_account_annotations, cache_identity
        )
        if plugin.answer_from_cache(response_cache, request, identity, ctx):
            return EXIT_OK
    return plugin.answer(handler, request, ctx, response_cache, identity)


def _open_cache(cache_dir: str, ctx: Context, clock: Callable[[], float] | None) -> ResponseCache:
    """The plugin's answer cache (default directory: :func:`~credprov.sdk._cache.
    default_cache_dir`), scoped by its options: verbosity and actions do not scope it."""
    from credprov.sdk._cache import ResponseCache, default_cache_dir

    return ResponseCache(
        cache_dir or default_cache_dir(ctx.name),
        scope=repr(sorted(ctx.options.items())),
        **({"clock": clock} if clock else {}),
    )


class _Plugin:
    """One run's output: failures on stderr, answers on stdout (from the handler or the
    cache), and what telemetry records of it. ``run`` drives it in the order its exit
    codes document."""

    def __init__(
        self,
        name: str,
        stdout: Any,
        stderr: Any,
        *,
        metrics_file: str = "",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        self.stdout = stdout
        self.stderr = stderr
        self.clock = clock
        self.verbosity = 0
        # What telemetry records: whether this run counts (not --help, --version,
        # --clear-cache), the image, why it failed, and the answer's source and expiry.
        self.metrics_file = metrics_file
        self.observed = True
        self.image = ""
        self.reason = "internal"
        self.error: BaseException | None = None
        self.cache_hit = False
        self.expiry: float | None = None

    def now(self) -> float:
        """The wall clock (Unix seconds): ``run``'s ``clock``, else ``time.time``."""
        return self.clock() if self.clock is not None else time.time()

    def fail(self, code: int, message: str, reason: str = "internal") -> int:
        """Print ``<name>: <message>`` on stderr; returns ``code``. ``reason`` is the
        failure's telemetry reason (:data:`credprov.sdk.telemetry.REASONS`)."""
        self.reason = reason
        self.stderr.write(f"{self.name}: {message}\n")
        self.stderr.flush()
        return code

    def read_request(self, stdin: Any, empty_image_error: str | None) -> Request | int:
        """The request on ``stdin``, or the exit code of its refusal (printed)."""
        from credprov.sdk._wire import parse_request

        try:
            request = parse_request(
                stdin.read(4 * 1024 * 1024), allow_empty_image=empty_image_error is not None
            )
        except RequestError as exc:
            return self.fail(EXIT_ERROR, f"invalid request: {exc}", "request")
        self.image = request.image
        if not request.image and empty_image_error is not None:
            return self.fail(EXIT_ERROR, empty_image_error, "request")
        return request

    def report(self, code: int, seconds: float) -> None:
        """Add this run to the metrics file. Never raises: a failure is one line on
        stderr at ``-v 1``, and the exit code stays ``code``."""
        try:
            from credprov.sdk import telemetry

            reason = None if code == EXIT_OK else telemetry.failure_reason(self.reason, self.error)
            observation = telemetry.Observation(
                self.name,
                telemetry.registry_host(self.image),
                reason=reason,
                seconds=seconds,
                cache_hit=self.cache_hit,
                expiry=self.expiry,
                now=self.now(),
            )
            note = telemetry.record(self.metrics_file, observation)
        except PluginSDKError as exc:  # TelemetryError: one line, paths only
            note = str(exc)
        except Exception as exc:  # a bug: its type only, never a value
            note = f"failed ({type(exc).__name__})"
        if note and self.verbosity >= 1:
            self.stderr.write(f"{self.name}: telemetry: {note}\n")
            self.stderr.flush()

    def answer_from_cache(
        self, response_cache: ResponseCache, request: Request, identity: str, ctx: Context
    ) -> bool:
        """Write the cached answer for ``request`` if there is one; whether there was."""
        entry = response_cache.get(request.image, identity)
        if entry is None:
            return False
        ctx.log(2, f"answered {request.image} from the plugin cache")
        self.cache_hit = True
        own = entry.get("credentialsExpireAt")
        self.expiry = own if isinstance(own, int | float) else entry["expiresAt"]
        auth = {k: (v[0], v[1]) for k, v in entry["auth"].items()}
        self.stdout.write(
            encode_response(
                request.api_version,
                entry["cacheKeyType"],
                _seconds_to_go(int(entry["remaining"])),
                auth,
            )
        )
        self.stdout.flush()
        return True

    def answer(
        self,
        handler: Handler | str,
        request: Request,
        ctx: Context,
        response_cache: ResponseCache | None,
        identity: str,
    ) -> int:
        """Call the handler, write its answer (and cache it); the exit code."""
        secrets = [request.service_account_token]
        auth_pairs: dict[str, tuple[str, str]] = {}
        try:
            fn = _load_handler(handler)
            result = fn(request, ctx)
            if not isinstance(result, Response):
                raise ProviderError("handler did not return a credprov.sdk.Response")
            auth_pairs = _auth_pairs(result.auth)
            secrets.extend(p for _, p in auth_pairs.values())
            if result.cache_key_type not in CACHE_KEY_TYPES:
                raise ProviderError(
                    f"handler returned an invalid cacheKeyType {result.cache_key_type!r}"
                )
            wire_duration, seconds = _duration_seconds(result.cache_duration)
        except ProviderError as exc:
            self.error = exc
            return self.fail(EXIT_ERROR, _scrub(str(exc), secrets), "provider")
        except KeyboardInterrupt:
            return self.fail(130, "interrupted", "interrupted")
        except Exception as exc:
            self.error = exc
            if ctx.verbosity >= 4:
                import traceback

                self.stderr.write(_scrub(traceback.format_exc(), secrets) + "\n")
            return self.fail(
                EXIT_INTERNAL, f"internal error ({type(exc).__name__}); rerun with -v 4"
            )
        expires_at = result.expires_at
        if not isinstance(expires_at, int | float) or isinstance(expires_at, bool):
            expires_at = None
        if expires_at is not None:
            self.expiry = expires_at
        elif seconds is not None:
            self.expiry = self.now() + seconds

        self.stdout.write(
            encode_response(request.api_version, result.cache_key_type, wire_duration, auth_pairs)
        )
        self.stdout.flush()
        if response_cache is not None and seconds is not None and seconds > 0:
            stored = response_cache.put(
                result.cache_key_type,
                request.image,
                identity,
                auth_pairs,
                seconds,
                credentials_expire_at=expires_at,
            )
            ctx.log(
                2, f"{'cached' if stored else 'could not cache'} the answer for {request.image}"
            )
        return EXIT_OK
