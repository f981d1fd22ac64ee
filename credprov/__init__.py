"""credprov: the kubelet's image credential providers, in Python.

Public API (stable): :func:`credprov.images.parse_image_name`,
:func:`credprov.matching.urls_match_str`, :func:`credprov.config.load_config` /
:class:`credprov.config.ConfigError`, :class:`credprov.keyring.DockerKeyring`.
"""

__version__ = "0.1.0"
