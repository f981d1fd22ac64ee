"""The installer image's entrypoint (``credprov/bundle/image_entrypoint.sh``) under busybox sh.

Each case runs the real script with busybox's applets as its whole ``PATH`` (the applets the
image links, :data:`credprov.bundle.oci.APPLETS`, so a command the image lacks fails here
too), ``CREDPROV_HOST`` pointing at a temporary ``/host`` (``bin`` a link to the bin dir
inside ``root``, as the DaemonSet's two mounts of one node directory), and a stand-in bundle:
``validate-config`` is the real module run by this venv's Python, ``install`` a small sh
script that records its arguments and makes or removes the plugin links (the real
``install`` under ``--node-root`` is tested with the real image in
``tests/e2e/test_bundle_image.py``). The script's contract is checked at its edges: exit
code, stdout, the one stderr line, what is in the bin and config directories afterwards, and
what ``install`` was asked to do (nothing, for every refusal).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from credprov.bundle.build import assemble
from credprov.bundle.oci import APPLETS

pytestmark = pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox not installed")

NAMES = ("static-credential-provider", "ecr-credential-provider", "acr-credential-provider")
NODE_BIN_DIR = "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec"
MARKER = "# Written by the credprov-plugins installer image; it is replaced on upgrade."
RUNTIME = ".credprov-plugins-X/credprov-plugins"  # where the stand-in install points names
CANARY = "canary-secret-5f1d8e"


def provider(name: str, cache: str = "1m") -> str:
    return (
        f"  - name: {name}\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        f'    matchImages: ["{name}.example.com"]\n    defaultCacheDuration: "{cache}"\n'
        f"    env:\n      - name: TOKEN\n        value: {CANARY}\n"
    )


def config(*names: str, cache: str = "1m", api: str = "kubelet.config.k8s.io/v1") -> str:
    body = "".join(provider(n, cache) for n in names)
    return f"apiVersion: {api}\nkind: CredentialProviderConfig\nproviders:\n{body}"


STATIC = config("static-credential-provider")
STATIC_JSON = (
    '{"apiVersion": "kubelet.config.k8s.io/v1", "kind": "CredentialProviderConfig",'
    ' "providers": [{"name": "static-credential-provider", "apiVersion":'
    ' "credentialprovider.kubelet.k8s.io/v1", "matchImages": ["r.example.com"],'
    ' "defaultCacheDuration": "1m"}]}'
)

STUB_INSTALL = """#!/bin/sh
# Stand-in for the bundle's install: record the arguments, make or remove the plugin links.
printf '%s\\n' "$*" >>"$(dirname "$0")/install.log"
bin=""; uninstall=0; prefix=""; names=""; prune=0
while [ $# -gt 0 ]; do
    case "$1" in
    --bin-dir) bin=$2; shift ;;
    --prefix) prefix=$2; shift ;;
    --node-root | --node-bin-dir) shift ;;
    --uninstall) uninstall=1 ;;
    --prune) prune=1 ;;
    --force) ;;
    --) shift; names="$*"; break ;;
    *) echo "install: error: unexpected argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ -z "${STUB_INSTALL_FAIL:-}" ] || { echo "install: error: $STUB_INSTALL_FAIL" >&2; exit 1; }
for n in $names; do
    p="$bin/$prefix$n"
    if [ $uninstall = 1 ]; then
        if [ -L "$p" ]; then rm -f "$p"; echo "uninstalled: $p"; fi
    else
        ln -sfn RUNTIME "$p"; echo "installed: $p"
    fi
done
if [ $prune = 1 ]; then
    for p in "$bin/$prefix"*; do
        [ -L "$p" ] && [ "$(readlink "$p")" = RUNTIME ] || continue
        case " $names " in *" ${p##*/$prefix} "*) continue ;; esac
        rm -f "$p"; echo "uninstalled: $p"
    done
