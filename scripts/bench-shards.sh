#!/usr/bin/env bash
# The scale benchmark of issue 23 (item 7; docs/shards.md): E03-B at ten times the clients and
# ten times the capacity (2,000 clients, 100 workers, a queue of 1,000), one strategy at a time
# (B, then C), each run's swarm as 4 processes (`--swarm-shards 4`, shard i/4 each). It prints
# the tables: per shard its attempts, their arrivals, whether they matched and its send
# lateness p99; then the live figures beside the simulator's (`lab compare`); then C's 100 ms
# peak over B's. The release build; about 2 minutes after the build on 2 cores.
#
#   scripts/bench-shards.sh [OUT]       # OUT default: results/bench-shards
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/bench-shards}
cargo build --release -p lab --locked --quiet
./target/release/lab compare e03b --strategies B,C --sequential --swarm-shards 4 \
    --clients 2000 --workers 100 --queue 1000 --out "$out"
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
summary = json.load(open(os.path.join(out, "latest", "e03b", "summary.json")))
peak = {r["strategy"]: r["peak_100ms"] for r in summary["runs"]}
shards = [s for r in summary["runs"] for s in r.get("shards", [])]
worst = max((s["send_late_p99_ms"] for s in shards), default=float("nan"))
matched = all(s["unmatched_client"] <= s["cancelled"] and s["unmatched_server"] == 0 for s in shards)
print(f"bench-shards: {len(shards)} shard runs, every attempt matched: {matched}; "
      f"worst shard send lateness p99 {worst:.2f} ms (target: at most 2 ms)")
print(f"bench-shards: 100 ms peak C {peak['C']} / B {peak['B']} = {peak['C'] / peak['B']:.2f} "
      f"(target: at most 0.7)")
PY
