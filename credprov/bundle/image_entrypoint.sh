#!/bin/sh
# The installer image's command: install the bundle's plugins into the kubelet's bin dir and,
# when asked, a provider config into its config directory, without ever leaving the node with
# something the kubelet cannot use. Runs under the image's static busybox; no Python.
#
# Arguments (the container's args; the image also has /bin/credprov-install -> this file):
#   (none) or credprov-install   install (or uninstall), as described here
#   doctor ARGS...               run the bundle's doctor instead (e.g. doctor --node-root /host
#                                with the node's / mounted read-only at /host); the same
#                                program as /bin/doctor, for runtimes that pass args to
#                                this entrypoint rather than replacing it
#
# Environment:
#   PLUGINS              plugin names to install or uninstall (space or comma separated;
#                        default all of the bundle's). Names only: a word starting with "-"
#                        is refused (exit 2), a name not in the bundle too (exit 1). To
#                        install, the names are the whole set (install --prune): a plugin
#                        this installer wrote that PLUGINS no longer lists is removed, unless
#                        a config file in /host/config names it (then: refused, nothing
#                        changed).
#   NAME_PREFIX          optional, only "credprov-": install each plugin as credprov-<name>,
#                        for nodes whose own plugins hold the plain names (EKS's
#                        ecr-credential-provider); the config's providers then use those names
#   CREDPROV_CONFIG      a provider config: the path of a file inside the image, or the
#                        config itself (YAML or JSON) given inline
#   CREDPROV_CONFIG_NAME the file name in /host/config (default credprov-plugins.yaml; must
#                        end in .yaml, .yml or .json, the only names the kubelet reads)
#   HOST_BIN_DIR         the path on the node of the directory mounted at /host/bin
#                        (required to install: the runtime is run there, see below)
#   FORCE=1              replace (or remove) files this installer did not write, or changed
#                        since it wrote them; uninstall plugins another config still names
#   UNINSTALL=1          remove our config file, then the plugins, then unused runtimes
#   TMPDIR               where the private work directory is made (default /tmp: the image's
#                        root is read-only, so mount an emptyDir there)
#   CREDPROV_HOST        for tests only: where the /host mounts are (default /host)
#
# Mounts:
#   /host/bin     read-write: the kubelet's plugin bin dir (always)
#   /host/config  read-write: the kubelet's credential provider config *directory* (with
#                 CREDPROV_CONFIG, and with UNINSTALL=1)
#   /host/root    read-only: the node's / (to install): the new runtime is run once inside
#                 it (chroot /host/root HOST_BIN_DIR/...) before any plugin name points at
#                 it, so a node whose glibc or libz cannot run it is refused with one line
#
# Install order: check everything (mounts, names, the config together with the files already
# in /host/config as the kubelet reads them, that every provider it names is installed now
# or already in the bin dir) -> install the runtime and verify it on the node -> link the
# plugin names -> write the config. A refusal is one line, exit 1 (2 for a bad setting), and
# changes nothing. Uninstall order: our config first (the kubelet must never name a removed
# plugin), then the plugin names, then runtimes nothing uses; a plugin another config file
# still names is not removed without FORCE=1.
#
# Ownership of the config file: next to it, .<name>.credprov-owner holds the sha256 of what
# this installer wrote (the kubelet reads only *.json/*.yaml/*.yml, so it ignores that file).
# While a new version is renamed into place it holds both hashes, so an interrupted run never
# loses ownership. A file someone changed after us is never replaced without FORCE=1. YAML
# files written by older images carry only the marker line below; they are ours too.
#
# Temporary files are mktemp names, created exclusively in the directory they are renamed in
# (never followed through a symlink), and removed on exit.
set -eu

prog=credprov-installer
fail() {
    echo "$prog: error: $*" >&2
    exit 1
}
bad_setting() {
    echo "$prog: error: $*" >&2
    exit 2
}

# Names the bundle's runtime defines (credprov/bundle/_multicall.py: NAME_PREFIX and TOOLS;
# tests/unit/bundle/test_multicall.py compares them with these).
supported_prefix=credprov-
doctor_tool=doctor
validate_config_tool=validate-config

