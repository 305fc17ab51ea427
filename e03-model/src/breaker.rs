//! The circuit breaker: a state machine over a sliding window of attempt results.
//!
//! The semantics are those of the reliability-patterns article's breaker (Nygard's pattern as Polly implements it):
//!
//! - **Closed**: attempts pass and their results are sampled. Samples older than the sampling
//!   window are dropped. Once the window holds at least `min_throughput` samples and at least
//!   `failure_ratio` of them failed, the breaker opens.
//! - **Open**: every attempt fails fast (it never reaches the dependency) until `break_duration`
//!   has passed since it opened; the first attempt after that makes it half-open.
//! - **HalfOpen**: one probe goes through (a second attempt while the probe is out fails fast).
//!   A failed probe reopens the breaker; a successful one closes it. Either way the samples are
//!   cleared.
//!
//! Times are `now` since the run's time zero, in whole microseconds, so a simulated run gives
//! the seed's transitions to the microsecond.

use std::collections::VecDeque;
use std::time::Duration;

use crate::budget::{AttemptClass, Rejection};

/// A breaker's parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BreakerSpec {
    /// Opens when at least this share of the sampled attempts failed (0.5 = 50%).
    pub failure_ratio: f64,
    /// ... and the window holds at least this many samples.
    pub min_throughput: u32,
    /// Samples older than this many milliseconds are dropped.
    pub sampling_window_ms: u64,
    /// How long it stays open before letting a probe through, in milliseconds.
    pub break_duration_ms: u64,
}

impl BreakerSpec {
    fn sampling_window(&self) -> Duration {
        Duration::from_millis(self.sampling_window_ms)
    }

    fn break_duration(&self) -> Duration {
        Duration::from_millis(self.break_duration_ms)
    }
}

/// The three states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

/// One state change, for the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub at: Duration,
    pub from: BreakerState,
    pub to: BreakerState,
}

/// A circuit breaker's state.
#[derive(Debug, Clone)]
pub struct Breaker {
    spec: BreakerSpec,
    state: BreakerState,
    opened_at: Duration,
    /// (time, failed) of the sampled attempts, oldest first.
    samples: VecDeque<(Duration, bool)>,
    /// A half-open probe is out.
    probing: bool,
    transitions: Vec<Transition>,
}

impl Breaker {
    pub fn new(spec: BreakerSpec) -> Self {
        Self {
            spec,
            state: BreakerState::Closed,
            opened_at: Duration::ZERO,
            samples: VecDeque::new(),
            probing: false,
            transitions: Vec::new(),
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// The state changes since the last call, oldest first.
    pub fn take_transitions(&mut self) -> Vec<Transition> {
        std::mem::take(&mut self.transitions)
    }

    fn go(&mut self, now: Duration, to: BreakerState) {
        let from = self.state;
        self.state = to;
        if to == BreakerState::Open {
            self.opened_at = now;
        }
        self.transitions.push(Transition { at: now, from, to });
    }

    /// An attempt wants to go at `now`.
    pub fn admit(&mut self, now: Duration) -> Result<(), Rejection> {
        if self.state == BreakerState::Open
            && now.saturating_sub(self.opened_at) >= self.spec.break_duration()
        {
            self.go(now, BreakerState::HalfOpen);
            self.probing = false;
        }
        match self.state {
            BreakerState::Closed => Ok(()),
            BreakerState::Open => Err(Rejection::BreakerOpen),
            BreakerState::HalfOpen if self.probing => Err(Rejection::BreakerOpen),
            BreakerState::HalfOpen => {
                self.probing = true;
                Ok(())
            }
        }
    }

    /// A sent attempt ended at `now`. Permanent errors (400, 404, ...) count as successes: the
    /// dependency answered, the request was wrong.
    pub fn record(&mut self, now: Duration, class: AttemptClass) {
        let failed = matches!(class, AttemptClass::Failure(_));
        if self.state == BreakerState::HalfOpen {
            if !self.probing {
                // An attempt sent before the breaker opened, ending late: not the probe.
                return;
            }
            self.probing = false;
            self.samples.clear();
            let to = if failed {
                BreakerState::Open
            } else {
                BreakerState::Closed
            };
            self.go(now, to);
            return;
        }
        self.samples.push_back((now, failed));
        while let Some(&(at, _)) = self.samples.front() {
            if now.saturating_sub(at) > self.spec.sampling_window() {
                self.samples.pop_front();
            } else {
                break;
            }
        }
        let count = self.samples.len();
        let failures = self.samples.iter().filter(|(_, f)| *f).count();
        if self.state == BreakerState::Closed
            && count >= self.spec.min_throughput as usize
            && failures as f64 >= self.spec.failure_ratio * count as f64
        {
            self.go(now, BreakerState::Open);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::RetryCause;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// The reliability-patterns article's run, by hand: one call every 50 ms for 12 s, the dependency down for the first
    /// 6 s, answers instant; at least 10 calls in 2 s, 50% failures, open 2 s.
    #[test]
    fn seed_003_breaker_run_is_exact() {
        let mut b = Breaker::new(BreakerSpec {
            failure_ratio: 0.5,
            min_throughput: 10,
            sampling_window_ms: 2000,
            break_duration_ms: 2000,
        });
        let (mut sent, mut fast) = (0, 0);
        for k in 0..240u64 {
            let now = ms(50 * k);
            if b.admit(now).is_err() {
                fast += 1;
                continue;
            }
            sent += 1;
            let class = if now < ms(6000) {
                AttemptClass::Failure(RetryCause::Error)
            } else {
                AttemptClass::Success
            };
            b.record(now, class);
        }
        assert_eq!((sent, fast), (123, 117));
        let t: Vec<_> = b
            .take_transitions()
            .iter()
            .map(|t| (t.at.as_millis(), t.from, t.to))
            .collect();
        use BreakerState::*;
        assert_eq!(
            t,
            vec![
                (450, Closed, Open),
                (2450, Open, HalfOpen),
                (2450, HalfOpen, Open),
                (4450, Open, HalfOpen),
                (4450, HalfOpen, Open),
                (6450, Open, HalfOpen),
                (6450, HalfOpen, Closed),
            ]
        );
    }

    #[test]
    fn half_open_lets_one_probe_through() {
        let mut b = Breaker::new(BreakerSpec {
            failure_ratio: 0.5,
            min_throughput: 1,
            sampling_window_ms: 1000,
            break_duration_ms: 100,
        });
        b.admit(ms(0)).unwrap();
        b.record(ms(1), AttemptClass::Failure(RetryCause::Timeout));
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.admit(ms(50)), Err(Rejection::BreakerOpen));
        assert!(b.admit(ms(101)).is_ok(), "the probe");
        assert_eq!(
            b.admit(ms(102)),
            Err(Rejection::BreakerOpen),
            "one probe only"
        );
        b.record(ms(110), AttemptClass::Permanent);
        assert_eq!(b.state(), BreakerState::Closed, "a 4xx answer is an answer");
        assert!(b.admit(ms(111)).is_ok());
    }
}