fi
""".replace("RUNTIME", RUNTIME)


@dataclass
class Host:
    """A temporary ``/host`` for the entrypoint, and the stand-in bundle it runs from."""

    tmp: Path
    bundle: Path
    applets: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def host(self) -> Path:
        return self.tmp / "host"

    @property
    def bin(self) -> Path:
        return self.host / "bin"

    @property
    def conf(self) -> Path:
        return self.host / "config"

    @property
    def node_bin(self) -> Path:
        return self.host / "root" / NODE_BIN_DIR.lstrip("/")

    def run(
        self,
        env: Mapping[str, str] | None = None,
        argv: tuple[str, ...] = (),
        preexec_fn: Callable[[], None] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        environment = {
            "PATH": str(self.applets),
            "CREDPROV_HOST": str(self.host),
            "TMPDIR": str(self.tmp / "tmp"),
            "HOST_BIN_DIR": NODE_BIN_DIR,
            **self.env,
            **(env or {}),
        }
        environment = {k: v for k, v in environment.items() if v is not None}
        return subprocess.run(
            [str(self.applets / "sh"), str(self.bundle / "image-entrypoint"), *argv],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
            timeout=60,
            preexec_fn=preexec_fn,
        )

    def install_calls(self) -> list[str]:
        log = self.bundle / "install.log"
        calls = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return calls

    def config_files(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in self.conf.iterdir() if p.is_file()}

    def plugins(self) -> list[str]:
        return sorted(p.name for p in self.bin.iterdir() if not p.name.startswith("."))

    def leftovers(self) -> list[str]:
        """Temporary files left anywhere the script writes."""
        found = [p.name for p in (self.tmp / "tmp").iterdir()]
        for d in (self.bin, self.conf):
            if d.is_dir():
                found += [p.name for p in d.iterdir() if p.name.startswith(".credprov-")]
        return found


@pytest.fixture
def host(tmp_path: Path) -> Host:
    runtime = tmp_path / "runtime-src"
    runtime.mkdir()
    exe = runtime / "credprov-plugins"
    exe.write_text(
        "#!/bin/sh\n"
        f'case "${{0##*/}}" in validate-config) exec {sys.executable} -m '
        'credprov.bundle.validate_config "$@" ;; esac\necho "${0##*/}"\n'
    )
    exe.chmod(0o755)
    bundle, _build_id, _glibc = assemble(runtime, NAMES, tmp_path / "out")
    (bundle / "install").write_text(STUB_INSTALL)
    applets = tmp_path / "applets"
    applets.mkdir()
    busybox = shutil.which("busybox")
    assert busybox is not None
    for applet in APPLETS:
        (applets / applet).symlink_to(busybox)
    h = Host(tmp_path, bundle, applets)
    h.node_bin.mkdir(parents=True)
    h.bin.symlink_to(h.node_bin)  # one node directory, seen at /host/bin and in /host/root
    h.conf.mkdir()
    (tmp_path / "tmp").mkdir()
    return h


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def owner_file(name: str) -> str:
    return f".{name}.credprov-owner"


def installed(h: Host, *names: str, prefix: str = "") -> list[str]:
    return [f"installed: {h.bin}/{prefix}{n}" for n in names]


def expected_install_args(h: Host, *extra: str) -> str:
    return " ".join(["--bin-dir", str(h.bin), "--node-root", str(h.host / "root"),
                     "--node-bin-dir", NODE_BIN_DIR, "--prune", *extra])  # fmt: skip


# -- refusals: one line, the exit code, and nothing changed -----------------------------------

Setup = Callable[[Host], None]


def files(**named: str) -> Setup:
    def setup(h: Host) -> None:
        for name, text in named.items():
            (h.conf / name.replace("__", ".").replace("_", "-")).write_text(text)

    return setup


def ours_in_bin(*names: str) -> Setup:
    def setup(h: Host) -> None:
        for name in names:
            (h.bin / name).symlink_to(RUNTIME)

    return setup


def all_of(*setups: Setup) -> Setup:
    def setup(h: Host) -> None:
        for s in setups:
            s(h)

    return setup


def nothing(h: Host) -> None:
    """No set-up."""


def remove(what: str) -> Setup:
    def setup(h: Host) -> None:
        path = h.host / what
        if path.is_symlink() or path.is_file():
            path.unlink()
        else:
            shutil.rmtree(path)

    return setup


def no_root(h: Host) -> None:
    """Only /host/bin mounted (a directory of its own), not the node's /."""
    h.bin.unlink()
    h.bin.mkdir()
    shutil.rmtree(h.host / "root")


