"""NodeRoot: every node path resolved inside the root, as openat2(RESOLVE_IN_ROOT) would.

A table of hostile links: each one, followed on the host, would reach a canary file
outside the root; inside the root it reaches the root's own file, or nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from credprov.base.fileio import FileTooLargeError, NotRegularFileError
from credprov.base.rootfs import MAX_LIST_ENTRIES, NodeFileError, NodeRoot

CANARY = b"host-canary-0b5e"


@pytest.fixture
def world(tmp_path: Path) -> tuple[NodeRoot, Path]:
    """``tmp/host/etc/shadow`` (a canary outside the root) and ``tmp/root``."""
    host = tmp_path / "host"
    (host / "etc").mkdir(parents=True)
    (host / "etc/shadow").write_bytes(CANARY)
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/shadow").write_bytes(b"node shadow")
    (root / "links").mkdir()
    return NodeRoot(str(root)), host


# link name -> (target, with {host} for the host dir; what reading it gives inside the root)
LINKS: dict[str, tuple[str, bytes | type[Exception]]] = {
    "absolute": ("/etc/shadow", b"node shadow"),
    "absolute to the host dir": ("{host}/etc/shadow", FileNotFoundError),
    "dot-dot out of the root": ("../../../../../../../etc/shadow", b"node shadow"),
    "dot-dot to the host dir": ("../../host/etc/shadow", FileNotFoundError),
    "through a linked directory": ("../dirlink/shadow", b"node shadow"),
    "loop": ("loop", NodeFileError),
    "to /dev/zero": ("/dev/zero", FileNotFoundError),
    "to the proc of this process": ("/proc/self/environ", FileNotFoundError),
}


@pytest.mark.parametrize("name", list(LINKS))
def test_links_resolve_inside_the_root(name: str, world: tuple[NodeRoot, Path]) -> None:
    node, host = world
    target, expected = LINKS[name]
    links = Path(node.root) / "links"
    (Path(node.root) / "dirlink").symlink_to("/etc")
    link = links / name.replace(" ", "-").replace("/", "_")
    link.symlink_to(target.replace("{host}", str(host)) if target != "loop" else link.name)
    path = f"/links/{link.name}"
    if isinstance(expected, bytes):
        assert node.read(path) == expected
        assert node.resolve(path) == "/etc/shadow"
    else:
        with pytest.raises(expected):
            node.read(path)
    assert node.stat(path) is None or node.read(path) != CANARY


def test_directory_links_never_list_the_host(world: tuple[NodeRoot, Path]) -> None:
    node, host = world
    (Path(node.root) / "links/up").symlink_to("../../..")
    (Path(node.root) / "links/host").symlink_to("../../host")
    (Path(node.root) / "links/abs").symlink_to(str(host))
    assert node.listdir("/links/up") == ["etc", "links"]  # ".." stops at the root
    assert node.listdir("/links/host") == []
    assert node.listdir("/links/abs") == []


def test_fifo_device_and_oversized_files_are_refused(world: tuple[NodeRoot, Path]) -> None:
    node, _ = world
    os.mkfifo(Path(node.root) / "fifo")
    with pytest.raises(NotRegularFileError):
        node.read("/fifo")  # never blocks
    with pytest.raises(NotRegularFileError):
        node.read("/etc")
    (Path(node.root) / "big").write_bytes(b"x" * 100)
    with pytest.raises(FileTooLargeError):
        node.read("/big", 10)
    assert node.read("/big", 10, head=True) == b"x" * 10


def test_missing_components_are_kept_and_final_links_seen(world: tuple[NodeRoot, Path]) -> None:
    node, _ = world
    assert node.resolve("/nope/x") == "/nope/x"
    (Path(node.root) / "links/dangling").symlink_to("/nowhere")
    assert node.lstat("/links/dangling") is not None
    assert node.stat("/links/dangling") is None
    assert not node.exists("/links/dangling")


def test_listing_is_capped(world: tuple[NodeRoot, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    node, _ = world
    many = Path(node.root) / "many"
    many.mkdir()
    for i in range(30):
        (many / f"f{i:02d}").touch()
    monkeypatch.setattr("credprov.base.rootfs.MAX_LIST_ENTRIES", 10)
    assert len(node.listdir("/many")) == 10
    assert node.truncated == ["/many"]
    assert MAX_LIST_ENTRIES >= 10_000
