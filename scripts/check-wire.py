#!/usr/bin/env python3
"""Drives `lab proxy` with Toxiproxy's own Python client (PyPI `toxiproxy-python`), in front of a
real `lab serve`, and checks the effect in what the client measures and in the proxy's log.

    python3 scripts/check-wire.py LAB_BINARY WORK_DIR

1. a proxy in front of the dependency, created by the client (`Toxiproxy().create`);
2. a latency toxic of 100 ms: every GET /work through the proxy takes at least 100 ms more;
   then 20 ms over 200 GETs: the delay it adds at p50, p90 and p99 is printed, and a slicer's
   (10-byte pieces 1 ms apart) beside its waits;
3. `proxy.down()`: a connection is refused; after it, the proxy answers on the same port;
4. the log: every connection is a record, those made under the toxic name it, and every change
   (proxy created, toxic added, proxy updated) is a record;
5. during a run: `lab serve --scenario e03a --proxy-api ADDR` puts the proxy (named
   `dependency`) in front of a running dependency and serves its API; the client finds it, adds a
   100 ms latency of its own, and the run's logs show it: GETs 100 ms slower, the toxic added and
   removed in the run's proxy log (wire-*.jsonl) with the connections it applied to, and the
   requests in the run's server log.
Exit 0 when all hold, 1 otherwise (the first difference is printed).
"""
import glob
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

lab, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
log_path = os.path.join(work, "proxy.jsonl")


def start(args):
    p = subprocess.Popen([lab, *args], stdout=subprocess.PIPE, text=True)
    return p


def fail(msg):
    print(f"check-wire: {msg}")
    sys.exit(1)


serve = subprocess.Popen([lab, "serve", "--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0",
                          "--log-dir", os.path.join(work, "logs"), "--scenario", "none"],
                         stdout=subprocess.PIPE, text=True)
proxy = start(["proxy", "--api", "127.0.0.1:0", "--log", log_path])
try:
    api = proxy.stdout.readline().strip().removeprefix("listening api=")
    line = serve.stdout.readline().strip()
    work_addr = line.split("work=")[1].split()[0] if "work=" in line else None
    if not api or not work_addr:
        fail(f"no addresses: proxy {api!r}, serve {line!r}")
    APIConsumer.host, APIConsumer.port = api.split(":")[0], int(api.split(":")[1])
    t = Toxiproxy()
    if not t.running():
        fail("the Toxiproxy client does not see the proxy running")
    p = t.create(upstream=work_addr, name="dependency", listen="127.0.0.1:0")
    url = f"http://{p.listen}/work"

    def timed_get(target=None):
        start_t = time.monotonic()
        try:
            with urllib.request.urlopen(target or url, timeout=5) as r:
                r.read()
        except urllib.error.HTTPError as e:  # the dependency without a run answers 503
            e.read()
        return time.monotonic() - start_t

    base = min(timed_get() for _ in range(5))
    p.add_toxic(type="latency", attributes={"latency": 100, "jitter": 0})
    slow = [timed_get() for _ in range(5)]
    if min(slow) < base + 0.1 - 0.002:
        fail(f"latency 100 ms: GETs took {slow} s, the fastest without it {base:.4f} s")
    print(f"check-wire: latency 100 ms through Toxiproxy's client: {min(slow) * 1000:.1f} ms "
          f"at the fastest (without it {base * 1000:.1f} ms)")
    p.destroy_toxic("latency_downstream")
    # The latency toxic's accuracy over many requests (issue 27: "within 2 ms at p99 on
    # loopback"): printed, as a loaded machine's timers move the p99, and never early; the
    # proxy's own test (dependency-service/tests/proxy.rs) asserts its median.
    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(len(xs) * q))]
    plain = [timed_get() for _ in range(200)]
    p.add_toxic(type="latency", attributes={"latency": 20, "jitter": 0})
    held = [timed_get() for _ in range(200)]
    p.destroy_toxic("latency_downstream")
    if min(held) < 0.020:
        fail(f"latency 20 ms: a GET took {min(held) * 1000:.2f} ms, less than the toxic's delay")
    print("check-wire: latency 20 ms, 200 GETs with and without it (a connection each, as "
          "urllib opens them; the client's own wake-ups included): added "
          + ", ".join(f"p{int(q * 100)} {(pct(held, q) - pct(plain, q)) * 1000:.2f} ms"
                      for q in (0.5, 0.9, 0.99)))
    # A slicer's pieces, 10 bytes 1 ms apart, on an answer read whole (Connection: close):
    # never faster than its waits (one chunk's pieces minus one, less one for a second chunk),
    # and the time it added printed beside them.
    def raw_get():
        host, port = p.listen.split(":")
        start_t = time.monotonic()
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"GET /work HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            n = 0
            while chunk := s.recv(4096):
                n += len(chunk)
        return time.monotonic() - start_t, n
    bare = [raw_get()[0] for _ in range(50)]
    p.add_toxic(type="slicer", attributes={"average_size": 10, "size_variation": 0, "delay": 1000})
    sliced = [raw_get() for _ in range(50)]
    p.destroy_toxic("slicer_downstream")
    size = sliced[0][1]
    waits = (size + 9) // 10 - 1
    if min(t for t, _ in sliced) < (waits - 1) / 1000:
        fail(f"slicer: an answer of {size} bytes took {min(t for t, _ in sliced) * 1000:.2f} ms, "
             f"less than its {waits - 1} ms of waits")
    print(f"check-wire: slicer 10-byte pieces 1 ms apart on a {size}-byte answer ({waits} ms of "
          f"waits in one chunk): added p50 "
          f"{(pct([t for t, _ in sliced], 0.5) - pct(bare, 0.5)) * 1000:.2f} ms")
    with p.down():
        host, port = p.listen.split(":")
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            fail("a connection to a proxy that is down was accepted")
        except ConnectionRefusedError:
            pass
    timed_get()
    print("check-wire: proxy.down() refused connections; the proxy came back on its port")
