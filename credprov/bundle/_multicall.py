"""The bundle's one executable: dispatch on the name it was started as (``argv[0]``).

Every plugin name installed into the kubelet's bin dir is a symlink to this executable;
the basename of ``argv[0]`` picks the plugin's ``main``. The bundle's tools (the doctor)
dispatch the same way, from a symlink in the bundle directory or the installer image, but
are not plugins: ``--list`` and ``install`` know only :data:`PLUGINS`. Standard library
only, and nothing is imported before the command's own entry module: this is the warm path.

``install --prefix credprov-`` installs each plugin as ``credprov-<name>`` (for nodes whose
own plugins hold the plain names, as EKS's ``ecr-credential-provider``): a basename that is
not a command but is :data:`NAME_PREFIX` + a command runs that command. Only that one prefix
is understood, so ``install`` refuses any other.
"""

import os
import sys

#: Installed name → ``module:function`` of the plugin's main: the one list of plugins. The
#: bundle builds from it; ``pyproject.toml``'s ``[project.scripts]`` and ``credprov.plugins``
#: entry points (what ``credprov install`` installs) must agree with it
#: (``tests/unit/bundle/test_multicall.py`` reads both).
PLUGINS = {
    "static-credential-provider": "credprov_static.main:main",
    "docker-credential-helper-provider": "credprov_dockerhelper.provider_main:main",
    "docker-credential-credprov": "credprov_dockerhelper.docker_helper:main",
    "ecr-credential-provider": "credprov_ecr.main:main",
    "auth-provider-gcp": "credprov_gcp.main:main",
    "acr-credential-provider": "credprov_acr.main:main",
}

#: The bundle's commands that are not plugins (never installed into a bin dir): name →
#: ``module:function``; ``credprov-plugins/doctor`` is ``credprov doctor`` without Python,
#: ``validate-config`` checks provider configs as the kubelet reads a config directory (the
#: installer image runs it before writing one).
TOOLS = {
    "doctor": "credprov.doctor.cli:main",
    "validate-config": "credprov.bundle.validate_config:main",
}

#: The plugins above that a kubelet config does not name: a Docker credential helper for
#: node tools, installed beside the plugins (no ``credprov.plugins`` entry point).
NOT_KUBELET_PLUGINS = frozenset({"docker-credential-credprov"})

RUNTIME_NAME = "credprov-plugins"

#: The runtime's file; ``runtime/credprov-plugins`` is a symlink to it. freeze-core's
#: ``__startup__`` (frozen into the executable) imports :mod:`string`, and with it ``re``,
#: ``enum`` and ``collections`` (about 8 ms of every start), to make an identifier of an
#: executable's real name when that name is not one; this name is.
RUNTIME_FILE = "credprov_plugins"

#: The one prefix ``install --prefix`` may put before plugin names (stripped here).
NAME_PREFIX = "credprov-"


def main(plugins: dict[str, str] | None = None, tools: dict[str, str] | None = None) -> int:
    """Run the plugin or tool named by ``argv[0]`` (or ``argv[1]``); ``plugins`` is the
    bundle's subset of :data:`PLUGINS`, ``tools`` defaults to :data:`TOOLS`."""
    plugins = PLUGINS if plugins is None else plugins
    commands = {**plugins, **(TOOLS if tools is None else tools)}
    name = os.path.basename(sys.argv[0])
    if name not in commands and name.startswith(NAME_PREFIX):
        unprefixed = name[len(NAME_PREFIX) :]
        if unprefixed in commands:  # installed with ``--prefix credprov-``
            name = unprefixed
    if name not in commands and len(sys.argv) > 1 and sys.argv[1] in commands:
        # ``credprov-plugins NAME ARGS...``: run a plugin without installing it.
        name = sys.argv[1]
        sys.argv = [name, *sys.argv[2:]]
    entry = commands.get(name)
    # Exit statuses 0 and 2 as credprov.errors.EXIT_OK/EXIT_USAGE, spelled out: the warm
    # path imports nothing before the command.
    if entry is None:
        if len(sys.argv) > 1 and sys.argv[1] == "--list":
            print("\n".join(plugins))
            return 0
        sys.stderr.write(
            f"{RUNTIME_NAME}: started as {name!r}, which is not a plugin name; "
            f"run it as one of {', '.join(plugins)} (a symlink), or `{RUNTIME_NAME} --list`\n"
        )
        return 2
    module_name, _, attr = entry.partition(":")
    module = __import__(module_name, fromlist=[attr])
    return int(getattr(module, attr)() or 0)


def leave(code: int) -> None:
    """Exit with ``code`` as the interpreter would, without its finalisation.

    What an exit must do still happens: the ``atexit`` functions run (logging's flush, the
    removal of a plugin's temporary CA file) and stdout and stderr are flushed (exit status
    120 when that fails, as CPython's). What is skipped is tearing down every module and
    object, which nothing a plugin writes depends on: about 3 ms of each plugin start
    (``benchmarks/bench_startup.py``). Only the frozen entry script calls this, once ``main``
    has returned; an exception still leaves through the interpreter.
    """
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
