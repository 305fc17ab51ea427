//! `lab audit`'s scorecard: the retry-logic article's checklist, graded from the audit's log alone
//! (`audit.jsonl`, records of [`e03_model::audit`]).
//!
//! Each row answers one question of the seed's checklist with PASS, WARN or FAIL, the evidence
//! (counts and times from the log) and the seed's advice in one line. The thresholds, all in
//! `docs/audit.md`:
//!
//! - classification: FAIL when a 400, 404, 409 or 422 was sent again;
//! - idempotency: FAIL when one operation's POST was charged more than once (a retry without an
//!   `Idempotency-Key`, or with a new one);
//! - attempt timeout: PASS when the held first attempt was given up within 10 s, WARN later, FAIL
//!   when the client was stopped at the probe's limit still waiting;
//! - deadline: PASS when the client stopped within 15 s of its first attempt, WARN later, FAIL
//!   when stopped at the limit;
//! - backoff: the waits between attempts on a 503, across the backoff probe's 20 copies, grow
//!   (the upper envelope's last at least 1.5x its first) and are randomized (the best-fitting
//!   jitter is not "none"): PASS for both, WARN for one, FAIL for neither or for immediate
//!   retries (median wait under 20 ms, or under 100 ms without growth). The shape (growth, cap, jitter and the fit's confidence)
//!   is [`shape`]'s;
//! - Retry-After: over the Retry-After probes' copies, FAIL when a retry came more than 100 ms
//!   before the time the header gave, WARN when one came early by less (5 ms early still counts
//!   as on time: the two clocks) or when a copy did not retry;
//! - amplification: attempts per operation in a total outage, one client process per operation
//!   (the backoff copies): PASS at 2 or fewer or when the budget row sees retries cut; WARN up to
//!   4; FAIL above;
//! - budget: PASS when, in a long outage (10 operations in one process), the attempts per
//!   operation fall by half (named by `x-e03-op`, or inferred against a fresh process's); WARN
//!   otherwise (this row never FAILs: a missing budget is advice, not a fault);
//! - other layers: FAIL when more attempts reached the dependency in one operation than the
//!   client claims to make (`--attempts N`); WARN when no claim was given.
//!
//! The files: [`card`] the types, `log` the log indexed, `checks` items 1 to 3, `backoff` and
//! [`shape`] and `retry_after` item 4, `operations` item 5.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use e03_model::audit::AuditRecord;

mod backoff;
pub mod card;
mod checks;
mod log;
mod operations;
mod retry_after;
pub mod shape;

pub use card::{Row, Scorecard, Verdict};
use log::{Log, Run};

/// Reads an audit log.
pub fn read_log(path: &Path) -> anyhow::Result<Vec<AuditRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{} line {}", path.display(), i + 1))
        })
        .collect()
}

/// Grades the audit's log.
pub fn grade(records: &[AuditRecord]) -> Scorecard {
    let mut card = Scorecard {
        command: Vec::new(),
        claimed_attempts: None,
        complete: false,
        rows: Vec::new(),
    };
    let mut log = Log {
        probes: Vec::new(),
        requests: BTreeMap::new(),
        runs: BTreeMap::new(),
    };
    for r in records {
        match r {
            AuditRecord::AuditStart {
                probes,
                command,
                claimed_attempts,
            } => {
                log.probes.clone_from(probes);
                card.command.clone_from(command);
                card.claimed_attempts = *claimed_attempts;
            }
            AuditRecord::Request(q) => log
                .requests
                .entry((q.probe.as_str(), q.instance))
                .or_default()
                .push(q),
            AuditRecord::ClientRun {
                probe,
                instance,
                ended_us,
                stopped_at_limit,
                ..
            } => {
                log.runs.insert(
                    (probe.as_str(), *instance),
                    Run {
                        ended_us: *ended_us,
                        stopped_at_limit: *stopped_at_limit,
                    },
                );
            }
            AuditRecord::AuditEnd { complete } => card.complete = *complete,
        }
    }
    for list in log.requests.values_mut() {
        list.sort_by_key(|q| (q.arrived_us, q.attempt));
    }
    if !card.complete {
        return card;
    }
    let budget = operations::budget(&log);
    card.rows = vec![
        checks::classification(&log),
        checks::idempotency(&log),
        checks::attempt_timeout(&log),
        checks::deadline(&log),
        backoff::backoff(&log),
        retry_after::retry_after(&log),
        operations::amplification(&log, &budget),
        operations::budget_row(&budget),
        operations::layers(&log, card.claimed_attempts),
    ];
    card
}

#[cfg(test)]
mod tests;