def directory_at(name: str) -> Setup:
    def setup(h: Host) -> None:
        (h.conf / name).mkdir()

    return setup


def written_then_edited(name: str, text: str) -> Setup:
    """A file this installer wrote (its hash recorded) that someone changed afterwards."""

    def setup(h: Host) -> None:
        (h.conf / name).write_text(text + "# edited\n")
        (h.conf / owner_file(name)).write_text(sha256(text) + "\n")

    return setup


CONFIG_ERR = (
    "credprov-installer: error: CREDPROV_CONFIG would break the kubelet's config directory: "
)
INSTALLING = {"PLUGINS": "static-credential-provider", "CREDPROV_CONFIG": STATIC}

REFUSALS: dict[str, tuple[dict[str, str], Setup, int, str]] = {
    # defect 1: the config, checked with the kubelet's own decoding and validation
    "wrong apiVersion": (
        {**INSTALLING, "CREDPROV_CONFIG": config("static-credential-provider", api="kubelet.config.k8s.io/v2")},
        nothing, 1,
        CONFIG_ERR + 'error decoding config "{conf}/credprov-plugins.yaml": no kind '
        '"CredentialProviderConfig" is registered for version "kubelet.config.k8s.io/v2" in '
        'scheme "pkg/credentialprovider/plugin/plugin.go:69"; nothing was changed'),
    "broken YAML": (
        {**INSTALLING, "CREDPROV_CONFIG": STATIC + "  - name: [\n"}, nothing, 1,
        CONFIG_ERR + 'error decoding config "{conf}/credprov-plugins.yaml": yaml: line 13: '
        "did not find expected node content; nothing was changed"),
    "kubelet validation": (
        {**INSTALLING, "CREDPROV_CONFIG": config("static-credential-provider", cache="-1m")},
        nothing, 1,
        CONFIG_ERR + "failed to validate credential provider config: "
        "providers.defaultCacheDuration: Invalid value: \"-1m0s\": must be greater than or "
        "equal to 0; nothing was changed"),
    "name already in another file": (
        INSTALLING, files(eks_config__yaml=STATIC), 1,
        CONFIG_ERR + 'duplicate provider name "static-credential-provider" found in '
        'configuration file(s) (in "{conf}/credprov-plugins.yaml" and "{conf}/eks-config.yaml"); '
        "nothing was changed"),
    "another file is already broken": (
        INSTALLING, files(other__json="{"), 1,
        CONFIG_ERR + 'error decoding config "{conf}/other.json": couldn\'t get version/kind; '
        "json parse error: unexpected end of JSON input; nothing was changed"),
    "provider not installed nor there": (
        {**INSTALLING, "CREDPROV_CONFIG": config("static-credential-provider", "acr-credential-provider")},
        nothing, 1,
        "credprov-installer: error: CREDPROV_CONFIG names provider acr-credential-provider, "
        "which is not in {bin} and not being installed (PLUGINS: static-credential-provider); "
        "nothing was changed"),
    "provider under its plain name with NAME_PREFIX": (
        {**INSTALLING, "NAME_PREFIX": "credprov-"}, nothing, 1,
        "credprov-installer: error: CREDPROV_CONFIG names provider static-credential-provider, "
        "which is not in {bin} and not being installed (PLUGINS: static-credential-provider, "
        "NAME_PREFIX credprov-); nothing was changed"),
    "config file is not in the image": (
        {**INSTALLING, "CREDPROV_CONFIG": "/nonexistent/credprov.yaml"}, nothing, 1,
        "credprov-installer: error: CREDPROV_CONFIG names /nonexistent/credprov.yaml, which is "
        "not a file in the image"),
    # defect 4: PLUGINS are names, never install's options
    "PLUGINS --bin-dir=": (
        {"PLUGINS": "--bin-dir=/tmp"}, nothing, 2,
        "credprov-installer: error: PLUGINS holds plugin names only, got --bin-dir=/tmp"),
    "PLUGINS --force": (
        {"PLUGINS": "static-credential-provider,--force"}, nothing, 2,
        "credprov-installer: error: PLUGINS holds plugin names only, got --force"),
    "PLUGINS --uninstall": (
        {"PLUGINS": "--uninstall"}, nothing, 2,
        "credprov-installer: error: PLUGINS holds plugin names only, got --uninstall"),
    "PLUGINS a glob": (
        {"PLUGINS": "*"}, files(static_credential_provider="x"), 1,
        "credprov-installer: error: unknown plugin * in PLUGINS; this bundle has: "
        "static-credential-provider ecr-credential-provider acr-credential-provider"),
    "unknown plugin": (
        {"PLUGINS": "ecr-credential-provider nope"}, nothing, 1,
        "credprov-installer: error: unknown plugin nope in PLUGINS; this bundle has: "
        "static-credential-provider ecr-credential-provider acr-credential-provider"),
    # defect 7 and the other settings
    "NAME_PREFIX other than credprov-": (
        {"NAME_PREFIX": "eks-"}, nothing, 2,
        "credprov-installer: error: NAME_PREFIX may only be credprov- (the runtime recognises "
        "only that prefix)"),
    "FORCE not a flag": (
        {"FORCE": "yes"}, nothing, 2, "credprov-installer: error: FORCE must be 1 or 0"),
    # defect 5: a directory at the config's name, even with FORCE=1
    "directory at the config name": (
        {**INSTALLING, "FORCE": "1"}, directory_at("credprov-plugins.yaml"), 1,
        "credprov-installer: error: {conf}/credprov-plugins.yaml is a directory: refusing to "
        "write the config there (remove it or set CREDPROV_CONFIG_NAME)"),
    # defect 3: ownership, for JSON too
    "foreign file at the config name": (
        INSTALLING, files(credprov_plugins__yaml="# mine\n"), 1,
        "credprov-installer: error: {conf}/credprov-plugins.yaml exists and was not written by "
        "this installer; set FORCE=1 to replace it"),
    "JSON edited after us": (
        {**INSTALLING, "CREDPROV_CONFIG": STATIC_JSON, "CREDPROV_CONFIG_NAME": "credprov.json"},
        written_then_edited("credprov.json", STATIC_JSON + "\n"), 1,
        "credprov-installer: error: {conf}/credprov.json was changed since this installer "
        "wrote it; set FORCE=1 to replace it"),
    "uninstall a plugin another config names": (
        {"UNINSTALL": "1", "PLUGINS": "static-credential-provider"},
        all_of(files(eks__yaml=STATIC), ours_in_bin("static-credential-provider")), 1,
        "credprov-installer: error: {conf}/eks.yaml names static-credential-provider: "
        "uninstalling it would break that config; remove it from there first, or set FORCE=1"),
    "uninstall beside a config it cannot read": (
        {"UNINSTALL": "1"}, all_of(files(eks__yaml="{"), ours_in_bin("static-credential-provider")),
        1,
        "credprov-installer: error: cannot tell which plugins {conf}/eks.yaml names (error "
        'decoding config "{conf}/eks.yaml": couldn\'t get version/kind; json parse error: '
        "unexpected end of JSON input); set FORCE=1 to uninstall anyway"),
    # defect 2: the runtime is run on the node, so the node's root and path are required
    "no /host/root": (
        {"PLUGINS": "static-credential-provider"}, no_root, 1,
        "credprov-installer: error: {host}/root is not mounted: mount the node's / there "
        "read-only (the runtime is run on the node before any plugin is linked)"),
    "no HOST_BIN_DIR": (
        {"HOST_BIN_DIR": ""}, nothing, 1,
        "credprov-installer: error: HOST_BIN_DIR is not set: set it to the node's path of the "
        "bin dir mounted at {bin}"),
    "HOST_BIN_DIR another directory": (
        {"HOST_BIN_DIR": "/usr/libexec"}, nothing, 1,
        "credprov-installer: error: HOST_BIN_DIR /usr/libexec is not the directory mounted at "
        "{bin} (seen through {host}/root)"),
    "no /host/config with CREDPROV_CONFIG": (
        INSTALLING, remove("config"), 1,
        "credprov-installer: error: CREDPROV_CONFIG is set but {conf} is not mounted: mount "
        "the kubelet's credential provider config directory there"),
    "no /host/config to uninstall": (
        {"UNINSTALL": "1"}, remove("config"), 1,
        "credprov-installer: error: UNINSTALL=1 is set but {conf} is not mounted: mount the "
        "kubelet's credential provider config directory there"),
}  # fmt: skip


