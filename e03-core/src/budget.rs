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
    /// The client's adaptive concurrency limit was reached ([`crate::limit::ClientLimiter`]).
    ConcurrencyLimited,
    /// The caller's bulkhead had no slot for the call's dependency ([`crate::bulkhead`]).
    BulkheadFull,
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
    /// [`RetryBudget::admit`] for an attempt of `client`'s operation, when a layer needs to
    /// know whose call it is (a bulkhead's pool is its dependency's); hand its slot back with
    /// [`RetryBudget::call_ended`] once a sent attempt ends.
    fn admit_call(&mut self, now: Duration, attempt: u32, _client: u32) -> Result<(), Rejection> {
        self.admit(now, attempt)
    }
    /// A sent attempt of `client`'s operation ended (right after its [`RetryBudget::record`]).
    fn call_ended(&mut self, _client: u32) {}
    /// A sent attempt ended at `now`.
    fn record(&mut self, _now: Duration, _attempt: u32, _class: AttemptClass) {}
    /// Attempts in flight just after [`RetryBudget::admit`] let one go (itself included), when
    /// a layer counts them (a client-side concurrency limit); hand it back with the attempt's
    /// [`RetryBudget::round_trip`].
    fn in_flight(&self) -> Option<u32> {
        None
    }
    /// The attempt that left with `inflight` in flight ([`RetryBudget::in_flight`]) ended
    /// after `rtt`, as `class`; called right after its [`RetryBudget::record`].
    fn round_trip(&mut self, _rtt: Duration, _inflight: u32, _class: AttemptClass) {}
    /// An attempt is about to be sent at `now`, before [`RetryBudget::admit`]: `Some(wait)`
    /// when a client-side rate limiter holds it that long (ask again then), `None` when it may
    /// go now (its token taken).
    fn send_delay(&mut self, _now: Duration) -> Option<Duration> {
        None
    }
    /// A retry that `withdraw` allowed will never be sent.
    fn release(&mut self, _now: Duration) {}
    /// A sent attempt had a good answer after `rtt` (a hedging percentile's record).
    fn good_answer(&mut self, _rtt: Duration) {}
    /// The delay before the next hedge of `spec`, if one may follow an attempt sent now
    /// ([`crate::hedge::HedgeSpec::delay_now`], with the layer's latency record if it keeps one).
    fn hedge_delay(&self, spec: &crate::hedge::HedgeSpec) -> Option<Duration> {
        spec.delay_now(None)
    }
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

/// A retry budget as data: which kind, with its parameters. Serialized with a `kind` tag in
/// snake_case; every field has a default (the library's), so `{ kind = "grpc" }` is a whole
/// spec and `{ kind = "grpc", max_tokens = 10, token_ratio = 0.1 }` overrides both fields.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSpec {
    /// The swarm-wide token bucket of strategy D (see [`TokenBucket`]).
    TokenBucket {
        /// Tokens at the start and at most. Default 10 (`E03_BUDGET_CAP`).
        cap: f64,
        /// Tokens each first attempt adds. Default 0.1 (`E03_BUDGET_RATIO`).
        ratio: f64,
    },
    /// Seed 003's budget: retries stay within `ratio` of the operations started (see
    /// [`RatioBudget`]).
    Ratio {
        /// Retries allowed per operation started. Default 0.1.
        #[serde(default = "defaults::ratio")]
        ratio: f64,
    },
    /// gRPC's retry throttling (proposal A6, see [`GrpcThrottle`]).
    Grpc {
        /// Tokens at the start and at most; retries stop at half of it. Default 10.
        #[serde(default = "defaults::grpc_max_tokens")]
        max_tokens: f64,
        /// Tokens a successful attempt adds (at most three decimals). Default 0.1.
        #[serde(default = "defaults::grpc_token_ratio")]
        token_ratio: f64,
    },
    /// The AWS SDKs' standard-mode retry quota (see [`AwsQuota`]).
    AwsStandard {
        /// Tokens at the start and at most. Default 500.
        #[serde(default = "defaults::aws_quota")]
        quota_tokens: u32,
        /// Cost of a retry after an error or a throttle. Default 5.
        #[serde(default = "defaults::aws_retry_cost")]
        retry_cost_tokens: u32,
        /// Cost of a retry after a timeout. Default 10.
        #[serde(default = "defaults::aws_timeout_cost")]
        timeout_cost_tokens: u32,
        /// Tokens a success on a first attempt gives back. Default 1.
        #[serde(default = "defaults::aws_no_retry_increment")]
        no_retry_increment_tokens: u32,
    },
    /// The AWS SDKs' 2026 retry quota (see [`AwsQuota`]): a retry after a throttle is cheap, any
    /// other retry (timeouts included) is dear. Tag `aws_2026`.
    #[serde(rename = "aws_2026")]
    Aws2026 {
        /// Tokens at the start and at most. Default 500.
        #[serde(default = "defaults::aws_quota")]
        quota_tokens: u32,
        /// Cost of a retry after an error or a timeout. Default 14.
        #[serde(default = "defaults::aws_2026_retry_cost")]
        retry_cost_tokens: u32,
        /// Cost of a retry after a throttle (429, or a Retry-After). Default 5.
        #[serde(default = "defaults::aws_2026_throttle_cost")]
        throttle_cost_tokens: u32,
        /// Tokens a success on a first attempt gives back. Default 1.
        #[serde(default = "defaults::aws_no_retry_increment")]
        no_retry_increment_tokens: u32,
    },
    /// Finagle's RetryBudget and tower's TpsBudget (see [`TpsBudget`]).
    Tps {
        /// How long a deposit (and a withdrawal) counts, 1 to 60 s. Default 10 000 ms.
        #[serde(default = "defaults::tps_ttl_ms")]
        ttl_ms: u64,
        /// Retries per second allowed whatever the traffic. Default 10.
        #[serde(default = "defaults::tps_min_retries_per_sec")]
        min_retries_per_sec: u32,
        /// Retries allowed per deposit, as a fraction (0.2 = 20%), 0 to 1000. Default 0.2.
        #[serde(default = "defaults::tps_percent_can_retry")]
        percent_can_retry: f64,
    },
    /// Envoy's retry budget (see [`EnvoyBudget`]).
    Envoy {
        /// Concurrent retries allowed, in percent of the active requests. Default 20.
        #[serde(default = "defaults::envoy_budget_percent")]
        budget_percent: f64,
        /// Concurrent retries allowed whatever the traffic. Default 3.
        #[serde(default = "defaults::envoy_min_retry_concurrency")]
        min_retry_concurrency: u32,
    },
    /// Google SRE client-side adaptive throttling (see [`SreThrottle`]).
    SreAdaptive {
        /// The multiplier K of accepted requests. Default 2.
        #[serde(default = "defaults::sre_k")]
        k: f64,
        /// The window requests and accepts are counted over. Default 120 000 ms.
        #[serde(default = "defaults::sre_window_ms")]
        window_ms: u64,
    },
}

