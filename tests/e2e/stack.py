"""A kubelet node under test for the ``ensure-image`` / ``image-gc`` end-to-end tests and
benchmark: the real CLI against a real containerd, with files written the way an
operator would write them.

* :class:`KubeletCLI` owns one kubelet root (records under ``root/image_manager``) and a
  directory for pod and secret files; :meth:`KubeletCLI.ensure` runs ``credprov
  ensure-image`` either as a real subprocess (``python -m credprov``, what a user runs) or
  in-process through :func:`credprov.cli.main.main` (same code, no interpreter start-up),
  and returns an :class:`Outcome` with the exit status, both streams and the ``-o json``
  report;
* :func:`pull_secret` and :func:`pod` build the Kubernetes objects;
* :func:`registry_round_trips` waits briefly and returns the requests a registry logged
  after a mark, so a test can say "no registry round-trip" with evidence.

The processes themselves (registries, containerd) come from ``tests/e2e/registry.py`` and
``tests/e2e/containerd.py``; nothing here starts a daemon.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.registry import Registry, RegistryRequest

__all__ = [
    "KubeletCLI",
    "Outcome",
    "credprov_command",
    "pod",
    "pull_secret",
    "registry_round_trips",
]


def credprov_command() -> list[str]:
    """How a user starts the CLI of this environment (``python -m credprov``)."""
    return [sys.executable, "-m", "credprov"]


def pull_secret(
    name: str,
    namespace: str,
    registry: str,
    username: str,
    password: str,
    uid: str | None = None,
) -> dict[str, Any]:
    """A ``kubernetes.io/dockerconfigjson`` Secret for ``registry`` (``host:port``)."""
    config = {"auths": {registry: {"username": username, "password": password}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"{namespace}-{name}"},
        "stringData": {".dockerconfigjson": json.dumps(config)},
    }


def pod(
    name: str,
    namespace: str,
    image: str | Sequence[str],
    *,
    policy: str | None = None,
    secrets: Iterable[str] = (),
) -> dict[str, Any]:
    """A Pod with one container per image (``app``, ``app-1``...), all with ``policy``
    (None: the API server's default)."""
    images = [image] if isinstance(image, str) else list(image)
    containers = []
    for i, img in enumerate(images):
        c: dict[str, Any] = {"name": "app" if i == 0 else f"app-{i}", "image": img}
        if policy is not None:
            c["imagePullPolicy"] = policy
        containers.append(c)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {
            "imagePullSecrets": [{"name": s} for s in secrets],
            "containers": containers,
        },
    }


def registry_round_trips(
    registry: Registry, since: int, settle: float = 0.15
) -> list[RegistryRequest]:
    """The requests ``registry`` logged after the mark ``since``. The access log is written
    just after each response, so wait ``settle`` seconds first: long enough for a line
    that is coming, short enough to keep the suite fast."""
    time.sleep(settle)
    return registry.requests(since)


@dataclass
class Outcome:
    """One CLI run."""

    argv: list[str]
    code: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None = field(default=None)

    @property
    def containers(self) -> list[dict[str, Any]]:
        assert self.report is not None, self.stderr
        return list(self.report["containers"])

    @property
    def decisions(self) -> list[str]:
        return [c["decision"] for c in self.containers]

    def __str__(self) -> str:  # what a failing assertion shows
        return f"$ {' '.join(self.argv)}\nexit {self.code}\n{self.stdout}\n{self.stderr}"


class KubeletCLI:
    """One kubelet root and its CRI endpoint, driven through ``credprov``'s CLI."""

    def __init__(self, workdir: Path, endpoint: str) -> None:
        self.workdir = workdir
        self.endpoint = endpoint
        self.root = workdir / "kubelet"
        self.root.mkdir(parents=True, exist_ok=True)
        self.files = workdir / "files"
        self.files.mkdir(exist_ok=True)
        self._n = 0

    def write(self, stem: str, *objects: Mapping[str, Any]) -> Path:
        """Write ``objects`` as a YAML-compatible JSON file (a ``List`` if several)."""
        self._n += 1
        path = self.files / f"{self._n:03d}-{stem}.json"
        doc: Any = (
            objects[0]
            if len(objects) == 1
            else {"apiVersion": "v1", "kind": "List", "items": list(objects)}
        )
        path.write_text(json.dumps(doc))
        return path

    def run(
        self, args: Sequence[str], *, in_process: bool = False, json_output: bool = False
    ) -> Outcome:
        """``credprov ARGS`` as a subprocess (default) or in this process."""
        argv = [*args, *(["-o", "json"] if json_output else [])]
        if in_process:
            from credprov.cli.main import main

            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
            outcome = Outcome(["credprov", *argv], code, out.getvalue(), err.getvalue())
        else:
            cmd = [*credprov_command(), *argv]
            env = {k: v for k, v in os.environ.items() if not k.startswith("CREDPROV_")}
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
            outcome = Outcome(["credprov", *argv], proc.returncode, proc.stdout, proc.stderr)
        if json_output and outcome.stdout.strip():
            outcome.report = json.loads(outcome.stdout)
        return outcome

    def ensure(
        self,
        pod_obj: Mapping[str, Any],
        secrets: Iterable[Mapping[str, Any]] = (),
        *,
        policy: str | None = None,
        allowlist: Iterable[str] = (),
        extra: Sequence[str] = (),
        in_process: bool = False,
        json_output: bool = True,
    ) -> Outcome:
        """``credprov ensure-image`` for ``pod_obj`` with ``secrets`` in one file."""
        args = [
            "ensure-image",
            "--cri",
            self.endpoint,
            "--root-dir",
            str(self.root),
            "--pod",
            str(self.write("pod", pod_obj)),
        ]
        secret_list = list(secrets)
        if secret_list:
            args += ["--pull-secret", str(self.write("secrets", *secret_list))]
        if policy is not None:
            args += ["--policy", policy]
        for pattern in allowlist:
            args += ["--allowlist", pattern]
        return self.run([*args, *extra], in_process=in_process, json_output=json_output)

    def image_gc(self, *extra: str, in_process: bool = False) -> Outcome:
        """``credprov image-gc -o json`` on this root."""
        args = ["image-gc", "--cri", self.endpoint, "--root-dir", str(self.root), *extra]
        return self.run(args, in_process=in_process, json_output=True)

    def pull_records(self) -> dict[str, Any]:
        """``credprov pull-records list -o json``: records, intents and decode errors."""
        outcome = self.run(
            ["pull-records", "list", "--root-dir", str(self.root)],
            in_process=True,
            json_output=True,
        )
        assert outcome.code == 0 and outcome.report is not None, str(outcome)
        return outcome.report

    def record_for(self, image_ref: str) -> dict[str, Any] | None:
        """The pulled record of ``image_ref`` as the kubelet's JSON, or None."""
        for record in self.pull_records()["records"]:
            if record["imageRef"] == image_ref:
                return dict(record)
        return None
