#!/usr/bin/env bash
# Audits the real clients and retry libraries of examples/audit/ with `lab audit` (docs/audit.md)
# and checks each scorecard, row by row, against what that client's documentation says it does
# (docs/clients.md: the table, the evidence and the documentation's words). Fails on any
# difference.
#
#   scripts/check-audit.sh            # every client
#   scripts/check-audit.sh NAME ...   # only these (names as in the table below)
#
# The clients: requests with urllib3's Retry, curl --retry (twice), a hand-written loop on Node's
# fetch, the lab's own strategy C, and the retry libraries of docs/clients.md: tenacity, backoff,
# stamina, httpx-retries, aiohttp-retry, google-api-core's Retry, opnieuw and retry2 from PyPI
# (pinned, installed by scripts/pydeps.sh into a cache when missing), reqwest-retry, backon and
# tokio-retry from crates.io (examples/audit/rust-clients, a workspace member). They run 8 at a
# time (each audit mostly waits), started 4 s apart, in about 2.5 minutes: each backoff probe
# starts 20 copies of its client, and 16 audits at once would start 320 processes on 2 cores,
# whose scheduling delays every wait the backoff row reads.
# Env: E03_AUDIT_PARALLEL (default 8), E03_AUDIT_STAGGER (seconds between starts, default 4).
# Needs python3, curl and node (Node 18 or later, for fetch): say which is missing.
#
# Rows are compared by name: a row the scorecard has and the table below does not name is printed
# and not checked, so new rows of the grading do not break this check until their verdicts are
# written here.
set -euo pipefail
cd "$(dirname "$0")/.."

names=" urllib3 curl curl-all-errors node lab-client-C tenacity backoff stamina httpx-retries aiohttp-retry google-api-core opnieuw retry2 reqwest-retry backon tokio-retry "
for n in "$@"; do
    [[ "$names" == *" $n "* ]] || { echo "lab: check-audit: no client named '$n': expected one of$names" >&2; exit 2; }
done

for tool in python3 curl node; do
    command -v "$tool" >/dev/null 2>&1 || { echo "check-audit: $tool is not installed (docs/audit.md)" >&2; exit 1; }
done
# urllib3's client keeps the pins it was documented with; the libraries share one set (requests
# 2.33 at least, for google-api-core 2.44).
pydeps=$(scripts/pydeps.sh 'requests==2.32.3' 'urllib3==2.2.3')
libdeps=$(scripts/pydeps.sh 'requests==2.33.0' 'tenacity==9.2.1' 'backoff==2.2.1' \
    'stamina==26.1.0' 'httpx==0.28.1' 'httpx-retries==0.6.0' 'aiohttp==3.14.5' \
    'aiohttp-retry==2.9.1' 'google-api-core==2.44.0' 'opnieuw==4.0.0' 'retry2==0.9.5')
cargo build -p lab -p audit-clients --locked --quiet
lab=$PWD/target/debug/lab
rust=$PWD/target/debug/audit-clients
out=$(mktemp -d /tmp/e03-audit.XXXXXX)
trap 'rm -rf "$out"' EXIT
started=$(date +%s)

only=" $* "
parallel=${E03_AUDIT_PARALLEL:-8}
case "$parallel" in
    '' | *[!0-9]* | 0) echo "lab: E03_AUDIT_PARALLEL='$parallel' is not a whole number of 1 or more" >&2; exit 2 ;;
esac
stagger=${E03_AUDIT_STAGGER:-4}
case "$stagger" in
    '' | *[!0-9]*) echo "lab: E03_AUDIT_STAGGER='$stagger' is not a whole number of seconds" >&2; exit 2 ;;
esac
launched=0
audit() { # NAME PYTHONPATH ATTEMPTS COMMAND...: one audit in the background, its scorecard in $out/NAME
    local name=$1 path=$2 attempts=$3
    shift 3
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
    local claim=()
    [ "$attempts" = - ] || claim=(--attempts "$attempts")
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do
        wait -n || true
    done
    # Apart, so that no two audits' 8 backoff copies are likely to start together.
    [ "$launched" = 0 ] || sleep "$stagger"
    launched=1
    (
        rc=0 # an audit with a FAIL exits 1: recorded, not fatal here
        PYTHONPATH="$path" "$lab" audit "${claim[@]}" --out "$out/$name" -- "$@" \
            >"$out/$name.txt" 2>&1 || rc=$?
        echo "$rc" >"$out/$name.exit"
    ) &
}
audit urllib3 "$pydeps" 4 python3 examples/audit/urllib3_client.py
audit curl "" 4 sh examples/audit/curl_client.sh
audit curl-all-errors "" 4 sh examples/audit/curl_client.sh --fail --retry-all-errors
audit node "" 4 node examples/audit/node_fetch_client.mjs
audit lab-client-C "" 4 "$lab" client --strategies C
audit tenacity "$libdeps" 4 python3 examples/audit/tenacity_client.py
audit backoff "$libdeps" 4 python3 examples/audit/backoff_client.py
audit stamina "$libdeps" 3 python3 examples/audit/stamina_client.py
audit httpx-retries "$libdeps" 4 python3 examples/audit/httpx_retries_client.py
audit aiohttp-retry "$libdeps" 3 python3 examples/audit/aiohttp_retry_client.py
audit google-api-core "$libdeps" - python3 examples/audit/google_api_core_client.py
audit opnieuw "$libdeps" 4 python3 examples/audit/opnieuw_client.py
audit retry2 "$libdeps" 4 python3 examples/audit/retry2_client.py
audit reqwest-retry "" 4 "$rust" reqwest-retry
audit backon "" 4 "$rust" backon
audit tokio-retry "" 4 "$rust" tokio-retry
wait
echo "check-audit: the audits took $(($(date +%s) - started)) s"

