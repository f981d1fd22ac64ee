"""Texts that only a newer sigs.k8s.io/yaml than Debian's has, pinned by release (the
differential oracle runs v1.3.0; ``tests/differential/test_yaml_diff.py`` maps its texts
through the same table)."""

from __future__ import annotations

import pytest

from credprov._go import goyaml

#: (YAML, the error of the release Kubernetes 1.34 and later vendor)
ROWS = [
    (b"~: v", 'unsupported map key of type: %!s(<nil>), key: <nil>, value: "v"'),
    (b"a:\n  ~: 1\n", "unsupported map key of type: %!s(<nil>), key: <nil>, value: 1"),
]


@pytest.mark.parametrize("data, error", ROWS)
def test_null_keys_are_worded_as_the_kubelets_release(data: bytes, error: str) -> None:
    assert goyaml.SIGS_YAML_RELEASE == "kubernetes-1.34"
    with pytest.raises(goyaml.YAMLError) as info:
        goyaml.yaml_to_json(data)
    assert str(info.value) == error


def test_the_table_names_debians_release_too() -> None:
    assert goyaml.UNSUPPORTED_MAP_KEY["v1.3.0"] == "Unsupported map key of type"
