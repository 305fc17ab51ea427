//! gRPC's retry throttling (proposal A6): a token count that failures drain and successes
//! refill; retries stop at half of it.

use std::time::Duration;

use super::{AttemptClass, RetryBudget, RetryCause};

/// gRPC's retry throttling, as proposal A6 ("gRPC Retry Design", `retryThrottling`) defines it:
/// a token count starts at `maxTokens`; every failed attempt takes one token (never below 0),
/// every successful one adds `tokenRatio` (never above `maxTokens`); retries are throttled while
/// the count is at or below `maxTokens / 2`. A6 has no defaults for these (the section is
/// optional); its example is 10 and 0.1, which the lab uses. A failure no retry can fix
/// (a permanent error) counts neither way, as A6 only counts retryable statuses as failures.
/// Tokens are kept in thousandths, as A6 allows three decimals for `tokenRatio`, so the sums
/// are exact.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcThrottle {
    max_milli: i64,
    ratio_milli: i64,
    milli: i64,
}

impl GrpcThrottle {
    pub fn new(max_tokens: f64, token_ratio: f64) -> Self {
        let max_milli = (max_tokens * 1000.0).round() as i64;
        Self {
            max_milli,
            ratio_milli: (token_ratio * 1000.0).round() as i64,
            milli: max_milli,
        }
    }

    /// The token count.
    pub fn tokens(&self) -> f64 {
        self.milli as f64 / 1000.0
    }
}

impl RetryBudget for GrpcThrottle {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        self.milli * 2 > self.max_milli
    }

    fn record(&mut self, _now: Duration, _attempt: u32, class: AttemptClass) {
        match class {
            AttemptClass::Success => {
                self.milli = (self.milli + self.ratio_milli).min(self.max_milli);
            }
            AttemptClass::Failure(_) => self.milli = (self.milli - 1000).max(0),
            AttemptClass::Permanent => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;
    const F: AttemptClass = AttemptClass::Failure(RetryCause::Error);
    const OK: AttemptClass = AttemptClass::Success;

    /// gRPC A6: 10 tokens, -1 per failure, +0.1 per success, retries only above 5.
    #[test]
    fn grpc_throttle_follows_a6() {
        let mut b = GrpcThrottle::new(10.0, 0.1);
        assert!(b.withdraw(T, E), "10 > 5");
        for _ in 0..5 {
            b.record(T, 1, F);
        }
        assert_eq!(b.tokens(), 5.0);
        assert!(!b.withdraw(T, E), "5 is not above 5");
        b.record(T, 1, OK);
        assert!(b.withdraw(T, E), "5.1 > 5");
        assert_eq!(b.tokens(), 5.1, "withdraw takes nothing");
        b.record(T, 2, AttemptClass::Permanent);
        assert_eq!(b.tokens(), 5.1, "a permanent error counts neither way");
        for _ in 0..20 {
            b.record(T, 1, AttemptClass::Failure(RetryCause::Timeout));
        }
        assert_eq!(b.tokens(), 0.0, "never below zero");
        for _ in 0..50 {
            b.record(T, 1, OK);
        }
        assert_eq!(b.tokens(), 5.0);
        assert!(
            !b.withdraw(T, E),
            "fifty successes give back 5.0: not enough"
        );
        b.record(T, 1, OK);
        assert!(b.withdraw(T, E), "the 51st makes 5.1");
        for _ in 0..100 {
            b.record(T, 1, OK);
        }
        assert_eq!(b.tokens(), 10.0, "never above max_tokens");
    }
}
