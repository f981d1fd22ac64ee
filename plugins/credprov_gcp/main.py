"""Entry point (placeholder until the plugin lands)."""

import sys


def main() -> int:
    sys.stderr.write("not implemented yet\n")
    return 1
