#!/bin/sh
# credprov-plugins/install: put credprov's plugins into a kubelet bin dir. POSIX sh only
# (no Python on the node); runs under dash, bash and busybox sh.
#
# Layout in the bin dir:
#   .credprov-plugins-<BUILD_ID>/     a runtime, copied under a temporary name, checked
#                                     against the bundle's MANIFEST, then renamed into place
#   .credprov-plugins-<BUILD_ID>.<X>/ the same build, made when the dir above is damaged but
#                                     still in use (a repair never leaves a name dangling)
#   [credprov-]<plugin> -> .credprov-plugins-.../credprov-plugins    one symlink per
#                                     plugin, only ever replaced by a rename
#   .credprov-plugins.lock            the lock: a symlink whose text is the owner record
#   .credprov-plugins.lock.break      held only while a stale lock is removed
#   .credprov-plugins-tmp.XXXXXX/     one run's work dir (mktemp -d): the copy being made,
#                                     new links before their rename, runtimes being deleted
#
# Whatever instant a kill -9 hits, every plugin name is absent or names a whole runtime: a
# runtime gets its final name only when complete, a name is switched by rename(2), and a
# runtime is deleted only after no name uses it, by renaming it into the work dir first
# (so a half-deleted tree never sits under a runtime name). What a kill leaves behind is the
# work dir and the lock; the next run removes both. A reinstall also repairs: every runtime
# dir of this build is checked with `sha256sum -c MANIFEST`, and a damaged one in use is
# replaced by a fresh copy under a new name before the names are switched to it.
#
# Lock: creating a symlink is atomic and fails when the name exists (busybox has no flock),
# and the link's text is the owner record "credprov-install:pid=P:ns=N:boot=B:start=S"
# (pid, pid namespace, kernel boot id, process start time from /proc), written in the same
# step, so a lock never lacks its owner. Every run holds it from before its first change
# to after its last, then removes it. A waiter breaks a lock whose owner is provably gone:
#   - another boot id: the machine rebooted since;
#   - the same pid namespace: no process P, or one with another start time (pid reuse);
#     without /proc on either side (a chroot), a `kill -0 P` that fails;
#   - another pid namespace (e.g. an installer pod that was killed, and its successor), where
#     P means nothing here: a lease. While it runs, the owner refreshes the lock's mtime every
#     3 s (a background `touch -h`, which stops when the owner is gone); a lock not refreshed
#     for 30 s is stale.
# Breaking is serialised by a second lock (.lock.break, same record) held for a few
# milliseconds: the breaker re-reads the lock and removes it only if it still holds the
# stale record. A break lock whose owner is gone or which is older than 10 s is removed.
# Two owners at once would need a breaker killed inside that window and two waiters racing
# on its removal. A waiter gives up after CREDPROV_INSTALL_LOCK_WAIT seconds (default 300).
set -eu

prog=install
nl='
'
# The bundle runtime's names (credprov/bundle/_multicall.py: RUNTIME_NAME, NAME_PREFIX;
# tests/unit/bundle/test_multicall.py compares them with these).
runtime_name=credprov-plugins
supported_prefix=credprov-
lease=30
heartbeat=3
break_stale=10

