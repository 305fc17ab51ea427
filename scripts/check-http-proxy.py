"""`lab proxy --http` in front of nginx, driven by urllib3's Retry (scripts/check-http-proxy.sh).

Usage: check-http-proxy.py LAB NGINX WORKDIR

1. nginx serves a static file on a free loopback port, logging every request it serves.
2. `lab proxy --http` stands in front of it with examples/proxy/outage-then-429.toml (503 from 1 s to 3 s,
   then 429 with Retry-After: 1 on the first attempt of each request id until 5 s), its timeline
   starting at the first request.
3. A urllib3 client with Retry(total=6, backoff_factor=0.2, status_forcelist=[429, 503],
   respect_retry_after_header=True) sends one request every 200 ms for 6.5 s, each with an
   x-request-id of its own; it counts its attempts from each answer's retry history.
4. Every attempt is accounted for on all three sides: the client's attempts equal the proxy's
   arrivals and its `proxied` records; the requests the proxy forwarded equal nginx's access
   log lines; the proxy answered the 503s and 429s the scenario says and nothing else.
5. `lab analyze --server-log` reads the proxy's log, titled with the scenario.
6. `lab audit --upstream` grades urllib3 in front of nginx (its successes and the idempotency
   probe's commit reach nginx) with the same verdicts as against the lab's own probes.
7. `lab run e03b --upstream` drives strategies A to D at nginx through a proxy each, E03-B's
   freeze and degraded phases applied by the proxies: every attempt matched to a proxy record,
   and nginx served exactly the requests the proxies forwarded.
8. The proxy's cost: 2,000 sequential GETs of the file on one keep-alive connection, directly
   and through the proxy (no scenario); p50 and p99 of each and the difference, printed.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import time

import urllib3
from urllib3.util.retry import Retry

LAB, NGINX, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "examples", "proxy", "outage-then-429.toml")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(msg):
    print(f"check-http-proxy: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def start_nginx():
    port = free_port()
    root = os.path.join(WORK, "www")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "item.json"), "w") as f:
        f.write('{"item": 1}\n')
    with open(os.path.join(root, "work"), "w") as f:  # the path the lab's swarm calls
        f.write("ok\n")
    conf = os.path.join(WORK, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""
daemon off;
worker_processes 1;
pid {WORK}/nginx.pid;
error_log {WORK}/nginx-error.log;
events {{ worker_connections 256; }}
http {{
    access_log {WORK}/access.log;
    client_body_temp_path {WORK}/body;
    proxy_temp_path {WORK}/proxy;
    fastcgi_temp_path {WORK}/fastcgi;
    uwsgi_temp_path {WORK}/uwsgi;
    scgi_temp_path {WORK}/scgi;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location = /charge {{ return 200 "{{\\"charged\\": true}}\\n"; }}
    }}
}}
""")
    proc = subprocess.Popen([NGINX, "-c", conf, "-p", WORK], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    fail("nginx did not start")


def start_proxy(upstream_port, log, scenario=True):
    args = [LAB, "proxy", "--http", "--listen", "127.0.0.1:0",
            "--upstream", f"http://127.0.0.1:{upstream_port}"]
    if scenario:
        args += ["--scenario", SCENARIO, "--timeline-start", "first-request", "--log", log]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening http="):
        fail(f"lab proxy printed {line!r}")
    return proc, line.split("=", 1)[1]


def records(path, kind):
    with open(path) as f:
        return [r["data"] for r in map(json.loads, f) if r["type"] == kind]


def stop(proc):
    proc.terminate()
    if proc.wait(timeout=15) not in (0, -15):
        fail(f"{proc.args[0]} exited {proc.returncode}")


def accounting(nginx_port):
    log = os.path.join(WORK, "proxy.jsonl")
    proxy, addr = start_proxy(nginx_port, log)
    retry = Retry(total=6, backoff_factor=0.2, status_forcelist=[429, 503],
                  allowed_methods=None, respect_retry_after_header=True,
                  raise_on_status=False)
    pool = urllib3.PoolManager(retries=retry)
    attempts, outcomes = 0, {}
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < 6.5:
        n += 1
        r = pool.request("GET", f"http://{addr}/item.json", headers={"x-request-id": f"r{n}"})
        attempts += len(r.retries.history) + 1
        outcomes[r.status] = outcomes.get(r.status, 0) + 1
        time.sleep(0.2)
    time.sleep(0.3)
    stop(proxy)
    arrivals = records(log, "arrival")
    proxied = records(log, "proxied")
    forwarded = [p for p in proxied if p.get("upstream_status") is not None]
    with open(os.path.join(WORK, "access.log")) as f:
        served = [line for line in f if "/item.json" in line]
    faults = {}
    for p in proxied:
        key = p.get("fault") or "forwarded"
        faults[key] = faults.get(key, 0) + 1
    print(f"check-http-proxy: urllib3: {n} requests, {attempts} attempts, final statuses "
          f"{dict(sorted(outcomes.items()))}; proxy: {len(arrivals)} arrivals, "
          f"{dict(sorted(faults.items()))}; nginx: {len(served)} requests served")
    if not (attempts == len(arrivals) == len(proxied)):
        fail(f"client attempts {attempts}, proxy arrivals {len(arrivals)}, "
             f"proxied records {len(proxied)}: expected all equal")
    if len(forwarded) != len(served):
        fail(f"the proxy forwarded {len(forwarded)}, nginx served {len(served)}")
    if not faults.get("down 503") or not faults.get("abort 429"):
        fail(f"expected both phases to answer: {faults}")
    if set(faults) - {"down 503", "abort 429", "forwarded"}:
        fail(f"a fault the scenario does not have: {faults}")
    if outcomes.get(200, 0) != n:
        fail(f"urllib3's retries should carry every request through 2 s of 503: {outcomes}")
    out = os.path.join(WORK, "analysis")
    a = subprocess.run([LAB, "analyze", "--server-log", log, "--out", out],
                       capture_output=True, text=True)
    if a.returncode != 0 or "503 for 2 s, then 429 with Retry-After: 1" not in a.stdout:
        fail(f"lab analyze: exit {a.returncode}\n{a.stdout}\n{a.stderr}")
    if f"| {len(arrivals)} |" not in a.stdout.replace("  ", " ").replace("  ", " "):
        fail(f"lab analyze does not count {len(arrivals)} arrivals:\n{a.stdout}")


def lab_run(nginx_port):
    """`lab run e03b --upstream`: strategies A to D through a proxy each, E03-B's timeline."""
    access = os.path.join(WORK, "access.log")
    before = sum(1 for line in open(access) if "GET /work " in line)
    out = os.path.join(WORK, "runs")
    r = subprocess.run([LAB, "run", "e03b", "--upstream", f"http://127.0.0.1:{nginx_port}/",
                        "--clients", "50", "--duration-s", "16", "--out", out],
                       capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        fail(f"lab run e03b --upstream: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    matched = [line for line in r.stdout.splitlines() if line.startswith("| ") and " seed 42 " in line]
    if len(matched) != 4 or not all(line.rstrip(" |").endswith("ok") for line in matched):
        fail(f"every attempt of A to D matched to a proxy record:\n{r.stdout}")
    run_dir = os.path.join(out, "latest", "e03b")
    forwarded = 0
    faults = {}
    for name in sorted(os.listdir(run_dir)):
        if name.startswith("server-") and name.endswith(".jsonl"):
            for p in records(os.path.join(run_dir, name), "proxied"):
                forwarded += p.get("upstream_status") is not None
                key = p.get("fault") or "forwarded"
                faults[key] = faults.get(key, 0) + 1
    served = sum(1 for line in open(access) if "GET /work " in line) - before
    print(f"check-http-proxy: lab run e03b --upstream nginx: A to D, every attempt matched; "
          f"the proxies {dict(sorted(faults.items()))}; nginx served {served}")
    if served != forwarded:
        fail(f"the proxies forwarded {forwarded}, nginx served {served}")
    if not faults.get("freeze") or not faults.get("degraded 50%"):
        fail(f"E03-B's freeze and degraded phases applied: {faults}")


def audit(nginx_port, pydeps):
    """`lab audit --upstream`: urllib3 graded in front of nginx, the same verdicts as alone."""
    access = os.path.join(WORK, "access.log")
    client = [sys.executable, os.path.join(HERE, "..", "examples", "audit", "urllib3_client.py")]
    env = dict(os.environ, PYTHONPATH=pydeps)
    verdicts = {}
    for name, extra in [("alone", []),
                        ("upstream", ["--upstream", f"http://127.0.0.1:{nginx_port}/charge"])]:
        before = sum(1 for line in open(access) if " /charge " in line)
        r = subprocess.run([LAB, "audit", "--attempts", "4", "--out",
                            os.path.join(WORK, f"audit-{name}")] + extra + ["--"] + client,
                           capture_output=True, text=True, timeout=300, env=env)
        rows = [line.split("|") for line in r.stdout.splitlines() if line.startswith("| ")
                and line.split("|")[1].strip().isdigit()]
        verdicts[name] = [(row[2].strip(), row[3].strip()) for row in rows]
        served = sum(1 for line in open(access) if " /charge " in line) - before
        if len(rows) < 8:
            fail(f"lab audit ({name}): exit {r.returncode}, no scorecard\n{r.stdout}\n{r.stderr}")
        if name == "upstream":
            posts = sum(1 for line in open(access) if "POST /charge " in line)
            if served == 0 or posts == 0:
                fail(f"nothing reached nginx through lab audit --upstream: {served}")
        print(f"check-http-proxy: lab audit ({name}) of urllib3: "
              + ", ".join(f"{c} {v}" for c, v in verdicts[name])
              + (f"; nginx served {served}" if name == "upstream" else ""))
    if verdicts["alone"] != verdicts["upstream"]:
        fail(f"lab audit --upstream gave other verdicts: {verdicts}")


def latencies(host, port, n):
    conn = http.client.HTTPConnection(host, port)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        conn.request("GET", "/item.json")
        r = conn.getresponse()
        r.read()
        out.append((time.perf_counter() - t) * 1000)
        if r.status != 200:
            fail(f"status {r.status}")
    conn.close()
    out.sort()
    return out[len(out) // 2], out[int(len(out) * 0.99)]


def overhead(nginx_port):
    proxy, addr = start_proxy(nginx_port, None, scenario=False)
    host, port = addr.rsplit(":", 1)
    latencies("127.0.0.1", nginx_port, 200)  # warm both
    latencies(host, int(port), 200)
    d50, d99 = latencies("127.0.0.1", nginx_port, 2000)
    p50, p99 = latencies(host, int(port), 2000)
    stop(proxy)
    print(f"check-http-proxy: 2000 sequential GETs on loopback (debug build): direct p50 "
          f"{d50:.3f} ms, p99 {d99:.3f} ms; through lab proxy --http p50 {p50:.3f} ms, p99 "
          f"{p99:.3f} ms: the proxy adds {p50 - d50:.3f} ms at p50, {p99 - d99:.3f} ms at p99")


def main():
    nginx, port = start_nginx()
    try:
        accounting(port)
        lab_run(port)
        audit(port, os.environ.get("PYTHONPATH", ""))
        overhead(port)
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
    print("check-http-proxy: ok")


main()
