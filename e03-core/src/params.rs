//! Run parameters: one table of every parameter (env var, flag, default, what it accepts), raw
//! string values read from it, and one validation step into typed [`Params`].
//!
//! Callers collect raw values from wherever they come from (the environment, command-line
//! flags, a control call) into a map keyed by env var name and call [`Params::from_raw`]. Every
//! error names the parameter, the value given and what is accepted, so a binary can print it and
//! exit 2 before anything runs.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::budget::BudgetSpec;
use crate::operation::Limits;
use crate::strategy::Strategy;
use crate::strategy_table::{accepted_ids, resolve_id, StrategySpec};

/// One parameter of the lab.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// Env var name, also the key of raw maps.
    pub env: &'static str,
    /// Long flag name (without `--`).
    pub flag: &'static str,
    pub default: &'static str,
    /// What it accepts, as printed in errors and help.
    pub accepts: &'static str,
    pub help: &'static str,
}

macro_rules! p {
    ($env:literal, $flag:literal, $default:literal, $accepts:literal, $help:literal) => {
        ParamSpec {
            env: $env,
            flag: $flag,
            default: $default,
            accepts: $accepts,
            help: $help,
        }
    };
}

/// Every run parameter, in the order of the spec.
pub const PARAMS: &[ParamSpec] = &[
    p!(
        "E03_WORKERS",
        "workers",
        "10",
        "a whole number from 1 to 10000",
        "requests the dependency serves at once"
    ),
    p!(
        "E03_SERVICE_MS",
        "service-ms",
        "40",
        "a number of milliseconds from 0.1 to 60000",
        "service time per request"
    ),
    p!(
        "E03_QUEUE",
        "queue",
        "100",
        "a whole number from 0 to 1000000",
        "waiting requests beyond the workers"
    ),
    p!(
        "E03_QUEUE_POLICY",
        "queue-policy",
        "fifo",
        "fifo, codel or adaptive_lifo",
        "how the queue is served (Facebook's \"Fail at Scale\"): fifo: first come, first served, nobody dropped; codel: a queued request waits at most E03_QUEUE_INTERVAL_MS, or E03_QUEUE_TARGET_MS when the queue has not been empty for E03_QUEUE_INTERVAL_MS, then is answered 503 (queue_timeout); adaptive_lifo: codel's timeouts, and the newest request first while the queue stands"
    ),
    p!(
        "E03_QUEUE_TARGET_MS",
        "queue-target-ms",
        "5",
        "a number of milliseconds greater than 0 and at most 60000",
        "codel and adaptive_lifo: the wait allowed in a standing queue (the article's M)"
    ),
    p!(
        "E03_QUEUE_INTERVAL_MS",
        "queue-interval-ms",
        "100",
        "a number of milliseconds greater than 0 and at most 60000, not below E03_QUEUE_TARGET_MS",
        "codel and adaptive_lifo: the wait allowed otherwise, and how long the queue must stay non-empty to stand (the article's N)"
    ),
    p!(
        "E03_CONCURRENCY_LIMIT",
        "concurrency-limit",
        "none",
        "none, aimd or gradient2",
        "none: workers and queue bound what is admitted; aimd or gradient2: an adaptive concurrency limit in front of them, after Netflix concurrency-limits, with the library's defaults: a request arriving while the limit's worth of requests are in the dependency is answered 503 at once without work (cause limited). aimd (AIMDLimit: initial and minimum 20, maximum 200, backoff ratio 0.9): each request that leaves raises the limit by 1 if the limit was at least half in use when it was admitted, or cuts it by 10% if it was dropped or took longer than E03_LIMIT_TIMEOUT_MS; gradient2 (Gradient2Limit: initial and minimum 20, maximum 200, smoothing 0.2, queue size 4): each request that leaves moves the limit by the ratio of a long average round trip to its own, between 0.5 and 1, plus 4, smoothed"
    ),
    p!(
        "E03_LIMIT_TIMEOUT_MS",
        "limit-timeout-ms",
        "5000",
        "a number of milliseconds greater than 0 and at most 600000",
        "aimd: a request that took longer than this, arrival to answer, counts as a drop (the library's default, 5 s)"
    ),
    p!(
        "E03_ADMISSION",
        "admission",
        "all",
        "all, deadline or priority",
        "all: every request is admitted as workers and queue allow; deadline: a request whose caller's deadline (the x-e03-deadline-ms it sent: its attempt's timeout) has passed, or would pass before its expected finish in FIFO order, is answered 504 at once without work (cause deadline); priority: Stripe's fleet usage load shedder, a best-effort request (x-e03-priority: best_effort) that arrives while best-effort requests hold their share of the workers, floor((1 - E03_PRIORITY_RESERVE) x E03_WORKERS) on a worker or queued, is answered 503 at once without work (cause shed)"
    ),
    p!(
        "E03_PRIORITY_RESERVE",
        "priority-reserve",
        "0.2",
        "a number from 0 to 1",
        "priority admission: the share of the workers kept for critical requests (Stripe's 20%)"
    ),
    p!(
        "E03_REPLICAS",
        "replicas",
        "1",
        "a whole number from 1 to 16",
        "copies of the dependency, each a process of its own with its own workers, queue and timeline (a [[timeline]] down or degraded phase's replica key: 0 is the first); the callers spread their attempts over them with E03_BALANCER (or, with E03_BALANCER=partition, each replica stands for a dependency of its own)"
    ),
    p!(
        "E03_BALANCER",
        "balancer",
        "round_robin",
        "round_robin, least_outstanding, failover or partition",
        "with E03_REPLICAS above 1, the callers' client-side balancer (Envoy's): round_robin: each replica in rotation in turn; least_outstanding: of two replicas drawn at random, the one with fewer requests in flight (Envoy's LEAST_REQUEST, choice_count 2); failover: the first replica in rotation (active-passive); partition: the replicas are different dependencies, each operation calls the one its client names (client mod E03_REPLICAS; a fan-out call i calls replica i), with no health checks or outlier detection (nothing stands in for a dependency). Below half of the replicas in rotation, every replica is picked from (Envoy's healthy_panic_threshold, 50%). One balancer per caller process (a sidecar's), shared by its clients"
    ),
    p!(
        "E03_OUTLIER_5XX",
        "outlier-5xx",
        "0",
        "a whole number from 0 to 1000 (0: no outlier detection)",
        "Envoy's consecutive_5xx outlier detection: a replica is taken out of rotation on its Nth failed attempt in a row (a 5xx, a timeout, no answer), as long as it is the only one out or at most 10% are (max_ejection_percent); it comes back at the first sweep (every E03_OUTLIER_INTERVAL_MS) after E03_EJECTION_MS times its number of ejections, at most 300 s (Envoy's defaults: 5, 10 s, 30 s)"
    ),
    p!(
        "E03_EJECTION_MS",
        "ejection-ms",
        "30000",
        "a whole number of milliseconds from 1 to 300000",
        "outlier detection: base_ejection_time, how long an ejected replica stays out the first time (Envoy: 30 s)"
    ),
    p!(
        "E03_OUTLIER_INTERVAL_MS",
        "outlier-interval-ms",
        "10000",
        "a whole number of milliseconds from 1 to 300000",
        "outlier detection: the interval between sweeps that bring ejected replicas back (Envoy: 10 s)"
    ),
    p!(
        "E03_HEALTH_INTERVAL_MS",
        "health-interval-ms",
        "0",
        "0 or a whole number of milliseconds from 1 to 300000 (0: no active health checks)",
        "active health checks (Envoy's health_checks, a Kubernetes readiness probe's defaults): the callers' balancer sends each replica a GET /ready this long after the last probe's answer (or its 1 s timeout); a replica not ready E03_UNHEALTHY_THRESHOLD times in a row leaves the rotation, and comes back at its first ready answer. A replica is ready unless its timeline has it down (held in a freeze)"
    ),
    p!(
        "E03_UNHEALTHY_THRESHOLD",
        "unhealthy-threshold",
        "3",
        "a whole number from 1 to 100",
        "active health checks: failed probes in a row that take a replica out of rotation (Kubernetes' failureThreshold: 3)"
    ),
    p!(
        "E03_FREEZE_START_S",
        "freeze-start-s",
        "8.5",
        "a number of seconds from 0 to 86400",
        "E03-B: freeze starts (s after the run's start)"
    ),
    p!(
        "E03_FREEZE_END_S",
        "freeze-end-s",
        "10.0",
        "a number of seconds from 0 to 86400, not before E03_FREEZE_START_S",
        "E03-B: freeze ends"
    ),
    p!(
        "E03_RECOVERY_END_S",
        "recovery-end-s",
        "15.0",
        "a number of seconds from 0 to 86400, not before E03_FREEZE_END_S",
        "E03-B: degraded window ends"
    ),
    p!(
        "E03_RECOVERY_FACTOR",
        "recovery-factor",
        "0.5",
        "a fraction greater than 0 and at most 1",
        "E03-B: capacity factor in the degraded window"
    ),
    p!(
        "E03_FAIL_RATE",
        "fail-rate",
        "0.05",
        "a probability from 0 to 1",
        "share of requests answered 503 (scenarios with [faults], like e03a)"
    ),
    p!(
        "E03_SLOW_RATE",
        "slow-rate",
        "0.01",
        "a probability from 0 to 1 (with E03_FAIL_RATE at most 1 in all)",
        "share of answers delayed (scenarios with [faults], like e03a)"
    ),
    p!(
        "E03_SLOW_MS",
        "slow-ms",
        "2500",
        "a number of milliseconds from 0 to 600000",
        "E03-A: delay of a slow answer after its worker is freed"
    ),
    p!(
        "E03_DOWN_LATENCY_MS",
        "down-latency-ms",
        "scenario",
        "a number of milliseconds from 0 to 600000 (fractions allowed), or scenario",
        "how long after its arrival a down phase answers each request, and how long a refused connect takes in the simulator; scenario: each phase's own latency_ms"
    ),
    p!(
        "E03_LOST_RATE",
        "lost-rate",
        "0",
        "a probability from 0 to 1 (with E03_FAIL_RATE and E03_SLOW_RATE at most 1 in all)",
        "share of answers lost after the commit: the connection is reset (scenarios with [faults])"
    ),
    p!(
        "E03_TAIL_RATE",
        "tail-rate",
        "0",
        "a probability from 0 to 1",
        "share of requests in the dependency's heavy tail: their work takes E03_TAIL_FACTOR service times (scenarios with [faults])"
    ),
    p!(
        "E03_TAIL_FACTOR",
        "tail-factor",
        "10",
        "a number from 1 to 10000 (fractions allowed)",
        "how many service times a request of the heavy tail takes (with E03_TAIL_RATE)"
    ),
    p!(
        "E03_PERMANENT_RATE",
        "permanent-rate",
        "0",
        "a probability from 0 to 1",
        "share of operations answered 400/404/409/422 on every attempt (scenarios with [faults])"
    ),
    p!(
        "E03_TIMEOUT_RATE",
        "timeout-rate",
        "0",
        "a probability from 0 to 1",
        "share of admitted requests that time out before any output: 504, input tokens paid (seed 002; scenarios with [faults])"
    ),
    p!(
        "E03_CUTOFF_RATE",
        "cutoff-rate",
        "0",
        "a probability from 0 to 1",
        "share of the other admitted requests whose output is cut off: 502, input and one output token paid (seed 002; scenarios with [faults])"
    ),
    p!(
        "E03_INPUT_TOKENS",
        "input-tokens",
        "0",
        "a whole number of tokens from 0 to 1000000 (0: no token accounting)",
        "input tokens an admitted request pays; each answer's cost is logged (seed 002; scenarios with [faults])"
    ),
    p!(
        "E03_OUTPUT_TOKENS",
        "output-tokens",
        "0",
        "a whole number of tokens from 0 to 1000000",
        "output tokens of a complete answer (seed 002)"
    ),
    p!(
        "E03_CLIENTS",
        "clients",
        "200",
        "a whole number from 1 to 100000",
        "closed-loop clients"
    ),
    p!(
        "E03_DURATION_S",
        "duration-s",
        "30",
        "a number of seconds greater than 0 and at most 86400",
        "operations start in [0, duration)"
    ),
    p!(
        "E03_THINK_MIN_MS",
        "think-min-ms",
        "1500",
        "a number of milliseconds from 0 to 3600000",
        "shortest think time between operations"
    ),
    p!(
        "E03_THINK_MAX_MS",
        "think-max-ms",
        "2500",
        "a number of milliseconds from 0 to 3600000, not below E03_THINK_MIN_MS",
        "longest think time"
    ),
    p!(
        "E03_WORKLOAD",
        "workload",
        "closed_loop",
        "closed_loop, group, ramp, fixed_rate, open_loop, steps or fan_out",
        "closed_loop: starts spread over 2 s, then think times; group: every client starts at 0; ramp: client c starts at c x E03_PERIOD_MS, then think times; fixed_rate: one operation per client every E03_PERIOD_MS; open_loop: Poisson arrivals at E03_RATE per second, each operation on its own; steps: seed 002's batch and interactive flows on a step clock (E03_STEP_*); fan_out: E03_CLIENTS callers as in the closed loop, each request calling the dependency E03_FANOUT times at once and ending with its slowest call"
    ),
    p!(
        "E03_STEP_MS",
        "step-ms",
        "100",
        "a number of milliseconds greater than 0 and at most 60000",
        "steps: the duration of one step live (one tick in simulation)"
    ),
    p!(
        "E03_STEPS",
        "steps",
        "140",
        "a whole number of steps from 1 to 100000",
        "steps: steps in a run; a batch item not done by then failed"
    ),
    p!(
        "E03_BATCH_ITEMS",
        "batch-items",
        "160",
        "a whole number from 0 to 1000000",
        "steps: items of the batch; those not in the burst arrive one a step from step 0"
    ),
    p!(
        "E03_BURST_START",
        "burst-start",
        "30",
        "a whole number of steps from 0 to 100000",
        "steps: the step where the burst begins"
    ),
    p!(
        "E03_BURST_ITEMS",
        "burst-items",
        "60",
        "a whole number from 0 to 1000000, not above E03_BATCH_ITEMS",
        "steps: batch items that arrive in the burst"
    ),
    p!(
        "E03_STEP_LOADS",
        "step-loads",
        "3,6",
        "a comma-separated list of 1 to 8 whole numbers from 1 to 10000, without repeats",
        "steps: the load levels, burst items per step (each level runs every strategy)"
    ),
    p!(
        "E03_STEP_CALLS",
        "step-calls",
        "12",
        "a whole number from 1 to 100000",
        "steps: batch calls sent in one step at most"
    ),
    p!(
        "E03_INTERACTIVE_EVERY",
        "interactive-every",
        "2",
        "a whole number of steps from 0 to 100000 (0: no interactive flow)",
        "steps: an interactive query arrives every this many steps"
    ),
    p!(
        "E03_INTERACTIVE_UNTIL",
        "interactive-until",
        "120",
        "a whole number of steps from 0 to 100000",
        "steps: interactive queries arrive before this step"
    ),
    p!(
        "E03_INTERACTIVE_BUDGET",
        "interactive-budget",
        "1",
        "a whole number of steps from 0 to 100000",
        "steps: an interactive query is tried in its step and in each of the next this many steps until it succeeds"
    ),
    p!(
        "E03_RATE",
        "rate",
        "100",
        "a number of operations per second greater than 0 and at most 100000",
        "open_loop: arrival rate (the rate at the start and end of a ramp)"
    ),
    p!(
        "E03_BEST_EFFORT_SHARE",
        "best-effort-share",
        "0",
        "a number from 0 to 1",
        "the share of operations that are best effort, each drawn once from the seed, the client and the operation's number; their attempts carry x-e03-priority: best_effort, which priority admission sheds first (E03_ADMISSION=priority)"
    ),
    p!(
        "E03_FANOUT",
        "fanout",
        "100",
        "a whole number from 1 to 1000 (E03_CLIENTS x E03_FANOUT at most 100000)",
        "fan_out: calls of one request, made at once; each is an operation of its own (client = caller x E03_FANOUT + call), with the strategy's retries"
    ),
    p!(
        "E03_FANOUT_QUORUM",
        "fanout-quorum",
        "0",
        "a whole number from 0 to E03_FANOUT (0: every call)",
        "fan_out: a request ends once this many of its calls succeeded (its other calls go on, uncancelled), or once so many failed that it cannot"
    ),
    p!(
        "E03_FANOUT_SLOW_MS",
        "fanout-slow-ms",
        "1000",
        "a number of milliseconds greater than 0 and at most 3600000",
        "fan_out: a request that takes longer than this is slow (the fan-out table's share and the check metric fanout_slow_share)"
    ),
    p!(
        "E03_RATE_PEAK",
        "rate-peak",
        "0",
        "a number of operations per second from 0 to 100000 (0 or at most E03_RATE: a constant rate)",
        "open_loop: ramp linearly from E03_RATE up to this rate at the run's middle and back down"
    ),
    p!(
        "E03_MAX_IN_FLIGHT",
        "max-in-flight",
        "20000",
        "a whole number from 1 to 1000000",
        "open_loop: operations in progress at most; an arrival beyond it is dropped and counted"
    ),
    p!(
        "E03_PERIOD_MS",
        "period-ms",
        "50",
        "a number of milliseconds greater than 0 and at most 3600000",
        "fixed_rate: time between a client's operation starts; ramp: time between two clients' first starts"
    ),
    p!(
        "E03_OPS_PER_CLIENT",
        "ops-per-client",
        "0",
        "a whole number from 0 to 100000000 (0: no limit)",
        "operations per client at most"
    ),
    p!(
        "E03_MAX_ATTEMPTS",
        "max-attempts",
        "4",
        "a whole number from 1 to 100",
        "attempts per operation, first included"
    ),
    p!(
        "E03_ATTEMPT_TIMEOUT_MS",
        "attempt-timeout-ms",
        "2000",
        "a number of milliseconds from 1 to 600000",
        "timeout of one attempt"
    ),
    p!(
        "E03_CONNECT_TIMEOUT_MS",
        "connect-timeout-ms",
        "none",
        "a number of milliseconds from 1 to 600000, or none",
        "the swarm's connect timeout: a connection not made within it ends its attempt as \
         connect_timeout; none: a stalled connect ends at the attempt's timeout, as a timeout"
    ),
    p!(
        "E03_DEADLINE_MS",
        "deadline-ms",
        "5000",
        "a number of milliseconds from 1 to 3600000, not below E03_ATTEMPT_TIMEOUT_MS",
        "deadline of one operation"
    ),
    p!(
        "E03_BACKOFF_BASE_MS",
        "backoff-base-ms",
        "200",
        "a number of milliseconds from 0 to 600000",
        "backoff before the first retry"
    ),
    p!(
        "E03_BACKOFF_CAP_MS",
        "backoff-cap-ms",
        "2000",
        "a number of milliseconds from 0 to 3600000",
        "largest backoff"
    ),
    p!(
        "E03_BUDGET_CAP",
        "budget-cap",
        "10",
        "a number of tokens from 1 to 1000000",
        "D: retry budget size (it starts full)"
    ),
    p!(
        "E03_BUDGET_RATIO",
        "budget-ratio",
        "0.1",
        "a number of tokens from 0 to 1000",
        "D: tokens each first attempt adds"
    ),
    p!(
        "E03_BUDGET_SCOPE",
        "budget-scope",
        "fleet",
        "fleet, shard or client",
        "who holds one instance of each strategy's policy (its retry budget or throttle, its circuit breaker, its client-side limits): fleet: all the strategy's clients share one (one library instance behind a service's callers); shard: one per shard of E03_SHARDS, client c in shard c mod E03_SHARDS; client: one per client (open_loop: per slot of E03_MAX_IN_FLIGHT; fan_out: per call). Brooker: per-client budgets drift towards no retries"
    ),
    p!(
        "E03_SHARDS",
        "shards",
        "1",
        "a whole number from 1 to 100000",
        "the shards the clients are divided into, client c in shard c mod E03_SHARDS; a shard holds one instance of each policy when E03_BUDGET_SCOPE=shard (every shard runs in the one swarm process here)"
    ),
    p!(
        "E03_BREAK_MS",
        "break-ms",
        "strategy",
        "a whole number of milliseconds from 1 to 3600000, or strategy",
        "how long every circuit breaker stays open; strategy: each breaker's own break_duration_ms"
    ),
    p!(
        "E03_SEED",
        "seed",
        "42",
        "a whole number from 0 to 18446744073709551615",
        "seed of all randomness"
    ),
    p!(
        "E03_SEEDS",
        "seeds",
        "",
        "a comma-separated list of seeds or ranges like 1-100 (at most 10000 seeds)",
        "several seeds (overrides E03_SEED)"
    ),
    p!(
        "E03_STRATEGIES",
        "strategies",
        "A,B,C,D",
        "a comma-separated list of strategy ids from A,B,C,D,E,F,grpc,aws-standard,aws-2026,aws-adaptive,finagle,tower,envoy,sre-adaptive,polly-breaker,retry-everything,budget10,aimd-client,gradient2-client,grpc-hedging,polly-hedging without repeats",
        "strategies of the run"
    ),
];

