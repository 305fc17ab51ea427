//! Adaptive concurrency limits in front of the dependency's workers and queue, after Netflix's
//! concurrency-limits library ("Performance Under Load", Netflix Technology Blog, 2018): a
//! request that arrives while the limit's worth of requests are in the dependency (on a worker
//! or queued) is refused at once, 503 without work
//! ([`crate::dependency::Admission::Limited`]). Each admitted request is a sample when it
//! leaves: its round trip (arrival to answer), the requests in flight when it was admitted
//! (itself included), and whether it was dropped (a queue timeout, a freeze). Two of the
//! library's limits, each with its defaults:
//!
//! - [`AimdLimit`], loss based;
//! - [`Gradient2Limit`], latency based.
//!
//! Sans IO, no clock: the dependency model feeds the samples ([`LimitState::sample`]).

use std::time::Duration;

/// An adaptive concurrency limit, after Netflix's concurrency-limits library (`AIMDLimit`, the
/// "loss based" limit of its core). After each sample the limit becomes
///
/// - `limit x backoff_ratio` (rounded down) when the sample was dropped (a queue timeout) or
///   its round trip exceeded `timeout`;
/// - `limit + 1` when its in-flight count was at least half the limit (the limit was in use);
/// - unchanged otherwise;
///
/// then is kept within `[min, max]`. The library's defaults, kept here: initial and minimum 20,
/// maximum 200, backoff ratio 0.9, timeout 5 s (`E03_LIMIT_TIMEOUT_MS` moves the timeout).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AimdLimit {
    pub initial: u32,
    pub min: u32,
    pub max: u32,
    pub backoff_ratio: f64,
    /// A round trip longer than this counts as a drop.
    pub timeout: Duration,
}

impl Default for AimdLimit {
    fn default() -> Self {
        AimdLimit {
            initial: 20,
            min: 20,
            max: 200,
            backoff_ratio: 0.9,
            timeout: Duration::from_secs(5),
        }
    }
}

impl AimdLimit {
    /// The limit after one sample under `limit`: `rtt` and whether the request was dropped,
    /// `inflight` the requests in the dependency when it was admitted (itself included).
    pub fn next(&self, limit: u32, rtt: Duration, inflight: u32, dropped: bool) -> u32 {
        let next = if dropped || rtt > self.timeout {
            (limit as f64 * self.backoff_ratio) as u32
        } else if inflight.saturating_mul(2) >= limit {
            limit + 1
        } else {
            limit
        };
        next.clamp(self.min, self.max.max(self.min))
    }
}

/// The latency-based limit of Netflix's concurrency-limits library (`Gradient2Limit`, its
/// source read for this), updated on every sample as the library's `_update` is:
///
/// - `short` is the sample's round trip; `long` an exponential average of the round trips
///   (the first `warmup` samples averaged plainly, then a factor of `2 / (long_window + 1)`);
/// - when `long / short > 2`, `long` is cut to 90% (latency is back to normal after a long
///   overload);
/// - when the sample's in-flight count is below half the estimate, nothing changes (the
///   caller, not the dependency, limits the load);
/// - otherwise `gradient = clamp(long / short, 0.5, 1)`, and the estimate becomes
///   `estimate x (1 - smoothing) + (estimate x gradient + queue_size) x smoothing`, kept within
///   `[min, max]`.
///
/// The limit is the estimate rounded down. Drops do not count (the library ignores them here).
/// The library's defaults, kept here: initial and minimum 20, maximum 200, smoothing 0.2, a
/// queue size of 4, a long window of 600 samples after a warm-up of 10. Unlike Java's
/// `Math.min`, a round trip of zero (a ratio that is not a number) leaves the gradient at 1.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gradient2Limit {
    pub initial: u32,
    pub min: u32,
    pub max: u32,
    pub smoothing: f64,
    pub queue_size: u32,
    pub long_window: u32,
    pub warmup: u32,
}

impl Default for Gradient2Limit {
    fn default() -> Self {
        Gradient2Limit {
            initial: 20,
            min: 20,
            max: 200,
            smoothing: 0.2,
            queue_size: 4,
            long_window: 600,
            warmup: 10,
        }
    }
}

/// What [`Gradient2Limit`] keeps between samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gradient2State {
    pub estimate: f64,
    /// The long round trip, in seconds, and how many samples the warm-up has summed.
    pub long: f64,
    sum: f64,
    count: u32,
}

impl Gradient2Limit {
    pub fn start(&self) -> Gradient2State {
        Gradient2State {
            estimate: self.initial as f64,
            long: 0.0,
            sum: 0.0,
            count: 0,
        }
    }

