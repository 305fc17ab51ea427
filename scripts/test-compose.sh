#!/usr/bin/env bash
# Brings the compose topology up for real through the offline path with a short run, checks that
# results/ holds a summary with every strategy for both scenarios, that the containers ran as
# non-root, and that `down` leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
project=e03test
compose() { scripts/compose.sh -p "$project" -f docker-compose.yml -f docker-compose.offline.yml "$@"; }
cleanup() { compose down --remove-orphans >/dev/null 2>&1 || true; }
trap cleanup EXIT

scripts/build-static.sh
rm -rf results/e03a results/e03b
mkdir -p results
# The containers run as E03_UID (non-root); let that user write the bind-mounted results.
export E03_UID=10001 E03_GID=10001
chmod 0777 results

# A short run: 6 s of traffic per scenario with a 1 s freeze, 60 clients.
export E03_CLIENTS=60 E03_DURATION_S=6 E03_THINK_MIN_MS=300 E03_THINK_MAX_MS=600 \
    E03_FREEZE_START_S=2.5 E03_FREEZE_END_S=3.5 E03_RECOVERY_END_S=4.5
start=$(date +%s)
compose build
# Plain `up`, as a user types it: it returns once every container has exited (the swarm shuts
# the dependencies down when it is done; the analyzer exits after printing the tables).
compose up --no-color 2>&1 | tee /tmp/e03-compose-up.log
echo "test-compose: compose run took $(( $(date +%s) - start )) s"
for svc in swarm analyzer; do
    code=$(docker inspect -f '{{.State.ExitCode}}' "$(compose ps -q "$svc")")
    if [ "$code" != 0 ]; then
        echo "test-compose: $svc exited with $code" >&2
        exit 1
    fi
done
for id in A B C D; do
    grep -qE "^analyzer[-_]1 +\| \| $id +\|" /tmp/e03-compose-up.log \
        || { echo "test-compose: the compose output has no table row for $id" >&2; exit 1; }
done

for c in $(compose ps -q); do
    user=$(docker inspect -f '{{.Config.User}}' "$c")
    case "$user" in
        ""|0|0:*|root|root:*) echo "test-compose: container $c ran as root ($user)" >&2; exit 1 ;;
    esac
done

python3 - <<'PY'
import json, sys
for scenario in ("e03a", "e03b"):
    s = json.load(open(f"results/{scenario}/summary.json"))
    got = sorted({r["strategy"] for r in s["runs"]})
    if got != ["A", "B", "C", "D"] or s["scenario"] != scenario:
        sys.exit(f"test-compose: {scenario} summary has strategies {got}")
    for r in s["runs"]:
        if r["total_requests"] <= 0 or r["operations"] <= 0:
            sys.exit(f"test-compose: {scenario} {r['strategy']}: empty run {r}")
    print(f"test-compose: {scenario} summary holds strategies {got}")
PY

compose down --remove-orphans
left=$(docker ps -q --filter "label=com.docker.compose.project=$project")
if [ -n "$left" ]; then
    echo "test-compose: containers still running after down: $left" >&2
    exit 1
fi
echo "test-compose: 1 passed, 0 failed"
