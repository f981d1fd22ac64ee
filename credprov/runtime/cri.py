"""Moved to :mod:`credprov.cri.client`; this import path keeps working (stable API).

Every public name of :mod:`credprov.cri.client` is re-exported here.
"""

from credprov.cri.client import *  # noqa: F403
from credprov.cri.client import __all__ as __all__
