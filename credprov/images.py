"""Moved to :mod:`credprov.credentialprovider.images`; this import path keeps working (stable API).

Every public name of :mod:`credprov.credentialprovider.images` is re-exported here.
"""

from credprov.credentialprovider.images import *  # noqa: F403
from credprov.credentialprovider.images import __all__ as __all__
