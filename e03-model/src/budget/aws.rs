//! The AWS SDKs' retry quota, in standard mode and in the 2026 behaviour: each retry costs
//! tokens by its cause, and successes give them back.

use std::time::Duration;

use super::{AttemptClass, RetryBudget, RetryCause};

/// The AWS SDKs' retry quota ("Retry behavior" in the AWS SDKs and Tools reference guide;
/// `RetryQuota` / `StandardRetryTokenBucket` in the SDKs): a quota of tokens starts at its
/// maximum (500); a retry takes its cost, and is not made when the quota holds less than that;
/// a success on a first attempt adds `no_retry_increment` (1); a success on a retry gives that
/// retry's cost back; the quota never exceeds its start.
///
/// The costs by cause: standard mode charges 5 per retry and 10 after a timeout; the 2026
/// behaviour (`AWS_NEW_RETRIES_2026`) charges 14 per retry (timeouts no longer differ) and 5
/// after a throttling error.
///
/// The SDK keeps each operation's last retry cost in the operation's token; the policy-layer
/// trait does not say which operation an attempt belongs to, so the costs of the retries in
/// flight are kept in the order they were taken, and a retry that ends takes the oldest. When
/// all retries cost the same this is exact; with mixed costs, a refund may be another retry's
/// cost. A retry allowed but never sent keeps its cost spent (the SDK does not give it back).
#[derive(Debug, Clone, PartialEq)]
pub struct AwsQuota {
    max: u32,
    available: u32,
    cost_error: u32,
    cost_timeout: u32,
    cost_throttled: u32,
    no_retry_increment: u32,
    in_flight: std::collections::VecDeque<u32>,
}

impl AwsQuota {
    /// A quota with the given cost per cause.
    pub fn new(
        quota: u32,
        cost_error: u32,
        cost_timeout: u32,
        cost_throttled: u32,
        no_retry_increment: u32,
    ) -> Self {
        Self {
            max: quota,
            available: quota,
            cost_error,
            cost_timeout,
            cost_throttled,
            no_retry_increment,
            in_flight: Default::default(),
        }
    }

    /// Tokens left.
    pub fn available(&self) -> u32 {
        self.available
    }

    fn cost(&self, cause: RetryCause) -> u32 {
        match cause {
            RetryCause::Error => self.cost_error,
            RetryCause::Timeout => self.cost_timeout,
            RetryCause::Throttled => self.cost_throttled,
        }
    }
}

impl RetryBudget for AwsQuota {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, cause: RetryCause) -> bool {
        let cost = self.cost(cause);
        if cost > self.available {
            return false;
        }
        self.available -= cost;
        self.in_flight.push_back(cost);
        true
    }

    fn record(&mut self, _now: Duration, attempt: u32, class: AttemptClass) {
        let refund = if attempt > 1 {
            let cost = self.in_flight.pop_front().unwrap_or(0);
            if class == AttemptClass::Success {
                cost
            } else {
                0
            }
        } else if class == AttemptClass::Success {
            self.no_retry_increment
        } else {
            0
        };
        self.available = (self.available + refund).min(self.max);
    }

    fn release(&mut self, _now: Duration) {
        self.in_flight.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{AnyBudget, BudgetSpec};

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;
    const F: AttemptClass = AttemptClass::Failure(RetryCause::Error);
    const OK: AttemptClass = AttemptClass::Success;

    /// AWS standard mode: 500 tokens, 5 per retry, 10 after a timeout, +1 per first-attempt
    /// success, a successful retry refunds its cost, never above 500.
    #[test]
    fn aws_standard_quota_costs_and_refunds() {
        let mut b = AnyBudget::from_spec(Some(BudgetSpec::aws_standard()));
        let AnyBudget::Aws(q) = &b else { panic!() };
        assert_eq!(q.available(), 500);
        assert!(b.withdraw(T, E));
        assert!(b.withdraw(T, RetryCause::Timeout));
        assert!(b.withdraw(T, RetryCause::Throttled));
        let avail = |b: &AnyBudget| match b {
            AnyBudget::Aws(q) => q.available(),
            _ => unreachable!(),
        };
        assert_eq!(avail(&b), 500 - 5 - 10 - 5);
        b.record(T, 2, OK);
        assert_eq!(avail(&b), 485, "the first retry (5) succeeded: refunded");
        b.record(T, 2, F);
        assert_eq!(avail(&b), 485, "a failed retry refunds nothing");
        b.release(T);
        assert_eq!(avail(&b), 485, "an unsent retry keeps its cost");
        b.record(T, 1, OK);
        assert_eq!(avail(&b), 486, "no_retry_increment");
        b.record(T, 1, F);
        assert_eq!(avail(&b), 486);
        for _ in 0..20 {
            b.record(T, 1, OK);
        }
        assert_eq!(avail(&b), 500, "never above the initial quota");
        // Drain: 100 retries of 5, then nothing; with 7 left a timeout (10) is refused and an
        // error (5) is not.
        for _ in 0..100 {
            assert!(b.withdraw(T, E));
        }
        assert!(!b.withdraw(T, E));
        let mut q = AwsQuota::new(7, 5, 10, 5, 1);
        assert!(!q.withdraw(T, RetryCause::Timeout));
        assert!(q.withdraw(T, E));
        assert_eq!(q.available(), 2);
    }

    /// AWS 2026: 14 per retry (timeouts too), 5 after a throttle.
    #[test]
    fn aws_2026_quota_charges_throttles_less() {
        let mut b = match AnyBudget::from_spec(Some(BudgetSpec::aws_2026())) {
            AnyBudget::Aws(q) => q,
            _ => unreachable!(),
        };
        assert!(b.withdraw(T, E));
        assert!(b.withdraw(T, RetryCause::Timeout));
        assert!(b.withdraw(T, RetryCause::Throttled));
        assert_eq!(b.available(), 500 - 14 - 14 - 5);
        b.record(T, 2, OK);
        b.record(T, 2, OK);
        b.record(T, 2, OK);
        assert_eq!(b.available(), 500);
        for _ in 0..35 {
            assert!(b.withdraw(T, E));
        }
        assert_eq!(b.available(), 10);
        assert!(!b.withdraw(T, E), "10 < 14");
        assert!(b.withdraw(T, RetryCause::Throttled), "5 <= 10");
        assert!(b.withdraw(T, RetryCause::Throttled), "5 <= 5");
        assert!(!b.withdraw(T, RetryCause::Throttled), "0 left");
    }
}
