//! Test-only: the helpers the machines' tests share (one wake's or one answer's [`Next`], a
//! session's config, a strategy, the answers), in one place now that those tests live beside
//! the machine each tests.

use std::time::Duration;

use crate::operation::{AttemptResult, Limits};
use crate::policy::Policies;
use crate::session::{AttemptId, SessionConfig, Starts};
use crate::strategy::Strategy;

use super::{Next, Workload};

pub(super) fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// One wake's [`Next`].
pub(super) fn wake(w: &mut dyn Workload, now: Duration, policy: &mut Policies) -> Next {
    let mut next = Next::default();
    w.on_wake(now, policy, &mut next);
    next
}

/// One answer's [`Next`].
pub(super) fn answer(
    w: &mut dyn Workload,
    id: AttemptId,
    result: AttemptResult,
    now: Duration,
    policy: &mut Policies,
) -> Next {
    let mut next = Next::default();
    w.on_answer(id, result, now, policy, &mut next);
    next
}

/// Every wake due by `now`, one call each, as a driver makes them (no answer between).
pub(super) fn wake_all(w: &mut dyn Workload, now: Duration, policy: &mut Policies) -> Next {
    let mut all = Next::default();
    while w.next_wake().is_some_and(|t| t <= now) {
        w.on_wake(now, policy, &mut all);
    }
    all
}

pub(super) fn config(starts: Starts, think_ms: u64) -> SessionConfig {
    SessionConfig {
        limits: Limits {
            max_attempts: 4,
            attempt_timeout: ms(100),
            deadline: ms(1000),
        },
        duration: ms(10_000),
        think: (ms(think_ms), ms(think_ms)),
        starts,
        max_ops: Some(2),
        best_effort_ppm: 0,
    }
}

pub(super) fn strategy(id: &str) -> Strategy {
    let budget = crate::budget::BudgetSpec::token_bucket(10.0, 0.1);
    Strategy::standard(id, ms(200), ms(2000), budget).unwrap()
}

pub(super) fn ok() -> AttemptResult {
    AttemptResult::Status {
        code: 200,
        retry_after: None,
    }
}

pub(super) fn unavailable() -> AttemptResult {
    AttemptResult::Status {
        code: 503,
        retry_after: None,
    }
}
