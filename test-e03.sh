#!/usr/bin/env bash
# The test suite of the lab.
#
#   ./test-e03.sh            # the whole suite (the README's test command; CI runs this)
#   ./test-e03.sh --quick    # the loop of a working day: formatting, lints, the unit tests and
#                            # the integration tests that need no live run of more than a few
#                            # seconds (cargo test with --skip live_, docs/running.md)
#
# The whole suite:
#   1. formatting and lints (cargo fmt --check, clippy -D warnings)
#   2. cargo test --workspace: unit tests, integration tests on loopback port 0, every seed of
#      fuzz/corpus/ replayed through its fuzz target's check (lab/tests/fuzz_corpus.rs), and live
#      runs of the whole pipeline (lab run) over loopback
#   3. every shell command of README.md, ARCHITECTURE.md and docs/*.md, and every file in
#      examples/, run against the lab just built (scripts/check-docs.sh; Docker commands are
#      left to step 7, and it says so)
#   4. the /metrics expositions of a live run parsed by a real Prometheus parser (Python's
#      prometheus_client, from PyPI), their counters checked against the logs, and the Grafana
#      dashboard's metric names checked against them
#   5. report.html opened in headless Chromium for every built-in scenario (scripts/check-report.sh)
#      and the dashboard's queries run on a real Prometheus against a live run
#      (scripts/check-prometheus.sh); each installs its Debian package or says SKIPPED
#   6. lab soak --minutes 1 (RSS, descriptors, tasks), then `lab audit` of five real clients
#      and eleven retry libraries (scripts/check-audit.sh, every row checked against the client's
#      documentation, docs/clients.md), then the lab's --junit files validated against the JUnit
#      XML schema and opened by junitparser and junit2html (scripts/check-junit.sh), then
#      `lab proxy` driven by Toxiproxy's Python client (scripts/check-wire.sh), then
#      `lab proxy --http` in front of nginx with urllib3 (scripts/check-http-proxy.sh), then 20 audits
#      of strategy C with the same backoff verdict (scripts/check-backoff-verdicts.sh), then Schemathesis
#      against lab serve and lab hop with the OpenAPI documents (scripts/check-openapi.sh), then
#      the Kubernetes manifests rendered and validated offline (scripts/check-k8s.sh; SKIPPED,
#      and said so, without kubectl)
#   7. the compose topology for real, when a Docker engine answers (skipped, and said so, when
#      none does): the standard Dockerfile built with the legacy builder (local stand-ins for its
#      base images when they cannot be pulled, vendored crates), the offline path (FROM scratch
#      images of that build's static binary), the topologies run (scripts/test-compose.sh).
# Fuzzing for new inputs is not a step: `scripts/check-fuzz.sh SECONDS` (docs/fuzzing.md).
#
# It ends with a table of its steps and their wall times, and the slowest test binaries (also
# written to target/e03-test-times.md); docs/measurements.md keeps dated copies.
# The crates.io dependencies' build (scripts/cargo-deps.sh) and the Python packages
# (scripts/pydeps.sh) come from caches outside the clone (E03_CACHE_DIR), keyed by their locked
# inputs; a machine without them builds them once.
# Env: E03_TEST_DOCKER=0 skips step 7 on purpose.
set -euo pipefail
cd "$(dirname "$0")"

quick=0
case "${1:-}" in
    "") ;;
    --quick) quick=1 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-e03: unknown argument '$1': expected nothing (the whole suite) or --quick" >&2; exit 2 ;;
esac
if [ "$#" -gt 1 ]; then
    echo "test-e03: one argument at most (--quick), got $#" >&2
    exit 2
fi
# Read once and dropped: the lab refuses E03_* names that are not its parameters, and the steps
# below run it with this environment.
test_docker="${E03_TEST_DOCKER:-1}"
unset E03_TEST_DOCKER

if ! command -v cargo >/dev/null 2>&1; then
    echo "test-e03: cargo is not installed; install Rust (rustup) first" >&2
    exit 1
fi

mkdir -p target
times_file=target/e03-test-times.md
cargo_log=target/e03-cargo-test.log
# This run's log only: a table of an earlier run's tests would be a false report.
rm -f "$cargo_log" "$cargo_log.doc"
names=() seconds=() results=()
current="" began=0 suite_began=$(date +%s)

