"""auth-provider-gcp start-up benchmark: cold and warm execution of the installed plugin.

What the kubelet pays per cache miss is one plugin process. This measures, side by side in
one run (interleaved rounds, medians), ``auth-provider-gcp`` installed with
``credprov install`` into a temporary bin dir and run with the documented kubelet args
(``get-credentials --v=3``) against a loopback fake metadata server (and fake STS):

- ``floor``: ``python -I -c "import json, sys"`` with the same interpreter;
- ``warm``: the plugin answering from its persistent cache (the kubelet restarted or its
  cache expired, the plugin's answer is still valid): no google-auth, no requests, no HTTP;
- ``cold``: the plugin with an empty cache: imports google-auth and requests, asks the
  metadata server for the node's token and email;
- ``cold-wi``: the same with workload identity (a service-account token in the request,
  exchanged at the fake STS instead of the metadata calls).

Target (the SDK's): warm ≤ 1.5 × floor.

Usage: ``.venv/bin/python benchmarks/bench_plugin_gcp.py [--rounds N] [--json FILE]``.
Always exits 0; prints ``UNEXPECTED`` next to a missed target.
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

from bench_plugins import _time  # the timing helper of the SDK's benchmark (same directory)

REPO = Path(__file__).resolve().parents[1]

G = "credentialprovider.kubelet.k8s.io"
IMAGE = "us-docker.pkg.dev/my-project/repo/app"
ARGS = ["get-credentials", "--v=3"]
IDP = "https://container.googleapis.com/v1/projects/my-project/locations/l/clusters/c"


def _request(token: str = "") -> bytes:
    body: dict[str, object] = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1"}
    body["image"] = IMAGE
    if token:
        body["serviceAccountToken"] = token
        body["serviceAccountAnnotations"] = {"iam.gke.io/enable-wi-image-pull": "true"}
    return json.dumps(body).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))  # the tests' fake metadata server and STS
    from credprov.install import install
    from tests.fakes.gcp import FakeMetadataServer, FakeSTSServer

    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-gcp-"))
    samples: dict[str, list[float]] = {"floor": [], "warm": [], "cold": [], "cold-wi": []}
    try:
        with FakeMetadataServer() as mds, FakeSTSServer() as sts:
            bin_dir = tmp / "bin"
            bin_dir.mkdir()
            (result,) = install(str(bin_dir), ["auth-provider-gcp"])
            launcher = result.path
            base = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GCE_METADATA_HOST": mds.host,
                "CREDPROV_GCP_STS_ENDPOINT": sts.endpoint,
            }
            warm_cache = tmp / "warm-cache"

            def env_with(cache: Path) -> dict[str, str]:
                return {**base, "CREDPROV_PLUGIN_CACHE_DIR": str(cache)}

            plain = [launcher, *ARGS]
            wi = [launcher, *ARGS, f"--identity-provider={IDP}", "--project-id=my-project"]
            request = _request()
            wi_request = _request("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.sig")
            # Prime the warm cache and write bytecode once.
            _time(plain, env_with(warm_cache), request)
            _time(wi, env_with(tmp / "prime-wi"), wi_request)

            for i in range(args.rounds):
                samples["floor"].append(
                    _time([sys.executable, "-I", "-c", "import json, sys"], base, b"")
                )
                samples["warm"].append(_time(plain, env_with(warm_cache), request))
                cold = tmp / f"cold-{i}"
                samples["cold"].append(_time(plain, env_with(cold), request))
                samples["cold-wi"].append(_time(wi, env_with(cold), wi_request))
                shutil.rmtree(cold, ignore_errors=True)
            http_calls = {"metadata": len(mds.requests), "sts": len(sts.requests)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    floor = med["floor"]
    print(f"auth-provider-gcp start-up, median of {args.rounds} interleaved rounds")
    print(f"  floor    python -I -c 'import json, sys'   {floor:7.1f} ms   1.00x floor")
    labels = {
        "warm": "plugin cache hit",
        "cold": "metadata server (node SA)",
        "cold-wi": "STS (workload identity)",
    }
    for name, label in labels.items():
        print(f"  {name:8s} {label:32s} {med[name]:7.1f} ms   {med[name] / floor:.2f}x floor")
    warm_ratio = med["warm"] / floor
    print(
        f"  warm / floor = {warm_ratio:.2f} (target <= 1.5)"
        + ("" if warm_ratio <= 1.5 else "  UNEXPECTED")
    )
    print(f"  cold / warm  = {med['cold'] / med['warm']:.2f}")
    print(f"  HTTP requests served by the fakes: {http_calls}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"median_ms": med, "samples_s": samples, "rounds": args.rounds}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
