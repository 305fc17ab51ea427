//! Envoy's retry budget: the retries in progress stay below a share of the active requests.

use std::time::Duration;

use super::{AttemptClass, Rejection, RetryBudget, RetryCause};

/// Envoy's retry budget (`envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget`):
/// the retries in progress may not exceed `max(budget_percent% of the active requests,
/// min_retry_concurrency)` (defaults 20% and 3); Envoy takes the integer part of the percentage
/// and allows a retry while the retries in progress are below that limit. Here the active
/// requests are the attempts admitted and not yet ended, and a retry is in progress from the
/// `withdraw` that allowed it until it ends (recorded) or is released.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvoyBudget {
    percent: f64,
    min_concurrency: u64,
    active: u64,
    retries: u64,
}

impl EnvoyBudget {
    pub fn new(budget_percent: f64, min_retry_concurrency: u32) -> Self {
        Self {
            percent: budget_percent,
            min_concurrency: min_retry_concurrency as u64,
            active: 0,
            retries: 0,
        }
    }

    /// Retries allowed at once with the current active requests.
    pub fn limit(&self) -> u64 {
        ((self.percent / 100.0 * self.active as f64) as u64).max(self.min_concurrency)
    }

    /// (attempts in flight, retries in progress).
    pub fn counts(&self) -> (u64, u64) {
        (self.active, self.retries)
    }
}

impl RetryBudget for EnvoyBudget {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        if self.retries < self.limit() {
            self.retries += 1;
            true
        } else {
            false
        }
    }

    fn admit(&mut self, _now: Duration, _attempt: u32) -> Result<(), Rejection> {
        self.active += 1;
        Ok(())
    }

    fn record(&mut self, _now: Duration, attempt: u32, _class: AttemptClass) {
        self.active = self.active.saturating_sub(1);
        if attempt > 1 {
            self.retries = self.retries.saturating_sub(1);
        }
    }

    fn release(&mut self, _now: Duration) {
        self.retries = self.retries.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;
    const F: AttemptClass = AttemptClass::Failure(RetryCause::Error);
    const OK: AttemptClass = AttemptClass::Success;

    /// Envoy: retries in progress below max(20% of active requests, 3).
    #[test]
    fn envoy_budget_limits_concurrent_retries() {
        let mut b = EnvoyBudget::new(20.0, 3);
        for _ in 0..20 {
            b.admit(T, 1).unwrap();
        }
        assert_eq!(b.limit(), 4, "20% of 20");
        for _ in 0..5 {
            b.record(T, 1, F);
        }
        assert_eq!(b.limit(), 3, "20% of 15 is 3");
        assert!((0..3).all(|_| b.withdraw(T, E)));
        assert!(!b.withdraw(T, E), "3 retries in progress");
        for _ in 0..3 {
            b.admit(T, 2).unwrap();
        }
        assert_eq!(b.limit(), 3, "20% of 18 is 3.6: 3");
        for _ in 0..7 {
            b.admit(T, 1).unwrap();
        }
        assert_eq!(b.counts(), (25, 3));
        assert!(b.withdraw(T, E) && b.withdraw(T, E), "20% of 25 is 5");
        assert!(!b.withdraw(T, E));
        b.record(T, 2, OK);
        assert_eq!(b.counts(), (24, 4));
        assert!(
            !b.withdraw(T, E),
            "20% of 24 is 4.8: 4, and 4 are in progress"
        );
        b.release(T);
        assert!(b.withdraw(T, E), "a released retry is over");
        let mut idle = EnvoyBudget::new(20.0, 3);
        assert_eq!(idle.limit(), 3, "min_retry_concurrency with no traffic");
        assert!((0..3).all(|_| idle.withdraw(T, E)) && !idle.withdraw(T, E));
    }
}