finally:
    for proc in (proxy, serve):
        proc.terminate()
        proc.wait(timeout=10)

records = [json.loads(l) for l in open(log_path)]
conns = [r for r in records if r["event"] == "connection"]
changes = [r["what"] for r in records if r["event"] == "change"]
with_toxic = [c for c in conns if c["toxics"] == ["latency_downstream"]]
if len(conns) < 11 or len(with_toxic) < 1:
    fail(f"the log holds {len(conns)} connections, {len(with_toxic)} with the latency toxic: {conns}")
for want in ("proxy_created", "toxic_added", "toxic_removed", "proxy_updated"):
    if want not in changes:
        fail(f"no {want} record in the log: {changes}")
print(f"check-wire: the log holds {len(conns)} connections ({len(with_toxic)} under the latency "
      f"toxic) and the changes {changes}")

# 5. A user's Toxiproxy client during a run of `lab serve --proxy-api`.
run_logs = os.path.join(work, "run-logs")
serve = subprocess.Popen([lab, "serve", "--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0",
                          "--proxy-api", "127.0.0.1:0", "--log-dir", run_logs, "--scenario", "e03a",
                          "--timeline-start", "first-request"],
                         stdout=subprocess.PIPE, text=True)
try:
    line = serve.stdout.readline().strip()
    fields = dict(f.split("=", 1) for f in line.removeprefix("listening ").split() if "=" in f)
    if "work" not in fields or "proxy_api" not in fields:
        fail(f"lab serve --proxy-api named no work or proxy_api address: {line!r}")
    host, port = fields["proxy_api"].rsplit(":", 1)
    APIConsumer.host, APIConsumer.port = host, int(port)
    front = Toxiproxy().get_proxy("dependency")
    if front is None:
        fail("the Toxiproxy client finds no proxy named dependency in front of the run")
    run_url = f"http://{fields['work']}/work"
    base = min(timed_get(run_url) for _ in range(5))
    front.add_toxic(name="user-latency", type="latency", attributes={"latency": 100})
    slow = [timed_get(run_url) for _ in range(5)]
    front.destroy_toxic("user-latency")
    after = min(timed_get(run_url) for _ in range(5))
    # e03a's service time varies a little from request to request: 90 ms of the 100, and back.
    if min(slow) < base + 0.09 or after > base + 0.05:
        fail(f"during a run: GETs took {base:.4f} s, then {slow} s under the client's 100 ms, "
             f"then {after:.4f} s")
    print(f"check-wire: during a run of lab serve --proxy-api, the client's 100 ms latency: "
          f"{min(slow) * 1000:.1f} ms at the fastest (before {base * 1000:.1f} ms, after "
          f"{after * 1000:.1f} ms)")
finally:
    serve.terminate()
    serve.wait(timeout=10)

wire_logs = glob.glob(os.path.join(run_logs, "**", "wire-*.jsonl"), recursive=True)
server_logs = glob.glob(os.path.join(run_logs, "**", "server-*.jsonl"), recursive=True)
if len(wire_logs) != 1 or len(server_logs) != 1:
    fail(f"the run wrote {wire_logs} and {server_logs}: one proxy log and one server log expected")
records = [json.loads(l) for l in open(wire_logs[0])]
changes = [(r["what"], (r.get("toxic") or {}).get("name")) for r in records if r["event"] == "change"]
for want in (("toxic_added", "user-latency"), ("toxic_removed", "user-latency")):
    if want not in changes:
        fail(f"no {want} in the run's proxy log: {changes}")
under = [r for r in records if r["event"] == "connection" and "user-latency" in r["toxics"]]
if not under:
    fail(f"no connection of the run's proxy log ran under user-latency: {records}")
arrivals = sum(1 for l in open(server_logs[0]) if json.loads(l)["type"] == "arrival")
if arrivals < 15:
    fail(f"the run's server log holds {arrivals} arrivals, 15 GETs were sent")
print(f"check-wire: the run's proxy log holds the client's toxic ({changes}) and "
      f"{len(under)} connection(s) under it; its server log {arrivals} arrivals")
