//! Retry strategies as data.
//!
//! A strategy is a value: a backoff (base, growth, cap), a jitter kind and an optional budget.
//! The one client loop asks it for the wait before retry `n`; a new strategy (equal or
//! decorrelated jitter, another budget) is a new value, not a new loop.

use std::time::Duration;

use rand::Rng;

use crate::breaker::BreakerSpec;
use crate::budget::{AttemptClass, BudgetSpec, RetryCause};
use crate::operation::AttemptResult;

/// How the un-jittered wait grows with the retry number.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backoff {
    /// No wait at all.
    Immediate,
    /// The same wait before every retry.
    Constant { wait: Duration },
    /// `base * 2^(n-1)`, capped at `cap`.
    Exponential { base: Duration, cap: Duration },
    /// `base * multiplier^(n-1)`, capped at `cap` (gRPC's connection backoff grows by 1.6).
    Geometric {
        base: Duration,
        cap: Duration,
        multiplier: f64,
    },
}

/// How randomness spreads the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    /// The wait is exactly the backoff.
    None,
    /// Uniform in `[0, backoff]`.
    Full,
    /// Uniform in `[backoff/2, backoff]`.
    Equal,
    /// Uniform in `[base, 3 * previous wait]`, capped (AWS "decorrelated jitter").
    Decorrelated,
    /// Polly's DecorrelatedJitterBackoffV2 (the .NET default for exponential + jitter).
    PollyV2,
    /// The backoff times a factor uniform in `[1 - spread, 1 + spread]` (resilience4j's
    /// randomized wait, gRPC's connection backoff with 0.2).
    Proportional { spread_pct: u32 },
}

/// What a strategy does with a `Retry-After` the dependency sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RetryAfter {
    /// Wait at least as long as the header says (the lab's rule so far).
    #[default]
    AtLeast,
    /// Ignore the header.
    Ignore,
    /// Honour the header, clamped to `[computed backoff, computed backoff + max_extra_ms]`
    /// (the AWS SDKs' 2026 retry behaviour, with 5 s).
    Clamp { max_extra_ms: u64 },
}

/// Which failed answers a strategy retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classify {
    /// Retry 408, 425, 429, 500, 502, 503, 504, timeouts and connection errors; never a 4xx
    /// such as 400, 401, 403, 404, 409 or 422 (seed 004's rule).
    #[default]
    Standard,
    /// Retry every failure, permanent or not (the cost of not classifying).
    Everything,
}

/// One retry strategy.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Strategy {
    /// Short id shown in tables and logs ("A", "B", ...).
    pub id: String,
    /// Human name.
    pub name: String,
    pub backoff: Backoff,
    pub jitter: Jitter,
    /// A swarm-wide retry budget, if any.
    pub budget: Option<BudgetSpec>,
    /// A circuit breaker around every attempt, if any.
    #[serde(default)]
    pub breaker: Option<BreakerSpec>,
    /// Which failures are retried.
    #[serde(default)]
    pub classify: Classify,
    /// What a `Retry-After` header does to the wait.
    #[serde(default)]
    pub retry_after: RetryAfter,
    /// First attempt plus retries, when the strategy has its own (a library default); `None`
    /// takes the scenario's `max_attempts`.
    #[serde(default)]
    pub max_attempts: Option<u32>,
}

impl Strategy {
    /// The spec's four strategies (A immediate, B exponential backoff, C backoff + full jitter,
    /// D C + retry budget) for the given backoff base and cap and budget parameters.
    pub fn standard(id: &str, base: Duration, cap: Duration, budget: BudgetSpec) -> Option<Self> {
        let expo = Backoff::Exponential { base, cap };
        let (name, backoff, jitter, budget) = match id {
            "A" => ("immediate retry", Backoff::Immediate, Jitter::None, None),
            "B" => ("exponential backoff", expo, Jitter::None, None),
            "C" => ("backoff + full jitter", expo, Jitter::Full, None),
            "D" => (
                "backoff + jitter + budget",
                expo,
                Jitter::Full,
                Some(budget),
            ),
            "E" => ("backoff + equal jitter", expo, Jitter::Equal, None),
            "F" => ("decorrelated jitter", expo, Jitter::Decorrelated, None),
            _ => return None,
        };
        Some(Strategy {
            id: id.to_string(),
            name: name.to_string(),
            backoff,
            jitter,
            budget,
            breaker: None,
            classify: Classify::Standard,
            retry_after: RetryAfter::AtLeast,
            max_attempts: None,
        })
    }

    /// The wait before retry `n` after `result` (whose `Retry-After`, if any, is applied by the
    /// strategy's [`RetryAfter`] rule).
    pub fn retry_wait<R: Rng + ?Sized>(
        &self,
        n: u32,
        previous: Duration,
        result: &AttemptResult,
        rng: &mut R,
    ) -> Duration {
        let wait = self.wait(n, previous, rng);
        let AttemptResult::Status {
            retry_after: Some(ra),
            ..
        } = *result
        else {
            return wait;
        };
        match self.retry_after {
            RetryAfter::AtLeast => wait.max(ra),
            RetryAfter::Ignore => wait,
            RetryAfter::Clamp { max_extra_ms } => {
                ra.clamp(wait, wait + Duration::from_millis(max_extra_ms))
            }
        }
    }