    /// One sample: `rtt`, and `inflight` the requests in the dependency when it was admitted
    /// (itself included). Returns the limit.
    pub fn update(&self, st: &mut Gradient2State, rtt: Duration, inflight: u32) -> u32 {
        let short = rtt.as_secs_f64();
        if st.count < self.warmup {
            st.count += 1;
            st.sum += short;
            st.long = st.sum / st.count as f64;
        } else {
            let factor = 2.0 / (self.long_window as f64 + 1.0);
            st.long = st.long * (1.0 - factor) + short * factor;
        }
        if st.long / short > 2.0 {
            st.long *= 0.9;
        }
        if (inflight as f64) < st.estimate / 2.0 {
            return st.estimate as u32;
        }
        let ratio = st.long / short;
        let gradient = if ratio.is_nan() {
            1.0
        } else {
            ratio.clamp(0.5, 1.0)
        };
        let next = st.estimate * gradient + self.queue_size as f64;
        let next = st.estimate * (1.0 - self.smoothing) + next * self.smoothing;
        st.estimate = next.clamp(self.min as f64, self.max.max(self.min) as f64);
        st.estimate as u32
    }
}

/// Which adaptive limit a dependency has ([`crate::dependency::ServiceConfig`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConcurrencyLimit {
    Aimd(AimdLimit),
    Gradient2(Gradient2Limit),
}

/// The names `E03_CONCURRENCY_LIMIT` and a strategy table's `concurrency_limit` accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    #[default]
    None,
    Aimd,
    Gradient2,
}

impl LimitKind {
    pub const ACCEPTS: &'static str = "none, aimd or gradient2";

    pub fn parse(name: &str) -> Option<LimitKind> {
        match name {
            "none" => Some(LimitKind::None),
            "aimd" => Some(LimitKind::Aimd),
            "gradient2" => Some(LimitKind::Gradient2),
            _ => None,
        }
    }

    /// The limit of this kind with the library's defaults, AIMD's timeout `aimd_timeout`.
    pub fn limit(self, aimd_timeout: Duration) -> Option<ConcurrencyLimit> {
        match self {
            LimitKind::None => None,
            LimitKind::Aimd => Some(ConcurrencyLimit::Aimd(AimdLimit {
                timeout: aimd_timeout,
                ..AimdLimit::default()
            })),
            LimitKind::Gradient2 => Some(ConcurrencyLimit::Gradient2(Gradient2Limit::default())),
        }
    }
}

/// A limit in a running dependency: its settings and what it keeps between samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LimitState {
    Aimd {
        spec: AimdLimit,
        limit: u32,
    },
    Gradient2 {
        spec: Gradient2Limit,
        state: Gradient2State,
    },
}

impl LimitState {
    pub fn start(spec: &ConcurrencyLimit) -> LimitState {
        match *spec {
            ConcurrencyLimit::Aimd(a) => LimitState::Aimd {
                spec: a,
                limit: a.initial.clamp(a.min, a.max.max(a.min)),
            },
            ConcurrencyLimit::Gradient2(g) => LimitState::Gradient2 {
                spec: g,
                state: g.start(),
            },
        }
    }

    /// The limit now.
    pub fn limit(&self) -> u32 {
        match self {
            LimitState::Aimd { limit, .. } => *limit,
            LimitState::Gradient2 { state, .. } => state.estimate as u32,
        }
    }

    /// One request left: its round trip, its in-flight count at admission, whether it was
    /// dropped. Moves the limit.
    pub fn sample(&mut self, rtt: Duration, inflight: u32, dropped: bool) {
        match self {
            LimitState::Aimd { spec, limit } => *limit = spec.next(*limit, rtt, inflight, dropped),
            LimitState::Gradient2 { spec, state } => {
                spec.update(state, rtt, inflight);
            }
        }
    }
}

/// The same limits on the caller's side (issue "Hedging and adaptive clients", item 5): one
/// strategy's clients share a limit on their attempts in flight, as one Netflix
/// concurrency-limits `SimpleLimiter` in a client process is shared by its callers. An attempt
/// that finds the limit's worth in flight is not sent: it fails fast
/// ([`crate::budget::Rejection::ConcurrencyLimited`]; the library's `acquire` returns empty).
/// Every sent attempt is a sample when it ends (the library's listener): its round trip, the
/// attempts in flight when it left (itself included), and whether it was dropped (a failure
/// the strategy would retry: a timeout, a broken connection, a 5xx or a 429: `onDropped`). An
/// answer no retry can fix (a 4xx) frees its place without a sample (`onIgnore`). The limits'
/// defaults are the library's ([`AimdLimit`], [`Gradient2Limit`]).
#[derive(Debug, Clone)]
pub struct ClientLimiter {
    state: LimitState,
    inflight: u32,
}

