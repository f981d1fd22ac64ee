"""``credprov pull-records``: inspect and maintain a kubelet's KEP-2535 pull records.

(Over 300 lines because of five subcommands with their options and text output; the
store is :mod:`credprov.pullmanager.fsstore`, the file checks
:mod:`credprov.pullmanager.inspect`.)

Works on the files the kubelet keeps under ``<root>/image_manager/{pulling,pulled}``
(``pkg/kubelet/images/pullmanager/fs_pullrecords.go``) through
:class:`credprov.pullmanager.fsstore.FSPullRecordsAccessor` opened with ``migrate=False``,
so looking never writes:

* ``list``: every record (imageRef, last update, per image name: node-wide access, secrets
  with coordinates and credential hashes, service accounts), the intents left on disk
  (a pull in flight or interrupted: the kubelet treats that image string as kubelet-pulled)
  and the files that fail to decode (the kubelet fails safe on them: verification required);
* ``show IMAGE_REF``: one record (``GetImagePulledRecord``);
* ``prune --keep REF...``: ``PruneUnknownRecords``: delete records older than ``--before``
  whose imageRef is not kept (intents untouched);
* ``migrate``: the kubelet's start-up ``recordsVersionMigration`` (v1alpha1 -> v1beta1);
* ``verify``: every file decodes strictly and sits under the name the kubelet looks it up
  by; exit 1 otherwise.

A running kubelet caches records in memory (1.34+): stop it before ``prune``/``migrate``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import stat
import sys
from typing import Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.errors import EXIT_FAILURE, EXIT_OK
from credprov.pullmanager.inspect import scan_files


def add_parser(sub: Any) -> None:
    """Add ``pull-records`` and its actions to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "pull-records",
        help="inspect, prune, migrate and verify a kubelet's image pull records (KEP-2535)",
        description=(
            "Work on the ImagePullIntent and ImagePulledRecord files the kubelet keeps under "
            "ROOT_DIR/image_manager (--root-dir, the kubelet root: /var/lib/kubelet on a "
            "node). list/show/verify never write. Stop the kubelet before prune or migrate: "
            "it caches records in memory."
        ),
    )
    actions = p.add_subparsers(dest="records_command", metavar="ACTION")
    actions.required = True

    def common(q: argparse.ArgumentParser) -> None:
        opts.ROOT_DIR.add(q, required=True)
        opts.add_common(q)

    q = actions.add_parser("list", help="records, dangling intents and undecodable files")
    common(q)
    q.set_defaults(run=run_list)

    q = actions.add_parser("show", help="one record, by the image's CRI imageRef")
    q.add_argument("image_ref", metavar="IMAGE_REF")
    common(q)
    q.set_defaults(run=run_show)

    q = actions.add_parser(
        "prune",
        help="delete records of images the runtime no longer has (PruneUnknownRecords)",
        description=(
            "Delete every record whose imageRef is not kept and whose lastUpdatedTime is "
            "before --before (default: now). Give the runtime's image IDs with --keep or "
            "--keep-file (e.g. the output of 'crictl images -q'), or --keep-none. With --dry-run, "
            "only say what would be deleted."
        ),
    )
    q.add_argument("--keep", action="append", default=[], metavar="REF", nargs="+")
    q.add_argument("--keep-file", metavar="FILE", help="image refs to keep, one per line")
    q.add_argument("--keep-none", action="store_true", help="keep no record (prune them all)")
    q.add_argument("--before", metavar="TIME", help="RFC 3339 time (default: now)")
    opts.DRY_RUN.add(q)
    common(q)
    q.set_defaults(run=run_prune)

    q = actions.add_parser(
        "migrate",
        help="rewrite v1alpha1 files as v1beta1",
        description="Rewrite v1alpha1 files as v1beta1, as the kubelet does at start-up. "
        "With --dry-run, only list the files to migrate.",
    )
    opts.DRY_RUN.add(q)
    common(q)
    q.set_defaults(run=run_migrate)

    q = actions.add_parser("verify", help="check every file decodes strictly; exit 1 if not")
    common(q)
    q.set_defaults(run=run_verify)


# -- helpers ----------------------------------------------------------------------------------


