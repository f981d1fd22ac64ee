"""The foundation every layer uses and that knows no Kubernetes: the clock, SHA-256,
bounded file reads and atomic writes, and redaction of secrets."""
