#!/usr/bin/env python3
"""aiohttp 3.14.5 with aiohttp-retry 2.9.1's RetryClient, audited by `lab audit` (docs/clients.md).

    lab audit --attempts 3 -- python3 examples/audit/aiohttp_retry_client.py

The README's RetryClient with ExponentialRetry's defaults: attempts=3 in all, waits
start_timeout * factor ** attempt (0.2, then 0.4 s), no jitter; every 5xx retried
(retry_all_server_errors), no 4xx (statuses is empty, so 429 is not retried), no exception
(exceptions is empty, so a timeout is not retried); every method retried, POST included;
Retry-After is not read. No idempotency key. 2 s per attempt (aiohttp's own default is 300 s).
Runs E03_OPERATIONS operations against E03_TARGET_URL with E03_TARGET_METHOD, naming each with
x-e03-op.
"""
import asyncio
import os

import aiohttp
from aiohttp_retry import ExponentialRetry, RetryClient

URL = os.environ["E03_TARGET_URL"]
METHOD = os.environ.get("E03_TARGET_METHOD", "GET")
OPERATIONS = int(os.environ.get("E03_OPERATIONS", "1"))


async def main() -> None:
    timeout = aiohttp.ClientTimeout(total=2)
    async with RetryClient(
        raise_for_status=False, retry_options=ExponentialRetry(), timeout=timeout
    ) as client:
        for n in range(OPERATIONS):
            try:
                async with client.request(METHOD, URL, headers={"x-e03-op": f"op-{n}"}) as r:
                    await r.read()
                    print(r.status, flush=True)
            except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                print(type(e).__name__, flush=True)


asyncio.run(main())