@pytest.mark.parametrize("env, setup, code, line", REFUSALS.values(), ids=REFUSALS.keys())
def test_refusals_are_one_line_and_change_nothing(
    host: Host, env: dict[str, str], setup: Setup, code: int, line: str
) -> None:
    setup(host)
    conf_before = host.config_files() if host.conf.is_dir() else {}
    bin_before = host.plugins()
    proc = host.run(env)
    assert (proc.returncode, proc.stdout) == (code, "")
    assert proc.stderr == line.format(conf=host.conf, bin=host.bin, host=host.host) + "\n"
    assert host.install_calls() == []  # nothing installed: everything is checked first
    assert (host.config_files() if host.conf.is_dir() else {}) == conf_before
    assert host.plugins() == bin_before
    assert host.leftovers() == []
    assert CANARY not in proc.stderr


# -- what install is asked to do --------------------------------------------------------------

INSTALL_ARGS = {
    "default: every plugin, after --": ({}, ["--", *NAMES]),
    "names from PLUGINS, commas and spaces, once": (
        {"PLUGINS": "ecr-credential-provider, static-credential-provider ecr-credential-provider"},
        ["--", "ecr-credential-provider", "static-credential-provider"]),
    "NAME_PREFIX and FORCE": (
        {"PLUGINS": "ecr-credential-provider", "NAME_PREFIX": "credprov-", "FORCE": "1"},
        ["--prefix", "credprov-", "--force", "--", "ecr-credential-provider"]),
}  # fmt: skip


