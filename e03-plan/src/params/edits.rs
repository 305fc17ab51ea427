//! The checked ways to make a [`Params`] besides reading raw values: read back from JSON
//! (`serde(try_from)`), or changed (other seeds, only some strategies, edited values, a
//! measured down latency). Each goes through the rules a raw value goes through, so every
//! `Params` has passed them.

use std::time::Duration;

use e03_model::strategy::Strategy;

use super::error::ParamError;
use super::ranges::{accepts, loads_ok, Accepts};
use super::rules::broken_rule;
use super::seeds::MAX_SEEDS;
use super::table::spec;
use super::to_raw::Value;
use super::values::{ServiceParams, SwarmParams};
use super::{Params, ParamsFields};

impl TryFrom<ParamsFields> for Params {
    type Error = ParamError;

    fn try_from(f: ParamsFields) -> Result<Params, ParamError> {
        let seeds = f.seeds.clone();
        if let Some(name) = broken_rule(&f.service, &f.swarm) {
            return Err(ParamError::BrokenRule {
                name: name.to_string(),
            });
        }
        if f.swarm.partition_ejects() {
            return Err(ParamError::PartitionEjects);
        }
        if let Some(s) = (f.strategies.iter()).find(|s| s.fallbacks > f.swarm.most_fallbacks()) {
            return Err(ParamError::TooManyFallbacks { id: s.id.clone() });
        }
        if let Some(s) = f
            .strategies
            .iter()
            .enumerate()
            .find(|(i, s)| f.strategies[..*i].iter().any(|x| x.id == s.id))
        {
            return Err(ParamError::ListedTwice { id: s.1.id.clone() });
        }
        if f.strategies.is_empty() {
            return Err(ParamError::NoStrategy);
        }
        let unchecked = Params {
            service: f.service,
            swarm: f.swarm,
            seeds: vec![0],
            strategies: f.strategies,
            steps: f.steps,
        };
        unchecked.check_values()?;
        let f = unchecked;
        if let Some(s) = f
            .strategies
            .iter()
            .find(|s| !crate::names::valid_strategy_id(&s.id))
        {
            return Err(ParamError::StrategyId { id: s.id.clone() });
        }
        f.with_seeds(seeds)
    }
}

impl Params {
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

    /// Every single value within what it accepts ([`super::ranges`], the table the raw reader
    /// checks typed text against) and the rules between values, checked on the typed values:
    /// nothing is turned into text and read back. The error names the parameter and its value.
    /// The strategies and seeds have checks of their own.
    fn check_values(&self) -> Result<(), ParamError> {
        let invalid = |name: &str, value: &Value| ParamError::Invalid {
            name: name.to_string(),
            value: value.to_string(),
            accepts: spec(name).expect("known parameter").accepts.to_string(),
        };
        let values = self.values();
        for &(name, value) in &values {
            let a = accepts(name);
            let ok = match value {
                Value::Whole(n) => a.whole(n),
                Value::Number(x) => a.number(x),
                // An optional value that is not set is its word ("none", "scenario", ...).
                Value::Word(w) => !matches!(a, Accepts::Choice(_)) || a.word(w),
                Value::Loads(l) => loads_ok(l),
            };
            if !ok {
                return Err(invalid(name, &value));
            }
        }
        let (service, swarm, steps) = (&self.service, &self.swarm, &self.steps);
        if steps.burst_items > steps.batch_items {
            return Err(invalid(
                "E03_BURST_ITEMS",
                &Value::Whole(steps.burst_items.into()),
            ));
        }
        if let Some(name) = broken_rule(service, swarm) {
            // The later parameter of the rule, with its value (every rule's is single-valued).
            let value = values.iter().find(|(n, _)| *n == name);
            return Err(invalid(name, &value.map_or(Value::Word(""), |&(_, v)| v)));
        }
        if swarm.partition_ejects() {
            return Err(ParamError::PartitionEjects);
        }
        Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::raw;

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
        // Single values, checked typed against the raw reader's table: a range, a choice, the
        // load levels, and an optional value's word.
        let workers = broken(&|j| j["service"]["workers"] = serde_json::json!(0));
        assert!(
            workers.starts_with("invalid E03_WORKERS=\"0\"") && workers.contains("from 1 to"),
            "{workers}"
        );
        let policy = broken(&|j| j["service"]["queue_policy"] = serde_json::json!("lifo"));
        assert!(
            policy.starts_with("invalid E03_QUEUE_POLICY=\"lifo\""),
            "{policy}"
        );
        let loads = broken(&|j| j["steps"]["loads"] = serde_json::json!([2, 2]));
        assert!(
            loads.starts_with("invalid E03_STEP_LOADS=\"2,2\""),
            "{loads}"
        );
        let mut j = json.clone();
        j["swarm"]["connect_timeout_ms"] = serde_json::Value::Null;
        j["service"]["down_latency_ms"] = serde_json::Value::Null;
        assert!(serde_json::from_value::<Params>(j).is_ok());
    }
}
