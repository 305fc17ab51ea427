//! The typed values of a run's parameters: the dependency's ([`ServiceParams`]), the swarm's
//! ([`SwarmParams`]) and the step workload's ([`StepParams`]), each field one parameter of the
//! table, with the defaults a JSON form without the newer fields takes; and [`ms`] and [`secs`],
//! which read their numbers of milliseconds and seconds as durations. Plain data: the checks
//! that make them valid are in `from_raw.rs` and `rules.rs`.

use std::time::Duration;

/// The dependency's parameters.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceParams {
    pub workers: usize,
    pub service_ms: f64,
    pub queue: usize,
    /// `fifo`, `codel` or `adaptive_lifo`.
    #[serde(default = "default_queue_policy")]
    pub queue_policy: String,
    #[serde(default = "default_queue_target_ms")]
    pub queue_target_ms: f64,
    #[serde(default = "default_queue_interval_ms")]
    pub queue_interval_ms: f64,
    /// `all`, `deadline` or `priority`.
    #[serde(default = "default_admission")]
    pub admission: String,
    /// Priority admission: the share of the workers kept for critical requests.
    #[serde(default = "default_priority_reserve")]
    pub priority_reserve: f64,
    /// `E03_REPLICAS`: copies of the dependency, each with its own timeline.
    #[serde(default = "default_replicas")]
    pub replicas: u32,
    /// `none` or `aimd`.
    #[serde(default = "default_concurrency_limit")]
    pub concurrency_limit: String,
    #[serde(default = "default_limit_timeout_ms")]
    pub limit_timeout_ms: f64,
    pub freeze_start_s: f64,
    pub freeze_end_s: f64,
    pub recovery_end_s: f64,
    pub recovery_factor: f64,
    pub fail_rate: f64,
    pub slow_rate: f64,
    pub slow_ms: f64,
    /// Share of answers lost after the commit (the retry-logic article).
    #[serde(default)]
    pub lost_rate: f64,
    /// Share of operations that fail permanently (the retry-logic article).
    #[serde(default)]
    pub permanent_rate: f64,
    /// The heavy tail: share of requests, and their service-time factor.
    #[serde(default)]
    pub tail_rate: f64,
    #[serde(default = "default_tail_factor")]
    pub tail_factor: f64,
    /// The rate-limit article's content faults and token accounting (see [`e03_model::faults::FaultModel`]).
    #[serde(default)]
    pub timeout_rate: f64,
    #[serde(default)]
    pub cutoff_rate: f64,
    #[serde(default)]
    pub input_tokens: u32,
    #[serde(default)]
    pub output_tokens: u32,
    /// `E03_DOWN_LATENCY_MS`: every down phase answers this many ms after an arrival instead of
    /// its own `latency_ms` (`None`: each phase's own).
    #[serde(default)]
    pub down_latency_ms: Option<f64>,
}

fn default_queue_policy() -> String {
    "fifo".into()
}

fn default_queue_target_ms() -> f64 {
    5.0
}

fn default_queue_interval_ms() -> f64 {
    100.0
}

fn default_admission() -> String {
    "all".into()
}

fn default_replicas() -> u32 {
    1
}

fn default_priority_reserve() -> f64 {
    e03_model::dependency::AdmissionRule::DEFAULT_RESERVE
}

fn default_concurrency_limit() -> String {
    "none".into()
}

fn default_limit_timeout_ms() -> f64 {
    5000.0
}

fn default_tail_factor() -> f64 {
    10.0
}

/// The step workload's parameters (`E03_WORKLOAD=steps`, the rate-limit article; see [`e03_model::steps`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepParams {
    pub step_ms: f64,
    pub steps: u32,
    pub batch_items: u32,
    pub burst_start: u32,
    pub burst_items: u32,
    pub loads: Vec<u32>,
    pub step_calls: u32,
    pub interactive_every: u32,
    pub interactive_until: u32,
    pub interactive_budget: u32,
}

