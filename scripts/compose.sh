#!/usr/bin/env bash
# Runs Docker Compose v2 (`docker compose`) if present, else the v1 `docker-compose`.
if docker compose version >/dev/null 2>&1; then
    exec docker compose "$@"
elif command -v docker-compose >/dev/null 2>&1; then
    exec docker-compose "$@"
else
    echo "compose: neither 'docker compose' nor 'docker-compose' is installed" >&2
    exit 127
fi
