#!/usr/bin/env python3
"""opnieuw 4.0.0 around requests, audited by `lab audit` (docs/clients.md).

    lab audit --attempts 4 -- python3 examples/audit/opnieuw_client.py

The README's example: @retry(retry_on_exceptions=(ConnectionError, HTTPError),
max_calls_total=4, retry_window_after_first_call_in_seconds=60), with a 10 s window (60 s would
outlast the audit's probes) and raise_for_status(), without which the README's get_page never
raises HTTPError and no status is retried. opnieuw's one strategy is "a Full Jitter exponential
backoff": uniform(0, m * 2 ** n) with m = window / 7 for 4 calls (1.43 s). HTTPError is every
4xx and 5xx; a read timeout is not a ConnectionError, so it is not retried. No Retry-After, no
idempotency key. 2 s per attempt. Runs E03_OPERATIONS operations against E03_TARGET_URL with
E03_TARGET_METHOD, naming each with x-e03-op.
"""
import os

import requests
from opnieuw import retry
from requests.exceptions import ConnectionError, HTTPError

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


@retry(
    retry_on_exceptions=(ConnectionError, HTTPError),
    max_calls_total=4,
    retry_window_after_first_call_in_seconds=10,
)
def operation(name: str) -> int:
    r = requests.request(METHOD, URL, timeout=2, headers={"x-e03-op": name})
    r.raise_for_status()
    return r.status_code


for n in range(OPERATIONS):
    try:
        print(operation(f"op-{n}"), flush=True)
    except requests.RequestException as e:
        print(type(e).__name__, flush=True)
