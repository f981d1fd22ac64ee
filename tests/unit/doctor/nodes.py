"""Fixture node roots for the doctor: a healthy kubeadm-style node and a k3s-style node.

Everything is real files under a temporary root: systemd units, environment files, the
KubeletConfiguration, a provider config with three providers whose plugins are ``sh``
scripts, KEP-2535 records written by credprov's own store, a mount table and the cluster's
objects. The root's ``/bin/sh`` is a static busybox, so the doctor can run the plugins
inside the root as it does with a node image. Faults are planted by the tests on top of a
healthy node.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

from credprov.doctor.binaries import elf_info
from credprov.pullmanager.fsstore import FSPullRecordsAccessor
from credprov.pullmanager.types import ImagePullCredentials, ImagePulledRecord
from tests import goelf

#: Never printed by the doctor: a provider env value that the plugin also returns as
#: its password.
CANARY = "canary-d0ct0r-5ecret-91"

BIN = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"
CONFIG = "/etc/kubernetes/credential-provider-config.yaml"
NODE = "node-a"
APP_IMAGE = "registry-a.example.com/team/app:v1"
APP_REF = "sha256:" + "a" * 64

PROVIDERS = (
    ("registry-a-provider", "registry-a.example.com", "Registry"),
    ("ecr-style-provider", "*.dkr.ecr.*.amazonaws.com", "Image"),
    ("mirror-provider", "mirror.example.com:5000/team", "Registry"),
)


def write(root: Path, node_path: str, text: str, mode: int = 0o644) -> Path:
    """``node_path`` in the root as a new file: an existing one is unlinked first, never
    written through (the end-to-end roots are hard-linked copies of a cached root)."""
    path = root / node_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    path.write_text(text)
    path.chmod(mode)
    return path


def plugin_script(auth_key: str, cache_key_type: str = "Registry") -> str:
    """A plugin in sh: reads the request, answers for ``auth_key`` with $PASSWORD."""
    return f"""#!/bin/sh
cat >/dev/null
printf '%s' '{{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
printf '%s' '"cacheKeyType":"{cache_key_type}","cacheDuration":"5m","auth":{{"{auth_key}":'
printf '{{"username":"doctor","password":"%s"}}}}}}\\n' "$PASSWORD"
"""


def provider_config(token_provider: bool = True) -> str:
    providers = []
    for name, pattern, _ in PROVIDERS:
        entry: dict[str, object] = {
            "name": name,
            "matchImages": [pattern],
            "defaultCacheDuration": "10m",
            "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
            "env": [{"name": "PASSWORD", "value": CANARY}],
        }
        if token_provider and name == "registry-a-provider":
            entry["tokenAttributes"] = {
                "serviceAccountTokenAudience": "registry-a.example.com",
                "cacheType": "ServiceAccount",
                "requireServiceAccount": False,
            }
        providers.append(entry)
    return json.dumps(
        {
            "apiVersion": "kubelet.config.k8s.io/v1",
            "kind": "CredentialProviderConfig",
            "providers": providers,
        },
        indent=2,
    )


#: The static busybox the fixture roots run their plugins with (Debian's busybox-static;
#: ``.ci/run`` installs it).
BUSYBOX = "/bin/busybox"

#: busybox applets installed in a fixture root, as links to ``/bin/busybox``.
APPLETS: tuple[str, ...] = ("sh", "cat", "id", "pwd", "env", "ls", "printf", "echo", "sleep")
APPLETS += ("basename", "dirname", "test", "cut", "sort", "tr", "mkdir", "touch")


def busybox_available() -> bool:
    """A static busybox to copy into fixture roots (one that needs no loader of its own)."""
    try:
        head = Path(BUSYBOX).read_bytes()[:65536]
    except OSError:
        return False
    info = elf_info(head)
    return info is not None and info.interpreter is None


def install_busybox(
    root: Path, directory: str = "/bin", applets: tuple[str, ...] = APPLETS
) -> None:
    """A runnable static shell in the root: ``<directory>/busybox`` and its applets as
    relative symlinks (``/usr/bin/env`` too), so plugins run inside the root."""
    target = root / directory.lstrip("/")
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(BUSYBOX, target / "busybox")
    for applet in applets:
        link = target / applet
        if not link.exists() and not link.is_symlink():
            link.symlink_to("busybox")
    if directory == "/bin":
        env = root / "usr/bin/env"
        env.parent.mkdir(parents=True, exist_ok=True)
        if not env.is_symlink():
            env.symlink_to("../../bin/busybox")


def install_host_sh(root: Path, node_path: str = "/bin/sh") -> None:
    """This machine's dynamically linked ``sh`` at ``node_path``, with an empty stand-in for
    its program interpreter: ``plugin.runnable`` reads a real ELF header, but the shell
    cannot start inside the root (the node's loader is empty)."""
    sh = root / node_path.lstrip("/")
    sh.parent.mkdir(parents=True, exist_ok=True)
    if sh.is_symlink():
        sh.unlink()
    shutil.copy2("/bin/sh", sh)
    info = elf_info(sh.read_bytes()[:65536])
    if info is not None and info.interpreter:
        write(root, info.interpreter, "", 0o755)


def _base_os(root: Path, shell: str = "busybox") -> None:
    """A shell (a static busybox that runs inside the root, or with ``shell="host"`` this
    machine's dynamic ``sh`` that cannot), ``/dev``, ``/tmp`` and ``/run`` directories, a mount
    table, the hostname."""
    if shell == "host" or not busybox_available():
        install_host_sh(root)
    else:
        install_busybox(root)
    for directory in ("dev", "tmp", "run"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    write(root, "/etc/hostname", "Node-A\n")
    write(
        root,
        "/proc/mounts",
        "/dev/sda1 / ext4 rw,relatime 0 0\n"
        "tmpfs /tmp tmpfs rw,nosuid,nodev,noexec 0 0\n"
        "/dev/sda2 /var/lib ext4 rw,relatime 0 0\n",
    )


def _plugins(root: Path, bin_dir: str) -> None:
    for name, pattern, cache_key_type in PROVIDERS:
        write(root, f"{bin_dir}/{name}", plugin_script(pattern, cache_key_type), 0o755)


def _records(root: Path) -> None:
    store = FSPullRecordsAccessor(str(root / "var/lib/kubelet"), migrate=False)
    store.write_image_pulled_record(
        ImagePulledRecord(
            lastUpdatedTime=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            imageRef=APP_REF,
            credentialMapping={
                "registry-a.example.com/team/app": ImagePullCredentials(nodePodsAccessible=True)
            },
        )
    )


def objects(rbac: bool = True) -> list[dict[str, object]]:
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid"}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "team-a", "uid": "sa-uid"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "app", "namespace": "team-a", "uid": "pod-uid"},
            "spec": {
                "nodeName": NODE,
                "serviceAccountName": "builder",
                "containers": [{"name": "app", "image": APP_IMAGE, "imagePullPolicy": "Never"}],
            },
        },
    ]
    if rbac:
        items += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "registry-a-audience"},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["registry-a.example.com"],
                        "verbs": ["request-serviceaccounts-token-audience"],
                    }
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "nodes-registry-a-audience"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "registry-a-audience",
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Group",
                        "name": "system:nodes",
                    }
                ],
            },
        ]
    return items


