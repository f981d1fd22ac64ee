#!/usr/bin/env bash
# Create .venv (if missing) and install credprov with its dev extra into it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "credprov needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi
if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
    echo "installing python3-venv (apt)" >&2
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev,ecr,gcp,acr,cri,nodeauth]'
