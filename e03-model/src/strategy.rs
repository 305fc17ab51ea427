//! Retry strategies as data.
//!
//! A strategy is a value: a backoff (base, growth, cap), a jitter kind and an optional budget.
//! The one client loop asks it for the wait before retry `n`; a new strategy (equal or
//! decorrelated jitter, another budget) is a new value, not a new loop.

use std::time::Duration;

use rand::Rng;

use crate::attempt::{AttemptResult, Broken};
use crate::breaker::BreakerSpec;
use crate::budget::{AttemptClass, BudgetSpec, RetryCause};

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
    /// Polly's DecorrelatedJitterBackoffV2 (the .NET default for exponential + jitter): the
    /// backoff's base is the median first wait and its cap the maximum; the growth is the
    /// formula's own (see [`polly_v2_step`]).
    PollyV2,
    /// The backoff times a factor uniform in `[1 - spread, 1 + spread]` (resilience4j's
    /// randomized wait, gRPC's connection backoff with 0.2), `spread_pct` in percent (at most
    /// 100). As in both libraries, the factor applies after the cap, so a wait may exceed the
    /// cap by the spread.
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
    /// such as 400, 401, 403, 404, 409 or 422 (the retry-logic article's rule).
    #[default]
    Standard,
    /// Retry every failure, permanent or not (the cost of not classifying).
    Everything,
    /// Statuses as `Standard`; of the failures without an answer, only those where the
    /// request never left (connect refused, connect timeout). A read timeout or a reset may
    /// come after the dependency did the work, so it is final. This is urllib3's rule for a
    /// method outside `Retry.allowed_methods` (a `POST`): "connect" errors are retried, "read"
    /// errors are not, "since the request may have side-effects" (urllib3 2.x,
    /// `urllib3.util.Retry`).
    ConnectOnly,
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
    /// The backoff base after a throttling answer (429, or a `Retry-After`), when the strategy
    /// has its own (the AWS SDKs' 2026 behaviour: 1 s, against 50 ms after other errors);
    /// `None` keeps the backoff's base.
    #[serde(default)]
    pub throttle_base_ms: Option<u64>,
    /// `Some`: the strategy's operations are charges (`POST /charge`) and this says which
    /// `Idempotency-Key` each attempt carries (the retry-logic article); `None`: plain `GET /work` (E03).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<crate::ledger::KeyPolicy>,
    /// The step workload's load level this run of the strategy has (burst items per step,
    /// the rate-limit article); its id is then `<base id>-L<load>` (table ids are lowercase, so `-L` is unambiguous). `None` for every other workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<u32>,
    /// Whether a client keeps its connection for the next attempt (issue 27's `reset-storm`).
    #[serde(default, skip_serializing_if = "Connections::is_reuse")]
    pub connections: Connections,
    /// The dependency's policy this strategy's runs face, where a table sets one (issue 24's
    /// `shedding`: one client strategy against each server policy, a row each).
    #[serde(default, skip_serializing_if = "ServerSide::is_default")]
    pub server: ServerSide,
    /// A client-side adaptive concurrency limit shared by the strategy's clients
    /// ([`crate::limit::ClientLimiter`]), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_limit: Option<crate::limit::ConcurrencyLimit>,
    /// The AWS SDKs' adaptive mode's client-side rate limiter in front of every attempt,
    /// shared by the strategy's clients ([`crate::adaptive::ClientRateLimiter`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive_rate: bool,
    /// A hedging policy ([`crate::hedge`]) in place of retries, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<crate::hedge::HedgeSpec>,
    /// Fan-out (`E03_WORKLOAD=fan_out`): the last this many calls of each request have a
    /// fallback (0: none). A call of them that fails, after its retries, is served by its
    /// fallback, and the request is served degraded instead of failing (the reliability-patterns article, "Load
    /// Shedding ve Graceful Degradation": the product page without its recommendations box, or
    /// with yesterday's list). Polly v8's fallback strategy (`AddFallback`,
    /// `FallbackStrategyOptions`): on a handled outcome, the substitute result instead; it has
    /// no default substitute (`FallbackAction` is required), so none is on unless set.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallbacks: u32,
    /// A bulkhead: the caller's slots for its calls in flight, shared by the strategy's
    /// clients (the reliability-patterns article, "Circuit Breaker ve Bulkhead": payments limited to 20 concurrent
    /// slots, the catalogue keeps working). One number: one pool every dependency shares;
    /// several: a pool per dependency (`E03_BALANCER=partition`'s replicas, in order). A call
    /// that finds its pool full fails fast (`bulkhead_full`), with no queue: .NET's
    /// `ConcurrencyLimiter` per dependency, as Polly v8's `AddConcurrencyLimiter(permitLimit,
    /// queueLimit = 0)` builds it ([`crate::bulkhead`]). Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bulkhead: Vec<u32>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// The server's side of one row of a table: the queue policy and admission rule of the
