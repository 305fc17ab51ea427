//! A scenario file: its raw form ([`ScenarioFile`], with the position of every value, as TOML
//! reads it), where each of its values goes ([`FILE_KEYS`]), and its validation into a
//! [`ScenarioDef`]: the settings through the parameter table's own rules, the timeline, the
//! file's strategies, chain and checks. Every error names the file, the line and what is
//! expected.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::chain_file::FileChain;
use crate::checks::parse_check_table;
use crate::names::valid_name;
use crate::params::{ParamError, Params};
use crate::strategy_table::{parse_strategy_tables, StrategySpec};
use e03_model::timeline::{PhaseKind, PhaseWindow};

use super::def::{own_strategies, ScenarioDef};
use super::error::ScenarioError;
use super::phases::{read_timeline, FilePhase};

/// Where each value of a file goes: section, key and the E03 parameter it sets.
pub const FILE_KEYS: &[(&str, &str, &str)] = &[
    ("dependency", "workers", "E03_WORKERS"),
    ("dependency", "service_ms", "E03_SERVICE_MS"),
    ("dependency", "queue", "E03_QUEUE"),
    ("dependency", "queue_policy", "E03_QUEUE_POLICY"),
    ("dependency", "queue_target_ms", "E03_QUEUE_TARGET_MS"),
    ("dependency", "queue_interval_ms", "E03_QUEUE_INTERVAL_MS"),
    ("dependency", "admission", "E03_ADMISSION"),
    ("dependency", "priority_reserve", "E03_PRIORITY_RESERVE"),
    ("dependency", "concurrency_limit", "E03_CONCURRENCY_LIMIT"),
    ("dependency", "limit_timeout_ms", "E03_LIMIT_TIMEOUT_MS"),
    ("topology", "replicas", "E03_REPLICAS"),
    ("topology", "balancer", "E03_BALANCER"),
    ("topology", "outlier_5xx", "E03_OUTLIER_5XX"),
    ("topology", "ejection_ms", "E03_EJECTION_MS"),
    ("topology", "outlier_interval_ms", "E03_OUTLIER_INTERVAL_MS"),
    ("topology", "health_interval_ms", "E03_HEALTH_INTERVAL_MS"),
    ("topology", "unhealthy_threshold", "E03_UNHEALTHY_THRESHOLD"),
    ("faults", "fail_rate", "E03_FAIL_RATE"),
    ("faults", "slow_rate", "E03_SLOW_RATE"),
    ("faults", "slow_ms", "E03_SLOW_MS"),
    ("faults", "lost_rate", "E03_LOST_RATE"),
    ("faults", "permanent_rate", "E03_PERMANENT_RATE"),
    ("faults", "tail_rate", "E03_TAIL_RATE"),
    ("faults", "tail_factor", "E03_TAIL_FACTOR"),
    ("faults", "timeout_rate", "E03_TIMEOUT_RATE"),
    ("faults", "cutoff_rate", "E03_CUTOFF_RATE"),
    ("faults", "input_tokens", "E03_INPUT_TOKENS"),
    ("faults", "output_tokens", "E03_OUTPUT_TOKENS"),
    ("workload", "kind", "E03_WORKLOAD"),
    ("workload", "clients", "E03_CLIENTS"),
    ("workload", "period_ms", "E03_PERIOD_MS"),
    ("workload", "rate", "E03_RATE"),
    ("workload", "rate_peak", "E03_RATE_PEAK"),
    ("workload", "best_effort_share", "E03_BEST_EFFORT_SHARE"),
    ("workload", "fanout", "E03_FANOUT"),
    ("workload", "fanout_slow_ms", "E03_FANOUT_SLOW_MS"),
    ("workload", "fanout_quorum", "E03_FANOUT_QUORUM"),
    ("workload", "max_in_flight", "E03_MAX_IN_FLIGHT"),
    ("workload", "ops_per_client", "E03_OPS_PER_CLIENT"),
    ("workload", "duration_s", "E03_DURATION_S"),
    ("workload", "think_min_ms", "E03_THINK_MIN_MS"),
    ("workload", "think_max_ms", "E03_THINK_MAX_MS"),
    ("workload", "step_ms", "E03_STEP_MS"),
    ("workload", "steps", "E03_STEPS"),
    ("workload", "batch_items", "E03_BATCH_ITEMS"),
    ("workload", "burst_start", "E03_BURST_START"),
    ("workload", "burst_items", "E03_BURST_ITEMS"),
    ("workload", "loads", "E03_STEP_LOADS"),
    ("workload", "step_calls", "E03_STEP_CALLS"),
    ("workload", "interactive_every", "E03_INTERACTIVE_EVERY"),
    ("workload", "interactive_until", "E03_INTERACTIVE_UNTIL"),
    ("workload", "interactive_budget", "E03_INTERACTIVE_BUDGET"),
    ("policy", "strategies", "E03_STRATEGIES"),
    ("policy", "max_attempts", "E03_MAX_ATTEMPTS"),
    ("policy", "attempt_timeout_ms", "E03_ATTEMPT_TIMEOUT_MS"),
    ("policy", "connect_timeout_ms", "E03_CONNECT_TIMEOUT_MS"),
    ("policy", "deadline_ms", "E03_DEADLINE_MS"),
    ("policy", "backoff_base_ms", "E03_BACKOFF_BASE_MS"),
    ("policy", "backoff_cap_ms", "E03_BACKOFF_CAP_MS"),
    ("policy", "budget_cap", "E03_BUDGET_CAP"),
    ("policy", "budget_ratio", "E03_BUDGET_RATIO"),
    ("policy", "budget_scope", "E03_BUDGET_SCOPE"),
    ("policy", "shards", "E03_SHARDS"),
    (
        "timeline",
        "first freeze phase's start_s",
        "E03_FREEZE_START_S",
    ),
    ("timeline", "first freeze phase's end_s", "E03_FREEZE_END_S"),
    (
        "timeline",
        "end_s of the degraded phase after it",
        "E03_RECOVERY_END_S",
    ),
    (
        "timeline",
        "capacity_factor of the degraded phase after it",
        "E03_RECOVERY_FACTOR",
    ),
];

