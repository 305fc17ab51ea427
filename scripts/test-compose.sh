#!/usr/bin/env bash
# Brings the compose topology up for real through the offline path with short runs, TWICE with no
# E03_RUN_ID (once through scripts/compose.sh, once as plain `docker-compose up`, the README's
# command), and checks that each run got a directory of its own, results/<run id>/, holding a
# summary with every strategy for both scenarios, that each printed its results path (the host
# path through the script, ./results/<run id>/.. with plain compose), that a user's file in
# results/ survives, that the containers ran as non-root with a read-only root filesystem, no
# capabilities and no-new-privileges, that `down` leaves nothing running,
# and that scripts/compose.sh stops before any container starts when ./results is not writable
# by the container user or the uid is 0, and that the swarm printed a progress line every second.
# Then the chain scenario as containers: E03_SCENARIOS=amplification through the hop services
# hop-1..hop-6, checking the printed figures (27, 3, 243, PASS) and that the hop logs were
# written by the hop containers.
# Then slow-network through the fault proxy services wire-a..wire-d: the tables and checks printed,
# the wire logs written by the proxy containers.
# Then failover-45 with docker-compose.failover.yml: each strategy's two replicas as services of
# their own (dep-a/dep-a1, dep-c/dep-c1, dep-d/dep-d1), every attempt matched, its checks PASS.
# It starts with the standard Dockerfile, built with the legacy builder
# (scripts/build-standard-image.sh), and runs the default topology with that image once; the
# offline images then take that image's static binary (docker/offline/lab), so the lab is
# compiled once for both. It removes only what it made (its run directories, its file) and puts
# results/latest back as it was.
#   scripts/test-compose.sh          # everything above
#   scripts/test-compose.sh chain    # only a static build on the host and the chain run (about a minute)
#   scripts/test-compose.sh wire     # only a static build on the host and the slow-network run
#   scripts/test-compose.sh failover # only a static build on the host and the failover-45 run (about 2 min)
set -euo pipefail
only=${1:-all}
case "$only" in
    all|chain|wire|failover) ;;
    *) echo "test-compose: unknown argument '$only': expected nothing (every check), 'chain', 'wire' or 'failover'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
project=e03test$$
files=(-f docker-compose.yml -f docker-compose.offline.yml)
compose() { scripts/compose.sh -p "$project" "${files[@]}" "$@"; }
# The plain command, without the script: Compose v2 if present, else v1.
plain_compose() {
    if docker compose version >/dev/null 2>&1; then
        docker compose -p "$project" "${files[@]}" "$@"
    else
        docker-compose -p "$project" "${files[@]}" "$@"
    fi
}
cleanup() { compose down --remove-orphans >/dev/null 2>&1 || true; }
trap 'cleanup' EXIT

mkdir -p results
mode=$(stat -c '%a' results)
# The containers run as E03_UID (non-root), which does not own results/ here.
export E03_UID=10001 E03_GID=10001
unset E03_RUN_ID E03_OVERWRITE E03_HOST_RESULTS
old_latest=$(readlink results/latest 2>/dev/null || true)
user_file="results/e03test-user-file-$$.txt"
echo "a user's notes" >"$user_file"
runs=()
cleanup() {
    compose down --remove-orphans >/dev/null 2>&1 || true
    chmod "$mode" results
    for id in "${runs[@]}"; do rm -rf "results/$id"; done
    rm -f "$user_file"
    if [ -n "$old_latest" ]; then
        ln -sfn "$old_latest" results/latest
    elif [ -L results/latest ]; then
        rm -f results/latest
    fi
}

# Every service named exited 0 ($1 names the run in the message).
exited_0() {
    local what=$1 svc code
    shift
    for svc in "$@"; do
        code=$(docker inspect -f '{{.State.ExitCode}}' "$(compose ps -q "$svc")")
        if [ "$code" != 0 ]; then
            echo "test-compose: $what: $svc exited with $code" >&2
            exit 1
        fi
    done
}