/// dependency that this strategy's runs face, in place of the run's `E03_QUEUE_POLICY` and
/// `E03_ADMISSION` (`None`: the run's). Every strategy already runs against a dependency of its
/// own, so a row can compare server policies as it compares client strategies; the live service
/// and the simulator read it through the plan's `Params::service_config_for`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ServerSide {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_policy: Option<crate::dependency::QueueDiscipline>,
    /// Which requests the row's dependency admits (all, by deadline, by priority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<crate::dependency::AdmissionRule>,
    /// The row's adaptive concurrency limit (none, aimd, gradient2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_limit: Option<crate::limit::LimitKind>,
}

impl ServerSide {
    pub fn is_default(&self) -> bool {
        *self == ServerSide::default()
    }
}

/// Whether a client keeps its connection between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Connections {
    /// Keep-alive: a client sends attempt after attempt on one connection, and opens a new one
    /// only when it was closed (every HTTP/1.1 client's default; the lab's until issue 27).
    #[default]
    Reuse,
    /// A new connection for every attempt, closed after its answer (an idle pool of size 0).
    New,
}

impl Connections {
    /// What a strategy table's `connections` key accepts.
    pub const ACCEPTS: &'static str = "reuse or new";

    pub fn is_reuse(&self) -> bool {
        *self == Connections::Reuse
    }
}

impl Strategy {
    /// This strategy as the run at load level `load` of the step workload: id `<id>-L<load>`.
    pub fn at_load(&self, load: u32) -> Strategy {
        Strategy {
            id: format!("{}-L{load}", self.base_id()),
            load: Some(load),
            ..self.clone()
        }
    }

