"""``credprov simulate SCENARIO.yaml``: replay pods asking a node for images, KEP-2535 on.

Mirrors the kubelet's ``EnsureImageExists`` with the ``KubeletEnsureSecretPulledImages``
pull manager (:mod:`credprov.kubelet.ensure`, :mod:`credprov.pullmanager.manager`): each
pod step prints what the kubelet would decide (pulled / used the present image /
``ErrImageNeverPull`` / pull failed), its events and the
``kubelet_image_manager_ensure_image_requests_total`` labels. The node is a fake runtime and
registry (:mod:`credprov.testing.runtime`); the records are real files in the scenario's
``root`` (a temporary directory by default), so ``credprov pull-records`` can inspect them.
The scenario format is documented in ``docs/simulate.md``; the model and the engine are
:mod:`credprov.kubelet.scenario` and :mod:`credprov.kubelet.simulation`. This module parses
arguments and renders results only. Passwords are never printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.cmdoptions import print_line
from credprov.errors import EXIT_FAILURE, EXIT_OK
from credprov.kubelet.node import record_credential_kinds

if TYPE_CHECKING:
    from credprov.kubelet.scenario import Scenario


def add_parser(sub: Any) -> None:
    """Add ``simulate`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "simulate",
        help="replay a scenario of pods asking a node for images (KEP-2535 pull records)",
        description=(
            "Replay SCENARIO (YAML): a node with a verification policy, images already "
            "present, a fake registry with access rules, and steps (pods requesting images, "
            "kubelet restarts, image removals, secret rotations). For every pod step print "
            "the kubelet's decision, events and metric labels. Exit 1 when the scenario is "
            "invalid or a step's 'expect' is not met. The records go under --root-dir (default: a "
            "new temporary directory, removed afterwards); the path used is printed. With "
            "--containerd-config-path or --registries-conf, each pull also says which hosts "
            "the runtime contacts (docs/mirrors.md). See docs/simulate.md."
        ),
    )
    p.add_argument("scenario", metavar="SCENARIO.yaml")
    opts.ROOT_DIR.add(p)
    opts.add_common(p, *opts.GO_BEHAVIOUR, opts.CONTAINERD_CONFIG_PATH, opts.REGISTRIES_CONF)
    p.set_defaults(run=run)


@contextlib.contextmanager
def _root(scenario: Scenario, override: str | None) -> Iterator[str]:
    if override is not None:
        yield os.path.abspath(override)
        return
    with tempfile.TemporaryDirectory(prefix="credprov-simulate-") as tmp:
        yield tmp


def run(args: argparse.Namespace) -> int:
    """Replay the scenario and print each step; exit 1 when an expectation is not met."""
    from credprov.kubelet.scenario import load_scenario
    from credprov.kubelet.simulation import Simulation

    scenario = load_scenario(args.scenario)
    mirrors = _mirrors(args)
    with _root(scenario, args.root_dir) as root:
        try:
            sim = Simulation(scenario, root, mirrors)
        except (ValueError, OSError) as exc:
            raise CLIError(f"scenario {scenario.path}: {exc}") from None
        results = [sim.run_step(step) for step in scenario.steps]
        records, record_errors = sim.records() if scenario.feature_gate else ([], [])
    failed = [r for r in results if r.get("ok") is False]
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(
            {
                "scenario": scenario.path,
                "root": root,
                "rootTemporary": args.root_dir is None,
                "policy": scenario.policy if scenario.feature_gate else None,
                "featureGate": scenario.feature_gate,
                "steps": results,
                "records": records,
                "recordErrors": record_errors,
                "ok": not failed,
            }
        )
    else:
        _print_text(scenario, results, records)
        where = " (a temporary directory, removed afterwards)" if args.root_dir is None else ""
        print_line(f"records were written under {root}{where}")
    if failed:
        import sys

        for r in failed:
            print(
                opts.one_line(
                    f"credprov: step {r['step']}: expected {r['expect']}, got {r['decision']}"
                ),
                file=sys.stderr,
            )
        return EXIT_FAILURE
    return EXIT_OK


def _mirrors(args: argparse.Namespace) -> list[Any]:
    """The runtimes' mirror configs named on the command line (files on this machine)."""
    if args.containerd_config_path is None and args.registries_conf is None:
        return []
    from credprov.base.rootfs import NodeRoot
    from credprov.cri.mirrors import load_runtime_mirrors

    def absolute(path: str | None) -> str | None:
        return None if path is None else os.path.abspath(path)

    return load_runtime_mirrors(
        NodeRoot("/"),
        containerd_config_path=absolute(args.containerd_config_path),
        registries_conf=absolute(args.registries_conf),
    )


def _print_routes(routes: list[dict[str, Any]]) -> None:
    for route in routes:
        hosts = " then ".join(
            f"{c['host']} ({c['role']}; {', '.join(c['purposes'])})" for c in route["contacts"]
        )
        print_line(f"    runtime {route['runtime']} contacts: {hosts or 'no host (refused)'}")


def _print_text(
    scenario: Scenario, results: list[dict[str, Any]], records: list[dict[str, Any]]
) -> None:
    gate = f"policy {scenario.policy}" if scenario.feature_gate else "feature gate off"
    print_line(f"scenario {scenario.path} ({gate})")
    for r in results:
        if r.get("name"):
            print_line(f"[{r['step']}] {r['name']}")
            indent = "    "
        else:
            indent = f"[{r['step']}] "
        if r["action"] != "pod":
            print_line(f"{indent}{r['action']}: {r['detail']}")
            continue
        what = f"image volume {r['imageVolume']}:" if r.get("imageVolume") else "image"
        print_line(f"{indent}pod {r['pod']} {what} {r['image']} ({r['imagePullPolicy']})")
        outcome = {
            "pulled": "pulled",
            "present": "used the image already present",
            "never-pull": "refused: ErrImageNeverPull",
            "failed": f"pull failed: {r['error']}",
            "error": f"error: {r['error']}",
        }[r["decision"]]
        check = ""
        if "ok" in r:
            check = "  [as expected]" if r["ok"] else f"  [EXPECTED {r['expect']}]"
        print_line(f"    decision: {outcome}{check}")
        for e in r["events"]:
            print_line(f"    event: {e['type']} {e['reason']}: {e['message']}")
        if r["decision"] == "error" and not r["events"]:
            print_line(f"    message: {r['message']}")
        for a in r["attempts"]:
            status = "ok" if a["error"] is None else "denied"
            print_line(f"    tried: {a['credential']} -> {status}")
        _print_routes(r.get("runtimeRoutes", []))
        if r["recorded"] is not None:
            creds = json.dumps(r["recorded"]["credentials"], separators=(",", ":"))
            print_line(f"    recorded: {r['recorded']['imageRef']} {creds}")
        labels = " ".join(f"{k}={v}" for k, v in r["metricLabels"].items())
        print_line(f"    metric: {labels}")
    if scenario.feature_gate:
        print_line(f"records at the end: {len(records)}")
        for rec in records:
            print_line(f"  {rec['imageRef']}: {record_credential_kinds(rec, ', ')}")
