"""Every public module, class, function and method in credprov/ has a docstring.

Walked with :mod:`ast` (nothing is imported). Public means that neither the name nor any
module or class around it starts with ``_``; dunder methods, ``@overload`` stubs and
property setters/deleters are not counted, nor functions nested in functions. A docstring
that only restates the name is a reviewer's matter, not this test's.

:data:`ALLOWED` lists the gaps of packages whose docstrings are still to be written, per
file; it may only shrink (a listed name that has a docstring now fails too, so the list
stays true). credprov/doctor and credprov/nodeauth have none.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "credprov"

#: File (relative to the repository) -> the public definitions there without a docstring
#: (``<module>`` for the module itself, ``Class.method`` for methods).
ALLOWED: dict[str, set[str]] = {
    "credprov/api/exec.py": {"api_version_of"},
    "credprov/base/clock.py": {
        "Clock",
        "FakeClock.now",
        "FakeClock.set",
        "FakeClock.step",
        "FakeClock.time",
        "RealClock.now",
        "RealClock.time",
    },
    "credprov/base/rootfs.py": {
        "NodeRoot.exists",
        "NodeRoot.is_executable_file",
        "NodeRoot.is_host",
        "NodeRoot.read_text",
    },
    "credprov/bundle/build.py": {"BundleResult", "tarball_name"},
    "credprov/bundle/oci.py": {
        "ImageResult",
        "RuntimeNeeds.add",
        "Sysroot.display",
        "Sysroot.is_host",
    },
    "credprov/cli/bundle_cmd.py": {"add_parser", "run"},
    "credprov/cli/config_cmd.py": {"add_parser", "provider_summary", "run_validate"},
    "credprov/cli/credentials_cmd.py": {"add_parser", "resolution_to_dict", "run"},
    "credprov/cli/doctor_cmd.py": {"add_parser", "run"},
    "credprov/cli/ensure_cmd.py": {"add_parser"},
    "credprov/cli/explain_cmd.py": {"add_parser", "run"},
    "credprov/cli/imagegc_cmd.py": {"add_parser"},
    "credprov/cli/main.py": {"entry", "main"},
    "credprov/cli/nodeauth_cmd.py": {"add_parser", "run"},
    "credprov/cli/plugin_cmd.py": {"add_parser", "run_exec", "run_install"},
    "credprov/cli/plugin_test_cmd.py": {"run"},
    "credprov/cli/pullrecords_cmd.py": {
        "add_parser",
        "run_list",
        "run_migrate",
        "run_prune",
        "run_show",
        "run_verify",
    },
    "credprov/cli/simulate_cmd.py": {"add_parser", "run"},
    "credprov/credentialprovider/cache.py": {
        "ChangeCounter.bump",
        "ExpirationCache.add",
        "ExpirationCache.get",
        "ExpirationCache.keys",
        "generate_single_flight_key",
    },
    "credprov/credentialprovider/chain.py": {
        "KeyringSource.lookup",
        "PluginProviders.lookup",
        "PullSecrets.lookup",
    },
    "credprov/credentialprovider/keyring.py": {
        "DockerKeyring.keys",
        "Keyring",
        "Keyring.lookup",
        "UnionDockerKeyring.lookup",
    },
    "credprov/credentialprovider/plugin/config.py": {
        "HostFiles.entries",
        "HostFiles.is_dir",
        "HostFiles.read",
        "resolve_feature_gates",
    },
    "credprov/credentialprovider/plugin/exec.py": {
        "ExecPlugin.environment",
        "ExecPlugin.request_bytes",
    },
    "credprov/credentialprovider/plugin/install.py": {"InstallResult"},
    "credprov/credentialprovider/plugin/metrics.py": {
        "Metrics.count_error",
        "Metrics.observe_duration",
        "Metrics.plugin_duration",
        "Metrics.plugin_errors",
        "Metrics.record_config_hash",
        "Metrics.registry",
    },
    "credprov/credentialprovider/plugin/provider.py": {"PluginProvider.is_image_allowed"},
    "credprov/credentialprovider/plugin/registry.py": {"CredentialProviders.executions"},
    "credprov/errors.py": {"CredprovError.with_hint"},
    "credprov/kubelet/ensure.py": {
        "Event.to_dict",
        "PullManager.must_attempt_image_pull",
        "PullManager.record_image_pull_failed",
        "PullManager.record_image_pulled",
        "PullManager.record_pull_intent",
        "PullRequestMetrics",
        "PullRequestMetrics.ensure_image_request",
        "Resolver.resolve",
    },
    "credprov/kubelet/node.py": {"PullFailuresAsErrors.pull_image"},
    "credprov/kubelet/scenario.py": {
        "ImageSpec",
        "PodStep",
        "Scenario",
        "SecretSpec",
        "SecretSpec.to_object",
        "Step",
    },
    "credprov/kubelet/simulation.py": {"Simulation.records", "Simulation.run_step"},
    "credprov/pullmanager/fsstore.py": {
        "FSPullRecordsAccessor.delete_image_pull_intent",
        "FSPullRecordsAccessor.delete_image_pulled_record",
        "FSPullRecordsAccessor.get_image_pulled_record",
        "FSPullRecordsAccessor.image_pull_intent_exists",
        "FSPullRecordsAccessor.list_image_pull_intents",
        "FSPullRecordsAccessor.list_image_pulled_records",
        "FSPullRecordsAccessor.write_image_pull_intent",
        "FSPullRecordsAccessor.write_image_pulled_record",
    },
    "credprov/pullmanager/inspect.py": {"FileCheck"},
    "credprov/pullmanager/locks.py": {"StripedLockSet.lock"},
    "credprov/pullmanager/manager.py": {
        "PullManagerMetricsSink.must_pull_check",
        "PullManagerMetricsSink.set_inmemory",
        "PullManagerMetricsSink.set_ondisk",
    },
    "credprov/pullmanager/memstore.py": {
        "CachedPullRecordsAccessor.delete_image_pull_intent",
        "CachedPullRecordsAccessor.delete_image_pulled_record",
        "CachedPullRecordsAccessor.get_image_pulled_record",
        "CachedPullRecordsAccessor.image_pull_intent_exists",
        "CachedPullRecordsAccessor.intents_authoritative",
        "CachedPullRecordsAccessor.intents_usage_percent",
        "CachedPullRecordsAccessor.list_image_pull_intents",
        "CachedPullRecordsAccessor.list_image_pulled_records",
        "CachedPullRecordsAccessor.records_authoritative",
        "CachedPullRecordsAccessor.records_usage_percent",
        "CachedPullRecordsAccessor.write_image_pull_intent",
        "CachedPullRecordsAccessor.write_image_pulled_record",
    },
    "credprov/pullmanager/policies.py": {
        "AllowlistPolicy.require_credential_verification",
        "AlwaysVerifyPolicy.require_credential_verification",
        "NeverVerifyPolicy.require_credential_verification",
        "NeverVerifyPreloadedPolicy.require_credential_verification",
    },
    "credprov/pullmanager/preloaded.py": {
        "PreloadedImages.forget",
        "PreloadedImages.is_preloaded_name",
    },
    "credprov/pullmanager/types.py": {
        "ImagePullCredentials.is_empty",
        "ImagePullCredentials.secrets",
        "ImagePullCredentials.service_accounts",
        "encode_intent",
        "encode_record",
    },
    "credprov/testing/runtime.py": {
        "FakeRegistry.images",
        "FakeRegistry.is_anonymous",
        "FakeRuntime.image_ref",
        "FakeRuntime.list_images",
        "FakeRuntime.pull_image",
        "RegistryGrant.accepts",
        "RegistryImage.repo",
    },
}


def _public(name: str) -> bool:
    return not name.startswith("_")


def _skipped(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An ``@overload`` stub or a property's setter/deleter (the getter carries the doc)."""
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id == "overload":
            return True
        if isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "deleter"):
            return True
        if isinstance(decorator, ast.Attribute) and decorator.attr == "overload":
            return True
    return False


