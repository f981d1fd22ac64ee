"""Real node_exporter and Prometheus for end-to-end tests: what an operator's fleet runs.

* :func:`start_node_exporter` runs Debian's ``prometheus-node-exporter`` with only its
  textfile collector, on a directory of ``*.prom`` files (the DaemonSet's hostPath), on a
  free ``127.0.0.1`` port; :meth:`Server.get` fetches ``/metrics`` as Prometheus scrapes it.
  node_exporter parses every file strictly: a malformed one is dropped and reported as
  ``node_textfile_scrape_error 1``.
* :func:`start_prometheus` runs Debian's ``prometheus`` scraping those exporters every
  second, storage in a private directory; :meth:`Server.query` asks its HTTP API.

Both stop (and their directories go) with :meth:`Server.stop`. Nothing listens beyond
127.0.0.1 and nothing under ``/etc`` is read or written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.registry import free_port, require_tools

NODE_EXPORTER = "prometheus-node-exporter"
PROMETHEUS = "prometheus"


@dataclass
class Server:
    """A started exporter or Prometheus: its process, URL and private directory."""

    proc: subprocess.Popen[bytes]
    url: str
    workdir: Path
    log: Path

    def get(self, path: str = "/metrics", timeout: float = 10) -> str:
        """The body of ``GET path`` (``/metrics``: one scrape)."""
        with urllib.request.urlopen(self.url + path, timeout=timeout) as resp:
            body: bytes = resp.read()
        return body.decode("utf-8")

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector of ``promql`` (Prometheus' ``/api/v1/query``)."""
        doc = json.loads(self.get("/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
        assert doc["status"] == "success", doc
        result: list[dict[str, Any]] = doc["data"]["result"]
        return result

    def stop(self) -> None:
        """Stop the process and remove its directory."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _wait(server: Server, path: str, deadline: float = 30) -> Server:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if server.proc.poll() is not None:
            raise AssertionError(f"{server.url} exited: " + server.log.read_text()[-2000:])
        try:
            server.get(path, timeout=2)
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    server.stop()
    raise AssertionError(f"{server.url}{path} did not answer within {deadline}s")


def _start(argv: list[str], workdir: Path, port: int, ready: str) -> Server:
    log = workdir / "log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)
    return _wait(Server(proc, f"http://127.0.0.1:{port}", workdir, log), ready)


def start_node_exporter(textfile_dir: Path) -> Server:
    """node_exporter with only the textfile collector, reading ``textfile_dir``."""
    require_tools(NODE_EXPORTER)
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="credprov-node-exporter-"))
    argv = [
        shutil.which(NODE_EXPORTER) or NODE_EXPORTER,
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfile_dir}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    return _start(argv, workdir, port, "/metrics")


def start_prometheus(targets: list[str]) -> Server:
    """Prometheus scraping ``targets`` (``host:port``) every second."""
    require_tools(PROMETHEUS)
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="credprov-prometheus-"))
    config = workdir / "prometheus.yml"
    config.write_text(
        json.dumps(  # YAML is a superset of JSON
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": targets}]}],
            }
        )
    )
    argv = [
        shutil.which(PROMETHEUS) or PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    return _start(argv, workdir, port, "/-/ready")


def wait_for(server: Server, promql: str, deadline: float = 30) -> list[dict[str, Any]]:
    """Poll ``promql`` until it returns series (Prometheus scrapes every second)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        result = server.query(promql)
        if result:
            return result
        time.sleep(0.25)
    raise AssertionError(f"no series for {promql} within {deadline}s")
