"""auth-provider-gcp: Google Artifact/Container Registry credentials (google-auth)."""
