#!/usr/bin/env python3
"""backoff 2.2.1 around requests, audited by `lab audit` (docs/clients.md).

    lab audit --attempts 4 -- python3 examples/audit/backoff_client.py

The README's example: @backoff.on_exception(backoff.expo, requests.exceptions.RequestException,
giveup=fatal_code), fatal_code giving up on any 4xx ("400 <= e.response.status_code < 500"), with
max_tries=4 (the README's other example has max_tries=8). expo's waits are 1, 2, 4 s, each drawn
by the default jitter, full_jitter: uniform(0, value). No Retry-After support, no idempotency
key. The README's fatal_code reads e.response, which a timeout has not (None): here it checks.
2 s per attempt. Runs E03_OPERATIONS operations against E03_TARGET_URL with E03_TARGET_METHOD,
naming each with x-e03-op.
"""
import os

import backoff
import requests

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


def fatal_code(e: requests.exceptions.RequestException) -> bool:
    return e.response is not None and 400 <= e.response.status_code < 500


@backoff.on_exception(
    backoff.expo, requests.exceptions.RequestException, max_tries=4, giveup=fatal_code
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
