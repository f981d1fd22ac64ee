#!/bin/sh
# credprov-plugins/install: put credprov's plugins into a kubelet bin dir. POSIX sh only
# (no Python on the node); runs under dash, bash and busybox sh.
#
# Layout in the bin dir:
#   .credprov-plugins-<BUILD_ID>/       the runtime, copied under a temporary name and then
#                                       renamed: complete before any plugin name points at it
#   <plugin name> -> .credprov-plugins-<BUILD_ID>/credprov-plugins     one symlink per plugin,
#                                       replaced atomically (rename) on update
# Older runtime directories no plugin name points at are removed afterwards.
set -eu

prog=install
usage() {
    cat <<EOF
usage: install --bin-dir DIR [--force] [--uninstall] [--no-verify] [PLUGIN...]
       install --list

Install credprov's plugins (all when no PLUGIN is named) into the kubelet's bin dir DIR
under their kubelet names, atomically and idempotently. A file there that this installer
did not write is never replaced unless --force. --uninstall removes the named plugins (all
when none is named) and runtimes no longer used. --no-verify skips running the installed
runtime once (needed when installing for another root, e.g. from a container).
EOF
}

fail() {
    echo "$prog: error: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd -P)
[ -f "$here/BUILD_ID" ] && [ -f "$here/PLUGINS" ] && [ -d "$here/runtime" ] ||
    fail "incomplete bundle in $here (BUILD_ID, PLUGINS or runtime/ missing)"
build_id=$(cat "$here/BUILD_ID")
known=$(cat "$here/PLUGINS")
runtime_name=credprov-plugins

bin_dir=""
force=0
uninstall=0
verify=1
names=""
while [ $# -gt 0 ]; do
    case "$1" in
    --bin-dir) [ $# -ge 2 ] || fail "--bin-dir needs a value"; bin_dir=$2; shift ;;
    --bin-dir=*) bin_dir=${1#--bin-dir=} ;;
    --force) force=1 ;;
    --uninstall) uninstall=1 ;;
    --no-verify) verify=0 ;;
    --list) echo "$known"; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; names="$names $*"; break ;;
    -*) echo "$prog: error: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) names="$names $1" ;;
    esac
    shift
done

[ -n "$bin_dir" ] || { echo "$prog: error: --bin-dir is required" >&2; usage >&2; exit 2; }
[ -d "$bin_dir" ] || fail "bin dir $bin_dir does not exist (create it first)"
case "$bin_dir" in /*) ;; *) bin_dir=$(cd "$bin_dir" && pwd -P) ;; esac

for n in $names; do
    found=0
    for k in $known; do [ "$n" = "$k" ] && found=1; done
    [ $found = 1 ] || fail "unknown plugin $n; this bundle has: $(echo $known)"
done
[ -n "$names" ] || names=$known

vdir=".$runtime_name-$build_id"
target="$vdir/$runtime_name"

# A name is ours when it is a symlink into one of our runtime directories.
ours() {
    [ -L "$1" ] || return 1
    case "$(readlink "$1")" in ".$runtime_name-"*"/$runtime_name") return 0 ;; esac
    return 1
}

# Remove runtime directories (and leftovers of interrupted runs) no plugin name uses.
collect_garbage() {
    used=""
    for f in "$bin_dir"/* "$bin_dir"/.[!.]*; do
        ours "$f" && used="$used $(dirname "$(readlink "$f")")"
    done
    for d in "$bin_dir"/.$runtime_name-*; do
        [ -d "$d" ] || continue
        base=${d##*/}
        case " $used " in *" $base "*) continue ;; esac
        rm -rf "$d" || fail "cannot remove $d"
        case "$base" in *.tmp.*) ;; *) echo "removed: $d" ;; esac
    done
}

if [ $uninstall = 1 ]; then
    for n in $names; do
        p="$bin_dir/$n"
        if ours "$p"; then
            rm -f "$p" || fail "cannot remove $p"
            echo "uninstalled: $p"
        elif [ -e "$p" ] || [ -L "$p" ]; then
            echo "left alone: $p (not written by this installer)"
        else
            echo "not installed: $p"
        fi
    done
    collect_garbage
    exit 0
fi

# Check every name before changing anything: all or nothing.
for n in $names; do
    p="$bin_dir/$n"
    if [ -d "$p" ] && [ ! -L "$p" ]; then
        fail "$p is a directory"
    fi
    if { [ -e "$p" ] || [ -L "$p" ]; } && ! ours "$p" && [ $force = 0 ]; then
        fail "$p exists and was not written by this installer; use --force to replace it"
    fi
done

probe="$bin_dir/.$runtime_name-probe.$$"
(: >"$probe") 2>/dev/null || fail "bin dir $bin_dir is not writable (read-only mount?)"
rm -f "$probe"

if [ ! -d "$bin_dir/$vdir" ]; then
    tmp="$bin_dir/$vdir.tmp.$$"
    rm -rf "$tmp"
    if ! cp -pR "$here/runtime" "$tmp" 2>/dev/null; then
        rm -rf "$tmp"
        fail "cannot copy the runtime into $bin_dir (disk full or read-only?)"
    fi
    mv "$tmp" "$bin_dir/$vdir" || fail "cannot rename $tmp"
    echo "unpacked: $bin_dir/$vdir"
fi

if [ $verify = 1 ]; then
    # Run the runtime once here: a missing glibc/libz or a noexec mount shows up now, with
    # the loader's own words, instead of at the kubelet's first image pull.
    if ! out=$("$bin_dir/$target" --list 2>&1 >/dev/null); then
        fail "the runtime cannot run on this node: $(echo "$out" | head -n 1) (needs $(cat "$here/REQUIREMENTS" 2>/dev/null || echo 'glibc and libz'))"
    fi
fi

for n in $names; do
    p="$bin_dir/$n"
    if [ "$(readlink "$p" 2>/dev/null || true)" = "$target" ]; then
        echo "unchanged: $p"
        continue
    fi
    status=installed
    if [ -e "$p" ] || [ -L "$p" ]; then status=updated; fi
    if [ -L "$p" ] && [ -d "$p" ]; then rm -f "$p"; fi # a foreign link to a dir (--force)
    tmp="$bin_dir/.$n.tmp.$$"
    rm -f "$tmp"
    ln -s "$target" "$tmp" || fail "cannot create $tmp"
    mv -f "$tmp" "$p" || { rm -f "$tmp"; fail "cannot rename $tmp to $p"; }
    echo "$status: $p"
done

collect_garbage
