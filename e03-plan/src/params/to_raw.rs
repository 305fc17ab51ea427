//! [`Params`] listed as values keyed by env var name: typed ([`Params::values`], what the typed
//! check reads) and as text ([`Params::to_raw`], to pass them on to a process that takes env
//! vars, or to record them); `from_raw(to_raw())` gives them back.

use std::collections::BTreeMap;
use std::fmt;

use super::Params;

/// One single-valued parameter's typed value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value<'a> {
    Whole(u64),
    Number(f64),
    /// A choice, or the word an optional value takes when it is not set.
    Word(&'a str),
    Loads(&'a [u32]),
}

impl Value<'_> {
    fn of(n: impl Typed) -> Self {
        n.value()
    }
}

/// A field's type as a [`Value`]: whole numbers and numbers.
trait Typed {
    fn value(self) -> Value<'static>;
}

impl Typed for u32 {
    fn value(self) -> Value<'static> {
        Value::Whole(self.into())
    }
}

impl Typed for u64 {
    fn value(self) -> Value<'static> {
        Value::Whole(self)
    }
}

impl Typed for usize {
    fn value(self) -> Value<'static> {
        Value::Whole(self as u64)
    }
}

impl Typed for f64 {
    fn value(self) -> Value<'static> {
        Value::Number(self)
    }
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Whole(n) => write!(f, "{n}"),
            Value::Number(x) => write!(f, "{x}"),
            Value::Word(w) => f.write_str(w),
            Value::Loads(l) => {
                let l: Vec<String> = l.iter().map(u32::to_string).collect();
                f.write_str(&l.join(","))
            }
        }
    }
}

