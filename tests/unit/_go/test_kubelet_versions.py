"""``--kubelet-version``: Kubernetes releases to the Go and GODEBUG defaults they run with."""

from __future__ import annotations

import pytest

from credprov._go.godebug import GoDebugError, defaults_for_language, parse_godebug
from credprov._go.kubelet_versions import KUBELET_GO, KubeletVersionError, kubelet_go

#: (version given, the entry's minor, the release credprov follows, past the table)
VERSIONS = [
    ("1.34", 34, "1.24.11", False),
    ("v1.34.2", 34, "1.24.11", False),
    ("1.35.0-eks-1", 35, "1.25.5", False),
    ("1.36", 36, "1.26.6", False),
    ("1.31.14", 31, "1.23.9", False),
    ("1.40", 40, "1.26.6", True),
]


@pytest.mark.parametrize("version, minor, release, nearest", VERSIONS)
def test_kubelet_go(version: str, minor: int, release: str, nearest: bool) -> None:
    entry, got = kubelet_go(version)
    assert (entry.minor, str(got), entry.nearest) == (minor, release, nearest)
    assert ("past credprov's table" in entry.notice(got)) is nearest


def test_a_branch_moved_to_go_1_26_keeps_its_old_defaults() -> None:
    # Kubernetes keeps a branch's go.mod go line when it moves the branch to a newer Go: a
    # 1.34 kubelet (go 1.24) built with Go 1.26 has urlstrictcolons=0.
    assert defaults_for_language(24, 26) == {"urlstrictcolons": "0"}
    assert defaults_for_language(26, 26) == {}
    assert defaults_for_language(24, 25) == {}
    _, release = kubelet_go("1.36", "urlstrictcolons=0")
    assert str(release) == "1.26.6 with GODEBUG urlstrictcolons=0"


def test_every_entry_is_a_release_credprov_reproduces() -> None:
    for entry in KUBELET_GO.values():
        kubelet_go(f"1.{entry.minor}")
        assert entry.language.startswith("1.")


@pytest.mark.parametrize(
    "version, error",
    [("kubelet", "invalid Kubernetes version"), ("2.0", "invalid"), ("1.20", "older than")],
)
def test_refused(version: str, error: str) -> None:
    with pytest.raises(KubeletVersionError, match=error):
        kubelet_go(version)


#: (GODEBUG text, strict, result or error)
GODEBUG = [
    ("urlstrictcolons=0", True, {"urlstrictcolons": "0"}),
    ("panicnil=1, urlstrictcolons=1", True, {"panicnil": "1", "urlstrictcolons": "1"}),
    ("urlstrictcolons=0,urlstrictcolons=1", True, {"urlstrictcolons": "1"}),
    ("", True, {}),
    ("urlstrictcolons", True, "want name=value"),
    ("urlstrictcolons=yes", True, "invalid value 'yes'"),
    ("urlstrictcolons,=x,a=b", False, {"a": "b"}),
    (",".join(f"s{i}=1" for i in range(300)), True, "more than 256"),
]


@pytest.mark.parametrize("text, strict, want", GODEBUG)
def test_parse_godebug(text: str, strict: bool, want: dict[str, str] | str) -> None:
    if isinstance(want, str):
        with pytest.raises(GoDebugError, match=want):
            parse_godebug(text, strict=strict)
    else:
        assert parse_godebug(text, strict=strict) == want
