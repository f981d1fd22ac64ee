"""test_bundle's tests, for a module that runs them again in another node root.

The tests share one installed root (the first installs, the last uninstalls; the static
plugin's first answer must not come from the cache an earlier test filled), so a module takes
them all, in this order, and defines its own ``root`` fixture.
"""

from __future__ import annotations

from tests.e2e import test_bundle as base

installed = base.installed
TESTS = {
    name: getattr(base, name)
    for name in (
        "test_install_in_the_root_then_again_changes_nothing",
        "test_static_plugin_answers_as_the_venv_one_and_caches",
        "test_engine_drives_the_installed_plugins",
        "test_plugin_test_results_match_the_venv_plugin",
        "test_ecr_plugin_in_the_root_against_moto",
        "test_gcp_plugin_in_the_root_against_a_metadata_server",
        "test_acr_plugin_in_the_root_fails_as_the_venv_plugin",
        "test_docker_helper_plugins_in_the_root",
        "test_force_uninstall_and_foreign_files",
    )
}
