"""Entry point of ``docker-credential-helper-provider`` (tiny: the handler loads on demand).

The persistent plugin cache stays off on purpose: a keychain-backed helper keeps secrets
out of plain files, and writing its answers to the plugin cache would undo that. The
kubelet still caches the answers in memory for ``--cache-duration``.
"""

from credprov.sdk import Option, run

OPTIONS = [
    Option("helper", help="run docker-credential-NAME from PATH"),
    Option("helper-path", help="absolute path of the credential helper to run instead"),
    Option(
        "server-url-format",
        default="auto",
        help="comma-separated server URLs to ask for, with {registry} and {image}; "
        "auto = https://index.docker.io/v1/ for Docker Hub, else HOST then https://HOST",
    ),
    Option("cache-duration", default="5m", help="cacheDuration of the answers"),
    Option("cache-key-type", default="Registry", help="Image, Registry or Global"),
    Option("timeout", default="10s", help="how long the helper may run"),
]


def main() -> int:
    """Run the plugin (console script ``docker-credential-helper-provider``); the exit code."""
    return run(
        "credprov_dockerhelper.provider:provide",
        name="docker-credential-helper-provider",
        description="Registry credentials from a Docker credential helper "
        "(docker-credential-NAME get).",
        options=OPTIONS,
    )
