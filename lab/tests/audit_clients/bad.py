#!/usr/bin/env python3
"""A client that breaks every item of the retry-logic article's checklist, for `lab audit`'s tests.

Retries everything at once (5 attempts, no wait, no Retry-After), with no timeout and no
deadline, a new Idempotency-Key per attempt, and a hidden "transport layer" that retries a 503
once more, silently: 10 attempts per operation in an outage where the client says 5.
"""
import os
import urllib.error
import urllib.request
import uuid

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


def transport(req):
    for tries_left in (1, 0):
        try:
            with urllib.request.urlopen(req) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code != 503 or not tries_left:
                raise


def operation():
    for _ in range(5):
        body = b"{}" if METHOD == "POST" else None
        req = urllib.request.Request(URL, data=body, method=METHOD,
                                     headers={"Idempotency-Key": str(uuid.uuid4())})
        try:
            transport(req)
            return "ok"
        except Exception:  # noqa: BLE001
            continue
    return "gave up"


for _ in range(OPERATIONS):
    print(operation(), flush=True)
