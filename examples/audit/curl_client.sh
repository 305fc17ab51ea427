#!/bin/sh
# curl's own retries, audited by `lab audit`:
#
#     lab audit --attempts 4 -- sh examples/audit/curl_client.sh
#     lab audit --attempts 4 -- sh examples/audit/curl_client.sh --retry-all-errors
#
# `--retry 3` retries what curl calls transient: a timeout, HTTP 408, 429, 500, 502, 503 and 504,
# waiting 1 s, then twice as long each time (no jitter), or what a Retry-After says.
# `--retry-all-errors` (with --fail) retries every error, a 404 included. Each attempt has 2 s
# (--max-time), and no retry starts 8 s or more after the first attempt (--retry-max-time). One Idempotency-Key per operation
# (curl resends the same request, headers and all), and x-e03-op names the operation.
# Runs E03_OPERATIONS operations against E03_TARGET_URL with E03_TARGET_METHOD.
#
# The body goes to a file of its own: with `--output /dev/null`, curl cannot truncate the output
# before a retry and stops with "(23) Failed to truncate file" instead of retrying.
set -u
body=$(mktemp)
trap 'rm -f "$body"' EXIT
n=0
while [ "$n" -lt "${E03_OPERATIONS:-1}" ]; do
    key=$(cat /proc/sys/kernel/random/uuid)
    data=""
    [ "${E03_TARGET_METHOD:-GET}" = POST ] && data="-d {}"
    # shellcheck disable=SC2086 # $data is empty or two words on purpose
    curl --silent --show-error --output "$body" --write-out '%{http_code}\n' \
        --request "${E03_TARGET_METHOD:-GET}" $data \
        --header "Idempotency-Key: $key" --header "x-e03-op: op-$n" \
        --max-time 2 --retry 3 --retry-max-time 8 "$@" "$E03_TARGET_URL"
    n=$((n + 1))
done
exit 0
