"""Fakes of the pieces a node talks to, for the simulator and for tests (never used by the
real image path): a container runtime and a registry with access rules."""

from credprov.testing.runtime import (
    FakeRegistry,
    FakeRuntime,
    PullAttempt,
    RegistryGrant,
    RegistryImage,
)

__all__ = ["FakeRegistry", "FakeRuntime", "PullAttempt", "RegistryGrant", "RegistryImage"]
