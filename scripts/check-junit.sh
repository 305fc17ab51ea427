#!/usr/bin/env bash
# The lab's `--junit FILE` read by real tools (docs/ci-gates.md): JUnit files written by
# `lab simulate` (thresholds and a check that hold, then ones that break: exit 99), `lab run`
# (a live run an abort_after_s threshold stops: exit 99), `lab analyze` of a live folder, and
# `lab audit --require` (a row below what is required: exit 99), each
#   - validated against the JUnit XML schema (scripts/junit-schema/JUnit.xsd, from
#     windyroad/JUnit-Schema) by xmlschema,
#   - read by junitparser, with as many cases and failures as the lab said it wrote,
#   - opened by junit2html, whose HTML report names every failed case.
# The Python packages come from PyPI, pinned, through scripts/pydeps.sh. About 45 s.
set -euo pipefail
cd "$(dirname "$0")/.."

pydeps=$(scripts/pydeps.sh 'xmlschema==4.3.2' 'junitparser==5.0.3' 'junit2html==31.1.4')
cargo build -p lab --locked --quiet
lab=$PWD/target/debug/lab
out=$(mktemp -d /tmp/e03-junit.XXXXXX)
trap 'rm -rf "$out"' EXIT
export E03_PROGRESS=off
checked=()

# run WANT NAME COMMAND ARGS...: runs lab COMMAND --junit $out/NAME.xml ARGS, expects exit WANT, and notes
# the file with the counts the lab printed ("JUnit report: FILE (N test case(s), M failed)").
run() {
    local want=$1 name=$2
    shift 2
    local rc=0
    # --junit right after the command: lab audit's client command takes the rest.
    "$lab" "$1" --junit "$out/$name.xml" "${@:2}" >"$out/$name.out" 2>"$out/$name.err" || rc=$?
    if [ "$rc" != "$want" ]; then
        tail -n 20 "$out/$name.err" >&2
        echo "check-junit: lab $* exited $rc, expected $want" >&2
        exit 1
    fi
    local said
    said=$(sed -n 's/^lab: JUnit report: .* (\([0-9]*\) test case(s), \([0-9]*\) failed)$/\1:\2/p' "$out/$name.err")
    [ -n "$said" ] || { echo "check-junit: lab $* printed no JUnit report line" >&2; exit 1; }
    checked+=("$out/$name.xml:$said")
    echo "check-junit: lab $1 ... exited $rc; $name.xml: ${said%:*} case(s), ${said#*:} failed"
}

# 1. The team's example scenario: every threshold and the check hold.
run 0 sim-holds simulate examples/ci/gate.toml --out "$out/res"

# 2. The same outage with bounds that break: a threshold (99) and a check.
cat >"$out/breaks.toml" <<'TOML'
name = "breaks"
title = "Breaks"
description = "Down from 1 s to 2 s; bounds A cannot hold."

[[timeline]]
phase = "down"
start_s = 1.0
end_s = 2.0

[workload]
clients = 10
duration_s = 3

[policy]
strategies = ["A", "C"]

[[threshold]]
strategy = "A"
metric = "p99_ms"
less_than = 1

[[threshold]]
strategy = "C"
metric = "success_affected"
more_than = 0

[[check]]
strategy = "A"
metric = "attempts"
max = 1
TOML
run 99 sim-breaks simulate "$out/breaks.toml" --out "$out/res"
run 99 live-breaks run "$out/breaks.toml" --out "$out/res" --run-id live-breaks
run 99 analyze-breaks analyze "$out/res/live-breaks/breaks"

# 3. A live run an abort_after_s threshold stops early (an outage from 1 s to 7 s of 10 s).
cat >"$out/aborts.toml" <<'TOML'
name = "aborts"
title = "Aborts"
description = "Down from 1 s to 7 s; A's success must stay above 90%."

[[timeline]]
phase = "down"
start_s = 1.0
end_s = 7.0

[workload]
clients = 10
duration_s = 10

[policy]
strategies = ["A"]

[[threshold]]
strategy = "A"
metric = "success_affected"
more_than = 0.9
abort_after_s = 1
TOML
run 99 live-aborts run "$out/aborts.toml" --out "$out/res"
grep -q "run aborted by threshold" "$out"/res/latest/aborts/ABORTED.txt

# 4. An audit whose client does not meet a requirement (no --attempts: "other layers" WARNs).
run 99 audit audit --out "$out/audit" --require "other-layers=PASS" --require idempotency=PASS \
    -- python3 lab/tests/audit_clients/good.py

PYTHONPATH="$pydeps" python3 scripts/check-junit.py scripts/junit-schema/JUnit.xsd "$out" "${checked[@]}"
echo "check-junit: ${#checked[@]} JUnit files valid and read alike by junitparser and junit2html"
