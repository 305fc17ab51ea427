//! Retry budgets: how many retries a whole swarm may send.
//!
//! The trait is tower's shape (`deposit` on every first attempt, `withdraw` before every retry)
//! without a clock: a token bucket that refills per first attempt needs no time at all, and a
//! budget that did would take `now` as an argument.

/// A source of permission to retry.
pub trait RetryBudget {
    /// A first attempt was sent.
    fn deposit(&mut self);
    /// A retry wants to go; `true` if it may (and its cost is taken), `false` if denied.
    fn withdraw(&mut self) -> bool;
}

/// No budget: every retry is allowed (strategies A to C).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unlimited;

impl RetryBudget for Unlimited {
    fn deposit(&mut self) {}
    fn withdraw(&mut self) -> bool {
        true
    }
}

/// Parameters of the swarm-wide token bucket of strategy D.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BudgetSpec {
    /// Tokens at the start and at most. Default 10 (`E03_BUDGET_CAP`).
    pub cap: f64,
    /// Tokens each first attempt adds. Default 0.1 (`E03_BUDGET_RATIO`).
    pub ratio: f64,
}

/// A token bucket shared by the whole swarm: starts full, +`ratio` per first attempt (never
/// above `cap`), -1 per retry, and a retry is denied with less than one token.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    spec: BudgetSpec,
    tokens: f64,
}

impl TokenBucket {
    pub fn new(spec: BudgetSpec) -> Self {
        Self {
            tokens: spec.cap,
            spec,
        }
    }

    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}

impl RetryBudget for TokenBucket {
    fn deposit(&mut self) {
        self.tokens = (self.tokens + self.spec.ratio).min(self.spec.cap);
    }

    fn withdraw(&mut self) -> bool {
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
            Some(s) => AnyBudget::Bucket(TokenBucket::new(s)),
            None => AnyBudget::Unlimited(Unlimited),
        }
    }
}

impl RetryBudget for AnyBudget {
    fn deposit(&mut self) {
        match self {
            AnyBudget::Unlimited(b) => b.deposit(),
            AnyBudget::Bucket(b) => b.deposit(),
        }
    }
    fn withdraw(&mut self) -> bool {
        match self {
            AnyBudget::Unlimited(b) => b.withdraw(),
            AnyBudget::Bucket(b) => b.withdraw(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket() -> TokenBucket {
        TokenBucket::new(BudgetSpec {
            cap: 10.0,
            ratio: 0.1,
        })
    }

    #[test]
    fn starts_full_and_never_exceeds_cap() {
        let mut b = bucket();
        assert_eq!(b.tokens(), 10.0);
        for _ in 0..100 {
            b.deposit();
        }
        assert_eq!(b.tokens(), 10.0);
    }

    #[test]
    fn each_retry_takes_one_token_and_is_denied_below_one() {
        let mut b = bucket();
        for _ in 0..10 {
            assert!(b.withdraw());
        }
        assert!(b.tokens() < 1.0);
        assert!(!b.withdraw(), "denied with less than one token");
        // Ten first attempts earn one retry back.
        for _ in 0..9 {
            b.deposit();
        }
        assert!(!b.withdraw(), "0.9 token is not enough");
        b.deposit();
        assert!(b.withdraw(), "1.0 token is enough");
        assert!(!b.withdraw());
    }

    #[test]
    fn unlimited_always_allows() {
        let mut b = AnyBudget::from_spec(None);
        assert!((0..1000).all(|_| b.withdraw()));
    }
}