@pytest.mark.parametrize("env, args", INSTALL_ARGS.values(), ids=INSTALL_ARGS.keys())
def test_install_runs_the_runtime_inside_the_node_root(
    host: Host, env: dict[str, str], args: list[str]
) -> None:
    proc = host.run(env)
    assert proc.returncode == 0, proc.stderr
    assert host.install_calls() == [expected_install_args(host, *args)]
    names = args[args.index("--") + 1 :]
    assert proc.stdout.splitlines() == installed(host, *names, prefix=env.get("NAME_PREFIX", ""))


def test_a_failed_install_writes_no_config(host: Host) -> None:
    proc = host.run({**INSTALLING, "STUB_INSTALL_FAIL": "the runtime cannot run on this node"})
    assert (proc.returncode, proc.stderr) == (
        1, "install: error: the runtime cannot run on this node\n")  # fmt: skip
    assert host.config_files() == {}
    assert host.leftovers() == []


# -- the config's life: install, unchanged, update, uninstall, for YAML and JSON ---------------

FORMATS = {
    "yaml": ("credprov-plugins.yaml", STATIC, MARKER + "\n" + STATIC + "\n"),
    "json": ("credprov.json", STATIC_JSON, STATIC_JSON + "\n"),
}


@pytest.mark.parametrize("name, text, written", FORMATS.values(), ids=FORMATS.keys())
def test_config_install_update_uninstall(host: Host, name: str, text: str, written: str) -> None:
    (host.conf / "eks.yaml").write_text(config("ecr-credential-provider"))
    env = {"PLUGINS": "static-credential-provider", "CREDPROV_CONFIG": text,
           "CREDPROV_CONFIG_NAME": name}  # fmt: skip
    dest = host.conf / name
    first = host.run(env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        *installed(host, "static-credential-provider"), f"installed: {dest}"]  # fmt: skip
    assert dest.read_text() == written
    assert (host.conf / owner_file(name)).read_text() == sha256(written) + "\n"
    assert dest.stat().st_mode & 0o777 == 0o644

    again = host.run(env)
    assert again.stdout.splitlines()[-1] == f"unchanged: {dest}"

    newer = text.replace("1m", "2m")
    update = host.run({**env, "CREDPROV_CONFIG": newer})
    assert update.returncode == 0, update.stderr
    assert update.stdout.splitlines()[-1] == f"updated: {dest}"
    assert "2m" in dest.read_text()
    assert (host.conf / owner_file(name)).read_text() == sha256(dest.read_text()) + "\n"
    host.install_calls()

    # Uninstall: our config first, then the plugin names; eks.yaml (foreign) stays.
    gone = host.run({"UNINSTALL": "1", "CREDPROV_CONFIG_NAME": name,
                     "PLUGINS": "static-credential-provider"})  # fmt: skip
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.splitlines() == [
        f"uninstalled: {dest}", f"uninstalled: {host.bin}/static-credential-provider"]  # fmt: skip
    assert host.install_calls() == [
        f"--bin-dir {host.bin} --uninstall -- static-credential-provider"]  # fmt: skip
    assert sorted(p.name for p in host.conf.iterdir()) == ["eks.yaml"]
    assert host.leftovers() == []