/// The libraries' documented defaults, one function each (serde needs paths).
pub mod defaults {
    pub fn ratio() -> f64 {
        0.1
    }
    pub fn grpc_max_tokens() -> f64 {
        10.0
    }
    pub fn grpc_token_ratio() -> f64 {
        0.1
    }
    pub fn aws_quota() -> u32 {
        500
    }
    pub fn aws_retry_cost() -> u32 {
        5
    }
    pub fn aws_timeout_cost() -> u32 {
        10
    }
    pub fn aws_no_retry_increment() -> u32 {
        1
    }
    pub fn aws_2026_retry_cost() -> u32 {
        14
    }
    pub fn aws_2026_throttle_cost() -> u32 {
        5
    }
    pub fn tps_ttl_ms() -> u64 {
        10_000
    }
    pub fn tps_min_retries_per_sec() -> u32 {
        10
    }
    pub fn tps_percent_can_retry() -> f64 {
        0.2
    }
    pub fn envoy_budget_percent() -> f64 {
        20.0
    }
    pub fn envoy_min_retry_concurrency() -> u32 {
        3
    }
    pub fn sre_k() -> f64 {
        2.0
    }
    pub fn sre_window_ms() -> u64 {
        120_000
    }
}

impl BudgetSpec {
    /// Strategy D's bucket.
    pub fn token_bucket(cap: f64, ratio: f64) -> Self {
        BudgetSpec::TokenBucket { cap, ratio }
    }

    /// Seed 003's budget with the given ratio.
    pub fn ratio(ratio: f64) -> Self {
        BudgetSpec::Ratio { ratio }
    }

    /// gRPC A6 throttling with its documented example values (10 tokens, 0.1 per success).
    pub fn grpc() -> Self {
        BudgetSpec::Grpc {
            max_tokens: defaults::grpc_max_tokens(),
            token_ratio: defaults::grpc_token_ratio(),
        }
    }

    /// The AWS SDKs' standard-mode quota with its defaults (500; 5, 10 for a timeout; +1).
    pub fn aws_standard() -> Self {
        BudgetSpec::AwsStandard {
            quota_tokens: defaults::aws_quota(),
            retry_cost_tokens: defaults::aws_retry_cost(),
            timeout_cost_tokens: defaults::aws_timeout_cost(),
            no_retry_increment_tokens: defaults::aws_no_retry_increment(),
        }
    }

    /// The AWS SDKs' 2026 quota with its defaults (500; 14, 5 for a throttle; +1).
    pub fn aws_2026() -> Self {
        BudgetSpec::Aws2026 {
            quota_tokens: defaults::aws_quota(),
            retry_cost_tokens: defaults::aws_2026_retry_cost(),
            throttle_cost_tokens: defaults::aws_2026_throttle_cost(),
            no_retry_increment_tokens: defaults::aws_no_retry_increment(),
        }
    }

    /// Finagle's and tower's default budget (ttl 10 s, 10 retries/s, 20%).
    pub fn tps() -> Self {
        BudgetSpec::Tps {
            ttl_ms: defaults::tps_ttl_ms(),
            min_retries_per_sec: defaults::tps_min_retries_per_sec(),
            percent_can_retry: defaults::tps_percent_can_retry(),
        }
    }

    /// Envoy's default retry budget (20%, at least 3).
    pub fn envoy() -> Self {
        BudgetSpec::Envoy {
            budget_percent: defaults::envoy_budget_percent(),
            min_retry_concurrency: defaults::envoy_min_retry_concurrency(),
        }
    }

    /// The SRE book's adaptive throttling (K = 2 over 2 minutes).
    pub fn sre_adaptive() -> Self {
        BudgetSpec::SreAdaptive {
            k: defaults::sre_k(),
            window_ms: defaults::sre_window_ms(),
        }
    }

