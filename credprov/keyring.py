"""Moved to :mod:`credprov.credentialprovider.keyring`; this import path keeps working (stable API).

Every public name of :mod:`credprov.credentialprovider.keyring` is re-exported here.
"""

from credprov.credentialprovider.keyring import *  # noqa: F403
from credprov.credentialprovider.keyring import __all__ as __all__
