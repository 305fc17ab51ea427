#!/usr/bin/env bash
# Audits the real clients of examples/audit/ with `lab audit` (docs/audit.md) and checks each
# scorecard against what that client is documented to do. Fails on any difference.
#
#   scripts/check-audit.sh
#
# The clients: requests with urllib3's Retry (PyPI, installed by scripts/pydeps.sh into a cache when
# missing), curl --retry, curl --fail --retry-all-errors, a hand-written loop on Node's fetch, and
# the lab's own strategy C (`lab client`). They run at once (each audit is mostly waiting), in
# about 80 s. Needs python3, curl and node (Node 18 or later, for fetch): say which is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in python3 curl node; do
    command -v "$tool" >/dev/null 2>&1 || { echo "check-audit: $tool is not installed (docs/audit.md)" >&2; exit 1; }
done
pydeps=$(scripts/pydeps.sh 'requests==2.32.3' 'urllib3==2.2.3')
cargo build -p lab --locked --quiet
lab=$PWD/target/debug/lab
out=$(mktemp -d /tmp/e03-audit.XXXXXX)
trap 'rm -rf "$out"' EXIT

audit() { # NAME COMMAND...: one audit in the background, its scorecard in $out/NAME
    local name=$1
    shift
    (
        rc=0 # an audit with a FAIL exits 1: recorded, not fatal here
        PYTHONPATH="$pydeps" "$lab" audit --attempts 4 --out "$out/$name" -- "$@" \
            >"$out/$name.txt" 2>&1 || rc=$?
        echo "$rc" >"$out/$name.exit"
    ) &
}
audit urllib3 python3 examples/audit/urllib3_client.py
audit curl sh examples/audit/curl_client.sh
audit curl-all-errors sh examples/audit/curl_client.sh --fail --retry-all-errors
audit node node examples/audit/node_fetch_client.mjs
audit lab-client-C "$lab" client --strategies C
wait

# What each client is documented to do, row by row (docs/audit.md says why), and the exit code
# that follows (1 when a row FAILs).
python3 - "$out" <<'EOF'
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
rows = ["classification", "idempotency", "attempt timeout", "deadline", "backoff",
        "Retry-After", "amplification", "other layers"]
want = {
    # urllib3: 4xx not in status_forcelist; POST not in allowed_methods (never retried); read
    # timeouts retried; bounded by total=3; backoff 0, 0.2, 0.4 s without jitter; Retry-After
    # honoured on 429 and 503 (respect_retry_after_header, RETRY_AFTER_STATUS_CODES); 4 attempts
    # per operation in an outage.
    "urllib3": "PASS PASS PASS PASS WARN PASS WARN PASS",
    # curl --retry: 404 is not transient; the script's key per operation; --max-time 2; no retry
    # after 8 s; waits 1, 2, 4 s without jitter; Retry-After honoured; 4 attempts per operation.
    "curl": "PASS PASS PASS PASS WARN PASS WARN PASS",
    # --retry-all-errors with --fail retries every error, a 404 included.
    "curl-all-errors": "FAIL PASS PASS PASS WARN PASS WARN PASS",
    # The fetch loop: 429 and 5xx only; no key on its POST retries; 2 s per attempt; 4 attempts;
    # a fixed 500 ms wait; Retry-After ignored; 4 attempts per operation.
    "node": "PASS FAIL PASS PASS FAIL FAIL WARN PASS",
    # Strategy C: exponential backoff with full jitter, Retry-After at least, 2 s per attempt, a
    # 5 s deadline, no key policy (its POST retries charge twice), no budget.
    "lab-client-C": "PASS FAIL PASS PASS PASS PASS WARN PASS",
}
bad = 0
for name, verdicts in want.items():
    said = (out / f"{name}.txt").read_text()
    code = int((out / f"{name}.exit").read_text())
    cards = [c for c in (out / name).glob("*/scorecard.json") if c.parent.name != "latest"]
    if len(cards) != 1:
        print(f"check-audit: {name}: no scorecard (exit {code}):\n{said}")
        bad += 1
        continue
    card = json.loads(cards[0].read_text())
    got = {r["check"]: r["verdict"] for r in card["rows"]}
    expected = dict(zip(rows, verdicts.split()))
    wrong = [f"{k}: {got.get(k)} (documented: {v})" for k, v in expected.items() if got.get(k) != v]
    want_code = 1 if "FAIL" in verdicts else 0
    if code != want_code:
        wrong.append(f"exit {code} (expected {want_code})")
    print(f"== {name}: {'ok' if not wrong else 'DIFFERS'}")
    i = said.find("| # |")
    print(said[i:] if i >= 0 else said)
    for w in wrong:
        print(f"   {w}")
    bad += bool(wrong)
sys.exit(1 if bad else 0)
EOF
echo "check-audit: every example client's scorecard is what its documentation says"
