"""``credprov.base.textfile``: prometheus_client's exposition bytes without prometheus_client.

The renderer is checked against ``prometheus_client.generate_latest`` itself (gauges,
counters, histograms; label values that need escaping; values Go writes with an exponent),
read back by :func:`parse_samples` and by Prometheus's own parser, and the writer against
the rules node_exporter's textfile collector needs (atomic, 0644, regular files only).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.parser import text_string_to_metric_families

from credprov.base import textfile
from credprov.base.textfile import MetricFamily, go_float, parse_samples, render

VALUES = [0, 1, 0.5, 1e-9, 42.0, 1_700_000_123.5, 123456.7, 1234567.0, 1e21, -3.25, 2**53]
LABEL_VALUES = ["", "plain", 'q"uote', "back\\slash", "new\nline", "ünï €", "a,b=c}{", "\\n"]


class _Collector:
    def __init__(self, *families: object) -> None:
        self.families = families

    def collect(self) -> object:
        return iter(self.families)


def reference(*families: object) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(*families))  # type: ignore[arg-type]
    return generate_latest(registry)


@pytest.mark.parametrize("value", VALUES)
def test_values_are_written_as_prometheus_client_writes_them(value: float) -> None:
    ref = GaugeMetricFamily("m", "help", value=value)
    ours = MetricFamily("m", "gauge", "help")
    ours.add({}, value)
    assert render([ours]) == reference(ref)


@pytest.mark.parametrize("value", LABEL_VALUES)
def test_labels_and_help_are_escaped_as_prometheus_client_escapes_them(value: str) -> None:
    doc = f"help with {value}"
    ref = GaugeMetricFamily("m", doc, labels=["z", "a"])
    ref.add_metric([value, "x"], 1)
    ours = MetricFamily("m", "gauge", doc)
    ours.add({"z": value, "a": "x"}, 1)
    assert render([ours]) == reference(ref)
    assert parse_samples(render([ours]).decode()) == [("m", {"a": "x", "z": value}, 1.0)]


def test_counters_and_histograms_match_prometheus_client() -> None:
    counter = CounterMetricFamily("c", "calls", labels=["r"])
    counter.add_metric(["ok"], 3)
    hist = HistogramMetricFamily("h_seconds", "latency", labels=["r"])
    hist.add_metric(["ok"], [("0.005", 1), ("1.0", 2), ("+Inf", 3)], 4.5)
    ours_c = MetricFamily("c_total", "counter", "calls")
    ours_c.add({"r": "ok"}, 3)
    ours_h = MetricFamily("h_seconds", "histogram", "latency")
    for le, n in (("0.005", 1), ("1.0", 2), ("+Inf", 3)):
        ours_h.add({"r": "ok", "le": le}, n, "_bucket")
    ours_h.add({"r": "ok"}, 3, "_count")
    ours_h.add({"r": "ok"}, 4.5, "_sum")
    ref = reference(counter, hist).decode()
    ref = "".join(line + "\n" for line in ref.splitlines() if "_created" not in line)
    assert render([ours_c, ours_h]).decode() == ref
    names = {f.name: f.type for f in text_string_to_metric_families(ref)}
    assert names == {"c": "counter", "h_seconds": "histogram"}


def test_go_float_special_values() -> None:
    assert [go_float(v) for v in (float("inf"), float("-inf"), float("nan"))] == [
        "+Inf",
        "-Inf",
        "NaN",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "m",
        'm{a="x} 1',
        'm{a="x"} one',
        'm{a="x",a="y"} 1',
        'm{a="\\q"} 1',
        'm{1a="x"} 1',
        'm{a="x"b="y"} 1',
        "m-x 1",
    ],
)
def test_parse_samples_refuses_what_render_would_not_write(line: str) -> None:
    with pytest.raises(ValueError):
        parse_samples(line + "\n")


def test_write_is_atomic_0644_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "x.prom"
    target.write_bytes(b"old 1\n")
    os.chmod(target, 0o600)
    old_umask = os.umask(0o077)
    try:
        textfile.write_textfile(str(target), b"new 1\n", durable=False)
    finally:
        os.umask(old_umask)
    assert target.read_bytes() == b"new 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.prom"]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_target_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "x.prom"
    if kind == "symlink":
        (tmp_path / "elsewhere").write_text("keep\n")
        target.symlink_to(tmp_path / "elsewhere")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(textfile.TextfileWriteError) as info:
        textfile.write_textfile(str(target), b"x 1\n")
    assert info.value.strerror == textfile.not_replaceable(str(target))
    if kind == "symlink":
        assert (tmp_path / "elsewhere").read_text() == "keep\n"
