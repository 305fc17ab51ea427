#!/usr/bin/env bash
# Is lab audit's backoff verdict independent of luck? (issue 53: under full jitter, eight copies'
# means gave PASS in one audit and WARN in the next.) Runs 20 audits of the lab's strategy C
# (exponential backoff with full jitter, `lab client --strategies C`) side by side, prints the
# count of each backoff verdict, jitter and growth named over the 20, and fails unless all 20
# say PASS with full jitter. Then audits strategies B, E and F once each and checks that the
# backoff row names their jitter: none, equal, decorrelated (e03-model/src/strategy.rs,
# Strategy::standard). docs/audit.md, "The shape of the backoff".
#
#   scripts/check-backoff-verdicts.sh [AUDITS]     (default 20; about 2 minutes on 2 cores)
#
# The audits start 2 s apart, so that they all run at the same time but their 20-copy backoff
# probes (20 client processes each, about 70 ms of CPU apiece in a debug build) do not all land
# in the same second: a machine too busy to wake a client on time adds its lateness to every
# wait, and that is the machine, not the client. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-20}
case $n in
'' | *[!0-9]*) echo "check-backoff-verdicts: AUDITS must be a number of audits, 1 to 50, not '$n'" >&2; exit 2 ;;
esac
if [ "$n" -lt 1 ] || [ "$n" -gt 50 ]; then
    echo "check-backoff-verdicts: AUDITS must be a number of audits, 1 to 50, not '$n'" >&2
    exit 2
fi
command -v python3 >/dev/null 2>&1 || { echo "check-backoff-verdicts: python3 is not installed" >&2; exit 1; }
cargo build -p lab --locked --quiet
lab=$PWD/target/debug/lab
out=$(mktemp -d /tmp/e03-backoff-verdicts.XXXXXX)
trap 'rm -rf "$out"' EXIT

audit() { # NAME STRATEGY: one audit in the background, its scorecard under $out/NAME
    (
        rc=0 # an audit with a FAIL (C's idempotency row) exits 1: recorded, not fatal here
        "$lab" audit --attempts 4 --out "$out/$1" -- "$lab" client --strategies "$2" \
            >"$out/$1.txt" 2>&1 || rc=$?
        echo "$rc" >"$out/$1.exit"
    ) &
    sleep 2
}
for i in $(seq 1 "$n"); do
    audit "C-$i" C
done
for s in B E F; do
    audit "$s" "$s"
done
wait

python3 - "$out" "$n" <<'EOF'
import collections, json, pathlib, re, sys

out, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])

def backoff_row(name):
    cards = [c for c in (out / name).glob("*/scorecard.json") if c.parent.name != "latest"]
    if len(cards) != 1:
        said = (out / f"{name}.txt").read_text()
        sys.exit(f"check-backoff-verdicts: {name}: no scorecard:\n{said}")
    rows = json.loads(cards[0].read_text())["rows"]
    return next(r for r in rows if r["check"] == "backoff")

def jitter(row):
    m = re.search(r"jitter (\w+)", row["evidence"])
    return m.group(1) if m else "?"

def growth(row):
    return re.split(r"[,(]", row["evidence"])[0].strip()

verdicts, jitters, growths = collections.Counter(), collections.Counter(), collections.Counter()
for i in range(1, n + 1):
    r = backoff_row(f"C-{i}")
    verdicts[r["verdict"]] += 1
    jitters[jitter(r)] += 1
    growths[growth(r)] += 1
    print(f"C-{i:<3} {r['verdict']:4} | {r['evidence']}")
show = lambda c: ", ".join(f"{k} {v}" for k, v in c.most_common())
print(f"\nstrategy C (full jitter), {n} audits of 20 copies each:")
print(f"  backoff verdict: {show(verdicts)}")
print(f"  jitter named:    {show(jitters)}")
print(f"  growth named:    {show(growths)}")
bad = verdicts["PASS"] != n or jitters["full"] != n
print("\nthe lab's other jitters, one audit each:")
for s, want in [("B", "none"), ("E", "equal"), ("F", "decorrelated")]:
    r = backoff_row(s)
    got = jitter(r)
    ok = got == want
    bad |= not ok
    print(f"  {s}: jitter {got} ({'ok' if ok else 'expected ' + want}) | {r['verdict']} | {r['evidence']}")
if bad:
    sys.exit("check-backoff-verdicts: a verdict or a jitter differs (above)")
print(f"\ncheck-backoff-verdicts: {n} of {n} audits of C say PASS with full jitter; B, E and F's jitters named")
EOF