    /// Checks the parameters; the error names the field and what it accepts.
    pub fn validate(&self) -> Result<(), String> {
        fn check(ok: bool, what: &str) -> Result<(), String> {
            if ok {
                Ok(())
            } else {
                Err(what.to_string())
            }
        }
        let finite_pos = |v: f64| v.is_finite() && v >= 0.0;
        match *self {
            BudgetSpec::TokenBucket { cap, ratio } => {
                check(finite_pos(cap), "token_bucket: cap must be a number >= 0")?;
                check(
                    finite_pos(ratio),
                    "token_bucket: ratio must be a number >= 0",
                )
            }
            BudgetSpec::Ratio { ratio } => {
                check(finite_pos(ratio), "ratio: ratio must be a number >= 0")
            }
            BudgetSpec::Grpc {
                max_tokens,
                token_ratio,
            } => {
                check(
                    max_tokens.is_finite() && max_tokens > 0.0 && max_tokens <= 1000.0,
                    "grpc: max_tokens must be in (0, 1000]",
                )?;
                check(
                    token_ratio.is_finite() && token_ratio > 0.0,
                    "grpc: token_ratio must be a number > 0",
                )
            }
            BudgetSpec::AwsStandard { .. } | BudgetSpec::Aws2026 { .. } => Ok(()),
            BudgetSpec::Tps {
                ttl_ms,
                percent_can_retry,
                ..
            } => {
                check(
                    (1000..=60_000).contains(&ttl_ms),
                    "tps: ttl_ms must be in 1000..=60000",
                )?;
                check(
                    (0.0..=1000.0).contains(&percent_can_retry),
                    "tps: percent_can_retry must be in 0..=1000",
                )
            }
            BudgetSpec::Envoy { budget_percent, .. } => check(
                (0.0..=100.0).contains(&budget_percent),
                "envoy: budget_percent must be in 0..=100",
            ),
            BudgetSpec::SreAdaptive { k, window_ms } => {
                check(finite_pos(k), "sre_adaptive: k must be a number >= 0")?;
                check(window_ms > 0, "sre_adaptive: window_ms must be > 0")
            }
        }
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

/// Seed 003's retry budget (the SRE book's "retries below 10% of requests" per client): a retry
/// is allowed only while `retries + 1 <= ratio * requests`, where `requests` counts the
/// operations started so far (deposits) and `retries` the retries allowed so far. The test is
/// the seed's own (`retries + 1 > r * 0.10` breaks), in the same floating-point arithmetic.
/// A retry allowed but never sent (`release`) is given back: it is not a retry.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioBudget {
    ratio: f64,
    requests: u64,
    retries: u64,
}

impl RatioBudget {
    pub fn new(ratio: f64) -> Self {
        Self {
            ratio,
            requests: 0,
            retries: 0,
        }
    }

    /// Retries allowed (and not released) so far.
    pub fn retries(&self) -> u64 {
        self.retries
    }
}

impl RetryBudget for RatioBudget {
    fn deposit(&mut self, _now: Duration) {
        self.requests += 1;
    }

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        if (self.retries + 1) as f64 > self.requests as f64 * self.ratio {
            return false;
        }
        self.retries += 1;
        true
    }

    fn release(&mut self, _now: Duration) {
        self.retries = self.retries.saturating_sub(1);
    }
}

/// gRPC's retry throttling, as proposal A6 ("gRPC Retry Design", `retryThrottling`) defines it:
/// a token count starts at `maxTokens`; every failed attempt takes one token (never below 0),
/// every successful one adds `tokenRatio` (never above `maxTokens`); retries are throttled while
/// the count is at or below `maxTokens / 2`. A6 has no defaults for these (the section is
/// optional); its example is 10 and 0.1, which the lab uses. A failure no retry can fix
/// (a permanent error) counts neither way, as A6 only counts retryable statuses as failures.
/// Tokens are kept in thousandths, as A6 allows three decimals for `tokenRatio`, so the sums
/// are exact.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcThrottle {
    max_milli: i64,
    ratio_milli: i64,
    milli: i64,
}

impl GrpcThrottle {
    pub fn new(max_tokens: f64, token_ratio: f64) -> Self {
        let max_milli = (max_tokens * 1000.0).round() as i64;
        Self {
            max_milli,
            ratio_milli: (token_ratio * 1000.0).round() as i64,
            milli: max_milli,
        }
    }

    /// The token count.
    pub fn tokens(&self) -> f64 {
        self.milli as f64 / 1000.0
    }
}

impl RetryBudget for GrpcThrottle {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        self.milli * 2 > self.max_milli
    }

    fn record(&mut self, _now: Duration, _attempt: u32, class: AttemptClass) {
        match class {
            AttemptClass::Success => {
                self.milli = (self.milli + self.ratio_milli).min(self.max_milli);
            }
            AttemptClass::Failure(_) => self.milli = (self.milli - 1000).max(0),
            AttemptClass::Permanent => {}
        }
    }
}

