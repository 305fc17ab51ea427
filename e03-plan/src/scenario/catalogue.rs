//! The built-in scenarios: the files of `e03-plan/scenarios/`, compiled in, in catalogue order,
//! and parsed like any user's file. Adding one is adding its file here (ARCHITECTURE.md, "How
//! to add a scenario").

use super::def::ScenarioDef;
use super::file::parse;

/// The built-in scenarios: file name and text, compiled in.
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    ("e03a.toml", include_str!("../../scenarios/e03a.toml")),
    ("e03b.toml", include_str!("../../scenarios/e03b.toml")),
    (
        "gateway4.toml",
        include_str!("../../scenarios/gateway4.toml"),
    ),
    ("breaker.toml", include_str!("../../scenarios/breaker.toml")),
    ("herd.toml", include_str!("../../scenarios/herd.toml")),
    ("budget.toml", include_str!("../../scenarios/budget.toml")),
    (
        "amplification.toml",
        include_str!("../../scenarios/amplification.toml"),
    ),
    (
        "deadline.toml",
        include_str!("../../scenarios/deadline.toml"),
    ),
    (
        "idempotency.toml",
        include_str!("../../scenarios/idempotency.toml"),
    ),
    (
        "classification.toml",
        include_str!("../../scenarios/classification.toml"),
    ),
    (
        "metastable.toml",
        include_str!("../../scenarios/metastable.toml"),
    ),
    (
        "ratelimit.toml",
        include_str!("../../scenarios/ratelimit.toml"),
    ),
    ("refused.toml", include_str!("../../scenarios/refused.toml")),
    (
        "blackhole.toml",
        include_str!("../../scenarios/blackhole.toml"),
    ),
    (
        "slow-network.toml",
        include_str!("../../scenarios/slow-network.toml"),
    ),
    (
        "reset-storm.toml",
        include_str!("../../scenarios/reset-storm.toml"),
    ),
    (
        "shedding.toml",
        include_str!("../../scenarios/shedding.toml"),
    ),
    (
        "failover.toml",
        include_str!("../../scenarios/failover.toml"),
    ),
    (
        "failover-45.toml",
        include_str!("../../scenarios/failover-45.toml"),
    ),
    (
        "active-passive.toml",
        include_str!("../../scenarios/active-passive.toml"),
    ),
    (
        "degradation.toml",
        include_str!("../../scenarios/degradation.toml"),
    ),
    (
        "bulkhead.toml",
        include_str!("../../scenarios/bulkhead.toml"),
    ),
    ("tail.toml", include_str!("../../scenarios/tail.toml")),
    ("hedge.toml", include_str!("../../scenarios/hedge.toml")),
    (
        "hedge-freeze.toml",
        include_str!("../../scenarios/hedge-freeze.toml"),
    ),
];

/// The built-in scenarios, parsed (they are checked by this crate's tests).
pub fn builtins() -> Vec<ScenarioDef> {
    BUILTIN_FILES
        .iter()
        .map(|(file, text)| {
            parse(text, &format!("built-in {file}")).expect("built-in scenarios are valid")
        })
        .collect()
}