usage() {
    cat <<EOF
usage: install --bin-dir DIR [--force] [--uninstall] [--prune] [--no-verify]
               [--prefix credprov-] [--node-root ROOT --node-bin-dir PATH] [--] [PLUGIN...]
       install --list | --version

Install credprov's plugins (all when no PLUGIN is named) into the kubelet's bin dir DIR
under their kubelet names, atomically and idempotently. The runtime is copied once into
DIR/.credprov-plugins-<build id>/ and each plugin name is a symlink to it. A file there that
this installer did not write is never replaced unless --force; a directory never is.

  --uninstall         remove the named plugins (all when none is named), then the runtimes
                      no name uses any more
  --prune             the named plugins are the whole set: also remove the plugin names
                      this installer wrote (under the same --prefix) that are not named
                      (without it, narrowing the list leaves the earlier plugins installed)
  --prefix credprov-  install each plugin as credprov-<name> (for nodes whose own plugins
                      hold the plain names, such as EKS's ecr-credential-provider); the
                      runtime understands only this prefix. With --uninstall: remove those
  --node-root ROOT --node-bin-dir PATH
                      DIR is PATH of the node whose / is ROOT (an installer container):
                      check the new runtime with chroot ROOT PATH/<runtime>/credprov-plugins
                      --list before any name is linked to it
  --no-verify         do not run the new runtime at all (by default it runs once here,
                      where a missing glibc or libz or a noexec mount shows at once)
  --list              print this bundle's plugin names
  --version           print this bundle's build id, what it needs (the glibc floor) and
                      what it carries (CPython, OpenSSL, each frozen distribution's version)

A run that would change nothing (every name already this build's whole runtime, nothing
left by an earlier run) prints `unchanged:` lines and exits 0 without taking the lock or
writing anything, so a read-only DIR whose install is current is fine. Installs into one
DIR are serialised by a lock (DIR/.credprov-plugins.lock); one left by a
killed install is broken once its owner is provably gone (see the script's header), and a
waiter gives up after CREDPROV_INSTALL_LOCK_WAIT seconds (default 300). Every run removes
what interrupted runs left, and repairs a runtime of this build whose files do not match
the bundle's MANIFEST. Exit status: 0 done, 1 refused or failed (nothing half-done), 2
usage error.
EOF
}

# One line, whatever the text: newlines (a path may have them) are shown as \n.
oneline() {
    _rest=$1 _out=
    while :; do
        case $_rest in
        *"$nl"*) _out="$_out${_rest%%"$nl"*}\\n" _rest=${_rest#*"$nl"} ;;
        *) break ;;
        esac
    done
    printf '%s' "$_out$_rest"
}

say() { # a line on stdout; unlike echo, never interprets backslashes (dash's echo does)
    printf '%s\n' "$*"
}

fail() {
    printf '%s: error: %s\n' "$prog" "$(oneline "$*")" >&2
    exit 1
}

usage_error() {
    printf '%s: error: %s\n' "$prog" "$(oneline "$*")" >&2
    exit 2
}

# The first line of $1, or $2 when $1 is empty.
first_line() {
    case $1 in
    '') printf '%s' "$2" ;;
    *) printf '%s' "${1%%"$nl"*}" ;;
    esac
}

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd -P) || fail "cannot find the bundle directory"
for f in BUILD_ID PLUGINS MANIFEST; do
    [ -f "$here/$f" ] || fail "incomplete bundle in $here (BUILD_ID, PLUGINS, MANIFEST or runtime/ missing)"
done
[ -d "$here/runtime" ] && [ ! -L "$here/runtime" ] ||
    fail "incomplete bundle in $here (BUILD_ID, PLUGINS, MANIFEST or runtime/ missing)"
build_id=$(head -c 256 "$here/BUILD_ID")
case $build_id in
[0-9]*) case $build_id in *[!A-Za-z0-9._+-]*) build_id= ;; esac ;;
*) build_id= ;;
esac
[ -n "$build_id" ] || fail "bad BUILD_ID in $here"
known=$(head -c 65536 "$here/PLUGINS")
case $known in
*[!a-z0-9"$nl"-]* | '') fail "bad PLUGINS in $here" ;;
esac
known_words=$(echo $known)

bin_dir=""
bin_set=0
force=0
uninstall=0
verify=1
prune=0
prefix=""
node_root=""
node_bin=""
names=""

add_name() {
    [ -n "$1" ] || usage_error "an empty plugin name; name plugins from: $known_words"
    case "$nl$known$nl" in
    *"$nl$1$nl"*) ;;
    *) fail "unknown plugin $1; this bundle has: $known_words" ;;
    esac
    case " $names " in
    *" $1 "*) ;;
    *) names="$names $1" ;;
    esac
}

needs_value() {
    [ "$2" -ge 2 ] || usage_error "$1 needs a value"
}

