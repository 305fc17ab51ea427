#!/usr/bin/env python3
"""httpx 0.28.1 with httpx-retries 0.6.0's RetryTransport, audited by `lab audit` (docs/clients.md).

    lab audit --attempts 4 -- python3 examples/audit/httpx_retries_client.py

The README's configuration, Retry(total=5, backoff_factor=0.5), with total=3 as the other
clients. Its defaults: retries 429, 502, 503 and 504 and timeouts and network errors; POST is not
in allowed_methods, so a POST is never retried; Retry-After is honoured (seconds or date, at most
max_backoff_wait=120 s); the backoff is backoff_factor * 2 ** n times uniform(1 - backoff_jitter,
1) with backoff_jitter=1 ("full jitter"), n counting this retry (the transport increments before
it sleeps): uniform(0, 1), (0, 2), (0, 4) s. 2 s per attempt. Runs
E03_OPERATIONS operations against E03_TARGET_URL with E03_TARGET_METHOD, naming each with
x-e03-op.
"""
import os

import httpx
from httpx_retries import Retry, RetryTransport

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))

retry = Retry(total=3, backoff_factor=0.5)
with httpx.Client(transport=RetryTransport(retry=retry), timeout=2) as client:
    for n in range(OPERATIONS):
        try:
            r = client.request(METHOD, URL, headers={"x-e03-op": f"op-{n}"})
            print(r.status_code, flush=True)
        except httpx.HTTPError as e:
            print(type(e).__name__, flush=True)