/// How a sent attempt ended, for a [`ClientLimiter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientSample {
    /// Answered well (2xx): a sample.
    Success,
    /// A failure the strategy would retry: a sample, dropped.
    Dropped,
    /// A failure no retry can fix: no sample.
    Ignore,
}

impl ClientLimiter {
    pub fn new(limit: &ConcurrencyLimit) -> Self {
        ClientLimiter {
            state: LimitState::start(limit),
            inflight: 0,
        }
    }

    /// The limit now.
    pub fn limit(&self) -> u32 {
        self.state.limit()
    }

    /// Attempts in flight.
    pub fn in_flight(&self) -> u32 {
        self.inflight
    }

    /// Whether one more attempt may go now.
    pub fn has_room(&self) -> bool {
        self.inflight < self.state.limit()
    }

    /// An attempt leaves: the attempts in flight, itself included (its sample's count).
    pub fn acquire(&mut self) -> u32 {
        self.inflight += 1;
        self.inflight
    }

    /// An attempt that left with `inflight` in flight ended after `rtt`.
    pub fn release(&mut self, rtt: Duration, inflight: u32, sample: ClientSample) {
        self.inflight = self.inflight.saturating_sub(1);
        match sample {
            ClientSample::Success => self.state.sample(rtt, inflight, false),
            ClientSample::Dropped => self.state.sample(rtt, inflight, true),
            ClientSample::Ignore => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client-side AIMD limit from 2 (min 1, max 3, ratio 0.5, timeout 60 ms), by hand: two
    /// attempts fill it; a third is refused; an answer at 2 in flight (2 x 2 >= 2) grows it to
    /// 3; a drop halves it to 1; a 4xx frees its place and moves nothing.
    #[test]
    fn a_client_limiter_refuses_what_is_over_its_limit_and_learns_from_each_answer() {
        let mut c = ClientLimiter::new(&ConcurrencyLimit::Aimd(AimdLimit {
            initial: 2,
            min: 1,
            max: 3,
            backoff_ratio: 0.5,
            timeout: ms(60),
        }));
        assert_eq!(c.acquire(), 1);
        assert_eq!(c.acquire(), 2);
        assert!(!c.has_room(), "2 in flight, limit 2");
        c.release(ms(10), 2, ClientSample::Success);
        assert_eq!((c.limit(), c.in_flight()), (3, 1));
        assert!(c.has_room());
        assert_eq!(c.acquire(), 2);
        c.release(ms(10), 1, ClientSample::Dropped);
        assert_eq!((c.limit(), c.in_flight()), (1, 1));
        assert!(!c.has_room());
        c.release(ms(10), 2, ClientSample::Ignore);
        assert_eq!((c.limit(), c.in_flight()), (1, 0));
        // A round trip over the timeout is a drop too: already at its min.
        assert_eq!(c.acquire(), 1);
        c.release(ms(61), 1, ClientSample::Success);
        assert_eq!(c.limit(), 1);
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Netflix's `AIMDLimit._update`, by hand: a drop or a round trip over the timeout cuts
    /// the limit to `limit x 0.9` rounded down; a sample whose in-flight count was at least
    /// half the limit adds one; otherwise nothing; always within `[min, max]`.
    #[test]
    fn the_aimd_limit_follows_netflix_s_update_rule() {
        let d = AimdLimit::default();
        assert_eq!(
            (d.initial, d.min, d.max, d.backoff_ratio, d.timeout),
            (20, 20, 200, 0.9, ms(5000))
        );
        let l = AimdLimit { min: 1, ..d };
        assert_eq!(l.next(20, ms(10), 10, false), 21, "10 x 2 >= 20");
        assert_eq!(l.next(20, ms(10), 9, false), 20, "9 x 2 < 20");
        assert_eq!(l.next(20, ms(10), 20, true), 18, "dropped: 20 x 0.9");
        assert_eq!(
            l.next(18, ms(5001), 18, false),
            16,
            "too slow: 16.2 rounded down"
        );
        assert_eq!(l.next(1, ms(5001), 1, false), 1, "never below min");
        assert_eq!(l.next(200, ms(10), 200, false), 200, "never above max");
        assert_eq!(d.next(20, ms(10), 20, true), 20, "the default min is 20");
    }

    /// Netflix's `Gradient2Limit._update`, by hand, with the library's defaults (smoothing
    /// 0.2, queue size 4, warm-up 10, window 600, limits 20 to 200), estimate starting at 20:
    ///
    /// 1. 40 ms, 20 in flight: long = 40 (warm-up mean), gradient 1:
    ///    20 x 0.8 + (20 x 1 + 4) x 0.2 = 20.8, limit 20;
    /// 2. 40 ms, 5 in flight (< 20.8 / 2): unchanged, long = 40;
    /// 3. 80 ms, 21 in flight: long = (40 + 40 + 80) / 3 = 53.33, gradient 53.33 / 80 = 0.667:
    ///    20.8 x 0.8 + (20.8 x 0.667 + 4) x 0.2 = 20.213, limit 20;
    /// 4. 20 ms, 20 in flight: long = (160 + 20) / 4 = 45, 45 / 20 > 2 so long = 40.5,
    ///    gradient min(1, 2.025) = 1: 20.213 x 0.8 + 24.213 x 0.2 = 21.013, limit 21;
    /// 5. 1000 ms, 21 in flight: long = (180 + 1000) / 5 = 236, gradient max(0.5, 0.236) =
    ///    0.5: 21.013 x 0.8 + (10.507 + 4) x 0.2 = 19.712, kept at the minimum 20.
    #[test]
    fn the_gradient2_limit_follows_netflix_s_update_rule() {
        let g = Gradient2Limit::default();
        assert_eq!(
            (
                g.initial,
                g.min,
                g.max,
                g.smoothing,
                g.queue_size,
                g.long_window,
                g.warmup
            ),
            (20, 20, 200, 0.2, 4, 600, 10)
        );
        let mut st = g.start();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!(g.update(&mut st, ms(40), 20), 20);
        assert!(close(st.estimate, 20.8), "{st:?}");
        assert_eq!(g.update(&mut st, ms(40), 5), 20);
        assert!(close(st.estimate, 20.8) && close(st.long, 0.040), "{st:?}");
        assert_eq!(g.update(&mut st, ms(80), 21), 20);
        let e3 = 20.8 * 0.8 + (20.8 * (0.16 / 3.0 / 0.08) + 4.0) * 0.2;
        assert!(close(st.estimate, e3), "{st:?}");
        assert_eq!(g.update(&mut st, ms(20), 20), 21);
        assert!(close(st.long, 0.045 * 0.9), "{st:?}");
        assert!(close(st.estimate, e3 * 0.8 + (e3 + 4.0) * 0.2), "{st:?}");
        assert_eq!(g.update(&mut st, ms(1000), 21), 20);
        assert!(close(st.estimate, 20.0), "{st:?}");
        // After the warm-up the long round trip is an exponential average, factor 2 / 601.
        let mut st = g.start();
        for _ in 0..10 {
            g.update(&mut st, ms(40), 1);
        }
        g.update(&mut st, ms(100), 1);
        let f = 2.0 / 601.0;
        assert!(close(st.long, 0.040 * (1.0 - f) + 0.100 * f), "{st:?}");
        // Never above the maximum.
        let mut st = Gradient2State {
            estimate: 200.0,
            ..g.start()
        };
        assert_eq!(g.update(&mut st, ms(40), 200), 200);
        // A round trip of zero: 0 / 0 is not a number, and the gradient stays 1.
        let mut st = g.start();
        assert_eq!(g.update(&mut st, Duration::ZERO, 20), 20);
        assert!(close(st.estimate, 20.8), "{st:?}");
    }

    #[test]
    fn kinds_parse_and_give_the_library_s_defaults() {
        assert_eq!(LimitKind::parse("gradient2"), Some(LimitKind::Gradient2));
        assert_eq!(LimitKind::parse("vegas"), None);
        assert_eq!(LimitKind::None.limit(ms(100)), None);
        assert_eq!(
            LimitKind::Aimd.limit(ms(100)),
            Some(ConcurrencyLimit::Aimd(AimdLimit {
                timeout: ms(100),
                ..AimdLimit::default()
            }))
        );
        let spec = LimitKind::Gradient2.limit(ms(100)).unwrap();
        let mut st = LimitState::start(&spec);
        assert_eq!(st.limit(), 20);
        st.sample(ms(40), 20, true);
        assert_eq!(st.limit(), 20, "20.8 rounded down; a drop does not count");
        let mut aimd = LimitState::start(&LimitKind::Aimd.limit(ms(100)).unwrap());
        aimd.sample(ms(40), 20, false);
        assert_eq!(aimd.limit(), 21, "AIMD's +1");
    }
}
