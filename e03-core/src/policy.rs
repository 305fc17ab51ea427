//! A strategy's shared policy state: its retry budget (or throttle) and its circuit breaker,
//! one for all the clients of a strategy, as one library instance is shared by a service's
//! callers. Both drivers hold one [`ClientPolicy`] per strategy and pass it to the sessions.

use std::time::Duration;

use crate::breaker::{Breaker, BreakerState, Transition};
use crate::budget::{AnyBudget, AttemptClass, Rejection, RetryBudget, RetryCause};
use crate::strategy::Strategy;

/// The budget and the breaker of one strategy. The breaker sits inside the retry loop (every
/// attempt passes it, as in Polly's standard pipeline); the budget decides retries.
#[derive(Debug, Clone)]
pub struct ClientPolicy {
    budget: AnyBudget,
    breaker: Option<Breaker>,
}

impl ClientPolicy {
    /// The policy of `strategy` in a run with this seed (client-side throttling draws its
    /// rejections from a stream of the seed).
    pub fn new(strategy: &Strategy, seed: u64) -> Self {
        Self {
            budget: AnyBudget::from_spec_seeded(
                strategy.budget,
                crate::rng::mix64(seed ^ 0x7468_726f_7474_6c65),
            ),
            breaker: strategy.breaker.map(Breaker::new),
        }
    }

    /// The breaker's state changes since the last call (none without a breaker).
    pub fn take_transitions(&mut self) -> Vec<Transition> {
        self.breaker
            .as_mut()
            .map(Breaker::take_transitions)
            .unwrap_or_default()
    }

    /// The budget's tokens, if it keeps any ([`AnyBudget::tokens`]).
    pub fn budget_tokens(&self) -> Option<f64> {
        self.budget.tokens()
    }

    pub fn breaker_state(&self) -> Option<BreakerState> {
        self.breaker.as_ref().map(Breaker::state)
    }
}

impl RetryBudget for ClientPolicy {
    fn deposit(&mut self, now: Duration) {
        self.budget.deposit(now)
    }

    fn withdraw(&mut self, now: Duration, cause: RetryCause) -> bool {
        self.budget.withdraw(now, cause)
    }

    fn admit(&mut self, now: Duration, attempt: u32) -> Result<(), Rejection> {
        if let Some(b) = &mut self.breaker {
            b.admit(now)?;
        }
        self.budget.admit(now, attempt)
    }

    fn record(&mut self, now: Duration, attempt: u32, class: AttemptClass) {
        if let Some(b) = &mut self.breaker {
            b.record(now, class);
        }
        self.budget.record(now, attempt, class)
    }

    fn release(&mut self, now: Duration) {
        self.budget.release(now)
    }
}
