"""static-credential-provider: registry credentials from a file, with mirror strategies."""
