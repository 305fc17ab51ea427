//! The fan-out workload's requests (`E03_WORKLOAD=fan_out`, [`e03_model::workload::FanOut`]):
//! each request called the dependency `E03_FANOUT` times at once and ended with its slowest
//! call. Counted from the client's `fan_out` records (live) or the simulator's ends: how many,
//! how many had every call succeed, their latency, and the share slower than
//! `E03_FANOUT_SLOW_MS` ("The Tail at Scale": with 100 calls each slow 1% of the time, 63% of
//! requests are slow, 1 - 0.99^100).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::quantiles::{histogram, quantile_ms};

/// The tally of one run's fan-out requests.
#[derive(Debug, Clone)]
pub struct FanOutAcc {
    slow_us: u64,
    requests: u64,
    succeeded: u64,
    degraded: u64,
    slow: u64,
    latency: Histogram<u64>,
}

/// One run's fan-out figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanOutMetrics {
    /// Requests that ended.
    pub requests: u64,
    /// Of those, requests whose quorum succeeded (every call, unless `E03_FANOUT_QUORUM`), a
    /// fallback's answer counting as a success.
    pub succeeded: u64,
    /// Of those, requests served degraded: with a fallback's answer for a failed call (a
    /// strategy's `fallbacks`).
    #[serde(default)]
    pub degraded: u64,
    /// The latency past which a request is slow (`E03_FANOUT_SLOW_MS`).
    pub slow_ms: f64,
    /// Requests that took longer than `slow_ms`.
    pub slow: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl FanOutMetrics {
    /// The share of requests slower than `slow_ms`; `None` without requests.
    pub fn slow_share(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.slow as f64 / self.requests as f64)
    }

    /// The share of requests served degraded; `None` without requests.
    pub fn degraded_share(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.degraded as f64 / self.requests as f64)
    }

    /// The share of requests that succeeded; `None` without requests.
    pub fn success(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.succeeded as f64 / self.requests as f64)
    }
}

impl FanOutAcc {
    /// A request slower than `slow` is slow.
    pub fn new(slow: Duration) -> Self {
        FanOutAcc {
            slow_us: slow.as_micros() as u64,
            requests: 0,
            succeeded: 0,
            degraded: 0,
            slow: 0,
            latency: histogram(),
        }
    }

    /// A request that started at `start_us` ended at `end_us`; `success`: its quorum
    /// succeeded; `degraded`: with a fallback's answer.
    pub fn request(&mut self, start_us: u64, end_us: u64, success: bool, degraded: bool) {
        let took = end_us.saturating_sub(start_us);
        self.requests += 1;
        self.succeeded += u64::from(success);
        self.degraded += u64::from(degraded);
        self.slow += u64::from(took > self.slow_us);
        self.latency.saturating_record(took);
    }

    pub fn finish(self) -> FanOutMetrics {
        FanOutMetrics {
            requests: self.requests,
            succeeded: self.succeeded,
            degraded: self.degraded,
            slow_ms: self.slow_us as f64 / 1000.0,
            slow: self.slow,
            p50_ms: quantile_ms(&self.latency, 0.5),
            p99_ms: quantile_ms(&self.latency, 0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_slow_only_past_the_threshold() {
        let mut a = FanOutAcc::new(Duration::from_millis(1000));
        a.request(0, 1_000_000, true, false); // exactly 1 s: not slow
        a.request(5_000, 1_005_001, true, true); // 1 s and 1 µs: slow; degraded
        a.request(0, 10_000, false, false);
        a.request(0, 1_500_000, true, false);
        let m = a.finish();
        assert_eq!((m.requests, m.succeeded, m.slow, m.degraded), (4, 3, 2, 1));
        assert_eq!(m.slow_share(), Some(0.5));
        assert_eq!(m.success(), Some(0.75));
        assert_eq!(m.degraded_share(), Some(0.25));
        assert_eq!(m.slow_ms, 1000.0);
        assert_eq!(
            FanOutAcc::new(Duration::from_secs(1)).finish().slow_share(),
            None
        );
    }
}