bundle=$(dirname "$(readlink -f "$0")")
case "${1-}" in
"$doctor_tool") shift; exec "$bundle/$doctor_tool" "$@" ;;
credprov-install) shift ;;
"") ;;
*) echo "$prog: error: unknown command $1: want credprov-install (the default) or doctor ARGS" >&2; exit 2 ;;
esac
[ $# -eq 0 ] || { echo "$prog: error: credprov-install takes no arguments (settings are environment variables)" >&2; exit 2; }

marker="# Written by the credprov-plugins installer image; it is replaced on upgrade."
host=${CREDPROV_HOST:-/host}
bin="$host/bin"
conf="$host/config"
root="$host/root"

flag() { # flag NAME VALUE: 1 or 0, else exit 2
    case "$2" in
    1 | true) echo 1 ;;
    "" | 0 | false) echo 0 ;;
    *) return 1 ;;
    esac
}
force=$(flag FORCE "${FORCE:-}") || bad_setting "FORCE must be 1 or 0"
uninstall=$(flag UNINSTALL "${UNINSTALL:-}") || bad_setting "UNINSTALL must be 1 or 0"

prefix=${NAME_PREFIX:-}
case "$prefix" in
"" | "$supported_prefix") ;;
*) bad_setting "NAME_PREFIX may only be $supported_prefix (the runtime recognises only that prefix)" ;;
esac

# PLUGINS: names only, each in the bundle; never options for install.
known=$(cat "$bundle/PLUGINS")
set -f # no globbing of PLUGINS or of the names below
names=""
for word in $(printf '%s\n' "${PLUGINS:-}" | tr ',' ' '); do
    case "$word" in -*) bad_setting "PLUGINS holds plugin names only, got $word" ;; esac
    found=0
    for k in $known; do [ "$word" = "$k" ] && found=1; done
    [ $found = 1 ] || fail "unknown plugin $word in PLUGINS; this bundle has: $(echo $known)"
    case " $names " in *" $word "*) ;; *) names="$names $word" ;; esac
done
[ -n "$names" ] || names=$(echo $known)

work=""
tmps=""
cleanup() {
    [ -z "$work" ] || rm -rf "$work"
    for t in $tmps; do rm -f "$t"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

writable() { # writable DIR: create and remove an exclusive mktemp name there
    probe=$(mktemp "$1/.credprov-probe.XXXXXX" 2>/dev/null) || return 1
    rm -f "$probe"
}

# The kubelet's name for a plugin we install.
installed_name() { echo "$prefix$1"; }

# Our plugin name: a symlink into one of our runtime directories (install's rule).
ours_in_bin() {
    [ -L "$1" ] || return 1
    case "$(readlink "$1")" in .credprov-plugins-*/credprov-plugins) return 0 ;; esac
    return 1
}

regular() { [ -f "$1" ] && [ ! -L "$1" ]; }

sha256() { # the sha256 of a regular file, hex
    set -- $(sha256sum <"$1")
    echo "$1"
}

# The hashes recorded in the ownership file (bounded read; a regular file only).
recorded() {
    regular "$owner" || return 0
    head -c 1024 "$owner" | grep -x '[0-9a-f]\{64\}' || true
}

# Who has the config file at $dest: absent, directory, foreign, edited or ours (legacy: a YAML
# file whose first line is the marker, with no ownership file).
config_state() {
    if [ ! -e "$dest" ] && [ ! -L "$dest" ]; then echo absent; return; fi
    if [ -d "$dest" ] && [ ! -L "$dest" ]; then echo directory; return; fi
    if ! regular "$dest"; then echo foreign; return; fi
    hashes=$(recorded)
    if [ -n "$hashes" ]; then
        if echo "$hashes" | grep -qx "$(sha256 "$dest")"; then echo ours; else echo edited; fi
        return
    fi
    if head -c 200 "$dest" | head -n 1 | grep -qxF "$marker"; then echo ours; return; fi
    echo foreign
}

write_owner() { # write_owner HASH...: replace the ownership file atomically
    t=$(mktemp "$conf/.credprov-owner.XXXXXX") || fail "cannot create a file in $conf"
    tmps="$tmps $t"
    printf '%s\n' "$@" >"$t" && chmod 0644 "$t" && mv -fT "$t" "$owner" ||
        fail "cannot write $owner"
}

config_mount() {
    [ -d "$conf" ] || fail "$1 but $conf is not mounted: mount the kubelet's credential provider config directory there"
    writable "$conf" || fail "$conf is read-only: mount the config directory read-write"
}

private_dir() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/credprov-installer.XXXXXX" 2>/dev/null) ||
        fail "cannot create a private directory in ${TMPDIR:-/tmp}: mount a writable emptyDir at /tmp (the image's root is read-only)"
}

validate_config=$bundle/$validate_config_tool
# One line from validate-config's stderr, without its own prefix.
vc_error() { printf '%s\n' "$1" | tail -n 1 | sed 's/^validate-config: error: //'; }

