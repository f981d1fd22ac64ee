#!/usr/bin/env bash
# Set everything up, then run the whole test suite with the linters and type checker.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check credprov plugins tests benchmarks
.venv/bin/ruff format --check credprov plugins tests benchmarks
.venv/bin/mypy
.venv/bin/lint-imports
.venv/bin/python -m pytest -q "$@"
