"""``pkg/credentialprovider/plugin``: reading the provider config, executing plugins,
the per-provider cache and singleflight, registration, metrics, and the tools built on
them (probe, conformance harness, installer)."""