while [ $# -gt 0 ]; do
    case "$1" in
    --bin-dir) needs_value "$1" $#; bin_dir=$2; bin_set=1; shift ;;
    --bin-dir=*) bin_dir=${1#--bin-dir=}; bin_set=1 ;;
    --prefix) needs_value "$1" $#; prefix=$2; shift; [ -n "$prefix" ] || usage_error "--prefix needs a value" ;;
    --prefix=*) prefix=${1#--prefix=}; [ -n "$prefix" ] || usage_error "--prefix needs a value" ;;
    --node-root) needs_value "$1" $#; node_root=$2; shift ;;
    --node-root=*) node_root=${1#--node-root=} ;;
    --node-bin-dir) needs_value "$1" $#; node_bin=$2; shift ;;
    --node-bin-dir=*) node_bin=${1#--node-bin-dir=} ;;
    --force) force=1 ;;
    --uninstall) uninstall=1 ;;
    --prune) prune=1 ;;
    --no-verify) verify=0 ;;
    --list) printf '%s\n' "$known"; exit 0 ;;
    --version)
        printf 'credprov-plugins %s\n' "$(head -c 256 "$here/BUILD_ID" 2>/dev/null | head -n 1)"
        head -c 65536 "$here/REQUIREMENTS" 2>/dev/null || :
        exit 0
        ;;
    -h | --help) usage; exit 0 ;;
    --)
        shift
        for n in "$@"; do add_name "$n"; done
        break
        ;;
    -?*) usage_error "unknown option $1" ;;
    *) add_name "$1" ;;
    esac
    shift
done

[ $bin_set = 1 ] || usage_error "--bin-dir is required"
[ -n "$bin_dir" ] || usage_error "--bin-dir is empty"
case $prefix in
'' | "$supported_prefix") ;;
[a-z0-9]*-)
    case $prefix in
    *[!a-z0-9._-]*) usage_error "--prefix $prefix: a prefix is [a-z0-9][a-z0-9._-]*- and only $supported_prefix is supported" ;;
    esac
    usage_error "--prefix $prefix: only $supported_prefix is supported (the runtime strips exactly that prefix)"
    ;;