    /// The strategy's id without its load level (the id the user named).
    pub fn base_id(&self) -> &str {
        match self.load {
            Some(_) => self.id.rsplit_once("-L").map_or(&self.id, |(b, _)| b),
            None => &self.id,
        }
    }

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
            throttle_base_ms: None,
            idempotency: None,
            load: None,
            connections: Connections::Reuse,
            server: ServerSide::default(),
            client_limit: None,
            adaptive_rate: false,
            fallbacks: 0,
            bulkhead: Vec::new(),
            hedge: None,
        })
    }

    /// The wait before retry `n` after `result` (whose `Retry-After`, if any, is applied by the
    /// strategy's [`RetryAfter`] rule).
    ///
    /// `polly` is the operation's state of Polly's DecorrelatedJitterBackoffV2 (0 before its
    /// first retry; see [`polly_v2_step`]), so consecutive waits are Polly's exact sequence.
    pub fn retry_wait<R: Rng + ?Sized>(
        &self,
        n: u32,
        previous: Duration,
        polly: &mut f64,
        result: &AttemptResult,
        rng: &mut R,
    ) -> Duration {
        let backoff = match (self.throttle_base_ms, self.classify(result)) {
            (Some(ms), AttemptClass::Failure(RetryCause::Throttled)) => {
                with_base(self.backoff, Duration::from_millis(ms))
            }
            _ => self.backoff,
        };
        let wait = self.wait_with(backoff, n, previous, Some(polly), rng);
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
        let code = match *result {
            AttemptResult::Timeout if self.classify == Classify::ConnectOnly => {
                return AttemptClass::Permanent
            }
            AttemptResult::Timeout => return AttemptClass::Failure(RetryCause::Timeout),
            AttemptResult::ConnectionError(b)
                if self.classify == Classify::ConnectOnly && !b.before_sending() =>
            {
                return AttemptClass::Permanent
            }
            // Each class by name: a connect that timed out costs what a timeout costs.
            AttemptResult::ConnectionError(b) => {
                return AttemptClass::Failure(match b {
                    Broken::ConnectTimeout => RetryCause::Timeout,
                    Broken::ConnectRefused
                    | Broken::ResetBeforeAnswer
                    | Broken::ResetMidBody
                    | Broken::Other => RetryCause::Error,
                })
            }
            AttemptResult::Status { code, .. } => code,
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
            (false, Classify::Standard | Classify::ConnectOnly) => AttemptClass::Permanent,
        }
    }

    /// The wait before retry `n` (1 for the first retry). `previous` is the wait before the
    /// previous retry (zero before the first), used by decorrelated jitter.
    pub fn wait<R: Rng + ?Sized>(&self, n: u32, previous: Duration, rng: &mut R) -> Duration {
        self.wait_with(self.backoff, n, previous, None, rng)
    }

    /// [`wait`](Self::wait) with another backoff (the throttling base) and, when the operation
    /// keeps it, Polly's formula state.
    fn wait_with<R: Rng + ?Sized>(
        &self,
        backoff: Backoff,
        n: u32,
        previous: Duration,
        polly: Option<&mut f64>,
        rng: &mut R,
    ) -> Duration {
        let (base, cap, backoff) = match backoff {
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
            Jitter::PollyV2 => match polly {
                // The operation's own state: Polly's exact sequence.
                Some(prev) => polly_v2_step(n.saturating_sub(1), base, cap, prev, rng.random()),
                // Without it (a single wait asked for), the formula's state at the previous
                // retry, f(n - 2 + u'), is drawn afresh: the wait has Polly's distribution.
                None => {
                    let mut prev = if n >= 2 {
                        polly_v2_formula(f64::from(n - 2) + rng.random::<f64>())
                    } else {
                        0.0
                    };
                    let u = rng.random::<f64>();
                    polly_v2_step(n.saturating_sub(1), base, cap, &mut prev, u)
                }
            },
            Jitter::Proportional { spread_pct } => {
                let f = f64::from(spread_pct.min(100)) / 100.0;
                let b = backoff.as_secs_f64();
                uniform(
                    rng,
                    Duration::from_secs_f64(b * (1.0 - f)),
                    Duration::from_secs_f64(b * (1.0 + f)),
                )
            }
        }
    }
}

/// `backoff` with its base (or constant wait) replaced by `base`; the cap stays.
fn with_base(backoff: Backoff, base: Duration) -> Backoff {
    match backoff {
        Backoff::Immediate => Backoff::Immediate,
        Backoff::Constant { .. } => Backoff::Constant { wait: base },
        Backoff::Exponential { cap, .. } => Backoff::Exponential { base, cap },
        Backoff::Geometric {
            cap, multiplier, ..
        } => Backoff::Geometric {
            base,
            cap,
            multiplier,
        },
    }
}

/// Polly's smoothing factor in DecorrelatedJitterBackoffV2.
const POLLY_P_FACTOR: f64 = 4.0;
/// Polly's scaling so that the median waits fall near `base`, `2 base`, `4 base`, ...
const POLLY_RP_SCALING: f64 = 1.0 / 1.4;

/// The curve under Polly's DecorrelatedJitterBackoffV2: `2^t * tanh(sqrt(4 t))`.
fn polly_v2_formula(t: f64) -> f64 {
    2f64.powf(t) * (POLLY_P_FACTOR * t).sqrt().tanh()
}

