"""Moved to :mod:`credprov._go.durations`; this import path keeps working (stable API).

Every public name of :mod:`credprov._go.durations` is re-exported here.
"""

from credprov._go.durations import *  # noqa: F403
from credprov._go.durations import __all__ as __all__
