//! Client-side adaptive throttling from the Google SRE book: each attempt is rejected locally
//! with a probability that grows as the backend accepts fewer of them.

use std::time::Duration;

use super::{AttemptClass, Rejection, RetryBudget, RetryCause};

/// Client-side adaptive throttling from the Google SRE book (chapter "Handling Overload"): each
/// client counts, over the last two minutes, its `requests` (attempts it tried to send, the ones
/// it rejected itself included) and `accepts` (attempts the backend answered: a success, or a
/// failure no retry fixes). A new attempt is rejected locally with probability
/// `max(0, (requests - K * accepts) / (requests + 1))`, K = 2. Retries are attempts and are
/// throttled the same way; `withdraw` itself always allows.
///
/// The random draw for attempt number `i` (counted from 0 over the budget's life) is
/// `rng::unit_hash(seed, i)`: a pure function of the seed, so a run stays reproducible.
#[derive(Debug, Clone, PartialEq)]
pub struct SreThrottle {
    k: f64,
    window: Duration,
    seed: u64,
    draws: u64,
    requests: std::collections::VecDeque<Duration>,
    accepts: std::collections::VecDeque<Duration>,
}

impl SreThrottle {
    pub fn new(k: f64, window: Duration, seed: u64) -> Self {
        Self {
            k,
            window,
            seed,
            draws: 0,
            requests: Default::default(),
            accepts: Default::default(),
        }
    }

    fn expire(&mut self, now: Duration) {
        for q in [&mut self.requests, &mut self.accepts] {
            while q
                .front()
                .is_some_and(|at| now.saturating_sub(*at) > self.window)
            {
                q.pop_front();
            }
        }
    }

    /// The probability of a local rejection at `now` (before counting a new attempt).
    pub fn reject_probability(&mut self, now: Duration) -> f64 {
        self.expire(now);
        let requests = self.requests.len() as f64;
        let accepts = self.accepts.len() as f64;
        ((requests - self.k * accepts) / (requests + 1.0)).max(0.0)
    }
}

impl RetryBudget for SreThrottle {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        true
    }

    fn admit(&mut self, now: Duration, _attempt: u32) -> Result<(), Rejection> {
        let p = self.reject_probability(now);
        let u = crate::rng::unit_hash(self.seed, self.draws);
        self.draws += 1;
        self.requests.push_back(now);
        if u < p {
            Err(Rejection::Throttled)
        } else {
            Ok(())
        }
    }

    fn record(&mut self, now: Duration, _attempt: u32, class: AttemptClass) {
        if matches!(class, AttemptClass::Success | AttemptClass::Permanent) {
            self.expire(now);
            self.accepts.push_back(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;
    const OK: AttemptClass = AttemptClass::Success;
    const F: AttemptClass = AttemptClass::Failure(RetryCause::Error);

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    /// SRE adaptive throttling: p = max(0, (requests - 2 accepts) / (requests + 1)) over 2 min.
    #[test]
    fn sre_throttle_probability_follows_the_formula() {
        let mut b = SreThrottle::new(2.0, s(120), 7);
        assert_eq!(b.reject_probability(T), 0.0);
        // 10 attempts, 5 answered: 10 - 2 x 5 = 0: never rejected.
        for i in 0..10 {
            assert_eq!(b.admit(T, 1), Ok(()), "p is 0 for attempt {i}");
            if i % 2 == 0 {
                b.record(T, 1, OK);
            } else {
                b.record(T, 1, F);
            }
        }
        assert_eq!(b.reject_probability(T), 0.0);
        // Two more unanswered attempts: (12 - 10) / 13.
        let _ = b.admit(s(1), 1);
        let _ = b.admit(s(1), 1);
        assert_eq!(b.reject_probability(s(1)), 2.0 / 13.0);
        b.record(s(2), 1, AttemptClass::Permanent);
        assert_eq!(b.reject_probability(s(2)), 0.0, "a 4xx is an accept");
        // After the window the first ten (and their answers) are gone: 2 requests, 1 accept.
        assert_eq!(b.reject_probability(s(121)), 0.0);
        assert_eq!(b.reject_probability(s(123)), 0.0, "everything expired");
    }

    #[test]
    fn sre_throttle_rejects_most_attempts_to_a_dead_backend_and_is_reproducible() {
        let run = |seed| {
            let mut b = SreThrottle::new(2.0, s(120), seed);
            (0..1000)
                .map(|_| b.admit(T, 1).is_err())
                .collect::<Vec<_>>()
        };
        let a = run(42);
        assert_eq!(a, run(42), "same seed, same decisions");
        assert_ne!(a, run(43));
        assert!(!a[0], "the first attempt has p = 0");
        // Expected rejections: sum of n / (n + 1) for n < 1000, about 992.5.
        let rejected = a.iter().filter(|r| **r).count();
        assert!((975..=1000).contains(&rejected), "{rejected}");
        // Retries are never denied by withdraw, only throttled as attempts.
        let mut b = SreThrottle::new(2.0, s(120), 1);
        assert!(b.withdraw(T, E));
    }
}
