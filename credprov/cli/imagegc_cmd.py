"""``credprov image-gc``: the image garbage collector's pull-record hook, on a real runtime.

The kubelet's image GC frees images, then calls the pull manager's ``PruneUnknownRecords``
with the runtime's image list and a time taken *before* that list was asked for, so a
record written while GC ran survives. This command does the same against the CRI runtime at
``--cri`` and the records under ``--root-dir/image_manager``:

1. remove each ``--remove IMAGE`` through CRI ``RemoveImage`` (the part of GC that frees
   images; without it only records of images already gone are pruned);
2. note the time, list the runtime's images (a failing list aborts: pruning against an
   empty list would forget every record);
3. delete every record older than that time whose imageRef the runtime no longer has.
   Intents are left alone, as upstream.

``--dry-run`` only says what would go. Exit 0, or 1 when an image could not be removed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import TYPE_CHECKING, Any

from credprov import cmdoptions as opts
from credprov.cli.main import CLIError
from credprov.errors import EXIT_FAILURE, EXIT_OK

if TYPE_CHECKING:
    from credprov.kubelet.node import RuntimeFactory


def add_parser(sub: Any) -> None:
    """Add ``image-gc`` to ``credprov``'s subcommands."""
    p = sub.add_parser(
        "image-gc",
        help="prune pull records of images the CRI runtime no longer has (KEP-2535)",
        description=(
            "Remove the --remove images through the CRI runtime at --cri, then delete the "
            "kubelet's pull records (ROOT_DIR/image_manager/pulled) of every image the runtime "
            "no longer has, as the image garbage collector's PruneUnknownRecords hook does. "
            "Intents are untouched. With --dry-run, remove nothing and prune nothing. Exit 1 when "
            "an image could not be removed."
        ),
    )
    opts.CRI.add(p, required=True)
    opts.ROOT_DIR.add(p, required=True)
    p.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="IMAGE",
        help="remove this image (name or id) from the runtime first; repeatable",
    )
    opts.DRY_RUN.add(p)
    opts.add_common(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``credprov image-gc`` against the CRI endpoint of ``--cri``."""
    return execute(args)


def execute(args: argparse.Namespace, runtime_factory: RuntimeFactory | None = None) -> int:
    """Run the command; ``runtime_factory(cri_endpoint)`` opens the runtime (default: the
    CRI client). Returns the exit status.

    Raises:
        credprov.errors.CredprovError: bad arguments, an unreachable runtime, or an image
            list that failed.
    """
    from credprov.kubelet import node as node_mod

    node_mod.parse_cri_endpoint(args.cri)
    root = node_mod.check_root(args.root_dir)
    with node_mod.opened_runtime(args.cri, root, runtime_factory) as runtime:
        removed = [] if args.dry_run else [_remove(runtime, image) for image in args.remove]
        report = _prune(runtime, root, args.dry_run, args.remove)
    report["removed"] = removed
    if args.dry_run:
        report["wouldRemove"] = list(args.remove)
    failed = [r for r in removed if r["error"] is not None]
    if args.output == "json":
        from credprov.cmdoptions import print_json

        print_json(report)
    else:
        _print_text(report)
    if failed:
        print(f"credprov: {len(failed)} image(s) could not be removed", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _remove(runtime: Any, image: str) -> dict[str, Any]:
    from credprov.cmdoptions import one_line
    from credprov.kubelet import node as node_mod

    try:
        runtime.remove_image(image)
    except Exception as exc:  # the runtime's answer, whatever its type: report, go on
        node_mod.log.debug("removing %s failed", image, exc_info=True)
        return {"image": image, "error": one_line(str(exc)) or type(exc).__name__}
    return {"image": image, "error": None}


def _prune(runtime: Any, root: str, dry_run: bool, to_remove: list[str]) -> dict[str, Any]:
    """List, prune (unless ``dry_run``: then as if ``to_remove`` were gone) and report
    what went and what stayed."""
    from credprov.cmdoptions import one_line
    from credprov.pullmanager.fsstore import FSPullRecordsAccessor
    from credprov.pullmanager.types import record_to_json

    # PruneUnknownRecords' "until": taken before the image list, so a record written
    # while we list survives.
    until = dt.datetime.now(dt.UTC)
    try:
        images = runtime.list_images()
    except Exception as exc:  # without the list every record would look unknown
        reason = one_line(str(exc)) or type(exc).__name__
        raise CLIError(f"cannot list the runtime's images, nothing pruned: {reason}") from None
    refs = {i.id for i in images}
    if dry_run:
        for image in to_remove:
            refs.discard(runtime.image_ref(image) or "")
    store = FSPullRecordsAccessor(root, migrate=False)
    before, errors = store.list_image_pulled_records()
    if dry_run:
        prunable = [r for r in before if r.last_updated_time < until and r.image_ref not in refs]
        gone = {r.image_ref for r in prunable}
    else:
        from credprov.pullmanager.manager import ImagePullManager
        from credprov.pullmanager.policies import DEFAULT_POLICY

        # No runtime= here: GC must not run the start-up housekeeping on intents.
        manager = ImagePullManager(root, DEFAULT_POLICY, shared_root=True)
        manager.prune_unknown_records(refs, until)
        after, errors = store.list_image_pulled_records()
        gone = {r.image_ref for r in before} - {r.image_ref for r in after}
    return {
        "root": root,
        "until": until.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "images": sorted({i.id for i in images}),
        "pruned": [record_to_json(r) for r in before if r.image_ref in gone],
        "kept": [r.image_ref for r in before if r.image_ref not in gone],
        "recordErrors": errors,
        "dryRun": dry_run,
    }


def _print_text(report: dict[str, Any]) -> None:
    from credprov.kubelet.node import record_credential_kinds

    for r in report["removed"]:
        status = "removed" if r["error"] is None else f"not removed: {r['error']}"
        print(f"image {r['image']}: {status}")
    for image in report.get("wouldRemove", []):
        print(f"image {image}: would be removed")
    print(f"runtime has {len(report['images'])} images")
    verb = "would prune" if report["dryRun"] else "pruned"
    print(f"{verb} {len(report['pruned'])} record(s), kept {len(report['kept'])}")
    for rec in report["pruned"]:
        kinds = record_credential_kinds(rec, "; ")
        print(f"  {rec['imageRef']} (updated {rec['lastUpdatedTime']}) {kinds}")
    for message in report["recordErrors"]:
        print(f"  unreadable record: {message}")
