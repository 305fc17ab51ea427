#!/usr/bin/env python3
"""requests with urllib3's Retry, as its documentation shows it, audited by `lab audit`.

    lab audit --attempts 4 -- python3 examples/audit/urllib3_client.py

Retry(total=3, backoff_factor=0.1, status_forcelist=[429, 500, 502, 503, 504]) mounted on a
requests Session, a 2 s timeout per attempt. urllib3's defaults do the rest: Retry-After is
honoured on 413, 429 and 503; POST is not in `allowed_methods`, so a POST is never retried; the
backoff is backoff_factor * 2 ** (n - 1) with no jitter (urllib3 2.x; the first retry waits 0).
Runs E03_OPERATIONS operations against E03_TARGET_URL with E03_TARGET_METHOD, naming each with
x-e03-op.
"""
import os

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))

retry = Retry(total=3, backoff_factor=0.1, status_forcelist=[429, 500, 502, 503, 504])
session = requests.Session()
session.mount("http://", HTTPAdapter(max_retries=retry))

for n in range(OPERATIONS):
    try:
        r = session.request(METHOD, URL, timeout=2, headers={"x-e03-op": f"op-{n}"})
        print(r.status_code, flush=True)
    except requests.exceptions.RequestException as e:
        print(type(e).__name__, flush=True)
