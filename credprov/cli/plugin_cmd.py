"""``credprov plugin exec|test`` and ``credprov install``: run, check and install plugins."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from credprov.cli._output import REDACTED, print_json
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
    ex.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
    )
    from credprov.cli.config_cmd import add_feature_gates

    add_feature_gates(ex)
    add_common(ex)
    ex.set_defaults(run=run_exec)

    from credprov.cli import plugin_test_cmd

    add_common(plugin_test_cmd.add_test_parser(plugin_sub))

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
    from credprov.api import internal
    from credprov.cli.config_cmd import feature_gates
    from credprov.config import check_bin_dir, check_plugin_binary, load_config
    from credprov.durations import format_duration, parse_duration
    from credprov.images import InvalidImageError, parse_image_name
    from credprov.matching import urls_match_str
    from credprov.plugin.exec import ExecPlugin, PluginError
    from credprov.redact import Redactor

    timeout = parse_duration(args.plugin_timeout)
    if timeout <= 0:
        raise CLIError("--plugin-timeout must be positive")
    check_bin_dir(args.bin_dir)
    config, _ = load_config(args.config, feature_gates(args))
    provider = next((p for p in config.providers if p.name == args.name), None)
    if provider is None:
        names = ", ".join(p.name for p in config.providers)
        raise CLIError(f"no provider {args.name!r} in {args.config} (providers: {names})")
    path = check_plugin_binary(args.bin_dir, provider.name)
    try:
        repo = parse_image_name(args.image)
    except InvalidImageError as exc:
        raise CLIError(f"invalid image {args.image!r}: {exc}") from None
    matched = any(urls_match_str(m, repo) for m in provider.match_images)
    plugin = ExecPlugin(
        provider.name, path, provider.api_version, provider.args, provider.env, timeout
    )
    request = internal.CredentialProviderRequest(image=repo)
    stdin = plugin.request_bytes(request)
    report: dict[str, Any] = {
        "provider": provider.name,
        "command": [path, *provider.args],
        "env": [e.name for e in provider.env],
        "image": args.image,
        "repo": repo,
        "matched": matched,
        "request": stdin.decode("utf-8"),
    }
    failed = False
    try:
        result = plugin.run(request)
    except PluginError as exc:
        report["error"] = str(exc)
        failed = True
        result = None
    if result is not None:
        report["durationSeconds"] = round(result.duration, 4)
        # stderr is free text: scrub the config's env values and show it on one line.
        report["stderr"] = plugin.stderr_text(result.stderr, request)
        try:
            response = plugin.decode(result.stdout)
        except PluginError as exc:
            failed = True
            report["error"] = str(exc)
            report["errorDetail"] = exc.detail if args.show_secrets else None
            response = None
        # Raw stdout holds the passwords in whatever escaping the plugin's encoder chose
        # (Go writes '&' as \u0026...): it is shown only on request, never redacted by search.
        report["stdout"] = (
            result.stdout.decode("utf-8", "replace")
            if args.show_secrets
            else f"<not shown: it may hold secrets; use --show-secrets ({len(result.stdout)} bytes)>"
        )
        if response is not None:
            if not args.show_secrets:
                scrub = Redactor(a.password for a in response.auth.values())
                report["stderr"] = scrub(report["stderr"])
            valid_type = response.cache_key_type in internal.CACHE_KEY_TYPES
            if not valid_type:
                failed = True
                report["error"] = (
                    "credential provider plugin did not return a valid cacheKeyType: "
                    f"{json.dumps(response.cache_key_type)}"
                )
            report["response"] = {
                "cacheKeyType": response.cache_key_type,
                "cacheDuration": (
                    format_duration(response.cache_duration)
                    if response.cache_duration is not None
                    else None
                ),
                "auth": {
                    key: {
                        "username": a.username,
                        "password": a.password if args.show_secrets else REDACTED,
                        "matchesImage": urls_match_str(key, repo),
                    }
                    for key, a in response.auth.items()
                },
            }
    if args.output == "json":
        print_json(report)
        return 1 if failed else 0
    print(f"provider {provider.name}: {' '.join(report['command'])}")
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
    from credprov.install import InstallError, available_plugins, install

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
