#!/usr/bin/env bash
# Drives `lab proxy` (docs/wire.md) with Toxiproxy's own Python client, `toxiproxy-python` from
# PyPI (installed, pinned, by scripts/pydeps.sh into a cache when missing), in front of a real
# `lab serve`: a latency toxic, a proxy taken down and brought back, and the log checked; then
# the proxy in front of a running `lab serve --proxy-api`, driven by the same client, and the
# run's logs checked (scripts/check-wire.py). About 25 s.
set -euo pipefail
cd "$(dirname "$0")/.."
pydeps=$(scripts/pydeps.sh 'toxiproxy-python==0.1.1' 'future==1.0.0' 'requests==2.32.3')
cargo build -p lab --locked --quiet
work=$(mktemp -d /tmp/e03-wire.XXXXXX)
trap 'rm -rf "$work"' EXIT
PYTHONPATH="$pydeps" python3 scripts/check-wire.py "$PWD/target/debug/lab" "$work"