# The run id results/latest points at, added to the runs to remove ($1 names the run).
latest_run() {
    local id
    id=$(readlink results/latest || true)
    case "$id" in
        ""|*/*|.*) echo "test-compose: $1: results/latest is not a run id: '$id'" >&2; exit 1 ;;
    esac
    echo "$id"
}

# The chain scenario as containers: the swarm configures hop-1..hop-6 per variant through their
# control call and is the top caller; the analyzer prints the [chain] tables from their logs.
chain_run() {
    local log=/tmp/e03-compose-up-chain-$$.log start run variant layer n file owner
    start=$(date +%s)
    E03_SCENARIOS=amplification compose up --no-color 2>&1 | tee "$log"
    echo "test-compose: chain compose run (E03_SCENARIOS=amplification) took $(( $(date +%s) - start )) s"
    exited_0 "chain run" swarm analyzer hop-1 hop-2 hop-3 hop-4 hop-5 hop-6
    run=$(latest_run "chain run") || exit 1
    runs+=("$run")
    # The analyzer's check table: exactly the published figures, PASS.
    for row in "every-layer 27" "top-only 3" "five-layers 243"; do
        set -- $row
        grep -qE "^analyzer[-_]1 +\| \| $1 +\| +bottom calls per top request +\| +published $2 +\| +$2 +\| +exact +\| +PASS +\|" "$log" \
            || { echo "test-compose: the chain run did not print $2 with PASS for $1" >&2; exit 1; }
    done
    grep -qE "^analyzer[-_]1 +\| .*client 3, gateway 3, order 9, inventory 27, stock 81, pricing 243, bottom 729" "$log" \
        || { echo "test-compose: the chain run did not print the calls per layer of five-layers" >&2; exit 1; }
    # The hop logs came from the containers: hop-L said it was configured as layer L with that
    # variant's log, and the log was written by the container user, with the expected calls.
    for row in "every-layer 4 81" "top-only 4 9" "five-layers 6 729"; do
        set -- $row
        variant=$1
        for layer in $(seq 1 "$2"); do
            grep -qE "^hop-${layer}[-_]1 +\| hop: configured as layer $layer .*, log $run/amplification/$variant/layer-$layer-" "$log" \
                || { echo "test-compose: hop-$layer did not say it ran layer $layer of $variant" >&2; exit 1; }
            file=$(ls "results/$run/amplification/$variant/layer-$layer-"*.jsonl)
            owner=$(stat -c %u "$file")
            if [ "$owner" != "$E03_UID" ]; then
                echo "test-compose: $file was written by uid $owner, not the containers' $E03_UID" >&2
                exit 1
            fi
        done
        n=$(wc -l <"results/$run/amplification/$variant/layer-$2-bottom.jsonl")
        if [ "$n" != "$3" ]; then
            echo "test-compose: $variant: the bottom container logged $n calls, expected $3" >&2
            exit 1
        fi
    done
    echo "test-compose: the chain ran as containers: 27, 3 and 243 bottom calls per request, PASS; hop logs in results/$run/amplification"
}

# The fault proxy as services of their own (issue 27, item 5): E03_SCENARIOS=slow-network, with
# the scenario's own settings (the short-run values are not passed), goes through wire-a and
# wire-c (its strategies are A and C); the analyzer prints its tables and checks from the logs,
# the proxy containers wrote the runs' wire logs, and every container exits 0.
wire_run() {
    local log=/tmp/e03-compose-up-wire-$$.log start run file owner added passed
    start=$(date +%s)
    (
        unset E03_CLIENTS E03_DURATION_S E03_THINK_MIN_MS E03_THINK_MAX_MS \
            E03_FREEZE_START_S E03_FREEZE_END_S E03_RECOVERY_END_S
        E03_SCENARIOS=slow-network compose up --no-color 2>&1 | tee "$log"
    )
    echo "test-compose: wire compose run (E03_SCENARIOS=slow-network) took $(( $(date +%s) - start )) s"
    exited_0 "wire run" swarm analyzer dep-a dep-b dep-c dep-d wire-a wire-b wire-c wire-d
    run=$(latest_run "wire run") || exit 1
    runs+=("$run")
    grep -qE "^analyzer[-_]1 +\| .*read timeouts, answer sent" "$log" \
        || { echo "test-compose: the wire run printed no 'read timeouts, answer sent' column" >&2; exit 1; }
    for id in A C; do
        grep -qE "^analyzer[-_]1 +\| \| $id[ |]" "$log" \
            || { echo "test-compose: the wire run printed no row for $id" >&2; exit 1; }
        file="results/$run/slow-network/wire-$id-seed42.jsonl"
        [ -s "$file" ] || { echo "test-compose: the wire run left no $file" >&2; exit 1; }
        owner=$(stat -c %u "$file")
        [ "$owner" = "$E03_UID" ] \
            || { echo "test-compose: $file was written by uid $owner, not the containers' $E03_UID" >&2; exit 1; }
        added=$(grep -c '"what":"toxic_added"' "$file" || true)
        [ "$added" = 3 ] || { echo "test-compose: $file holds $added toxics added, expected 3" >&2; exit 1; }
    done
    # Its six checks (read timeouts, those whose answer was sent, operations worked twice; A and
    # C) against the model of the same seed: all PASS.
    if grep -E "^analyzer[-_]1 +\|.*\| +FAIL +\|" "$log"; then
        echo "test-compose: a check of the wire run failed" >&2
        exit 1
    fi
    passed=$(grep -cE "^analyzer[-_]1 +\|.*\| +PASS +\|" "$log" || true)
    if [ "$passed" != 6 ]; then
        echo "test-compose: the wire run printed $passed checks with PASS, expected 6" >&2
        exit 1
    fi
    echo "test-compose: slow-network ran through the proxy services: 6 checks PASS, wire logs in results/$run/slow-network"
}

# Replicas as services of their own (issue 24): E03_SCENARIOS=failover-45 with the failover
# override, whose swarm targets each row's two replicas, with the scenario's own settings (the
# short-run values are not passed; 80 s of traffic). Every container exits 0, each replica's log
# was written by its container, every attempt of each row matched an arrival at one of its two
# replicas, and the scenario's four checks PASS.
failover_run() {
    local log=/tmp/e03-compose-up-failover-$$.log start run id r file owner passed matched
    fcompose() { compose -f docker-compose.failover.yml "$@"; }
    start=$(date +%s)
    (
        unset E03_CLIENTS E03_DURATION_S E03_THINK_MIN_MS E03_THINK_MAX_MS \
            E03_FREEZE_START_S E03_FREEZE_END_S E03_RECOVERY_END_S
        E03_SCENARIOS=failover-45 fcompose up --no-color 2>&1 | tee "$log"
    )
    echo "test-compose: failover compose run (E03_SCENARIOS=failover-45) took $(( $(date +%s) - start )) s"
    for svc in swarm analyzer dep-a dep-a1 dep-c dep-c1 dep-d dep-d1; do
        code=$(docker inspect -f '{{.State.ExitCode}}' "$(fcompose ps -q "$svc")")
        [ "$code" = 0 ] || { echo "test-compose: failover run: $svc exited with $code" >&2; exit 1; }
    done
    run=$(latest_run "failover run") || exit 1
    runs+=("$run")
    for id in no-retry C D; do
        for r in 0 1; do
            file="results/$run/failover-45/server-$id-seed42-replica$r.jsonl"
            [ -s "$file" ] || { echo "test-compose: the failover run left no $file" >&2; exit 1; }
            owner=$(stat -c %u "$file")
            [ "$owner" = "$E03_UID" ] \
                || { echo "test-compose: $file was written by uid $owner, not the containers' $E03_UID" >&2; exit 1; }
        done
    done
    matched=$(grep -cE "^analyzer[-_]1 +\| \| (no-retry|C|D) seed 42 .*\| +[0-9]+/[0-9]+ ok \|" "$log" || true)
    [ "$matched" = 3 ] || { echo "test-compose: the failover run matched every attempt in $matched rows of 3" >&2; exit 1; }
    if grep -E "^analyzer[-_]1 +\|.*\| +FAIL +\|" "$log"; then
        echo "test-compose: a check of the failover run failed" >&2
        exit 1
    fi
    passed=$(grep -cE "^analyzer[-_]1 +\|.*\| +PASS +\|" "$log" || true)
    [ "$passed" = 4 ] || { echo "test-compose: the failover run printed $passed checks with PASS, expected 4" >&2; exit 1; }
    fcompose down --remove-orphans
    echo "test-compose: failover-45 ran over six replica services: every attempt matched, 4 checks PASS, logs in results/$run/failover-45"
}

if [ "$only" = chain ] || [ "$only" = wire ] || [ "$only" = failover ]; then
    scripts/build-static.sh
    chmod 0777 results
    compose build
    "${only}_run"
    compose down --remove-orphans
    echo "test-compose: 1 passed, 0 failed ($only as containers, offline path)"
    exit 0
fi

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

# The standard Dockerfile, as a user's `docker compose up --build` builds it, but with the legacy
# builder (this machine has no BuildKit) from local stand-ins of its base images and vendored
# crates (scripts/build-standard-image.sh says which). Then the default topology,
# docker-compose.yml alone, runs once with that image.
scripts/build-standard-image.sh
std_project=e03std$$
std_compose() { docker-compose -p "$std_project" -f docker-compose.yml "$@"; }
cleanup_std() { std_compose down --remove-orphans >/dev/null 2>&1 || true; cleanup; }
trap 'cleanup_std' EXIT
std_log=/tmp/e03-compose-up-standard-$$.log
start=$(date +%s)
std_compose up --no-color 2>&1 | tee "$std_log"
echo "test-compose: standard-image compose run took $(( $(date +%s) - start )) s"
for svc in swarm analyzer; do
    code=$(docker inspect -f '{{.State.ExitCode}}' "$(std_compose ps -q "$svc")")
    if [ "$code" != 0 ]; then
        echo "test-compose: standard image: $svc exited with $code" >&2
        exit 1
    fi
done
for c in $(std_compose ps -q); do
    image=$(docker inspect -f '{{.Config.Image}}' "$c")
    if [ "$image" != e03-lab:latest ]; then
        echo "test-compose: standard run: container $c ran $image" >&2
        exit 1
    fi
done
if [ "$(docker image inspect -f '{{.Id}}' e03-lab:latest)" != "$(docker image inspect -f '{{.Id}}' e03-lab:standard)" ]; then
    echo "test-compose: e03-lab:latest is not the image the standard Dockerfile built" >&2
    exit 1
fi
std_run=$(readlink results/latest || true)
case "$std_run" in
    ""|*/*|.*) echo "test-compose: standard run: results/latest is not a run id: '$std_run'" >&2; exit 1 ;;
