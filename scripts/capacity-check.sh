#!/usr/bin/env bash
# Capacity check of the dependency against a real load generator (wrk), outside the lab's own
# client: does a standalone dependency-service, driven well above its capacity, accept exactly
# `workers / service time` requests per second (250 by default) and answer the rest 503 at once?
#
# It builds the lab (release), starts one standalone dependency on loopback (ports chosen by
# the system) with no transient faults, drives it with wrk, stops it with SIGTERM and prints,
# from the server's own log:
#   - accepted (200) per second over the loaded span, against the configured capacity;
#   - rejections (503, cause full): count and how fast they were answered (p50/p99 of response
#     t_us - arrival t_us);
# plus wrk's own summary. Everything stays on 127.0.0.1 and is bounded in time.
#
# Usage: scripts/capacity-check.sh            (wrk -t2 -c200 -d10s)
#   WRK_THREADS, WRK_CONNECTIONS, WRK_DURATION_S override the load; KEEP=1 keeps the logs.
# Needs wrk (Debian package "wrk", installed here with apt-get when running as root) and python3.
# Exit codes: 0 done (figures printed, no verdict), 2 bad setting or missing tool, 1 failure.
set -euo pipefail

cd "$(dirname "$0")/.."

threads=${WRK_THREADS:-2}
connections=${WRK_CONNECTIONS:-200}
duration_s=${WRK_DURATION_S:-10}
for v in threads connections duration_s; do
    if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]] || ((${!v} > 600)); then
        echo "invalid ${v^^}=${!v}: expected a whole number from 1 to 600" >&2
        exit 2
    fi
done

if ! command -v wrk >/dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "== installing wrk (apt-get)"
        apt-get update -qq && apt-get install -y -qq wrk >/dev/null
    else
        echo "wrk is not installed: install it with 'sudo apt-get install wrk' (Debian/Ubuntu)" >&2
        exit 2
    fi
fi
if ! command -v python3 >/dev/null; then
    echo "python3 is needed to read the server log" >&2
    exit 2
fi

echo "== building the lab (release)"
cargo build --release -q -p lab
lab=target/release/lab

work=$(mktemp -d -t capacity-check.XXXXXX)
server_pid=
cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    if [[ ${KEEP:-0} == 1 ]]; then
        echo "logs kept in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

echo "== starting a standalone dependency (E03-A parameters, no transient faults)"
E03_FAIL_RATE=0 E03_SLOW_RATE=0 "$lab" serve --scenario e03a \
    --listen 127.0.0.1:0 --control-listen 127.0.0.1:0 --log-dir "$work/logs" \
    >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
addr=
for _ in $(seq 100); do
    addr=$(sed -n 's/^listening work=\([0-9.:]*\) .*/\1/p' "$work/server.out")
    [[ -n $addr ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [[ -z $addr || $addr != 127.0.0.1:* ]]; then
    echo "the dependency did not report a loopback address within 10 s:" >&2
    cat "$work/server.out" "$work/server.err" >&2
    exit 1
fi
echo "   work endpoint $addr"

echo "== wrk -t$threads -c$connections -d${duration_s}s http://$addr/work"
timeout $((duration_s + 30)) wrk -t"$threads" -c"$connections" -d"${duration_s}s" --latency \
    "http://$addr/work" | tee "$work/wrk.txt"

echo "== stopping the dependency (SIGTERM)"
kill -TERM "$server_pid"
for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
    echo "the dependency did not stop within 10 s of SIGTERM" >&2
    exit 1
fi
wait "$server_pid" || true
server_pid=

log=$(find "$work/logs" -name '*.jsonl' | head -n1)
if [[ -z $log ]]; then
    echo "no server log under $work/logs" >&2
    exit 1
fi

echo "== from the server log ($(basename "$log"))"
python3 - "$log" <<'PY'
import json
import sys

arrivals, oks, full, other = {}, [], [], {}
params = {}
for line in open(sys.argv[1]):
    ev = json.loads(line)
    kind, d = ev["type"], ev["data"]
    if kind == "run_start":
        params = d["params"]
    elif kind == "arrival":
        arrivals[d["seq"]] = d["t_us"]
    elif kind == "response":
        if d["status"] == 200:
            oks.append(d["t_us"])
        elif d["status"] == 503 and d["cause"] == "full":
            full.append(d["t_us"] - arrivals.get(d["seq"], d["t_us"]))
        else:
            key = f'{d["status"]} {d["cause"]}'
            other[key] = other.get(key, 0) + 1

configured = int(params["E03_WORKERS"]) / (float(params["E03_SERVICE_MS"]) / 1000)
print(f"arrivals {len(arrivals)}, 200 ok {len(oks)}, 503 full {len(full)}, other {other or 0}")
if len(oks) < 2:
    sys.exit("too few 200 answers to measure a rate")
oks.sort()
# Whole seconds from the first 200: the workers start together, so answers come in batches of
# `workers` and a span cut at a batch would count one batch too many or too few.
start, span_s = oks[0], (oks[-1] - oks[0]) / 1e6
per_s = {}
for t in oks:
    per_s[(t - start) // 1_000_000] = per_s.get((t - start) // 1_000_000, 0) + 1
whole = [per_s.get(i, 0) for i in range(int(span_s))]
if not whole:
    sys.exit(f"the 200 answers span only {span_s:.2f} s: too short to measure a rate")
rate = sum(whole) / len(whole)
print(f"accepted (200) {rate:.1f} req/s over {len(whole)} whole s vs configured "
      f"{configured:.1f} req/s (ratio {rate / configured:.4f})")
print(f"200 per second: min {min(whole)}, max {max(whole)}: {whole}")

def q(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


full.sort()
if full:
    print(f"rejections (503 full) {len(full)}, answered after arrival: "
          f"p50 {q(full, 0.5) / 1000:.3f} ms, p99 {q(full, 0.99) / 1000:.3f} ms, "
          f"max {full[-1] / 1000:.3f} ms")
else:
    print("no rejections: the load did not exceed workers + queue")
PY