# step NAME: starts timing a step (and ends the one before it).
step() {
    end_step ok
    current=$1
    began=$(date +%s)
    printf '\n== %s\n' "$1"
}
end_step() {
    if [ -n "$current" ]; then
        names+=("$current")
        seconds+=($(( $(date +%s) - began )))
        results+=("$1")
        current=""
    fi
}
# The slowest test binaries (and, from cargo-nextest, the slowest tests) of a test log, as
# Markdown tables.
slowest_tests() {
    if grep -qE '^ +Summary \[' "$1"; then
        # cargo-nextest: "PASS [  12.345s] (n/N) crate::binary test_name", one line a test.
        local rows
        # The index is padded inside its parentheses: "(  8/803)".
        rows=$(sed -nE 's/^ +(PASS|FAIL|SIGSEGV|SIGABRT|TIMEOUT|LEAK) \[ *([0-9.]+)s\] \( *[0-9]+\/[0-9]+\) ([^ ]+) (.*)$/\3\t\4\t\2/p' "$1")
        echo
        echo "The slowest test binaries (the sum of their tests' seconds; they run four at once):"
        echo
        echo "| test binary | tests | seconds |"
        echo "|---|---:|---:|"
        awk -F'\t' '{ n[$1]++; t[$1] += $3 } END { for (b in n) printf "%s\t%d\t%.1f\n", b, n[b], t[b] }' <<<"$rows" \
            | sort -t$'\t' -k3 -rn | head -12 | awk -F'\t' '{ printf "| %s | %d | %.1f |\n", $1, $2, $3 }'
        echo
        echo "The slowest tests:"
        echo
        echo "| test | seconds |"
        echo "|---|---:|"
        sort -t$'\t' -k3 -rn <<<"$rows" | head -10 | awk -F'\t' '{ printf "| %s %s | %.1f |\n", $1, $2, $3 }'
        echo
        sed -nE 's/^ +Summary \[ *([0-9.]+)s\] (.*)$/cargo-nextest: \2 in \1 s./p' "$1"
    else
        # cargo test: "Running tests/x.rs (target/debug/deps/x-HASH)" ... "finished in 1.23s".
        echo
        echo "The slowest test binaries (seconds, from cargo test's \"finished in\"; one at a time):"
        echo
        echo "| test binary | tests | seconds |"
        echo "|---|---:|---:|"
        awk '
            /^ *Running / { name = $NF; sub(/^\(target\/debug\/deps\//, "", name); sub(/-[0-9a-f]+\)$/, "", name); if ($2 ~ /^unittests/) name = name " (unit)" }
            /^ *Doc-tests / { name = "doc-tests " $2 }
            /^test result: / {
                n = $4 + $6; t = $NF; sub(/s$/, "", t)
                printf "%s\t%d\t%s\n", name, n, t
            }' "$1" | sort -t$'\t' -k3 -rn | head -12 \
            | awk -F'\t' '{ printf "| %s | %d | %.1f |\n", $1, $2, $3 }'
        awk '/^test result: / { n += $4 + $6 } END { printf "\n%d tests passed or failed in all.\n", n }' "$1"
    fi
}

# The step table, then the slowest test binaries from the test log.
report_times() {
    local code=$?
    # The table is a report: a short pipe (head) must not end the script here.
    set +e +o pipefail
    if [ "$code" = 0 ]; then end_step ok; else end_step FAILED; fi
    {
        echo "| step | seconds | result |"
        echo "|---|---:|---|"
        local i
        for i in "${!names[@]}"; do
            echo "| ${names[$i]} | ${seconds[$i]} | ${results[$i]} |"
        done
        echo "| **the whole suite$([ "$quick" = 1 ] && echo ' (--quick)')** | **$(( $(date +%s) - suite_began ))** | $([ "$code" = 0 ] && echo passed || echo "FAILED (exit $code)") |"
        if [ -s "$cargo_log" ]; then
            slowest_tests "$cargo_log"
        fi
    } >"$times_file"
    printf '\n== step times (%s)\n' "$times_file"
    cat "$times_file"
    exit "$code"
}
trap report_times EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "the dependencies' build, from a cache outside the clone (scripts/cargo-deps.sh)"
# A fresh clone's target/ is seeded with the crates.io dependencies compiled once per
# Cargo.lock, manifests and toolchain; cargo then compiles only the lab's own crates.
scripts/cargo-deps.sh

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

# cargo-nextest when installed (.config/nextest.toml: four tests at once, those that judge live
# figures against the model alone), else cargo test (the same tests, one binary at a time).
if cargo nextest --version >/dev/null 2>&1; then
    nextest=1
else
    nextest=0
    echo "test-e03: cargo-nextest is not installed (cargo install cargo-nextest --locked); running cargo test"
fi

if [ "$quick" = 1 ]; then
    if [ "$nextest" = 1 ]; then
        step "cargo nextest run --workspace --profile quick (the quick tier, .config/nextest.toml)"
        cargo nextest run --workspace --locked --profile quick 2>&1 | tee "$cargo_log"
    else
        step "cargo test --workspace -- --skip live (the quick tier, without cargo-nextest)"
        cargo test --workspace --locked -- --skip live 2>&1 | tee "$cargo_log"
        grep -q '^test result: ok' "$cargo_log" || { echo "test-e03: no test ran" >&2; exit 1; }
    fi
    exit 0
fi

# The live metrics test also writes what it scraped, and what the logs say, for step 4.
metrics_dump=$(mktemp -d /tmp/e03-metrics.XXXXXX)
if [ "$nextest" = 1 ]; then
    step "cargo nextest run --workspace (.config/nextest.toml)"
    E03_TEST_METRICS_DUMP="$metrics_dump" cargo nextest run --workspace --locked 2>&1 | tee "$cargo_log"
    grep -qE '^ +Summary \[.* [1-9][0-9]* tests? run: [0-9]+ passed' "$cargo_log" \
        || { echo "test-e03: no test ran" >&2; exit 1; }
    # cargo-nextest runs no doc tests.
    step "cargo test --workspace --doc"
    cargo test --workspace --locked --doc 2>&1 | tee -a "$cargo_log.doc"
else
    step "cargo test --workspace"
    E03_TEST_METRICS_DUMP="$metrics_dump" cargo test --workspace --locked 2>&1 | tee "$cargo_log"
    grep -q '^test result: ok' "$cargo_log" || { echo "test-e03: no test ran" >&2; exit 1; }
fi

step "the docs' commands (scripts/check-docs.sh)"
# Every ```sh block of README.md, ARCHITECTURE.md and docs/*.md runs against the lab just built,
# in a temporary folder; every file in examples/ is used; every relative link resolves.
scripts/check-docs.sh

step "/metrics with a real Prometheus parser (Python prometheus_client, from PyPI)"
pydeps=$(scripts/pydeps.sh 'prometheus-client==0.21.1')
PYTHONPATH="$pydeps" python3 scripts/check-metrics.py "$metrics_dump" docker/observe/grafana/dashboards/e03.json
rm -rf "$metrics_dump"

step "report.html in headless Chromium (Debian's chromium): every built-in scenario and a live e03b"
timeout --kill-after=10 360 scripts/check-report.sh

step "the Grafana dashboard's queries on a real Prometheus (Debian's prometheus), live e03b"
timeout --kill-after=10 150 scripts/check-prometheus.sh

step "soak: lab soak --minutes 1 (E03-A against one dependency; RSS, fds, tasks every second)"
# Fails on RSS growth above 10% after the warm-up or an incomplete log (docs/measurements-soak.md).
soak_out=$(mktemp -d /tmp/e03-soak.XXXXXX)
timeout 300 cargo run --quiet --locked -p lab -- soak --minutes 1 --out "$soak_out"
rm -rf "$soak_out"

step "lab audit: five real clients and eleven retry libraries graded, each row checked against its documentation (scripts/check-audit.sh)"
timeout 600 scripts/check-audit.sh

step "--junit read by real tools: the JUnit XML schema (xmlschema), junitparser and junit2html, from PyPI (scripts/check-junit.sh)"
timeout 300 scripts/check-junit.sh

step "lab proxy driven by Toxiproxy's own Python client (PyPI), in front of a real lab serve (scripts/check-wire.sh)"
timeout 300 scripts/check-wire.sh

step "lab proxy --http in front of Debian's nginx, driven by urllib3's Retry: every request on all three sides (scripts/check-http-proxy.sh)"
timeout 300 scripts/check-http-proxy.sh

step "lab audit's backoff verdict does not hang on luck: 20 audits of strategy C, then B, E and F's jitters named (scripts/check-backoff-verdicts.sh)"
timeout 600 scripts/check-backoff-verdicts.sh

step "API contract: schemathesis (PyPI) against lab serve and lab hop (scripts/check-openapi.sh)"
timeout 600 scripts/check-openapi.sh 100

step "Kubernetes manifests: kubectl kustomize deploy/k8s, validated offline (scripts/check-k8s.sh)"
timeout 300 scripts/check-k8s.sh

step "compose: the standard image, the offline path and the topologies (scripts/test-compose.sh)"
if [ "$test_docker" = "0" ]; then
    echo "SKIPPED: compose check (E03_TEST_DOCKER=0)"
    end_step SKIPPED
    exit 0
fi
if ! docker info >/dev/null 2>&1; then
    echo "SKIPPED: compose check: no Docker engine answers on this machine"
    end_step SKIPPED
    exit 0
fi
scripts/test-compose.sh

step "Docker Swarm mode: deploy/stack.yml, the swarm as 4 shard tasks, on a one-node swarm on loopback (scripts/check-stack.sh)"
timeout --kill-after=10 600 scripts/check-stack.sh
