//! The reliability-patterns article's retry budget: retries stay within a ratio of the operations started.

use std::time::Duration;

use super::{RetryBudget, RetryCause};

/// The reliability-patterns article's retry budget (the SRE book's "retries below 10% of requests" per client): a retry
/// is allowed only while `retries + 1 <= ratio * requests`, where `requests` counts the
/// operations started so far (deposits) and `retries` the retries allowed so far. The test is
/// the seed's own (`retries + 1 > r * 0.10` breaks), in the same floating-point arithmetic.
/// A retry allowed but never sent (`release`) is given back: it is not a retry.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioBudget {
    ratio: f64,
    requests: u64,
    retries: u64,
}

impl RatioBudget {
    pub fn new(ratio: f64) -> Self {
        Self {
            ratio,
            requests: 0,
            retries: 0,
        }
    }

    /// Retries allowed (and not released) so far.
    pub fn retries(&self) -> u64 {
        self.retries
    }
}

impl RetryBudget for RatioBudget {
    fn deposit(&mut self, _now: Duration) {
        self.requests += 1;
    }

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        if (self.retries + 1) as f64 > self.requests as f64 * self.ratio {
            return false;
        }
        self.retries += 1;
        true
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

    #[test]
    fn ratio_budget_allows_one_retry_per_ten_requests_and_takes_back_releases() {
        let mut b = RatioBudget::new(0.1);
        for _ in 0..9 {
            b.deposit(T);
            assert!(!b.withdraw(T, E), "1 > 0.9");
        }
        b.deposit(T);
        assert!(b.withdraw(T, E), "1 <= 10 * 0.1");
        assert!(!b.withdraw(T, E), "2 > 1");
        b.release(T);
        assert_eq!(b.retries(), 0);
        assert!(b.withdraw(T, E), "a released retry is given back");
        for _ in 0..10 {
            b.deposit(T);
        }
        assert!(b.withdraw(T, E) && !b.withdraw(T, E), "2 <= 2, 3 > 2");
    }
}
