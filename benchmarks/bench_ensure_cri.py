"""ensure-image on a real containerd: what KEP-2535's local verification saves.

Starts its own ``docker-registry`` (htpasswd, bcrypt cost 4, 127.0.0.1) holding one tiny
private image, and containerd with its CRI plugin (both as in tests/e2e), pulls the image
once with a pod's pull secret, then measures, side by side in interleaved rounds (medians):

- ``known``: a pod whose Secret already pulled the image, ``IfNotPresent``, the default
  policy (``NeverVerifyPreloadedImages``): the credential hash is found in the pull record
  and the image is used as present, **no registry round-trip**;
- ``new credentials``: the same image for a pod whose Secret holds credentials the record
  has never seen (a fresh registry account per round): verification is forced, the
  kubelet pulls with them and the registry checks them (**manifest round-trip**: the
  layers are already there), and the record learns them;
- ``Always``: ``imagePullPolicy: Always`` with the known Secret: the pre-KEP-2535 way to
  protect private images, a manifest round-trip on every start.

Each is measured in-process (one ``EnsureImage.ensure_image_exists`` call on a long-lived
kubelet-like node: what a kubelet pays) and as whole ``credprov ensure-image`` CLI runs
(a new process each: interpreter, imports, CRI connection, pull-manager start-up). The
registry requests each variant makes are counted from the registry's access log.

Usage: ``.venv/bin/python benchmarks/bench_ensure_cri.py [--rounds N] [--cli-rounds M]
[--json FILE]``. Needs root, containerd, docker-registry and skopeo (else it says so and
exits 0). Always exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # the e2e helpers start the registry and containerd
    sys.path.insert(0, str(REPO_ROOT))


def _secret(name: str, namespace: str, registry: str, user: str, password: str) -> dict[str, Any]:
    from tests.e2e.stack import pull_secret

    return pull_secret(name, namespace, registry, user, password)


@contextlib.contextmanager
def _stack(users: dict[str, str]) -> Iterator[tuple[Any, Any, Any]]:
    """(registry, pushed image, containerd); everything stopped on the way out."""
    from tests.e2e.containerd import running_containerd
    from tests.e2e.registry import push_image, running_registry

    with running_registry(users) as registry:
        image = push_image(registry, "private/bench")
        with running_containerd([registry]) as ctrd:
            yield registry, image, ctrd


def _requests_per_call(registry: Any, call: Callable[[], Any]) -> int:
    mark = registry.request_count()
    call()
    time.sleep(0.2)  # the access log line follows the response
    return len(registry.requests(mark))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from credprov.credentialprovider.chain import PodInfo
    from credprov.credentialprovider.engine import Engine
    from credprov.cri.client import CRIRuntime
    from credprov.kubelet.ensure import Container
    from credprov.kubelet.node import KubeletNode, ProviderErrors
    from credprov.pullmanager.metrics import PullManagerMetrics
    from tests.e2e.stack import KubeletCLI, pod

    # One account for the known pod, one fresh account per "new credentials" call.
    fresh_needed = args.rounds + args.cli_rounds + 4
    users = {"known": "known-pass"} | {f"robot-{i}": f"pass-{i}" for i in range(fresh_needed)}
    fresh = iter(sorted(k for k in users if k.startswith("robot-")))
    out: dict[str, Any] = {"rounds": args.rounds, "cli_rounds": args.cli_rounds}

    with _stack(users) as (registry, image, ctrd), tempfile.TemporaryDirectory() as tmp:
        known_secret = _secret("regcred", "team-a", registry.address, "known", "known-pass")

        def fresh_secret() -> tuple[str, dict[str, Any]]:
            user = next(fresh)
            ns = f"team-{user}"
            return ns, _secret("regcred", ns, registry.address, user, users[user])

        # -- in-process: one long-lived node, as a kubelet --
        cli = KubeletCLI(Path(tmp), ctrd.endpoint)  # the CLI runs later use the same root
        root = cli.root
        runtime = CRIRuntime(ctrd.endpoint)
        try:
            node = KubeletNode(
                runtime,
                str(root),
                "NeverVerifyPreloadedImages",
                credentials=Engine(),
                on_provider_error=ProviderErrors(),
                metrics=PullManagerMetrics(),
            )
            ensure = node.ensure.ensure_image_exists
            pod_a = PodInfo("team-a", "pod-a", "uid-a", "default")
            if_not_present = Container(image.ref, "IfNotPresent", "app")
            always = Container(image.ref, "Always", "app")

            def known() -> Any:
                return ensure(pod_a, if_not_present, [known_secret])

            def new_credentials() -> Any:
                ns, secret = fresh_secret()
                return ensure(PodInfo(ns, "pod", "uid-" + ns, "default"), if_not_present, [secret])

            def always_pull() -> Any:
                return ensure(pod_a, always, [known_secret])

            first = known()  # the one real pull
            assert first.decision == "pulled", (first.decision, first.message)
            expect = {"known": "present", "new credentials": "pulled", "Always": "pulled"}
            calls = {"known": known, "new credentials": new_credentials, "Always": always_pull}
            out["registry_requests_per_call"] = {
                name: _requests_per_call(registry, call) for name, call in calls.items()
            }
            samples: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(args.rounds):
                for name, call in calls.items():
                    start = time.perf_counter()
                    result = call()
                    samples[name].append(time.perf_counter() - start)
                    if result.decision != expect[name]:
                        raise RuntimeError(f"{name}: {result.decision}: {result.message}")
        finally:
            runtime.close()
        out["in_process_ms"] = {k: statistics.median(v) * 1000 for k, v in samples.items()}
        out["all_in_process_ms"] = {k: [s * 1000 for s in v] for k, v in samples.items()}

        # -- whole CLI runs: a new process each --
        cli_samples: dict[str, list[float]] = {"known": [], "new credentials": [], "Always": []}
        pod_known = pod("pod-a", "team-a", image.ref, secrets=["regcred"])
        pod_always = pod("pod-a", "team-a", image.ref, policy="Always", secrets=["regcred"])

        def timed(name: str, pod_obj: dict[str, Any], secrets: list[dict[str, Any]]) -> None:
            start = time.perf_counter()
            outcome = cli.ensure(pod_obj, secrets)
            cli_samples[name].append(time.perf_counter() - start)
            if outcome.code != 0 or outcome.decisions != [expect[name]]:
                raise RuntimeError(f"CLI {name}: {outcome}")

        warm_up = cli.ensure(pod_known, [known_secret])  # bytecode, OS caches
        assert warm_up.decisions == ["present"], str(warm_up)
        for _ in range(args.cli_rounds):
            timed("known", pod_known, [known_secret])
            ns, secret = fresh_secret()
            timed("new credentials", pod("pod", ns, image.ref, secrets=["regcred"]), [secret])
            timed("Always", pod_always, [known_secret])
        floor: list[float] = []
        for _ in range(args.cli_rounds):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "credprov", "--version"], capture_output=True)
            floor.append(time.perf_counter() - start)
        out["cli_ms"] = {k: statistics.median(v) * 1000 for k, v in cli_samples.items()}
        out["cli_ms"]["floor: credprov --version"] = statistics.median(floor) * 1000
        out["all_cli_ms"] = {k: [s * 1000 for s in v] for k, v in cli_samples.items()}
    return out


def report(out: dict[str, Any]) -> None:
    ip, cli, reqs = out["in_process_ms"], out["cli_ms"], out["registry_requests_per_call"]
    print(f"ensure-image on containerd, image present; medians of {out['rounds']} interleaved")
    print(f"rounds in-process and {out['cli_rounds']} CLI rounds")
    print(f"{'variant':<18}{'registry requests':>18}{'in-process':>14}{'ratio':>8}"
          f"{'CLI run':>12}{'ratio':>8}")  # fmt: skip
    for name in ("known", "new credentials", "Always"):
        flag = "  UNEXPECTED" if name == "known" and reqs[name] != 0 else ""
        print(
            f"{name:<18}{reqs[name]:>18}{ip[name]:>11.2f} ms{ip[name] / ip['known']:>7.1f}x"
            f"{cli[name]:>9.0f} ms{cli[name] / cli['known']:>7.2f}x{flag}"
        )
    print(f"{'credprov --version':<18}{'':>18}{'':>14}{'':>8}"
          f"{cli['floor: credprov --version']:>9.0f} ms")  # fmt: skip
    print(
        "ratios are against 'known'. The in-process figures are the kubelet's cost; a CLI run "
        "adds a Python start-up, imports and the pull manager's start-up to each."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="in-process rounds")
    parser.add_argument("--cli-rounds", type=int, default=7, help="CLI rounds")
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    args = parser.parse_args()
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    print(f"cpus {os.cpu_count()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    import pytest  # the e2e helpers skip (raise) when a tool is missing

    started = time.perf_counter()
    try:
        out = run(args)
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        print(f"skipped: {exc}")
        return 0
    except Exception as exc:  # a benchmark never fails a build
        print(f"error: {type(exc).__name__}: {exc}")
        return 0
    out["total_s"] = time.perf_counter() - started
    report(out)
    print(f"total {out['total_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
