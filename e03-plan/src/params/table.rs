//! The parameter table: every run parameter with its env var, flag, default, what it accepts
//! and what it means, in the order of the spec. Everything else about parameters reads it: the
//! raw reader takes defaults and accepted values from it, the command line makes a flag of each
//! row, and docs/parameters.md is generated from it (`lab/tests/docs.rs`).

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
        "share of admitted requests that time out before any output: 504, input tokens paid (the rate-limit article; scenarios with [faults])"
    ),
    p!(
        "E03_CUTOFF_RATE",
        "cutoff-rate",
        "0",
        "a probability from 0 to 1",
        "share of the other admitted requests whose output is cut off: 502, input and one output token paid (the rate-limit article; scenarios with [faults])"
    ),
    p!(
        "E03_INPUT_TOKENS",
        "input-tokens",
        "0",
        "a whole number of tokens from 0 to 1000000 (0: no token accounting)",
        "input tokens an admitted request pays; each answer's cost is logged (the rate-limit article; scenarios with [faults])"
    ),
    p!(
        "E03_OUTPUT_TOKENS",
        "output-tokens",
        "0",
        "a whole number of tokens from 0 to 1000000",
        "output tokens of a complete answer (the rate-limit article)"
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
        "closed_loop: starts spread over 2 s, then think times; group: every client starts at 0; ramp: client c starts at c x E03_PERIOD_MS, then think times; fixed_rate: one operation per client every E03_PERIOD_MS; open_loop: Poisson arrivals at E03_RATE per second, each operation on its own; steps: the rate-limit article's batch and interactive flows on a step clock (E03_STEP_*); fan_out: E03_CLIENTS callers as in the closed loop, each request calling the dependency E03_FANOUT times at once and ending with its slowest call"
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
