//! Hedging: send another copy of an attempt while the first is still out, and take whichever
//! answers first (Dean and Barroso, "The Tail at Scale", CACM 2013: "defer sending a secondary
//! request until the first request has been outstanding for more than the 95th-percentile
//! expected latency").
//!
//! The rules are gRPC's hedging policy (proposal A6, "gRPC Retry Design", sections "Hedging
//! Policy", "Throttling Retry Attempts and Hedged RPCs" and "Summary of Retry and Hedging
//! Logic"):
//!
//! - the first attempt goes at once; while no answer has ended the call, attempt `n + 1` goes
//!   `delay` after attempt `n`, up to `max_attempts` in all ("after 1ms there would be one
//!   outstanding RPC, after 501ms two, ...");
//! - a good answer ends the call, and every other attempt still out is cancelled;
//! - a non-fatal status (the lab: an answer the strategy would retry) sends the next hedge at
//!   once, "shortcutting its hedging delay"; the ones after it resume at `delay`;
//! - any other status (the lab: a permanent answer) ends the call and cancels the rest;
//! - "subsequent hedged RPCs will only be sent if `token_count` is greater than the threshold":
//!   every hedge asks the strategy's budget ([`crate::budget::RetryBudget::withdraw`]); once
//!   refused, no hedge follows, and the call ends when the attempts already out have;
//! - "if all instances of a hedged RPC fail, there are no additional retry attempts";
//! - a pushback ("retry in n ms"; the lab's `Retry-After`) sends the next hedge after it.
//!
//! Cancelled copies count as sent: the dependency still does their work, and logs it.
//!
//! The state machine is [`crate::session::ClientSession`]'s; this module holds the policy's
//! data and the latency record a percentile delay reads.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::spec_error::SpecError;

/// gRPC A6's client-side cap on `maxAttempts` ("Limits on Retries and Hedges": 5).
pub const GRPC_MAX_ATTEMPTS: u32 = 5;

/// Polly v8's hedging cap: `MaxHedgedAttempts` is at most 10 (so 11 attempts in all).
pub const MAX_ATTEMPTS: u32 = 11;

/// A percentile delay hedges only once the record holds this many round trips; before that, no
/// hedge is sent (there is no "expected latency" yet).
pub const PERCENTILE_MIN_SAMPLES: u64 = 20;

/// When the next hedge goes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HedgeDelay {
    /// A fixed delay (A6's `hedgingDelay`, Polly's `Delay`).
    Fixed { delay_us: u64 },
    /// The given percentile of the round trips of the good answers the strategy's clients have
    /// had so far (Tail at Scale's "95th-percentile expected latency"), nearest rank, read when
    /// the hedge is scheduled; no hedge before [`PERCENTILE_MIN_SAMPLES`] of them.
    Percentile { pct: f64 },
}

/// A strategy's hedging policy. A strategy that hedges does not retry ("only one of
/// retryPolicy or hedgingPolicy may be set").
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HedgeSpec {
    /// Attempts in all, the first one included: 2 to [`MAX_ATTEMPTS`].
    pub max_attempts: u32,
    pub delay: HedgeDelay,
}

impl HedgeSpec {
    /// The delay after an attempt sent now, if a hedge may follow it: the fixed delay, or the
    /// percentile of `record` (`None` while it holds too few round trips).
    pub fn delay_now(&self, record: Option<&LatencyRecord>) -> Option<Duration> {
        match self.delay {
            HedgeDelay::Fixed { delay_us } => Some(Duration::from_micros(delay_us)),
            HedgeDelay::Percentile { pct } => record.and_then(|r| r.percentile(pct)),
        }
    }

