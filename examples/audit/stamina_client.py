#!/usr/bin/env python3
"""stamina 26.1.0 around httpx, audited by `lab audit` (docs/clients.md).

    lab audit --attempts 3 -- python3 examples/audit/stamina_client.py

The README's example as it is: @stamina.retry(on=httpx.HTTPError, attempts=3) around
httpx.get(...) then raise_for_status(). httpx.HTTPError covers every status error, 4xx included,
and every transport error. stamina's defaults do the rest: waits of
min(wait_max=5, 0.1 * 2 ** (n - 1) + uniform(0, wait_jitter=1)), a 45 s timeout over all
attempts. Retry-After is honoured only by a backoff hook that returns it (stamina's docstring),
which the README's example has not; no idempotency key. 2 s per attempt. Runs E03_OPERATIONS
operations against E03_TARGET_URL with E03_TARGET_METHOD, naming each with x-e03-op.
"""
import os

import httpx
import stamina

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


@stamina.retry(on=httpx.HTTPError, attempts=3)
def operation(name: str) -> int:
    r = httpx.request(METHOD, URL, timeout=2, headers={"x-e03-op": name})
    r.raise_for_status()
    return r.status_code


for n in range(OPERATIONS):
    try:
        print(operation(f"op-{n}"), flush=True)
    except httpx.HTTPError as e:
        print(type(e).__name__, flush=True)
