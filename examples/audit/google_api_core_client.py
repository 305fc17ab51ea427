#!/usr/bin/env python3
"""google-api-core 2.44.0's Retry around requests, audited by `lab audit` (docs/clients.md).

    lab audit -- python3 examples/audit/google_api_core_client.py

retry.Retry(predicate=retry.if_transient_error) with its documented defaults: initial=1.0,
maximum=60.0, multiplier=2.0, timeout=120.0 s over the whole operation, and no limit on the
number of attempts (hence no --attempts). The answer becomes google-api-core's own exception
with exceptions.from_http_status(status, text), so its predicate classifies it: 500 (InternalServerError),
429 (TooManyRequests), 503 (ServiceUnavailable) and a lost connection are transient; 504, a read
timeout and every other 4xx are not. The sleep is exponential_sleep_generator's
uniform(0, delay) with delay = 1, 2, 4 ... s up to 60 ("Truncated Exponential Back-off"): full
jitter. Retry-After is not read; no idempotency key. 2 s per attempt. Runs E03_OPERATIONS
operations against E03_TARGET_URL with E03_TARGET_METHOD, naming each with x-e03-op.

Not exceptions.from_http_response(r): it reads the body as JSON and, when that is not an object
(the probes answer "503\n", a JSON number), raises AttributeError ('int' object has no attribute
'get') in format_http_response_error, which no retry predicate matches (docs/clients.md).
"""
import os

import requests
from google.api_core import exceptions, retry

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


@retry.Retry(predicate=retry.if_transient_error)
def operation(name: str) -> int:
    r = requests.request(METHOD, URL, timeout=2, headers={"x-e03-op": name})
    if r.status_code >= 400:
        raise exceptions.from_http_status(r.status_code, r.text)
    return r.status_code


for n in range(OPERATIONS):
    try:
        print(operation(f"op-{n}"), flush=True)
    except (exceptions.GoogleAPIError, requests.RequestException) as e:
        print(type(e).__name__, flush=True)
