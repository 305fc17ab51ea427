//! Strategy D's retry budget: one token bucket for the whole swarm, refilled by first attempts
//! and spent by retries.

use std::time::Duration;

use super::{RetryBudget, RetryCause};

/// A token bucket shared by the whole swarm: starts full, +`ratio` per first attempt (never
/// above `cap`), -1 per retry, and a retry is denied with less than one token.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    cap: f64,
    ratio: f64,
    tokens: f64,
}

impl TokenBucket {
    pub fn new(cap: f64, ratio: f64) -> Self {
        Self {
            tokens: cap,
            cap,
            ratio,
        }
    }

    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}

impl RetryBudget for TokenBucket {
    fn deposit(&mut self, _now: Duration) {
        self.tokens = (self.tokens + self.ratio).min(self.cap);
    }

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        // A tiny epsilon so that ten deposits of 0.1 make a whole token despite rounding.
        if self.tokens + 1e-9 >= 1.0 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;

    fn bucket() -> TokenBucket {
        TokenBucket::new(10.0, 0.1)
    }

    #[test]
    fn starts_full_and_never_exceeds_cap() {
        let mut b = bucket();
        assert_eq!(b.tokens(), 10.0);
        for _ in 0..100 {
            b.deposit(T);
        }
        assert_eq!(b.tokens(), 10.0);
    }

    #[test]
    fn each_retry_takes_one_token_and_is_denied_below_one() {
        let mut b = bucket();
        for _ in 0..10 {
            assert!(b.withdraw(T, E));
        }
        assert!(b.tokens() < 1.0);
        assert!(!b.withdraw(T, E), "denied with less than one token");
        // Ten first attempts earn one retry back.
        for _ in 0..9 {
            b.deposit(T);
        }
        assert!(!b.withdraw(T, E), "0.9 token is not enough");
        b.deposit(T);
        assert!(b.withdraw(T, E), "1.0 token is enough");
        assert!(!b.withdraw(T, E));
    }
}
