"""The doctor across a fleet, end to end: what ``deploy/doctor/`` and ``deploy/npd/`` run.

The planted kubeadm node of ``test_doctor_fleet.py`` (a Python-less ``debootstrap`` root with
the bundle installed by its own ``install``) is judged by the installer image in a private
containerd, with the node's ``/`` read-only at ``/host`` as the DaemonSet mounts it:

* ``doctor --node-root /host --textfile /host-textfile/credprov_doctor.prom`` once (the
  DaemonSet's ``--every`` minus the loop), into a directory bind-mounted read-write like the
  DaemonSet's hostPath; the file is read back with ``prometheus_client``'s text parser, as a
  scrape of node_exporter's textfile collector would re-expose it;
* ``doctor --npd`` as node-problem-detector calls a custom plugin (exit status and at most
  80 characters of stdout), through the image, and from a copy of the bundle made the way
  ``deploy/npd/npd-daemonset-patch.yaml``'s init container makes it (``cp -a``), with the
  rules' own arguments from ``deploy/npd/credprov-doctor-monitor.json``.

The session's bundle and image fixtures are shared with the other e2e modules (conftest).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import CANARY
from tests.e2e import test_doctor_fleet as fleet
from tests.e2e.containerd import Containerd
from tests.e2e.prometheus import start_node_exporter, start_prometheus, wait_for
from tests.e2e.test_doctor_fleet import (
    EXPECTED,
    HOST_MOUNT,
    RUN_FLAGS,
    STATIC_FILE,
    inputs,
    tree_state,
)
from tests.unit.doctor.test_npd import MONITOR, npd_call

pytestmark = pytest.mark.e2e

#: The planted kubeadm node (a module fixture: this module gets its own copy).
node = fleet.node

PROM = "credprov_doctor.prom"
TEXTFILE_MOUNT = "type=bind,src={src},dst=/host-textfile,options=rbind:rw"


def run_image(
    containerd: Containerd, ref: str, root: Path, *args: str, textfile_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``ctr run`` of the installer image as the DaemonSet runs it: ``/`` read-only at
    ``/host``, the textfile directory read-write at ``/host-textfile``, ``args`` given to
    the image's entrypoint."""
    mounts = ["--mount", HOST_MOUNT.format(src=root)]
    if textfile_dir is not None:
        mounts += ["--mount", TEXTFILE_MOUNT.format(src=textfile_dir)]
    return containerd.ctr("run", *RUN_FLAGS, "--snapshotter", "native", *mounts, ref,
                          f"credprov-doctor-ds-{uuid.uuid4().hex[:8]}", *args)  # fmt: skip


