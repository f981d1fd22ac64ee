"""``credprov plugin exec|test`` and ``credprov install``: run, check and install plugins."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from credprov.cli._output import print_json
from credprov.cli.main import CLIError, add_common, one_line


def add_parser(sub: Any) -> None:
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
    ex.add_argument(
        "--config", required=True, metavar="PATH", help="provider config file or directory"
    )
    ex.add_argument(
        "--bin-dir", required=True, metavar="DIR", help="directory of the plugin binaries"
    )
    ex.add_argument(
        "--image", required=True, metavar="IMG", help="the image to ask credentials for"
    )
    ex.add_argument(
        "--plugin-timeout",
        default="1m",
        metavar="DURATION",
        help="deadline for the plugin run (Go duration; the kubelet's is 1m)",
    )
    ex.add_argument(
        "--show-secrets",
        action="store_true",
        help="print passwords and the plugin's raw stdout instead of <redacted>",
    )
    add_common(ex, output=True, feature_gates=True, go_version=True)
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
            "did not write is refused unless --force."
        ),
    )
    inst.add_argument("plugins", nargs="*", metavar="PLUGIN")
    inst.add_argument("--bin-dir", metavar="DIR", help="the kubelet's plugin bin dir (required)")
    inst.add_argument("--force", action="store_true", help="replace files credprov did not write")
    inst.add_argument("--list", action="store_true", help="list installable plugins and exit")
    add_common(inst)
    inst.set_defaults(run=run_install)


def run_exec(args: argparse.Namespace) -> int:
    from credprov._go.durations import parse_duration
    from credprov.cli.main import feature_gates
    from credprov.credentialprovider.plugin.probe import probe_provider

    timeout = parse_duration(args.plugin_timeout)
    if timeout <= 0:
        raise CLIError("--plugin-timeout must be positive")
    probe = probe_provider(
        args.config,
        args.bin_dir,
        args.name,
        args.image,
        timeout_ns=timeout,
        feature_gates=feature_gates(args),
        show_secrets=args.show_secrets,
    )
    report, failed, matched, repo = probe.report, probe.failed, probe.matched, probe.repo
    if args.output == "json":
        print_json(report)
        return 1 if failed else 0
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
    return 1 if failed else 0


def run_install(args: argparse.Namespace) -> int:
    from credprov.credentialprovider.plugin.install import InstallError, available_plugins, install

    if args.list:
        for name, entry in sorted(available_plugins().items()):
            print(f"{name}\t{entry}")
        return 0
    if not args.bin_dir:
        raise CLIError("--bin-dir is required (the kubelet's --image-credential-provider-bin-dir)")
    try:
        results = install(args.bin_dir, args.plugins or None, force=args.force)
    except InstallError as exc:
        raise CLIError(str(exc)) from None
    for r in results:
        print(f"{r.status}: {r.path}")
    sys.stdout.flush()
    return 0
