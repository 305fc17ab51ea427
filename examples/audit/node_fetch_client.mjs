// A hand-written retry loop on Node's built-in fetch, as many services have one, audited by
// `lab audit`:
//
//     lab audit --attempts 4 -- node examples/audit/node_fetch_client.mjs
//
// Up to 3 retries of a 429 or any 5xx and of network errors, a fixed 500 ms between attempts
// (no growth, no jitter, Retry-After ignored), 2 s per attempt (AbortSignal.timeout), no
// idempotency key. Runs E03_OPERATIONS operations against E03_TARGET_URL with
// E03_TARGET_METHOD, naming each with x-e03-op.
const url = process.env.E03_TARGET_URL;
const method = process.env.E03_TARGET_METHOD ?? "GET";
const operations = Number(process.env.E03_OPERATIONS ?? "1");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function operation(name) {
  for (let attempt = 1; attempt <= 4; attempt++) {
    try {
      const res = await fetch(url, {
        method,
        body: method === "POST" ? "{}" : undefined,
        headers: { "x-e03-op": name },
        signal: AbortSignal.timeout(2000),
      });
      await res.arrayBuffer();
      if (res.status !== 429 && res.status < 500) return res.status;
    } catch (e) {
      // a timeout or a network error: retried
    }
    if (attempt < 4) await sleep(500);
  }
  return "gave up";
}

for (let n = 0; n < operations; n++) console.log(await operation(`op-${n}`));
