//! Items 1 to 3 of the checklist: classification, idempotency, the attempt timeout and the
//! deadline.

use e03_model::audit::{ProbeKind, ProbeRequest};

use super::card::{row, Row, Verdict};
use super::log::{s, Log, Run};

const ADVICE_CLASSIFY: &str = "Retry only transient failures (408, 425, 429, 500, 502, 503, 504, \
     timeouts, resets, refused connections); raise 400, 401, 403, 404, 409 and 422 at once: the \
     same request gets the same answer.";
const ADVICE_IDEMPOTENCY: &str = "Make the idempotency key once per operation, not per attempt, \
     and send it with every retry of a write; without one, do not retry a POST.";
const ADVICE_TIMEOUT: &str = "Give every attempt a timeout.";
const ADVICE_DEADLINE: &str = "Give the whole retry loop a deadline.";

pub(crate) fn classification(log: &Log) -> Row {
    let mut parts = Vec::new();
    let mut verdict = Verdict::Pass;
    for p in log.named(|k| matches!(k, ProbeKind::Classify { .. })) {
        let ProbeKind::Classify { status } = p.kind else {
            continue;
        };
        let n: usize = log.of(&p.name).iter().map(|(_, r)| r.len()).sum();
        let what = match n {
            0 => {
                verdict = verdict.max(Verdict::Warn);
                "no request".to_string()
            }
            1 => "1 attempt".to_string(),
            n => {
                verdict = Verdict::Fail;
                format!("{n} attempts (retried)")
            }
        };
        parts.push(format!("{status}: {what}"));
    }
    row(
        1,
        "classification",
        verdict,
        parts.join(", "),
        ADVICE_CLASSIFY,
    )
}

pub(crate) fn idempotency(log: &Log) -> Row {
    let reqs: Vec<&ProbeRequest> = log
        .of("idempotency")
        .into_iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    let (verdict, evidence) = if reqs.is_empty() {
        (Verdict::Warn, "no request".to_string())
    } else if reqs.iter().all(|q| q.method != "POST") {
        (
            Verdict::Warn,
            format!(
                "the client sent {} instead of POST (E03_TARGET_METHOD)",
                reqs[0].method
            ),
        )
    } else {
        let charges = reqs.iter().filter(|q| q.charged).count();
        let mut keys: Vec<&str> = reqs
            .iter()
            .filter_map(|q| q.idempotency_key.as_deref())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let keyless = reqs.iter().filter(|q| q.idempotency_key.is_none()).count();
        let attempts = reqs.len();
        let said = format!(
            "{attempts} attempt{}, {} Idempotency-Key{}{}, {charges} charge{}",
            if attempts == 1 { "" } else { "s" },
            keys.len(),
            if keys.len() == 1 { "" } else { "s" },
            if keyless > 0 {
                format!(" ({keyless} attempts without one)")
            } else {
                String::new()
            },
            if charges == 1 { "" } else { "s" },
        );
        if charges <= 1 {
            let why = if attempts == 1 {
                "the POST was not retried"
            } else {
                "every retry carried the same key"
            };
            (Verdict::Pass, format!("{said}: {why}"))
        } else {
            let why = if keys.len() > 1 {
                "a new key per attempt"
            } else {
                "retried without a key"
            };
            (
                Verdict::Fail,
                format!("{said}: {why}, so the work was done {charges} times"),
            )
        }
    };
    row(2, "idempotency", verdict, evidence, ADVICE_IDEMPOTENCY)
}

/// The client was stopped by the lab, and this request ended with it (not before).
fn ended_by_the_stop(q: &ProbeRequest, run: Run) -> bool {
    run.stopped_at_limit && q.status.is_none() && q.ended_us + 300_000 >= run.ended_us
}

pub(crate) fn attempt_timeout(log: &Log) -> Row {
    let reqs = log.of("timeout");
    let limit = log
        .probes
        .iter()
        .find(|p| p.name == "timeout")
        .map_or(0, |p| p.limit_ms);
    let (verdict, evidence) = match reqs.first() {
        None => (Verdict::Warn, "no request".to_string()),
        Some((instance, r)) => {
            let first = r[0];
            let run = log.run("timeout", *instance);
            if ended_by_the_stop(first, run) || first.status.is_some() {
                (
                    Verdict::Fail,
                    format!(
                        "the first attempt got no answer and the client still waited for it \
                         when it was stopped at the probe's limit ({} s)",
                        limit / 1000
                    ),
                )
            } else {
                let gave_up = first.ended_us - first.arrived_us;
                let then = if r.len() > 1 {
                    format!(", then {} more attempt(s)", r.len() - 1)
                } else {
                    ", and did not retry".to_string()
                };
                let v = if gave_up <= 10_000_000 {
                    Verdict::Pass
                } else {
                    Verdict::Warn
                };
                (
                    v,
                    format!(
                        "gave up on an attempt with no answer after {}{then}",
                        s(gave_up)
                    ),
                )
            }
        }
    };
    row(3, "attempt timeout", verdict, evidence, ADVICE_TIMEOUT)
}

pub(crate) fn deadline(log: &Log) -> Row {
    let reqs = log.of("deadline");
    let (verdict, evidence) = match reqs.first() {
        None => (Verdict::Warn, "no request".to_string()),
        Some((instance, r)) => {
            let run = log.run("deadline", *instance);
            let start = r[0].arrived_us;
            let end = r.iter().map(|q| q.ended_us).max().unwrap_or(start);
            let kept = end - start;
            if run.stopped_at_limit {
                (
                    Verdict::Fail,
                    format!(
                        "{} attempt(s) with no answer; the operation was still alive when the \
                         client was stopped at the probe's limit, {} after its first attempt",
                        r.len(),
                        s(run.ended_us.saturating_sub(start))
                    ),
                )
            } else {
                let v = if kept <= 15_000_000 {
                    Verdict::Pass
                } else {
                    Verdict::Warn
                };
                (
                    v,
                    format!(
                        "{} attempt(s) with no answer; the operation ended {} after its first",
                        r.len(),
                        s(kept)
                    ),
                )
            }
        }
    };
    row(3, "deadline", verdict, evidence, ADVICE_DEADLINE)
}
