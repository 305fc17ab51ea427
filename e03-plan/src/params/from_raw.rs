//! Raw values (strings keyed by env var name, from the environment, flags or a control call)
//! read into typed [`Params`], once: each value against its row of the table, then the rules
//! between parameters, the seeds and the strategies. Every error names the parameter, the value
//! given and what it accepts. The `Reader` reads and checks one value.

use std::collections::BTreeMap;

use crate::strategy_table::{accepted_ids, resolve_id, StrategySpec};
use e03_model::budget::BudgetSpec;
use e03_model::strategy::Strategy;

use super::error::ParamError;
use super::ranges::{accepts, loads_ok};
use super::rules::broken_rule;
use super::seeds::{parse_seeds, reversed_range};
use super::table::{spec, PARAMS};
use super::values::{ms, ServiceParams, StepParams, SwarmParams};
use super::Params;

impl Default for Params {
    fn default() -> Self {
        Params::from_raw(&BTreeMap::new()).expect("defaults are valid")
    }
}

thread_local! {
    /// Raw maps read into `Params` on this thread ([`raw_reads`]).
    static RAW_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many raw maps (text keyed by env var name) this thread has read into [`Params`] so far:
/// every [`Params::from_raw_with`] counts one. The raw map belongs to the input edge (flags, env
/// vars, files) and to the reader of older logs; tests count a command's reads with it (a child
/// started with `--plan` reads none, `lab run e03b` reads the user's input once).
pub fn raw_reads() -> usize {
    RAW_READS.with(std::cell::Cell::get)
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
        RAW_READS.with(|n| n.set(n.get() + 1));
        if let Some(bad) = raw
            .keys()
            .find(|k| !PARAMS.iter().any(|p| p.env == k.as_str()))
        {
            return Err(ParamError::Unknown { name: bad.clone() });
        }
        let r = Reader { raw };
        let service = ServiceParams {
            workers: r.int("E03_WORKERS")? as usize,
            service_ms: r.num("E03_SERVICE_MS")?,
            queue: r.int("E03_QUEUE")? as usize,
            queue_policy: r.choice("E03_QUEUE_POLICY")?,
            queue_target_ms: r.num("E03_QUEUE_TARGET_MS")?,
            queue_interval_ms: r.num("E03_QUEUE_INTERVAL_MS")?,
            admission: r.choice("E03_ADMISSION")?,
            priority_reserve: r.num("E03_PRIORITY_RESERVE")?,
            replicas: r.int("E03_REPLICAS")? as u32,
            concurrency_limit: r.choice("E03_CONCURRENCY_LIMIT")?,
            limit_timeout_ms: r.num("E03_LIMIT_TIMEOUT_MS")?,
            freeze_start_s: r.num("E03_FREEZE_START_S")?,
            freeze_end_s: r.num("E03_FREEZE_END_S")?,
            recovery_end_s: r.num("E03_RECOVERY_END_S")?,
            recovery_factor: r.num("E03_RECOVERY_FACTOR")?,
            fail_rate: r.num("E03_FAIL_RATE")?,
            slow_rate: r.num("E03_SLOW_RATE")?,
            slow_ms: r.num("E03_SLOW_MS")?,
            lost_rate: r.num("E03_LOST_RATE")?,
            permanent_rate: r.num("E03_PERMANENT_RATE")?,
            tail_rate: r.num("E03_TAIL_RATE")?,
            tail_factor: r.num("E03_TAIL_FACTOR")?,
            timeout_rate: r.num("E03_TIMEOUT_RATE")?,
            cutoff_rate: r.num("E03_CUTOFF_RATE")?,
            input_tokens: r.int("E03_INPUT_TOKENS")? as u32,
            output_tokens: r.int("E03_OUTPUT_TOKENS")? as u32,
            down_latency_ms: match r.value("E03_DOWN_LATENCY_MS") {
                "scenario" => None,
                _ => Some(r.num("E03_DOWN_LATENCY_MS")?),
            },
        };
        let swarm = SwarmParams {
            clients: r.int("E03_CLIENTS")? as u32,
            workload: r.choice("E03_WORKLOAD")?,
            period_ms: r.num("E03_PERIOD_MS")?,
            rate: r.num("E03_RATE")?,
            rate_peak: r.num("E03_RATE_PEAK")?,
            best_effort_share: r.num("E03_BEST_EFFORT_SHARE")?,
            fanout: r.int("E03_FANOUT")? as u32,
            fanout_quorum: r.int("E03_FANOUT_QUORUM")? as u32,
            fanout_slow_ms: r.num("E03_FANOUT_SLOW_MS")?,
            max_in_flight: r.int("E03_MAX_IN_FLIGHT")? as u32,
            ops_per_client: r.int("E03_OPS_PER_CLIENT")?,
            duration_s: r.num("E03_DURATION_S")?,
            think_min_ms: r.num("E03_THINK_MIN_MS")?,
            think_max_ms: r.num("E03_THINK_MAX_MS")?,
            max_attempts: r.int("E03_MAX_ATTEMPTS")? as u32,
            attempt_timeout_ms: r.num("E03_ATTEMPT_TIMEOUT_MS")?,
            deadline_ms: r.num("E03_DEADLINE_MS")?,
            backoff_base_ms: r.num("E03_BACKOFF_BASE_MS")?,
            backoff_cap_ms: r.num("E03_BACKOFF_CAP_MS")?,
            budget_cap: r.num("E03_BUDGET_CAP")?,
            budget_ratio: r.num("E03_BUDGET_RATIO")?,
            break_ms: match r.value("E03_BREAK_MS") {
                "strategy" => None,
                _ => Some(r.int("E03_BREAK_MS")?),
            },
            connect_timeout_ms: match r.value("E03_CONNECT_TIMEOUT_MS") {
                "none" => None,
                _ => Some(r.num("E03_CONNECT_TIMEOUT_MS")?),
            },
            budget_scope: e03_model::policy::BudgetScope::parse(r.value("E03_BUDGET_SCOPE"))
                .ok_or_else(|| r.invalid("E03_BUDGET_SCOPE"))?,
            shards: r.int("E03_SHARDS")? as u32,
            balancer: r.choice("E03_BALANCER")?,
            outlier_5xx: r.int("E03_OUTLIER_5XX")? as u32,
            ejection_ms: r.int("E03_EJECTION_MS")?,
            outlier_interval_ms: r.int("E03_OUTLIER_INTERVAL_MS")?,
            health_interval_ms: r.int("E03_HEALTH_INTERVAL_MS")?,
            unhealthy_threshold: r.int("E03_UNHEALTHY_THRESHOLD")? as u32,
        };
        let steps = StepParams {
            step_ms: r.num("E03_STEP_MS")?,
            steps: r.int("E03_STEPS")? as u32,
            batch_items: r.int("E03_BATCH_ITEMS")? as u32,
            burst_start: r.int("E03_BURST_START")? as u32,
            burst_items: r.int("E03_BURST_ITEMS")? as u32,
            loads: {
                let list: Option<Vec<u32>> = r
                    .value("E03_STEP_LOADS")
                    .split(',')
                    .map(|v| v.trim().parse::<u32>().ok())
                    .collect();
                match list {
                    Some(l) if loads_ok(&l) => l,
                    _ => return Err(r.invalid("E03_STEP_LOADS")),
                }
            },
            step_calls: r.int("E03_STEP_CALLS")? as u32,
            interactive_every: r.int("E03_INTERACTIVE_EVERY")? as u32,
            interactive_until: r.int("E03_INTERACTIVE_UNTIL")? as u32,
            interactive_budget: r.int("E03_INTERACTIVE_BUDGET")? as u32,
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
            "" => vec![r.int("E03_SEED")?],
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

    /// A whole number within what `name` accepts ([`accepts`]).
    fn int(&self, name: &'static str) -> Result<u64, ParamError> {
        match self.value(name).parse::<u64>() {
            Ok(v) if accepts(name).whole(v) => Ok(v),
            _ => Err(self.invalid(name)),
        }
    }

    /// A number within what `name` accepts ([`accepts`]).
    fn num(&self, name: &'static str) -> Result<f64, ParamError> {
        match self.value(name).parse::<f64>() {
            Ok(v) if accepts(name).number(v) => Ok(v),
            _ => Err(self.invalid(name)),
        }
    }

    /// One of the words `name` accepts ([`accepts`]).
    fn choice(&self, name: &'static str) -> Result<String, ParamError> {
        match self.value(name) {
            w if accepts(name).word(w) => Ok(w.to_string()),
            _ => Err(self.invalid(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::raw;
    use crate::scenario::Scenario;

    fn err(pairs: &[(&str, &str)]) -> String {
        Params::from_raw(&raw(pairs)).unwrap_err().to_string()
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
}
