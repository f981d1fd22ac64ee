"""credprov's plugin SDK: write a kubelet image credential provider as one function.

Example (``my_plugin.py``)::

    from credprov.sdk import Response, run

    def provide(request, ctx):
        return Response({request.registry: ("user", "secret")}, "Registry", "1h")

    if __name__ == "__main__":
        raise SystemExit(run(provide, name="my-credential-provider", cache=True))

The SDK decodes the request strictly, answers in the apiVersion it was asked in, encodes
byte-for-byte like the kubelet's serializer, keeps secrets out of every message, and (with
``cache=True``) answers repeat requests from a persistent cache without importing the
handler's module. Command lines are read as upstream plugins read theirs
(:mod:`credprov.sdk.flags`: pflag's rules, klog's ``-v``). Opt-in telemetry
(``$CREDPROV_METRICS_FILE`` or ``--metrics-file``) records each run for node_exporter's
textfile collector (:mod:`credprov.sdk.telemetry`, imported only when on). Plugins that
make HTTPS requests trust the node's CA store found as Go's ``crypto/x509`` finds it
(:mod:`credprov.sdk.cacerts`, imported on their network path only).

It is also the one toolkit plugins import (besides ``credprov.version``): Go durations
(``parse_duration``, ``format_duration``, ``DurationError``, ``SECOND``, ``HOUR``...),
``go_quote`` and ``json_kind``; ``use_go`` (the kubelet's Go release); ``CredprovError``;
``Clock``/``RealClock``; ``read_file`` (bounded, refuses FIFOs and devices); the
``Redactor``; ``run_bounded`` (a child process bounded in time and output); ``sha256``,
``json_loads`` and ``json_dumps`` (hashlib's and json's results without their start-up
cost); and the kubelet's image and matching helpers (``parse_image_name``, ``urls_match_str``,
``parse_url``, docker-config keyring helpers). Those names load on first use (PEP 562), so
``import credprov.sdk`` imports only the standard library and credprov's stdlib-only
foundation (``credprov.errors``, ``credprov.base``, ``credprov._go``):
keep it that way, a plugin's warm path runs through here.
"""

from credprov.base import lazy_names
from credprov.errors import CredprovError
from credprov.sdk._errors import ProviderError, UsageError
from credprov.sdk._runtime import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Context,
    Response,
    run,
)
from credprov.sdk._wire import Request
from credprov.sdk.flags import FlagError, Option, go_quote

# typing costs start-up time; mypy reads this name as typing's.
TYPE_CHECKING = False

_DURATIONS = "credprov._go.durations"
_IMAGES = "credprov.imageauth.images"
_MATCHING = "credprov.imageauth.matching"
_KEYRING = "credprov.imageauth.keyring"

#: public name -> (module, name there), loaded on first use
_LAZY = {
    # Go's time.Duration (int nanoseconds)
    **{
        name: (_DURATIONS, name)
        for name in (
            "DurationError",
            "format_duration",
            "parse_duration",
            "NANOSECOND",
            "MICROSECOND",
            "MILLISECOND",
            "SECOND",
            "MINUTE",
            "HOUR",
        )
    },
    # the Go release the kubelet was built with (what url.Parse accepts depends on it)
    "use_go": ("credprov._go.version", "use_go"),
    # the JSON kind of a parsed value (bool, number, string, array, object, null)
    "json_kind": ("credprov._go.json", "json_kind"),
    # an injectable clock
    "Clock": ("credprov.base.clock", "Clock"),
    "RealClock": ("credprov.base.clock", "RealClock"),
    # bounded reads of regular files
    "read_file": ("credprov.base.fileio", "read_bounded"),
    "FileTooLargeError": ("credprov.base.fileio", "FileTooLargeError"),
    "NotRegularFileError": ("credprov.base.fileio", "NotRegularFileError"),
    # the one scrubber
    "Redactor": ("credprov.base.redact", "Redactor"),
    # a child process run bounded in time and output (credprov.base.proc)
    "run_bounded": ("credprov.base.proc", "run_bounded"),
    # start-up-lean stand-ins: SHA-256 without loading OpenSSL (hashlib), json.loads and
    # json.dumps without importing json and re (credprov.base.fastjson: the same results)
    "sha256": ("credprov.base.hashing", "sha256"),
    "json_loads": ("credprov.base.fastjson", "loads"),
    "json_dumps": ("credprov.base.fastjson", "dumps"),
    "REDACTED": ("credprov.base.redact", "REDACTED"),
    # image names and matchImages, as the kubelet reads them
    "InvalidImageError": (_IMAGES, "InvalidImageError"),
    "parse_image_name": (_IMAGES, "parse_image_name"),
    "is_default_registry_match": (_IMAGES, "is_default_registry_match"),
    "urls_match_str": (_MATCHING, "urls_match_str"),
    "GoURLError": (_MATCHING, "GoURLError"),
    "parse_url": (_MATCHING, "parse_url"),
    "MatchPatternError": (_MATCHING, "MatchPatternError"),
    "filepath_match": (_MATCHING, "filepath_match"),
    "parse_schemeless_url": (_MATCHING, "parse_schemeless_url"),
    "split_url": (_MATCHING, "split_url"),
    # docker config.json and pull Secrets, as the kubelet's keyring reads them
    "DOCKER_CONFIG_JSON_KEY": (_KEYRING, "DOCKER_CONFIG_JSON_KEY"),
    "DOCKER_CONFIG_JSON_TYPE": (_KEYRING, "DOCKER_CONFIG_JSON_TYPE"),
    "DOCKERCFG_KEY": (_KEYRING, "DOCKERCFG_KEY"),
    "DOCKERCFG_TYPE": (_KEYRING, "DOCKERCFG_TYPE"),
    "KeyringError": (_KEYRING, "KeyringError"),
    "normalize_key": (_KEYRING, "normalize_key"),
    "docker_config_entry_fields": (_KEYRING, "docker_config_entry_fields"),
    "secret_data": (_KEYRING, "secret_data"),
}