esac
runs+=("$std_run")
for id in A B C D; do
    grep -qE "^analyzer[-_]1 +\| \| $id[ |]" "$std_log" \
        || { echo "test-compose: the standard-image compose output has no table row for $id" >&2; exit 1; }
done
for scenario in e03a e03b; do
    [ -s "results/$std_run/$scenario/summary.json" ] \
        || { echo "test-compose: the standard run wrote no results/$std_run/$scenario/summary.json" >&2; exit 1; }
done
echo "test-compose: the standard Dockerfile's image ran the default topology: results/$std_run"
std_compose down --remove-orphans

# The offline path: FROM scratch images around the standard image's static binary (the one
# compile serves both; scripts/build-static.sh builds one on the host for a user without it).
mkdir -p docker/offline
std_container=$(docker create e03-lab:standard)
docker cp "$std_container:/lab" docker/offline/lab
docker rm "$std_container" >/dev/null
if ! ldd docker/offline/lab 2>&1 | grep -Eq 'statically linked|not a dynamic executable'; then
    echo "test-compose: the standard image's /lab is dynamically linked; a FROM scratch image cannot run it" >&2
    exit 1
fi
echo "test-compose: docker/offline/lab is the standard image's static binary ($(du -h docker/offline/lab | cut -f1))"
compose build

