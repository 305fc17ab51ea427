#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo fuzz, libFuzzer, nightly Rust; docs/fuzzing.md) for a
# fixed time each, on a COPY of its seed corpus in a temporary folder (the repository's
# fuzz/corpus/ never grows), and fails if any target crashes (a panic, an assertion of the
# target, a sanitizer report, a timeout or running out of memory).
#
#   scripts/check-fuzz.sh [SECONDS]      # SECONDS per target, default 30 (-max_total_time)
#
# cargo-fuzz is installed from crates.io when missing (cargo install cargo-fuzz --locked, into
# cargo's default bin folder). Without a nightly toolchain, or when that install fails, it says
# "SKIPPED: fuzzing: <reason>" and exits 0. A crash leaves its input in fuzz/artifacts/<target>/
# (ignored by git) and prints the command that replays it.
# The build goes to a cache outside the clone, keyed by fuzz/Cargo.lock and the nightly
# toolchain's version ($E03_CACHE_DIR/fuzz-target/<key>, default ~/.cache/e03-lab), as CI systems
# keep a build keyed by its lock file: another clone or a later run builds only the lab's own
# crates again. The test suite does not run this script; it replays every seed through the same
# checks (lab/tests/fuzz_corpus.rs).
# Env: E03_FUZZ_TARGETS="a b" runs only those targets; E03_CACHE_DIR moves the cache.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-30}
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
    echo "check-fuzz: invalid SECONDS \"$secs\": expected a whole number of seconds per target, at least 1" >&2
    exit 2
fi

skip() {
    echo "SKIPPED: fuzzing: $*"
    exit 0
}

if ! command -v cargo >/dev/null 2>&1; then
    skip "cargo is not installed"
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
    skip "no nightly Rust toolchain (cargo fuzz needs one: rustup toolchain install nightly)"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "check-fuzz: installing cargo-fuzz from crates.io (cargo install cargo-fuzz --locked)"
    if ! cargo install cargo-fuzz --locked; then
        skip "cargo install cargo-fuzz --locked failed"
    fi
fi

cache_root=${E03_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/e03-lab}
key=$( { cat fuzz/Cargo.lock; rustc +nightly -vV; } | sha256sum | cut -c1-16)
target_dir="$cache_root/fuzz-target/$key"
if ! mkdir -p "$target_dir" 2>/dev/null; then
    target_dir="$PWD/fuzz/target"
fi
echo "check-fuzz: building into $target_dir"
cd fuzz
# Optimized, with debug assertions and overflow checks, and AddressSanitizer (cargo fuzz's
# defaults). A target that does not build is a failure, not a skip.
cargo +nightly fuzz build --target-dir "$target_dir"

targets=${E03_FUZZ_TARGETS:-$(cargo +nightly fuzz list)}
work=$(mktemp -d /tmp/e03-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=()
printf '%-16s %10s %12s %8s %s\n' target seconds runs exec/s cov
for t in $targets; do
    if [ ! -d "corpus/$t" ]; then
        echo "check-fuzz: no seed corpus fuzz/corpus/$t" >&2
        exit 1
    fi
    mkdir -p "$work/$t"
    cp -R "corpus/$t/." "$work/$t/"
    log="$work/$t.log"
    # -timeout: one input taking 30 s is a hang, reported as a crash.
    if cargo +nightly fuzz run --target-dir "$target_dir" "$t" "$work/$t" -- \
        -max_total_time="$secs" -timeout=30 -print_final_stats=1 >"$log" 2>&1; then
        status=ok
    else
        status=CRASH
        failed+=("$t")
    fi
    # libFuzzer's last status line: "#RUNS ... cov: N ft: N corp: ... exec/s: N ...".
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-16s %10s %12s %8s %s %s\n' "$t" "$secs" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$status"
    if [ "$status" = CRASH ]; then
        echo "--- $t: the end of libFuzzer's output:" >&2
        tail -40 "$log" >&2
        echo "--- replay: cd fuzz && cargo +nightly fuzz run --target-dir $target_dir $t artifacts/$t/<the file above>" >&2
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "check-fuzz: crashed: ${failed[*]} (see docs/fuzzing.md: a crash becomes a regression test)" >&2
    exit 1
fi
echo "check-fuzz: every target ran ${secs} s without a crash"
