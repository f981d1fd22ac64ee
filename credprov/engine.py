"""Moved to :mod:`credprov.credentialprovider.engine`; this import path keeps working (stable API).

Every public name of :mod:`credprov.credentialprovider.engine` is re-exported here.
"""

from credprov.credentialprovider.engine import *  # noqa: F403
from credprov.credentialprovider.engine import __all__ as __all__
