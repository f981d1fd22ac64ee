"""Build ``deploy/`` kustomizations as ``kubectl kustomize`` does, for the subset they use.

There is no kustomize binary to install from the package registries, so the tests build the
profiles themselves: ``resources`` (files and kustomization directories, depth first, in
order), ``patches`` whose ``patch`` is an inline JSON6902 list (applied with the
``jsonpatch`` library to every resource its ``target`` selects) and ``images`` (``newName``,
``newTag``, ``digest`` for containers and init containers). Anything else in a
kustomization is refused with :class:`Unsupported`, so a profile cannot quietly use a
feature these tests would ignore. Where a ``kubectl`` with kustomize exists,
``tests/unit/bundle/test_bundle_deploy.py`` checks that it builds the same documents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import yaml

KEYS = {"apiVersion", "kind", "resources", "patches", "images"}
TARGET_KEYS = {"group", "version", "kind", "name", "namespace"}


class Unsupported(Exception):
    """A kustomization uses a field this builder does not implement."""


def build(directory: Path) -> list[dict[str, Any]]:
    """The documents ``kubectl kustomize DIRECTORY`` prints, in its resource order."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KEYS
    if unknown:
        raise Unsupported(f"{directory}: unsupported kustomization fields {sorted(unknown)}")
    docs: list[dict[str, Any]] = []
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        if path.is_dir():
            docs += build(path)
        else:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    for patch in kustomization.get("patches", []):
        docs = [_patched(doc, patch, directory) for doc in docs]
    for image in kustomization.get("images", []):
        for doc in docs:
            _set_image(doc, image)
    return docs


def _selects(target: dict[str, str], doc: dict[str, Any]) -> bool:
    if set(target) - TARGET_KEYS:
        raise Unsupported(f"unsupported patch target fields {sorted(set(target) - TARGET_KEYS)}")
    group, _, version = doc.get("apiVersion", "").rpartition("/")
    meta = doc.get("metadata", {})
    actual = {"group": group, "version": version, "kind": doc.get("kind"),
              "name": meta.get("name"), "namespace": meta.get("namespace")}  # fmt: skip
    return all(actual[key] == value for key, value in target.items())


def _patched(doc: dict[str, Any], patch: dict[str, Any], directory: Path) -> dict[str, Any]:
    if set(patch) != {"target", "patch"}:
        raise Unsupported(f"{directory}: a patch needs exactly target and an inline patch")
    ops = yaml.safe_load(patch["patch"])
    if not isinstance(ops, list):
        raise Unsupported(f"{directory}: only JSON6902 patches (a list of operations)")
    if not _selects(patch["target"], doc):
        return doc
    result: dict[str, Any] = jsonpatch.apply_patch(doc, ops)
    return result


def _set_image(doc: dict[str, Any], image: dict[str, str]) -> None:
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    for container in pod.get("initContainers", []) + pod.get("containers", []):
        ref: str = container["image"]
        name, tag = ref, ""
        if "@" in ref:
            name, tag = ref.split("@", 1)
            tag = "@" + tag
        elif ":" in ref.rsplit("/", 1)[-1]:
            name, tag = ref.rsplit(":", 1)
            tag = ":" + tag
        if name != image["name"]:
            continue
        name = image.get("newName", name)
        if "digest" in image:
            tag = "@" + image["digest"]
        elif "newTag" in image:
            tag = ":" + image["newTag"]
        container["image"] = name + tag


def daemonset(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The one DaemonSet among ``docs``."""
    (ds,) = [d for d in docs if d.get("kind") == "DaemonSet"]
    return ds
