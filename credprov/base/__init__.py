"""The foundation every layer uses and that knows no Kubernetes: the clock, SHA-256,
bounded file reads and atomic writes,
a root directory read as ``openat2(RESOLVE_IN_ROOT)`` would, and redaction of secrets."""
