#!/usr/bin/env bash
# Set everything up, then run the whole test suite with the linters and type checker.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check credprov tests benchmarks
.venv/bin/ruff format --check credprov tests benchmarks
.venv/bin/mypy credprov
.venv/bin/python -m pytest -q "$@"
