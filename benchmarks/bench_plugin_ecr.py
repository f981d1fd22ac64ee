"""ECR plugin start-up benchmark: cold and warm runs of the installed executable.

What the kubelet pays per cache miss is one plugin process. For ``ecr-credential-provider``
installed with ``credprov install`` into a temporary bin dir, and run against moto's ECR on
127.0.0.1 (the tests' fake AWS endpoint, set with ``AWS_ENDPOINT_URL``), this measures side
by side in one run (interleaved rounds, medians):

- ``floor``: ``python -I -c "import json, sys"`` with the same interpreter;
- ``warm``: the plugin answering from its persistent cache (the kubelet restarted or its
  cache expired, the plugin's answer is still within the token's half-life): no AWS SDK
  import, no network;
- ``cold``: the plugin with an empty cache: imports botocore, builds a client, calls
  ``GetAuthorizationToken`` on the loopback endpoint, caches the answer;
- ``sdk import``: ``python -I -c "import botocore.session, botocore.client"``, for scale:
  the part of ``cold`` that only the SDK costs.

Target: warm ≤ 1.5 × floor (the SDK's promise for any plugin's warm path).

Usage: ``.venv/bin/python benchmarks/bench_plugin_ecr.py [--rounds N] [--json FILE]``.
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

from bench_plugins import _time  # same timing helper as the SDK's plugin benchmark

REPO = Path(__file__).resolve().parents[1]
G = "credentialprovider.kubelet.k8s.io"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/team/app"
REQUEST = json.dumps(
    {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/v1", "image": IMAGE}
).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))  # the tests' fake AWS endpoint
    from credprov.install import install
    from tests.fakes.ecr import fake_aws

    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-ecr-"))
    samples: dict[str, list[float]] = {"floor": [], "warm": [], "cold": [], "sdk import": []}
    try:
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (result,) = install(str(bin_dir), ["ecr-credential-provider"])
        launcher = [result.path]
        with fake_aws() as aws:
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(tmp),
                "AWS_ACCESS_KEY_ID": "AKIDBENCH",
                "AWS_SECRET_ACCESS_KEY": "bench-not-a-secret",
                "AWS_ENDPOINT_URL": aws.url,
                "AWS_CONFIG_FILE": str(tmp / "no-aws-config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
                "AWS_EC2_METADATA_DISABLED": "true",
            }

            def env_with(cache: Path) -> dict[str, str]:
                return {**env, "CREDPROV_PLUGIN_CACHE_DIR": str(cache)}

            warm_cache = tmp / "warm-cache"
            _time(launcher, env_with(warm_cache), REQUEST)  # prime the cache and bytecode
            _time(launcher, env_with(warm_cache), REQUEST)
            sdk = [sys.executable, "-I", "-c", "import botocore.session, botocore.client"]
            for i in range(args.rounds):
                samples["floor"].append(
                    _time([sys.executable, "-I", "-c", "import json, sys"], env, b"")
                )
                samples["warm"].append(_time(launcher, env_with(warm_cache), REQUEST))
                cold_cache = tmp / f"cold-{i}"
                samples["cold"].append(_time(launcher, env_with(cold_cache), REQUEST))
                shutil.rmtree(cold_cache, ignore_errors=True)
                samples["sdk import"].append(_time(sdk, env, b""))
            calls = len(aws.seen)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    warm_ratio = med["warm"] / med["floor"]
    print(f"ecr-credential-provider start-up, median of {args.rounds} interleaved rounds")
    print(f"  (cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}; {calls} AWS calls)")
    rows = [
        ("floor", "python -I -c 'import json, sys'"),
        ("warm", "plugin, answered from its cache"),
        ("cold", "plugin, GetAuthorizationToken"),
        ("sdk import", "python -I -c 'import botocore...'"),
    ]
    for key, what in rows:
        print(f"  {key:10s} {what:34s} {med[key]:7.1f} ms   {med[key] / med['floor']:6.2f}x floor")
    print(
        f"  warm / floor = {warm_ratio:.2f} (target <= 1.5)"
        + ("" if warm_ratio <= 1.5 else "  UNEXPECTED")
    )
    print(f"  cold / warm  = {med['cold'] / med['warm']:.1f}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"median_ms": med, "samples_s": samples, "rounds": args.rounds}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