[ -d "$bin" ] || fail "$bin is not mounted: mount the kubelet's plugin bin dir there (hostPath)"
writable "$bin" || fail "$bin is read-only: mount the kubelet's plugin bin dir read-write"

name=${CREDPROV_CONFIG_NAME:-credprov-plugins.yaml}
case "$name" in
*/* | .*) fail "CREDPROV_CONFIG_NAME must be a plain file name, got $name" ;;
*.yaml | *.yml | *.json) ;;
*) fail "CREDPROV_CONFIG_NAME must end in .yaml, .yml or .json (the kubelet reads only those), got $name" ;;
esac
dest="$conf/$name"
owner="$conf/.$name.credprov-owner"

if [ $uninstall = 1 ]; then
    config_mount "UNINSTALL=1 is set"
    # Check first, change nothing until every check passed.
    state=$(config_state)
    case "$state" in
    ours) ;;
    edited) [ $force = 1 ] && state=ours ;;
    esac
    private_dir
    # Which providers do the other config files name? Then no plugin they name is removed.
    set +f
    for f in "$conf"/* "$conf"/.[!.]* "$conf"/..?*; do
        set -f
        case "$f" in *.json | *.yaml | *.yml) ;; *) continue ;; esac
        [ -e "$f" ] || [ -L "$f" ] || continue
        [ -d "$f" ] && [ ! -L "$f" ] && continue
        [ "$f" = "$dest" ] && [ "$state" = ours ] && continue
        if ! out=$("$validate_config" --names "$f" 2>&1); then
            [ $force = 1 ] && continue
            fail "cannot tell which plugins $f names ($(vc_error "$out")); set FORCE=1 to uninstall anyway"
        fi
        if [ $force = 0 ]; then
            for p in $names; do
                n=$(installed_name "$p")
                printf '%s\n' "$out" | grep -qxF "$n" || continue
                ours_in_bin "$bin/$n" || continue
                fail "$f names $n: uninstalling it would break that config; remove it from there first, or set FORCE=1"
            done
        fi
    done
    set -f
    case "$state" in
    ours)
        rm -f "$dest" || fail "cannot remove $dest"
        rm -f "$owner"
        echo "uninstalled: $dest"
        ;;
    absent) rm -f "$owner" ;;
    edited) echo "left alone: $dest (changed since this installer wrote it; FORCE=1 removes it)" ;;
    *) echo "left alone: $dest (not written by this installer)" ;;
    esac
    set -- --bin-dir "$bin" --uninstall
    [ -z "$prefix" ] || set -- "$@" --prefix "$prefix"
    # shellcheck disable=SC2086 # names are checked words; globbing is off
    "$bundle/install" "$@" -- $names || exit $?
    left=0
    set +f
    for f in "$conf"/* "$conf"/.[!.]* "$conf"/..?*; do
        case "$f" in *.json | *.yaml | *.yml) [ -e "$f" ] && left=1 ;; esac
    done
    set -f
    [ $left = 1 ] || echo "$prog: warning: $conf has no config file left: a kubelet pointed at it will not start; remove its --image-credential-provider-config flag" >&2
    exit 0
fi

# Installing: /host/root and HOST_BIN_DIR, so the runtime is run on the node before use.
if [ -n "${CREDPROV_CONFIG:-}" ]; then
    config_mount "CREDPROV_CONFIG is set"
fi
[ -d "$root" ] || fail "$root is not mounted: mount the node's / there read-only (the runtime is run on the node before any plugin is linked)"
[ -n "${HOST_BIN_DIR:-}" ] || fail "HOST_BIN_DIR is not set: set it to the node's path of the bin dir mounted at $bin"
case "$HOST_BIN_DIR" in /*) ;; *) fail "HOST_BIN_DIR must be an absolute path on the node, got $HOST_BIN_DIR" ;; esac
[ "$root$HOST_BIN_DIR" -ef "$bin" ] ||
    fail "HOST_BIN_DIR $HOST_BIN_DIR is not the directory mounted at $bin (seen through $root)"

status=""
if [ -n "${CREDPROV_CONFIG:-}" ]; then
    private_dir
    mkdir "$work/new"
    cand="$work/new/$name"
    case "$name" in *.json) header="" ;; *) header="$marker" ;; esac
    case "$CREDPROV_CONFIG" in
    /*)
        [ -f "$CREDPROV_CONFIG" ] || fail "CREDPROV_CONFIG names $CREDPROV_CONFIG, which is not a file in the image"
        # At most one byte more than the loader reads, so an oversized file is refused there.
        { [ -z "$header" ] || echo "$header"; head -c 16777217 "$CREDPROV_CONFIG"; } >"$cand" ||
            fail "cannot copy $CREDPROV_CONFIG into $work"
        ;;
    *)
        { [ -z "$header" ] || echo "$header"; printf '%s\n' "$CREDPROV_CONFIG"; } >"$cand" ||
            fail "cannot write $cand"
        ;;
    esac
    # The kubelet's view of the directory once the candidate is in it: one decode and
    # validation of every file, provider names unique across them.
    if ! out=$("$validate_config" "$conf" "$cand" 2>&1 >/dev/null); then
        fail "CREDPROV_CONFIG would break the kubelet's config directory: $(vc_error "$out"); nothing was changed"
    fi
    provided=$("$validate_config" --names "$cand" 2>/dev/null) ||
        fail "CREDPROV_CONFIG cannot be read back from $cand"
    for n in $provided; do
        wanted=0
        for p in $names; do [ "$n" = "$(installed_name "$p")" ] && wanted=1; done
        [ $wanted = 1 ] || [ -e "$bin/$n" ] || [ -L "$bin/$n" ] ||
            fail "CREDPROV_CONFIG names provider $n, which is not in $bin and not being installed (PLUGINS:$names${prefix:+, NAME_PREFIX $prefix}); nothing was changed"
    done
    state=$(config_state)
    if [ "$state" = directory ]; then
        fail "$dest is a directory: refusing to write the config there (remove it or set CREDPROV_CONFIG_NAME)"
    elif [ "$state" != absent ] && regular "$dest" && cmp -s "$cand" "$dest"; then
        status=unchanged
    elif [ "$state" = absent ]; then
        status=installed
    elif [ "$state" = ours ] || [ $force = 1 ]; then
        status=updated
    elif [ "$state" = edited ]; then
        fail "$dest was changed since this installer wrote it; set FORCE=1 to replace it"
    else
        fail "$dest exists and was not written by this installer; set FORCE=1 to replace it"
    fi
fi

# PLUGINS is the whole set: our names it no longer lists go (install --prune), unless a
# config file (ours as it will be, or another) still names one.
set +f
for f in "$bin"/* "$bin"/.[!.]*; do
    set -f
    ours_in_bin "$f" || continue
    n=${f##*/}
    case $n in "$prefix"*) ;; *) continue ;; esac
    [ -n "$prefix" ] || case $n in credprov-*) continue ;; esac
    listed=0
    for p in $names; do [ "$n" = "$(installed_name "$p")" ] && listed=1; done
    [ $listed = 0 ] || continue
    set +f
    for c in "$conf"/* "$conf"/.[!.]* ${cand:+"$cand"}; do
        set -f
        case "$c" in *.json | *.yaml | *.yml) ;; *) continue ;; esac
        [ -f "$c" ] || continue
        [ "$c" = "$dest" ] && [ -n "${cand:-}" ] && continue # replaced by the candidate
        shown=$c
        [ "$c" != "${cand:-}" ] || shown="CREDPROV_CONFIG"
        if "$validate_config" --names "$c" 2>/dev/null | grep -qxF "$n"; then
            fail "PLUGINS no longer lists ${n#"$prefix"}, but $shown names $n: removing it would break that config; list it in PLUGINS or remove it from there first; nothing was changed"
        fi
    done
done
set -f

set -- --bin-dir "$bin" --node-root "$root" --node-bin-dir "$HOST_BIN_DIR" --prune
[ -z "$prefix" ] || set -- "$@" --prefix "$prefix"
[ $force = 0 ] || set -- "$@" --force
# shellcheck disable=SC2086 # names are checked words; globbing is off
"$bundle/install" "$@" -- $names || exit $?

[ -n "$status" ] || exit 0
new_hash=$(sha256 "$cand")
if [ $status = unchanged ]; then
    # Ours (or identical to what we would write): record it, once.
    [ "$(recorded)" = "$new_hash" ] || { [ "$state" = foreign ] || write_owner "$new_hash"; }
    echo "unchanged: $dest"
    exit 0
fi
new=$(mktemp "$conf/.credprov-config.XXXXXX") || fail "cannot create a file in $conf"
tmps="$tmps $new"
cat "$cand" >"$new" && chmod 0644 "$new" || fail "cannot write $new"
# Own the new content before it appears, and keep owning the old until it is replaced.
if [ "$state" = ours ]; then
    write_owner "$(sha256 "$dest")" "$new_hash"
else
    write_owner "$new_hash"
fi
[ ! -d "$dest" ] || [ -L "$dest" ] || fail "$dest is a directory: refusing to write the config there"
mv -fT "$new" "$dest" || fail "cannot rename $new to $dest"
write_owner "$new_hash"
echo "$status: $dest"
