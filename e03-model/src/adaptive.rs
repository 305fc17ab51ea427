//! The AWS SDKs' adaptive retry mode's client-side rate limiter (issue "Hedging and adaptive
//! clients", item 5): standard mode's retries, plus a token bucket in front of every attempt
//! whose fill rate follows a CUBIC curve, cut on each throttling answer and grown back after
//! it. After botocore's `retries/adaptive.py` (`ClientRateLimiter`, `RateClocker`),
//! `retries/throttling.py` (`CubicCalculator`) and `retries/bucket.py` (`TokenBucket`), with
//! their constants:
//!
//! - **the measured send rate** (`RateClocker`): answers are counted in half-second buckets;
//!   when an answer falls in a later bucket than the last, the rate `count / (bucket - last
//!   bucket)` is blended in with smoothing 0.8 (`rate = 0.8 x new + 0.2 x old`); the first
//!   bucket is whole second 0;
//! - **CUBIC** (`CubicCalculator`, scale constant 0.4, beta 0.7, starting at rate 0 at time 0):
//!   after a throttling answer at `t` while sending at `r`, `w_max = r`, `k = cbrt(w_max x (1 -
//!   beta) / 0.4)` and the new rate is `r x beta`; after any other answer at `t`, the rate is
//!   `0.4 x (t - last throttle - k)^3 + w_max`;
//! - **the token bucket** (`TokenBucket`, minimum fill rate 0.5 a second, starting empty with
//!   rate 1): it fills at its rate up to `max(rate, 1)` tokens; an attempt takes one, or waits
//!   `(1 - tokens) / rate` and asks again. Setting a rate first adds what the old rate filled;
//! - **the limiter** (`ClientRateLimiter`): off until the first throttling answer; after every
//!   answer the bucket's rate becomes `min(CUBIC's rate, 2 x measured rate)`, and a throttling
//!   answer uses `min(measured, bucket's rate)` as CUBIC's current rate once the limiter is on
//!   (the measured rate before).
//!
//! One limiter is shared by a strategy's clients, as one SDK client is shared by its threads. A
//! throttling answer is a 429 or one with `Retry-After` (the lab's throttling class). Sans IO,
//! no clock: times are seconds since the run's time zero.

use std::time::Duration;

const SMOOTHING: f64 = 0.8;
/// Buckets a second of the measured rate (botocore's `_TIME_BUCKET_RANGE` of 0.5 s).
const BUCKETS_PER_S: f64 = 2.0;
const SCALE: f64 = 0.4;
const BETA: f64 = 0.7;
const MIN_FILL_RATE: f64 = 0.5;
const MAX_RATE_ADJUST_SCALE: f64 = 2.0;

/// The limiter's state.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRateLimiter {
    enabled: bool,
    // RateClocker
    measured: f64,
    last_bucket: f64,
    count: f64,
    // CubicCalculator
    w_max: f64,
    k: f64,
    last_fail: f64,
    // TokenBucket
    fill_rate: f64,
    max_capacity: f64,
    tokens: f64,
    last_fill: Option<f64>,
}

impl Default for ClientRateLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientRateLimiter {
    /// botocore's `register_retry_handler` at time zero: CUBIC from rate 0, a bucket of rate 1.
    pub fn new() -> Self {
        let mut l = ClientRateLimiter {
            enabled: false,
            measured: 0.0,
            last_bucket: 0.0,
            count: 0.0,
            w_max: 0.0,
            k: 0.0,
            last_fail: 0.0,
            fill_rate: 0.0,
            max_capacity: 0.0,
            tokens: 0.0,
            last_fill: None,
        };
        l.set_rate(0.0, 1.0);
        l
    }

    /// Whether the limiter is on (a throttling answer came).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The bucket's fill rate, a second.
    pub fn rate(&self) -> f64 {
        self.fill_rate
    }

    /// The measured send rate, a second.
    pub fn measured(&self) -> f64 {
        self.measured
    }

    fn refill(&mut self, t: f64) {
        let Some(last) = self.last_fill else {
            self.last_fill = Some(t);
            return;
        };
        let filled = (t - last).max(0.0) * self.fill_rate;
        self.tokens = (self.tokens + filled).min(self.max_capacity);
        self.last_fill = Some(t);
    }

    fn set_rate(&mut self, t: f64, value: f64) {
        self.refill(t);
        self.fill_rate = value.max(MIN_FILL_RATE);
        self.max_capacity = if value >= 1.0 { value } else { 1.0 };
        self.tokens = self.tokens.min(self.max_capacity);
    }