# One run; $1 is how it is started ("script" or "plain"). Sets run_id to the directory it made.
one_run() {
    local how=$1 log=/tmp/e03-compose-up-$1-$$.log start shown
    start=$(date +%s)
    # Plain `up`, as a user types it: it returns once every container has exited (the swarm
    # shuts the dependencies down when it is done; the analyzer exits after printing the tables).
    if [ "$how" = script ]; then
        compose up --no-color 2>&1 | tee "$log"
    else
        plain_compose up --no-color 2>&1 | tee "$log"
    fi
    echo "test-compose: $how compose run took $(( $(date +%s) - start )) s"
    exited_0 "$how run" swarm analyzer
    run_id=$(latest_run "$how run") || exit 1
    for seen in "${runs[@]}"; do
        if [ "$seen" = "$run_id" ]; then
            echo "test-compose: $how run reused the run directory $run_id" >&2
            exit 1
        fi
    done
    runs+=("$run_id")
    for id in A B C D; do
        grep -qE "^analyzer[-_]1 +\| \| $id[ |]" "$log" \
            || { echo "test-compose: the $how compose output has no table row for $id" >&2; exit 1; }
    done
    for scenario in e03a e03b; do
        if [ "$how" = script ]; then
            shown="results: $(pwd)/results/$run_id/$scenario"
        else
            shown="results: ./results/$run_id/$scenario"
        fi
        grep -qF "$shown" "$log" \
            || { echo "test-compose: the $how compose output does not say \"$shown\"" >&2; exit 1; }
    done
}
one_run script
first=$run_id
one_run plain
second=$run_id
echo "test-compose: two runs, two directories: results/$first and results/$second"

