#!/usr/bin/env bash
# The offline path: build the static binary on the host, then bring the same compose topology up
# with images built FROM scratch (no base image is pulled). Extra arguments go to `up`.
#   scripts/compose-offline.sh                 # full run, like `docker compose up --build`
#   E03_SEED=7 scripts/compose-offline.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-static.sh
exec scripts/compose.sh -f docker-compose.yml -f docker-compose.offline.yml up --build "$@"
