#!/usr/bin/env bash
# Brings the compose topology up for real through the offline path with a short run, checks that
# results/<run id>/ holds a summary with every strategy for both scenarios, that the containers ran
# as non-root, that `down` leaves nothing running, and that scripts/compose.sh stops before any
# container starts when ./results is not writable by the container user or the uid is 0.
set -euo pipefail
cd "$(dirname "$0")/.."
project=e03test
compose() { scripts/compose.sh -p "$project" -f docker-compose.yml -f docker-compose.offline.yml "$@"; }
cleanup() { compose down --remove-orphans >/dev/null 2>&1 || true; }
trap 'cleanup' EXIT

scripts/build-static.sh
mkdir -p results
mode=$(stat -c '%a' results)
# The containers run as E03_UID (non-root), which does not own results/ here.
export E03_UID=10001 E03_GID=10001
export E03_RUN_ID="e03test-$(date -u +%Y%m%d-%H%M%S)-$$"
cleanup() {
    compose down --remove-orphans >/dev/null 2>&1 || true
    chmod "$mode" results
    rm -rf "results/$E03_RUN_ID"
}

# Bad setups stop before any container starts, saying how to fix them.
chmod 0755 results
if [ "$(stat -c %u results)" != "$E03_UID" ]; then
    set +e
    compose up >/tmp/e03-compose-unwritable.log 2>&1
    code=$?
    set -e
    if [ "$code" = 0 ] || ! grep -q "sudo chown -R 10001:10001 results" /tmp/e03-compose-unwritable.log \
        || [ -n "$(compose ps -q)" ]; then
        echo "test-compose: an unwritable results/ did not stop compose up with the fix (exit $code):" >&2
        cat /tmp/e03-compose-unwritable.log >&2
        exit 1
    fi
    echo "test-compose: an unwritable results/ stops before any container: $(head -1 /tmp/e03-compose-unwritable.log)"
fi
set +e
E03_UID=0 compose up >/tmp/e03-compose-root.log 2>&1
code=$?
set -e
if [ "$code" != 2 ] || ! grep -q "E03_ALLOW_ROOT=1" /tmp/e03-compose-root.log || [ -n "$(compose ps -q)" ]; then
    echo "test-compose: E03_UID=0 was not refused (exit $code):" >&2
    cat /tmp/e03-compose-root.log >&2
    exit 1
fi
echo "test-compose: E03_UID=0 is refused (exit 2)"

# Let the container user write the bind-mounted results for the real run.
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
for scenario in e03a e03b; do
    shown="results: $(pwd)/results/$E03_RUN_ID/$scenario"
    grep -qF "$shown" /tmp/e03-compose-up.log \
        || { echo "test-compose: the compose output does not say \"$shown\"" >&2; exit 1; }
done

for c in $(compose ps -q); do
    user=$(docker inspect -f '{{.Config.User}}' "$c")
    case "$user" in
        ""|0|0:*|root|root:*) echo "test-compose: container $c ran as root ($user)" >&2; exit 1 ;;
    esac
done

python3 - <<'PY'
import json, os, sys
for scenario in ("e03a", "e03b"):
    s = json.load(open(f"results/{os.environ['E03_RUN_ID']}/{scenario}/summary.json"))
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
