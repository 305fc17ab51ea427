#!/usr/bin/env bash
# Runs deploy/stack.yml on a one-node Docker Swarm on loopback (docs/shards.md): a short E03-B,
# four dependencies, the client swarm as 4 replicas (shard "slot {{.Task.Slot}}/4" each) and the
# analyzer. The tasks share no folder: each sends its logs to the analyzer over HTTP
# (E03_SEND_LOGS), and only the analyzer mounts the results. Checks that the analyzer printed
# the tables with a row per shard of every strategy, every shard's attempts matched, one run per
# strategy, and that every server and shard log reached the analyzer's folder. It uses the image e03-lab:latest that
# scripts/test-compose.sh builds, or LAB_STACK_IMAGE (SKIPPED without it or without Docker). It leaves
# the engine as it found it: the stack removed, and a swarm it initialised left again.
#   scripts/check-stack.sh
set -euo pipefail
cd "$(dirname "$0")/.."
image=${LAB_STACK_IMAGE:-e03-lab:latest}
export LAB_STACK_IMAGE="$image"
if ! docker info >/dev/null 2>&1; then
    echo "SKIPPED: stack check: no Docker engine answers on this machine"
    exit 0
fi
if ! docker image inspect "$image" >/dev/null 2>&1; then
    echo "SKIPPED: stack check: no image $image (scripts/test-compose.sh builds it)"
    exit 0
fi
state=$(docker info --format '{{.Swarm.LocalNodeState}}')
made_swarm=0
case "$state" in
    inactive)
        docker swarm init --advertise-addr 127.0.0.1 --listen-addr 127.0.0.1:2377 >/dev/null
        made_swarm=1
        ;;
    active) ;;
    *)
        echo "SKIPPED: stack check: this engine's swarm is $state"
        exit 0
        ;;
esac
stack=e03check$$
results=$(mktemp -d /tmp/e03-stack.XXXXXX)
uid=$(id -u)
if [ "$uid" = 0 ]; then
    uid=1000
    chown 1000:1000 "$results"
fi
cleanup() {
    docker stack rm "$stack" >/dev/null 2>&1 || true
    for _ in $(seq 1 60); do
        [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack")" ] \
            && [ -z "$(docker network ls -q --filter "label=com.docker.stack.namespace=$stack")" ] \
            && break
        sleep 1
    done
    if [ "$made_swarm" = 1 ]; then
        docker swarm leave --force >/dev/null 2>&1 || true
    fi
    rm -rf "$results"
}
trap cleanup EXIT

start=$(date +%s)
LAB_STACK_RESULTS="$results" E03_UID="$uid" E03_GID="$uid" E03_CLIENTS=200 E03_DURATION_S=10 \
    E03_FREEZE_START_S=3 E03_FREEZE_END_S=5 E03_RECOVERY_END_S=7 \
    docker stack deploy -c deploy/stack.yml "$stack" >/dev/null 2>&1 \
    || { echo "check-stack: docker stack deploy failed" >&2; docker stack deploy -c deploy/stack.yml "$stack" >&2 || true; exit 1; }

# The analyzer's task ends when it has printed the tables (it waits for the runs to end).
analyzer_state=""
for _ in $(seq 1 360); do
    analyzer_state=$(docker service ps "${stack}_analyzer" --format '{{.CurrentState}} {{.Error}}' 2>/dev/null | head -n 1)
    case "$analyzer_state" in
        Complete*|Failed*|Rejected*|Shutdown*) break ;;
    esac
    sleep 1
done
out="$results/analyzer.txt"
docker service logs --raw "${stack}_analyzer" >"$out" 2>&1 || true
echo "check-stack: the stack ran in $(( $(date +%s) - start )) s; analyzer: $analyzer_state"
fail() {
    echo "check-stack: $*" >&2
    cat "$out" >&2
    for s in swarm dep-a; do
        docker service ps --no-trunc "${stack}_$s" >&2 || true
        docker service logs --raw "${stack}_$s" 2>&1 | tail -n 20 >&2 || true
    done
    exit 1
}
case "$analyzer_state" in
    Complete*|*"exit (3)"*) ;;   # 3: the tables were made, a check of this short run failed
    *) fail "the analyzer did not end with the tables ($analyzer_state)" ;;
esac
grep -q "Shards of the live runs" "$out" || fail "no shard table"
for s in swarm dep-a dep-b dep-c dep-d; do
    mounts=$(docker service inspect --format '{{range .Spec.TaskTemplate.ContainerSpec.Mounts}}{{.Type}} {{end}}' "${stack}_$s")
    case "$mounts" in
        *bind*|*volume*) fail "service $s mounts $mounts: only the analyzer may share the results" ;;
    esac
done
for s in A B C D; do
    rows=$(grep -cE "^\| $s seed 42 +\| +[0-3]/4 " "$out" || true)
    [ "$rows" = 4 ] || fail "strategy $s: $rows shard rows, expected 4"
    ok=$(grep -E "^\| $s seed 42 +\| +[0-3]/4 " "$out" | grep -c " ok |" || true)
    [ "$ok" = 4 ] || fail "strategy $s: $ok of 4 shards matched"
    grep -qE "^\| $s seed 42 .* ok \|$" "$out" || fail "strategy $s: the run's attempts did not all match"
    logs=$(ls "$results/stack/e03b" | grep -c "^client-$s-seed42-shard[0-3]of4.jsonl$" || true)
    [ "$logs" = 4 ] || fail "strategy $s: $logs shard logs sent to the analyzer"
    [ -f "$results/stack/e03b/server-$s-seed42.jsonl" ] || fail "strategy $s: no server log sent to the analyzer"
    grep -q "\"server-$s-seed42.jsonl\"" "$results/stack/e03b/logs.toml" \
        || fail "strategy $s: its server log is not in the list of logs the analyzer waits for"
done
grep -E "^\| [A-D] seed 42 +\| +[0-3]/4 " "$out"
echo "check-stack: 4 shards as Swarm mode tasks, 4 strategies, every attempt matched, every log sent over HTTP"