/// Looks a parameter up by env name or flag name.
pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    PARAMS.iter().find(|p| p.env == name || p.flag == name)
}

/// A parameter value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("invalid {name}={value:?}: expected {accepts}")]
    Invalid {
        name: String,
        value: String,
        accepts: String,
    },
    #[error("unknown parameter {name:?}: expected one of the E03_* parameter names (see --help)")]
    Unknown { name: String },
    /// `known`: the built-in scenarios' names, as the message lists them.
    #[error("unknown scenario {value:?}: expected {known}, all, or a scenario file (NAME.toml)")]
    UnknownScenario { value: String, known: String },
}

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
    /// Share of answers lost after the commit (seed 004).
    #[serde(default)]
    pub lost_rate: f64,
    /// Share of operations that fail permanently (seed 004).
    #[serde(default)]
    pub permanent_rate: f64,
    /// The heavy tail: share of requests, and their service-time factor.
    #[serde(default)]
    pub tail_rate: f64,
    #[serde(default = "default_tail_factor")]
    pub tail_factor: f64,
    /// Seed 002's content faults and token accounting (see [`FaultModel`]).
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
    crate::dependency::AdmissionRule::DEFAULT_RESERVE
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

/// The step workload's parameters (`E03_WORKLOAD=steps`, seed 002; see [`crate::steps`]).
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
    /// The share of operations that are best effort ([`crate::priority::Priority`]).
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
    pub budget_scope: crate::policy::BudgetScope,
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