*) usage_error "--prefix $prefix: a prefix is [a-z0-9][a-z0-9._-]*- and only $supported_prefix is supported" ;;
esac
if [ -n "$node_root$node_bin" ]; then
    [ -n "$node_root" ] && [ -n "$node_bin" ] || usage_error "--node-root and --node-bin-dir go together"
    case $node_bin in /*) ;; *) usage_error "--node-bin-dir $node_bin: want the bin dir's absolute path on the node" ;; esac
fi

# A relative path is resolved physically, without CDPATH and without cd's "-" (OLDPWD),
# keeping any trailing newline (a command substitution drops those: hence the '.').
resolved=""
resolve_dir() {
    case $1 in /*) _d=$1 ;; *) _d=./$1 ;; esac
    resolved=$(CDPATH='' cd -- "$_d" && pwd -P && echo .) || return 1
    resolved=${resolved%.}
    resolved=${resolved%"$nl"}
}

[ -d "$bin_dir" ] || fail "bin dir $bin_dir does not exist (create it first)"
case $bin_dir in
/*) ;;
*) resolve_dir "$bin_dir" || fail "cannot enter bin dir $bin_dir"; bin_dir=$resolved ;;
esac
[ -n "$names" ] || names=$known_words

lock=$bin_dir/.$runtime_name.lock
breaker=$lock.break
vdir=.$runtime_name-$build_id

missing=""
# stat, date and touch keep the lease of a lock honest (see the header): required too.
for c in mktemp sha256sum sleep head readlink touch stat date; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
if [ -n "$node_root" ] && [ $uninstall = 0 ] && [ $verify = 1 ]; then
    command -v chroot >/dev/null 2>&1 || missing="$missing chroot"
fi
[ -z "$missing" ] || fail "this system lacks commands install needs:$missing"

if [ -n "$node_root" ] && [ $uninstall = 0 ]; then
    [ -d "$node_root" ] || fail "--node-root $node_root is not a directory"
    case $node_root in
    /*) ;;
    *) resolve_dir "$node_root" || fail "cannot enter --node-root $node_root"; node_root=$resolved ;;
    esac
    [ "$node_root$node_bin" -ef "$bin_dir" ] ||
        fail "--node-bin-dir $node_bin inside --node-root $node_root is not the bin dir $bin_dir"
fi

# -- the lock -------------------------------------------------------------------------------

proc_start() { # the start time (clock ticks after boot) of process $1, from /proc
    _s=$(head -c 4096 "/proc/$1/stat" 2>/dev/null) || return 1
    _s=${_s##*) }
    # shellcheck disable=SC2086
    set -- $_s
    [ $# -ge 20 ] || return 1
    printf '%s' "${20}"
}

my_ns=$(readlink /proc/self/ns/pid 2>/dev/null) || my_ns=""
my_ns=${my_ns#pid:\[}
my_ns=${my_ns%\]}
case $my_ns in '' | *[!0-9]*) my_ns=unknown ;; esac
my_boot=$(head -c 64 /proc/sys/kernel/random/boot_id 2>/dev/null) || my_boot=""
case $my_boot in '' | *[!0-9a-f-]*) my_boot=unknown ;; esac
my_start=$(proc_start $$) || my_start=unknown
my_record="credprov-install:pid=$$:ns=$my_ns:boot=$my_boot:start=$my_start"

record_field() { # $1 record, $2 key → value (empty when absent)
    case ":$1:" in
    *":$2="*) _v=${1#*"$2="}; printf '%s' "${_v%%:*}" ;;
    esac
}

# 0: the record's owner runs; 1: it is gone; 2: cannot tell from here (another pid namespace).
owner_state() {
    _pid=$(record_field "$1" pid)
    _ns=$(record_field "$1" ns)
    _boot=$(record_field "$1" boot)
    _start=$(record_field "$1" start)
    case $_pid in '' | *[!0-9]*) return 2 ;; esac
    if [ "$_boot" != unknown ] && [ "$my_boot" != unknown ] && [ -n "$_boot" ] && [ "$_boot" != "$my_boot" ]; then
        return 1
    fi
    [ "$_ns" = "$my_ns" ] || return 2
    if [ "$_ns" = unknown ]; then
        kill -0 "$_pid" 2>/dev/null && return 0
        return 1
    fi
    _now=$(proc_start "$_pid") || return 1
    [ "$_now" = "$_start" ] && return 0
    return 1
}

age_of() { # seconds since $1 (not followed) was modified; fails when that cannot be told
    _m=$(stat -c %Y "$1" 2>/dev/null) && _t=$(date +%s 2>/dev/null) || return 1
    case $_m$_t in *[!0-9]*) return 1 ;; esac
    printf '%s' $((_t - _m))
}

break_lock() { # $1: the stale record read from the lock
    if ln -s -T "$my_record" "$breaker" 2>/dev/null; then
        if [ "$(readlink "$lock" 2>/dev/null)" = "$1" ]; then
            rm -f "$lock"
            say "$prog: removed the lock of an install that is gone ($(oneline "$1"))" >&2
        fi
        rm -f "$breaker"
        return 0
    fi
    _b=$(readlink "$breaker" 2>/dev/null) || return 0
    _st=0
    owner_state "$_b" || _st=$?
    if [ $_st = 1 ] || { _a=$(age_of "$breaker") && [ "$_a" -ge $break_stale ]; }; then
        [ "$(readlink "$breaker" 2>/dev/null)" = "$_b" ] && rm -f "$breaker"
    fi
    return 0
}

locked=0
acquire_lock() {
    _wait=${CREDPROV_INSTALL_LOCK_WAIT:-300}
    case $_wait in '' | *[!0-9]*) usage_error "CREDPROV_INSTALL_LOCK_WAIT=$_wait: want whole seconds" ;; esac
    _tenths=0 _absent=0 _said=0
    while :; do
        if _err=$(ln -s -T "$my_record" "$lock" 2>&1); then
            locked=1
            return 0
        fi
        if _rec=$(readlink "$lock" 2>/dev/null); then
            _absent=0
            case $_rec in credprov-install:*) ;; *) fail "$lock is not a lock this installer made; remove it" ;; esac
            _st=0
            owner_state "$_rec" || _st=$?
            if [ $_st = 1 ] || { [ $_st = 2 ] && _a=$(age_of "$lock") && [ "$_a" -ge $lease ]; }; then
                break_lock "$_rec"
                continue
            fi
            if [ $_said = 0 ]; then
                say "$prog: waiting for another install to finish ($(oneline "$_rec"))" >&2
                _said=1
            fi
        elif [ -e "$lock" ]; then
            fail "$lock is not a lock this installer made; remove it"
        else
            # Released just now, or the bin dir refuses new names (read-only, full, ...).
            _absent=$((_absent + 1))
            [ $_absent -lt 3 ] || fail "cannot write in bin dir $bin_dir: $(first_line "$_err" "ln failed")"
            continue
        fi
        [ $_tenths -lt $((_wait * 10)) ] ||
            fail "bin dir $bin_dir is locked by another install ($(oneline "$_rec")) for over ${_wait}s; remove $lock if none is running"
        if sleep 0.1 2>/dev/null; then _tenths=$((_tenths + 1)); else sleep 1; _tenths=$((_tenths + 10)); fi
    done
}

work=""
hb_pid=""
cleanup() {
    if [ -n "$hb_pid" ]; then kill "$hb_pid" 2>/dev/null || :; fi
    if [ -n "$work" ]; then rm -rf "$work" 2>/dev/null || :; fi
    if [ $locked = 1 ] && [ "$(readlink "$lock" 2>/dev/null)" = "$my_record" ]; then
        rm -f "$lock" 2>/dev/null || :
    fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# -- what is installed ----------------------------------------------------------------------

# A name is ours when it is a symlink into one of our runtime directories.
ours() {
    [ -L "$1" ] || return 1
    _t=$(readlink "$1") || return 1
    case $_t in
    *"$nl"* | .$runtime_name-tmp.*) return 1 ;;
    .$runtime_name-*/*/*) return 1 ;;
    .$runtime_name-*/$runtime_name) return 0 ;;
    esac
    return 1
}

