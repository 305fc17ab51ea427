#!/usr/bin/env python3
"""A client that follows the retry-logic article's checklist, for `lab audit`'s tests (standard library only).

Retries only transient failures (408, 425, 429, 500, 502, 503, 504, timeouts, resets), at most 4
attempts, each with a 1 s timeout, within a 6 s deadline; full-jitter exponential backoff (base
100 ms, cap 2 s); honours Retry-After (seconds or HTTP date); one Idempotency-Key per operation;
names each operation with x-e03-op; a retry budget of 3 tokens (a retry costs 1, a success
earns 0.1) stops retrying in a long outage.
"""
import email.utils
import os
import random
import socket
import time
import urllib.error
import urllib.request
import uuid

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))
TRANSIENT = {408, 425, 429, 500, 502, 503, 504}
MAX_ATTEMPTS, TIMEOUT, DEADLINE, BASE, CAP = 4, 1.0, 6.0, 0.1, 2.0
tokens = 3.0


def retry_after(value):
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())


def operation(name):
    global tokens
    key = str(uuid.uuid4())
    start = time.monotonic()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        left = DEADLINE - (time.monotonic() - start)
        if left <= 0:
            return "deadline"
        body = b"{}" if METHOD == "POST" else None
        req = urllib.request.Request(URL, data=body, method=METHOD,
                                     headers={"Idempotency-Key": key, "x-e03-op": name})
        wait = None
        try:
            with urllib.request.urlopen(req, timeout=min(TIMEOUT, left)) as r:
                r.read()
                tokens = min(10.0, tokens + 0.1)
                return "ok"
        except urllib.error.HTTPError as e:
            if e.code not in TRANSIENT:
                return f"failed {e.code}"
            wait = retry_after(e.headers.get("Retry-After"))
        except (urllib.error.URLError, socket.timeout, ConnectionError):
            pass
        if attempt == MAX_ATTEMPTS or tokens < 1:
            return "gave up"
        tokens -= 1
        if wait is None:
            wait = random.uniform(0, min(CAP, BASE * 2 ** attempt))
        if time.monotonic() - start + wait > DEADLINE:
            return "deadline"
        time.sleep(wait)
    return "gave up"


for n in range(OPERATIONS):
    print(operation(f"op-{n}"), flush=True)
