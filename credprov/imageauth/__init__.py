"""Image names, ``matchImages`` and docker-config keyrings, as the kubelet reads them.

The floor the credential providers (:mod:`credprov.credentialprovider`) and the plugin SDK
(:mod:`credprov.sdk`) both stand on: upstream's ``pkg/credentialprovider`` keyring and
URL matching and ``pkg/util/parsers``' image parsing. It imports only the foundation
(``credprov._go``, ``credprov.base``, ``credprov.errors``) and the standard library, so a
plugin may load it on its network path without pulling in the engine or pydantic.
"""