impl SwarmParams {
    /// A partition (`E03_BALANCER=partition`) with health checks or outlier detection: refused,
    /// as none of its replicas stands in for another.
    fn partition_ejects(&self) -> bool {
        self.balancer == "partition" && (self.outlier_5xx > 0 || self.health_interval_ms > 0)
    }

    /// The most fallbacks a strategy may have ([`Strategy::fallbacks`]): a fan-out's calls,
    /// none with another workload.
    fn most_fallbacks(&self) -> u32 {
        if self.workload == "fan_out" {
            self.fanout
        } else {
            0
        }
    }
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

/// Every parameter of a run, validated. The fields are private so that every `Params` has
/// passed the checks: it is made by [`Params::from_raw`] (or [`Params::for_scenario`]), changed
/// only by the checked [`Params::with_seeds`], and read back from JSON through the same rules
/// (`serde(try_from)`). So there is always at least one seed ([`Params::seed`] cannot fail), at
/// least one strategy, no repeated strategy id, and the cross-parameter rules hold.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ParamsFields")]
pub struct Params {
    service: ServiceParams,
    swarm: SwarmParams,
    seeds: Vec<u64>,
    /// The run's strategies; for the step workload, each strategy once per load level (see
    /// [`Strategy::load`]).
    strategies: Vec<Strategy>,
    steps: StepParams,
}

/// The serialized shape of [`Params`], checked by `TryFrom` before it becomes one.
#[derive(serde::Deserialize)]
struct ParamsFields {
    service: ServiceParams,
    swarm: SwarmParams,
    seeds: Vec<u64>,
    strategies: Vec<Strategy>,
    steps: StepParams,
}

impl TryFrom<ParamsFields> for Params {
    type Error = String;

    fn try_from(f: ParamsFields) -> Result<Params, String> {
        let seeds = f.seeds.clone();
        if let Some(name) = broken_rule(&f.service, &f.swarm) {
            return Err(format!("parameters break the rule on {name}"));
        }
        if f.swarm.partition_ejects() {
            return Err("E03_BALANCER=partition with health checks or outlier detection".into());
        }
        if let Some(s) = (f.strategies.iter()).find(|s| s.fallbacks > f.swarm.most_fallbacks()) {
            return Err(format!(
                "strategy {:?} has more fallbacks than calls per request",
                s.id
            ));
        }
        if let Some(s) = f
            .strategies
            .iter()
            .enumerate()
            .find(|(i, s)| f.strategies[..*i].iter().any(|x| x.id == s.id))
        {
            return Err(format!("strategy {:?} is listed twice", s.1.id));
        }
        if f.strategies.is_empty() {
            return Err("parameters with no strategy".into());
        }
        let unchecked = Params {
            service: f.service,
            swarm: f.swarm,
            seeds: vec![0],
            strategies: f.strategies,
            steps: f.steps,
        };
        unchecked.check_values().map_err(|e| e.to_string())?;
        let f = unchecked;
        if let Some(s) = f
            .strategies
            .iter()
            .find(|s| !crate::names::valid_strategy_id(&s.id))
        {
            return Err(format!(
                "invalid strategy id {:?}: expected 1 to 32 ASCII letters, digits or '-'",
                s.id
            ));
        }
        f.with_seeds(seeds).map_err(|e| e.to_string())
    }
}

/// The cross-parameter rules that single values cannot check: the first one broken, by the
/// name of its later parameter.
/// The ordering rules between two parameters, `(later, earlier)`: `later` may not be less than
/// `earlier`. [`broken_rule`] names `later`; a driver that knows which of the two the user typed
/// can blame that one instead (see `crate::cli`).
pub const ORDER_RULES: &[(&str, &str)] = &[
    ("E03_FREEZE_END_S", "E03_FREEZE_START_S"),
    ("E03_RECOVERY_END_S", "E03_FREEZE_END_S"),
    ("E03_THINK_MAX_MS", "E03_THINK_MIN_MS"),
    ("E03_DEADLINE_MS", "E03_ATTEMPT_TIMEOUT_MS"),
    ("E03_QUEUE_INTERVAL_MS", "E03_QUEUE_TARGET_MS"),
];

fn broken_rule(service: &ServiceParams, swarm: &SwarmParams) -> Option<&'static str> {
    if service.freeze_end_s < service.freeze_start_s {
        Some("E03_FREEZE_END_S")
    } else if service.recovery_end_s < service.freeze_end_s {
        Some("E03_RECOVERY_END_S")
    } else if service.fail_rate + service.slow_rate > 1.0 {
        Some("E03_SLOW_RATE")
    } else if service.fail_rate + service.slow_rate + service.lost_rate > 1.0 {
        Some("E03_LOST_RATE")
    } else if swarm.think_max_ms < swarm.think_min_ms {
        Some("E03_THINK_MAX_MS")
    } else if swarm.deadline_ms < swarm.attempt_timeout_ms {
        Some("E03_DEADLINE_MS")
    } else if service.queue_interval_ms < service.queue_target_ms {
        Some("E03_QUEUE_INTERVAL_MS")
    } else if swarm.workload == "fan_out" && swarm.clients as u64 * swarm.fanout as u64 > 100_000 {
        Some("E03_FANOUT")
    } else if swarm.fanout_quorum > swarm.fanout {
        Some("E03_FANOUT_QUORUM")
    } else {
        None
    }
}

/// Most seeds in one run (as `E03_SEEDS` accepts).
const MAX_SEEDS: usize = 10_000;

pub(crate) fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1000.0)
}

pub(crate) fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}

impl Default for Params {
    fn default() -> Self {
        Params::from_raw(&BTreeMap::new()).expect("defaults are valid")
    }
}

impl Params {
    /// Validates raw values keyed by env var name; missing keys take their default. Keys that
    /// are not parameters are an error (a typo must not silently run the defaults).
    pub fn from_raw(raw: &BTreeMap<String, String>) -> Result<Params, ParamError> {
        Params::from_raw_with(raw, &[])
    }