/// One wait of Polly's DecorrelatedJitterBackoffV2 (Polly's `RetryHelper`, the formula by
/// George Polevoy that Polly uses for exponential backoff with jitter; Polly.Contrib.WaitAndRetry
/// has the same): for retry index `attempt` (0 for the first retry) and a uniform `u` in
/// `[0, 1)`, `t = attempt + u`, `next = 2^t * tanh(sqrt(4 t))`, and the wait is
/// `(next - prev) / 1.4 * median_first`, at most `max`; `prev` becomes `next`. `median_first`
/// is the median of the first wait (Polly's `Delay`, 2 s by default).
///
/// `prev` is the state Polly keeps per operation; the lab's [`crate::Operation`] keeps it too
/// and passes it to [`Strategy::retry_wait`], so an operation's waits are Polly's sequence.
/// [`Strategy::wait`] alone (one wait, no operation) draws the previous step's `u` afresh: that
/// wait has Polly's distribution.
pub fn polly_v2_step(
    attempt: u32,
    median_first: Duration,
    max: Duration,
    prev: &mut f64,
    u: f64,
) -> Duration {
    let t = f64::from(attempt) + u;
    let next = polly_v2_formula(t);
    if next.is_infinite() {
        *prev = next;
        return max;
    }
    let intrinsic = next - *prev;
    *prev = next;
    let secs = intrinsic * POLLY_RP_SCALING * median_first.as_secs_f64();
    Duration::from_secs_f64(secs.clamp(0.0, max.as_secs_f64()))
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
    fn standard_classification_is_seed_004s_list_and_everything_retries_all() {
        use crate::budget::{AttemptClass, RetryCause};
        let c = Strategy::standard(
            "C",
            Duration::ZERO,
            Duration::ZERO,
            BudgetSpec::token_bucket(10.0, 0.1),
        )
        .unwrap();
        assert_eq!(c.classify, Classify::Standard);
        for code in [408, 425, 429, 500, 502, 503, 504] {
            assert!(
                matches!(
                    c.classify(&AttemptResult::status(code)),
                    AttemptClass::Failure(_)
                ),
                "{code} is retried"
            );
        }
        assert_eq!(
            c.classify(&AttemptResult::Timeout),
            AttemptClass::Failure(RetryCause::Timeout)
        );
        // Each connection failure by name: a connect timeout costs what a timeout costs.
        let broken = |b| c.classify(&AttemptResult::ConnectionError(b));
        assert_eq!(
            broken(Broken::ConnectTimeout),
            AttemptClass::Failure(RetryCause::Timeout)
        );
        for b in [
            Broken::ConnectRefused,
            Broken::ResetBeforeAnswer,
            Broken::ResetMidBody,
            Broken::Other,
        ] {
            assert_eq!(broken(b), AttemptClass::Failure(RetryCause::Error), "{b:?}");
        }
        for code in [400, 401, 403, 404, 409, 422] {
            assert_eq!(
                c.classify(&AttemptResult::status(code)),
                AttemptClass::Permanent,
                "{code} is never retried"
            );
        }
        // The `retry-everything` preset's classification.
        let all = Strategy {
            classify: Classify::Everything,
            ..c.clone()
        };
        for code in [400, 401, 403, 404, 409, 422] {
            assert_eq!(
                all.classify(&AttemptResult::status(code)),
                AttemptClass::Failure(RetryCause::Error)
            );
        }
        assert_eq!(
            all.classify(&AttemptResult::status(200)),
            AttemptClass::Success
        );
    }

    #[test]
    fn connect_only_retries_what_never_left_and_nothing_after_it_may_have_been_done() {
        // urllib3's rule for a POST: connect errors retried, read errors (a read timeout, a
        // reset after sending) final; statuses as the retry-logic article's list.
        let mut c = std("C");
        c.classify = Classify::ConnectOnly;
        let class = |r| c.classify(&r);
        assert_eq!(
            class(AttemptResult::ConnectionError(Broken::ConnectRefused)),
            AttemptClass::Failure(RetryCause::Error)
        );
        assert_eq!(
            class(AttemptResult::ConnectionError(Broken::ConnectTimeout)),
            AttemptClass::Failure(RetryCause::Timeout)
        );
        for r in [
            AttemptResult::Timeout,
            AttemptResult::ConnectionError(Broken::ResetBeforeAnswer),
            AttemptResult::ConnectionError(Broken::ResetMidBody),
            AttemptResult::ConnectionError(Broken::Other),
            AttemptResult::status(404),
        ] {
            assert_eq!(class(r), AttemptClass::Permanent, "{r:?}");
        }
        assert_eq!(
            class(AttemptResult::status(503)),
            AttemptClass::Failure(RetryCause::Error)
        );
        assert_eq!(class(AttemptResult::status(200)), AttemptClass::Success);
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

    fn with(jitter: Jitter) -> Strategy {
        Strategy { jitter, ..std("C") }
    }

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    #[test]
    fn proportional_jitter_spreads_around_the_backoff_within_the_factor() {
        let p = with(Jitter::Proportional { spread_pct: 20 });
        let mut rng = stream(3, Stream::Jitter, 0);
        for (n, b) in [(1, 200), (2, 400), (3, 800), (6, 2000)] {
            let waits: Vec<_> = (0..1000)
                .map(|_| p.wait(n, Duration::ZERO, &mut rng))
                .collect();
            let (lo, hi) = (ms(b * 8 / 10), ms(b * 12 / 10));
            assert!(waits.iter().all(|w| *w >= lo && *w <= hi), "retry {n}");
            assert!(
                waits.iter().any(|w| *w < ms(b * 85 / 100)),
                "retry {n} low end"
            );
            assert!(
                waits.iter().any(|w| *w > ms(b * 115 / 100)),
                "retry {n} high end"
            );
            let m = median(waits);
            assert!(
                m > ms(b * 95 / 100) && m < ms(b * 105 / 100),
                "median {m:?}"
            );
        }
        let none = with(Jitter::Proportional { spread_pct: 0 });
        assert_eq!(none.wait(2, Duration::ZERO, &mut rng), ms(400));
        let wide = with(Jitter::Proportional { spread_pct: 500 });
        assert!((0..200).all(|_| wide.wait(1, Duration::ZERO, &mut rng) <= ms(400)));
    }

    /// Polly's V2 formula by hand: the first wait is `2^u tanh(sqrt(4u)) / 1.4 * base`.
    #[test]
    fn polly_v2_step_matches_the_formula() {
        let base = ms(1000);
        let mut prev = 0.0;
        let w1 = polly_v2_step(0, base, ms(60_000), &mut prev, 0.5);
        let f1 = 2f64.powf(0.5) * (2f64).sqrt().tanh();
        assert_eq!(prev, f1);
        assert!((w1.as_secs_f64() - f1 / 1.4).abs() < 1e-9, "{w1:?}");
        let w2 = polly_v2_step(1, base, ms(60_000), &mut prev, 0.25);
        let f2 = 2f64.powf(1.25) * (5f64).sqrt().tanh();
        assert!((w2.as_secs_f64() - (f2 - f1) / 1.4).abs() < 1e-9, "{w2:?}");
        assert_eq!(
            polly_v2_step(1, base, ms(10), &mut 0.0, 0.9),
            ms(10),
            "capped"
        );
        assert_eq!(
            polly_v2_step(2000, base, ms(7), &mut 0.0, 0.5),
            ms(7),
            "overflow"
        );
    }

    /// Polly's exact sequence (the step chained with its state): the time from the first
    /// failure to retry `n` has its median near `base * 2^(n-1)` (Polly's design: the 1 / 1.4
    /// scaling puts the cumulative medians at 1, 2, 4, 8 s for a 1 s base).
    #[test]
    fn polly_v2_exact_sequence_has_cumulative_medians_near_base_doubling() {
        let mut rng = stream(5, Stream::Jitter, 0);
        let mut totals = vec![Vec::new(); 4];
        for _ in 0..4000 {
            let (mut prev, mut total) = (0.0, Duration::ZERO);
            for (i, t) in totals.iter_mut().enumerate() {
                total += polly_v2_step(i as u32, ms(1000), ms(3_600_000), &mut prev, rng.random());
                t.push(total);
            }
        }
        for (i, t) in totals.into_iter().enumerate() {
            let expect = 1000u64 << i;
            let m = median(t);
            assert!(
                m > ms(expect * 85 / 100) && m < ms(expect * 115 / 100),
                "cumulative to retry {}: median {m:?}, design {expect} ms",
                i + 1
            );
        }
    }

    /// `Strategy::wait` with Polly's jitter gives each retry's wait the exact sequence's
    /// distribution (same median), within the cap.
    #[test]
    fn polly_v2_jitter_waits_have_the_exact_sequences_distribution() {
        let p = Strategy {
            backoff: Backoff::Exponential {
                base: ms(1000),
                cap: ms(60_000),
            },
            ..with(Jitter::PollyV2)
        };
        let mut rng = stream(9, Stream::Jitter, 0);
        let mut exact = vec![Vec::new(); 4];
        for _ in 0..4000 {
            let mut prev = 0.0;
            for (i, e) in exact.iter_mut().enumerate() {
                e.push(polly_v2_step(
                    i as u32,
                    ms(1000),
                    ms(60_000),
                    &mut prev,
                    rng.random(),
                ));
            }
        }
        for (i, e) in exact.into_iter().enumerate() {
            let n = i as u32 + 1;
            let waits: Vec<_> = (0..4000)
                .map(|_| p.wait(n, Duration::ZERO, &mut rng))
                .collect();
            let hi = e.iter().max().copied().unwrap();
            let (m, me) = (median(waits.clone()), median(e));
            let ratio = m.as_secs_f64() / me.as_secs_f64();
            assert!(
                (0.93..1.07).contains(&ratio),
                "retry {n}: {m:?} vs exact {me:?}"
            );
            // The first wait is f(u) / 1.4 with f below 2 tanh(2): under 1.378 s.
            if n == 1 {
                assert!(waits.iter().all(|w| *w < ms(1378)) && hi < ms(1378));
            }
        }
        let capped = Strategy {
            backoff: Backoff::Exponential {
                base: ms(1000),
                cap: ms(3000),
            },
            ..p
        };
        let waits: Vec<_> = (0..500)
            .map(|_| capped.wait(6, Duration::ZERO, &mut rng))
            .collect();
        assert!(waits.iter().all(|w| *w <= ms(3000)) && waits.contains(&ms(3000)));
    }

    #[test]
    fn throttle_base_applies_to_throttled_answers_only() {
        let s = Strategy {
            backoff: Backoff::Exponential {
                base: ms(50),
                cap: ms(20_000),
            },
            jitter: Jitter::None,
            throttle_base_ms: Some(1000),
            ..std("B")
        };
        let mut rng = stream(1, Stream::Jitter, 0);
        let z = Duration::ZERO;
        assert_eq!(
            s.retry_wait(2, z, &mut 0.0, &AttemptResult::status(503), &mut rng),
            ms(100)
        );
        assert_eq!(
            s.retry_wait(2, z, &mut 0.0, &AttemptResult::status(429), &mut rng),
            ms(2000)
        );
        assert_eq!(
            s.retry_wait(1, z, &mut 0.0, &AttemptResult::Timeout, &mut rng),
            ms(50)
        );
    }

    #[test]
    fn unknown_strategy_id_is_none() {
        assert!(
            Strategy::standard("Z", ms(1), ms(1), BudgetSpec::token_bucket(1.0, 0.1)).is_none()
        );
    }
}