/// The raw form of a scenario file, with the position of every value.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    name: Spanned<String>,
    title: String,
    description: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    dependency: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    topology: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    timeline: Vec<Spanned<FilePhase>>,
    faults: Option<BTreeMap<String, Spanned<toml::Value>>>,
    #[serde(default)]
    workload: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    policy: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    strategy: Vec<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    #[serde(default)]
    check: Vec<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    #[serde(default)]
    threshold: Vec<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    chain: Option<Spanned<FileChain>>,
}

/// Parses and validates a scenario file's text. `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<ScenarioDef, ScenarioError> {
    parse_with(text, origin, &[])
}

/// [`parse`] for a run with a user's policy file: the scenario may name `policies`' strategies,
/// and carries them ([`ScenarioDef::policies`]).
pub fn parse_with(
    text: &str,
    origin: &str,
    policies: &[StrategySpec],
) -> Result<ScenarioDef, ScenarioError> {
    let file: ScenarioFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        ScenarioError::at(origin, text, e.span().map(|s| s.start), message)
    })?;
    file.validate(text, origin, policies)
}

impl ScenarioFile {
    fn validate(
        self,
        text: &str,
        origin: &str,
        policies: &[StrategySpec],
    ) -> Result<ScenarioDef, ScenarioError> {
        let err =
            |offset: usize, message: String| ScenarioError::at(origin, text, Some(offset), message);
        let name = self.name.get_ref();
        if !valid_name(name) {
            return Err(err(
                self.name.span().start,
                format!(
                    "name = {name:?}: expected 1 to 32 characters from a-z, 0-9, '-' and '_', \
                     starting with a letter or digit"
                ),
            ));
        }

        // The values that set E03 parameters, with where each was written.
        let mut settings = BTreeMap::new();
        let mut places: BTreeMap<&'static str, (usize, String)> = BTreeMap::new();
        let sections = [
            ("dependency", Some(&self.dependency)),
            ("topology", Some(&self.topology)),
            ("faults", self.faults.as_ref()),
            ("workload", Some(&self.workload)),
            ("policy", Some(&self.policy)),
        ];
        for (section, table) in sections {
            let Some(table) = table else { continue };
            for (key, value) in table {
                let Some(&(_, _, env)) = FILE_KEYS
                    .iter()
                    .find(|(s, k, _)| *s == section && *k == key)
                else {
                    let keys: Vec<&str> = FILE_KEYS
                        .iter()
                        .filter(|(s, _, _)| *s == section)
                        .map(|(_, k, _)| *k)
                        .collect();
                    return Err(err(
                        value.span().start,
                        format!(
                            "unknown key `{key}` in [{section}]: expected one of {}",
                            keys.join(", ")
                        ),
                    ));
                };
                let raw = scalar(value.get_ref()).ok_or_else(|| {
                    err(
                        value.span().start,
                        format!(
                            "[{section}] {key}: expected {}",
                            if env == "E03_STRATEGIES" {
                                "a list of strategy ids like [\"A\", \"C\"]".to_string()
                            } else {
                                accepts(env)
                            }
                        ),
                    )
                })?;
                settings.insert(env.to_string(), raw.clone());
                places.insert(env, (value.span().start, format!("[{section}] {key}")));
            }
        }
        if self.faults.is_some() {
            // A [faults] table sets what it names; the rates it leaves out are zero.
            for env in [
                "E03_FAIL_RATE",
                "E03_SLOW_RATE",
                "E03_LOST_RATE",
                "E03_PERMANENT_RATE",
                "E03_TAIL_RATE",
                "E03_TIMEOUT_RATE",
                "E03_CUTOFF_RATE",
                "E03_INPUT_TOKENS",
                "E03_OUTPUT_TOKENS",
            ] {
                settings
                    .entry(env.to_string())
                    .or_insert_with(|| "0".into());
            }
        }

        // An invalid `replicas` is named by the parameters' check below; no phase is refused
        // for it here.
        let replicas = settings
            .get("E03_REPLICAS")
            .map_or(Some(1), |v| v.parse::<u32>().ok())
            .unwrap_or(u32::MAX);
        let phases = read_timeline("[[timeline]]", &self.timeline, text, origin, replicas)?;
        // The first freeze and the degraded phase right after it carry E03's timeline flags.
        if let Some(i) = phases.iter().position(|p| p.phase == PhaseKind::Freeze) {
            let (start, end) = (phases[i].start_s, phases[i].end_s);
            let offset = self.timeline[i].span().start;
            settings.insert("E03_FREEZE_START_S".into(), start.to_string());
            settings.insert("E03_FREEZE_END_S".into(), end.to_string());
            places.insert("E03_FREEZE_START_S", (offset, "the freeze phase".into()));
            places.insert("E03_FREEZE_END_S", (offset, "the freeze phase".into()));
            match phases.get(i + 1) {
                Some(PhaseWindow {
                    phase: PhaseKind::Degraded { capacity_factor },
                    start_s,
                    end_s,
                    ..
                }) if *start_s == end => {
                    let offset = self.timeline[i + 1].span().start;
                    settings.insert("E03_RECOVERY_END_S".into(), end_s.to_string());
                    settings.insert("E03_RECOVERY_FACTOR".into(), capacity_factor.to_string());
                    places.insert("E03_RECOVERY_END_S", (offset, "the degraded phase".into()));
                    places.insert("E03_RECOVERY_FACTOR", (offset, "the degraded phase".into()));
                }
                _ => {
                    // No degraded phase follows: the recovery window is empty.
                    settings.insert("E03_RECOVERY_END_S".into(), end.to_string());
                }
            }
        }

        // The file's own strategies, each table checked, ids unique.
        let strategies = parse_strategy_tables(&self.strategy)
            .map_err(|e| ScenarioError::at(origin, text, e.offset, e.message))?;

        // One validation for every value: the parameter table's own rules.
        let validated = Params::from_raw_with(&settings, &own_strategies(policies, &strategies));
        if let Err(e) = validated {
            let (offset, message) = match &e {
                ParamError::Invalid {
                    name,
                    value,
                    accepts,
                } => match places.get(name.as_str()) {
                    Some((offset, what)) => (
                        Some(*offset),
                        format!("{what} = {value}: expected {accepts}"),
                    ),
                    None => (None, e.to_string()),
                },
                _ => (None, e.to_string()),
            };
            return Err(ScenarioError::at(origin, text, offset, message));
        }

        // The chains, if any: their variants are what the scenario runs.
        let chain = match self.chain {
            None => None,
            Some(c) => {
                let at = c.span().start;
                Some(c.into_inner().validate(text, origin, at)?)
            }
        };

        // A fault on the wire needs the proxy in front of the one dependency of the closed or
        // open loop: a chain's hops and the step workload's driver have none yet.
        let steps = validated.as_ref().is_ok_and(|p| p.is_steps());
        if chain.is_some() || steps {
            if let Some(i) = phases.iter().position(|p| {
                matches!(p.phase, PhaseKind::Refused { .. } | PhaseKind::Toxic { .. })
            }) {
                let with = if steps {
                    "the step workload (workload.kind = \"steps\")"
                } else {
                    "a [chain]"
                };
                return Err(ScenarioError::at(
                    origin,
                    text,
                    Some(self.timeline[i].span().start),
                    format!(
                        "the wire phase from {} s: a fault on the wire does not run with {with} \
                         yet: a proxy stands in front of the closed or open loop's dependency \
                         only (docs/wire.md)",
                        phases[i].start_s
                    ),
                ));
            }
        }

        // The checks, each naming strategies (or chain variants) the scenario runs.
        let run_ids: Vec<String> = match &chain {
            Some(c) => c.variants.iter().map(|v| v.id.clone()).collect(),
            None => validated
                .map(|p| p.strategies().iter().map(|s| s.id.clone()).collect())
                .unwrap_or_default(),
        };
        let mut checks = Vec::new();
        for t in &self.check {
            let spec = parse_check_table(t.get_ref(), t.span().start).map_err(|e| {
                ScenarioError::at(origin, text, e.offset, format!("[[check]] {}", e.message))
            })?;
            super::file_thresholds::not_run(&spec, t, &run_ids, origin, text, "[[check]]")?;
            checks.push(spec);
        }
        if chain.is_some() && !self.threshold.is_empty() {
            return Err(ScenarioError::at(
                origin,
                text,
                Some(self.threshold[0].span().start),
                "[[threshold]]: a chain scenario takes [[check]] tables, not thresholds yet".into(),
            ));
        }
        let thresholds = super::file_thresholds::read(&self.threshold, &run_ids, origin, text)?;

        Ok(ScenarioDef {
            name: name.clone(),
            title: self.title,
            description: self.description,
            source: self.source,
            phases,
            settings,
            has_faults: self.faults.is_some(),
            strategies,
            policies: policies.to_vec(),
            checks,
            thresholds,
            chain,
        })
    }
}