def test_the_image_writes_the_textfile_node_exporter_reads(
    containerd: Containerd, installer_ref: str, node: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "textfile_collector"
    out_dir.mkdir()
    before = tree_state(node)
    proc = run_image(containerd, installer_ref, node, "doctor", "--node-root", "/host",
                     "--textfile", f"/host-textfile/{PROM}", *inputs("/host"),
                     textfile_dir=out_dir)  # fmt: skip
    assert tree_state(node) == before
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # the report still prints as asked (-o json)
    assert sorted(p.name for p in out_dir.iterdir()) == [PROM]  # no temp file left
    prom = out_dir / PROM
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644
    text = prom.read_text()
    assert CANARY not in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {f.type for f in families.values()} == {"gauge"}
    checks = {s.labels["id"]: s.labels["status"] for s in families["credprov_doctor_check"].samples}
    assert checks == EXPECTED
    assert {s.labels["subject"] for s in families["credprov_doctor_check"].samples
            if s.labels["id"].startswith("plugin.")} == {"static-credential-provider"}  # fmt: skip
    counts = {s.labels["status"]: s.value for s in families["credprov_doctor_checks"].samples}
    assert counts == {"pass": 13.0, "warn": 0.0, "fail": 0.0, "skip": 1.0}
    assert families["credprov_doctor_up"].samples[0].value == 1.0
    (duration,) = families["credprov_doctor_last_run_duration_seconds"].samples
    assert 0 < duration.value < 60
    (stamp,) = families["credprov_doctor_last_run_timestamp_seconds"].samples
    assert abs(stamp.value - prom.stat().st_mtime) < 60


def test_the_image_answers_npd_as_a_custom_plugin(
    containerd: Containerd, installer_ref: str, node: Path
) -> None:
    healthy = run_image(containerd, installer_ref, node, "doctor", "--npd", "--node-root",
                        "/host")  # fmt: skip
    assert healthy.returncode == 0, healthy.stderr
    message = healthy.stdout.strip()
    assert message.startswith("credprov doctor: no check failed (") and len(message) <= 80
    # A provider config the kubelet would refuse: a problem, named in one short line.
    broken = run_image(containerd, installer_ref, node, "doctor", "--npd", "--node-root",
                       "/host", "--config", STATIC_FILE)  # fmt: skip
    assert broken.returncode == 1, broken.stderr
    assert broken.stdout.strip().startswith("provider-config.valid failed for ")
    assert len(broken.stdout.strip()) <= 80 and CANARY not in broken.stdout + broken.stderr


def test_the_npd_rules_run_the_bundle_copied_as_the_init_container_copies_it(
    bundle_tarball: Path, node: Path, tmp_path: Path
) -> None:
    unpacked = tmp_path / "image"
    unpacked.mkdir()
    subprocess.run(["tar", "xzf", str(bundle_tarball), "-C", str(unpacked)], check=True)
    shared = tmp_path / "credprov"  # the emptyDir NPD mounts at /credprov
    shared.mkdir()
    subprocess.run(["cp", "-a", str(unpacked / "credprov-plugins"), f"{shared}/"], check=True)
    rules = json.loads(MONITOR.read_text())["rules"]
    before = tree_state(node)
    for rule in rules:
        path = rule["path"].replace("/credprov/", f"{shared}/", 1)
        args = [str(node) if a == "/host" else a for a in rule["args"]]
        status, message = npd_call([path, *args], timeout=180)
        assert status == "ok", (rule["type"], message)
        assert message.startswith("credprov doctor: no check failed (")
    assert tree_state(node) == before
    assert os.path.islink(shared / "credprov-plugins" / "doctor")


def test_prometheus_scrapes_the_doctor_through_node_exporter(
    containerd: Containerd, installer_ref: str, node: Path, tmp_path: Path
) -> None:
    """The whole path an operator runs: the image writes the textfile, Debian's
    node_exporter (textfile collector) re-exposes it, Debian's Prometheus scrapes it and
    answers the README's alert expressions."""
    out_dir = tmp_path / "textfile_collector"
    out_dir.mkdir()
    proc = run_image(containerd, installer_ref, node, "doctor", "--node-root", "/host",
                     "--textfile", f"/host-textfile/{PROM}", *inputs("/host"),
                     textfile_dir=out_dir)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    exporter = start_node_exporter(out_dir)
    try:
        scrape = exporter.get()
        # node_exporter parsed the file (a malformed one is dropped and flagged).
        assert "node_textfile_scrape_error 0" in scrape
        doctor = [line for line in scrape.splitlines() if "credprov_doctor_" in line]
        assert any(line.startswith("credprov_doctor_up 1") for line in doctor)
        assert CANARY not in scrape
        prometheus = start_prometheus([exporter.url.removeprefix("http://")])
        try:
            up = wait_for(prometheus, "credprov_doctor_up")
            assert [s["value"][1] for s in up] == ["1"]
            checks = wait_for(prometheus, "credprov_doctor_check")
            assert {s["metric"]["id"]: s["metric"]["status"] for s in checks} == EXPECTED
            assert prometheus.query('credprov_doctor_check{status="fail"} == 1') == []
            assert (
                prometheus.query("time() - credprov_doctor_last_run_timestamp_seconds > 1800") == []
            )
        finally:
            prometheus.stop()
    finally:
        exporter.stop()