    /// [`Params::from_raw`] where `E03_STRATEGIES` may also name the strategies `own` defines
    /// (a scenario's `[[strategy]]` tables; see [`crate::strategy_table::resolve_id`]).
    pub fn from_raw_with(
        raw: &BTreeMap<String, String>,
        own: &[StrategySpec],
    ) -> Result<Params, ParamError> {
        if let Some(bad) = raw
            .keys()
            .find(|k| !PARAMS.iter().any(|p| p.env == k.as_str()))
        {
            return Err(ParamError::Unknown { name: bad.clone() });
        }
        let r = Reader { raw };
        let service = ServiceParams {
            workers: r.int("E03_WORKERS", 1, 10_000)? as usize,
            service_ms: r.num("E03_SERVICE_MS", 0.1, 60_000.0, false)?,
            queue: r.int("E03_QUEUE", 0, 1_000_000)? as usize,
            queue_policy: match r.value("E03_QUEUE_POLICY") {
                p if crate::dependency::QueueDiscipline::parse(p).is_some() => p.to_string(),
                _ => return Err(r.invalid("E03_QUEUE_POLICY")),
            },
            queue_target_ms: r.num("E03_QUEUE_TARGET_MS", 0.0, 60_000.0, true)?,
            queue_interval_ms: r.num("E03_QUEUE_INTERVAL_MS", 0.0, 60_000.0, true)?,
            admission: match r.value("E03_ADMISSION") {
                a if crate::dependency::AdmissionRule::parse(a).is_some() => a.to_string(),
                _ => return Err(r.invalid("E03_ADMISSION")),
            },
            priority_reserve: r.num("E03_PRIORITY_RESERVE", 0.0, 1.0, false)?,
            replicas: r.int("E03_REPLICAS", 1, 16)? as u32,
            concurrency_limit: match r.value("E03_CONCURRENCY_LIMIT") {
                l if crate::limit::LimitKind::parse(l).is_some() => l.to_string(),
                _ => return Err(r.invalid("E03_CONCURRENCY_LIMIT")),
            },
            limit_timeout_ms: r.num("E03_LIMIT_TIMEOUT_MS", 0.0, 600_000.0, true)?,
            freeze_start_s: r.num("E03_FREEZE_START_S", 0.0, 86_400.0, false)?,
            freeze_end_s: r.num("E03_FREEZE_END_S", 0.0, 86_400.0, false)?,
            recovery_end_s: r.num("E03_RECOVERY_END_S", 0.0, 86_400.0, false)?,
            recovery_factor: r.num("E03_RECOVERY_FACTOR", 0.0, 1.0, true)?,
            fail_rate: r.num("E03_FAIL_RATE", 0.0, 1.0, false)?,
            slow_rate: r.num("E03_SLOW_RATE", 0.0, 1.0, false)?,
            slow_ms: r.num("E03_SLOW_MS", 0.0, 600_000.0, false)?,
            lost_rate: r.num("E03_LOST_RATE", 0.0, 1.0, false)?,
            permanent_rate: r.num("E03_PERMANENT_RATE", 0.0, 1.0, false)?,
            tail_rate: r.num("E03_TAIL_RATE", 0.0, 1.0, false)?,
            tail_factor: r.num("E03_TAIL_FACTOR", 1.0, 10_000.0, false)?,
            timeout_rate: r.num("E03_TIMEOUT_RATE", 0.0, 1.0, false)?,
            cutoff_rate: r.num("E03_CUTOFF_RATE", 0.0, 1.0, false)?,
            input_tokens: r.int("E03_INPUT_TOKENS", 0, 1_000_000)? as u32,
            output_tokens: r.int("E03_OUTPUT_TOKENS", 0, 1_000_000)? as u32,
            down_latency_ms: match r.value("E03_DOWN_LATENCY_MS") {
                "scenario" => None,
                _ => Some(r.num("E03_DOWN_LATENCY_MS", 0.0, 600_000.0, false)?),
            },
        };
        let swarm = SwarmParams {
            clients: r.int("E03_CLIENTS", 1, 100_000)? as u32,
            workload: match r.value("E03_WORKLOAD") {
                w @ ("closed_loop" | "group" | "ramp" | "fixed_rate" | "open_loop" | "steps"
                | "fan_out") => w.to_string(),
                _ => return Err(r.invalid("E03_WORKLOAD")),
            },
            period_ms: r.num("E03_PERIOD_MS", 0.0, 3_600_000.0, true)?,
            rate: r.num("E03_RATE", 0.0, 100_000.0, true)?,
            rate_peak: r.num("E03_RATE_PEAK", 0.0, 100_000.0, false)?,
            best_effort_share: r.num("E03_BEST_EFFORT_SHARE", 0.0, 1.0, false)?,
            fanout: r.int("E03_FANOUT", 1, 1000)? as u32,
            fanout_quorum: r.int("E03_FANOUT_QUORUM", 0, 1000)? as u32,
            fanout_slow_ms: r.num("E03_FANOUT_SLOW_MS", 0.0, 3_600_000.0, true)?,
            max_in_flight: r.int("E03_MAX_IN_FLIGHT", 1, 1_000_000)? as u32,
            ops_per_client: r.int("E03_OPS_PER_CLIENT", 0, 100_000_000)?,
            duration_s: r.num("E03_DURATION_S", 0.0, 86_400.0, true)?,
            think_min_ms: r.num("E03_THINK_MIN_MS", 0.0, 3_600_000.0, false)?,
            think_max_ms: r.num("E03_THINK_MAX_MS", 0.0, 3_600_000.0, false)?,
            max_attempts: r.int("E03_MAX_ATTEMPTS", 1, 100)? as u32,
            attempt_timeout_ms: r.num("E03_ATTEMPT_TIMEOUT_MS", 1.0, 600_000.0, false)?,
            deadline_ms: r.num("E03_DEADLINE_MS", 1.0, 3_600_000.0, false)?,
            backoff_base_ms: r.num("E03_BACKOFF_BASE_MS", 0.0, 600_000.0, false)?,
            backoff_cap_ms: r.num("E03_BACKOFF_CAP_MS", 0.0, 3_600_000.0, false)?,
            budget_cap: r.num("E03_BUDGET_CAP", 1.0, 1_000_000.0, false)?,
            budget_ratio: r.num("E03_BUDGET_RATIO", 0.0, 1000.0, false)?,
            break_ms: match r.value("E03_BREAK_MS") {
                "strategy" => None,
                _ => Some(r.int("E03_BREAK_MS", 1, 3_600_000)?),
            },
            connect_timeout_ms: match r.value("E03_CONNECT_TIMEOUT_MS") {
                "none" => None,
                _ => Some(r.num("E03_CONNECT_TIMEOUT_MS", 1.0, 600_000.0, false)?),
            },
            budget_scope: crate::policy::BudgetScope::parse(r.value("E03_BUDGET_SCOPE"))
                .ok_or_else(|| r.invalid("E03_BUDGET_SCOPE"))?,
            shards: r.int("E03_SHARDS", 1, 100_000)? as u32,
            balancer: match r.value("E03_BALANCER") {
                b if crate::balancer::Pick::parse(b).is_some() => b.to_string(),
                _ => return Err(r.invalid("E03_BALANCER")),
            },
            outlier_5xx: r.int("E03_OUTLIER_5XX", 0, 1000)? as u32,
            ejection_ms: r.int("E03_EJECTION_MS", 1, 300_000)?,
            outlier_interval_ms: r.int("E03_OUTLIER_INTERVAL_MS", 1, 300_000)?,
            health_interval_ms: r.int("E03_HEALTH_INTERVAL_MS", 0, 300_000)?,
            unhealthy_threshold: r.int("E03_UNHEALTHY_THRESHOLD", 1, 100)? as u32,
        };
        let steps = StepParams {
            step_ms: r.num("E03_STEP_MS", 0.0, 60_000.0, true)?,
            steps: r.int("E03_STEPS", 1, 100_000)? as u32,
            batch_items: r.int("E03_BATCH_ITEMS", 0, 1_000_000)? as u32,
            burst_start: r.int("E03_BURST_START", 0, 100_000)? as u32,
            burst_items: r.int("E03_BURST_ITEMS", 0, 1_000_000)? as u32,
            loads: {
                let list: Option<Vec<u32>> = r
                    .value("E03_STEP_LOADS")
                    .split(',')
                    .map(|v| {
                        v.trim()
                            .parse::<u32>()
                            .ok()
                            .filter(|n| (1..=10_000).contains(n))
                    })
                    .collect();
                match list {
                    Some(l)
                        if (1..=8).contains(&l.len())
                            && l.iter().enumerate().all(|(i, x)| !l[..i].contains(x)) =>
                    {
                        l
                    }
                    _ => return Err(r.invalid("E03_STEP_LOADS")),
                }
            },
            step_calls: r.int("E03_STEP_CALLS", 1, 100_000)? as u32,
            interactive_every: r.int("E03_INTERACTIVE_EVERY", 0, 100_000)? as u32,
            interactive_until: r.int("E03_INTERACTIVE_UNTIL", 0, 100_000)? as u32,
            interactive_budget: r.int("E03_INTERACTIVE_BUDGET", 0, 100_000)? as u32,
        };
        if steps.burst_items > steps.batch_items {
            return Err(r.invalid("E03_BURST_ITEMS"));
        }
        // Cross-parameter rules, one error each, naming the later parameter.
        if let Some(name) = broken_rule(&service, &swarm) {
            return Err(r.invalid(name));
        }
        if swarm.partition_ejects() {
            return Err(ParamError::Invalid {
                name: "E03_BALANCER".into(),
                value: swarm.balancer.clone(),
                accepts: "round_robin, least_outstanding or failover with E03_OUTLIER_5XX or \
                          E03_HEALTH_INTERVAL_MS above 0 (a partition's replicas are different \
                          dependencies: none stands in for another, so none leaves a rotation; \
                          set both to 0)"
                    .into(),
            });
        }
        let seeds = match r.value("E03_SEEDS") {
            "" => vec![r.int("E03_SEED", 0, u64::MAX)?],
            list => parse_seeds(list).ok_or_else(|| match reversed_range(list) {
                Some((a, b)) => ParamError::Invalid {
                    name: "E03_SEEDS".into(),
                    value: list.into(),
                    accepts: format!("ranges from low to high: {a}-{b} is reversed ({b}-{a}?)"),
                },
                None => r.invalid("E03_SEEDS"),
            })?,
        };
        let budget = BudgetSpec::token_bucket(swarm.budget_cap, swarm.budget_ratio);
        let (base, cap) = (ms(swarm.backoff_base_ms), ms(swarm.backoff_cap_ms));
        let mut strategies: Vec<Strategy> = Vec::new();
        // The error names the entry at fault: `"Z" is not one`, `"A" is repeated`.
        let bad_strategies = |why: String| ParamError::Invalid {
            name: "E03_STRATEGIES".into(),
            value: r.value("E03_STRATEGIES").to_string(),
            accepts: format!("{} ({why})", accepted_ids(own)),
        };
        for id in r.value("E03_STRATEGIES").split(',').map(str::trim) {
            // A step run's own id, `<id>-L<load>` (see below), as a driver passes it on.
            let (base_id, load) = match id.rsplit_once("-L") {
                Some((b, l)) if swarm.workload == "steps" => (
                    b,
                    Some(l.parse::<u32>().map_err(|_| {
                        bad_strategies(format!("{id:?}: the load after -L is not a whole number"))
                    })?),
                ),
                _ => (id, None),
            };
            let s = resolve_id(base_id, base, cap, budget, own).ok_or_else(|| {
                bad_strategies(if id.is_empty() {
                    "an empty entry".to_string()
                } else {
                    format!("{id:?} is not one")
                })
            })?;
            let mut s = match load {
                Some(load) => s.at_load(load),
                None => s,
            };
            if let (Some(b), Some(breaker)) = (swarm.break_ms, s.breaker.as_mut()) {
                breaker.break_duration_ms = b;
            }
            if strategies.iter().any(|x| x.id == s.id) {
                return Err(bad_strategies(format!("{:?} is repeated", s.id)));
            }
            strategies.push(s);
        }
        let replicas = service.replicas;
        if let Some(s) = strategies.iter().find(|s| {
            s.bulkhead.len() > 1
                && (swarm.balancer != "partition" || s.bulkhead.len() != replicas as usize)
        }) {
            return Err(bad_strategies(format!(
                "strategy {:?} has bulkhead = {:?}: a pool per dependency needs \
                 E03_BALANCER=partition and one pool per replica (E03_REPLICAS={replicas}, \
                 E03_BALANCER={}); one number is a pool every call shares",
                s.id, s.bulkhead, swarm.balancer
            )));
        }
        let calls = swarm.most_fallbacks();
        if let Some(s) = strategies.iter().find(|s| s.fallbacks > calls) {
            return Err(bad_strategies(format!(
                "strategy {:?} has fallbacks = {}: a fallback serves a call of a fan-out \
                 request, so fallbacks is at most E03_FANOUT ({calls} here) with \
                 E03_WORKLOAD=fan_out, and 0 with any other workload",
                s.id, s.fallbacks
            )));
        }
        if swarm.workload == "steps" && strategies.iter().all(|s| s.load.is_none()) {
            // Each strategy runs once per load level, as its own run (`<id>-L<load>`).
            strategies = steps
                .loads
                .iter()
                .flat_map(|&load| strategies.iter().map(move |s| s.at_load(load)))
                .collect();
        }
        Ok(Params {
            service,
            swarm,
            seeds,
            strategies,
            steps,
        })
    }

    /// The dependency's parameters.
    pub fn service(&self) -> &ServiceParams {
        &self.service
    }

    /// The swarm's parameters.
    pub fn swarm(&self) -> &SwarmParams {
        &self.swarm
    }

    /// Every seed of the run, in order; never empty, no repeats.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// The run's first seed (`E03_SEED`, or the first of `E03_SEEDS`).
    pub fn seed(&self) -> u64 {
        self.seeds[0]
    }

    /// The strategies of the run, in order; never empty, no repeated id.
    pub fn strategies(&self) -> &[Strategy] {
        &self.strategies
    }

    /// The step workload's parameters (`E03_WORKLOAD=steps`).
    pub fn steps(&self) -> &StepParams {
        &self.steps
    }

