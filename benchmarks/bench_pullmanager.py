"""KEP-2535 pull manager benchmark: verification checks, start-up, memory.

Reports, in one run:
- ``must_attempt_image_pull`` calls per second with 10,000 records on disk, for the file
  store alone and with the in-memory LRU layer in front (the manager's default sizes: 1024
  intents, 2000 records), on a hot set of images (what a node checks again and again) and
  uniformly over all 10,000. Each pass times both stores on the
  same checks back to back (which goes first alternates from pass to pass) and the ratio is
  taken within the pass, so a burst of load from a neighbour lands in one pass's ratio rather
  than in one side of every ratio; the report gives the median and the range over passes.
  The (image, imageRef) arguments are built before the clock starts, as the kubelet has them
  at hand: formatting two strings per call would otherwise be a fifth of a cached check;
- start-up time of an ``ImagePullManager`` over 10,000 records and 1,000 dangling intents
  (listing, LRU warm-up, housekeeping against a runtime that has 1,000 images), each in a
  fresh process, median and range;
- resident memory (max RSS) of a process holding such a manager.

Usage: ``.venv/bin/python benchmarks/bench_pullmanager.py [--records N] [--intents N]
[--checks N] [--passes N] [--startups N] [--quick]``.
Always exits 0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from credprov.pullmanager.memstore import MAX_INTENTS_CACHE_SIZE, MAX_PULLED_RECORDS_CACHE_SIZE
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    ImagePullIntent,
    ImagePullSecret,
    cache_filename,
    encode_intent,
    encode_record,
)

SECRET = ImagePullSecret(uid="uid-1", namespace="ns", name="regcred", credential_hash="h" * 64)


def image(i: int) -> str:
    return f"registry.example.com/team/app{i}:v1"


def ref(i: int) -> str:
    return f"sha256:{i:064x}"


def populate(root: Path, records: int, intents: int) -> None:
    """Write record and intent files directly (setup speed; same bytes the store writes)."""
    pulled = root / "image_manager" / "pulled"
    pulling = root / "image_manager" / "pulling"
    pulled.mkdir(parents=True, mode=0o700)
    pulling.mkdir(parents=True, mode=0o700)
    now = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for i in range(records):
        rec = ImagePulledRecord(
            lastUpdatedTime=now,
            imageRef=ref(i),
            credentialMapping={
                image(i).rsplit(":", 1)[0]: ImagePullCredentials(kubernetesSecrets=[SECRET])
            },
        )
        (pulled / cache_filename(ref(i))).write_bytes(encode_record(rec))
    for i in range(intents):
        intent = ImagePullIntent(image=f"registry.example.com/dangling/x{i}:v1")
        (pulling / cache_filename(intent.image)).write_bytes(encode_intent(intent))
    for p in (*pulled.iterdir(), *pulling.iterdir()):
        p.chmod(0o600)


def checks_per_second(manager: object, calls: list[tuple[str, str]]) -> float:
    get_creds = lambda: ([SECRET], None)  # noqa: E731
    must = manager.must_attempt_image_pull  # type: ignore[attr-defined]
    start = time.perf_counter()
    for image_name, image_ref in calls:
        if must(image_name, image_ref, get_creds):
            raise RuntimeError("expected a credential-record hit")
    return len(calls) / (time.perf_counter() - start)


def spread(values: list[float], fmt: str) -> str:
    """``median (min-max)`` of ``values``, each formatted with ``fmt``."""
    med = statistics.median(values)
    return f"{med:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def startup_child(root: str, runtime_images: int) -> None:
    """Run in a subprocess: construct a manager, print its start-up time and max RSS."""
    from credprov.pullmanager.interfaces import RuntimeImage
    from credprov.pullmanager.manager import ImagePullManager

    class Runtime:
        def list_images(self) -> list[RuntimeImage]:
            return [RuntimeImage(id=ref(i), repo_tags=(image(i),)) for i in range(runtime_images)]

    start = time.perf_counter()
    manager = ImagePullManager(root, "NeverVerifyPreloadedImages", runtime=Runtime())
    elapsed = time.perf_counter() - start
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"startup_s": elapsed, "max_rss_kib": rss_kib, "ok": manager is not None}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--intents", type=int, default=1_000)
    parser.add_argument("--checks", type=int, default=5_000)
    parser.add_argument("--passes", type=int, default=9)
    parser.add_argument("--startups", type=int, default=5)
    parser.add_argument("--startup-child", nargs=2, metavar=("ROOT", "IMAGES"))
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1,000 records, 100 intents, 2 passes of 1,000 checks, 1 start-up (CI smoke run)",
    )
    args = parser.parse_args()
    if args.quick:
        args.records, args.intents, args.checks, args.passes = 1_000, 100, 1_000, 2
        args.startups = 1
    if args.startup_child:
        startup_child(args.startup_child[0], int(args.startup_child[1]))
        return 0

    from credprov.pullmanager.fsstore import FSPullRecordsAccessor
    from credprov.pullmanager.manager import ImagePullManager

    tmp = Path(tempfile.mkdtemp(prefix="credprov-bench-pm-"))
    try:
        root = tmp / "kubelet"
        t0 = time.perf_counter()
        populate(root, args.records, args.intents)
        setup = time.perf_counter() - t0
        fs_only = ImagePullManager(
            str(root), "NeverVerifyPreloadedImages", accessor=FSPullRecordsAccessor(str(root))
        )
        layered = ImagePullManager(str(root), "NeverVerifyPreloadedImages")
        rng = random.Random(7)
        hot = [rng.randrange(args.records) for _ in range(40)]
        patterns = {
            "hot set of 40 images": [hot[i % len(hot)] for i in range(args.checks)],
            f"uniform over {args.records}": [
                rng.randrange(args.records) for _ in range(args.checks)
            ],
        }
        # Built once: every pass and both stores check the very same string objects.
        arguments = {name: [(image(i), ref(i)) for i in idx] for name, idx in patterns.items()}
        stores = {"file store": fs_only, "file store + LRU": layered}
        results: dict[str, dict[str, list[float]]] = {
            p: {"file store": [], "file store + LRU": [], "ratio": []} for p in patterns
        }
        for n in range(args.passes):
            for name, calls in arguments.items():
                order = list(stores) if n % 2 == 0 else list(reversed(stores))
                got = {store: checks_per_second(stores[store], calls) for store in order}
                for store, rate in got.items():
                    results[name][store].append(rate)
                results[name]["ratio"].append(got["file store + LRU"] / got["file store"])

        startups = []
        for _ in range(args.startups):
            proc = subprocess.run(
                [sys.executable, __file__, "--startup-child", str(root), str(args.intents)],
                capture_output=True,
                text=True,
                check=False,
                # Bytecode as an installed node has it: an environment that forbids writing
                # it would put compiling the pull manager's modules inside the window.
                env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            )
            if proc.returncode != 0:
                print("start-up child failed:", proc.stderr[-500:])
                break
            startups.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            # Housekeeping converted the intents that match runtime images: restore them.
            shutil.rmtree(root)
            populate(root, args.records, args.intents)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"pull manager, {args.records:,} records + {args.intents:,} dangling intents on disk "
        f"(written in {setup:.1f} s); {args.passes} interleaved passes of {args.checks:,} "
        "checks; median (min-max) over passes; LRU layer at the manager's default sizes "
        f"({MAX_INTENTS_CACHE_SIZE} intents, {MAX_PULLED_RECORDS_CACHE_SIZE} records)"
    )
    for name, by_store in results.items():
        fs = spread(by_store["file store"], ",.0f")
        lru = spread(by_store["file store + LRU"], ",.0f")
        print(f"  must_attempt_image_pull, {name}:")
        print(f"    file store alone        {fs} checks/s")
        print(f"    file store + LRU layer  {lru} checks/s")
        print(f"    ratio within a pass     {spread(by_store['ratio'], '.2f')}x")
    if startups:
        s = spread([x["startup_s"] * 1000 for x in startups], ".0f")
        rss = statistics.median(x["max_rss_kib"] for x in startups) / 1024
        print(
            f"  start-up (list {args.records:,} records + {args.intents:,} intents, LRU warm-up, "
            f"housekeeping vs {args.intents:,} runtime images): {s} ms over {len(startups)} "
            f"runs; max RSS {rss:.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