# Is runtime dir $1 whole: every file of the bundle's MANIFEST there, with its content?
checked_whole="" checked_damaged=""
whole() {
    case "$nl$checked_whole$nl" in *"$nl$1$nl"*) return 0 ;; esac
    case "$nl$checked_damaged$nl" in *"$nl$1$nl"*) return 1 ;; esac
    if [ -d "$1" ] && [ ! -L "$1" ] && (cd -- "$1" && sha256sum -c "$here/MANIFEST") >/dev/null 2>&1; then
        checked_whole="$checked_whole$nl$1"
        return 0
    fi
    checked_damaged="$checked_damaged$nl$1"
    return 1
}

# Runtime dirs of this build: the first name or the first name plus ".<suffix>".
this_build() {
    case $1 in "$vdir" | "$vdir".*) return 0 ;; esac
    return 1
}

links_to() { # print the runtime dir (basename) symlink $1 points at, if it is ours
    ours "$1" || return 1
    _t=$(readlink "$1")
    printf '%s' "${_t%/*}"
}

# Names this installer wrote under --prefix that the run does not name (--prune removes them).
unlisted() {
    for _f in "$bin_dir"/* "$bin_dir"/.[!.]*; do
        ours "$_f" || continue
        _n=${_f##*/}
        case $prefix in
        '') case $_n in "$supported_prefix"*) continue ;; esac ;;
        *) case $_n in "$prefix"*) _n=${_n#"$prefix"} ;; *) continue ;; esac ;;
        esac
        case " $names " in *" $_n "*) ;; *) printf '%s\n' "$_f" ;; esac
    done
}

# Nothing to do: every name links to this build's whole runtime, no other runtime, lock or
# leftover is there (and with --prune nothing unlisted). Then nothing is written, not even
# the lock: a current install in a read-only bin dir is fine, and the dir's mtime stays.
nothing_to_do() {
    [ $uninstall = 0 ] || return 1
    for _n in $names; do
        [ "$(readlink "$bin_dir/$prefix$_n" 2>/dev/null)" = "$vdir/$runtime_name" ] || return 1
    done
    for _f in "$bin_dir"/.$runtime_name*; do
        [ -e "$_f" ] || [ -L "$_f" ] || continue
        [ "$_f" = "$bin_dir/$vdir" ] || return 1
    done
    for _k in $known_words; do
        for _f in "$bin_dir/.$_k.tmp."* "$bin_dir/.$supported_prefix$_k.tmp."*; do
            [ -e "$_f" ] || [ -L "$_f" ] || continue
            return 1
        done
    done
    if [ $prune = 1 ] && [ -n "$(unlisted)" ]; then return 1; fi
    whole "$bin_dir/$vdir"
}