    /// These parameters with every down phase answering `latency` after an arrival (as
    /// `E03_DOWN_LATENCY_MS` sets it; at most ten minutes, as that parameter accepts): the model
    /// a live run is checked against, at the failure latency the live run measured.
    pub fn with_down_latency(mut self, latency: Duration) -> Params {
        let ms = (latency.as_secs_f64() * 1000.0).min(600_000.0);
        self.service.down_latency_ms = Some(ms);
        self
    }

    /// These parameters with other seeds, checked as `E03_SEEDS` is: at least one, at most
    /// 10,000, no repeats.
    pub fn with_seeds(self, seeds: Vec<u64>) -> Result<Params, ParamError> {
        let mut sorted = seeds.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if seeds.is_empty() || seeds.len() > MAX_SEEDS || sorted.len() != seeds.len() {
            return Err(ParamError::Invalid {
                name: "E03_SEEDS".into(),
                value: seeds
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                accepts: spec("E03_SEEDS")
                    .expect("known parameter")
                    .accepts
                    .to_string(),
            });
        }
        Ok(Params { seeds, ..self })
    }

    /// Every single value within its range and the cross-parameter rules, by the same reader
    /// (and bounds) as raw values: the raw form of the values, strategies and seeds aside (they
    /// have checks of their own). The error names the parameter.
    fn check_values(&self) -> Result<(), ParamError> {
        let mut raw = self.to_raw();
        for own in ["E03_STRATEGIES", "E03_SEEDS", "E03_SEED"] {
            raw.remove(own);
        }
        Params::from_raw(&raw).map(|_| ())
    }

    /// These parameters with the dependency's and the swarm's values edited by `edit`, checked
    /// as `from_raw` checks them (ranges and cross-parameter rules): the typed way to change a
    /// parameter, with the same rules as typing it.
    pub fn edited(
        &self,
        edit: impl FnOnce(&mut ServiceParams, &mut SwarmParams),
    ) -> Result<Params, ParamError> {
        let mut p = self.clone();
        edit(&mut p.service, &mut p.swarm);
        p.check_values()?;
        Ok(p)
    }

    /// These parameters with only the strategies `keep` accepts (in order); `None` when none is
    /// left (a run needs at least one).
    pub fn with_strategies_where(&self, keep: impl Fn(&Strategy) -> bool) -> Option<Params> {
        let strategies: Vec<Strategy> = self
            .strategies
            .iter()
            .filter(|s| keep(s))
            .cloned()
            .collect();
        (!strategies.is_empty()).then(|| Params {
            strategies,
            ..self.clone()
        })
    }

    /// The raw form of these parameters (env name to value), for passing them on to another
    /// process; `from_raw(to_raw())` gives them back.
    pub fn to_raw(&self) -> BTreeMap<String, String> {
        let s = &self.service;
        let w = &self.swarm;
        let pairs: Vec<(&str, String)> = vec![
            ("E03_WORKERS", s.workers.to_string()),
            ("E03_SERVICE_MS", s.service_ms.to_string()),
            ("E03_QUEUE", s.queue.to_string()),
            ("E03_QUEUE_POLICY", s.queue_policy.clone()),
            ("E03_QUEUE_TARGET_MS", s.queue_target_ms.to_string()),
            ("E03_QUEUE_INTERVAL_MS", s.queue_interval_ms.to_string()),
            ("E03_ADMISSION", s.admission.clone()),
            ("E03_PRIORITY_RESERVE", s.priority_reserve.to_string()),
            ("E03_REPLICAS", s.replicas.to_string()),
            ("E03_CONCURRENCY_LIMIT", s.concurrency_limit.clone()),
            ("E03_LIMIT_TIMEOUT_MS", s.limit_timeout_ms.to_string()),
            ("E03_FREEZE_START_S", s.freeze_start_s.to_string()),
            ("E03_FREEZE_END_S", s.freeze_end_s.to_string()),
            ("E03_RECOVERY_END_S", s.recovery_end_s.to_string()),
            ("E03_RECOVERY_FACTOR", s.recovery_factor.to_string()),
            ("E03_FAIL_RATE", s.fail_rate.to_string()),
            ("E03_SLOW_RATE", s.slow_rate.to_string()),
            ("E03_SLOW_MS", s.slow_ms.to_string()),
            ("E03_LOST_RATE", s.lost_rate.to_string()),
            ("E03_PERMANENT_RATE", s.permanent_rate.to_string()),
            ("E03_TAIL_RATE", s.tail_rate.to_string()),
            ("E03_TAIL_FACTOR", s.tail_factor.to_string()),
            ("E03_TIMEOUT_RATE", s.timeout_rate.to_string()),
            ("E03_CUTOFF_RATE", s.cutoff_rate.to_string()),
            ("E03_INPUT_TOKENS", s.input_tokens.to_string()),
            ("E03_OUTPUT_TOKENS", s.output_tokens.to_string()),
            (
                "E03_DOWN_LATENCY_MS",
                s.down_latency_ms
                    .map_or("scenario".into(), |v| v.to_string()),
            ),
            ("E03_STEP_MS", self.steps.step_ms.to_string()),
            ("E03_STEPS", self.steps.steps.to_string()),
            ("E03_BATCH_ITEMS", self.steps.batch_items.to_string()),
            ("E03_BURST_START", self.steps.burst_start.to_string()),
            ("E03_BURST_ITEMS", self.steps.burst_items.to_string()),
            (
                "E03_STEP_LOADS",
                self.steps
                    .loads
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            ("E03_STEP_CALLS", self.steps.step_calls.to_string()),
            (
                "E03_INTERACTIVE_EVERY",
                self.steps.interactive_every.to_string(),
            ),
            (
                "E03_INTERACTIVE_UNTIL",
                self.steps.interactive_until.to_string(),
            ),
            (
                "E03_INTERACTIVE_BUDGET",
                self.steps.interactive_budget.to_string(),
            ),
            ("E03_CLIENTS", w.clients.to_string()),
            ("E03_WORKLOAD", w.workload.clone()),
            ("E03_PERIOD_MS", w.period_ms.to_string()),
            ("E03_RATE", w.rate.to_string()),
            ("E03_RATE_PEAK", w.rate_peak.to_string()),
            ("E03_BEST_EFFORT_SHARE", w.best_effort_share.to_string()),
            ("E03_FANOUT", w.fanout.to_string()),
            ("E03_FANOUT_QUORUM", w.fanout_quorum.to_string()),
            ("E03_FANOUT_SLOW_MS", w.fanout_slow_ms.to_string()),
            ("E03_MAX_IN_FLIGHT", w.max_in_flight.to_string()),
            ("E03_OPS_PER_CLIENT", w.ops_per_client.to_string()),
            ("E03_DURATION_S", w.duration_s.to_string()),
            ("E03_THINK_MIN_MS", w.think_min_ms.to_string()),
            ("E03_THINK_MAX_MS", w.think_max_ms.to_string()),
            ("E03_MAX_ATTEMPTS", w.max_attempts.to_string()),
            ("E03_ATTEMPT_TIMEOUT_MS", w.attempt_timeout_ms.to_string()),
            ("E03_DEADLINE_MS", w.deadline_ms.to_string()),
            ("E03_BACKOFF_BASE_MS", w.backoff_base_ms.to_string()),
            ("E03_BACKOFF_CAP_MS", w.backoff_cap_ms.to_string()),
            ("E03_BUDGET_CAP", w.budget_cap.to_string()),
            ("E03_BUDGET_RATIO", w.budget_ratio.to_string()),
            (
                "E03_BREAK_MS",
                w.break_ms.map_or("strategy".into(), |v| v.to_string()),
            ),
            (
                "E03_CONNECT_TIMEOUT_MS",
                w.connect_timeout_ms
                    .map_or("none".into(), |v| v.to_string()),
            ),
            (
                "E03_BUDGET_SCOPE",
                match w.budget_scope {
                    crate::policy::BudgetScope::Fleet => "fleet",
                    crate::policy::BudgetScope::Shard => "shard",
                    crate::policy::BudgetScope::Client => "client",
                }
                .into(),
            ),
            ("E03_SHARDS", w.shards.to_string()),
            ("E03_BALANCER", w.balancer.clone()),
            ("E03_OUTLIER_5XX", w.outlier_5xx.to_string()),
            ("E03_EJECTION_MS", w.ejection_ms.to_string()),
            ("E03_OUTLIER_INTERVAL_MS", w.outlier_interval_ms.to_string()),
            ("E03_HEALTH_INTERVAL_MS", w.health_interval_ms.to_string()),
            ("E03_UNHEALTHY_THRESHOLD", w.unhealthy_threshold.to_string()),
            ("E03_SEED", self.seed().to_string()),
            (
                "E03_SEEDS",
                self.seeds
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            (
                "E03_STRATEGIES",
                self.strategies
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// Which requests the dependency admits (`E03_ADMISSION`).
    pub fn admission(&self) -> crate::dependency::AdmissionRule {
        crate::dependency::AdmissionRule::parse(&self.service.admission).unwrap_or_default()
    }

    /// Whether the dependency admits by deadline (`E03_ADMISSION=deadline`): its callers then
    /// send each attempt's timeout in the deadline header.
    pub fn admits_by_deadline(&self) -> bool {
        self.admission() == crate::dependency::AdmissionRule::Deadline
    }

    /// The share of operations that are best effort, in parts per million
    /// (`E03_BEST_EFFORT_SHARE`).
    pub fn best_effort_ppm(&self) -> u32 {
        (self.swarm.best_effort_share * 1e6).round() as u32
    }

    /// How the dependency serves its queue (`E03_QUEUE_POLICY`, `E03_QUEUE_TARGET_MS`,
    /// `E03_QUEUE_INTERVAL_MS`).
    pub fn queue_policy(&self) -> crate::dependency::QueuePolicy {
        use crate::dependency::{QueueDiscipline, QueuePolicy};
        let s = &self.service;
        QueuePolicy {
            discipline: QueueDiscipline::parse(&s.queue_policy).unwrap_or_default(),
            target: ms(s.queue_target_ms),
            interval: ms(s.queue_interval_ms),
        }
    }

    /// Whether the dependency that `strategy`'s runs face admits by deadline: the strategy
    /// table's `admission` where it sets one, `E03_ADMISSION` otherwise. The swarm sends the
    /// deadline header exactly then.
    pub fn admits_by_deadline_for(&self, strategy: &str) -> bool {
        self.admission_for(strategy) == crate::dependency::AdmissionRule::Deadline
    }

    /// Which requests the dependency that `strategy`'s runs face admits: the strategy table's
    /// `admission` where it sets one, `E03_ADMISSION` otherwise.
    pub fn admission_for(&self, strategy: &str) -> crate::dependency::AdmissionRule {
        self.strategy(strategy)
            .and_then(|s| s.server.admission)
            .unwrap_or_else(|| self.admission())
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_attempts: self.swarm.max_attempts,
            attempt_timeout: ms(self.swarm.attempt_timeout_ms),
            deadline: ms(self.swarm.deadline_ms),
        }
    }

    pub fn duration(&self) -> Duration {
        secs(self.swarm.duration_s)
    }

    /// The swarm's connect timeout, if it has one (`E03_CONNECT_TIMEOUT_MS`).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.swarm.connect_timeout_ms.map(ms)
    }

    pub fn think_range(&self) -> (Duration, Duration) {
        (ms(self.swarm.think_min_ms), ms(self.swarm.think_max_ms))
    }

    /// When the clients' operations start (`E03_WORKLOAD`, `E03_PERIOD_MS`).
    pub fn starts(&self) -> crate::session::Starts {
        use crate::session::Starts;
        match self.swarm.workload.as_str() {
            "group" => Starts::AtZero,
            "ramp" => Starts::Ramp(ms(self.swarm.period_ms)),
            "fixed_rate" => Starts::Every(ms(self.swarm.period_ms)),
            "open_loop" => Starts::OnDemand,
            _ => Starts::ClosedLoop,
        }
    }

    /// True for the step workload (`E03_WORKLOAD=steps`, seed 002).
    pub fn is_steps(&self) -> bool {
        self.swarm.workload == "steps"
    }

    /// The step workload's configuration for a strategy run at load `load` (burst items per
    /// step).
    pub fn step_config(&self, load: u32) -> crate::steps::StepConfig {
        let p = &self.steps;
        crate::steps::StepConfig {
            step: ms(p.step_ms),
            steps: p.steps,
            batch_items: p.batch_items,
            burst_start: p.burst_start,
            burst_items: p.burst_items,
            load,
            step_calls: p.step_calls,
            max_attempts: self.swarm.max_attempts,
            interactive_every: p.interactive_every,
            interactive_until: p.interactive_until,
            interactive_budget: p.interactive_budget,
        }
    }

    /// The fan-out workload's calls per request (`E03_WORKLOAD=fan_out`, `E03_FANOUT`).
    pub fn fanout(&self) -> Option<u32> {
        (self.swarm.workload == "fan_out").then_some(self.swarm.fanout)
    }

    /// The latency past which a fan-out request is slow (`E03_FANOUT_SLOW_MS`).
    pub fn fanout_slow(&self) -> Duration {
        ms(self.swarm.fanout_slow_ms)
    }

    /// True for the open-loop workload (`E03_WORKLOAD=open_loop`).
    pub fn is_open_loop(&self) -> bool {
        self.swarm.workload == "open_loop"
    }

    /// The open loop's offered load over the run (`E03_RATE`, `E03_RATE_PEAK`).
    pub fn rate_shape(&self) -> crate::arrivals::RateShape {
        crate::arrivals::RateShape {
            base: self.swarm.rate,
            peak: self.swarm.rate_peak,
            duration: self.duration(),
        }
    }

    /// The open loop of one seed: its arrivals and its slot pool (`E03_MAX_IN_FLIGHT`).
    pub fn open_loop(&self, seed: u64) -> crate::arrivals::OpenLoop {
        crate::arrivals::OpenLoop::new(
            seed,
            crate::session::SessionConfig::from_params(self),
            self.rate_shape(),
            self.swarm.max_in_flight,
        )
    }

    /// Operations per client at most (`E03_OPS_PER_CLIENT`, 0 for no limit).
    pub fn max_ops(&self) -> Option<u32> {
        (self.swarm.ops_per_client > 0)
            .then(|| self.swarm.ops_per_client.min(u32::MAX as u64) as u32)
    }

    /// The policy instances of `strategy` in a run with this seed, one per holder of
    /// `E03_BUDGET_SCOPE` ([`crate::policy::Policies`]).
    pub fn policies(&self, strategy: &Strategy, seed: u64) -> crate::policy::Policies {
        crate::policy::Policies::new(strategy, seed, self.swarm.budget_scope, self.swarm.shards)
    }

    /// `E03_REPLICAS`: copies of the dependency.
    pub fn replicas(&self) -> u32 {
        self.service.replicas
    }

    /// The callers' balancer over the replicas (`E03_BALANCER`, `E03_OUTLIER_5XX`,
    /// `E03_EJECTION_MS`, `E03_OUTLIER_INTERVAL_MS`, `E03_HEALTH_INTERVAL_MS`,
    /// `E03_UNHEALTHY_THRESHOLD`), with Envoy's other defaults and a readiness probe's (a 1 s
    /// timeout, back after 1 good probe).
    pub fn balancer(&self) -> crate::balancer::BalancerSpec {
        let w = &self.swarm;
        let mut spec = crate::balancer::BalancerSpec::new(
            crate::balancer::Pick::parse(&w.balancer).unwrap_or(crate::balancer::Pick::RoundRobin),
        );
        if w.health_interval_ms > 0 {
            spec.health = Some(crate::balancer::HealthCheckSpec {
                interval: Duration::from_millis(w.health_interval_ms),
                unhealthy_threshold: w.unhealthy_threshold,
                ..crate::balancer::HealthCheckSpec::default()
            });
        }
        if w.outlier_5xx > 0 {
            spec.outlier = Some(crate::balancer::OutlierSpec {
                consecutive_5xx: w.outlier_5xx,
                interval: Duration::from_millis(w.outlier_interval_ms),
                base_ejection_time: Duration::from_millis(w.ejection_ms),
                ..crate::balancer::OutlierSpec::default()
            });
        }
        spec
    }

    pub fn strategy(&self, id: &str) -> Option<&Strategy> {
        self.strategies.iter().find(|s| s.id == id)
    }
}

/// Reads and checks single values.
struct Reader<'a> {
    raw: &'a BTreeMap<String, String>,
}

impl Reader<'_> {
    fn value(&self, name: &'static str) -> &str {
        self.raw
            .get(name)
            .map(|v| v.trim())
            .unwrap_or_else(|| spec(name).expect("known parameter").default)
    }

    fn invalid(&self, name: &'static str) -> ParamError {
        ParamError::Invalid {
            name: name.to_string(),
            value: self.value(name).to_string(),
            accepts: spec(name).expect("known parameter").accepts.to_string(),
        }
    }

    fn int(&self, name: &'static str, lo: u64, hi: u64) -> Result<u64, ParamError> {
        match self.value(name).parse::<u64>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(self.invalid(name)),
        }
    }

