#!/usr/bin/env python3
"""A plain retry loop written in Python, to measure *any* client against the dependency.

Start a standalone dependency-service (it runs the E03-B timeline from its own start), point
this at it, then let the analyzer compute the arrival profile from the service's log alone:

    lab serve --listen 127.0.0.1:8080 --log-dir logs &
    python3 examples/python_retry_client.py --url http://127.0.0.1:8080/work --seconds 16
    lab analyze --server-log logs/standalone/server-standalone.jsonl --out results/python-client

The loop is bounded: --clients threads, each running operations until --seconds have passed;
each operation tries up to 4 times with exponential backoff (100, 200, 400 ms, no jitter) on a
503 or a timeout. Standard library only.
"""
import argparse
import threading
import time
import urllib.error
import urllib.request


def operation(url, timeout, stats):
    for attempt in range(4):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                r.read()
                stats["ok"] += 1
                return
        except urllib.error.HTTPError as e:
            if e.code != 503:
                stats["failed"] += 1
                return
        except OSError:
            pass  # timeout or connection error: retryable
        stats["retries"] += attempt < 3
        time.sleep(0.1 * 2 ** attempt)
    stats["failed"] += 1


def client(url, until, think, timeout, stats):
    while time.monotonic() < until:
        operation(url, timeout, stats)
        time.sleep(think)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8080/work")
    p.add_argument("--clients", type=int, default=40)
    p.add_argument("--seconds", type=float, default=16.0)
    p.add_argument("--think", type=float, default=0.3, help="seconds between operations")
    p.add_argument("--timeout", type=float, default=2.0)
    a = p.parse_args()
    if not 1 <= a.clients <= 2000 or not 0 < a.seconds <= 600:
        p.error("--clients must be 1..2000 and --seconds in (0, 600]")
    stats = {"ok": 0, "failed": 0, "retries": 0}
    until = time.monotonic() + a.seconds
    threads = [threading.Thread(target=client, args=(a.url, until, a.think, a.timeout, stats))
               for _ in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"python client: {stats['ok']} ok, {stats['failed']} failed, {stats['retries']} retries")


if __name__ == "__main__":
    main()