impl Params {
    /// Every single-valued parameter with its typed value, in the spec's order (the seeds and
    /// strategies aside).
    pub(super) fn values(&self) -> Vec<(&'static str, Value<'_>)> {
        let s = &self.service;
        let w = &self.swarm;
        vec![
            ("E03_WORKERS", Value::of(s.workers)),
            ("E03_SERVICE_MS", Value::of(s.service_ms)),
            ("E03_QUEUE", Value::of(s.queue)),
            ("E03_QUEUE_POLICY", Value::Word(&s.queue_policy)),
            ("E03_QUEUE_TARGET_MS", Value::of(s.queue_target_ms)),
            ("E03_QUEUE_INTERVAL_MS", Value::of(s.queue_interval_ms)),
            ("E03_ADMISSION", Value::Word(&s.admission)),
            ("E03_PRIORITY_RESERVE", Value::of(s.priority_reserve)),
            ("E03_REPLICAS", Value::of(s.replicas)),
            ("E03_CONCURRENCY_LIMIT", Value::Word(&s.concurrency_limit)),
            ("E03_LIMIT_TIMEOUT_MS", Value::of(s.limit_timeout_ms)),
            ("E03_FREEZE_START_S", Value::of(s.freeze_start_s)),
            ("E03_FREEZE_END_S", Value::of(s.freeze_end_s)),
            ("E03_RECOVERY_END_S", Value::of(s.recovery_end_s)),
            ("E03_RECOVERY_FACTOR", Value::of(s.recovery_factor)),
            ("E03_FAIL_RATE", Value::of(s.fail_rate)),
            ("E03_SLOW_RATE", Value::of(s.slow_rate)),
            ("E03_SLOW_MS", Value::of(s.slow_ms)),
            ("E03_LOST_RATE", Value::of(s.lost_rate)),
            ("E03_PERMANENT_RATE", Value::of(s.permanent_rate)),
            ("E03_TAIL_RATE", Value::of(s.tail_rate)),
            ("E03_TAIL_FACTOR", Value::of(s.tail_factor)),
            ("E03_TIMEOUT_RATE", Value::of(s.timeout_rate)),
            ("E03_CUTOFF_RATE", Value::of(s.cutoff_rate)),
            ("E03_INPUT_TOKENS", Value::of(s.input_tokens)),
            ("E03_OUTPUT_TOKENS", Value::of(s.output_tokens)),
            (
                "E03_DOWN_LATENCY_MS",
                s.down_latency_ms
                    .map_or(Value::Word("scenario"), Value::Number),
            ),
            ("E03_STEP_MS", Value::of(self.steps.step_ms)),
            ("E03_STEPS", Value::of(self.steps.steps)),
            ("E03_BATCH_ITEMS", Value::of(self.steps.batch_items)),
            ("E03_BURST_START", Value::of(self.steps.burst_start)),
            ("E03_BURST_ITEMS", Value::of(self.steps.burst_items)),
            ("E03_STEP_LOADS", Value::Loads(&self.steps.loads)),
            ("E03_STEP_CALLS", Value::of(self.steps.step_calls)),
            (
                "E03_INTERACTIVE_EVERY",
                Value::of(self.steps.interactive_every),
            ),
            (
                "E03_INTERACTIVE_UNTIL",
                Value::of(self.steps.interactive_until),
            ),
            (
                "E03_INTERACTIVE_BUDGET",
                Value::of(self.steps.interactive_budget),
            ),
            ("E03_CLIENTS", Value::of(w.clients)),
            ("E03_WORKLOAD", Value::Word(&w.workload)),
            ("E03_PERIOD_MS", Value::of(w.period_ms)),
            ("E03_RATE", Value::of(w.rate)),
            ("E03_RATE_PEAK", Value::of(w.rate_peak)),
            ("E03_BEST_EFFORT_SHARE", Value::of(w.best_effort_share)),
            ("E03_FANOUT", Value::of(w.fanout)),
            ("E03_FANOUT_QUORUM", Value::of(w.fanout_quorum)),
            ("E03_FANOUT_SLOW_MS", Value::of(w.fanout_slow_ms)),
            ("E03_MAX_IN_FLIGHT", Value::of(w.max_in_flight)),
            ("E03_OPS_PER_CLIENT", Value::of(w.ops_per_client)),
            ("E03_DURATION_S", Value::of(w.duration_s)),
            ("E03_THINK_MIN_MS", Value::of(w.think_min_ms)),
            ("E03_THINK_MAX_MS", Value::of(w.think_max_ms)),
            ("E03_MAX_ATTEMPTS", Value::of(w.max_attempts)),
            ("E03_ATTEMPT_TIMEOUT_MS", Value::of(w.attempt_timeout_ms)),
            ("E03_DEADLINE_MS", Value::of(w.deadline_ms)),
            ("E03_BACKOFF_BASE_MS", Value::of(w.backoff_base_ms)),
            ("E03_BACKOFF_CAP_MS", Value::of(w.backoff_cap_ms)),
            ("E03_BUDGET_CAP", Value::of(w.budget_cap)),
            ("E03_BUDGET_RATIO", Value::of(w.budget_ratio)),
            (
                "E03_BREAK_MS",
                w.break_ms.map_or(Value::Word("strategy"), Value::Whole),
            ),
            (
                "E03_CONNECT_TIMEOUT_MS",
                w.connect_timeout_ms
                    .map_or(Value::Word("none"), Value::Number),
            ),
            (
                "E03_BUDGET_SCOPE",
                Value::Word(match w.budget_scope {
                    e03_model::policy::BudgetScope::Fleet => "fleet",
                    e03_model::policy::BudgetScope::Shard => "shard",
                    e03_model::policy::BudgetScope::Client => "client",
                }),
            ),
            ("E03_SHARDS", Value::of(w.shards)),
            ("E03_BALANCER", Value::Word(&w.balancer)),
            ("E03_OUTLIER_5XX", Value::of(w.outlier_5xx)),
            ("E03_EJECTION_MS", Value::of(w.ejection_ms)),
            ("E03_OUTLIER_INTERVAL_MS", Value::of(w.outlier_interval_ms)),
            ("E03_HEALTH_INTERVAL_MS", Value::of(w.health_interval_ms)),
            ("E03_UNHEALTHY_THRESHOLD", Value::of(w.unhealthy_threshold)),
        ]
    }

    /// The two forms of these parameters a `run_start` record holds
    /// ([`e03_model::events::RunStart`]): the raw map (env name to value, for people and
    /// scripts) and the typed parameters (what the analyzer reads back).
    pub fn run_start_forms(&self) -> (serde_json::Value, serde_json::Value) {
        (
            serde_json::to_value(self.to_raw()).expect("a string map serialises"),
            serde_json::to_value(self).expect("parameters serialise"),
        )
    }

    /// The raw form of these parameters (env name to value), for passing them on to another
    /// process; `from_raw(to_raw())` gives them back.
    pub fn to_raw(&self) -> BTreeMap<String, String> {
        let mut pairs: Vec<(&str, String)> = self
            .values()
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        pairs.extend([
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
        ]);
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::raw;

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
}
