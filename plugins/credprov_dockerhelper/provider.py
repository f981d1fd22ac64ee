"""The handler of ``docker-credential-helper-provider``: a Docker credential helper as a plugin.

The kubelet asks for an image; this handler runs ``docker-credential-<name> get`` with the
image's registry as the server URL on stdin, as ``docker`` does, and turns the helper's
``{"ServerURL", "Username", "Secret"}`` into a ``CredentialProviderResponse`` for that
registry. Any existing helper (``ecr-login``, ``gcr``, ``pass``, ``secretservice``, ...)
therefore works for the kubelet unchanged.

* "credentials not found" (the helper protocol's exit 1 with that text) is not an error: the
  answer is an empty ``auth`` (cacheable), so the kubelet pulls anonymously or tries its
  other sources, as docker does.
* Every other failure — the helper is missing, exits non-zero, hangs past ``--timeout``,
  writes too much or not JSON — raises :class:`ProviderError`. Messages never contain the
  helper's stdout (where the secret is) and scrub the secret from anything else quoted.
* A ``<token>`` username (an identity token) is passed through unchanged, as docker's
  config file stores it; the runtime decides what to do with it.
"""

from __future__ import annotations

import os
import re
import subprocess

from credprov.sdk import (
    Context,
    CredprovError,
    ProviderError,
    Request,
    Response,
    json_loads,  # json.loads without importing json and re (start-up)
)

#: What the helper protocol prints (on stdout, with exit 1) when it has nothing stored.
NOT_FOUND_TEXT = "credentials not found"
#: How docker names Docker Hub to its credential helpers (``registry.IndexServer``).
DOCKER_HUB_SERVER_URL = "https://index.docker.io/v1/"
DOCKER_HUB_HOSTS = frozenset(("docker.io", "index.docker.io", "registry-1.docker.io"))

#: A helper's answer is a few hundred bytes; anything near this is a broken helper.
MAX_STDOUT_BYTES = 1024 * 1024
MAX_STDERR_BYTES = 64 * 1024
_STDERR_QUOTE_CHARS = 200

# ``re`` costs nothing more here: ``subprocess`` imports it (through ``locale``).
_HELPER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_CACHE_KEY_TYPES = ("Image", "Registry", "Global")


class HelperOutput:
    """What one helper run produced."""

    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def _which(program: str) -> str | None:
    """``shutil.which(program)`` for a bare name (``shutil`` costs start-up): the first
    executable file of that name in a ``PATH`` directory (an empty entry is the current
    directory), or None."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or os.curdir, program)
        if os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


class HelperFailure(CredprovError):
    """The helper could not be run to completion (start failure, timeout, too much output)."""


def run_helper(
    argv: list[str],
    stdin: bytes,
    timeout: float,
    max_stdout: int = MAX_STDOUT_BYTES,
    max_stderr: int = MAX_STDERR_BYTES,
) -> HelperOutput:
    """Run ``argv`` with ``stdin``, bounded in time and output.

    Raises:
        HelperFailure: it could not start, ran past ``timeout`` seconds, or wrote more than
            the limits. The message never contains what the helper wrote.
    """
    from credprov.sdk import run_bounded

    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise HelperFailure(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    outcome = run_bounded(
        proc,
        stdin,
        timeout,
        max_stdout=max_stdout,
        max_stderr=max_stderr,
        stderr_overflow_fails=True,
    )
    if outcome.timed_out:
        raise HelperFailure(f"timed out after {timeout:g}s")
    if outcome.overflow is not None:
        limit = max_stdout if outcome.overflow == "stdout" else max_stderr
        raise HelperFailure(f"wrote more than {limit} bytes on {outcome.overflow}")
    return HelperOutput(outcome.returncode, outcome.stdout, outcome.stderr)


def find_helper(name: str | None, path: str | None) -> str:
    """The helper executable: ``--helper-path`` as given, else ``docker-credential-NAME``
    looked up on ``PATH``.

    Raises:
        ProviderError: neither option, both, an unsafe name, or nothing found.
    """
    if path and name:
        raise ProviderError("give either --helper or --helper-path, not both")
    if path:
        if not os.path.isabs(path):
            raise ProviderError(f"--helper-path must be an absolute path, got {path!r}")
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            raise ProviderError(f"credential helper {path} is not an executable file")
        return path
    if not name:
        raise ProviderError("no credential helper configured: pass --helper NAME or --helper-path")
    # The name becomes part of a file name looked up on PATH: no separators, no options.
    if _HELPER_NAME_RE.fullmatch(name) is None:
        raise ProviderError(f"invalid credential helper name {name!r}")
    program = f"docker-credential-{name}"
    found = _which(program)
    if found is None:
        raise ProviderError(f"credential helper {program} not found in PATH")
    return found


def server_urls(request: Request, formats: str) -> list[str]:
    """The server URLs to ask the helper for, in order.

    ``auto`` asks the way docker would: ``https://index.docker.io/v1/`` for Docker Hub, else
    the registry host (what ``docker login HOST`` stores) and then ``https://HOST`` (what
    some tools store). Otherwise ``formats`` is a comma-separated list of templates using
    ``{registry}`` and ``{image}``.

    Raises:
        ProviderError: an unknown placeholder in a template.
    """
    registry = request.registry
    if formats.strip() in ("", "auto"):
        if registry in DOCKER_HUB_HOSTS:
            return [DOCKER_HUB_SERVER_URL]
        return [registry, f"https://{registry}"]
    urls: list[str] = []
    for template in formats.split(","):
        template = template.strip()
        if not template:
            continue
        try:
            url = template.format(registry=registry, image=request.image)
        except (AttributeError, KeyError, IndexError, ValueError):
            raise ProviderError(
                f"invalid --server-url-format {template!r}: use {{registry}} and {{image}}"
            ) from None
        if url not in urls:
            urls.append(url)
    return urls


def _is_not_found(output: HelperOutput) -> bool:
    text = (output.stdout + b"\n" + output.stderr).decode("utf-8", "replace").lower()
    return NOT_FOUND_TEXT in text


def _stderr_quote(stderr: bytes, secrets: list[str]) -> str:
    """The first line of the helper's stderr, shortened, with any known secret removed."""
    from credprov.sdk import Redactor  # only on failure: it imports json and re

    text = stderr.decode("utf-8", "replace").strip()
    line = text.splitlines()[0] if text else ""
    line = Redactor(secrets)(line)
    if len(line) > _STDERR_QUOTE_CHARS:
        line = line[:_STDERR_QUOTE_CHARS] + "..."
    return f": {line}" if line else ""


