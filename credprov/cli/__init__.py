"""The ``credprov`` command-line interface (entry-point layer)."""
