"""``credprov doctor --node-root`` runs a plugin inside a real distribution root, confined.

The node is the Python-less ``debootstrap --variant=minbase`` root (``tests/e2e/noderoot.py``):
its ``/bin/sh`` is dash, and dash and coreutils are dynamically linked against the root's
own glibc and loader, so a plugin that answers proves it ran with the node's userland. The
private copy is hard-linked to the cached root: the doctor must leave every byte alone.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from credprov.doctor import DoctorOptions, run_doctor
from tests.e2e.noderoot import BIN_DIR, inside, node_root

pytestmark = pytest.mark.e2e

V1 = "credentialprovider.kubelet.k8s.io/v1"
CONFIG = "/etc/kubernetes/credential-provider-config.yaml"

PLUGIN = f"""#!/bin/sh
# dash and coreutils from the node: ids, then the answer
[ "$(/usr/bin/id -u)" = 0 ] || {{ echo "uid $(/usr/bin/id -u)" >&2; exit 1; }}
/usr/bin/cat >/dev/null
/usr/bin/printf '%s' '{{"kind":"CredentialProviderResponse","apiVersion":"{V1}",'
/usr/bin/printf '%s' '"cacheKeyType":"Registry","cacheDuration":"5m",'
/usr/bin/printf '"auth":{{"registry.example.com":{{"username":"u","password":"%s"}}}}}}\\n' "$PASSWORD"
echo "$PASSWORD" >"$CREDPROV_PLUGIN_CACHE_DIR/answer"
"""


def _digest(root: Path) -> str:
    """Every path, mode, owner, size, mtime and link target (and nothing else) of a tree."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
            h.update(
                f"{path}\0{st.st_mode}\0{st.st_uid}\0{st.st_size}\0{st.st_mtime_ns}\0{link}\n".encode()
            )
    return h.hexdigest()


def test_doctor_runs_a_plugin_with_the_nodes_userland_and_leaves_the_root_unchanged() -> None:
    with node_root() as root:
        root.chmod(0o755)  # a node's / (this copy's comes from mkdtemp)
        plugin = inside(root, f"{BIN_DIR}/example-provider")
        plugin.write_text(PLUGIN)
        plugin.chmod(0o755)
        config = inside(root, CONFIG)
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
            "  - name: example-provider\n    matchImages: [registry.example.com]\n"
            f"    defaultCacheDuration: 1m\n    apiVersion: {V1}\n"
            "    env: [{name: PASSWORD, value: e2e-doctor-secret}]\n"
        )
        before = _digest(root)
        report = run_doctor(DoctorOptions(root=str(root), config=CONFIG, bin_dir=BIN_DIR))
        (runnable,) = report.by_id("plugin.runnable")
        (responds,) = report.by_id("plugin.responds")
        assert str(runnable.status) == "pass", runnable
        assert str(responds.status) == "pass", responds
        assert _digest(root) == before
