//! Item 5: attempts per operation (amplification), the retry budget under a long outage, and
//! other layers that retry, graded without the `x-e03-op` header.
//!
//! Operations are told apart by the probes' structure, not by the client's help:
//!
//! - **amplification** and **other layers** count the attempts of the backoff probe's copies:
//!   each copy is a client process asked for one operation (`E03_OPERATIONS=1`) against a path
//!   that always answers 503, so its attempts are one operation's;
//! - **budget** reads the outage probe, one process running 10 operations one after another
//!   against 503s: with `x-e03-op` on every attempt, per operation (the first third against the
//!   last); without it, by inference: the attempts per operation over the 10 the client was asked
//!   to run, against a fresh process's (the backoff copies'). A budget or a breaker shows as at
//!   most half of them. A client stopped at the limit without the header leaves it unsettled.

use std::collections::BTreeMap;

use e03_model::audit::{ProbeKind, ProbeRequest};

use super::card::{row, Row, Verdict};
use super::log::{stopped, Log};

const ADVICE_AMPLIFICATION: &str = "In an outage, each layer that retries 3 times sends 4 times \
     the load; bound retries with a budget or a breaker.";
const ADVICE_BUDGET: &str = "Give the client a retry budget (retries at most a tenth of requests) \
     or a circuit breaker, so that a long outage is not met with a full retry loop per operation.";
const ADVICE_LAYERS: &str = "Retry in one layer of the stack only, usually the outermost; turn \
     off or narrow a library's silent retries.";

/// How operations were told apart, as the rows say it.
const BY_PROCESS: &str =
    "operations told apart by process: each backoff copy is one client asked for 1 operation";

/// Attempts per operation of a fresh client: one per backoff copy that sent any.
fn fresh_ops(log: &Log) -> Vec<u32> {
    log.of("backoff")
        .iter()
        .map(|(_, r)| r.len() as u32)
        .filter(|&n| n > 0)
        .collect()
}

/// What the outage probe says about a budget.
pub(crate) struct Budget {
    pub falling: bool,
    verdict: Verdict,
    evidence: String,
}

/// Attempts per named operation in the outage probe, in order, when every attempt names one
/// (`x-e03-op`); None otherwise.
fn named_ops(reqs: &[&ProbeRequest]) -> Option<Vec<u32>> {
    if reqs.is_empty() || reqs.iter().any(|q| q.operation.is_none()) {
        return None;
    }
    let mut order: Vec<&str> = Vec::new();
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for q in reqs {
        let op = q.operation.as_deref().expect("checked");
        if !counts.contains_key(op) {
            order.push(op);
        }
        *counts.entry(op).or_default() += 1;
    }
    Some(order.iter().map(|o| counts[o]).collect())
}

fn outage_requests<'a>(log: &Log<'a>) -> Vec<&'a ProbeRequest> {
    let mut reqs: Vec<&ProbeRequest> = log
        .of("outage")
        .into_iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    reqs.sort_by_key(|q| q.arrived_us);
    reqs
}

