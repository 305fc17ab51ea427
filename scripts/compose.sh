#!/usr/bin/env bash
# Runs Docker Compose v2 (`docker compose`) if present, else the v1 `docker-compose`.
#
# For `up`, it first checks what would otherwise fail in the middle of a run, before any
# container starts:
#   - uid 0 (E03_UID=0) is refused unless E03_ALLOW_ROOT=1: the containers stay non-root;
#   - ./results must be writable by the container user E03_UID:E03_GID (default 1000:1000);
#     if not, it says the command that fixes it;
#   - a named run (E03_RUN_ID=NAME) that already exists is refused unless E03_OVERWRITE=1.
# Every run gets a directory of its own, ./results/<run id>/: the swarm container claims it (the
# UTC start time unless E03_RUN_ID is set) and points ./results/latest at it, exactly as with
# plain `docker compose up`.
# It passes the host path of ./results to the containers (E03_HOST_RESULTS), so that the
# results line names a folder you can open, and when the swarm or the analyzer failed it prints
# their last log lines (Compose v1 shows only "exited with code 1").
set -uo pipefail
cd "$(dirname "$0")/.."

compose() {
    if docker compose version >/dev/null 2>&1; then
        docker compose "$@"
    elif command -v docker-compose >/dev/null 2>&1; then
        docker-compose "$@"
    else
        echo "compose: neither 'docker compose' nor 'docker-compose' is installed" >&2
        return 127
    fi
}

# The arguments before `up` (-f, -p ..) select the project; used again for `ps` and `logs`.
project=()
up=0
for a in "$@"; do
    if [ "$a" = up ]; then
        up=1
        break
    fi
    project+=("$a")
done
if [ "$up" = 0 ]; then
    compose "$@"
    exit $?
fi

uid=${E03_UID:-1000}
gid=${E03_GID:-1000}
if [ "$uid" = 0 ] && [ "${E03_ALLOW_ROOT:-0}" != 1 ]; then
    cat >&2 <<EOF
compose: E03_UID=0 would run the containers as root. Keep the default non-root user 1000:1000
and give it the results folder instead:
    sudo chown -R 1000:1000 results
or set E03_ALLOW_ROOT=1 to run as root on purpose.
EOF
    exit 2
fi
mkdir -p results || exit 1

# Can uid:gid write into results/? (the owner, group or other write and search bits)
writable() {
    local owner group mode
    read -r owner group mode < <(stat -c '%u %g %a' "$1") || return 1
    mode=$((8#$mode))
    [ "$uid" = 0 ] && return 0
    if [ "$owner" = "$uid" ]; then
        (( (mode & 8#300) == 8#300 ))
    elif [ "$group" = "$gid" ]; then
        (( (mode & 8#030) == 8#030 ))
    else
        (( (mode & 8#003) == 8#003 ))
    fi
}
if ! writable results; then
    read -r owner group mode < <(stat -c '%u:%g %g %a' results)
    cat >&2 <<EOF
compose: $(pwd)/results is not writable by the container user $uid:$gid (it belongs to
$owner, mode $mode); nothing was started. Give it to that user:
    sudo chown -R $uid:$gid results
(or run the containers as the folder's owner: E03_UID=<its non-root uid> E03_GID=<its gid>).
EOF
    exit 1
fi

if [ -n "${E03_RUN_ID:-}" ] && [ -e "results/$E03_RUN_ID" ] && [ "${E03_OVERWRITE:-0}" != 1 ]; then
    echo "compose: results/$E03_RUN_ID already exists; choose another E03_RUN_ID, or set" \
        "E03_OVERWRITE=1 to replace its logs (other files there are kept)" >&2
    exit 2
fi
export E03_HOST_RESULTS=${E03_HOST_RESULTS:-$(pwd)/results}
echo "compose: this run writes into $E03_HOST_RESULTS/${E03_RUN_ID:-<run id>}/" \
    "($E03_HOST_RESULTS/latest points at the newest run)"

compose "$@"
code=$?
for svc in swarm analyzer; do
    id=$(compose "${project[@]}" ps -q "$svc" 2>/dev/null)
    [ -n "$id" ] || continue
    status=$(docker inspect -f '{{.State.ExitCode}}' "$id" 2>/dev/null || echo "?")
    if [ "$status" != 0 ] && [ "$status" != "?" ]; then
        echo "compose: the $svc container failed (exit $status); its last lines:" >&2
        compose "${project[@]}" logs --no-color --tail 15 "$svc" >&2
        [ "$code" != 0 ] || code=1
        break
    fi
done
exit "$code"