#: The modules those names come from (bundlers must ship them: importlib hides them).
LAZY_MODULES = tuple(sorted({module for module, _ in _LAZY.values()}))

__all__ = [
    "DOCKERCFG_KEY",
    "DOCKERCFG_TYPE",
    "DOCKER_CONFIG_JSON_KEY",
    "DOCKER_CONFIG_JSON_TYPE",
    "EXIT_ERROR",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "HOUR",
    "LAZY_MODULES",
    "MICROSECOND",
    "MILLISECOND",
    "MINUTE",
    "NANOSECOND",
    "REDACTED",
    "SECOND",
    "Clock",
    "Context",
    "CredprovError",
    "DurationError",
    "FileTooLargeError",
    "FlagError",
    "GoURLError",
    "InvalidImageError",
    "KeyringError",
    "MatchPatternError",
    "NotRegularFileError",
    "Option",
    "ProviderError",
    "RealClock",
    "Redactor",
    "Request",
    "Response",
    "UsageError",
    "docker_config_entry_fields",
    "filepath_match",
    "format_duration",
    "go_quote",
    "is_default_registry_match",
    "json_dumps",
    "json_kind",
    "json_loads",
    "normalize_key",
    "parse_duration",
    "parse_image_name",
    "parse_schemeless_url",
    "parse_url",
    "read_file",
    "run",
    "run_bounded",
    "secret_data",
    "sha256",
    "split_url",
    "urls_match_str",
    "use_go",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)


if TYPE_CHECKING:
    from credprov._go.durations import (
        HOUR,
        MICROSECOND,
        MILLISECOND,
        MINUTE,
        NANOSECOND,
        SECOND,
        DurationError,
        format_duration,
        parse_duration,
    )
    from credprov._go.json import json_kind
    from credprov._go.version import use_go
    from credprov.base.clock import Clock, RealClock
    from credprov.base.fastjson import dumps as json_dumps
    from credprov.base.fastjson import loads as json_loads
    from credprov.base.fileio import FileTooLargeError, NotRegularFileError
    from credprov.base.fileio import read_bounded as read_file
    from credprov.base.hashing import sha256
    from credprov.base.proc import run_bounded
    from credprov.base.redact import REDACTED, Redactor
    from credprov.imageauth.images import (
        InvalidImageError,
        is_default_registry_match,
        parse_image_name,
    )
    from credprov.imageauth.keyring import (
        DOCKER_CONFIG_JSON_KEY,
        DOCKER_CONFIG_JSON_TYPE,
        DOCKERCFG_KEY,
        DOCKERCFG_TYPE,
        KeyringError,
        docker_config_entry_fields,
        normalize_key,
        secret_data,
    )
    from credprov.imageauth.matching import (
        GoURLError,
        MatchPatternError,
        filepath_match,
        parse_schemeless_url,
        parse_url,
        split_url,
        urls_match_str,
    )
