"""``pkg/credentialprovider``: image names and ``matchImages``, the docker keyring, the
plugin response cache, config validation and lint, and the credential chain (pull
secrets, then the node's docker config, then the plugins). Pure: no I/O here; the
adapters that run plugins live in :mod:`credprov.credentialprovider.plugin`."""
