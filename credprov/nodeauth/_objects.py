"""Reading JSON-like API objects the way NodeRestriction's listers and typed structs do.

Accessors return an empty value for a missing or mistyped field (a Go zero value), so a
malformed object is refused by the check that reads it instead of raising. :class:`Lookup`
reads through an :class:`~credprov.nodeauth.types.ObjectGetter` and reports a missing
object with a lister's NotFound text (``pod "x" not found``: listers name resources in the
singular, group-qualified outside the core group).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from credprov._go.fmt import go_quote
from credprov.errors import NodeAccessError
from credprov.nodeauth.types import ObjectGetter

__all__ = [
    "EMPTY",
    "MAPPINGS",
    "SEQUENCES",
    "Lookup",
    "LookupFailed",
    "m",
    "meta",
    "s",
    "seq",
    "spec",
    "status",
]

_LISTER_NAMES = {
    "pods": "pod",
    "nodes": "node",
    "serviceaccounts": "serviceaccount",
    "persistentvolumeclaims": "persistentvolumeclaim",
    "persistentvolumes": "persistentvolume",
    "csidrivers": "csidriver.storage.k8s.io",
}


#: The empty value of a missing mapping (never mutated: callers get a ``Mapping``).
EMPTY: Mapping[str, Any] = {}
# dict first: objects decoded from JSON/YAML are dicts, and the ABC check is slow (about
# 300 ns, also for None: absent fields are tested with ``is None`` before it).
MAPPINGS = (dict, Mapping)
SEQUENCES = (list, tuple)


def m(value: Any) -> Mapping[str, Any]:
    """The value if it is a mapping, else an empty one."""
    return value if value is not None and isinstance(value, MAPPINGS) else EMPTY


def seq(value: Any) -> Sequence[Any]:
    """The value if it is a list (or tuple), else an empty one."""
    return value if isinstance(value, SEQUENCES) else ()


def s(value: Any) -> str:
    """The value if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``metadata`` of an object."""
    return m(m(obj).get("metadata"))


def spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``spec`` of an object."""
    return m(m(obj).get("spec"))


def status(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``status`` of an object."""
    return m(m(obj).get("status"))


class LookupFailed(NodeAccessError):
    """An object a check needs could not be read: missing (``not_found``) or an error.

    Caught inside :mod:`credprov.nodeauth` (it becomes a refusal's reason); a
    :class:`~credprov.errors.NodeAccessError` like the package's other errors.
    """

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.not_found = not_found


class Lookup:
    """Reads objects, failing with :class:`LookupFailed` as a lister would."""

    def __init__(self, objects: ObjectGetter) -> None:
        self._objects = objects

    def get(self, resource: str, namespace: str, name: str) -> Mapping[str, Any]:
        """The object; raises LookupFailed when it is missing or the read fails."""
        try:
            obj = self._objects.get(resource, namespace, name)
        except Exception as exc:  # a broken store must refuse the request, not crash it
            raise LookupFailed(f"{type(exc).__name__}: {exc}") from None
        if obj is None:
            what = _LISTER_NAMES.get(resource, resource)
            raise LookupFailed(f"{what} {go_quote(name)} not found", not_found=True)
        return obj
