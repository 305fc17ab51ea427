//! The retry-logic article's figures (issue 12): duplicate charges from the ledger, lost responses that were
//! retried from the service's and the client's logs, and the waste of retrying permanent errors.
//!
//! [`LedgerTally`] is fed by [`crate::metrics::RunAccumulator`] from a live run's logs (arrival
//! identities, `lost` responses, attempts, operations, the ledger's `charge` records) or from the
//! simulator's observer (the same facts on the virtual clock). It is switched on only for runs
//! that can have these facts (a lost or permanent fault, or a charging strategy), so E03's runs
//! pay nothing for it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Whether `code` is a permanent error under the retry-logic article's rule: a 4xx other than 408, 425, 429.
pub fn is_permanent(code: u16) -> bool {
    (400..500).contains(&code) && !matches!(code, 408 | 425 | 429)
}

/// The retry-logic article's figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LedgerFigures {
    /// Charges the ledger committed.
    pub charges: u64,
    /// Charges beyond the first of each operation (from the ledger).
    pub duplicate_charges: u64,
    /// Answers lost after their commit (connection reset).
    pub lost_responses: u64,
    /// Of those, the ones whose operation sent another attempt (from the logs).
    pub retried_lost: u64,
    /// Operations that got a permanent answer (400, 404, 409, 422, ...).
    pub permanent_ops: u64,
    /// Attempts sent after the first permanent answer of their operation.
    pub retries_after_permanent: u64,
    /// Mean latency of the operations that got a permanent answer, ms (0 without any).
    pub permanent_op_mean_ms: f64,
}

impl LedgerFigures {
    /// Attempts wasted per operation that got a permanent answer (0 without any).
    pub fn wasted_per_permanent_op(&self) -> f64 {
        if self.permanent_ops == 0 {
            0.0
        } else {
            self.retries_after_permanent as f64 / self.permanent_ops as f64
        }
    }
}

/// What one operation (client, op) did.
#[derive(Debug, Default, Clone, Copy)]
struct OpFacts {
    /// Highest attempt number sent.
    max_attempt: u32,
    /// Charges committed for it.
    charges: u64,
    /// First attempt answered with a permanent error.
    first_permanent: Option<u32>,
    /// Latency, µs, once it ended.
    latency_us: Option<u64>,
}

/// Collects the retry-logic article's facts of one run; see the module docs.
#[derive(Debug, Default)]
pub struct LedgerTally {
    /// Identity of each request by its service sequence number (live) or request id (simulated).
    idents: HashMap<u64, (u32, u32, u32)>,
    /// Requests whose answer was lost.
    lost: Vec<u64>,
    ops: HashMap<(u32, u32), OpFacts>,
    charges: u64,
}

impl LedgerTally {
    /// Request `req` is attempt `attempt` of operation `op` of `client`, sent (it reached the
    /// dependency).
    pub fn sent(&mut self, req: Option<u64>, client: u32, op: u32, attempt: u32) {
        if let Some(req) = req {
            self.idents.insert(req, (client, op, attempt));
        }
        let f = self.ops.entry((client, op)).or_default();
        f.max_attempt = f.max_attempt.max(attempt);
    }

    /// Request `req`'s answer was lost after its commit.
    pub fn lost(&mut self, req: u64) {
        self.lost.push(req);
    }

    /// Attempt `attempt` of (client, op) was answered with `code`.
    pub fn answered(&mut self, client: u32, op: u32, attempt: u32, code: u16) {
        if is_permanent(code) {
            let f = self.ops.entry((client, op)).or_default();
            f.first_permanent = Some(f.first_permanent.map_or(attempt, |a| a.min(attempt)));
        }
    }

    /// Request `req` (recorded by [`Self::sent`]) was answered with `code`.
    pub fn answered_req(&mut self, req: u64, code: u16) {
        if let Some(&(client, op, attempt)) = self.idents.get(&req) {
            self.answered(client, op, attempt, code);
        }
    }

    /// The ledger committed a charge for (client, op), if it had an identity.
    pub fn charge(&mut self, client: Option<u32>, op: Option<u32>) {
        self.charges += 1;
        if let (Some(client), Some(op)) = (client, op) {
            self.ops.entry((client, op)).or_default().charges += 1;
        }
    }

    /// Operation (client, op) ended after `latency_us`.
    pub fn operation(&mut self, client: u32, op: u32, latency_us: u64) {
        self.ops.entry((client, op)).or_default().latency_us = Some(latency_us);
    }

