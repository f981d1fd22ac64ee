"""Adapters that run credential provider plugins: execution, caching, registration."""
