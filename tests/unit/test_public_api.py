"""The curated public API: ``credprov.__all__``, the one-call entry point, README's names."""

from __future__ import annotations

import re
from pathlib import Path

import credprov
from tests.conftest import modules_loaded_by

ROOT = Path(__file__).resolve().parents[2]


def test_all_matches_the_lazy_exports() -> None:
    assert set(credprov.__all__) == set(credprov._EXPORTS)
    for name in credprov.__all__:
        assert getattr(credprov, name) is not None, name


def test_import_credprov_loads_nothing_else() -> None:
    loaded = modules_loaded_by("import credprov")
    # the one lazy-names helper (in credprov.base, standard library only) and nothing else
    assert sorted(m for m in loaded if "credprov" in m or m == "typing") == [
        "credprov",
        "credprov.base",
    ]


def test_resolve_credentials_in_one_call() -> None:
    res = credprov.resolve_credentials(
        "registry.example.com/team/app:v1",
        config=str(ROOT / "config" / "credential-provider-config.yaml"),
        bin_dir=str(ROOT / "config" / "bin"),
        pull_secrets=[
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "regcred", "namespace": "default", "uid": "u"},
                "type": "kubernetes.io/dockerconfigjson",
                "stringData": {
                    ".dockerconfigjson": '{"auths":{"registry.example.com":'
                    '{"username":"pull","password":"p"}}}'
                },
            }
        ],
    )
    assert [c.source_label for c in res.credentials] == [
        "secret:default/regcred",
        "provider:example-credential-provider",
    ]
    assert not res.failed


def test_readme_public_api_names_import() -> None:
    """Every ``from credprov... import ...`` line in README's Python blocks imports."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    statements = [
        m.group(0)
        for block in blocks
        for m in re.finditer(
            r"^(?:from credprov[\w.]* import (?:\([^)]*\)|[^\n#]+)|import credprov[\w.]*)",
            block,
            flags=re.M,
        )
    ]
    assert statements, "README shows no imports"
    for statement in statements:
        exec(statement, {})