    /// Checks the ranges a table or a preset must keep.
    pub fn validate(&self) -> Result<(), SpecError> {
        if !(2..=MAX_ATTEMPTS).contains(&self.max_attempts) {
            return Err(SpecError::value(
                "hedge max_attempts",
                self.max_attempts,
                format!("a whole number from 2 to {MAX_ATTEMPTS}"),
            ));
        }
        if let HedgeDelay::Percentile { pct } = self.delay {
            if !(pct > 0.0 && pct < 100.0) {
                return Err(SpecError::value(
                    "hedge percentile",
                    pct,
                    "a number greater than 0 and less than 100",
                ));
            }
        }
        Ok(())
    }
}

/// The round trips of the good answers a strategy's clients had, for a percentile delay: every
/// one, in µs, counted by value (the percentile is exact, nearest rank).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyRecord {
    counts: BTreeMap<u64, u64>,
    n: u64,
}

impl LatencyRecord {
    pub fn new() -> Self {
        Self::default()
    }

    /// One more round trip.
    pub fn add(&mut self, rtt: Duration) {
        *self.counts.entry(rtt.as_micros() as u64).or_insert(0) += 1;
        self.n += 1;
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `pct` percentile, nearest rank: the smallest value with at least `ceil(pct/100 x n)`
    /// round trips at or below it; `None` under [`PERCENTILE_MIN_SAMPLES`].
    pub fn percentile(&self, pct: f64) -> Option<Duration> {
        if self.n < PERCENTILE_MIN_SAMPLES {
            return None;
        }
        let rank = ((pct / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        // Walk down from the top: a high percentile is near it.
        let mut above = 0;
        for (&v, &c) in self.counts.iter().rev() {
            if self.n - above - c < rank {
                return Some(Duration::from_micros(v));
            }
            above += c;
        }
        unreachable!("rank {rank} of {} round trips", self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Nearest rank by hand: 20 round trips of 1..=20 ms; p95 is rank ceil(19) = 19, so 19 ms;
    /// p50 rank 10, 10 ms; p96 rank ceil(19.2) = 20, 20 ms.
    #[test]
    fn the_percentile_is_the_nearest_rank() {
        let mut r = LatencyRecord::new();
        for v in (1..=20).rev() {
            r.add(ms(v));
        }
        assert_eq!(r.percentile(95.0), Some(ms(19)));
        assert_eq!(r.percentile(50.0), Some(ms(10)));
        assert_eq!(r.percentile(96.0), Some(ms(20)));
        assert_eq!(r.percentile(1.0), Some(ms(1)));
        // Ties count once each: 19 more of 5 ms (39 in all), p95 rank ceil(37.05) = 38: the
        // values sorted are 1..=4 (4), 5 x 20 (to 24), 6..=20 (to 39); rank 38 is 19 ms.
        for _ in 0..19 {
            r.add(ms(5));
        }
        assert_eq!(r.percentile(95.0), Some(ms(19)));
        assert_eq!(r.percentile(50.0), Some(ms(5)));
    }

    #[test]
    fn no_percentile_before_twenty_round_trips() {
        let mut r = LatencyRecord::new();
        for _ in 0..PERCENTILE_MIN_SAMPLES - 1 {
            r.add(ms(10));
        }
        let spec = HedgeSpec {
            max_attempts: 2,
            delay: HedgeDelay::Percentile { pct: 95.0 },
        };
        assert_eq!(spec.delay_now(Some(&r)), None);
        r.add(ms(10));
        assert_eq!(spec.delay_now(Some(&r)), Some(ms(10)));
        let fixed = HedgeSpec {
            max_attempts: 2,
            delay: HedgeDelay::Fixed { delay_us: 50_000 },
        };
        assert_eq!(fixed.delay_now(None), Some(ms(50)));
    }

    #[test]
    fn the_ranges_are_checked() {
        let bad = HedgeSpec {
            max_attempts: 1,
            delay: HedgeDelay::Fixed { delay_us: 0 },
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_attempts"));
        let bad = HedgeSpec {
            max_attempts: 2,
            delay: HedgeDelay::Percentile { pct: 100.0 },
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("percentile"));
    }
}