def _undocumented(body: list[ast.stmt], prefix: str) -> Iterator[str]:
    """The qualified names of public classes and functions in ``body`` (and of the public
    methods of its public classes) that have no docstring."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _public(node.name) and not _skipped(node) and ast.get_docstring(node) is None:
                yield prefix + node.name
        elif isinstance(node, ast.ClassDef) and _public(node.name):
            if ast.get_docstring(node) is None:
                yield prefix + node.name
            yield from _undocumented(node.body, f"{prefix}{node.name}.")


def _modules() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if all(_public(part) or part == "__init__" for part in parts):
            yield path


def _gaps(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    gaps = set(_undocumented(tree.body, ""))
    if ast.get_docstring(tree) is None:
        gaps.add("<module>")
    return gaps


def all_gaps() -> dict[str, set[str]]:
    """File -> its undocumented public definitions, for every file that has one."""
    out = {}
    for path in _modules():
        gaps = _gaps(path)
        if gaps:
            out[path.relative_to(ROOT).as_posix()] = gaps
    return out


def test_every_public_definition_has_a_docstring() -> None:
    gaps = all_gaps()
    new = {f: sorted(names - ALLOWED.get(f, set())) for f, names in gaps.items()}
    new = {f: names for f, names in new.items() if names}
    assert not new, f"public definitions without a docstring: {new}"


def test_the_allowlist_only_names_real_gaps() -> None:
    gaps = all_gaps()
    stale = {f: sorted(names - gaps.get(f, set())) for f, names in ALLOWED.items()}
    stale = {f: names for f, names in stale.items() if names}
    assert not stale, f"documented now (remove from ALLOWED): {stale}"


@pytest.mark.parametrize("package", ["credprov/doctor/", "credprov/nodeauth/"])
def test_no_allowance_for_the_doctor_and_nodeauth(package: str) -> None:
    assert not [f for f in ALLOWED if f.startswith(package)]