    pub fn finish(self) -> LedgerFigures {
        let mut fig = LedgerFigures {
            charges: self.charges,
            lost_responses: self.lost.len() as u64,
            ..LedgerFigures::default()
        };
        for req in &self.lost {
            if let Some((client, op, attempt)) = self.idents.get(req) {
                if self
                    .ops
                    .get(&(*client, *op))
                    .is_some_and(|f| f.max_attempt > *attempt)
                {
                    fig.retried_lost += 1;
                }
            }
        }
        let mut latency_sum = 0u64;
        let mut latency_n = 0u64;
        for f in self.ops.values() {
            fig.duplicate_charges += f.charges.saturating_sub(1);
            if let Some(first) = f.first_permanent {
                fig.permanent_ops += 1;
                fig.retries_after_permanent += u64::from(f.max_attempt.saturating_sub(first));
                if let Some(l) = f.latency_us {
                    latency_sum += l;
                    latency_n += 1;
                }
            }
        }
        if latency_n > 0 {
            fig.permanent_op_mean_ms = latency_sum as f64 / latency_n as f64 / 1000.0;
        }
        fig
    }
}

/// The retry-logic article's table: one row per strategy and seed with its ledger and classification
/// figures; `None` when no run has them.
pub fn ledger_table(s: &crate::ScenarioSummary) -> Option<crate::table::Table> {
    let runs: Vec<_> = s
        .runs
        .iter()
        .filter_map(|r| r.ledger.as_ref().map(|l| (r, l)))
        .collect();
    if runs.is_empty() {
        return None;
    }
    let headers = [
        "strategy",
        "seed",
        "operations",
        "charges",
        "duplicate charges",
        "lost answers",
        "retried lost",
        "permanent failures",
        "retries after permanent",
        "per failure",
        "their mean latency (ms)",
    ];
    let rows = runs
        .iter()
        .map(|(r, l)| {
            vec![
                r.strategy.clone(),
                r.seed.to_string(),
                r.operations.to_string(),
                l.charges.to_string(),
                l.duplicate_charges.to_string(),
                l.lost_responses.to_string(),
                l.retried_lost.to_string(),
                l.permanent_ops.to_string(),
                l.retries_after_permanent.to_string(),
                format!("{:.2}", l.wasted_per_permanent_op()),
                format!("{:.1}", l.permanent_op_mean_ms),
            ]
        })
        .collect();
    let table = crate::table::Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    };
    // Only the halves the runs have: charges and lost answers, permanent errors, or both.
    let charging = runs
        .iter()
        .any(|(_, l)| l.charges > 0 || l.lost_responses > 0);
    let permanent = runs.iter().any(|(_, l)| l.permanent_ops > 0);
    let mut cols = vec![0, 1, 2];
    if charging || !permanent {
        cols.extend(3..7);
    }
    if permanent {
        cols.extend(7..11);
    }
    Some(table.select(&cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retried_lost_responses_and_duplicates_are_counted_apart() {
        let mut t = LedgerTally::default();
        // Op (0, 0): attempt 1 lost and retried, attempt 2 ok: two charges.
        t.sent(Some(0), 0, 0, 1);
        t.lost(0);
        t.charge(Some(0), Some(0));
        t.sent(Some(1), 0, 0, 2);
        t.charge(Some(0), Some(0));
        // Op (1, 0): its last attempt lost, not retried: one charge.
        t.sent(Some(2), 1, 0, 1);
        t.lost(2);
        t.charge(Some(1), Some(0));
        // A charge without identity counts as a charge only.
        t.charge(None, None);
        let f = t.finish();
        assert_eq!(
            (
                f.charges,
                f.duplicate_charges,
                f.lost_responses,
                f.retried_lost
            ),
            (4, 1, 2, 1)
        );
    }

    #[test]
    fn retries_after_a_permanent_answer_are_waste() {
        let mut t = LedgerTally::default();
        for attempt in 1..=3 {
            t.sent(None, 0, 0, attempt);
            t.answered(0, 0, attempt, 404);
        }
        t.operation(0, 0, 90_000);
        // A 503 then 429 then 200 is not permanent.
        for (attempt, code) in [(1, 503), (2, 429), (3, 200)] {
            t.sent(None, 0, 1, attempt);
            t.answered(0, 1, attempt, code);
        }
        t.operation(0, 1, 10_000);
        t.sent(None, 1, 0, 1);
        t.answered(1, 0, 1, 422);
        t.operation(1, 0, 30_000);
        let f = t.finish();
        assert_eq!((f.permanent_ops, f.retries_after_permanent), (2, 2));
        assert_eq!(f.wasted_per_permanent_op(), 1.0);
        assert_eq!(f.permanent_op_mean_ms, 60.0);
        assert!(is_permanent(400) && is_permanent(401) && is_permanent(409));
        assert!(!is_permanent(408) && !is_permanent(425) && !is_permanent(503));
    }
}
