//! A strategy's shared policy state: its retry budget (or throttle), its circuit breaker and
//! its client-side concurrency limit, one for all the clients of a strategy, as one library
//! instance is shared by a service's callers. Both drivers hold one [`ClientPolicy`] per strategy and pass it to the sessions.

use std::time::Duration;

use crate::adaptive::ClientRateLimiter;
use crate::breaker::{Breaker, BreakerState, Transition};
use crate::budget::{AnyBudget, AttemptClass, Rejection, RetryBudget, RetryCause};
use crate::hedge::{HedgeDelay, HedgeSpec, LatencyRecord};
use crate::limit::{ClientLimiter, ClientSample};
use crate::strategy::Strategy;

/// The budget and the breaker of one strategy. The breaker sits inside the retry loop (every
/// attempt passes it, as in Polly's standard pipeline); the budget decides retries.
#[derive(Debug, Clone)]
pub struct ClientPolicy {
    budget: AnyBudget,
    breaker: Option<Breaker>,
    limiter: Option<ClientLimiter>,
    rate: Option<ClientRateLimiter>,
    /// The good answers' round trips, for a hedging percentile delay.
    latencies: Option<LatencyRecord>,
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
            limiter: strategy.client_limit.as_ref().map(ClientLimiter::new),
            rate: strategy.adaptive_rate.then(ClientRateLimiter::new),
            latencies: strategy
                .hedge
                .filter(|h| matches!(h.delay, HedgeDelay::Percentile { .. }))
                .map(|_| LatencyRecord::new()),
        }
    }

    /// The client-side concurrency limit now, if the strategy has one.
    pub fn client_limit(&self) -> Option<u32> {
        self.limiter.as_ref().map(ClientLimiter::limit)
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

    /// The concurrency limit first (an attempt it refuses reaches neither the breaker nor the
    /// budget, as the library's limiter sits outside the call), then the breaker, then the
    /// budget; the limit counts the attempt only once all three let it go.
    fn admit(&mut self, now: Duration, attempt: u32) -> Result<(), Rejection> {
        if self.limiter.as_ref().is_some_and(|l| !l.has_room()) {
            return Err(Rejection::ConcurrencyLimited);
        }
        if let Some(b) = &mut self.breaker {
            b.admit(now)?;
        }
        self.budget.admit(now, attempt)?;
        if let Some(l) = &mut self.limiter {
            l.acquire();
        }
        Ok(())
    }

    fn in_flight(&self) -> Option<u32> {
        self.limiter.as_ref().map(ClientLimiter::in_flight)
    }

    fn round_trip(&mut self, rtt: Duration, inflight: u32, class: AttemptClass) {
        if let Some(l) = &mut self.limiter {
            let sample = match class {
                AttemptClass::Success => ClientSample::Success,
                AttemptClass::Failure(_) => ClientSample::Dropped,
                AttemptClass::Permanent => ClientSample::Ignore,
            };
            l.release(rtt, inflight, sample);
        }
    }

    fn send_delay(&mut self, now: Duration) -> Option<Duration> {
        self.rate.as_mut().and_then(|r| r.acquire(now))
    }

    fn record(&mut self, now: Duration, attempt: u32, class: AttemptClass) {
        if let Some(r) = &mut self.rate {
            r.answered(now, class == AttemptClass::Failure(RetryCause::Throttled));
        }
        if let Some(b) = &mut self.breaker {
            b.record(now, class);
        }
        self.budget.record(now, attempt, class)
    }

    fn release(&mut self, now: Duration) {
        self.budget.release(now)
    }

    fn good_answer(&mut self, rtt: Duration) {
        if let Some(r) = &mut self.latencies {
            r.add(rtt);
        }
    }

    fn hedge_delay(&self, spec: &HedgeSpec) -> Option<Duration> {
        spec.delay_now(self.latencies.as_ref())
    }
}