if nothing_to_do; then
    for n in $names; do say "unchanged: $(oneline "$bin_dir")/$prefix$n"; done
    exit 0
fi

acquire_lock
(
    trap - EXIT
    while kill -0 $$ 2>/dev/null; do # the lease: refreshed while this install runs
        touch -h -c "$lock" 2>/dev/null || :
        sleep $heartbeat || exit 0
    done
) </dev/null >/dev/null 2>&1 &
hb_pid=$!

if ! work=$(mktemp -d "$bin_dir/.$runtime_name-tmp.XXXXXX" 2>&1); then
    _err=$work
    work=""
    fail "cannot create a directory in bin dir $bin_dir: $(first_line "$_err" "mktemp failed")"
fi
trashed=0
trash() { # move $1 out of its name into the work dir, then delete it
    trashed=$((trashed + 1))
    mv -f -T "$1" "$work/trash.$trashed" 2>/dev/null || return 1
    rm -rf "$work/trash.$trashed"
}

# Remove runtime dirs no name uses, what interrupted runs left, and leftovers of older
# versions of this script (.<name>.tmp.<pid> links, .credprov-plugins-probe.<pid> files).
collect_garbage() {
    _used=""
    for _f in "$bin_dir"/* "$bin_dir"/.[!.]*; do
        _d=$(links_to "$_f") && _used="$_used$nl$_d"
    done
    for _d in "$bin_dir"/.$runtime_name-*; do
        [ -e "$_d" ] || [ -L "$_d" ] || continue
        [ "$_d" != "$work" ] || continue
        _base=${_d##*/}
        case $_base in
        .$runtime_name-tmp.*) [ -d "$_d" ] && [ ! -L "$_d" ] && rm -rf "$_d" ;;
        .$runtime_name-probe.*) [ -f "$_d" ] && [ ! -L "$_d" ] && rm -f "$_d" ;;
        *)
            [ -d "$_d" ] && [ ! -L "$_d" ] || continue
            case "$_used$nl" in *"$nl$_base$nl"*) continue ;; esac
            trash "$_d" || fail "cannot remove $_d"
            case $_base in *.tmp.*) ;; *) say "removed: $(oneline "$_d")" ;; esac
            ;;
        esac
    done
    for _k in $known_words; do
        for _f in "$bin_dir/.$_k.tmp."* "$bin_dir/.$supported_prefix$_k.tmp."*; do
            case ${_f##*.tmp.} in '' | *[!0-9]*) continue ;; esac
            ours "$_f" && rm -f "$_f"
        done
    done
    if _b=$(readlink "$breaker" 2>/dev/null); then
        _st=0
        owner_state "$_b" || _st=$?
        [ $_st = 0 ] || rm -f "$breaker"
    fi
}

shown_bin=$(oneline "$bin_dir")

if [ $uninstall = 1 ]; then
    for n in $names; do
        p="$bin_dir/$prefix$n"
        if ours "$p"; then
            rm -f "$p" || fail "cannot remove $p"
            say "uninstalled: $shown_bin/$prefix$n"
        elif [ -e "$p" ] || [ -L "$p" ]; then
            say "left alone: $shown_bin/$prefix$n (not written by this installer)"
        else
            say "not installed: $shown_bin/$prefix$n"
        fi
    done
    collect_garbage
    exit 0
fi

# Check every name before changing anything: all or nothing.
for n in $names; do
    p="$bin_dir/$prefix$n"
    if [ -d "$p" ] && [ ! -L "$p" ]; then
        fail "$p is a directory; refusing to replace it (also with --force)"
    fi
    if { [ -e "$p" ] || [ -L "$p" ]; } && ! ours "$p" && [ $force = 0 ]; then
        fail "$p exists and was not written by this installer; use --force to replace it"
    fi
done