/// The AWS SDKs' retry quota ("Retry behavior" in the AWS SDKs and Tools reference guide;
/// `RetryQuota` / `StandardRetryTokenBucket` in the SDKs): a quota of tokens starts at its
/// maximum (500); a retry takes its cost, and is not made when the quota holds less than that;
/// a success on a first attempt adds `no_retry_increment` (1); a success on a retry gives that
/// retry's cost back; the quota never exceeds its start.
///
/// The costs by cause: standard mode charges 5 per retry and 10 after a timeout; the 2026
/// behaviour (`AWS_NEW_RETRIES_2026`) charges 14 per retry (timeouts no longer differ) and 5
/// after a throttling error.
///
/// The SDK keeps each operation's last retry cost in the operation's token; the policy-layer
/// trait does not say which operation an attempt belongs to, so the costs of the retries in
/// flight are kept in the order they were taken, and a retry that ends takes the oldest. When
/// all retries cost the same this is exact; with mixed costs, a refund may be another retry's
/// cost. A retry allowed but never sent keeps its cost spent (the SDK does not give it back).
#[derive(Debug, Clone, PartialEq)]
pub struct AwsQuota {
    max: u32,
    available: u32,
    cost_error: u32,
    cost_timeout: u32,
    cost_throttled: u32,
    no_retry_increment: u32,
    in_flight: std::collections::VecDeque<u32>,
}

impl AwsQuota {
    /// A quota with the given cost per cause.
    pub fn new(
        quota: u32,
        cost_error: u32,
        cost_timeout: u32,
        cost_throttled: u32,
        no_retry_increment: u32,
    ) -> Self {
        Self {
            max: quota,
            available: quota,
            cost_error,
            cost_timeout,
            cost_throttled,
            no_retry_increment,
            in_flight: Default::default(),
        }
    }

    /// Tokens left.
    pub fn available(&self) -> u32 {
        self.available
    }

    fn cost(&self, cause: RetryCause) -> u32 {
        match cause {
            RetryCause::Error => self.cost_error,
            RetryCause::Timeout => self.cost_timeout,
            RetryCause::Throttled => self.cost_throttled,
        }
    }
}

impl RetryBudget for AwsQuota {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, cause: RetryCause) -> bool {
        let cost = self.cost(cause);
        if cost > self.available {
            return false;
        }
        self.available -= cost;
        self.in_flight.push_back(cost);
        true
    }

    fn record(&mut self, _now: Duration, attempt: u32, class: AttemptClass) {
        let refund = if attempt > 1 {
            let cost = self.in_flight.pop_front().unwrap_or(0);
            if class == AttemptClass::Success {
                cost
            } else {
                0
            }
        } else if class == AttemptClass::Success {
            self.no_retry_increment
        } else {
            0
        };
        self.available = (self.available + refund).min(self.max);
    }

    fn release(&mut self, _now: Duration) {
        self.in_flight.pop_front();
    }
}

/// Finagle's `RetryBudget` and tower's `TpsBudget` (tower `retry::budget::tps_budget`, a port of
/// Finagle's): deposits and withdrawals count for `ttl` only, kept in ten time slots of
/// `ttl / 10`; the balance is a fixed reserve of `min_retries_per_sec * ttl` retries plus the
/// slots' sum, where a deposit adds 1 and a retry takes `1 / percent_can_retry` (5 for 20%)
/// deposits' worth; a retry is allowed when the balance covers it. Defaults (both libraries):
/// ttl 10 s, 10 retries per second, 20%. The slot rotation follows tower's code step by step,
/// with `now` in place of its clock (time zero is when the budget is made).
#[derive(Debug, Clone, PartialEq)]
pub struct TpsBudget {
    deposit_amount: i64,
    withdraw_amount: i64,
    reserve: i64,
    slots: [i64; 10],
    /// Changes to the current slot, committed when it expires.
    writer: i64,
    window: Duration,
    gen_index: usize,
    gen_time: Duration,
}

impl TpsBudget {
    pub fn new(ttl: Duration, min_retries_per_sec: u32, percent_can_retry: f64) -> Self {
        let (deposit_amount, withdraw_amount) = if percent_can_retry == 0.0 {
            (0, 1)
        } else if percent_can_retry <= 1.0 {
            (1, (1.0 / percent_can_retry) as i64)
        } else {
            (1000, (1000.0 / percent_can_retry) as i64)
        };
        let reserve = (min_retries_per_sec as i64)
            .saturating_mul(ttl.as_secs() as i64)
            .saturating_mul(withdraw_amount);
        Self {
            deposit_amount,
            withdraw_amount,
            reserve,
            slots: [0; 10],
            writer: 0,
            window: ttl / 10,
            gen_index: 0,
            gen_time: Duration::ZERO,
        }
    }

    /// The balance, in deposit units (a retry needs `withdraw_amount` of them).
    pub fn balance(&self) -> i64 {
        self.writer + self.slots.iter().sum::<i64>() + self.reserve
    }

    fn expire(&mut self, now: Duration) {
        let mut diff = now.saturating_sub(self.gen_time);
        if diff < self.window {
            return;
        }
        self.slots[self.gen_index] = std::mem::take(&mut self.writer);
        let mut idx = (self.gen_index + 1) % self.slots.len();
        while diff > self.window {
            self.slots[idx] = 0;
            diff -= self.window;
            idx = (idx + 1) % self.slots.len();
        }
        self.gen_index = idx;
        self.gen_time = now;
    }
}

impl RetryBudget for TpsBudget {
    fn deposit(&mut self, now: Duration) {
        self.expire(now);
        self.writer += self.deposit_amount;
    }

