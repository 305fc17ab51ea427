#!/usr/bin/env python3
"""retry2 0.9.5 (the maintained fork of `retry`) around requests, audited by `lab audit`
(docs/clients.md).

    lab audit --attempts 4 -- python3 examples/audit/retry2_client.py

@retry(requests.RequestException, tries=4, delay=1, backoff=2, on_exception=permanent): the
README's `delay=1, backoff=2` (waits 1, 2, 4 s, jitter=0 so none), bounded at 4 tries (the
default, -1, retries for ever). on_exception stops the retries when it returns True: here for a
4xx other than 429. No Retry-After, no idempotency key. 2 s per attempt. Runs E03_OPERATIONS
operations against E03_TARGET_URL with E03_TARGET_METHOD, naming each with x-e03-op.
"""
import os

import requests
from retry import retry

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


def permanent(e: Exception) -> bool:
    r = getattr(e, "response", None)
    return r is not None and 400 <= r.status_code < 500 and r.status_code != 429


@retry(requests.RequestException, tries=4, delay=1, backoff=2, on_exception=permanent)
def operation(name: str) -> int:
    r = requests.request(METHOD, URL, timeout=2, headers={"x-e03-op": name})
    r.raise_for_status()
    return r.status_code


for n in range(OPERATIONS):
    try:
        print(operation(f"op-{n}"), flush=True)
    except requests.RequestException as e:
        print(type(e).__name__, flush=True)
