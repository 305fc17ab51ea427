//! The plain records a run's figures are made of: a class of operations' tally
//! ([`ClassTally`]), how one attempt ended ([`LineEnd`]) and the attempt log's lines
//! ([`AttemptLine`]), the sent attempts without an answer by class ([`NoAnswer`]), and the
//! breaker's and the balancer's changes ([`BreakerMark`], [`HostMark`]), and an operation's
//! end ([`OperationEnd`]).
//!
//! They read nothing of the crate. [`crate::metrics`] fills them in (and re-exports them where
//! they always were, `metrics::LineEnd` and so on); keeping them here leaves `metrics.rs` to
//! the accumulator and its result.

use serde::{Deserialize, Serialize};

use e03_model::attempt::Broken;
use e03_model::events::{OperationRecord, Outcome};
use e03_model::priority::Priority;
use e03_model::steps::Flow;
use e03_model::GiveUp;

/// Operations of one class, and how many of them succeeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassTally {
    pub operations: u64,
    pub succeeded: u64,
}

impl ClassTally {
    /// The share that succeeded; `None` without operations.
    pub fn success(&self) -> Option<f64> {
        (self.operations > 0).then(|| self.succeeded as f64 / self.operations as f64)
    }
}

/// How one attempt ended, for the attempt log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnd {
    Status(u16),
    Timeout,
    /// No HTTP answer: the connection failed, and how.
    Broken(Broken),
    /// Refused by a policy layer before sending.
    FailedFast,
    /// Not answered before the run ended.
    Unanswered,
    /// Cancelled: its hedged operation ended without it
    /// ([`AttemptEnd::Cancelled`](e03_model::events::AttemptEnd::Cancelled)).
    Cancelled,
}

impl From<e03_model::AttemptResult> for LineEnd {
    /// How a simulated attempt ended, as a line of the log says it.
    fn from(result: e03_model::AttemptResult) -> Self {
        match result {
            e03_model::AttemptResult::Status { code, .. } => LineEnd::Status(code),
            e03_model::AttemptResult::Timeout => LineEnd::Timeout,
            e03_model::AttemptResult::ConnectionError(b) => LineEnd::Broken(b),
        }
    }
}

/// Sent attempts without an HTTP answer, by how they ended (issue 27's outcome classes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoAnswer {
    /// No complete answer within the attempt's timeout.
    #[serde(default)]
    pub timeout: u64,
    #[serde(default)]
    pub connect_refused: u64,
    #[serde(default)]
    pub connect_timeout: u64,
    #[serde(default)]
    pub reset_before_answer: u64,
    #[serde(default)]
    pub reset_mid_body: u64,
    /// Connection failures of no other class.
    #[serde(default)]
    pub connection_error: u64,
}

impl NoAnswer {
    /// Counts one attempt's end (answers and unsent attempts count nothing).
    pub fn add(&mut self, end: LineEnd) {
        match end {
            LineEnd::Timeout => self.timeout += 1,
            LineEnd::Broken(b) => *self.of_mut(b) += 1,
            LineEnd::Status(_) | LineEnd::FailedFast | LineEnd::Unanswered | LineEnd::Cancelled => {
            }
        }
    }

    /// The count of one connection failure class.
    pub fn of(&self, b: Broken) -> u64 {
        match b {
            Broken::ConnectRefused => self.connect_refused,
            Broken::ConnectTimeout => self.connect_timeout,
            Broken::ResetBeforeAnswer => self.reset_before_answer,
            Broken::ResetMidBody => self.reset_mid_body,
            Broken::Other => self.connection_error,
        }
    }

    fn of_mut(&mut self, b: Broken) -> &mut u64 {
        match b {
            Broken::ConnectRefused => &mut self.connect_refused,
            Broken::ConnectTimeout => &mut self.connect_timeout,
            Broken::ResetBeforeAnswer => &mut self.reset_before_answer,
            Broken::ResetMidBody => &mut self.reset_mid_body,
            Broken::Other => &mut self.connection_error,
        }
    }

    /// Attempts whose connection failed, every class.
    pub fn broken(&self) -> u64 {
        Broken::ALL.iter().map(|&b| self.of(b)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.timeout == 0 && self.broken() == 0
    }
}

/// One attempt of a small run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptLine {
    pub client: u32,
    pub op: u32,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// When it left (or was refused), µs after time zero.
    pub sent_us: u64,
    /// When its answer came, µs after time zero.
    pub end_us: u64,
    pub end: LineEnd,
}

impl AttemptLine {
    /// An attempt that ended (or is yet to) at the instant it left: refused before it left, or
    /// just sent, its end to come.
    pub fn at(client: u32, op: u32, attempt: u32, t_us: u64, end: LineEnd) -> Self {
        AttemptLine {
            client,
            op,
            attempt,
            sent_us: t_us,
            end_us: t_us,
            end,
        }
    }
}

/// One state change of a strategy's circuit breaker.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BreakerMark {
    pub t_us: u64,
    pub from: e03_model::breaker::BreakerState,
    pub to: e03_model::breaker::BreakerState,
}

/// A replica left or re-entered the callers' balancer's rotation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostMark {
    pub t_us: u64,
    pub replica: u32,
    pub change: e03_model::balancer::Change,
}

/// An operation's end, as the client log's `operation` record and the simulator both tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationEnd {
    pub client: u32,
    pub op: u32,
    /// The step workload's flow (the rate-limit article); `None` for other workloads.
    pub flow: Option<Flow>,
    pub start_us: u64,
    pub end_us: u64,
    pub success: bool,
    /// Why it failed, if it did.
    pub reason: Option<GiveUp>,
    pub class: Priority,
}

impl OperationEnd {
    /// The client log's record.
    pub fn of(o: &OperationRecord) -> Self {
        OperationEnd {
            client: o.client,
            op: o.op,
            flow: o.flow,
            start_us: o.start_us,
            end_us: o.end_us,
            success: o.outcome == Outcome::Success,
            reason: o.reason,
            class: o.class,
        }
    }
}
