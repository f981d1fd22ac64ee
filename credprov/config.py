"""Moved to :mod:`credprov.credentialprovider.plugin.config`; this import path keeps working (stable API).

Every public name of :mod:`credprov.credentialprovider.plugin.config` is re-exported here.
"""

from credprov.credentialprovider.plugin.config import *  # noqa: F403
from credprov.credentialprovider.plugin.config import __all__ as __all__