def _store(args: argparse.Namespace, migrate: bool = False) -> Any:
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor

    root = args.root_dir
    try:
        st = os.stat(root)
    except FileNotFoundError:
        raise CLIError(f"--root-dir {root}: does not exist") from None
    except PermissionError:
        raise CLIError(f"--root-dir {root}: permission denied (run as root?)") from None
    except OSError as exc:
        raise CLIError(f"--root-dir {root}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CLIError(f"--root-dir {root}: not a directory")
    for path in (root, os.path.join(root, "image_manager")):
        if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
            raise CLIError(f"--root-dir {root}: permission denied reading {path} (run as root?)")
    return FSPullRecordsAccessor(root, migrate=migrate)


def _unreadable(errors: list[str]) -> list[str]:
    """The listing errors that mean a directory could not be read at all."""
    return [e for e in errors if ": cannot list: " in e]


def _record_dict(record: Any) -> dict[str, Any]:
    from credprov.pullmanager.types import record_to_json

    return record_to_json(record)


def _describe_credentials(creds: dict[str, Any]) -> list[str]:
    lines = []
    if creds.get("nodePodsAccessible"):
        lines.append("node-wide: every pod on the node may use it")
    for s in creds.get("kubernetesSecrets") or []:
        chash = s["credentialHash"] or "<none: hashing failed>"
        lines.append(f"secret {s['namespace']}/{s['name']} uid={s['uid']} hash={chash}")
    for s in creds.get("kubernetesServiceAccounts") or []:
        lines.append(f"serviceaccount {s['namespace']}/{s['name']} uid={s['uid']}")
    return lines or ["no credentials: every use must authenticate"]


def _print_record(rec: dict[str, Any], indent: str = "") -> None:
    print(f"{indent}{rec['imageRef']}  (updated {rec['lastUpdatedTime']})")
    mapping = rec.get("credentialMapping") or {}
    if not mapping:
        print(f"{indent}  no credentials: pulled by the kubelet, every use must authenticate")
    for image, creds in mapping.items():
        for line in _describe_credentials(creds):
            print(f"{indent}  {image}: {line}")


def _parse_time(value: str) -> dt.datetime:
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CLIError(f"--before {value!r}: not an RFC 3339 time") from None
    if t.tzinfo is None:
        raise CLIError(f"--before {value!r}: give a time zone (e.g. Z)")
    return t.astimezone(dt.UTC)


# -- actions ----------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    """``pull-records list``: records, dangling intents and undecodable files."""
    store = _store(args)
    records, record_errors = store.list_image_pulled_records()
    intents, intent_errors = store.list_image_pull_intents()
    records = sorted(records, key=lambda r: r.image_ref)
    errors = [*record_errors, *intent_errors]
    # A record under another name than its key's hash is invisible to the kubelet.
    errors += [f"{c.path}: {c.error}" for c in scan_files(store) if c.misnamed]
    if _unreadable(errors):
        raise CLIError(_unreadable(errors)[0])
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(
            {
                "root": args.root_dir,
                "records": [_record_dict(r) for r in records],
                "intents": sorted(i.image for i in intents),
                "errors": errors,
            }
        )
        return EXIT_OK
    print(f"records ({len(records)}) in {store.records_dir}")
    for r in records:
        _print_record(_record_dict(r), "  ")
    if intents:
        print(
            f"dangling intents ({len(intents)}) in {store.intents_dir}: a pull in flight or "
            "interrupted; the kubelet treats these image strings as kubelet-pulled"
        )
        for image in sorted(i.image for i in intents):
            print(f"  {image}")
    if errors:
        print(f"files that fail to decode ({len(errors)}): the kubelet fails safe on them")
        for message in errors:
            print(f"  {message}")
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    """``pull-records show``: one record, by its imageRef."""
    store = _store(args)
    record = store.get_image_pulled_record(args.image_ref)
    if record is None:
        raise CLIError(f"no pulled record for imageRef {args.image_ref!r}")
    rec = _record_dict(record)
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(rec)
    else:
        _print_record(rec)
    return EXIT_OK


def _keep_refs(args: argparse.Namespace) -> set[str]:
    keep = {ref for group in args.keep for ref in group}
    if args.keep_file:
        from credprov.base.fileio import read_bounded

        try:
            text = read_bounded(args.keep_file).decode("utf-8")
        except OSError as exc:
            raise CLIError(f"cannot read --keep-file {args.keep_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise CLIError(f"--keep-file {args.keep_file}: not UTF-8 text") from None
        keep |= {line.strip() for line in text.splitlines() if line.strip()}
    if not keep and not args.keep_none and not args.keep_file:
        raise CLIError(
            "give the image refs the runtime still has with --keep/--keep-file "
            "(e.g. 'crictl images -q'), or --keep-none to prune every old record"
        )
    return keep


def run_prune(args: argparse.Namespace) -> int:
    """``pull-records prune``: PruneUnknownRecords; exit 1 when a record could not be deleted."""
    from credprov.pullmanager.interfaces import StoreWriteError

    keep = _keep_refs(args)
    until = _parse_time(args.before) if args.before else dt.datetime.now(dt.UTC)
    store = _store(args)
    records, errors = store.list_image_pulled_records()
    # PruneUnknownRecords: strictly before "until", and not an image the runtime has.
    doomed = sorted(
        (r for r in records if r.last_updated_time < until and r.image_ref not in keep),
        key=lambda r: r.image_ref,
    )
    deleted: list[str] = []
    failures: list[str] = []
    if not args.dry_run:
        for r in doomed:
            try:
                store.delete_image_pulled_record(r.image_ref)
                deleted.append(r.image_ref)
            except StoreWriteError as exc:
                failures.append(str(exc))
    refs = [r.image_ref for r in doomed]
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(
            {
                "dryRun": args.dry_run,
                "until": until.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "pruned": refs if args.dry_run else deleted,
                "kept": len(records) - len(doomed),
                "errors": [*errors, *failures],
            }
        )
    else:
        verb = "would prune" if args.dry_run else "pruned"
        print(f"{verb} {len(refs) if args.dry_run else len(deleted)} of {len(records)} records")
        for ref in refs if args.dry_run else deleted:
            print(f"  {ref}")
        for message in [*errors, *failures]:
            print(f"  error: {message}", file=sys.stderr)
    return EXIT_FAILURE if failures else EXIT_OK


def run_migrate(args: argparse.Namespace) -> int:
    """``pull-records migrate``: v1alpha1 files as v1beta1; exit 1 when one stayed stale."""
    from credprov.pullmanager.types import STORAGE_VERSION

    store = _store(args)
    stale = [
        c
        for c in scan_files(store)
        if c.version is not None
        and c.version != STORAGE_VERSION
        and (c.error is None or c.misnamed)
    ]
    errors: list[str] = []
    if not args.dry_run and stale:
        errors = list(_store(args, migrate=True).startup_errors)
    after = {c.path: c for c in scan_files(store)} if not args.dry_run else {}
    # The kubelet's migration writes each file's content under the hash of its key: for a
    # misnamed file that is a new file, and the misnamed one stays where it was.
    migrated = [
        c
        for c in stale
        if args.dry_run or getattr(after.get(c.target), "version", None) == STORAGE_VERSION
    ]
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(
            {
                "dryRun": args.dry_run,
                "migrated": [c.path for c in migrated],
                "written": [c.target for c in migrated],
                "errors": errors,
            }
        )
    else:
        verb = "would migrate" if args.dry_run else "migrated"
        print(f"{verb} {len(migrated)} files to {STORAGE_VERSION}")
        for c in migrated:
            if c.target == c.path:
                print(f"  {c.path}")
            else:
                written = "would be written" if args.dry_run else "written"
                print(
                    f"  {c.path} -> {written} as {c.target} (the old name did not match its "
                    "key; the old file is left in place, run 'pull-records verify')"
                )
        for message in errors:
            print(f"  warning: {message}", file=sys.stderr)
    # Undecodable files are verify's business; fail only when a stale file stayed stale.
    return EXIT_FAILURE if len(migrated) < len(stale) else EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    """``pull-records verify``: every file decodes strictly; exit 1 if not."""
    from credprov.pullmanager.types import STORAGE_VERSION

    store = _store(args)
    checks = scan_files(store)
    bad = [c for c in checks if c.error is not None]
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(
            {
                "files": [
                    {
                        "path": c.path,
                        "kind": c.kind,
                        "version": c.version,
                        "key": c.key,
                        "error": c.error,
                    }
                    for c in checks
                ],
                "ok": not bad,
            }
        )
    else:
        old = [c for c in checks if c.error is None and c.version != STORAGE_VERSION]
        print(f"{len(checks)} files checked, {len(bad)} invalid, {len(old)} not yet v1beta1")
        for c in bad:
            print(f"  {c.path}: {c.error}")
        for c in old:
            print(f"  {c.path}: {c.version} (run 'pull-records migrate')")
    return EXIT_FAILURE if bad else EXIT_OK
