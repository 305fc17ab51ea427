#!/usr/bin/env bash
# The browser test of report.html (docs/report.md): `lab simulate` for every built-in scenario
# (the chain scenarios, amplification and deadline, included), one short live `lab run e03b` and
# one live `lab run amplification` (a chain over loopback hops), then each report.html opened in
# headless Chromium by scripts/check-report.py (figures rendered at a non-zero size, legends and
# phases named, the tables' cells equal to summary.json or, for a chain, chain.json, no console
# error), and OUT/index.html listing them.
#
# Installs Debian's chromium when it is missing (apt-get, as root); prints SKIPPED and why when it
# cannot. Env: CHECK_REPORT_SCREENSHOT=PATH also writes a screenshot of the live E03-B report there
# (docs/report-e03b.png is one). Bounded: 300 s.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "check-report: installing Debian's chromium"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
            || true
    fi
    if ! command -v chromium >/dev/null 2>&1; then
        echo "SKIPPED: browser test of report.html: chromium is not installed and could not be" \
             "(needs root and apt-get reaching Debian: apt-get install chromium)"
        exit 0
    fi
fi

cargo build -p lab --locked --quiet
lab=target/debug/lab
out=$(mktemp -d /tmp/e03-report.XXXXXX)
trap 'rm -rf "$out"' EXIT

# Every built-in scenario, the chains (amplification, deadline) included.
catalogue=$("$lab" list)
scenarios=$(printf '%s\n' "$catalogue" | awk '/^Strategies/ {done = 1} !done && NF && $1 ~ /^[a-z0-9][a-z0-9-]*$/ {print $1}')
[ -n "$scenarios" ] || { echo "check-report: lab list named no scenario" >&2; exit 1; }
for chain in amplification deadline; do
    printf '%s\n' "$scenarios" | grep -q -x "$chain" \
        || { echo "check-report: lab list does not name the chain scenario $chain" >&2; exit 1; }
done
for s in $scenarios; do
    timeout 120 "$lab" simulate "$s" --out "$out" --run-id "sim-$s" >/dev/null 2>"$out/sim-$s.err" \
        || [ $? = 3 ] || { cat "$out/sim-$s.err" >&2; echo "check-report: lab simulate $s failed" >&2; exit 1; }
done
# One short live run: the freeze at 2-3 s, degraded to 5 s, operations starting in [0, 7 s).
E03_PROGRESS=off timeout 120 "$lab" run e03b --out "$out" --run-id live-e03b --clients 50 \
    --freeze-start-s 2 --freeze-end-s 3 --recovery-end-s 5 --duration-s 7 >/dev/null 2>"$out/live.err" \
    || [ $? = 3 ] || { cat "$out/live.err" >&2; echo "check-report: lab run e03b failed" >&2; exit 1; }

# One live chain: a hop process per layer on loopback, 3 top requests per variant (about 1 s).
E03_PROGRESS=off timeout 120 "$lab" run amplification --out "$out" --run-id live-amplification \
    >/dev/null 2>"$out/live-chain.err" \
    || [ $? = 3 ] || { cat "$out/live-chain.err" >&2; echo "check-report: lab run amplification failed" >&2; exit 1; }

pages=("$out/live-e03b/e03b/report.html" "$out/live-amplification/amplification/report.html")
for s in $scenarios; do pages+=("$out/sim-$s/simulated/$s/report.html"); done
shot=()
if [ -n "${CHECK_REPORT_SCREENSHOT:-}" ]; then shot=(--screenshot "$CHECK_REPORT_SCREENSHOT"); fi
timeout 300 python3 scripts/check-report.py "${shot[@]}" "${pages[@]}"

# The index lists every run, each link to its page.
for p in "${pages[@]}"; do
    rel=${p#"$out/"}
    grep -q "href=\"$rel\"" "$out/index.html" || { echo "check-report: index.html lacks $rel" >&2; exit 1; }
done
echo "check-report: index.html lists the ${#pages[@]} reports"