    fn withdraw(&mut self, now: Duration, _cause: RetryCause) -> bool {
        self.expire(now);
        if self.balance() >= self.withdraw_amount {
            self.writer -= self.withdraw_amount;
            true
        } else {
            false
        }
    }
}

/// Envoy's retry budget (`envoy.config.cluster.v3.CircuitBreakers.Thresholds.RetryBudget`):
/// the retries in progress may not exceed `max(budget_percent% of the active requests,
/// min_retry_concurrency)` (defaults 20% and 3); Envoy takes the integer part of the percentage
/// and allows a retry while the retries in progress are below that limit. Here the active
/// requests are the attempts admitted and not yet ended, and a retry is in progress from the
/// `withdraw` that allowed it until it ends (recorded) or is released.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvoyBudget {
    percent: f64,
    min_concurrency: u64,
    active: u64,
    retries: u64,
}

impl EnvoyBudget {
    pub fn new(budget_percent: f64, min_retry_concurrency: u32) -> Self {
        Self {
            percent: budget_percent,
            min_concurrency: min_retry_concurrency as u64,
            active: 0,
            retries: 0,
        }
    }

    /// Retries allowed at once with the current active requests.
    pub fn limit(&self) -> u64 {
        ((self.percent / 100.0 * self.active as f64) as u64).max(self.min_concurrency)
    }

    /// (attempts in flight, retries in progress).
    pub fn counts(&self) -> (u64, u64) {
        (self.active, self.retries)
    }
}

impl RetryBudget for EnvoyBudget {
    fn deposit(&mut self, _now: Duration) {}

    fn withdraw(&mut self, _now: Duration, _cause: RetryCause) -> bool {
        if self.retries < self.limit() {
            self.retries += 1;
            true
        } else {
            false
        }
    }

    fn admit(&mut self, _now: Duration, _attempt: u32) -> Result<(), Rejection> {
        self.active += 1;
        Ok(())
    }

    fn record(&mut self, _now: Duration, attempt: u32, _class: AttemptClass) {
        self.active = self.active.saturating_sub(1);
        if attempt > 1 {
            self.retries = self.retries.saturating_sub(1);
        }
    }

    fn release(&mut self, _now: Duration) {
        self.retries = self.retries.saturating_sub(1);
    }
}

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

/// Any budget, chosen by a strategy's data.
#[derive(Debug, Clone)]
pub enum AnyBudget {
    Unlimited(Unlimited),
    Bucket(TokenBucket),
    Ratio(RatioBudget),
    Grpc(GrpcThrottle),
    Aws(AwsQuota),
    Tps(TpsBudget),
    Envoy(EnvoyBudget),
    Sre(SreThrottle),
}

/// The seed [`AnyBudget::from_spec`] gives a budget that draws random numbers.
pub const DEFAULT_BUDGET_SEED: u64 = 0x5EED_0003;

impl AnyBudget {
    /// The budget's tokens in its own unit, for a gauge: the token bucket's and gRPC's tokens,
    /// the AWS quota left, Finagle/tower's balance in retries (deposits over the withdraw
    /// amount). `None` for budgets that keep no tokens (unlimited, ratio, Envoy's concurrency
    /// limit, SRE adaptive throttling).
    pub fn tokens(&self) -> Option<f64> {
        match self {
            AnyBudget::Bucket(b) => Some(b.tokens()),
            AnyBudget::Grpc(b) => Some(b.tokens()),
            AnyBudget::Aws(b) => Some(f64::from(b.available())),
            AnyBudget::Tps(b) => Some(b.balance() as f64 / b.withdraw_amount.max(1) as f64),
            AnyBudget::Unlimited(_)
            | AnyBudget::Ratio(_)
            | AnyBudget::Envoy(_)
            | AnyBudget::Sre(_) => None,
        }
    }

    /// The budget `spec` describes; a randomized one (SRE adaptive throttling) draws from
    /// [`DEFAULT_BUDGET_SEED`]. Use [`from_spec_seeded`](Self::from_spec_seeded) to tie it to
    /// the run's seed.
    pub fn from_spec(spec: Option<BudgetSpec>) -> Self {
        Self::from_spec_seeded(spec, DEFAULT_BUDGET_SEED)
    }

    /// The budget `spec` describes, with `seed` for the ones that draw random numbers.
    pub fn from_spec_seeded(spec: Option<BudgetSpec>, seed: u64) -> Self {
        let Some(spec) = spec else {
            return AnyBudget::Unlimited(Unlimited);
        };
        match spec {
            BudgetSpec::TokenBucket { cap, ratio } => {
                AnyBudget::Bucket(TokenBucket::new(cap, ratio))
            }
            BudgetSpec::Ratio { ratio } => AnyBudget::Ratio(RatioBudget::new(ratio)),
            BudgetSpec::Grpc {
                max_tokens,
                token_ratio,
            } => AnyBudget::Grpc(GrpcThrottle::new(max_tokens, token_ratio)),
            BudgetSpec::AwsStandard {
                quota_tokens,
                retry_cost_tokens,
                timeout_cost_tokens,
                no_retry_increment_tokens,
            } => AnyBudget::Aws(AwsQuota::new(
                quota_tokens,
                retry_cost_tokens,
                timeout_cost_tokens,
                retry_cost_tokens,
                no_retry_increment_tokens,
            )),
            BudgetSpec::Aws2026 {
                quota_tokens,
                retry_cost_tokens,
                throttle_cost_tokens,
                no_retry_increment_tokens,
            } => AnyBudget::Aws(AwsQuota::new(
                quota_tokens,
                retry_cost_tokens,
                retry_cost_tokens,
                throttle_cost_tokens,
                no_retry_increment_tokens,
            )),
            BudgetSpec::Tps {
                ttl_ms,
                min_retries_per_sec,
                percent_can_retry,
            } => AnyBudget::Tps(TpsBudget::new(
                Duration::from_millis(ttl_ms),
                min_retries_per_sec,
                percent_can_retry,
            )),
            BudgetSpec::Envoy {
                budget_percent,
                min_retry_concurrency,
            } => AnyBudget::Envoy(EnvoyBudget::new(budget_percent, min_retry_concurrency)),
            BudgetSpec::SreAdaptive { k, window_ms } => {
                AnyBudget::Sre(SreThrottle::new(k, Duration::from_millis(window_ms), seed))
            }
        }
    }