# The runtime to link: a whole dir of this build that names already use, else the first
# name when whole, else a fresh copy.
target_dir=""
for f in "$bin_dir"/* "$bin_dir"/.[!.]*; do
    d=$(links_to "$f") || continue
    this_build "$d" || continue
    if whole "$bin_dir/$d"; then target_dir=$d; break; fi
done
if [ -z "$target_dir" ] && whole "$bin_dir/$vdir"; then target_dir=$vdir; fi
created=0
if [ -z "$target_dir" ]; then
    if _err=$(cp -pR "$here/runtime" "$work/rt" 2>&1 >/dev/null); then :; else
        fail "cannot copy the runtime into bin dir $bin_dir: $(first_line "$_err" "cp failed")"
    fi
    if ! _err=$(cd -- "$work/rt" && sha256sum -c "$here/MANIFEST" 2>&1); then
        _err=$(printf '%s\n' "$_err" | grep -v ': OK$' || :)
        fail "the runtime copied into $bin_dir does not match the bundle's MANIFEST ($(first_line "$_err" "sha256sum -c failed")): the bundle is damaged, or the disk"
    fi
    target_dir=$vdir
    if [ -e "$bin_dir/$vdir" ] || [ -L "$bin_dir/$vdir" ]; then
        in_use=0
        for f in "$bin_dir"/* "$bin_dir"/.[!.]*; do
            [ "$(links_to "$f" || :)" != "$vdir" ] || { in_use=1; break; }
        done
        if [ $in_use = 1 ] || ! trash "$bin_dir/$vdir"; then
            target_dir=$vdir.${work##*.}
        fi
    fi
    [ ! -e "$bin_dir/$target_dir" ] && [ ! -L "$bin_dir/$target_dir" ] ||
        fail "cannot place the runtime: $bin_dir/$target_dir exists"
    mv -T "$work/rt" "$bin_dir/$target_dir" || fail "cannot rename the runtime into place in $bin_dir"
    created=1
fi
target=$target_dir/$runtime_name

if [ $verify = 1 ]; then
    # Run the runtime once where the kubelet will: a missing glibc/libz or a noexec mount
    # shows up now, with the loader's own words, instead of at the first image pull.
    needs=$(head -c 4096 "$here/REQUIREMENTS" 2>/dev/null) || needs=""
    needs=$(first_line "$needs" "glibc and libz")
    rc=0
    if [ -n "$node_root" ]; then
        where="chroot $node_root $node_bin/$target --list, inside --node-root"
        out=$(chroot "$node_root" "$node_bin/$target" --list 2>&1 >/dev/null) || rc=$?
    else
        where="$bin_dir/$target --list, on this host"
        out=$("$bin_dir/$target" --list 2>&1 >/dev/null) || rc=$?
    fi
    if [ $rc != 0 ]; then
        [ $created = 0 ] || trash "$bin_dir/$target_dir" || :
        fail "the runtime cannot run on this node: $(first_line "$out" "no output") (ran $where: exit $rc); it needs $needs"
    fi
fi
[ $created = 0 ] || say "unpacked: $shown_bin/$(oneline "$target_dir")"

relink() { # point name $1 (a path) at the target, by rename
    ln -s -T "$target" "$work/link" || fail "cannot create a link in $work"
    mv -f -T "$work/link" "$1" || fail "cannot rename a link to $1"
}

for n in $names; do
    p="$bin_dir/$prefix$n"
    old=$(readlink "$p" 2>/dev/null || :)
    if [ "$old" = "$target" ]; then
        say "unchanged: $shown_bin/$prefix$n"
        continue
    fi
    status=installed
    if [ -e "$p" ] || [ -L "$p" ]; then status=updated; fi
    if d=$(links_to "$p") && this_build "$d"; then status=repaired; fi
    relink "$p"
    say "$status: $shown_bin/$prefix$n"
done

# Names not asked for that use another (damaged or duplicate) dir of this build: same build,
# same files, so pointing them at the whole one is a repair, not an upgrade.
for f in "$bin_dir"/* "$bin_dir"/.[!.]*; do
    d=$(links_to "$f") || continue
    [ "$d" != "$target_dir" ] && this_build "$d" || continue
    relink "$f"
    say "repaired: $(oneline "$f")"
done

if [ $prune = 1 ]; then
    pruned=$(unlisted)
    set -f
    saved_ifs=$IFS
    IFS=$nl
    for f in $pruned; do
        rm -f "$f" || fail "cannot remove $f"
        say "uninstalled: $(oneline "$f") (not in the plugins named, --prune)"
    done
    IFS=$saved_ifs
    set +f
fi

collect_garbage
exit 0
