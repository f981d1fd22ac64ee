"""Hostile TOML in a node image's runtime configuration: one line, never a crash, bounded.

Issue 32, item 1. Each row plants one hostile payload in each file the mirror readers take
from a node (containerd's ``config.toml`` and k3s's, a ``hosts.toml``, ``registries.conf``
and a drop-in). Before: ``RecursionError`` (deep arrays, inline tables), ``ValueError``
(5,000 digits), gigabytes for a 40 KB dotted key, a quadratic scan of escaped quotes. The
readers run in a subprocess with an address-space cap and a timeout; every payload must end
in a :class:`~credprov.cri.mirrors.MirrorConfigError` of one line naming the file.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.doctor import nodes

#: The DaemonSet's memory limit: no payload may take the reader past it.
MEMORY_CAP = 256 << 20
#: Generous: the whole table takes well under a second per file; a hang is the failure.
GUARD_SECONDS = 60

CONTAINERD_CONFIG = (
    'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
    '  config_path = "/etc/containerd/certs.d"\n'
)

PAYLOADS = {
    "50,000 nested arrays": "x = " + "[" * 50_000 + "]" * 50_000 + "\n",
    "5,000 nested inline tables": "x = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n",
    "dotted key of 20,000 parts": "x" + ".a" * 20_000 + " = 1\n",
    "table header of 20,000 parts": "[x" + ".a" * 20_000 + "]\n",
    "array-of-tables header of 20,000 parts": "[[x" + ".a" * 20_000 + "]]\n",
    "inline table key of 20,000 parts": "x = {" + "a." * 20_000 + "b = 1}\n",
    "5,000-digit integer": "x = " + "7" * 5_000 + "\n",
    "unterminated string of escaped quotes": 'x = """' + '\\"""' * 50_000 + "\n",
    "long line of escaped quotes": 'x = "' + '\\"' * 100_000 + "\n",
}

#: file kind -> (path of the hostile file, other files, what the reader is asked)
FILES = {
    "containerd config.toml": ("/etc/containerd/config.toml", {}, "config"),
    "k3s config.toml": ("/var/lib/rancher/k3s/agent/etc/containerd/config.toml", {}, "config"),
    "hosts.toml": ("/etc/containerd/certs.d/docker.io/hosts.toml", {}, "hosts"),
    "registries.conf": ("/etc/containers/registries.conf", {}, "crio"),
    "registries.conf.d drop-in": (
        "/etc/containers/registries.conf.d/50-hostile.conf",
        {"/etc/containers/registries.conf": 'unqualified-search-registries = ["docker.io"]\n'},
        "crio",
    ),
}

CHILD = r"""
import json, resource, sys
cap = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from credprov.base.rootfs import NodeRoot
from credprov.cri import mirrors
what, path, roots = sys.argv[2], sys.argv[3], sys.argv[4:]
out = {}
for root in roots:
    node = NodeRoot(root)
    try:
        if what == "config":
            mirrors.containerd_config_path(node, path)
        elif what == "hosts":
            hosts = mirrors.ContainerdHosts(node, "/etc/containerd/certs.d")
            hosts.mirrored_registries()
            hosts.route("nginx")
        else:
            mirrors.RegistriesConf.load(node, "/etc/containers/registries.conf").route("nginx")
        out[root] = "accepted"
    except mirrors.MirrorConfigError as exc:
        out[root] = str(exc)
    except BaseException as exc:
        out[root] = "CRASH " + type(exc).__name__
print(json.dumps(out))
"""


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_CPU, (GUARD_SECONDS, GUARD_SECONDS))


@pytest.mark.parametrize("kind", list(FILES))
def test_hostile_toml_is_one_line_and_bounded(kind: str, tmp_path: Path) -> None:
    path, others, what = FILES[kind]
    roots = {}
    for i, (name, payload) in enumerate(PAYLOADS.items()):
        root = tmp_path / str(i)
        for other, text in others.items():
            nodes.write(root, other, text)
        if what == "hosts":
            nodes.write(root, "/etc/containerd/config.toml", CONTAINERD_CONFIG)
        nodes.write(root, path, payload)
        roots[str(root)] = name
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(MEMORY_CAP), what, path, *roots],
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        preexec_fn=_limit,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {roots[root]: message for root, message in json.loads(proc.stdout).items()}
    for name, message in results.items():
        assert not message.startswith("CRASH") and message != "accepted", (name, message)
        assert "\n" not in message and path in message, (name, message)
        assert len(message) < 300, (name, message)
