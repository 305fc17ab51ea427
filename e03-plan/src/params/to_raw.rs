//! [`Params`] back into their raw form (env name to value), to pass them on to another process
//! or check them again: `from_raw(to_raw())` gives them back.

use std::collections::BTreeMap;

use super::Params;

impl Params {
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
                    e03_model::policy::BudgetScope::Fleet => "fleet",
                    e03_model::policy::BudgetScope::Shard => "shard",
                    e03_model::policy::BudgetScope::Client => "client",
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
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
}
