"""Entry point of ``static-credential-provider`` (kept tiny: the warm path runs through it)."""

import os
import sys

from credprov.sdk import Option, run

# Also in credprov_static.config; not imported from there, to keep the warm path lean.
ENV_VAR = "STATIC_CREDENTIAL_PROVIDER_CONFIG"
GO_VERSION_ENV = "CREDPROV_GO_VERSION"

OPTIONS = [
    Option(
        "config",
        help=f"credentials file: docker config.json, a Secret, or StaticCredentials YAML "
        f"(default ${ENV_VAR})",
    ),
    Option(
        "go-version",
        help="the Go release the kubelet was built with, e.g. 1.26.6: which patterns parse "
        f"depends on it (default ${GO_VERSION_ENV}, else 1.25.5)",
    ),
]


def main() -> int:
    """Run the plugin (console script ``static-credential-provider``); the exit code."""
    argv = sys.argv[1:]
    env_path = os.environ.get(ENV_VAR)
    if env_path and not any(a == "--config" or a.startswith("--config=") for a in argv):
        # The plugin cache is scoped by the arguments: make the file from the environment
        # one of them, so answers from different files are never mixed up.
        argv = [*argv, "--config", env_path]
    go_version = os.environ.get(GO_VERSION_ENV)
    if go_version and not any(a == "--go-version" or a.startswith("--go-version=") for a in argv):
        argv = [*argv, "--go-version", go_version]  # part of the cache scope, as above
    return run(
        "credprov_static.plugin:provide",
        name="static-credential-provider",
        description="Registry credentials from a file (docker config.json, a dockerconfigjson "
        "Secret, or StaticCredentials YAML), with registry mirror strategies.",
        options=OPTIONS,
        cache=True,
        argv=argv,
    )