    /// An attempt is about to be sent at `now`: `None` when it may go (a token taken, or the
    /// limiter is off), else how long to wait before asking again.
    pub fn acquire(&mut self, now: Duration) -> Option<Duration> {
        if !self.enabled {
            return None;
        }
        let t = now.as_secs_f64();
        self.refill(t);
        // A tiny epsilon: a wait computed to fill exactly one token must find one after it,
        // whatever the rounding of seconds to microseconds.
        if self.tokens + 1e-6 >= 1.0 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            return None;
        }
        let wait = (1.0 - self.tokens) / self.fill_rate;
        Some(Duration::from_secs_f64(wait).max(Duration::from_micros(1)))
    }

    /// An attempt's answer (or its failure) came at `now`; `throttled`: a throttling answer.
    pub fn answered(&mut self, now: Duration, throttled: bool) {
        let t = now.as_secs_f64();
        // RateClocker.record
        let bucket = (t * BUCKETS_PER_S).floor() / BUCKETS_PER_S;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let current = self.count / (bucket - self.last_bucket);
            self.measured = current * SMOOTHING + self.measured * (1.0 - SMOOTHING);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        let measured = self.measured;
        let new_rate = if throttled {
            let current = if self.enabled {
                measured.min(self.fill_rate)
            } else {
                measured
            };
            // CubicCalculator.error_received
            self.w_max = current;
            self.k = (self.w_max * (1.0 - BETA) / SCALE).cbrt();
            self.last_fail = t;
            self.enabled = true;
            current * BETA
        } else {
            // CubicCalculator.success_received
            SCALE * (t - self.last_fail - self.k).powi(3) + self.w_max
        };
        self.set_rate(t, new_rate.min(MAX_RATE_ADJUST_SCALE * measured));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// botocore's limiter by hand. Answers at 0.1 s and 0.2 s (bucket 0: nothing measured),
    /// then at 0.6 s (bucket 0.5: 3 answers / 0.5 s = 6 a second, smoothed to 0.8 x 6 = 4.8):
    /// all successes while off, so nothing waits. A 429 at 1.1 s (bucket 1.0: 1 / 0.5 = 2,
    /// measured 0.8 x 2 + 0.2 x 4.8 = 2.56) turns it on: w_max = 2.56, rate 2.56 x 0.7 = 1.792
    /// (under 2 x 2.56), k = cbrt(2.56 x 0.3 / 0.4) = cbrt(1.92).
    #[test]
    fn the_limiter_follows_botocore_s_rules() {
        let mut l = ClientRateLimiter::new();
        assert_eq!((l.rate(), l.enabled()), (1.0, false));
        l.answered(s(0.1), false);
        l.answered(s(0.2), false);
        assert_eq!(l.measured(), 0.0);
        assert_eq!(l.acquire(s(0.3)), None, "off: nothing waits");
        l.answered(s(0.6), false);
        assert!(close(l.measured(), 4.8), "{}", l.measured());
        // A success sets the rate to CUBIC's from w_max 0, k 0: 0.4 x 0.6^3 = 0.0864, kept
        // at the bucket's floor of 0.5 a second.
        assert_eq!(l.rate(), 0.5);
        l.answered(s(1.1), true);
        assert!(l.enabled());
        assert!(close(l.measured(), 2.56), "{}", l.measured());
        assert!(close(l.rate(), 1.792), "{}", l.rate());
        // The bucket fills even while the limiter is off: 0.1 token by 0.1 s (rate 1), then at
        // 0.5 a second +0.05 by 0.2 s, +0.2 by 0.6 s and +0.25 by 1.1 s: 0.6 tokens. An
        // attempt at 1.1 s waits (1 - 0.6) / 1.792 s.
        let wait = l.acquire(s(1.1)).unwrap();
        assert!(close(wait.as_secs_f64(), 0.4 / 1.792), "{wait:?}");
        // After that wait it goes, and the next one at once waits a whole token's time.
        assert_eq!(l.acquire(s(1.1) + wait), None);
        let next = l.acquire(s(1.1) + wait).unwrap();
        assert!(close(next.as_secs_f64(), 1.0 / 1.792), "{next:?}");
        // A success 2 s after the 429: 0.4 x (2 - cbrt(1.92))^3 + 2.56, within 2 x measured.
        l.answered(s(3.1), false);
        // The bucket of 3.0 s: 1 answer over 2 s (3.0 - 1.0) = 0.5; 0.8 x 0.5 + 0.2 x 2.56.
        let measured = 0.8 * 0.5 + 0.2 * 2.56;
        assert!(close(l.measured(), measured));
        let cubic = 0.4 * (2.0 - 1.92f64.cbrt()).powi(3) + 2.56;
        assert!(close(l.rate(), cubic.min(2.0 * measured)), "{}", l.rate());
    }
}
