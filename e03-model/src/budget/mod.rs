//! Retry budgets: how many retries a whole swarm may send.
//!
//! The trait is tower's shape (`deposit` on every first attempt, `withdraw` before every retry)
//! with the clock passed in: a token bucket that refills per first attempt ignores `now`, and a
//! budget whose deposits expire uses it.
//!
//! One kind a file, as tower's `retry/budget/`: [`TokenBucket`] (strategy D), [`RatioBudget`]
//! (the reliability-patterns article), [`GrpcThrottle`] (gRPC A6), [`AwsQuota`] (the AWS SDKs), [`TpsBudget`] (Finagle,
//! tower), [`EnvoyBudget`] (Envoy) and [`SreThrottle`] (Google SRE's adaptive throttling), each
//! with its source, its defaults and its tests. [`BudgetSpec`] (`spec.rs`) is a budget as data;
//! [`AnyBudget`] (`any.rs`) is the budget a spec describes. This file holds the trait they all
//! implement and [`Unlimited`]; the words it speaks ([`RetryCause`], [`AttemptClass`],
//! [`Rejection`]) are [`crate::attempt`]'s, re-exported here.

use std::time::Duration;

mod any;
mod aws;
mod envoy;
mod grpc;
mod ratio;
mod spec;
mod sre;
mod token_bucket;
mod tps;

pub use crate::attempt::{AttemptClass, Rejection, RetryCause};
pub use any::{AnyBudget, DEFAULT_BUDGET_SEED};
pub use aws::AwsQuota;
pub use envoy::EnvoyBudget;
pub use grpc::GrpcThrottle;
pub use ratio::RatioBudget;
pub use spec::{defaults, BudgetSpec};
pub use sre::SreThrottle;
pub use token_bucket::TokenBucket;
pub use tps::TpsBudget;

/// The policy layers between a client's retry loop and the wire, shared by every client of a
/// strategy: retry budgets, throttles and circuit breakers. Time is passed in (`now`, since the
/// run's time zero); nothing here reads a clock.
///
/// The calls a driver makes, through [`crate::session::ClientSession`]:
/// `deposit` when an operation starts; `admit` before every attempt (first or retry);
/// `record` when a sent attempt ends; `withdraw` when a retry is wanted; `release` when a retry
/// that `withdraw` allowed is never sent (its deadline passed, or the run stopped).
pub trait RetryBudget {
    /// An operation starts at `now` (its first attempt is about to be sent).
    fn deposit(&mut self, now: Duration);
    /// A retry is wanted at `now` because of `cause`: `true` if it may go (its cost is taken),
    /// `false` if denied.
    fn withdraw(&mut self, now: Duration, cause: RetryCause) -> bool;
    /// Attempt number `attempt` (1 for the first) is about to be sent at `now`. `Err` means it is
    /// not sent at all: it fails fast.
    fn admit(&mut self, _now: Duration, _attempt: u32) -> Result<(), Rejection> {
        Ok(())
    }
    /// [`RetryBudget::admit`] for an attempt of `client`'s operation, when a layer needs to
    /// know whose call it is (a bulkhead's pool is its dependency's); hand its slot back with
    /// [`RetryBudget::call_ended`] once a sent attempt ends.
    fn admit_call(&mut self, now: Duration, attempt: u32, _client: u32) -> Result<(), Rejection> {
        self.admit(now, attempt)
    }
    /// A sent attempt of `client`'s operation ended (right after its [`RetryBudget::record`]).
    fn call_ended(&mut self, _client: u32) {}
    /// A sent attempt ended at `now`.
    fn record(&mut self, _now: Duration, _attempt: u32, _class: AttemptClass) {}
    /// Attempts in flight just after [`RetryBudget::admit`] let one go (itself included), when
    /// a layer counts them (a client-side concurrency limit); hand it back with the attempt's
    /// [`RetryBudget::round_trip`].
    fn in_flight(&self) -> Option<u32> {
        None
    }
    /// The attempt that left with `inflight` in flight ([`RetryBudget::in_flight`]) ended
    /// after `rtt`, as `class`; called right after its [`RetryBudget::record`].
    fn round_trip(&mut self, _rtt: Duration, _inflight: u32, _class: AttemptClass) {}
    /// An attempt is about to be sent at `now`, before [`RetryBudget::admit`]: `Some(wait)`
    /// when a client-side rate limiter holds it that long (ask again then), `None` when it may
    /// go now (its token taken).
    fn send_delay(&mut self, _now: Duration) -> Option<Duration> {
        None
    }
    /// A retry that `withdraw` allowed will never be sent.
    fn release(&mut self, _now: Duration) {}
    /// A sent attempt had a good answer after `rtt` (a hedging percentile's record).
    fn good_answer(&mut self, _rtt: Duration) {}
    /// The delay before the next hedge of `spec`, if one may follow an attempt sent now
    /// ([`crate::hedge::HedgeSpec::delay_now`], with the layer's latency record if it keeps one).
    fn hedge_delay(&self, spec: &crate::hedge::HedgeSpec) -> Option<Duration> {
        spec.delay_now(None)
    }
}

/// No budget: every retry is allowed (strategies A to C).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unlimited;

impl RetryBudget for Unlimited {
    fn deposit(&mut self, _now: Duration) {}
    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;

    #[test]
    fn unlimited_always_allows() {
        let mut b = AnyBudget::from_spec(None);
        assert!((0..1000).all(|_| b.withdraw(T, E)));
    }
}