containers=$(compose ps -q)
checked=0
for c in $containers; do
    user=$(docker inspect -f '{{.Config.User}}' "$c")
    case "$user" in
        ""|0|0:*|root|root:*) echo "test-compose: container $c ran as root ($user)" >&2; exit 1 ;;
    esac
    # Hardening: read-only root filesystem, every capability dropped, no-new-privileges.
    name=$(docker inspect -f '{{.Name}}' "$c")
    ro=$(docker inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$c")
    capdrop=$(docker inspect -f '{{join .HostConfig.CapDrop ","}}' "$c")
    capadd=$(docker inspect -f '{{join .HostConfig.CapAdd ","}}' "$c")
    secopt=$(docker inspect -f '{{join .HostConfig.SecurityOpt ","}}' "$c")
    if [ "$ro" != true ]; then
        echo "test-compose: container $name has a writable root filesystem (ReadonlyRootfs=$ro)" >&2
        exit 1
    fi
    # The timer containers (the dependencies and the swarm) add SYS_NICE, and only it, for
    # real-time timers (docs/running.md); every other container adds nothing.
    case "$name" in
        *dep-[a-d]*|*swarm*) allowed=SYS_NICE ;;
        *) allowed="" ;;
    esac
    if [ "$capdrop" != ALL ] || { [ -n "$capadd" ] && [ "$capadd" != "$allowed" ] && [ "$capadd" != "CAP_$allowed" ]; }; then
        echo "test-compose: container $name does not drop every capability (CapDrop=$capdrop CapAdd=$capadd, allowed: ${allowed:-none})" >&2
        exit 1
    fi
    case ",$secopt," in
        *,no-new-privileges:true,*|*,no-new-privileges,*) ;;
        *) echo "test-compose: container $name lacks no-new-privileges (SecurityOpt=$secopt)" >&2; exit 1 ;;
    esac
    checked=$((checked + 1))
done
if [ "$checked" -lt 6 ]; then
    echo "test-compose: expected 6 containers to inspect, found $checked" >&2
    exit 1
fi
echo "test-compose: $checked containers ran non-root, read-only, with no capabilities but SYS_NICE for the timer containers, and no-new-privileges"

python3 - "$first" "$second" <<'PY'
import json, os, sys
for run in sys.argv[1:]:
    for scenario in ("e03a", "e03b"):
        s = json.load(open(f"results/{run}/{scenario}/summary.json"))
        got = sorted({r["strategy"] for r in s["runs"]})
        if got != ["A", "B", "C", "D"] or s["scenario"] != scenario:
            sys.exit(f"test-compose: {run}/{scenario} summary has strategies {got}")
        for r in s["runs"]:
            if r["total_requests"] <= 0 or r["operations"] <= 0:
                sys.exit(f"test-compose: {run}/{scenario} {r['strategy']}: empty run {r}")
        # Both sides' logs are in the run's own directory.
        for side in ("server", "client"):
            for strategy in got:
                if not os.path.exists(f"results/{run}/{scenario}/{side}-{strategy}-seed42.jsonl"):
                    sys.exit(f"test-compose: results/{run}/{scenario} has no {side} log of {strategy}")
        print(f"test-compose: {run}/{scenario} summary holds strategies {got}")
for stray in ("e03a", "e03b", "compose"):
    if os.path.exists(f"results/{stray}"):
        sys.exit(f"test-compose: a run wrote outside its run directory: results/{stray}")
PY
if [ "$(cat "$user_file")" != "a user's notes" ]; then
    echo "test-compose: the user's file $user_file did not survive" >&2
    exit 1
fi
echo "test-compose: the user's file in results/ survived both runs"

# Progress: the swarm printed a line at least every 2 s of traffic (6 s per scenario).
for scenario in e03a e03b; do
    n=$(grep -c "progress $scenario seed 42: " /tmp/e03-compose-up-script-$$.log || true)
    if [ "$n" -lt 3 ]; then
        echo "test-compose: the swarm printed $n progress lines for $scenario (expected one a second)" >&2
        exit 1
    fi
done
echo "test-compose: the swarm printed a progress line every second: $(grep -m1 "progress e03b seed 42: " /tmp/e03-compose-up-script-$$.log)"

chain_run
wire_run
failover_run

compose down --remove-orphans
left=$(docker ps -q --filter "label=com.docker.compose.project=$project")
if [ -n "$left" ]; then
    echo "test-compose: containers still running after down: $left" >&2
    exit 1
fi

echo "test-compose: 5 passed, 0 failed (offline path, chain as containers, wire proxies as containers, replicas as containers, standard Dockerfile)"