def test_edited_config_is_replaced_only_with_force_and_removed_only_with_force(
    host: Host,
) -> None:
    env = {**INSTALLING, "CREDPROV_CONFIG_NAME": "c.json", "CREDPROV_CONFIG": STATIC_JSON}
    assert host.run(env).returncode == 0
    dest = host.conf / "c.json"
    dest.write_text(dest.read_text().replace('"1m"', '"5m"'))  # an operator's edit
    assert host.run(env).returncode == 1
    forced = host.run({**env, "FORCE": "1"})
    assert forced.stdout.splitlines()[-1] == f"updated: {dest}"
    assert dest.read_text() == STATIC_JSON + "\n"

    dest.write_text(dest.read_text().replace('"1m"', '"5m"'))
    kept = host.run({"UNINSTALL": "1", "CREDPROV_CONFIG_NAME": "c.json"})
    assert kept.returncode == 1  # the edited file still names the plugin
    assert "c.json names static-credential-provider" in kept.stderr
    removed = host.run({"UNINSTALL": "1", "CREDPROV_CONFIG_NAME": "c.json", "FORCE": "1"})
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines()[0] == f"uninstalled: {dest}"
    assert list(host.conf.iterdir()) == []
    assert removed.stderr == (
        f"credprov-installer: warning: {host.conf} has no config file left: a kubelet pointed "
        "at it will not start; remove its --image-credential-provider-config flag\n"
    )


OLD = MARKER + "\n" + STATIC + "\n"
NEW = MARKER + "\n" + STATIC.replace("1m", "2m") + "\n"
#: What an earlier run left (file content, ownership file) → this run's status line.
OWNERSHIP = {
    "written by an older image (marker only)": (OLD, None, "updated"),
    "interrupted before the rename": (OLD, [sha256(OLD), sha256(NEW)], "updated"),
    "interrupted after the rename": (NEW, [sha256(OLD), sha256(NEW)], "unchanged"),
    "same text, but not ours": (NEW.replace(MARKER + "\n", "# " + MARKER), None, None),
}


