//! Retry budgets: how many retries a whole swarm may send.
//!
//! The trait is tower's shape (`deposit` on every first attempt, `withdraw` before every retry)
//! with the clock passed in: a token bucket that refills per first attempt ignores `now`, and a
//! budget whose deposits expire uses it.

use std::time::Duration;

/// Why a retry is wanted: some budgets charge a timeout or a throttle differently from an error
/// (the AWS SDKs do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCause {
    /// An error status (5xx, 408) or a broken connection.
    Error,
    /// No answer within the attempt's timeout.
    Timeout,
    /// The dependency said "slow down" (429, or 503 with Retry-After).
    Throttled,
}

/// How a sent attempt ended, as a policy layer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptClass {
    /// A 2xx answer.
    Success,
    /// A failure the strategy would retry.
    Failure(RetryCause),
    /// A failure no retry can fix (400, 404, 409, 422, ...).
    Permanent,
}

/// Why a policy layer refused to send an attempt at all ("failed fast").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// The circuit breaker is open (or half-open with its probe already out).
    BreakerOpen,
    /// Client-side throttling (Google SRE adaptive throttling) rejected it locally.
    Throttled,
}

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
    /// A sent attempt ended at `now`.
    fn record(&mut self, _now: Duration, _attempt: u32, _class: AttemptClass) {}
    /// A retry that `withdraw` allowed will never be sent.
    fn release(&mut self, _now: Duration) {}
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

/// A retry budget as data: which kind, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BudgetSpec {
    /// The swarm-wide token bucket of strategy D (see [`TokenBucket`]).
    TokenBucket {
        /// Tokens at the start and at most. Default 10 (`E03_BUDGET_CAP`).
        cap: f64,
        /// Tokens each first attempt adds. Default 0.1 (`E03_BUDGET_RATIO`).
        ratio: f64,
    },
}

impl BudgetSpec {
    /// Strategy D's bucket.
    pub fn token_bucket(cap: f64, ratio: f64) -> Self {
        BudgetSpec::TokenBucket { cap, ratio }
    }
}

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

/// Either budget, chosen by a strategy's data.
#[derive(Debug, Clone)]
pub enum AnyBudget {
    Unlimited(Unlimited),
    Bucket(TokenBucket),
}

impl AnyBudget {
    pub fn from_spec(spec: Option<BudgetSpec>) -> Self {
        match spec {
            Some(BudgetSpec::TokenBucket { cap, ratio }) => {
                AnyBudget::Bucket(TokenBucket::new(cap, ratio))
            }
            None => AnyBudget::Unlimited(Unlimited),
        }
    }

    fn inner(&mut self) -> &mut dyn RetryBudget {
        match self {
            AnyBudget::Unlimited(b) => b,
            AnyBudget::Bucket(b) => b,
        }
    }
}

impl RetryBudget for AnyBudget {
    fn deposit(&mut self, now: Duration) {
        self.inner().deposit(now)
    }
    fn withdraw(&mut self, now: Duration, cause: RetryCause) -> bool {
        self.inner().withdraw(now, cause)
    }
    fn admit(&mut self, now: Duration, attempt: u32) -> Result<(), Rejection> {
        self.inner().admit(now, attempt)
    }
    fn record(&mut self, now: Duration, attempt: u32, class: AttemptClass) {
        self.inner().record(now, attempt, class)
    }
    fn release(&mut self, now: Duration) {
        self.inner().release(now)
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

    #[test]
    fn unlimited_always_allows() {
        let mut b = AnyBudget::from_spec(None);
        assert!((0..1000).all(|_| b.withdraw(T, E)));
    }
}
