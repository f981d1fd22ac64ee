"""acr-credential-provider: Azure Container Registry credentials (azure-identity)."""