@pytest.mark.parametrize("text, recorded, status", OWNERSHIP.values(), ids=OWNERSHIP.keys())
def test_ownership_survives_older_images_and_interruptions(
    host: Host, text: str, recorded: list[str] | None, status: str | None
) -> None:
    dest = host.conf / "credprov-plugins.yaml"
    dest.write_text(text)
    if recorded is not None:
        (host.conf / owner_file(dest.name)).write_text("".join(h + "\n" for h in recorded))
    proc = host.run({**INSTALLING, "CREDPROV_CONFIG": STATIC.replace("1m", "2m")})
    if status is None:
        assert proc.returncode == 1 and "was not written by this installer" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"{status}: {dest}"
    assert dest.read_text() == NEW
    assert (host.conf / owner_file(dest.name)).read_text() == sha256(NEW) + "\n"


def test_the_ownership_file_is_not_a_config_file_for_the_loader(host: Host) -> None:
    from credprov.credentialprovider.plugin.config import config_files, load_config

    assert host.run({**INSTALLING, "CREDPROV_CONFIG_NAME": "c.json",
                     "CREDPROV_CONFIG": STATIC_JSON}).returncode == 0  # fmt: skip
    assert (host.conf / ".c.json.credprov-owner").is_file()
    assert config_files(str(host.conf)) == [str(host.conf / "c.json")]
    cfg, _hash = load_config(str(host.conf))
    assert [p.name for p in cfg.providers] == ["static-credential-provider"]


def test_config_may_name_plugins_already_in_the_bin_dir(host: Host) -> None:
    """EKS: the node's own ecr-credential-provider, ours as credprov-ecr-credential-provider."""
    (host.bin / "ecr-credential-provider").write_text("#!/bin/sh\n")
    env = {"PLUGINS": "ecr-credential-provider", "NAME_PREFIX": "credprov-",
           "CREDPROV_CONFIG": config("credprov-ecr-credential-provider", "ecr-credential-provider")}  # fmt: skip
    proc = host.run(env)
    assert proc.returncode == 0, proc.stderr
    assert host.plugins() == ["credprov-ecr-credential-provider", "ecr-credential-provider"]


def test_narrowing_plugins_removes_what_it_no_longer_lists_unless_a_config_names_it(
    host: Host,
) -> None:
    first = host.run({"PLUGINS": "static-credential-provider,ecr-credential-provider"})
    assert first.returncode == 0, first.stderr
    # Another config file names ecr-credential-provider: narrowing would break it.
    (host.conf / "eks.json").write_text(config("ecr-credential-provider"))
    refused = host.run({"PLUGINS": "static-credential-provider"})
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        "credprov-installer: error: PLUGINS no longer lists ecr-credential-provider, but "
        f"{host.conf}/eks.json names ecr-credential-provider: removing it would break that "
        "config; list it in PLUGINS or remove it from there first; nothing was changed\n"
    )
    assert host.plugins() == ["ecr-credential-provider", "static-credential-provider"]
    (host.conf / "eks.json").unlink()
    narrowed = host.run({"PLUGINS": "static-credential-provider"})
    assert narrowed.returncode == 0, narrowed.stderr
    assert f"uninstalled: {host.bin}/ecr-credential-provider" in narrowed.stdout.splitlines()
    assert host.plugins() == ["static-credential-provider"]


def test_config_from_a_file_in_the_image(host: Host) -> None:
    src = host.tmp / "image-config.yaml"
    src.write_text(STATIC)
    proc = host.run({**INSTALLING, "CREDPROV_CONFIG": str(src)})
    assert proc.returncode == 0, proc.stderr
    assert (host.conf / "credprov-plugins.yaml").read_text() == MARKER + "\n" + STATIC


# -- defect 6: temporary names are never predictable, never followed through a symlink -------


def test_temporary_names_are_not_followed_through_planted_symlinks(host: Host) -> None:
    """The names an earlier entrypoint used (``.credprov-probe.$$``, ``.NAME.tmp.$$``) are
    planted as symlinks to a victim file, knowing the script's pid (the child's pid before
    exec): nothing is written through them."""
    victim = host.tmp / "victim"
    victim.write_text("precious\n")

    def plant() -> None:
        pid = os.getpid()
        for name in (f"bin/.credprov-probe.{pid}", f"config/.credprov-probe.{pid}",
                     f"config/.credprov-plugins.yaml.tmp.{pid}"):  # fmt: skip
            os.symlink(victim, host.host / name)

    proc = host.run(INSTALLING, preexec_fn=plant)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert (host.conf / "credprov-plugins.yaml").read_text().endswith(STATIC + "\n")


