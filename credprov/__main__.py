"""``python -m credprov``."""

from credprov.cli.main import entry

entry()
