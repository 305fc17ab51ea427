#!/usr/bin/env bash
# The whole test suite of the lab:
#   1. formatting and lints (cargo fmt --check, clippy -D warnings)
#   2. cargo test --workspace: unit tests, integration tests on loopback port 0, and a short live
#      run of the whole pipeline (lab run) over loopback
#   3. every shell command of README.md, ARCHITECTURE.md and docs/*.md, and every file in
#      examples/, run against the lab just built (scripts/check-docs.sh; Docker commands are
#      left to step 7, and it says so)
#   4. the /metrics expositions of that live run parsed by a real Prometheus parser (Python's
#      prometheus_client, installed from PyPI into target/), their counters checked against the
#      logs, and the Grafana dashboard's metric names checked against them
#   5. report.html opened in headless Chromium for every built-in scenario (scripts/check-report.sh)
#      and the dashboard's queries run on a real Prometheus against a live run
#      (scripts/check-prometheus.sh); each installs its Debian package or says SKIPPED
#   6. lab soak --minutes 1 (RSS, descriptors, tasks), then `lab audit` of five real clients (urllib3,
#      curl twice, Node's fetch, the lab's strategy C; scripts/check-audit.sh, every row checked
#      against the client's documentation), then `lab proxy` driven by Toxiproxy's Python client
#      (scripts/check-wire.sh), then every fuzz target of fuzz/ for 30 s
#      on a copy of its seeds (scripts/check-fuzz.sh: cargo fuzz on nightly, cargo-fuzz installed
#      from crates.io; SKIPPED, and said so, without a nightly toolchain), then Schemathesis
#      against lab serve and lab hop with the OpenAPI documents (scripts/check-openapi.sh), then
#      the Kubernetes manifests rendered and validated offline (scripts/check-k8s.sh; SKIPPED,
#      and said so, without kubectl)
#   7. the compose topology for real, when a Docker engine answers (skipped, and said so, when
#      none does): the offline path (static binary, FROM scratch images), then the standard
#      Dockerfile built with the legacy builder (local stand-ins for its base images when they
#      cannot be pulled, vendored crates) and its default topology run.
# Env: E03_TEST_DOCKER=0 skips step 7 on purpose.
set -euo pipefail
cd "$(dirname "$0")"
# Read once and dropped: the lab refuses E03_* names that are not its parameters, and the steps
# below run it with this environment.
test_docker="${E03_TEST_DOCKER:-1}"
unset E03_TEST_DOCKER

step() { printf '\n== %s\n' "$*"; }

if ! command -v cargo >/dev/null 2>&1; then
    echo "test-e03: cargo is not installed; install Rust (rustup) first" >&2
    exit 1
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test --workspace"
# The live metrics test also writes what it scraped, and what the logs say, for step 3.
metrics_dump=$(mktemp -d /tmp/e03-metrics.XXXXXX)
E03_TEST_METRICS_DUMP="$metrics_dump" cargo test --workspace --locked 2>&1 | tee /tmp/e03-cargo-test.log
grep -q '^test result: ok' /tmp/e03-cargo-test.log || { echo "test-e03: no test ran" >&2; exit 1; }

step "the docs' commands (scripts/check-docs.sh)"
# Every ```sh block of README.md, ARCHITECTURE.md and docs/*.md runs against the lab just built,
# in a temporary folder; every file in examples/ is used; every relative link resolves.
scripts/check-docs.sh

step "/metrics with a real Prometheus parser (Python prometheus_client, from PyPI)"
pydeps=target/e03-python
if ! PYTHONPATH="$pydeps" python3 -c 'import prometheus_client' 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check --target "$pydeps" 'prometheus-client==0.21.1'
fi
PYTHONPATH="$pydeps" python3 scripts/check-metrics.py "$metrics_dump" docker/observe/grafana/dashboards/e03.json
rm -rf "$metrics_dump"

# --- report.html and the dashboard (issue 29) -------------------------------------------------
step "report.html in headless Chromium (Debian's chromium): every built-in scenario and a live e03b"
timeout --kill-after=10 360 scripts/check-report.sh

step "the Grafana dashboard's queries on a real Prometheus (Debian's prometheus), live e03b"
timeout --kill-after=10 150 scripts/check-prometheus.sh
# --- end of issue 29's steps --------------------------------------------------------------------

step "soak: lab soak --minutes 1 (E03-A against one dependency; RSS, fds, tasks every second)"
# Fails on RSS growth above 10% after the warm-up or an incomplete log (docs/measurements-soak.md).
soak_out=$(mktemp -d /tmp/e03-soak.XXXXXX)
timeout 300 cargo run --quiet --locked -p lab -- soak --minutes 1 --out "$soak_out"
rm -rf "$soak_out"

step "lab audit: five real clients graded, each row checked against the client's documentation (scripts/check-audit.sh, docs/audit.md)"
timeout 600 scripts/check-audit.sh

step "lab proxy driven by Toxiproxy's own Python client (PyPI), in front of a real lab serve (scripts/check-wire.sh, docs/wire.md)"
timeout 300 scripts/check-wire.sh

step "fuzzing: every target of fuzz/ for 30 s (scripts/check-fuzz.sh, docs/fuzzing.md)"
# 8 targets x 30 s, and the first build of the targets (nightly, AddressSanitizer).
timeout --kill-after=10 1800 scripts/check-fuzz.sh 30

step "API contract: schemathesis (PyPI) against lab serve and lab hop (docs/api-contract.md)"
timeout 600 scripts/check-openapi.sh 100

step "Kubernetes manifests: kubectl kustomize deploy/k8s, validated offline (kubernetes-validate from PyPI; docs/kubernetes.md)"
timeout 300 scripts/check-k8s.sh

step "compose topology (offline path)"
if [ "$test_docker" = "0" ]; then
    echo "SKIPPED: compose check (E03_TEST_DOCKER=0)"
    exit 0
fi
if ! docker info >/dev/null 2>&1; then
    echo "SKIPPED: compose check: no Docker engine answers on this machine"
    exit 0
fi
scripts/test-compose.sh

step "Docker Swarm mode: deploy/stack.yml, the swarm as 4 shard tasks, on a one-node swarm on loopback (scripts/check-stack.sh, docs/shards.md)"
timeout --kill-after=10 600 scripts/check-stack.sh
