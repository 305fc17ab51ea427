//! Why the dependency answered as it did: a log field ([`crate::events`]) and what the fault
//! model's costs depend on ([`crate::faults`]); a leaf of the model layer.

use serde::{Deserialize, Serialize};

/// Why the dependency answered as it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Served normally.
    Ok,
    /// Transient fault (E03-A): 503 after service time.
    Fault,
    /// Transient fault (E03-A): answered late.
    Slow,
    /// Workers and queue full: 503 at once.
    Full,
    /// Refused by deadline-aware admission: the caller's deadline had passed or would pass
    /// before the expected finish; 504 at once, no work done.
    Deadline,
    /// Dropped from the queue at its queue timeout ([`crate::dependency::QueuePolicy`]): 503
    /// then, no work done.
    QueueTimeout,
    /// Refused by the adaptive concurrency limit ([`crate::dependency::AimdLimit`]): 503 at
    /// once, no work done.
    Limited,
    /// Shed by priority admission ([`crate::dependency::AdmissionRule::Priority`]): a
    /// best-effort request over its share of the workers; 503 at once, no work done.
    Shed,
    /// Held by the freeze and released as 503 at its end.
    Freeze,
    /// The dependency is down (a `down` phase): its status at once, no work done.
    Down,
    /// Over the limit of a `rate_limited` phase: 429 with `Retry-After` at once, no work done.
    RateLimited,
    /// Lost response (the retry-logic article): the work was done and committed, then the connection was reset
    /// before the answer (whose status is logged) went out.
    Lost,
    /// Permanent error (the retry-logic article): the request is wrong in itself (400, 404, 409, 422), after
    /// its service time; nothing committed.
    Permanent,
    /// Timed out before any output (the rate-limit article): 504 after its service time, its input tokens
    /// paid.
    Timeout,
    /// Output cut off (the rate-limit article): 502 after its service time, its input and one output token
    /// paid.
    Cutoff,
    /// `lab proxy --http`: forwarded, and this is the upstream's answer.
    Upstream,
    /// `lab proxy --http`: answered by an abort fault (a phase's or an Envoy header's).
    Injected,
    /// `lab proxy --http`: the upstream could not be reached; 502 at once.
    Unreachable,
}

impl Cause {
    /// When the dependency's schedule sends an answer of this cause, after the end of the
    /// request's work ([`crate::dependency::Dependency::work_done`]): at once for a served, failed,
    /// lost, permanent, timed-out or cut-off answer; `slow_delay` later for a slow one
    /// ([`crate::faults::Fate::Slow`]); `None` for an answer no work's end times (refusals,
    /// freezes and downs, rate limits, and a proxy's answers). The one statement of that rule
    /// read back from an answer: the live run's answer lateness is measured against it.
    pub fn due_after_work(self, slow_delay: std::time::Duration) -> Option<std::time::Duration> {
        match self {
            Cause::Ok
            | Cause::Fault
            | Cause::Lost
            | Cause::Permanent
            | Cause::Timeout
            | Cause::Cutoff => Some(std::time::Duration::ZERO),
            Cause::Slow => Some(slow_delay),
            Cause::Full
            | Cause::QueueTimeout
            | Cause::Limited
            | Cause::Shed
            | Cause::Deadline
            | Cause::Freeze
            | Cause::Down
            | Cause::RateLimited
            | Cause::Upstream
            | Cause::Injected
            | Cause::Unreachable => None,
        }
    }

    /// Whether the request's work was done and committed: served (late or not) or lost after
    /// its commit ([`crate::faults::Fate::commits`], seen from the answer).
    pub fn committed(self) -> bool {
        matches!(self, Cause::Ok | Cause::Slow | Cause::Lost)
    }
}

/// What a client sees of a lost answer ([`Cause::Lost`]): the service aborts the connection
/// before the answer's head leaves, so the client's connection is reset before any answer. The
/// simulator ends a lost answer this way, and a live test
/// (`lab/tests/wire_outcomes.rs`) pins that the real client sees the same.
pub const LOST_ANSWER: crate::attempt::Broken = crate::attempt::Broken::ResetBeforeAnswer;