def test_doctor_and_unknown_commands_keep_their_dispatch(host: Host) -> None:
    doctor = host.run(argv=("doctor", "--node-root", "/x"))
    assert (doctor.returncode, doctor.stdout) == (0, "doctor\n")  # the runtime, as doctor
    other = host.run(argv=("install",))
    assert other.returncode == 2


# -- validate-config: the kubelet's view of one directory made of several paths ---------------

VALIDATE = {
    "a directory": (["--names", "D"], 0, "static-credential-provider\n", ""),
    "directory plus a new file": (["--names", "D", "F/b.yaml"], 0,
                                  "static-credential-provider\necr-credential-provider\n", ""),
    "a later file replaces its namesake": (["--names", "D", "F/a.yaml"], 0,
                                           "ecr-credential-provider\n", ""),
    "duplicate across files": (["D", "F/dup.yaml"], 1, "",
                               'validate-config: error: duplicate provider name '
                               '"static-credential-provider" found in configuration file(s) '
                               '(in "D/a.yaml" and "D/dup.yaml")\n'),
    "errors name the file as it will be named": (["D", "F/bad.json"], 1, "",
                                                 'validate-config: error: error decoding config '
                                                 '"D/bad.json": couldn\'t get version/kind; json '
                                                 "parse error: unexpected end of JSON input\n"),
    "nothing to read": (["E"], 1, "", 'validate-config: error: no configuration files found in '
                                      'directory "E"\n'),
    "missing path": (["F/nope.yaml"], 1, "", 'validate-config: error: unable to access path '
                                             '"F/nope.yaml": stat F/nope.yaml: no such file or '
                                             "directory\n"),
    "a file the kubelet would not read": (["F/x.conf"], 2, "", "validate-config: error: "
                                          "F/x.conf: a config file's name must end in .json, "
                                          ".yaml or .yml (the kubelet reads only those from a "
                                          "config directory)\n"),
    "no path": ([], 2, "", "validate-config: error: no PATH given (usage: validate-config "
                           "[--names] PATH...)\n"),
    "unknown option": (["--json", "D"], 2, "", "validate-config: error: unknown option --json "
                                               "(usage: validate-config [--names] PATH...)\n"),
}  # fmt: skip


@pytest.mark.parametrize("argv, code, out, err", VALIDATE.values(), ids=VALIDATE.keys())
def test_validate_config(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    out: str,
    err: str,
) -> None:
    from credprov.bundle.validate_config import main

    d, f, e = tmp_path / "d", tmp_path / "f", tmp_path / "e"
    for path in (d, f, e):
        path.mkdir()
    (d / "a.yaml").write_text(STATIC)
    (d / "sub.yaml").mkdir()  # a directory is never a config file
    (d / ".a.yaml.credprov-owner").write_text("x\n")
    (f / "b.yaml").write_text(config("ecr-credential-provider"))
    (f / "a.yaml").write_text(config("ecr-credential-provider"))
    (f / "dup.yaml").write_text(STATIC)
    (f / "bad.json").write_text("{")
    (f / "x.conf").write_text(STATIC)
    places = {"D": str(d), "F": str(f), "E": str(e)}

    def real(arg: str) -> str:
        head, sep, rest = arg.partition("/")
        return places[head] + sep + rest if head in places else arg

    assert main([real(a) for a in argv]) == code
    got = capsys.readouterr()
    for key, place in places.items():
        out, err = out.replace(f'"{key}', f'"{place}'), err.replace(f'"{key}', f'"{place}')
        err = err.replace(f" {key}/", f" {place}/")
    assert (got.out, got.err) == (out, err)
    assert CANARY not in got.out + got.err
