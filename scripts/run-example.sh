#!/usr/bin/env bash
# Set everything up, then resolve credentials for a few images on the example node:
# the example provider config and plugin in config/, plus an example pod pull secret.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/credprov config validate config/credential-provider-config.yaml
exec .venv/bin/credprov get-credentials \
    registry.example.com/team/app:v1 \
    mirror.registry.example.com/library/redis:7 \
    nginx:1.27 \
    --config config/credential-provider-config.yaml \
    --bin-dir config/bin \
    --pull-secret config/pull-secret.yaml \
    "$@"
