#!/usr/bin/env python3
"""tenacity 9.2.1 around requests, audited by `lab audit` (docs/clients.md).

    lab audit --attempts 4 -- python3 examples/audit/tenacity_client.py

@retry(stop=stop_after_attempt(4), wait=wait_random_exponential(multiplier=0.5, max=60)), the
wait of wait_random_exponential's docstring example ("corresponds to the 'Full Jitter'
algorithm"): uniform(0, 0.5 * 2 ** (n - 1)) before retry n. tenacity retries every exception
unless told otherwise and knows nothing of HTTP, so the operation decides what is transient
(`retry=retry_if_exception(transient)`: a timeout, a lost connection, 429 and 5xx); it has no
Retry-After support and no idempotency key. 2 s per attempt. Runs E03_OPERATIONS operations
against E03_TARGET_URL with E03_TARGET_METHOD, naming each with x-e03-op.
"""
import os

import requests
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_random_exponential

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


def transient(e: BaseException) -> bool:
    if isinstance(e, (requests.Timeout, requests.ConnectionError)):
        return True
    r = getattr(e, "response", None)
    return r is not None and (r.status_code == 429 or r.status_code >= 500)


@retry(
    stop=stop_after_attempt(4),
    wait=wait_random_exponential(multiplier=0.5, max=60),
    retry=retry_if_exception(transient),
    reraise=True,
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
