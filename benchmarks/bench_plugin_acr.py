"""acr-credential-provider start-up benchmark: cold and warm runs of the installed plugin.

What the kubelet pays per cache miss is one plugin process. This measures, side by side in
one run (interleaved rounds, medians), for ``acr-credential-provider`` installed with
``credprov install`` into a temporary bin dir, against the fake Azure of the tests (IMDS,
``/v2/`` challenge and ``/oauth2/exchange`` on 127.0.0.1, HTTPS with a throw-away CA):

- ``floor``: ``python -I -c "import json, sys"`` with the same interpreter;
- ``warm``: the plugin answering from its persistent cache (managed-identity answer cached
  by an earlier run: no azure-identity, no requests, no network);
- ``cold-mi``: empty cache, ``useManagedIdentityExtension: true``: imports azure-identity and
  requests, gets an IMDS token, the challenge and the exchange;
- ``cold-sp``: empty cache, service principal: the handler and ``azure.json``, no network;
- ``not-acr``: an image that is not ACR (``0s``, never cached): the handler runs every time.

Usage: ``.venv/bin/python benchmarks/bench_plugin_acr.py [--rounds N] [--json FILE]``.
Always exits 0; prints ``UNEXPECTED`` next to a missed target (warm ≤ 1.5 × floor).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_plugins import _time  # noqa: E402

G = "credentialprovider.kubelet.k8s.io"


def _request(image: str) -> bytes:
    doc = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", "image": image}
    return json.dumps(doc).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()

    from credprov.install import install
    from tests.fakes import acr as fakes

    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-acr-"))
    samples: dict[str, list[float]] = {
        "floor": [],
        "warm": [],
        "cold-mi": [],
        "cold-sp": [],
        "not-acr": [],
    }
    try:
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (result,) = install(str(bin_dir), ["acr-credential-provider"])
        launcher = result.path
        mi = tmp / "azure-mi.json"
        mi.write_text(json.dumps({"useManagedIdentityExtension": True, "tenantId": "tenant-node"}))
        sp = tmp / "azure-sp.json"
        sp.write_text(json.dumps({"aadClientId": "sp", "aadClientSecret": "not-a-secret"}))
        cert = fakes.Certificate.create(tmp / "cert")
        with fakes.running(cert) as fake:
            base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            base.update(fakes.environment(fake, cert))
            base["CREDPROV_ACR_MAX_RETRIES"] = "0"

            def env(cache: Path) -> dict[str, str]:
                return {**base, "CREDPROV_PLUGIN_CACHE_DIR": str(cache)}

            acr = _request("myacr.azurecr.io/team/app")
            warm_cache = tmp / "warm-cache"
            _time([launcher, str(mi)], env(warm_cache), acr)  # prime the cache and bytecode
            _time([launcher, str(sp)], env(tmp / "prime"), acr)
            for i in range(args.rounds):
                samples["floor"].append(
                    _time([sys.executable, "-I", "-c", "import json, sys"], base, b"")
                )
                samples["warm"].append(_time([launcher, str(mi)], env(warm_cache), acr))
                cold = tmp / f"cold-{i}"
                samples["cold-mi"].append(_time([launcher, str(mi)], env(cold), acr))
                shutil.rmtree(cold, ignore_errors=True)
                samples["cold-sp"].append(_time([launcher, str(sp)], env(cold), acr))
                shutil.rmtree(cold, ignore_errors=True)
                samples["not-acr"].append(
                    _time([launcher, str(mi)], env(warm_cache), _request("docker.io/library/x"))
                )
            exchanges = len(fake.requests("exchange"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    floor = med["floor"]
    print(f"acr-credential-provider start-up, median of {args.rounds} interleaved rounds")
    labels = {
        "floor": "python -I -c 'import json, sys'",
        "warm": "plugin cache hit",
        "cold-mi": "managed identity: IMDS + challenge + exchange",
        "cold-sp": "service principal (no network)",
        "not-acr": "not an ACR image (never cached)",
    }
    for name, label in labels.items():
        print(f"  {name:8s} {label:48s}{med[name]:8.1f} ms   {med[name] / floor:5.2f}x floor")
    warm_ratio = med["warm"] / floor
    print(
        f"  warm / floor    = {warm_ratio:.2f} (target <= 1.5)"
        + ("" if warm_ratio <= 1.5 else "  UNEXPECTED")
    )
    print(f"  cold-mi / warm  = {med['cold-mi'] / med['warm']:.2f}")
    expected = args.rounds + 1
    print(
        f"  token exchanges = {exchanges} (expected {expected}: one per cold-mi run + priming)"
        + ("" if exchanges == expected else "  UNEXPECTED")
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"median_ms": med, "samples_s": samples, "rounds": args.rounds}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