def write_objects(path: Path, rbac: bool = True) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects(rbac)}))
    return path


def write_images(path: Path) -> Path:
    """The node's images as ``crictl images -o json`` prints them."""
    doc = {
        "images": [
            {
                "id": APP_REF,
                "repoTags": [APP_IMAGE],
                "repoDigests": [],
                "size": "1000",
            }
        ]
    }
    path.write_text(json.dumps(doc))
    return path


def kubeadm_node(root: Path, shell: str = "busybox") -> Path:
    """A healthy kubeadm node: unit + 10-kubeadm.conf + env files, three providers.

    ``shell="host"``: ``/bin/sh`` is this machine's, which cannot start inside the root.
    """
    _base_os(root, shell)
    write(
        root, "/usr/lib/systemd/system/kubelet.service", "[Service]\nExecStart=/usr/bin/kubelet\n"
    )
    write(
        root,
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "# kubeadm's drop-in\n"
        "[Service]\n"
        'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/'
        'bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"\n'
        'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"\n'
        "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n"
        "EnvironmentFile=-/etc/default/kubelet\n"
        "ExecStart=\n"
        "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS "
        "$KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n",
    )
    write(
        root,
        "/var/lib/kubelet/kubeadm-flags.env",
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/'
        'containerd.sock --image-credential-provider-bin-dir=/wrong/dir"\n',
    )
    write(
        root,
        "/etc/default/kubelet",
        f'KUBELET_EXTRA_ARGS="--image-credential-provider-config={CONFIG} '
        f'--image-credential-provider-bin-dir {BIN}"\n',
    )
    write(
        root,
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\n"
        "kind: KubeletConfiguration\n"
        "featureGates:\n"
        "  KubeletEnsureSecretPulledImages: true\n"
        "imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages\n",
    )
    write(root, CONFIG, provider_config())
    _plugins(root, BIN)
    _records(root)
    write_kubelet(root)
    return root


def write_kubelet(root: Path, toolchain: str = "go1.25.5", default_godebug: str = "") -> Path:
    """``/usr/bin/kubelet``: an ELF file with the Go build information of a kubelet built by
    ``toolchain`` with ``default_godebug`` (Kubernetes 1.35's: Go 1.25.5, go 1.25 line)."""
    path = root / "usr/bin/kubelet"
    path.parent.mkdir(parents=True, exist_ok=True)
    info = goelf.modinfo(default_godebug=default_godebug or None)
    return goelf.write(path, goelf.elf(goelf.blob(toolchain, info)))


K3S_BIN = "/var/lib/rancher/credentialprovider/bin"
K3S_CONFIG = "/var/lib/rancher/credentialprovider/config.yaml"


