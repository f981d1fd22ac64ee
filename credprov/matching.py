"""Moved to :mod:`credprov.credentialprovider.matching`; this import path keeps working (stable API).

Every public name of :mod:`credprov.credentialprovider.matching` is re-exported here.
"""

from credprov.credentialprovider.matching import *  # noqa: F403
from credprov.credentialprovider.matching import __all__ as __all__