/// A built-in scenario by name.
pub fn builtin(name: &str) -> Option<ScenarioDef> {
    builtins().into_iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::scenario::Scenario;
    use e03_model::timeline::PhaseKind;
    use std::collections::BTreeMap;

    #[test]
    fn builtins_parse_and_carry_e03_defaults() {
        let all = builtins();
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "e03a",
                "e03b",
                "gateway4",
                "breaker",
                "herd",
                "budget",
                "amplification",
                "deadline",
                "idempotency",
                "classification",
                "metastable",
                "ratelimit",
                "refused",
                "blackhole",
                "slow-network",
                "reset-storm",
                "shedding",
                "failover",
                "failover-45",
                "active-passive",
                "degradation",
                "bulkhead",
                "tail",
                "hedge",
                "hedge-freeze"
            ]
        );
        let b = builtin("e03b").unwrap();
        assert_eq!(b.settings["E03_FREEZE_START_S"], "8.5");
        assert_eq!(b.settings["E03_FREEZE_END_S"], "10");
        assert_eq!(b.settings["E03_RECOVERY_END_S"], "15");
        assert_eq!(b.settings["E03_RECOVERY_FACTOR"], "0.5");
        assert!(!b.has_faults && !b.settings.contains_key("E03_FAIL_RATE"));
        assert_eq!(b.settings["E03_STRATEGIES"], "A,B,C,D");
        assert_eq!(b.phases.len(), 2);
        let a = builtin("e03a").unwrap();
        assert!(a.phases.is_empty());
        assert_eq!(a.settings["E03_FAIL_RATE"], "0.05");
        assert_eq!(a.settings["E03_SLOW_MS"], "2500");
    }

    #[test]
    fn builtin_values_are_the_parameter_defaults() {
        // E03's own files repeat the parameter table's defaults; they must not drift apart.
        for def in builtins().into_iter().take(2) {
            for (env, value) in &def.settings {
                let default = crate::params::spec(env).unwrap().default;
                let same = match (value.parse::<f64>(), default.parse::<f64>()) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => value == default,
                };
                assert!(same, "{} sets {env}={value}, default {default}", def.name);
            }
        }
    }

    #[test]
    fn seed_scenarios_define_their_strategies_and_checks() {
        let g = builtin("gateway4").unwrap();
        assert_eq!(g.strategies.len(), 2);
        assert_eq!(
            g.checks.len(),
            10,
            "8 against the source, 2 against the model (live)"
        );
        assert_eq!(
            g.phases[0].phase,
            PhaseKind::Down {
                status: 503,
                latency_ms: 26
            }
        );
        let p =
            Params::for_scenario(&Scenario::named("gateway4").unwrap(), &BTreeMap::new()).unwrap();
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["immediate-20ms", "jitter-60ms"]);
        let b = builtin("breaker").unwrap();
        assert!(b.strategies[0].breaker.is_some());
        assert_eq!(
            builtin("herd").unwrap().settings["E03_STRATEGIES"],
            "B,C,E,F"
        );
        // The definition travels as JSON (control call) and comes back the same.
        let json = serde_json::to_string(&g).unwrap();
        assert_eq!(serde_json::from_str::<ScenarioDef>(&json).unwrap(), g);
        g.check().unwrap();
    }

    #[test]
    fn seed_004_scenarios_carry_their_faults_key_policies_and_checks() {
        use crate::checks::CheckMetric;
        use e03_model::ledger::KeyPolicy;
        let idem = Scenario::named("idempotency").unwrap();
        let p = Params::for_scenario(&idem, &BTreeMap::new()).unwrap();
        let policies: Vec<_> = p.strategies().iter().map(|s| s.idempotency).collect();
        assert_eq!(
            policies,
            [
                Some(KeyPolicy::PerOperation),
                Some(KeyPolicy::PerAttempt),
                Some(KeyPolicy::None)
            ]
        );
        let f = p.service_config(&idem, 4).faults;
        assert_eq!(
            (f.lost_rate, f.fail_rate, f.permanent_rate),
            (0.2, 0.0, 0.0)
        );
        let metrics: Vec<_> = idem.def().checks.iter().map(|c| c.metric.clone()).collect();
        assert!(metrics.contains(&CheckMetric::DuplicatesMinusRetriedLost));
        let class = Scenario::named("classification").unwrap();
        let p = Params::for_scenario(&class, &BTreeMap::new()).unwrap();
        let f = p.service_config(&class, 4).faults;
        assert_eq!(
            (f.permanent_rate, f.fail_rate, f.lost_rate),
            (0.1, 0.1, 0.0)
        );
        let ids: Vec<_> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["C", "retry-everything"]);
        assert!(class
            .def()
            .checks
            .iter()
            .any(|c| c.metric == CheckMetric::PermanentLatencyRatio { versus: "C".into() }));
        // A lost-answer share that leaves no room beside the E03-A ones is refused, naming it.
        let raw = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let e = Params::for_scenario(&idem, &raw(&[("E03_FAIL_RATE", "0.9")])).unwrap_err();
        assert!(e.to_string().starts_with("invalid E03_LOST_RATE"), "{e}");
        // The flags move what a scenario has, and add nothing to a scenario without [faults].
        let b = Params::for_scenario(&Scenario::e03b(), &raw(&[("E03_LOST_RATE", "0.5")])).unwrap();
        assert!(b.service_config(&Scenario::e03b(), 1).faults.is_none());
    }
}