/// A TOML scalar (or, for strategies, a list of strings) as the raw string of an E03 parameter.
fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Array(items) => items
            .iter()
            .map(|i| match i {
                toml::Value::Integer(n) => Some(n.to_string()),
                other => other.as_str().map(str::to_string),
            })
            .collect::<Option<Vec<_>>>()
            .map(|ids| ids.join(",")),
        _ => None,
    }
}

fn accepts(env: &str) -> String {
    crate::params::spec(env)
        .map(|s| s.accepts.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::builtin;

    const MINIMAL: &str = "name = \"mine\"\ntitle = \"Mine\"\ndescription = \"d\"\n";

    fn err(text: &str) -> ScenarioError {
        parse(text, "x.toml").unwrap_err()
    }

    #[test]
    fn chain_scenarios_carry_their_variants_and_checks_name_them() {
        let a = builtin("amplification").unwrap();
        let c = a.chain.as_ref().unwrap();
        let ids: Vec<&str> = c.variants.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["every-layer", "top-only", "five-layers"]);
        assert_eq!(c.variants[2].hops.len(), 5);
        assert_eq!(c.bottom, e03_model::chain::Bottom::Fail { status: 503 });
        assert_eq!(a.checks.len(), 3);
        assert!(builtin("e03b").unwrap().chain.is_none());

        let file = |check: &str, variant: &str| {
            format!(
                "{MINIMAL}[chain]\nbottom = \"fail\"\n[[chain.variant]]\n{variant}\n\
                 [[check]]\n{check}\n"
            )
        };
        let good_variant = "id = \"v\"\ntop = { name = \"t\", attempts = 2 }";
        let ok = parse(
            &file(
                "strategy = \"v\"\nmetric = \"bottom_calls_per_request\"",
                good_variant,
            ),
            "x.toml",
        )
        .unwrap();
        assert_eq!(ok.chain.unwrap().variants[0].top.attempts, 2);
        let e = err(&file(
            "strategy = \"w\"\nmetric = \"bottom_calls_per_request\"",
            good_variant,
        ));
        assert!(e.message.contains("strategy = \"w\""), "{e}");
        let e = err(&file(
            "strategy = \"v\"\nmetric = \"op_max_ms\"",
            "id = \"v\"\ntop = { name = \"t\", attempts = 99 }",
        ));
        assert!(e.message.contains("attempts = 99"), "{e}");
        assert_eq!(e.line(), Some(4));
    }

    #[test]
    fn a_minimal_file_is_a_scenario_with_no_phase_and_no_faults() {
        let s = parse(MINIMAL, "x.toml").unwrap();
        assert_eq!(s.name, "mine");
        assert!(s.phases.is_empty());
        assert!(!s.has_faults);
        let f = parse(&format!("{MINIMAL}[faults]\nfail_rate = 0.2\n"), "x.toml").unwrap();
        assert!(f.has_faults);
        assert_eq!(f.settings["E03_FAIL_RATE"], "0.2");
        assert_eq!(
            f.settings["E03_SLOW_RATE"], "0",
            "rates left out of [faults] are zero"
        );
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let e = err("name = \"x\"\ntitle = \"t\"\ndescription = \n");
        assert_eq!(e.origin, "x.toml");
        assert_eq!(e.line(), Some(3), "{e}");
        assert!(e.to_string().starts_with("scenario file x.toml:3: "), "{e}");
    }

    #[test]
    fn unknown_keys_say_what_is_expected() {
        let e = err(&format!("{MINIMAL}colour = 1\n"));
        assert_eq!(e.line(), Some(4), "{e}");
        assert!(
            e.message.contains("colour") && e.message.contains("expected"),
            "{e}"
        );

        let e = err(&format!("{MINIMAL}[dependency]\nworkerz = 3\n"));
        assert_eq!(e.line(), Some(5), "{e}");
        assert!(
            e.message
                .contains("expected one of workers, service_ms, queue"),
            "{e}"
        );
    }

    #[test]
    fn out_of_range_values_point_at_their_line() {
        let e = err(&format!("{MINIMAL}\n[dependency]\nworkers = 0\n"));
        assert_eq!(e.line(), Some(6), "{e}");
        assert_eq!(
            e.message,
            "[dependency] workers = 0: expected a whole number from 1 to 10000"
        );
        let e = err(&format!("{MINIMAL}[policy]\nstrategies = [\"A\", \"Z\"]\n"));
        assert_eq!(e.line(), Some(5), "{e}");
        let e = err(&format!("{MINIMAL}[workload]\nclients = \"many\"\n"));
        assert!(
            e.message
                .contains("clients = many: expected a whole number"),
            "{e}"
        );
    }

    #[test]
    fn a_wire_phase_is_refused_with_a_chain_or_the_step_workload() {
        let wire = "[[timeline]]\nphase = \"refused\"\nstart_s = 1.0\nend_s = 2.0\n";
        // The built-in step scenario with its rate limit swapped for a refused phase.
        let steps = include_str!("../../scenarios/ratelimit.toml")
            .replace("name = \"ratelimit\"", "name = \"steps-wire\"")
            .replace(
                "[[timeline]]\nphase = \"rate_limited\"\nstart_s = 0.0\nend_s = 3600.0\n\
                 calls = 24\nwindow_ms = 250\ncount_rejected = true\n",
                wire,
            );
        assert!(steps.contains("\"refused\""));
        let e = err(&steps);
        assert!(
            e.message.contains("the wire phase from 1 s")
                && e.message.contains("workload.kind = \"steps\""),
            "{e}"
        );
        let chain = include_str!("../../scenarios/amplification.toml")
            .replace("name = \"amplification\"", "name = \"chain-wire\"");
        let e = err(&format!("{chain}\n{wire}"));
        assert!(e.message.contains("with a [chain] yet"), "{e}");
    }

    #[test]
    fn a_freeze_without_degraded_phase_has_an_empty_recovery() {
        let s = parse(
            &format!("{MINIMAL}[[timeline]]\nphase = \"freeze\"\nstart_s = 2\nend_s = 3\n"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(s.settings["E03_RECOVERY_END_S"], "3");
    }

    #[test]
    fn strategy_and_check_tables_are_checked_with_their_line() {
        let e = err(&format!(
            "{MINIMAL}[policy]\nstrategies = [\"mine\"]\n[[strategy]]\nid = \"mine\"\n\
             backoff = \"constant\"\nwait_ms = \"x\"\n"
        ));
        assert_eq!(e.line(), Some(9), "{e}");
        assert!(
            e.message
                .starts_with("[[strategy]] wait_ms = \"x\": expected"),
            "{e}"
        );
        let e = err(&format!(
            "{MINIMAL}[policy]\nstrategies = [\"A\", \"other\"]\n[[strategy]]\nid = \"mine\"\n\
             backoff = \"none\"\n"
        ));
        assert_eq!(e.line(), Some(5), "{e}");
        assert!(e.message.contains("A,B,C,D,E,F,grpc,"), "{e}");
        assert!(
            e.message.contains(",polly-hedging,mine without repeats"),
            "{e}"
        );
        let e = err(&format!(
            "{MINIMAL}[[strategy]]\nid = \"x\"\nbackoff = \"none\"\n\
             [[strategy]]\nid = \"x\"\nbackoff = \"none\"\n"
        ));
        assert!(e.message.contains("defined twice"), "{e}");
        let e = err(&format!(
            "{MINIMAL}[[check]]\nstrategy = \"Z\"\nmetric = \"attempts\"\npublished = 1\n\
             exact = true\n"
        ));
        assert_eq!(e.line(), Some(5), "{e}");
        assert!(
            e.message
                .contains("expected a strategy the scenario runs (A, B, C, D)"),
            "{e}"
        );
    }

    #[test]
    fn names_are_path_safe() {
        let e = err("name = \"../x\"\ntitle = \"t\"\ndescription = \"d\"\n");
        assert_eq!(e.line(), Some(1));
        assert!(valid_name("e03b") && valid_name("my-case_2"));
        assert!(!valid_name("") && !valid_name("E03") && !valid_name("-x"));
    }
}
