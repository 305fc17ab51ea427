#!/usr/bin/env bash
# Schemathesis (PyPI) against the OpenAPI documents in docs/openapi/ (docs/api-contract.md):
# a `lab serve` running E03-A standalone, and a `lab hop` configured as a proxy to it. Every
# answer must be one the document lists (status, content type, headers, body schema), and both
# processes must still be running at the end (no crash). The model's 429/500/502/503/504 are
# documented answers, so schemathesis's "not a server error" check is left out; a status the
# document does not list fails status_code_conformance. POST /control/shutdown is not called.
# Usage: scripts/check-openapi.sh [EXAMPLES]   (default 100 generated calls per operation)
set -euo pipefail
cd "$(dirname "$0")/.."
examples=${1:-100}
pydeps=$(scripts/pydeps.sh 'schemathesis==3.39.16' 'hypothesis==6.123.2')
cargo build --quiet --locked -p lab
lab=target/debug/lab
tmp=$(mktemp -d /tmp/e03-openapi.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/serve" "$tmp/hop"
E03_SCENARIO=e03a RUST_LOG=warn "$lab" serve --listen 127.0.0.1:0 --control-listen 127.0.0.1:0 \
    --log-dir "$tmp/serve" >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
RUST_LOG=warn "$lab" hop --listen 127.0.0.1:0 --log-dir "$tmp/hop" >"$tmp/hop.out" 2>"$tmp/hop.err" &
pids+=($!)
for _ in $(seq 100); do
    [ -s "$tmp/serve.out" ] && [ -s "$tmp/hop.out" ] && break
    sleep 0.1
done
work=$(grep -o 'work=[0-9.:]*' "$tmp/serve.out" | head -1 | cut -d= -f2)
control=$(grep -o 'control=[0-9.:]*' "$tmp/serve.out" | head -1 | cut -d= -f2)
hop=$(grep -o 'work=[0-9.:]*' "$tmp/hop.out" | head -1 | cut -d= -f2)
if [ -z "$work" ] || [ -z "$control" ] || [ -z "$hop" ]; then
    echo "check-openapi: a process did not report its address" >&2
    cat "$tmp"/*.err >&2
    exit 1
fi
python3 - "$hop" "$work" <<'PY'
import json, sys, urllib.request
hop, work = sys.argv[1], sys.argv[2]
setup = {"layer": 1, "log": "openapi/layer-1.jsonl",
         "role": {"kind": "proxy", "upstream": f"http://{work}", "propagate": False,
                  "spec": {"name": "openapi", "attempts": 2, "timeout_ms": 1000, "backoff_ms": 0}}}
req = urllib.request.Request(f"http://{hop}/control/configure", data=json.dumps(setup).encode(),
                             headers={"content-type": "application/json"}, method="POST")
print(urllib.request.urlopen(req, timeout=5).read().decode())
PY
st() {
    local doc=$1 base=$2
    echo "== schemathesis: $doc against http://$base"
    PYTHONPATH="$pydeps" python3 -m schemathesis.cli run "docs/openapi/$doc" \
        --base-url "http://$base" --checks all --exclude-checks not_a_server_error \
        --exclude-path /control/shutdown --hypothesis-max-examples "$examples" \
        --hypothesis-seed 1 --request-timeout 10000 --no-color
}
st dependency-work.json "$work"
st dependency-control.json "$control"
st hop.json "$hop"
for pid in "${pids[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "check-openapi: process $pid ended during the run" >&2
        cat "$tmp"/*.err >&2
        exit 1
    fi
done
echo "check-openapi: every answer matched its document; both processes still running"