    /// A finite number in `[lo, hi]`, or `(lo, hi]` when `lo_open`.
    fn num(&self, name: &'static str, lo: f64, hi: f64, lo_open: bool) -> Result<f64, ParamError> {
        match self.value(name).parse::<f64>() {
            Ok(v) if v.is_finite() && v <= hi && (v > lo || (!lo_open && v == lo)) => Ok(v),
            _ => Err(self.invalid(name)),
        }
    }
}

/// The first range `a-b` of a seed list with `a > b`.
fn reversed_range(list: &str) -> Option<(u64, u64)> {
    list.split(',').find_map(|part| {
        let (a, b) = part.trim().split_once('-')?;
        let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
        (a > b).then_some((a, b))
    })
}

/// `42,7,1-3` into `[42, 7, 1, 2, 3]`; `None` if malformed, empty, repeated or too long.
pub fn parse_seeds(list: &str) -> Option<Vec<u64>> {
    let mut seeds = Vec::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
                if b < a || b - a >= 10_000 {
                    return None;
                }
                seeds.extend(a..=b);
            }
            None => seeds.push(part.parse::<u64>().ok()?),
        }
        if seeds.len() > MAX_SEEDS {
            return None;
        }
    }
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (sorted.len() == seeds.len() && !seeds.is_empty()).then_some(seeds)
}

impl Params {
    /// The workload of one strategy's run with this seed, in the shape the parameters give:
    /// the step workload (`E03_WORKLOAD=steps`, at the strategy's load level or the first one),
    /// the open loop (`open_loop`), or N clients as one machine (closed loop, group, fixed
    /// rate). Every driver drives whichever it is through [`Workload`](crate::workload::Workload).
    pub fn workload(
        &self,
        strategy: &crate::strategy::Strategy,
        seed: u64,
    ) -> Box<dyn crate::workload::Workload + Send> {
        let inner = self.workload_of_one(strategy, seed);
        match self.replicas() {
            1 => inner,
            n => Box::new(crate::workload::Balanced::new(
                inner,
                self.balancer(),
                n as usize,
                seed,
            )),
        }
    }

    /// [`Self::workload`] against one replica (no balancer).
    fn workload_of_one(
        &self,
        strategy: &crate::strategy::Strategy,
        seed: u64,
    ) -> Box<dyn crate::workload::Workload + Send> {
        use crate::workload::{Arrivals, Clients, FanOut, Steps};
        if self.is_steps() {
            let load = strategy.load.unwrap_or(self.steps().loads[0]);
            let timeout = self.limits().attempt_timeout;
            Box::new(Steps::new(self.step_config(load), strategy, seed, timeout))
        } else if self.is_open_loop() {
            Box::new(Arrivals::new(self.open_loop(seed), strategy))
        } else if let Some(fan) = self.fanout() {
            let config = crate::session::SessionConfig::from_params(self);
            Box::new(FanOut::new(
                seed,
                self.swarm().clients,
                fan,
                self.swarm().fanout_quorum,
                config,
                strategy,
            ))
        } else {
            let config = crate::session::SessionConfig::from_params(self);
            Box::new(Clients::new(seed, self.swarm().clients, config, strategy))
        }
    }
}

impl Params {
    /// Why this run cannot be split over `count` swarm processes (shards, [`crate::shard`]),
    /// as a message naming the setting and what would work; `None` when it can. Shards split a
    /// closed loop's clients (a group, fixed-rate callers, a ramp alike); a budget or breaker
    /// shared by the whole fleet would need one place shared by every process, which the lab
    /// does not build (docs/budget-scope.md says what a user would use).
    pub fn unshardable(&self, count: u32) -> Option<String> {
        if count <= 1 {
            return None;
        }
        if self.replicas() > 1 {
            return Some(format!(
                "E03_SHARD: a run over replicas (E03_REPLICAS={}) runs in one swarm process: its \
                 balancer's outlier detection counts every caller's failures, as one sidecar's",
                self.replicas()
            ));
        }
        let workload = if self.is_steps() {
            Some("the step workload (E03_WORKLOAD=steps)")
        } else if self.is_open_loop() {
            Some("the open loop (E03_WORKLOAD=open_loop)")
        } else if self.fanout().is_some() {
            Some("fan-out (E03_WORKLOAD=fan_out)")
        } else {
            None
        };
        if let Some(w) = workload {
            return Some(format!(
                "E03_SHARD: {w} runs in one swarm process; {count} shards split the clients of a \
                 closed loop (or a group, fixed-rate callers, a ramp)"
            ));
        }
        let stateful = self
            .strategies()
            .iter()
            .find(|s| crate::policy::holds_state(s));
        // Shard scope: holder `c mod S` is within one process `c mod count` when count divides S.
        let shards = self.swarm.shards;
        if let (Some(s), crate::policy::BudgetScope::Shard) = (stateful, self.swarm.budget_scope) {
            if !shards.is_multiple_of(count) {
                return Some(format!(
                    "E03_SHARDS={shards} with {count} shard processes: strategy {}'s budget or \
                     breaker of one shard would be split over processes; give --shards a \
                     multiple of {count}",
                    s.id
                ));
            }
        }
        if self.swarm.budget_scope == crate::policy::BudgetScope::Fleet {
            if let Some(s) = stateful {
                return Some(format!(
                    "E03_BUDGET_SCOPE=fleet with {count} shards: strategy {}'s budget or breaker \
                     would need one place shared by {count} processes, which the lab does not \
                     build; use --budget-scope shard --shards {count} (one per shard process), \
                     or client (docs/budget-scope.md)",
                    s.id
                ));
            }
        }
        None
    }