# What each client is documented to do, row by row (docs/clients.md quotes the documentation),
# and the exit code that follows (1 when a row FAILs). Every verdict is one: amplification counts
# one client process per operation (the backoff probe's 20 copies), so a library without a
# budget gets its attempts per operation whatever its waits; the budget row reads the long
# outage and says when the probe's limit stopped the last operation (no falling rate is read
# from it); the backoff row reads 20 copies' waits (docs/audit.md).
python3 - "$out" "$*" <<'EOF'
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
only = sys.argv[2].split()
rows = ["classification", "idempotency", "attempt timeout", "deadline", "backoff",
        "Retry-After", "amplification", "budget", "other layers"]
want = {
    # urllib3: 4xx not in status_forcelist; POST not in allowed_methods (never retried); read
    # timeouts retried; bounded by total=3; backoff 0, 0.2, 0.4 s without jitter; Retry-After
    # honoured on 429 and 503 (respect_retry_after_header, RETRY_AFTER_STATUS_CODES); 4 attempts
    # per operation in an outage.
    "urllib3": "PASS PASS PASS PASS WARN PASS WARN WARN PASS",
    # curl --retry: 404 is not transient; the script's key per operation; --max-time 2; no retry
    # after 8 s; waits 1, 2, 4 s without jitter; Retry-After honoured; 4 attempts per operation.
    "curl": "PASS PASS PASS PASS WARN PASS WARN WARN PASS",
    # --retry-all-errors with --fail retries every error, a 404 included.
    "curl-all-errors": "FAIL PASS PASS PASS WARN PASS WARN WARN PASS",
    # The fetch loop: 429 and 5xx only; no key on its POST retries; 2 s per attempt; 4 attempts;
    # a fixed 500 ms wait; Retry-After ignored; 4 attempts per operation.
    "node": "PASS FAIL PASS PASS FAIL FAIL WARN WARN PASS",
    # Strategy C: exponential backoff with full jitter, Retry-After at least, 2 s per attempt, a
    # 5 s deadline, no key policy (its POST retries charge twice), no budget.
    "lab-client-C": "PASS FAIL PASS PASS PASS PASS WARN WARN PASS",
    # tenacity: the operation's transient predicate (no 4xx); every exception retried, the POST
    # too, no key; a timeout retried, 4 attempts of 2 s with waits under 3.5 s; full jitter
    # uniform(0, 0.5 * 2^(n-1)): means 0.25, 0.5, 1 s; no Retry-After; 4 per operation.
    "tenacity": "PASS FAIL PASS PASS PASS FAIL WARN WARN PASS",
    # backoff: giveup on 4xx (the README's fatal_code), so 429 is not retried; the POST's 504
    # retried without a key; timeouts retried; 4 tries of 2 s, full-jitter waits under 7 s; expo
    # 1, 2, 4 s with full_jitter; 503's Retry-After not read (a retry within 1 s): FAIL.
    "backoff": "PASS FAIL PASS PASS PASS FAIL WARN WARN PASS",
    # stamina (the README's on=httpx.HTTPError): a 404 is retried; the POST too; a timeout too;
    # 3 attempts; waits 0.1 + uniform(0, 1), 0.2 + uniform(0, 1): the jitter is added, not
    # scaled, so the longest waits hardly grow (about 1.2 and 1.3 s): constant waits, WARN;
    # no Retry-After; 3 per operation (WARN: more than 2).
    "stamina": "FAIL FAIL PASS PASS WARN FAIL WARN WARN PASS",
    # httpx-retries: 429/502/503/504 only; POST not retried; timeouts retried; 4 attempts; waits
    # uniform(0, 1), (0, 2), (0, 4) s (full jitter); Retry-After honoured; 4 per operation.
    "httpx-retries": "PASS PASS PASS PASS PASS PASS WARN WARN PASS",
    # aiohttp-retry: 5xx only; every method, POST included, and no key, but a timeout is not
    # retried (exceptions is empty) and the POST's 2 s timeout comes before the probe's 504, so
    # one charge; waits 0.2, 0.4 s, no jitter; 429 not retried and 503 retried after 0.2 s
    # (Retry-After not read): FAIL; 3 per operation.
    "aiohttp-retry": "PASS PASS PASS PASS WARN FAIL WARN WARN PASS",
    # google-api-core: 4xx not transient; a read timeout not transient, so neither the held
    # attempt nor the POST (timed out before its 504, itself not transient) is retried; full jitter uniform(0, 1, 2, 4 ... s), no attempt limit within its
    # 120 s timeout (the backoff probe stops it at 15 s); no Retry-After; more than 4 per
    # operation in 20 s (FAIL); no attempt count to claim (WARN).
    "google-api-core": "PASS PASS PASS PASS PASS FAIL FAIL WARN WARN",
    # opnieuw (the README's ConnectionError, HTTPError): every 4xx retried; a read timeout is not
    # a ConnectionError, so neither the held attempt nor the POST (timed out before its 504) is
    # retried; full jitter uniform(0, 1.43 * 2^n); no Retry-After; 4 calls.
    "opnieuw": "FAIL PASS PASS PASS PASS FAIL WARN WARN PASS",
    # retry2: on_exception stops on a 4xx but 429; the POST retried without a key; a timeout
    # retried; 4 tries of 2 s with waits of 1, 2, 4 s end 15 s after the first, the deadline
    # row's bound: PASS or WARN (the row measures from the first attempt's arrival, which a
    # loaded machine logs late: backon measured 14.97 s in one suite, 15.01 s in another);
    # waits 1, 2, 4 s, no jitter; no Retry-After; 4 per operation.
    "retry2": "PASS FAIL PASS PASS|WARN WARN FAIL WARN WARN PASS",
    # reqwest-retry: DefaultRetryableStrategy (no 4xx but 408, 429); any method, no key; a
    # timeout retried; waits uniform(0, 1, 2, 4 s) (Jitter::Full, the builder's default); no
    # Retry-After; 4 per operation.
    "reqwest-retry": "PASS FAIL PASS PASS PASS FAIL WARN WARN PASS",
    # backon: .when transient; no key; a timeout retried; 4 attempts of 2 s with waits of 1, 2,
    # 4 s end 15 s after the first (PASS or WARN, as retry2); no jitter by default; adjust's doc example
    # reads Retry-After in seconds only, a date becomes 0 s: FAIL; 4 per operation.
    "backon": "PASS FAIL PASS PASS|WARN WARN FAIL WARN WARN PASS",
    # tokio-retry: RetryIf transient; no key; a timeout retried; waits uniform(0, 10 ms),
    # (0, 100 ms), (0, 1 s) (from_millis(10) is 10^n ms, jitter full); no Retry-After; 4 per
    # operation. Its backoff: the first wait's median (5 ms) is under the row's 20 ms for an
    # immediate retry, the others grow x10 with full jitter: PASS.
    "tokio-retry": "PASS FAIL PASS PASS PASS FAIL WARN WARN PASS",
}
# The jitter the backoff row must name, where the documentation names it: backoff's README
# ("the default jitter function backoff.full_jitter implements the 'Full Jitter' algorithm"),
# tenacity's wait_random_exponential docstring ("the 'Full Jitter' algorithm"), reqwest-retry's
# and httpx-retries' full jitter, urllib3's and retry2's waits without any, and the lab's own C.
jitter = {
    "backoff": "full",
    "tenacity": "full",
    "reqwest-retry": "full",
    "httpx-retries": "full",
    "lab-client-C": "full",
    "urllib3": "none",
    "retry2": "none",
}
bad = 0
for name, verdicts in want.items():
    if only and name not in only:
        continue
    said = (out / f"{name}.txt").read_text()
    code = int((out / f"{name}.exit").read_text())
    cards = [c for c in (out / name).glob("*/scorecard.json") if c.parent.name != "latest"]
    if len(cards) != 1:
        print(f"check-audit: {name}: no scorecard (exit {code}):\n{said}")
        bad += 1
        continue
    card = json.loads(cards[0].read_text())
    got = {r["check"]: r["verdict"] for r in card["rows"]}
    expected = dict(zip(rows, (v.split("|") for v in verdicts.split())))
    wrong = [f"{k}: {got.get(k)} (documented: {'|'.join(v)})"
             for k, v in expected.items() if got.get(k) not in v]
    if name in jitter:
        backoff = next((r["evidence"] for r in card["rows"] if r["check"] == "backoff"), "")
        if f"jitter {jitter[name]}" not in backoff:
            wrong.append(f"backoff: jitter {jitter[name]} not named (documented): {backoff}")
    # The exit code follows the rows the scorecard has: 1 when one FAILs.
    want_code = 1 if "FAIL" in got.values() else 0
    if code != want_code:
        wrong.append(f"exit {code} (expected {want_code})")
    unchecked = [k for k in got if k not in expected]
    print(f"== {name}: {'ok' if not wrong else 'DIFFERS'}")
    i = said.find("| # |")
    print(said[i:] if i >= 0 else said)
    if unchecked:
        print(f"   not checked here (no documented verdict yet): {', '.join(unchecked)}")
    for w in wrong:
        print(f"   {w}")
    bad += bool(wrong)
sys.exit(1 if bad else 0)
EOF
echo "check-audit: every example client's scorecard is what its documentation says"
