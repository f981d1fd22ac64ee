"""Reading Kubernetes objects and docker configs from files, for the CLI and the bridges.

A file may hold one object, several YAML documents, or a ``List`` (``kubectl get -o yaml``);
JSON is YAML. Every problem is an :class:`ObjectsError` naming the file, one line, never
quoting file content (a Secret's payload is a secret).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from credprov.errors import CredprovError
from credprov.keyring import DockerKeyring, KeyringError, parse_docker_config

MAX_FILE_BYTES = 16 * 1024 * 1024


class ObjectsError(CredprovError, ValueError):
    """A file that does not hold what was expected; ``str()`` is one line."""


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ObjectsError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ObjectsError(f"{what} {path} is larger than {MAX_FILE_BYTES} bytes")
    return data


def load_objects(path: str, what: str = "objects file") -> list[dict[str, Any]]:
    """Every object in ``path``, with ``List`` items unpacked, in file order.

    Raises:
        ObjectsError: unreadable, not YAML/JSON, or not objects.
    """
    import yaml

    data = _read(path, what)
    try:
        docs = [d for d in yaml.safe_load_all(data) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ObjectsError(f"{what} {path} is not valid YAML or JSON{where}") from None
    objects: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            raise ObjectsError(f"{what} {path} holds a {type(doc).__name__}, not objects")
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ObjectsError(f"{what} {path}: List items must be objects")
            objects.extend(items)
        else:
            objects.append(doc)
    return objects


def load_pull_secrets(paths: Iterable[str]) -> list[dict[str, Any]]:
    """The Secret objects of ``paths`` (anything else is an error).

    Raises:
        ObjectsError: see :func:`load_objects`, or an object that is not a Secret.
    """
    secrets: list[dict[str, Any]] = []
    for path in paths:
        for obj in load_objects(path, "pull secret file"):
            if obj.get("kind", "Secret") != "Secret":
                raise ObjectsError(
                    f"pull secret file {path} holds a {obj.get('kind')!r}, not a Secret"
                )
            secrets.append(obj)
    return secrets


def load_docker_config_keyring(path: str | None, what: str = "node docker config") -> DockerKeyring:
    """A keyring of the docker ``config.json`` (or ``.dockercfg``) at ``path``; empty if None.

    Raises:
        ObjectsError: unreadable or malformed.
    """
    keyring = DockerKeyring()
    if not path:
        return keyring
    data = _read(path, what)
    try:
        keyring.add(parse_docker_config(data))
    except KeyringError as exc:
        raise ObjectsError(f"{what} {path}: {exc}") from None
    return keyring