/// The swarm's parameters.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SwarmParams {
    pub clients: u32,
    /// `closed_loop`, `group`, `ramp`, `fixed_rate`, `open_loop` or `steps`.
    pub workload: String,
    pub period_ms: f64,
    /// `open_loop`: arrivals per second (at the start and end of a ramp).
    #[serde(default = "default_rate")]
    pub rate: f64,
    /// `open_loop`: rate at the run's middle (0 or at most `rate`: constant).
    #[serde(default)]
    pub rate_peak: f64,
    /// The share of operations that are best effort ([`e03_model::priority::Priority`]).
    #[serde(default)]
    pub best_effort_share: f64,
    /// `fan_out`: calls per request, and the latency past which a request is slow.
    #[serde(default = "default_fanout")]
    pub fanout: u32,
    #[serde(default = "default_fanout_slow_ms")]
    pub fanout_slow_ms: f64,
    /// `fan_out`: successes that end a request (0: all of its calls).
    #[serde(default)]
    pub fanout_quorum: u32,
    /// `open_loop`: operations in progress at most.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: u32,
    /// 0: no limit.
    pub ops_per_client: u64,
    pub duration_s: f64,
    pub think_min_ms: f64,
    pub think_max_ms: f64,
    pub max_attempts: u32,
    pub attempt_timeout_ms: f64,
    pub deadline_ms: f64,
    pub backoff_base_ms: f64,
    pub backoff_cap_ms: f64,
    pub budget_cap: f64,
    pub budget_ratio: f64,
    /// `E03_BREAK_MS`: every circuit breaker's break duration, instead of its strategy's own
    /// `break_duration_ms` (`None`: each strategy's own).
    #[serde(default)]
    pub break_ms: Option<u64>,
    /// `E03_CONNECT_TIMEOUT_MS`: the swarm's connect timeout (`None`: none of its own).
    #[serde(default)]
    pub connect_timeout_ms: Option<f64>,
    /// `E03_BUDGET_SCOPE`: who holds each policy instance.
    #[serde(default)]
    pub budget_scope: e03_model::policy::BudgetScope,
    /// `E03_SHARDS`: the shards the clients are divided into.
    #[serde(default = "default_shards")]
    pub shards: u32,
    /// `E03_BALANCER`: `round_robin`, `least_outstanding`, `failover` or `partition`.
    #[serde(default = "default_balancer")]
    pub balancer: String,
    /// `E03_OUTLIER_5XX`: failures in a row that eject a replica (0: no outlier detection).
    #[serde(default)]
    pub outlier_5xx: u32,
    /// `E03_EJECTION_MS`, `E03_OUTLIER_INTERVAL_MS`.
    #[serde(default = "default_ejection_ms")]
    pub ejection_ms: u64,
    #[serde(default = "default_outlier_interval_ms")]
    pub outlier_interval_ms: u64,
    /// `E03_HEALTH_INTERVAL_MS`: the active health checks' interval (0: none).
    #[serde(default)]
    pub health_interval_ms: u64,
    /// `E03_UNHEALTHY_THRESHOLD`: failed probes in a row that take a replica out.
    #[serde(default = "default_unhealthy_threshold")]
    pub unhealthy_threshold: u32,
}

fn default_unhealthy_threshold() -> u32 {
    3
}

fn default_balancer() -> String {
    "round_robin".into()
}

fn default_ejection_ms() -> u64 {
    30_000
}

fn default_outlier_interval_ms() -> u64 {
    10_000
}

fn default_shards() -> u32 {
    1
}

fn default_rate() -> f64 {
    100.0
}

fn default_max_in_flight() -> u32 {
    20_000
}

fn default_fanout() -> u32 {
    100
}

fn default_fanout_slow_ms() -> f64 {
    1000.0
}

pub(crate) fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1000.0)
}

pub(crate) fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}