    /// [`Params::workload`] for the shard `shard` of a run split over swarm processes: its
    /// clients only ([`crate::workload::Clients::shard`]). The whole run for
    /// [`crate::shard::Shard::WHOLE`]; the caller checked [`Params::unshardable`].
    pub fn shard_workload(
        &self,
        strategy: &crate::strategy::Strategy,
        seed: u64,
        shard: crate::shard::Shard,
    ) -> Box<dyn crate::workload::Workload + Send> {
        if shard.is_whole() {
            return self.workload(strategy, seed);
        }
        assert!(
            self.unshardable(shard.count).is_none(),
            "a run that cannot be sharded was checked before"
        );
        let config = crate::session::SessionConfig::from_params(self);
        Box::new(crate::workload::Clients::shard(
            seed,
            self.swarm().clients,
            config,
            strategy,
            shard,
        ))
    }
}

/// The config layer builds the model's configs: a client session's, from the parameters.
impl crate::session::SessionConfig {
    pub fn from_params(params: &Params) -> Self {
        Self {
            limits: params.limits(),
            duration: params.duration(),
            think: params.think_range(),
            starts: params.starts(),
            max_ops: params.max_ops(),
            best_effort_ppm: params.best_effort_ppm(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultModel;
    use crate::scenario::Scenario;
    use crate::timeline::{DownWindow, Timeline};

    #[test]
    fn typed_edits_are_checked_by_the_rules_of_typed_values() {
        let p = Params::default();
        let q = p
            .edited(|service, swarm| {
                service.workers = 3;
                swarm.rate = 250.0;
            })
            .unwrap();
        assert_eq!((q.service().workers, q.swarm().rate), (3, 250.0));
        let e = p.edited(|service, _| service.workers = 0).unwrap_err();
        assert!(e.to_string().contains("E03_WORKERS"), "{e}");
        let e = p
            .edited(|service, _| service.freeze_end_s = service.freeze_start_s - 1.0)
            .unwrap_err();
        assert!(e.to_string().contains("E03_FREEZE_END_S"), "{e}");
        let only_b = p.with_strategies_where(|s| s.id == "B").unwrap();
        assert_eq!(only_b.strategies().len(), 1);
        assert!(p.with_strategies_where(|_| false).is_none());
    }

    #[test]
    fn with_seeds_keeps_the_seed_list_rules() {
        let p = Params::default();
        let q = p.clone().with_seeds(vec![7, 1]).unwrap();
        assert_eq!((q.seeds(), q.seed()), (&[7, 1][..], 7));
        assert_eq!(q.service(), p.service());
        for bad in [vec![], vec![3, 3], (0..=MAX_SEEDS as u64).collect()] {
            let e = p.clone().with_seeds(bad).unwrap_err();
            assert!(e.to_string().contains("E03_SEEDS"), "{e}");
        }
    }

    /// Which runs split over swarm processes: a closed loop with no shared state, or state held
    /// per shard process; a fleet-wide budget, split holders or an open loop are refused,
    /// naming the setting.
    #[test]
    fn a_run_splits_over_shards_only_where_no_state_spans_processes() {
        let p = |pairs: &[(&str, &str)]| Params::from_raw(&raw(pairs)).unwrap();
        assert_eq!(p(&[]).unshardable(1), None);
        assert_eq!(p(&[("E03_STRATEGIES", "A,B,C")]).unshardable(4), None);
        let e = p(&[]).unshardable(4).unwrap();
        assert!(
            e.contains("E03_BUDGET_SCOPE=fleet") && e.contains("strategy D"),
            "{e}"
        );
        let shard = |n: &str| p(&[("E03_BUDGET_SCOPE", "shard"), ("E03_SHARDS", n)]);
        assert_eq!(shard("4").unshardable(4), None);
        assert_eq!(shard("200").unshardable(4), None);
        let e = shard("2").unshardable(4).unwrap();
        assert!(
            e.contains("E03_SHARDS=2") && e.contains("multiple of 4"),
            "{e}"
        );
        assert_eq!(p(&[("E03_BUDGET_SCOPE", "client")]).unshardable(4), None);
        let open = p(&[("E03_WORKLOAD", "open_loop"), ("E03_STRATEGIES", "C")]);
        let e = open.unshardable(2).unwrap();
        assert!(e.contains("open loop"), "{e}");
    }

    #[test]
    fn params_read_from_json_pass_the_same_rules() {
        let p = Params::from_raw(&raw(&[("E03_SEEDS", "4,5"), ("E03_STRATEGIES", "C,A")])).unwrap();
        let json = serde_json::to_value(&p).unwrap();
        let back: Params = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, p);
        let broken = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut j = json.clone();
            edit(&mut j);
            serde_json::from_value::<Params>(j).unwrap_err().to_string()
        };
        assert!(broken(&|j| j["seeds"] = serde_json::json!([])).contains("E03_SEEDS"));
        assert!(broken(&|j| j["strategies"] = serde_json::json!([])).contains("no strategy"));
        let twice = broken(&|j| {
            let a = j["strategies"][1].clone();
            j["strategies"][0] = a;
        });
        assert!(twice.contains("listed twice"), "{twice}");
        let rule = broken(&|j| j["swarm"]["think_max_ms"] = serde_json::json!(1.0));
        assert!(rule.contains("E03_THINK_MAX_MS"), "{rule}");
        let partition = broken(&|j| {
            j["swarm"]["balancer"] = serde_json::json!("partition");
            j["swarm"]["outlier_5xx"] = serde_json::json!(5);
        });
        assert!(partition.contains("E03_BALANCER=partition"), "{partition}");
        let fallbacks = broken(&|j| j["strategies"][0]["fallbacks"] = serde_json::json!(1));
        assert!(
            fallbacks.contains("more fallbacks than calls"),
            "{fallbacks}"
        );
    }

    #[test]
    fn down_latency_overrides_every_down_phase_and_defaults_to_the_scenarios_own() {
        let gateway = Scenario::named("gateway4").unwrap();
        let own = Params::for_scenario(&gateway, &BTreeMap::new()).unwrap();
        // The file's own latency_ms (26 ms) by default.
        assert_eq!(
            own.timeline(&gateway).down[0].latency,
            Duration::from_millis(26)
        );
        let set = Params::for_scenario(&gateway, &raw(&[("E03_DOWN_LATENCY_MS", "0.5")])).unwrap();
        assert_eq!(
            set.timeline(&gateway).down[0].latency,
            Duration::from_micros(500)
        );
        let model = own.clone().with_down_latency(Duration::from_micros(1250));
        assert_eq!(
            model.timeline(&gateway).down[0].latency,
            Duration::from_micros(1250)
        );
        // Carried through the raw map a child receives.
        let back = Params::for_scenario(&gateway, &model.to_raw()).unwrap();
        assert_eq!(back.service().down_latency_ms, Some(1.25));
        for bad in ["-1", "600001", "x", ""] {
            let e = err(&[("E03_DOWN_LATENCY_MS", bad)]);
            assert!(
                e.contains("E03_DOWN_LATENCY_MS") && e.contains("or scenario"),
                "{e}"
            );
        }
    }

    #[test]
    fn break_ms_overrides_every_breakers_break_and_leaves_other_strategies_alone() {
        let breaker = Scenario::named("breaker").unwrap();
        let own = Params::for_scenario(&breaker, &BTreeMap::new()).unwrap();
        let spec = |p: &Params| p.strategies()[0].breaker.unwrap().break_duration_ms;
        assert_eq!(spec(&own), 2000);
        let set = Params::for_scenario(&breaker, &raw(&[("E03_BREAK_MS", "1950")])).unwrap();
        assert_eq!(spec(&set), 1950);
        let back = Params::for_scenario(&breaker, &set.to_raw()).unwrap();
        assert_eq!(back.swarm().break_ms, Some(1950));
        let plain = Params::from_raw(&raw(&[("E03_BREAK_MS", "5")])).unwrap();
        assert!(plain.strategies().iter().all(|s| s.breaker.is_none()));
        for bad in ["0", "1.5", "3600001", "none"] {
            let e = err(&[("E03_BREAK_MS", bad)]);
            assert!(
                e.contains("E03_BREAK_MS") && e.contains("or strategy"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_reversed_seed_range_is_named() {
        let e = Params::from_raw(&raw(&[("E03_SEEDS", "100-1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("100-1 is reversed (1-100?)"), "{e}");
    }

    fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(pairs: &[(&str, &str)]) -> String {
        Params::from_raw(&raw(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_the_specs() {
        let p = Params::default();
        assert_eq!(p.service.workers, 10);
        assert_eq!(p.service.queue, 100);
        assert_eq!(p.swarm.clients, 200);
        assert_eq!(p.seeds, vec![42]);
        let ids: Vec<_> = p.strategies.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["A", "B", "C", "D"]);
        let c = p.service_config(&Scenario::e03b(), 42);
        assert_eq!(c.capacity_per_s(), 250.0);
        assert_eq!(p.limits().max_attempts, 4);
        assert!(p.strategy("D").unwrap().budget.is_some());
    }

    #[test]
    fn a_row_s_own_server_policy_overrides_the_run_s_and_only_for_its_dependency() {
        use crate::dependency::QueueDiscipline;
        let shed = Scenario::named("shedding").unwrap();
        let raw = BTreeMap::from([("E03_QUEUE_POLICY".to_string(), "codel".to_string())]);
        let p = Params::for_scenario(&shed, &raw).unwrap();
        let c = |id: &str| p.service_config_for(&shed, 1, id);
        // The table's own policy wins over the run's codel; the run's target stays.
        assert_eq!(c("fifo").queue_policy.discipline, QueueDiscipline::Fifo);
        assert_eq!(
            c("adaptive-lifo").queue_policy.discipline,
            QueueDiscipline::AdaptiveLifo
        );
        assert_eq!(c("fifo").queue_policy.target, Duration::from_millis(5));
        use crate::dependency::AdmissionRule;
        assert_eq!(c("by-deadline").admission, AdmissionRule::Deadline);
        assert_eq!(c("codel").admission, AdmissionRule::All);
        assert!(p.admits_by_deadline_for("by-deadline") && !p.admits_by_deadline_for("fifo"));
        use crate::limit::{AimdLimit, ConcurrencyLimit, Gradient2Limit};
        assert_eq!(
            c("aimd").concurrency_limit,
            Some(ConcurrencyLimit::Aimd(AimdLimit::default()))
        );
        assert_eq!(
            c("gradient2").concurrency_limit,
            Some(ConcurrencyLimit::Gradient2(Gradient2Limit::default()))
        );
        assert_eq!(c("fifo").concurrency_limit, None);
        // The run's limit and its timeout reach every row that does not set its own.
        let raw = BTreeMap::from([
            ("E03_CONCURRENCY_LIMIT".to_string(), "aimd".to_string()),
            ("E03_LIMIT_TIMEOUT_MS".to_string(), "100".to_string()),
        ]);
        let q = Params::for_scenario(&shed, &raw).unwrap();
        let Some(ConcurrencyLimit::Aimd(limit)) = q
            .service_config_for(&shed, 1, "standalone")
            .concurrency_limit
        else {
            panic!("an AIMD limit")
        };
        assert_eq!(
            (limit.timeout, limit.max),
            (Duration::from_millis(100), 200)
        );
        assert_eq!(
            q.service_config_for(&shed, 1, "fifo").concurrency_limit,
            None
        );
        for (env, bad) in [
            ("E03_CONCURRENCY_LIMIT", "vegas"),
            ("E03_LIMIT_TIMEOUT_MS", "0"),
            ("E03_ADMISSION", "low"),
            ("E03_PRIORITY_RESERVE", "1.5"),
            ("E03_BEST_EFFORT_SHARE", "-0.1"),
        ] {
            let raw = BTreeMap::from([(env.to_string(), bad.to_string())]);
            let e = Params::for_scenario(&shed, &raw).unwrap_err().to_string();
            assert!(e.contains(env), "{e}");
        }
        // An id the run does not have (a standalone run's) takes the run's own.
        assert_eq!(
            c("standalone").queue_policy.discipline,
            QueueDiscipline::Codel
        );
        assert_eq!(p.service_config(&shed, 1), c("standalone"));
    }

    #[test]
    fn every_parameter_has_a_unique_env_and_flag() {
        let mut envs: Vec<_> = PARAMS.iter().map(|p| p.env).collect();
        let mut flags: Vec<_> = PARAMS.iter().map(|p| p.flag).collect();
        envs.sort_unstable();
        envs.dedup();
        flags.sort_unstable();
        flags.dedup();
        assert_eq!(envs.len(), PARAMS.len());
        assert_eq!(flags.len(), PARAMS.len());
    }

    #[test]
    fn non_numbers_negatives_and_zero_workers_are_rejected_by_name() {
        assert_eq!(
            err(&[("E03_WORKERS", "abc")]),
            "invalid E03_WORKERS=\"abc\": expected a whole number from 1 to 10000"
        );
        assert!(err(&[("E03_WORKERS", "0")]).starts_with("invalid E03_WORKERS=\"0\""));
        assert!(err(&[("E03_SERVICE_MS", "-5")]).starts_with("invalid E03_SERVICE_MS"));
        assert!(err(&[("E03_FAIL_RATE", "1.5")]).starts_with("invalid E03_FAIL_RATE"));
        assert!(err(&[("E03_DURATION_S", "0")]).starts_with("invalid E03_DURATION_S"));
        assert!(err(&[("E03_DURATION_S", "NaN")]).starts_with("invalid E03_DURATION_S"));
        assert!(err(&[("E03_SEED", "-1")]).starts_with("invalid E03_SEED"));
        let e = err(&[("E03_QUEUE_POLICY", "lifo")]);
        assert!(e.starts_with("invalid E03_QUEUE_POLICY=\"lifo\""), "{e}");
        assert!(e.contains("fifo, codel or adaptive_lifo"), "{e}");
        assert!(err(&[("E03_QUEUE_TARGET_MS", "0")]).starts_with("invalid E03_QUEUE_TARGET_MS"));
        let e = err(&[("E03_ADMISSION", "late")]);
        assert!(e.starts_with("invalid E03_ADMISSION=\"late\""), "{e}");
        assert!(e.contains("all, deadline or priority"), "{e}");
    }

    #[test]
    fn inconsistent_pairs_are_rejected() {
        assert!(
            err(&[("E03_FREEZE_START_S", "10"), ("E03_FREEZE_END_S", "9")])
                .starts_with("invalid E03_FREEZE_END_S=\"9\"")
        );
        assert!(err(&[("E03_RECOVERY_END_S", "9")]).starts_with("invalid E03_RECOVERY_END_S"));
        assert!(err(&[("E03_THINK_MIN_MS", "3000")]).starts_with("invalid E03_THINK_MAX_MS"));
        assert!(err(&[("E03_DEADLINE_MS", "1000")]).starts_with("invalid E03_DEADLINE_MS"));
        assert!(err(&[("E03_QUEUE_TARGET_MS", "200")]).starts_with("invalid E03_QUEUE_INTERVAL_MS"));
        assert!(err(&[("E03_FAIL_RATE", "0.6"), ("E03_SLOW_RATE", "0.6")])
            .starts_with("invalid E03_SLOW_RATE"));
    }

    #[test]
    fn strategies_and_seeds_lists() {
        let p = Params::from_raw(&raw(&[
            ("E03_STRATEGIES", "c, a"),
            ("E03_SEEDS", "42,7,1-3"),
        ]))
        .unwrap();
        assert_eq!(
            p.strategies
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>(),
            ["C", "A"]
        );
        assert_eq!(p.seeds, vec![42, 7, 1, 2, 3]);
        assert!(err(&[("E03_STRATEGIES", "A,Q")]).starts_with("invalid E03_STRATEGIES=\"A,Q\""));
        assert!(err(&[("E03_STRATEGIES", "A,A")]).starts_with("invalid E03_STRATEGIES"));
        assert!(err(&[("E03_SEEDS", "5-1")]).starts_with("invalid E03_SEEDS"));
        assert!(err(&[("E03_SEEDS", "1,x")]).starts_with("invalid E03_SEEDS"));
        assert!(err(&[("E03_SEEDS", "1,1")]).starts_with("invalid E03_SEEDS"));
    }

    #[test]
    fn unknown_parameters_and_scenarios_are_rejected() {
        assert_eq!(
            err(&[("E03_WORKER", "5")]),
            "unknown parameter \"E03_WORKER\": expected one of the E03_* parameter names (see --help)"
        );
        // Keys are env names; a flag name is not silently ignored.
        assert!(err(&[("workers", "abc")]).starts_with("unknown parameter \"workers\""));
        let e = Scenario::parse_list("e03c").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown scenario \"e03c\": expected e03a, e03b, "),
            "{e}"
        );
        assert!(e.ends_with("all, or a scenario file (NAME.toml)"), "{e}");
        assert_eq!(
            Scenario::parse_list("all").unwrap()[..2],
            [Scenario::e03a(), Scenario::e03b()]
        );
    }

    #[test]
    fn user_values_override_the_scenario_file() {
        let p = Params::for_scenario(
            &Scenario::e03a(),
            &raw(&[("E03_FAIL_RATE", "0.2"), ("E03_WORKERS", "3")]),
        )
        .unwrap();
        assert_eq!(p.service.fail_rate, 0.2);
        assert_eq!(p.service.slow_rate, 0.01, "the file's value stays");
        assert_eq!(p.service.workers, 3);
        let b = Params::for_scenario(&Scenario::e03b(), &raw(&[("E03_FREEZE_START_S", "5")]))
            .unwrap()
            .service_config(&Scenario::e03b(), 1);
        assert_eq!(b.timeline.freeze.unwrap().start, Duration::from_secs(5));
        assert_eq!(b.timeline.freeze.unwrap().end, Duration::from_secs(10));
    }

    #[test]
    fn a_scenario_file_gives_its_timeline_to_the_model() {
        let text = "name = \"params-timeline\"\ntitle = \"t\"\ndescription = \"d\"\n\
            [[timeline]]\nphase = \"down\"\nstart_s = 1\nend_s = 2\nstatus = 500\nlatency_ms = 26\n\
            [[timeline]]\nphase = \"degraded\"\nstart_s = 4\nend_s = 6\ncapacity_factor = 0.25\n";
        let def = crate::scenario::parse(text, "t.toml").unwrap();
        let sc = Scenario::from_def(def).unwrap();
        let p = Params::for_scenario(&sc, &raw(&[("E03_FREEZE_START_S", "0.5")])).unwrap();
        let t = p.timeline(&sc);
        assert_eq!(
            t.freeze, None,
            "E03_FREEZE_* add no freeze to a scenario without one"
        );
        assert_eq!(
            t.down,
            [DownWindow {
                start: Duration::from_secs(1),
                end: Duration::from_secs(2),
                status: 500,
                latency: Duration::from_millis(26),
            }]
        );
        let d = t.degraded.unwrap();
        assert_eq!(
            (d.start, d.end),
            (Duration::from_secs(4), Duration::from_secs(6))
        );
        assert_eq!(d.capacity_factor, 0.25);
        assert_eq!(
            t.incident(),
            Some((Duration::from_secs(1), Duration::from_secs(6)))
        );
    }

    #[test]
    fn raw_round_trip() {
        let p = Params::from_raw(&raw(&[
            ("E03_WORKERS", "7"),
            ("E03_SEEDS", "3,4"),
            ("E03_STRATEGIES", "B,D"),
        ]))
        .unwrap();
        assert_eq!(Params::from_raw(&p.to_raw()).unwrap(), p);
    }

    #[test]
    fn scenarios_pick_their_own_model() {
        let none = BTreeMap::new();
        let a = Params::for_scenario(&Scenario::e03a(), &none)
            .unwrap()
            .service_config(&Scenario::e03a(), 1);
        assert_eq!(a, Params::default().service_config(&Scenario::e03a(), 1));
        let b = Params::default().service_config(&Scenario::e03b(), 1);
        assert_eq!(
            b.faults,
            FaultModel::default(),
            "E03_FAIL_RATE adds no faults to e03b"
        );
        assert_eq!(a.timeline, Timeline::default());
        assert_eq!(a.faults.fail_rate, 0.05);
        assert_eq!(a.faults.slow_rate, 0.01);
        let p = Params::for_scenario(&Scenario::e03b(), &none).unwrap();
        let b = p.service_config(&Scenario::e03b(), 1);
        assert_eq!(b.faults, FaultModel::default());
        assert_eq!(
            b.timeline.freeze.unwrap().start,
            Duration::from_millis(8500)
        );
    }
}
