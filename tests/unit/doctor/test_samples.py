"""The image ``plugin.responds`` asks about without ``--image``: one the provider's own
plugin accepts, or none ("pass --image"); never a FAIL from a made-up host."""

from __future__ import annotations

from pathlib import Path

import pytest

from credprov.api import internal
from credprov.doctor import DoctorOptions, run_doctor, samples
from credprov.doctor.samples import Sample, derive_sample

V1 = "credentialprovider.kubelet.k8s.io/v1"


def provider(name: str, *patterns: str) -> internal.CredentialProvider:
    return internal.CredentialProvider(
        name=name, match_images=list(patterns), default_cache_duration=60, api_version=V1
    )


@pytest.mark.parametrize(
    ("name", "patterns", "expected"),
    [
        pytest.param(
            "ecr-credential-provider",
            ("*.dkr.ecr.*.amazonaws.com", "*.dkr.ecr.*.amazonaws.com.cn"),
            Sample("123456789012.dkr.ecr.us-east-1.amazonaws.com/credprov-doctor/sample"),
            id="ecr: an account and a region",
        ),
        pytest.param(
            "credprov-ecr-credential-provider",
            ("*.dkr.ecr-fips.*.amazonaws.com",),
            Sample("123456789012.dkr.ecr-fips.us-east-1.amazonaws.com/credprov-doctor/sample"),
            id="ecr under the EKS prefix, fips",
        ),
        pytest.param(
            "ecr-credential-provider",
            ("public.ecr.aws",),
            Sample("public.ecr.aws/credprov-doctor/sample"),
            id="ecr public",
        ),
        pytest.param(
            "ecr-credential-provider",
            ("*.example.com",),
            None,
            id="ecr: no host it accepts",
        ),
        pytest.param(
            "auth-provider-gcp",
            ("*-docker.pkg.dev", "*.gcr.io"),
            Sample("us-docker.pkg.dev/credprov-doctor/sample"),
            id="gcp artifact registry",
        ),
        pytest.param(
            "auth-provider-gcp",
            ("container.cloud.google.com",),
            Sample("container.cloud.google.com/credprov-doctor/sample"),
            id="gcp fixed host",
        ),
        pytest.param(
            "acr-credential-provider",
            ("*.azurecr.*",),
            Sample("sample.azurecr.io/credprov-doctor/sample"),
            id="acr: a login server",
        ),
        pytest.param(
            "static-credential-provider",
            ("registry-a.example.com/team",),
            Sample("registry-a.example.com/team"),
            id="unknown plugin, exact host",
        ),
        pytest.param(
            "my-provider",
            ("*.dkr.ecr.*.amazonaws.com",),
            Sample("123456789012.dkr.ecr.us-east-1.amazonaws.com/credprov-doctor/sample"),
            id="unknown plugin, ECR-shaped pattern",
        ),
        pytest.param(
            "my-provider",
            ("*.example.com",),
            Sample("sample.example.com/credprov-doctor/sample", made_up=True),
            id="unknown plugin, wildcard: made up",
        ),
    ],
)
def test_derived_samples(name: str, patterns: tuple[str, ...], expected: Sample | None) -> None:
    assert derive_sample(provider(name, *patterns), []) == expected


def test_an_image_the_operator_names_wins() -> None:
    got = derive_sample(
        provider("ecr-credential-provider", "*.dkr.ecr.*.amazonaws.com"),
        ["other.example.com/x", "111122223333.dkr.ecr.eu-west-1.amazonaws.com/app:v1"],
    )
    assert got == Sample("111122223333.dkr.ecr.eu-west-1.amazonaws.com/app:v1")


# -- one fact, two tables: the doctor's copies equal the plugins' own ------------------------


def test_the_rules_are_the_plugins_own() -> None:
    credprov_ecr = pytest.importorskip("credprov_ecr.registry")
    credprov_gcp = pytest.importorskip("credprov_gcp.registries")
    credprov_acr = pytest.importorskip("credprov_acr.registry")
    assert samples.ECR_PRIVATE_HOST.pattern == credprov_ecr.ECR_PRIVATE_HOST_PATTERN.pattern
    assert set(samples.ECR_PUBLIC_HOSTS) == set(credprov_ecr.ECR_PUBLIC_HOSTS)
    assert samples.GOOGLE_REGISTRY_KEYS == credprov_gcp.GOOGLE_REGISTRY_KEYS
    assert samples.ACR_LOGIN_SERVER.pattern == credprov_acr.ACR_RE.pattern


@pytest.mark.parametrize(
    "patterns",
    [
        ("*.dkr.ecr.*.amazonaws.com",),
        ("*.dkr.ecr.*.amazonaws.com.cn",),
        ("*.dkr-ecr.*.on.aws",),
    ],
)
def test_ecr_samples_are_ones_the_ecr_plugin_parses_a_region_from(
    patterns: tuple[str, ...],
) -> None:
    credprov_ecr = pytest.importorskip("credprov_ecr.registry")
    got = derive_sample(provider("ecr-credential-provider", *patterns), [])
    assert got is not None
    registry = credprov_ecr.parse_registry(got.image.partition("/")[0])
    assert registry.region == "us-east-1"


# -- through the doctor: the plugin's own refusal of a made-up host ---------------------------

#: A plugin that, like credprov's ECR plugin, refuses an ECR host without an account and a
#: region before any network call, and answers for the others.
REFUSES_BAD_HOSTS = """#!/bin/sh
request=$(cat)
case "$request" in
*'"image":"sample.'*) echo "no account or region in the image: refused" >&2; exit 1 ;;
*.amazonaws.com*) key='*.dkr.ecr.*.amazonaws.com' ;;
*) key='*.example.com' ;;
esac
printf '%s' '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1",'
printf '"cacheKeyType":"Registry","cacheDuration":"5m","auth":{"%s":{"username":"u","password":"p"}}}\\n' "$key"
"""


@pytest.mark.parametrize(
    ("name", "pattern", "status", "start"),
    [
        pytest.param(
            "ecr-credential-provider",
            "*.dkr.ecr.*.amazonaws.com",
            "pass",
            "for 123456789012.dkr.ecr.us-east-1.amazonaws.com/credprov-doctor/sample: answered",
            id="ecr: a host it accepts",
        ),
        pytest.param(
            "ecr-credential-provider",
            "*.example.com",
            "skip",
            "no image ecr-credential-provider accepts can be derived from matchImages; pass "
            "--image",
            id="ecr: none it accepts",
        ),
        pytest.param(
            "my-provider",
            "*.example.com",
            "warn",
            "for sample.example.com/credprov-doctor/sample: exit: ",
            id="unknown plugin: made up, no FAIL",
        ),
    ],
)
def test_no_fail_from_a_made_up_image(
    tmp_path: Path, name: str, pattern: str, status: str, start: str
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    plugin = bin_dir / name
    plugin.write_text(REFUSES_BAD_HOSTS)
    plugin.chmod(0o755)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
        f"  - name: {name}\n    matchImages: ['{pattern}']\n    defaultCacheDuration: 1m\n"
        f"    apiVersion: {V1}\n"
    )
    report = run_doctor(DoctorOptions(config=str(config), bin_dir=str(bin_dir)))
    (responds,) = report.by_id("plugin.responds")
    assert (str(responds.status), responds.message[: len(start)]) == (status, start), responds
