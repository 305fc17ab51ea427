#!/usr/bin/env bash
# The observe profile's Grafana dashboard proven on a real Prometheus (docs/report.md): a short
# live `lab run e03b` scraped by Debian's prometheus with docker/observe/prometheus.yml (its
# targets pointed at the run) and docker/observe/rules.yml; every query of
# docker/observe/grafana/dashboards/e03.json must return a non-empty series, and the arrivals per
# strategy must agree with the analyzer's counts (scripts/check-prometheus.py).
#
# Installs Debian's prometheus when it is missing (apt-get, as root); prints SKIPPED and why when
# it cannot. Bounded: 120 s; Prometheus and the lab are stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v prometheus >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "check-prometheus: installing Debian's prometheus"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; } \
            || true
    fi
    if ! command -v prometheus >/dev/null 2>&1; then
        echo "SKIPPED: Prometheus test of the dashboard: prometheus is not installed and could not" \
             "be (needs root and apt-get reaching Debian: apt-get install prometheus)"
        exit 0
    fi
fi
# Debian's package starts a system service on :9090; this test uses its own instance on a free
# loopback port, so the service is left as it is.

cargo build -p lab --locked --quiet
timeout --kill-after=10 120 python3 scripts/check-prometheus.py target/debug/lab \
    docker/observe/grafana/dashboards/e03.json docker/observe/prometheus.yml docker/observe/rules.yml
