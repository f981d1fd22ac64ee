"""Moved to :mod:`credprov.credentialprovider.plugin.registry`; this import path keeps working (stable API).

Every public name of :mod:`credprov.credentialprovider.plugin.registry` is re-exported here.
"""

from credprov.credentialprovider.plugin.registry import *  # noqa: F403
from credprov.credentialprovider.plugin.registry import __all__ as __all__
