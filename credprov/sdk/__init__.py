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
handler's module. This package imports only the standard library: keep it that way.
"""

from credprov.sdk._runtime import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Context,
    Option,
    PluginError,
    ProviderError,
    Response,
    run,
)
from credprov.sdk._wire import Request

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "Context",
    "Option",
    "PluginError",
    "ProviderError",
    "Request",
    "Response",
    "run",
]