    /// How a policy layer sees `result`: success, a retryable failure (and why), or a
    /// permanent one. A locally rejected attempt never gets here: it was not sent.
    pub fn classify(&self, result: &AttemptResult) -> AttemptClass {
        let code = match result {
            AttemptResult::Timeout => return AttemptClass::Failure(RetryCause::Timeout),
            AttemptResult::ConnectionError => return AttemptClass::Failure(RetryCause::Error),
            AttemptResult::Status { code, .. } => *code,
        };
        if (200..300).contains(&code) {
            return AttemptClass::Success;
        }
        let throttled = code == 429
            || matches!(
                result,
                AttemptResult::Status {
                    retry_after: Some(_),
                    ..
                }
            );
        let transient = matches!(code, 408 | 425 | 429 | 500 | 502 | 503 | 504);
        match (transient, self.classify) {
            (true, _) if throttled => AttemptClass::Failure(RetryCause::Throttled),
            (true, _) | (false, Classify::Everything) => AttemptClass::Failure(RetryCause::Error),
            (false, Classify::Standard) => AttemptClass::Permanent,
        }
    }

    /// The wait before retry `n` (1 for the first retry). `previous` is the wait before the
    /// previous retry (zero before the first), used by decorrelated jitter.
    pub fn wait<R: Rng + ?Sized>(&self, n: u32, previous: Duration, rng: &mut R) -> Duration {
        let (base, cap, backoff) = match self.backoff {
            Backoff::Immediate => return Duration::ZERO,
            Backoff::Constant { wait } => (wait, wait, wait),
            Backoff::Exponential { base, cap } => {
                let exp = n.saturating_sub(1).min(30);
                (base, cap, base.saturating_mul(1u32 << exp).min(cap))
            }
            Backoff::Geometric {
                base,
                cap,
                multiplier,
            } => {
                let grown =
                    base.as_secs_f64() * multiplier.powi(n.saturating_sub(1).min(60) as i32);
                (
                    base,
                    cap,
                    Duration::from_secs_f64(grown.min(cap.as_secs_f64())),
                )
            }
        };
        match self.jitter {
            Jitter::None => backoff,
            Jitter::Full => uniform(rng, Duration::ZERO, backoff),
            Jitter::Equal => uniform(rng, backoff / 2, backoff),
            Jitter::Decorrelated => {
                let hi = previous.max(base).saturating_mul(3).min(cap);
                uniform(rng, base.min(hi), hi)
            }
            // Helper A: implement these two (Polly's V2 formula; the proportional factor).
            Jitter::PollyV2 | Jitter::Proportional { .. } => backoff,
        }
    }
}

/// Uniform duration in `[lo, hi]` at microsecond resolution.
fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: Duration, hi: Duration) -> Duration {
    let (lo_us, hi_us) = (lo.as_micros() as u64, hi.as_micros() as u64);
    if hi_us <= lo_us {
        return lo;
    }
    Duration::from_micros(rng.random_range(lo_us..=hi_us))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Stream};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn std(id: &str) -> Strategy {
        Strategy::standard(id, ms(200), ms(2000), BudgetSpec::token_bucket(10.0, 0.1)).unwrap()
    }

    #[test]
    fn immediate_retry_never_waits() {
        let mut rng = stream(42, Stream::Jitter, 0);
        for n in 1..=3 {
            assert_eq!(std("A").wait(n, Duration::ZERO, &mut rng), Duration::ZERO);
        }
    }

    #[test]
    fn exponential_backoff_is_exactly_200_400_800() {
        let mut rng = stream(42, Stream::Jitter, 0);
        let b = std("B");
        let waits: Vec<_> = (1..=3)
            .map(|n| b.wait(n, Duration::ZERO, &mut rng))
            .collect();
        assert_eq!(waits, vec![ms(200), ms(400), ms(800)]);
    }

    #[test]
    fn backoff_is_capped() {
        let mut rng = stream(42, Stream::Jitter, 0);
        let b = std("B");
        assert_eq!(b.wait(4, Duration::ZERO, &mut rng), ms(1600));
        assert_eq!(b.wait(5, Duration::ZERO, &mut rng), ms(2000));
        assert_eq!(b.wait(40, Duration::ZERO, &mut rng), ms(2000));
        let c = std("C");
        assert!((0..200).all(|_| c.wait(9, Duration::ZERO, &mut rng) <= ms(2000)));
    }

    #[test]
    fn full_jitter_stays_within_bounds_and_spreads() {
        let c = std("C");
        let mut rng = stream(42, Stream::Jitter, 0);
        for n in 1..=3u32 {
            let hi = ms(200 * (1 << (n - 1)));
            let waits: Vec<_> = (0..500)
                .map(|_| c.wait(n, Duration::ZERO, &mut rng))
                .collect();
            assert!(waits.iter().all(|w| *w <= hi));
            assert!(waits.iter().any(|w| *w < hi / 4) && waits.iter().any(|w| *w > hi * 3 / 4));
        }
    }

    #[test]
    fn jitter_differs_between_clients() {
        let c = std("C");
        let firsts: std::collections::HashSet<_> = (0..50)
            .map(|client| c.wait(1, Duration::ZERO, &mut stream(42, Stream::Jitter, client)))
            .collect();
        assert!(firsts.len() > 40, "{} distinct first waits", firsts.len());
    }

    #[test]
    fn equal_and_decorrelated_jitter_stay_within_their_bounds() {
        let mut rng = stream(1, Stream::Jitter, 0);
        let e = std("E");
        assert!((0..200).all(|_| {
            let w = e.wait(2, Duration::ZERO, &mut rng);
            w >= ms(200) && w <= ms(400)
        }));
        let f = std("F");
        assert!((0..200).all(|_| {
            let w = f.wait(2, ms(300), &mut rng);
            w >= ms(200) && w <= ms(900)
        }));
    }

    #[test]
    fn unknown_strategy_id_is_none() {
        assert!(
            Strategy::standard("Z", ms(1), ms(1), BudgetSpec::token_bucket(1.0, 0.1)).is_none()
        );
    }
}
