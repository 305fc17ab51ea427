//! Item 4, the Retry-After row: how early or late each retry came against the time the header
//! gave, in ms, over every copy of the four Retry-After probes, with the share of early ones
//! (dotnet/extensions #7001 is the kind of bug it shows: retries up to 11 ms early in about 10%
//! of cases).

use e03_model::audit::{ProbeKind, ProbeRequest};

use super::card::{row, Row, Verdict};
use super::log::Log;

const ADVICE_RETRY_AFTER: &str = "When the server says when to come back (Retry-After), set your \
     own backoff aside and wait that long.";

/// A retry this close before the time a `Retry-After` gave is on time: the client's clock and
/// the lab's, both read on this machine, differ by about a millisecond (an HTTP date is read
/// against the client's wall clock).
pub(crate) const ON_TIME_US: i64 = 5_000;

/// Early by more than this FAILs, µs.
const FAIL_EARLY_US: i64 = 100_000;

/// FAIL when a retry came more than 100 ms before the time the header gave; WARN when one came
/// early by less (more than 5 ms: the clocks), or a copy got no request or no retry.
pub(crate) fn retry_after(log: &Log) -> Row {
    let mut parts = Vec::new();
    let mut verdict = Verdict::Pass;
    // Offsets of every retry against its due time, µs (negative: early).
    let mut all: Vec<i64> = Vec::new();
    for p in log.named(|k| matches!(k, ProbeKind::RetryAfter { .. })) {
        let ProbeKind::RetryAfter { status, date } = p.kind else {
            continue;
        };
        let form = if date { "date" } else { "seconds" };
        let copies = log.of(&p.name);
        let mut offsets = Vec::new();
        let (mut silent, mut not_retried) = (p.instances as usize - copies.len(), 0);
        for (_, reqs) in &copies {
            match (reqs.first(), reqs.get(1)) {
                (None, _) => silent += 1,
                (Some(_), None) => not_retried += 1,
                (Some(first), Some(next)) => offsets.push(offset(first, next)),
            }
        }
        let mut what = Vec::new();
        if !offsets.is_empty() {
            offsets.sort_unstable();
            let ms = |us: i64| format!("{:+}", (us as f64 / 1000.0).round() as i64);
            let (lo, hi) = (offsets[0], offsets[offsets.len() - 1]);
            what.push(if lo == hi {
                format!("{} ms", ms(lo))
            } else {
                format!("{}..{} ms", ms(lo), ms(hi))
            });
            all.extend(&offsets);
        }
        if not_retried > 0 {
            verdict = verdict.max(Verdict::Warn);
            what.push(format!("{not_retried} not retried"));
        }
        if silent > 0 {
            verdict = verdict.max(Verdict::Warn);
            what.push(format!("{silent} no request"));
        }
        parts.push(format!("{status} {form}: {}", what.join(", ")));
    }
    let early: Vec<i64> = all.iter().copied().filter(|&o| o < -ON_TIME_US).collect();
    let summary = if all.is_empty() {
        "no retry came".to_string()
    } else {
        let mut sorted = all.clone();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2];
        let worst = early.iter().min().map_or(String::new(), |&w| {
            format!(", the earliest {} ms before", -w / 1000)
        });
        format!(
            "{} retries, median {:+.1} ms after the time given; early (more than 5 ms before): \
             {} of {} ({:.0}%){worst}",
            all.len(),
            median as f64 / 1000.0,
            early.len(),
            all.len(),
            100.0 * early.len() as f64 / all.len() as f64
        )
    };
    if early.iter().any(|&o| o < -FAIL_EARLY_US) {
        verdict = Verdict::Fail;
    } else if !early.is_empty() {
        verdict = verdict.max(Verdict::Warn);
    }
    row(
        4,
        "Retry-After",
        verdict,
        format!("{summary}; {}", parts.join(", ")),
        ADVICE_RETRY_AFTER,
    )
}

/// The retry's arrival against the time the first answer's `Retry-After` gave, µs.
fn offset(first: &ProbeRequest, next: &ProbeRequest) -> i64 {
    let due = first.not_before_us.unwrap_or(first.ended_us);
    next.arrived_us as i64 - due as i64
}
