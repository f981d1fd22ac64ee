#!/usr/bin/env python3
"""``credprov doctor``'s KEP-2535 checks on a large node: do they stay linear?

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_doctor_scale.py             # up to 10,000 x 1,000
    .venv/bin/python benchmarks/bench_doctor_scale.py --scale 0.2 # a quick smoke run

For each size (a quarter, half and all of ``--images`` images and ``--pods`` pods) it
builds the tests' healthy kubeadm node plus one pull record per image (written as the
kubelet writes them, most granting every pod), a ``crictl images -o json`` file and an
objects file whose pods run three containers each (``IfNotPresent``, ``Never`` and an
image volume) on images of the node, then times ``run_doctor`` in-process (``no_exec``;
the KEP checks read every record, every image and every pod). It prints the median of
``--rounds`` per size and the ratio to the smallest: linear work doubles with the size,
quadratic work quadruples. A benchmark never fails a build.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.unit.doctor import nodes  # noqa: E402


def _image(i: int) -> str:
    return f"registry-a.example.com/team/app-{i}:v1"


def _ref(i: int) -> str:
    return f"sha256:{i:064x}"


def build(tmp: Path, n_images: int, n_pods: int) -> tuple[Path, Path, Path]:
    """(node root, objects file, images file) of one size."""
    from credprov.pullmanager.types import (
        ImagePullCredentials,
        ImagePulledRecord,
        cache_filename,
        encode_record,
    )

    root = nodes.kubeadm_node(tmp / "node")
    pulled = root / "var/lib/kubelet/image_manager/pulled"
    when = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    for i in range(n_images):
        record = ImagePulledRecord(
            lastUpdatedTime=when,
            imageRef=_ref(i),
            credentialMapping={
                _image(i).rsplit(":", 1)[0]: ImagePullCredentials(nodePodsAccessible=i % 10 != 0)
            },
        )
        path = pulled / cache_filename(_ref(i))
        path.write_bytes(encode_record(record))
        path.chmod(0o600)
    images = {
        "images": [
            {"id": _ref(i), "repoTags": [_image(i)], "repoDigests": [], "size": "1000"}
            for i in range(n_images)
        ]
    }
    images_file = tmp / "images.json"
    images_file.write_text(json.dumps(images))
    rng = random.Random(n_pods)
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": nodes.NODE}}
    ]
    for p in range(n_pods):
        picks = [rng.randrange(n_images) for _ in range(3)]
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{p}", "namespace": "team-a", "uid": f"uid-{p}"},
                "spec": {
                    "nodeName": nodes.NODE,
                    "containers": [
                        {"name": "a", "image": _image(picks[0])},
                        {"name": "b", "image": _image(picks[1]), "imagePullPolicy": "Never"},
                    ],
                    "volumes": [{"name": "m", "image": {"reference": _image(picks[2])}}],
                },
            }
        )
    objects_file = tmp / "objects.json"
    objects_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return root, objects_file, images_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=1_000)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply both sizes")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from credprov.doctor import DoctorOptions, run_doctor

    print(f"credprov doctor --no-exec, KEP checks on large nodes ({args.rounds} rounds, medians)")
    first: float | None = None
    for fraction in (0.25, 0.5, 1.0):
        n_images = max(1, int(args.images * args.scale * fraction))
        n_pods = max(1, int(args.pods * args.scale * fraction))
        with tempfile.TemporaryDirectory() as tmp:
            root, objects, images = build(Path(tmp), n_images, n_pods)
            options = DoctorOptions(
                root=str(root), objects=str(objects), images_file=str(images), no_exec=True
            )
            samples = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                report = run_doctor(options)
                samples.append(time.perf_counter() - start)
        median = statistics.median(samples)
        first = first or median
        found = len(report.by_id("kep2535.preflight"))
        print(
            f"  {n_images:6} images x {n_pods:5} pods: {median * 1000:8.0f} ms  "
            f"x{median / first:5.2f}  ({found} preflight findings)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