def _secrets_in(stdout: bytes) -> list[str]:
    """The Secret of a failed helper's stdout, if it printed one, to scrub it from stderr."""
    try:
        doc = json_loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return []
    secret = doc.get("Secret") if isinstance(doc, dict) else None
    return [secret] if isinstance(secret, str) else []


def parse_helper_output(stdout: bytes) -> tuple[str, str]:
    """``(Username, Secret)`` of a helper's ``get`` answer.

    Raises:
        ProviderError: not a JSON object with string ``Username`` and ``Secret``. The message
            never quotes the output.
    """
    try:
        doc = json_loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProviderError("credential helper output is not valid JSON") from None
    if not isinstance(doc, dict):
        raise ProviderError("credential helper output is not a JSON object")
    username = doc.get("Username", "")
    secret = doc.get("Secret", "")
    if not isinstance(username, str) or not isinstance(secret, str):
        raise ProviderError("credential helper output has a non-string Username or Secret")
    return username, secret


def _parse_timeout(value: object) -> float:
    from credprov.sdk import SECOND, DurationError, parse_duration

    try:
        ns = parse_duration(str(value))
    except DurationError as exc:
        raise ProviderError(f"invalid --timeout: {exc}") from None
    if ns <= 0:
        raise ProviderError("--timeout must be positive")
    return ns / SECOND


def _check_options(ctx: Context) -> tuple[str, str]:
    key_type = str(ctx.options.get("cache-key-type") or "Registry")
    if key_type not in _CACHE_KEY_TYPES:
        raise ProviderError(f"invalid --cache-key-type {key_type!r}: use Image, Registry or Global")
    duration = str(ctx.options.get("cache-duration") or "0s")
    from credprov.sdk import DurationError, parse_duration

    try:
        if parse_duration(duration) < 0:
            raise ProviderError("--cache-duration must not be negative")
    except DurationError as exc:
        raise ProviderError(f"invalid --cache-duration: {exc}") from None
    return key_type, duration


def provide(request: Request, ctx: Context) -> Response:
    """Answer ``request`` from the configured Docker credential helper."""
    key_type, duration = _check_options(ctx)
    timeout = _parse_timeout(ctx.options.get("timeout") or "10s")
    helper = find_helper(ctx.options.get("helper"), ctx.options.get("helper-path"))
    # With an Image cache key the answer is only about this image, so key it by the image;
    # otherwise the helper answered for the whole registry.
    auth_key = request.image if key_type == "Image" else request.registry
    name = os.path.basename(helper)

    for url in server_urls(request, str(ctx.options.get("server-url-format") or "auto")):
        ctx.log(2, f"asking {name} for {url}")
        try:
            output = run_helper([helper, "get"], url.encode("utf-8"), timeout)
        except HelperFailure as exc:
            raise ProviderError(f"credential helper {name} {exc}") from None
        if output.returncode != 0:
            if _is_not_found(output):
                ctx.log(2, f"{name} has no credentials for {url}")
                continue
            raise ProviderError(
                f"credential helper {name} exited with status {output.returncode} for {url}"
                + _stderr_quote(output.stderr, _secrets_in(output.stdout))
            )
        username, secret = parse_helper_output(output.stdout)
        if not username and not secret:
            # Some helpers answer "nothing stored" with an empty record and exit 0.
            ctx.log(2, f"{name} returned empty credentials for {url}")
            continue
        ctx.log(1, f"{name} returned credentials for {url}")
        return Response({auth_key: (username, secret)}, key_type, duration)
    # Not found anywhere: an empty answer the kubelet may cache, so it pulls anonymously
    # (or with its other sources) instead of failing the pod, as docker would.
    return Response({}, key_type, duration)
