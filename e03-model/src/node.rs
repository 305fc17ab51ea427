//! One dependency node: the schedule (the model and everything due around it), the ledger of
//! charges and the commit rule, as one state machine. It takes `now`, reads no clock and does no
//! IO. The live service (`dependency-service`'s run) drives it from tokio; the simulator drives
//! it from its event queue. Neither writes the commit rule again.
//!
//! The commit rule (the retry-logic article, docs/idempotency.md): a charge commits to the ledger when its work
//! ran, that is when its answer is `Ok`, `Slow` or `Lost` (a lost answer's work was done; only
//! the answer never reached the caller). A charge rejected, failed or held past a freeze commits
//! nothing. A commit either charges (a new line of the ledger) or, for an `Idempotency-Key`
//! committed before, answers the first charge's number (200) or refuses a reuse of the key for
//! another amount (422). The answer's status is the commit's.

use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::dependency::{Admission, Caller, ReqId, ServiceConfig};
use crate::events::Cause;
use crate::ledger::{Charge, ChargeRequest, Commit, Ledger};
use crate::schedule::{Answer, DependencySchedule, Step};

/// The dependency's schedule, its ledger, and the charges waiting for their work.
#[derive(Debug)]
pub struct DependencyNode {
    schedule: DependencySchedule,
    ledger: Ledger,
    /// The charges whose answers are not settled yet, by request.
    charges: FxHashMap<ReqId, ChargeRequest>,
}

/// An answer of the node, settled by the commit rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// The status to answer: the model's, or the commit's for a charge whose work ran.
    pub status: u16,
    /// The ledger's number for a committed charge (the new one, or its key's first).
    pub charge: Option<u64>,
    /// The ledger's new line, when this answer charged.
    pub charged: Option<Charge>,
}

impl DependencyNode {
    /// A fresh dependency at time zero, with an empty ledger.
    pub fn new(config: ServiceConfig) -> Self {
        Self {
            schedule: DependencySchedule::new(config),
            ledger: Ledger::new(),
            charges: FxHashMap::default(),
        }
    }

    pub fn schedule(&self) -> &DependencySchedule {
        &self.schedule
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The earliest instant something is due ([`DependencySchedule::next_due`]).
    pub fn next_due(&self) -> Option<Duration> {
        self.schedule.next_due()
    }

    /// A request arrives at `now`, with what its caller said of itself (its deadline, its
    /// class: [`DependencySchedule::arrive_by`]); a charge (`POST /charge`)
    /// waits here for its answer to settle.
    pub fn arrive(
        &mut self,
        now: Duration,
        req: ReqId,
        key: u64,
        caller: Caller,
        charge: Option<ChargeRequest>,
        out: &mut Vec<Step>,
    ) -> Admission {
        if let Some(charge) = charge {
            self.charges.insert(req, charge);
        }
        self.schedule.arrive_by(now, req, key, caller, out)
    }

    /// Everything due up to `now` ([`DependencySchedule::advance`]).
    pub fn advance(&mut self, now: Duration, out: &mut Vec<Step>) {
        self.schedule.advance(now, out);
    }

    /// The commit rule, applied to one answer of [`Self::arrive`] or [`Self::advance`]: a
    /// charge whose work ran commits at the answer's instant, and the answer takes the
    /// commit's status. Anything else keeps the model's status. Each answer is settled once.
    pub fn settle(&mut self, answer: &Answer) -> Settled {
        let mut settled = Settled {
            status: answer.status,
            charge: None,
            charged: None,
        };
        let Some(req) = self.charges.remove(&answer.req) else {
            return settled;
        };
        if matches!(answer.cause, Cause::Ok | Cause::Slow | Cause::Lost) {
            let commit = self.ledger.commit(answer.at, &req);
            settled.status = commit.status();
            settled.charge = Some(match &commit {
                Commit::Charged(c) => c.charge,
                Commit::Replayed { charge } | Commit::KeyReused { charge } => *charge,
            });
            if let Commit::Charged(charge) = commit {
                settled.charged = Some(charge);
            }
        }
        settled
    }

    /// The run ended: waiting requests and charges are dropped (their callers get nothing
    /// from the model any more); the freeze edges stay ([`DependencySchedule::end`]).
    pub fn end(&mut self) {
        self.schedule.end();
        self.charges.clear();
    }
}