def k3s_node(root: Path) -> Path:
    """A k3s agent: a (fixture) process, the rancher defaults, kubelet-arg in config.yaml."""
    _base_os(root)
    write(root, "/proc/4242/comm", "k3s-agent\n")
    (root / "proc/4242/cmdline").write_bytes(
        b"/usr/local/bin/k3s\0agent\0--server\0https://10.0.0.1:6443\0"
        b"--kubelet-arg=feature-gates=KubeletEnsureSecretPulledImages=true\0"
    )
    write(
        root,
        "/etc/rancher/k3s/config.yaml",
        "kubelet-arg:\n  - config=/var/lib/kubelet/config.yaml\n",
    )
    write(
        root,
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
    )
    write(root, K3S_CONFIG, provider_config(token_provider=False))
    _plugins(root, K3S_BIN)
    return root


EKS_BIN = "/etc/eks/image-credential-provider"
EKS_CONFIG = "/etc/eks/image-credential-provider/config.json"
EKS_DROP_INS = "/etc/kubernetes/kubelet/config.json.d"


#: nodeadm's provider config on AL2023 (its template, filled in): the AMI's ECR plugin only.
EKS_ECR_PATTERNS = (
    "*.dkr.ecr.*.amazonaws.com",
    "*.dkr.ecr.*.amazonaws.com.cn",
    "*.dkr.ecr-fips.*.amazonaws.com",
    "*.dkr.ecr.*.c2s.ic.gov",
    "*.dkr.ecr.*.sc2s.sgov.gov",
)


def nodeadm_provider_config() -> str:
    """``config.json`` as nodeadm writes it: one provider, ``ecr-credential-provider``."""
    provider = {
        "name": "ecr-credential-provider",
        "matchImages": list(EKS_ECR_PATTERNS),
        "defaultCacheDuration": "12h",
        "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
    }
    doc = {
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": [provider],
    }
    return json.dumps(doc, indent=2)


def eks_kubelet(root: Path, extra_args: str = "") -> None:
    """nodeadm's kubelet set-up: its kubelet.service, the environment file with
    ``NODEADM_KUBELET_ARGS`` (``extra_args`` appended, as nodeadm appends a NodeConfig's
    ``spec.kubelet.flags`` after its own), a JSON KubeletConfiguration and a ``--config-dir``
    drop-in."""
    write(root, "/usr/bin/nodeadm", "#!/bin/sh\n", 0o755)
    write(
        root,
        "/etc/systemd/system/kubelet.service",
        "[Unit]\nDescription=Kubernetes Kubelet\n\n[Service]\nSlice=runtime.slice\n"
        "EnvironmentFile=/etc/eks/kubelet/environment\n"
        "ExecStartPre=/sbin/iptables -P FORWARD ACCEPT -w 5\n"
        "ExecStart=/usr/bin/kubelet \\\n"
        "    --config /etc/kubernetes/kubelet/config.json \\\n"
        "    --kubeconfig /var/lib/kubelet/kubeconfig \\\n"
        "    --container-runtime-endpoint unix:///run/containerd/containerd.sock \\\n"
        "    $NODEADM_KUBELET_ARGS\n\n[Install]\nWantedBy=multi-user.target\n",
    )
    extra = f" {extra_args}" if extra_args else ""
    write(
        root,
        "/etc/eks/kubelet/environment",
        'NODEADM_KUBELET_ARGS="--node-ip=10.0.0.1 --hostname-override=ip-10-0-0-1.ec2.internal '
        f"--image-credential-provider-bin-dir={EKS_BIN} "
        f"--image-credential-provider-config={EKS_CONFIG} "
        f'--config-dir={EKS_DROP_INS} --node-labels=eks.amazonaws.com/nodegroup=ng-1{extra}"\n',
    )
    write(
        root,
        "/etc/kubernetes/kubelet/config.json",
        json.dumps(
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "featureGates": {"RotateKubeletServerCertificate": True},
                "maxPods": 58,
            },
            indent=2,
        ),
    )
    write(
        root,
        f"{EKS_DROP_INS}/00-nodeadm.conf",
        json.dumps(
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "featureGates": {"KubeletEnsureSecretPulledImages": True},
                "maxPods": 110,
            }
        ),
    )


def eks_node(root: Path) -> Path:
    """An EKS AL2023 node as nodeadm leaves it (:func:`eks_kubelet`), with the doctor's three
    fixture providers in nodeadm's config and bin dir."""
    _base_os(root)
    eks_kubelet(root)
    write(root, EKS_CONFIG, provider_config())
    _plugins(root, EKS_BIN)
    return root


def eks_nodeadm_node(root: Path, ecr_plugin: str, extra_args: str = "") -> Path:
    """An EKS AL2023 node exactly as nodeadm lays out its providers: :func:`eks_kubelet`, the
    AMI's ``ecr-credential-provider`` (here the script ``ecr_plugin``) and nodeadm's
    ``config.json`` naming it, in ``/etc/eks/image-credential-provider``. Nothing of the OS:
    ``root`` brings its own (a debootstrap root, or :func:`_base_os`)."""
    eks_kubelet(root, extra_args)
    write(root, EKS_CONFIG, nodeadm_provider_config())
    write(root, f"{EKS_BIN}/ecr-credential-provider", ecr_plugin, 0o755)
    return root
