#!/bin/sh
# The installer image's command: install the bundle's plugins into the host directory
# mounted at /host/bin and, when asked, a provider config into the config directory
# mounted at /host/config. Runs under the image's static busybox; no Python.
#
# Arguments (the container's args; the image also has /bin/credprov-install -> this file):
#   (none) or credprov-install   install, as described here
#   doctor ARGS...               run the bundle's doctor instead (e.g. doctor --root /host
#                                with the node's / mounted read-only at /host); the same
#                                program as /bin/doctor, for runtimes that pass args to
#                                this entrypoint rather than replacing it
#
# Environment:
#   PLUGINS              plugin names to install (space or comma separated; default all)
#   CREDPROV_CONFIG      a provider config: the path of a file inside the image, or the
#                        config itself (YAML or JSON) given inline
#   CREDPROV_CONFIG_NAME the file name written in /host/config (default credprov-plugins.yaml)
#   FORCE=1              replace files this installer did not write
#   UNINSTALL=1          remove the plugins (and our config file) instead
set -eu

prog=credprov-installer
fail() {
    echo "$prog: error: $*" >&2
    exit 1
}

case "${1-}" in
doctor) shift; exec /credprov-plugins/doctor "$@" ;;
credprov-install) shift ;;
"") ;;
*) echo "$prog: error: unknown command $1: want credprov-install (the default) or doctor ARGS" >&2; exit 2 ;;
esac
[ $# -eq 0 ] || { echo "$prog: error: credprov-install takes no arguments (settings are environment variables)" >&2; exit 2; }
marker="# Written by the credprov-plugins installer image; it is replaced on upgrade."

writable() {
    probe="$1/.credprov-probe.$$"
    if (: >"$probe") 2>/dev/null; then
        rm -f "$probe"
        return 0
    fi
    return 1
}

[ -d /host/bin ] || fail "/host/bin is not mounted: mount the kubelet's plugin bin dir there (hostPath)"
writable /host/bin || fail "/host/bin is read-only: mount the kubelet's plugin bin dir read-write"

set -- --bin-dir /host/bin --no-verify
[ "${FORCE:-0}" = 1 ] && set -- "$@" --force
[ "${UNINSTALL:-0}" = 1 ] && set -- "$@" --uninstall
# shellcheck disable=SC2046 # word splitting of PLUGINS is intended
set -- "$@" $(echo "${PLUGINS:-}" | tr ',' ' ')
/credprov-plugins/install "$@"

[ -n "${CREDPROV_CONFIG:-}" ] || exit 0
[ -d /host/config ] || fail "CREDPROV_CONFIG is set but /host/config is not mounted: mount the kubelet's credential provider config directory there"
writable /host/config || fail "/host/config is read-only: mount the config directory read-write"
name=${CREDPROV_CONFIG_NAME:-credprov-plugins.yaml}
case "$name" in
*/* | .*) fail "CREDPROV_CONFIG_NAME must be a plain file name, got $name" ;;
*.yaml | *.yml | *.json) ;;
*) fail "CREDPROV_CONFIG_NAME must end in .yaml, .yml or .json (the kubelet reads only those), got $name" ;;
esac
dest="/host/config/$name"

if [ "${UNINSTALL:-0}" = 1 ]; then
    if [ -f "$dest" ] && head -n 1 "$dest" | grep -qxF "$marker"; then
        rm -f "$dest"
        echo "uninstalled: $dest"
    fi
    exit 0
fi

new="/host/config/.$name.tmp.$$"
trap 'rm -f "$new"' EXIT
case "$CREDPROV_CONFIG" in
/*)
    [ -f "$CREDPROV_CONFIG" ] || fail "CREDPROV_CONFIG names $CREDPROV_CONFIG, which is not a file in the image"
    { echo "$marker"; cat "$CREDPROV_CONFIG"; } >"$new" || fail "cannot write $new"
    ;;
*)
    { echo "$marker"; printf '%s\n' "$CREDPROV_CONFIG"; } >"$new" || fail "cannot write $new"
    ;;
esac
case "$name" in
*.json)
    # JSON has no comments: keep the marker out of the file, and own it by name only.
    tail -n +2 "$new" >"$new.j" && mv -f "$new.j" "$new"
    ;;
esac

if [ -e "$dest" ] || [ -L "$dest" ]; then
    if cmp -s "$new" "$dest"; then
        echo "unchanged: $dest"
        exit 0
    fi
    if ! head -n 1 "$dest" | grep -qxF "$marker" && [ "${FORCE:-0}" != 1 ]; then
        fail "$dest exists and was not written by this installer; set FORCE=1 to replace it"
    fi
    status=updated
else
    status=installed
fi
chmod 0644 "$new"
mv -f "$new" "$dest" || fail "cannot rename $new to $dest"
echo "$status: $dest"