/// The budget row's reading of the outage probe: PASS when the attempts per operation fall by
/// half (a budget or a breaker), WARN when they do not, or when it cannot be told.
pub(crate) fn budget(log: &Log) -> Budget {
    let asked = log
        .probes
        .iter()
        .find(|p| p.kind == ProbeKind::Outage)
        .map_or(1, |p| p.operations * p.instances);
    let reqs = outage_requests(log);
    let total = reqs.len() as u32;
    let cut = stopped(log, "outage");
    let fresh = fresh_ops(log);
    let fresh_mean =
        (!fresh.is_empty()).then(|| f64::from(fresh.iter().sum::<u32>()) / fresh.len() as f64);
    let warn = |evidence: String| Budget {
        falling: false,
        verdict: Verdict::Warn,
        evidence,
    };
    if reqs.is_empty() {
        return warn("no request in the long outage".into());
    }
    let stop_note = if cut {
        " (stopped at the probe's limit)"
    } else {
        ""
    };
    let (falling, evidence) = if let Some(mut per_op) = named_ops(&reqs) {
        let retries = total - per_op.len() as u32;
        // The operation the probe's limit stopped did not end: its attempts so far are no rate
        // (read as one, a client without a budget whose last operation was cut after 1 of its 4
        // attempts looked like "4.0 in the first third, 2.0 in the last").
        let stop_note = if cut {
            per_op.pop();
            " (stopped at the probe's limit: its last operation, cut short, left out)"
        } else {
            stop_note
        };
        let n = per_op.len();
        if n < 3 {
            return warn(format!(
                "{total} attempts in {n} operation(s){stop_note}: too few operations for a trend \
                 (operations told apart by x-e03-op)"
            ));
        }
        let third = n / 3;
        let avg = |v: &[u32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
        let (first, last) = (avg(&per_op[..third]), avg(&per_op[n - third..]));
        (
            last <= 0.5 * first,
            format!(
                "per operation {first:.1} attempts in the first third of {n} operations, \
                 {last:.1} in the last{stop_note}; {retries} retries in all (operations told \
                 apart by x-e03-op)"
            ),
        )
    } else if cut {
        return warn(format!(
            "stopped at the probe's limit after {total} attempts; without x-e03-op the operations \
             that ran cannot be told apart: not settled"
        ));
    } else {
        let Some(fresh_mean) = fresh_mean else {
            return warn(format!(
                "{total} attempts for {asked} operations, and no fresh client's count to compare \
                 with (the backoff probe got no request): not settled"
            ));
        };
        let mean = f64::from(total) / f64::from(asked.max(1));
        (
            mean <= 0.5 * fresh_mean,
            format!(
                "{total} attempts for the {asked} operations the client was asked to run: \
                 {mean:.1} per operation, against {fresh_mean:.1} for a process with one \
                 operation; {} retries in all (operations inferred: no x-e03-op, the count \
                 asked for)",
                total.saturating_sub(asked)
            ),
        )
    };
    if falling {
        Budget {
            falling,
            verdict: Verdict::Pass,
            evidence: format!("retries cut in a long outage: a budget or a breaker; {evidence}"),
        }
    } else {
        warn(format!("no budget or breaker seen; {evidence}"))
    }
}

/// The budget row.
pub(crate) fn budget_row(b: &Budget) -> Row {
    row(5, "budget", b.verdict, b.evidence.clone(), ADVICE_BUDGET)
}

/// Attempts per operation in a total outage: PASS at 2 or fewer, or when the budget row saw
/// retries cut (a budget or a breaker); WARN up to 4; FAIL above.
pub(crate) fn amplification(log: &Log, budget: &Budget) -> Row {
    let counts = fresh_ops(log);
    if counts.is_empty() {
        return row(
            5,
            "amplification",
            Verdict::Warn,
            "no request on the backoff probe".into(),
            ADVICE_AMPLIFICATION,
        );
    }
    let cut = stopped(log, "backoff");
    let mean = f64::from(counts.iter().sum::<u32>()) / counts.len() as f64;
    let most = counts.iter().copied().max().unwrap_or(0);
    let total: u32 = counts.iter().sum();
    let n = counts.len();
    let mut v = if mean <= 2.0 && !cut {
        Verdict::Pass
    } else if mean <= 4.0 {
        Verdict::Warn
    } else {
        Verdict::Fail
    };
    if budget.falling && v == Verdict::Warn {
        v = Verdict::Pass;
    }
    let floor = if cut { "at least " } else { "" };
    let trend = if budget.falling {
        "; in a long outage a budget or a breaker cuts them (row budget)"
    } else {
        ""
    };
    row(
        5,
        "amplification",
        v,
        format!(
            "{total} attempts for {n} failing operations: {floor}{mean:.1} per operation, at \
             most {most}{}{trend} ({BY_PROCESS})",
            if cut {
                " (stopped at the probe's limit)"
            } else {
                ""
            }
        ),
        ADVICE_AMPLIFICATION,
    )
}

/// FAIL when more attempts reached the dependency in one operation than the client claims to
/// make (`--attempts N`); WARN when no claim was given.
pub(crate) fn layers(log: &Log, claimed: Option<u32>) -> Row {
    let mut most = fresh_ops(log).into_iter().max().unwrap_or(0);
    if let Some(per_op) = named_ops(&outage_requests(log)) {
        most = most.max(per_op.into_iter().max().unwrap_or(0));
    }
    let (verdict, evidence) = match claimed {
        None => (
            Verdict::Warn,
            format!(
                "at most {most} attempts reached the dependency in one operation; give \
                 --attempts N (what the client says it makes) to check for another layer"
            ),
        ),
        Some(n) if most > n => (
            Verdict::Fail,
            format!(
                "{most} attempts reached the dependency in one operation; the client claims \
                 {n}: another layer retries too"
            ),
        ),
        Some(n) => (
            Verdict::Pass,
            format!("at most {most} attempts in one operation; the client claims {n}"),
        ),
    };
    row(5, "other layers", verdict, evidence, ADVICE_LAYERS)
}
