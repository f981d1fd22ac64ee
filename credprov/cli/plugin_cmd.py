"""``credprov plugin exec|test`` and ``credprov install``: run, check and install plugins."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.cmdoptions import one_line, print_json
from credprov.errors import EXIT_FAILURE, EXIT_OK, UsageError


def add_parser(sub: Any) -> None:
    """Add ``plugin exec|test`` and ``install`` to ``credprov``'s subcommands."""
    plugin = sub.add_parser(
        "plugin",
        help="run or check one credential provider plugin",
        description="Run one configured plugin as the kubelet would, or check any plugin "
        "binary against the kubelet's expectations.",
    )
    plugin_sub = plugin.add_subparsers(dest="plugin_command", metavar="SUBCOMMAND")
    plugin_sub.required = True

    ex = plugin_sub.add_parser(
        "exec",
        help="send the kubelet's exact request to one configured provider",
        description=(
            "Send exactly the kubelet's request for IMAGE to the provider NAME of the config "
            "(its binary from --bin-dir, its args and env), and show the request and the "
            "decoded response with passwords redacted. The plugin's raw stdout is shown only "
            "with --show-secrets (it holds the passwords in whatever escaping the plugin "
            "used). Exit 1 when the plugin fails or its response would be rejected by the "
            "kubelet."
        ),
    )
    ex.add_argument("name", metavar="NAME", help="provider name in the config")
    opts.CONFIG.add(ex, required=True)
    opts.BIN_DIR.add(ex, required=True)
    opts.IMAGE.add(ex, required=True)
    opts.PLUGIN_TIMEOUT.add(ex)
    opts.SHOW_SECRETS.add(ex)
    opts.add_common(ex, opts.FEATURE_GATES, *opts.GO_BEHAVIOUR)
    ex.set_defaults(run=run_exec)

    from credprov.cli import plugin_test_cmd

    plugin_test_cmd.add_test_parser(plugin_sub)

    inst = sub.add_parser(
        "install",
        help="install plugin executables into the kubelet's bin dir",
        description=(
            "Write an executable for each PLUGIN (default: every plugin credprov knows) into "
            "DIR, named as the provider config expects, that starts this environment's "
            "interpreter directly with minimal start-up flags. Idempotent; a file credprov "
            'did not write is refused unless --force. -o json prints {"binDir": DIR, '
            '"plugins": [{"name", "path", "status"}]} (status: installed, updated '
            'or unchanged); with --list, {"plugins": [{"name", "entryPoint"}]}.'
        ),
    )
    inst.add_argument("plugins", nargs="*", metavar="PLUGIN")
    opts.BIN_DIR.add(inst)
    inst.add_argument("--force", action="store_true", help="replace files credprov did not write")
    inst.add_argument("--list", action="store_true", help="list installable plugins and exit")
    opts.add_common(inst)
    inst.set_defaults(run=run_install)


def run_exec(args: argparse.Namespace) -> int:
    """Run one configured provider as the kubelet would and show its answer."""
    from credprov.cli.main import feature_gates
    from credprov.credentialprovider.plugin.probe import probe_provider

    if len(args.images) != 1:
        raise UsageError("give one --image: plugin exec sends one request")
    probe = probe_provider(
        args.config,
        args.bin_dir,
        args.name,
        args.images[0],
        timeout_ns=args.plugin_timeout,
        feature_gates=feature_gates(args),
        show_secrets=args.show_secrets,
    )
    report, failed, matched, repo = probe.report, probe.failed, probe.matched, probe.repo
    if args.output == "json":
        print_json(report)
        return EXIT_FAILURE if failed else EXIT_OK
    print(f"provider {report['provider']}: {' '.join(report['command'])}")
    if report["env"]:
        print(f"  env from config: {', '.join(report['env'])} (values not shown)")
    if not matched:
        print(f"  note: {repo} matches none of its matchImages; the kubelet would not run it")
    print(f"  request (stdin): {report['request'].rstrip()}")
    if "durationSeconds" in report:
        print(f"  ran in {report['durationSeconds'] * 1000:.1f} ms")
    if report.get("stdout") is not None:
        print(f"  raw response (stdout): {one_line(report['stdout'])}")
    if report.get("stderr"):
        print(f"  stderr: {report['stderr']}")
    if "response" in report:
        resp = report["response"]
        print(
            f"  decoded: cacheKeyType={resp['cacheKeyType']} "
            f"cacheDuration={resp['cacheDuration'] or '(provider default)'}"
        )
        for key, a in resp["auth"].items():
            note = "" if a["matchesImage"] else "  (does not match the image)"
            print(f"    {key}: username={a['username']} password={a['password']}{note}")
    if "error" in report:
        print(f"  error: {one_line(report['error'])}")
    return EXIT_FAILURE if failed else EXIT_OK


def run_install(args: argparse.Namespace) -> int:
    """Install plugin launchers into ``--bin-dir`` (or list the installable ones)."""
    from credprov.install import available_plugins, install

    if args.list:
        plugins = sorted(available_plugins().items())
        if args.output == "json":
            print_json({"plugins": [{"name": n, "entryPoint": e} for n, e in plugins]})
        for name, entry in plugins if args.output == "text" else ():
            print(f"{name}\t{entry}")
        return EXIT_OK
    if not args.bin_dir:
        raise CLIError("--bin-dir is required (the kubelet's --image-credential-provider-bin-dir)")
    results = install(args.bin_dir, args.plugins or None, force=args.force)
    if args.output == "json":
        print_json(
            {
                "binDir": args.bin_dir,
                "plugins": [{"name": r.name, "path": r.path, "status": r.status} for r in results],
            }
        )
    for r in results if args.output == "text" else ():
        print(f"{r.status}: {r.path}")
    sys.stdout.flush()
    return EXIT_OK
