"""Reading Kubernetes objects and docker configs from files, for the CLI and the bridges.

A file may hold one object, several YAML documents, or a ``List`` (``kubectl get -o yaml``);
JSON is YAML. Every problem is an :class:`ObjectsError` naming the file, one line, never
quoting file content (a Secret's payload is a secret).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from credprov._go.json import YAMLError, load_yaml_all
from credprov.base.fileio import FileTooLargeError, read_bounded
from credprov.errors import CredentialProviderError
from credprov.imageauth.keyring import (
    DockerKeyring,
    KeyringError,
    parse_docker_config,
    secret_coordinates,
    unusable_pull_secret_reason,
)

MAX_FILE_BYTES = 16 * 1024 * 1024


class ObjectsError(CredentialProviderError, ValueError):
    """A file that does not hold what was expected; ``str()`` is one line."""


def _read(path: str, what: str) -> bytes:
    try:
        return read_bounded(path, MAX_FILE_BYTES)
    except FileTooLargeError:
        raise ObjectsError(f"{what} {path} is larger than {MAX_FILE_BYTES} bytes") from None
    except OSError as exc:
        raise ObjectsError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def load_objects(path: str, what: str = "objects file") -> list[dict[str, Any]]:
    """Every object in ``path``, with ``List`` items unpacked, in file order.

    Raises:
        ObjectsError: unreadable, not YAML/JSON, or not objects.
    """
    data = _read(path, what)
    try:
        docs = [d for d in load_yaml_all(data) if d is not None]
    except YAMLError as exc:
        raise ObjectsError(f"{what} {path} is {exc}") from None
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


def load_pull_secrets(
    paths: Iterable[str], on_ignored: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """The Secret objects of ``paths`` (anything else is an error).

    Args:
        paths: files of Secrets (YAML or JSON, one or more documents, or a List).
        on_ignored: called with one line for every Secret the kubelet would silently skip
            (wrong type, missing data key, a docker ``config.json`` given as a Secret).

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
            try:
                coords = secret_coordinates(obj)
            except KeyringError as exc:
                raise ObjectsError(f"pull secret file {path}: {exc}") from None
            reason = unusable_pull_secret_reason(obj)
            if reason is not None and on_ignored is not None:
                name = f"{coords.namespace}/{coords.name}" if coords.name else "(unnamed)"
                on_ignored(
                    f"pull secret file {path}: secret {name} {reason}; the kubelet ignores it"
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