    fn inner(&mut self) -> &mut dyn RetryBudget {
        match self {
            AnyBudget::Unlimited(b) => b,
            AnyBudget::Bucket(b) => b,
            AnyBudget::Ratio(b) => b,
            AnyBudget::Grpc(b) => b,
            AnyBudget::Aws(b) => b,
            AnyBudget::Tps(b) => b,
            AnyBudget::Envoy(b) => b,
            AnyBudget::Sre(b) => b,
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
    fn tokens_show_what_each_budget_keeps() {
        let t = |spec: BudgetSpec| AnyBudget::from_spec(Some(spec)).tokens();
        assert_eq!(t(BudgetSpec::token_bucket(10.0, 0.1)), Some(10.0));
        assert_eq!(t(BudgetSpec::grpc()), Some(10.0));
        assert_eq!(t(BudgetSpec::aws_standard()), Some(500.0));
        assert_eq!(t(BudgetSpec::ratio(0.1)), None);
        assert_eq!(t(BudgetSpec::envoy()), None);
        assert_eq!(t(BudgetSpec::sre_adaptive()), None);
        // A retry spends from the bucket, and the gauge follows.
        let mut b = AnyBudget::from_spec(Some(BudgetSpec::token_bucket(10.0, 0.1)));
        assert!(b.withdraw(T, E));
        assert_eq!(b.tokens(), Some(9.0));
        // Finagle/tower: the floor of 10 retries a second is there from the start.
        let tps = t(BudgetSpec::tps()).unwrap();
        assert!(tps >= 10.0, "{tps}");
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

    const F: AttemptClass = AttemptClass::Failure(RetryCause::Error);
    const OK: AttemptClass = AttemptClass::Success;

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    /// Seed 003's loop through the trait: `requests` operations whose every attempt fails, at
    /// most `attempts` attempts each, all at time zero. Returns the attempts sent.
    fn seed_003_loop(budget: &mut dyn RetryBudget, requests: u32, attempts: u32) -> u32 {
        let mut sent = 0;
        for _ in 0..requests {
            budget.deposit(T);
            let mut attempt = 1;
            loop {
                if budget.admit(T, attempt).is_err() {
                    if attempt > 1 {
                        budget.release(T);
                    }
                    break;
                }
                sent += 1;
                budget.record(T, attempt, F);
                if attempt == attempts || !budget.withdraw(T, E) {
                    break;
                }
                attempt += 1;
            }
        }
        sent
    }

    #[test]
    fn seed_003_ratio_budget_gives_exactly_11_000_attempts() {
        let mut none = AnyBudget::from_spec(None);
        assert_eq!(seed_003_loop(&mut none, 10_000, 3), 30_000);
        let mut ratio = AnyBudget::from_spec(Some(BudgetSpec::ratio(0.1)));
        assert_eq!(seed_003_loop(&mut ratio, 10_000, 3), 11_000);
    }

    /// The other counting budgets in seed 003's loop, by hand: the AWS quota pays 100 retries
    /// of 5 (500 / 5) and 35 of 14 (490 / 14) and nothing comes back; gRPC's throttle drops one
    /// token per failed attempt from 10 and allows retries while above 5: 3 retries.
    #[test]
    fn seed_003_loop_with_the_zoo_counting_budgets() {
        let run = |spec| seed_003_loop(&mut AnyBudget::from_spec(Some(spec)), 10_000, 3);
        assert_eq!(run(BudgetSpec::aws_standard()), 10_100);
        assert_eq!(run(BudgetSpec::aws_2026()), 10_035);
        assert_eq!(run(BudgetSpec::grpc()), 10_003);
    }

    #[test]
    fn ratio_budget_allows_one_retry_per_ten_requests_and_takes_back_releases() {
        let mut b = RatioBudget::new(0.1);
        for _ in 0..9 {
            b.deposit(T);
            assert!(!b.withdraw(T, E), "1 > 0.9");
        }
        b.deposit(T);
        assert!(b.withdraw(T, E), "1 <= 10 * 0.1");
        assert!(!b.withdraw(T, E), "2 > 1");
        b.release(T);
        assert_eq!(b.retries(), 0);
        assert!(b.withdraw(T, E), "a released retry is given back");
        for _ in 0..10 {
            b.deposit(T);
        }
        assert!(b.withdraw(T, E) && !b.withdraw(T, E), "2 <= 2, 3 > 2");
    }

    /// gRPC A6: 10 tokens, -1 per failure, +0.1 per success, retries only above 5.
    #[test]
    fn grpc_throttle_follows_a6() {
        let mut b = GrpcThrottle::new(10.0, 0.1);
        assert!(b.withdraw(T, E), "10 > 5");
        for _ in 0..5 {
            b.record(T, 1, F);
        }
        assert_eq!(b.tokens(), 5.0);
        assert!(!b.withdraw(T, E), "5 is not above 5");
        b.record(T, 1, OK);
        assert!(b.withdraw(T, E), "5.1 > 5");
        assert_eq!(b.tokens(), 5.1, "withdraw takes nothing");
        b.record(T, 2, AttemptClass::Permanent);
        assert_eq!(b.tokens(), 5.1, "a permanent error counts neither way");
        for _ in 0..20 {
            b.record(T, 1, AttemptClass::Failure(RetryCause::Timeout));
        }
        assert_eq!(b.tokens(), 0.0, "never below zero");
        for _ in 0..50 {
            b.record(T, 1, OK);
        }
        assert_eq!(b.tokens(), 5.0);
        assert!(
            !b.withdraw(T, E),
            "fifty successes give back 5.0: not enough"
        );
        b.record(T, 1, OK);
        assert!(b.withdraw(T, E), "the 51st makes 5.1");
        for _ in 0..100 {
            b.record(T, 1, OK);
        }
        assert_eq!(b.tokens(), 10.0, "never above max_tokens");
    }

    /// AWS standard mode: 500 tokens, 5 per retry, 10 after a timeout, +1 per first-attempt
    /// success, a successful retry refunds its cost, never above 500.
    #[test]
    fn aws_standard_quota_costs_and_refunds() {
        let mut b = AnyBudget::from_spec(Some(BudgetSpec::aws_standard()));
        let AnyBudget::Aws(q) = &b else { panic!() };
        assert_eq!(q.available(), 500);
        assert!(b.withdraw(T, E));
        assert!(b.withdraw(T, RetryCause::Timeout));
        assert!(b.withdraw(T, RetryCause::Throttled));
        let avail = |b: &AnyBudget| match b {
            AnyBudget::Aws(q) => q.available(),
            _ => unreachable!(),
        };
        assert_eq!(avail(&b), 500 - 5 - 10 - 5);
        b.record(T, 2, OK);
        assert_eq!(avail(&b), 485, "the first retry (5) succeeded: refunded");
        b.record(T, 2, F);
        assert_eq!(avail(&b), 485, "a failed retry refunds nothing");
        b.release(T);
        assert_eq!(avail(&b), 485, "an unsent retry keeps its cost");
        b.record(T, 1, OK);
        assert_eq!(avail(&b), 486, "no_retry_increment");
        b.record(T, 1, F);
        assert_eq!(avail(&b), 486);
        for _ in 0..20 {
            b.record(T, 1, OK);
        }
        assert_eq!(avail(&b), 500, "never above the initial quota");
        // Drain: 100 retries of 5, then nothing; with 7 left a timeout (10) is refused and an
        // error (5) is not.
        for _ in 0..100 {
            assert!(b.withdraw(T, E));
        }
        assert!(!b.withdraw(T, E));
        let mut q = AwsQuota::new(7, 5, 10, 5, 1);
        assert!(!q.withdraw(T, RetryCause::Timeout));
        assert!(q.withdraw(T, E));
        assert_eq!(q.available(), 2);
    }

    /// AWS 2026: 14 per retry (timeouts too), 5 after a throttle.
    #[test]
    fn aws_2026_quota_charges_throttles_less() {
        let mut b = match AnyBudget::from_spec(Some(BudgetSpec::aws_2026())) {
            AnyBudget::Aws(q) => q,
            _ => unreachable!(),
        };
        assert!(b.withdraw(T, E));
        assert!(b.withdraw(T, RetryCause::Timeout));
        assert!(b.withdraw(T, RetryCause::Throttled));
        assert_eq!(b.available(), 500 - 14 - 14 - 5);
        b.record(T, 2, OK);
        b.record(T, 2, OK);
        b.record(T, 2, OK);
        assert_eq!(b.available(), 500);
        for _ in 0..35 {
            assert!(b.withdraw(T, E));
        }
        assert_eq!(b.available(), 10);
        assert!(!b.withdraw(T, E), "10 < 14");
        assert!(b.withdraw(T, RetryCause::Throttled), "5 <= 10");
        assert!(b.withdraw(T, RetryCause::Throttled), "5 <= 5");
        assert!(!b.withdraw(T, RetryCause::Throttled), "0 left");
    }

    /// tower's TpsBudget tests, replayed with `now`: an empty budget, a deposit that leaks
    /// away, deposits that live in slots, and the reserve.
    #[test]
    fn tps_budget_replays_towers_tests() {
        let ms = Duration::from_millis;
        let mut empty = TpsBudget::new(s(1), 0, 1.0);
        assert!(!empty.withdraw(T, E));

        let mut leaky = TpsBudget::new(s(1), 0, 1.0);
        leaky.deposit(T);
        assert!(!leaky.withdraw(s(3), E));

        let mut slots = TpsBudget::new(s(1), 0, 0.5);
        slots.deposit(T);
        slots.deposit(T);
        assert!(
            slots.withdraw(ms(901), E),
            "900 ms later the deposits still count"
        );
        slots.deposit(ms(2902));
        slots.deposit(ms(3203));
        slots.deposit(ms(4004));
        assert!(
            slots.withdraw(ms(4004), E),
            "the first deposit expired, the second and third make one retry"
        );

        let mut reserve = TpsBudget::new(s(1), 5, 1.0);
        assert!((0..5).all(|_| reserve.withdraw(T, E)));
        assert!(!reserve.withdraw(T, E));
    }

    /// Finagle's and tower's defaults: a reserve of 10/s x 10 s = 100 retries; 20% = one retry
    /// per 5 deposits; withdrawals expire after the ttl, which refills the reserve.
    #[test]
    fn tps_default_budget_reserve_percent_and_expiry() {
        let mut b = AnyBudget::from_spec(Some(BudgetSpec::tps()));
        for _ in 0..100 {
            assert!(b.withdraw(T, E));
        }
        assert!(!b.withdraw(T, E), "the reserve is spent");
        for _ in 0..4 {
            b.deposit(T);
        }
        assert!(!b.withdraw(T, E), "4 deposits are 0.8 retry");
        b.deposit(T);
        assert!(b.withdraw(T, E), "5 deposits are one retry");
        assert!(
            !b.withdraw(s(5), E),
            "5 s later the withdrawals still count"
        );
        assert!(b.withdraw(s(11), E), "after the ttl they expired");
        let mut n = 1;
        while b.withdraw(s(11), E) {
            n += 1;
        }
        assert_eq!(n, 100, "the whole reserve again");
    }

    /// Envoy: retries in progress below max(20% of active requests, 3).
    #[test]
    fn envoy_budget_limits_concurrent_retries() {
        let mut b = EnvoyBudget::new(20.0, 3);
        for _ in 0..20 {
            b.admit(T, 1).unwrap();
        }
        assert_eq!(b.limit(), 4, "20% of 20");
        for _ in 0..5 {
            b.record(T, 1, F);
        }
        assert_eq!(b.limit(), 3, "20% of 15 is 3");
        assert!((0..3).all(|_| b.withdraw(T, E)));
        assert!(!b.withdraw(T, E), "3 retries in progress");
        for _ in 0..3 {
            b.admit(T, 2).unwrap();
        }
        assert_eq!(b.limit(), 3, "20% of 18 is 3.6: 3");
        for _ in 0..7 {
            b.admit(T, 1).unwrap();
        }
        assert_eq!(b.counts(), (25, 3));
        assert!(b.withdraw(T, E) && b.withdraw(T, E), "20% of 25 is 5");
        assert!(!b.withdraw(T, E));
        b.record(T, 2, OK);
        assert_eq!(b.counts(), (24, 4));
        assert!(
            !b.withdraw(T, E),
            "20% of 24 is 4.8: 4, and 4 are in progress"
        );
        b.release(T);
        assert!(b.withdraw(T, E), "a released retry is over");
        let mut idle = EnvoyBudget::new(20.0, 3);
        assert_eq!(idle.limit(), 3, "min_retry_concurrency with no traffic");
        assert!((0..3).all(|_| idle.withdraw(T, E)) && !idle.withdraw(T, E));
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

    #[test]
    fn specs_deserialize_from_toml_with_defaults_and_reject_unknown_fields() {
        let spec: BudgetSpec =
            toml::from_str("kind = \"grpc\"\nmax_tokens = 10\ntoken_ratio = 0.1").unwrap();
        assert_eq!(spec, BudgetSpec::grpc());
        let spec: BudgetSpec = toml::from_str("kind = \"aws_2026\"").unwrap();
        assert_eq!(spec, BudgetSpec::aws_2026());
        let spec: BudgetSpec = toml::from_str("kind = \"tps\"\nttl_ms = 5000").unwrap();
        assert_eq!(
            spec,
            BudgetSpec::Tps {
                ttl_ms: 5000,
                min_retries_per_sec: 10,
                percent_can_retry: 0.2
            }
        );
        for (text, spec) in [
            ("kind = \"ratio\"", BudgetSpec::ratio(0.1)),
            ("kind = \"aws_standard\"", BudgetSpec::aws_standard()),
            ("kind = \"envoy\"", BudgetSpec::envoy()),
            ("kind = \"sre_adaptive\"", BudgetSpec::sre_adaptive()),
            (
                "kind = \"token_bucket\"\ncap = 10\nratio = 0.1",
                BudgetSpec::token_bucket(10.0, 0.1),
            ),
        ] {
            assert_eq!(toml::from_str::<BudgetSpec>(text).unwrap(), spec, "{text}");
            assert_eq!(spec.validate(), Ok(()));
        }
        let err = toml::from_str::<BudgetSpec>("kind = \"grpc\"\nmax_token = 10").unwrap_err();
        assert!(err.to_string().contains("max_token"), "{err}");
        let err = toml::from_str::<BudgetSpec>("kind = \"nope\"").unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        let bad = BudgetSpec::Tps {
            ttl_ms: 100,
            min_retries_per_sec: 10,
            percent_can_retry: 0.2,
        };
        assert!(bad.validate().unwrap_err().contains("ttl_ms"));
    }

    #[test]
    fn unlimited_always_allows() {
        let mut b = AnyBudget::from_spec(None);
        assert!((0..1000).all(|_| b.withdraw(T, E)));
    }
}
