//! Scenarios as data: a name, a description, the dependency's timeline of phases, its
//! request-level faults, the workload and the policies to compare.
//!
//! A scenario is a TOML file. The built-in ones (`scenarios/*.toml` in this crate) are compiled
//! in and are the same kind of file a user writes, so adding a scenario never adds a code path to
//! a driver. Reading a file is two steps, as everywhere in the core: the file's text is parsed
//! into its raw form ([`ScenarioFile`], with the position of every value), then validated once
//! into a [`ScenarioDef`], the plain value the drivers use (and send to each other as JSON).
//! Every error names the file, the line and what is expected.
//!
//! # How a scenario meets the E03 parameters
//!
//! Most values of a file are the defaults of E03 parameters for that scenario: `[dependency]
//! workers` is `E03_WORKERS`, `[policy] strategies` is `E03_STRATEGIES`, and so on
//! ([`FILE_KEYS`] is the whole table). [`ScenarioDef::settings`] holds them keyed by env name,
//! and a run's parameters are the scenario's settings overridden by the user's env vars and flags
//! (see [`crate::params::Params::for_scenario`]). The timeline is a list of phases; its first
//! `freeze` phase gives the defaults of `E03_FREEZE_START_S` and `E03_FREEZE_END_S`, and a
//! `degraded` phase that starts where that freeze ends gives those of `E03_RECOVERY_END_S` and
//! `E03_RECOVERY_FACTOR`, so E03's flags move those two phases. The flags move what a scenario
//! has and add nothing it lacks: a file without `[faults]` has no transient faults whatever
//! `E03_FAIL_RATE` says, and one without a freeze phase ignores `E03_FREEZE_*`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::chain::ChainDef;
use crate::chain_file::FileChain;
use crate::checks::{parse_check_table, CheckSpec};
use crate::names::valid_name;
use crate::params::{ParamError, Params};
use crate::strategy_table::{parse_strategy_tables, StrategySpec};
use crate::timeline::{PhaseKind, PhaseWindow};
use crate::toml_table::line_of;

/// The built-in scenarios: file name and text, compiled in.
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    ("e03a.toml", include_str!("../scenarios/e03a.toml")),
    ("e03b.toml", include_str!("../scenarios/e03b.toml")),
    ("gateway4.toml", include_str!("../scenarios/gateway4.toml")),
    ("breaker.toml", include_str!("../scenarios/breaker.toml")),
    ("herd.toml", include_str!("../scenarios/herd.toml")),
    ("budget.toml", include_str!("../scenarios/budget.toml")),
    (
        "amplification.toml",
        include_str!("../scenarios/amplification.toml"),
    ),
    ("deadline.toml", include_str!("../scenarios/deadline.toml")),
    (
        "idempotency.toml",
        include_str!("../scenarios/idempotency.toml"),
    ),
    (
        "classification.toml",
        include_str!("../scenarios/classification.toml"),
    ),
    (
        "metastable.toml",
        include_str!("../scenarios/metastable.toml"),
    ),
    (
        "ratelimit.toml",
        include_str!("../scenarios/ratelimit.toml"),
    ),
    ("refused.toml", include_str!("../scenarios/refused.toml")),
    (
        "blackhole.toml",
        include_str!("../scenarios/blackhole.toml"),
    ),
    (
        "slow-network.toml",
        include_str!("../scenarios/slow-network.toml"),
    ),
    (
        "reset-storm.toml",
        include_str!("../scenarios/reset-storm.toml"),
    ),
    ("shedding.toml", include_str!("../scenarios/shedding.toml")),
    ("failover.toml", include_str!("../scenarios/failover.toml")),
    (
        "failover-45.toml",
        include_str!("../scenarios/failover-45.toml"),
    ),
    (
        "active-passive.toml",
        include_str!("../scenarios/active-passive.toml"),
    ),
    (
        "degradation.toml",
        include_str!("../scenarios/degradation.toml"),
    ),
    ("bulkhead.toml", include_str!("../scenarios/bulkhead.toml")),
    ("tail.toml", include_str!("../scenarios/tail.toml")),
    ("hedge.toml", include_str!("../scenarios/hedge.toml")),
    (
        "hedge-freeze.toml",
        include_str!("../scenarios/hedge-freeze.toml"),
    ),
];

/// Longest accepted phase edge, in seconds (one day, as for the E03 time parameters).
const MAX_TIME_S: f64 = 86_400.0;

/// Longest error latency of a `down` phase, in ms (ten minutes).
const MAX_DOWN_LATENCY_MS: u64 = 600_000;
/// Longest sliding window of a `rate_limited` phase: one hour.
const MAX_RATE_WINDOW_MS: u64 = 3_600_000;
/// Longest fixed `Retry-After` of a `rate_limited` phase: one hour (the swarm honours no more).
const MAX_RETRY_AFTER_MS: u64 = 3_600_000;

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

/// A scenario, validated: what the drivers use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioDef {
    /// Short name, used in paths and logs: lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// Title of its tables and figures.
    pub title: String,
    /// One line: what happens in it.
    pub description: String,
    /// Where it comes from (an experiment, an article), for `lab list`.
    pub source: String,
    /// The dependency's phases, sorted and not overlapping; time not covered is `up`.
    pub phases: Vec<PhaseWindow>,
    /// The E03 parameters the file sets, keyed by env name (the scenario's defaults).
    pub settings: BTreeMap<String, String>,
    /// The file has a `[faults]` table: `E03_FAIL_RATE`, `E03_SLOW_RATE` and `E03_SLOW_MS` apply.
    pub has_faults: bool,
    /// The strategies the file defines (`[[strategy]]` tables), named by id in
    /// `[policy] strategies` or `E03_STRATEGIES` like A to F.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strategies: Vec<StrategySpec>,
    /// The strategies of the user's policy file this scenario was read with (`--policies`,
    /// `E03_POLICIES`), which its strategies may name too: looked up after the presets and
    /// before [`ScenarioDef::strategies`] (see [`crate::strategy_table::resolve_id`]). They
    /// travel with the definition, so that no process needs a table of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<StrategySpec>,
    /// The file's checks against its source's figures (`[[check]]` tables).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSpec>,
    /// The file's chains of services (`[chain]`, see [`crate::chain`]): such a scenario runs
    /// its chain variants, not the strategies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainDef>,
}

/// The order in which a scenario's ids find the strategies besides A to F and the presets: the
/// user's policy file's, then the file's own tables.
fn own_strategies(policies: &[StrategySpec], strategies: &[StrategySpec]) -> Vec<StrategySpec> {
    policies.iter().chain(strategies).cloned().collect()
}

impl ScenarioDef {
    /// The strategies its ids may name besides A to F and the presets: the user's policy file's
    /// ([`ScenarioDef::policies`]), then its own tables.
    pub fn own_strategies(&self) -> Vec<StrategySpec> {
        own_strategies(&self.policies, &self.strategies)
    }

    /// Checks a definition that did not come from [`parse`] (a control call): a path-safe name
    /// and phases that [`parse`] would have accepted.
    pub fn check(&self) -> Result<(), String> {
        if !valid_name(&self.name) {
            return Err(format!("invalid scenario name {:?}", self.name));
        }
        let (mut freezes, mut degraded) = (0, 0);
        for (i, p) in self.phases.iter().enumerate() {
            // Phases of one replica may overlap another replica's, not their own.
            let end = self.phases[..i]
                .iter()
                .rev()
                .find(|q| q.replica.is_none() || p.replica.is_none() || q.replica == p.replica)
                .map_or(0.0, |q| q.end_s);
            let replica_ok = p.replica.is_none()
                || matches!(p.phase, PhaseKind::Down { .. } | PhaseKind::Degraded { .. });
            let ok = replica_ok
                && p.start_s.is_finite()
                && p.end_s.is_finite()
                && p.start_s >= end
                && p.start_s < p.end_s
                && p.end_s <= MAX_TIME_S;
            let kind_ok = match p.phase {
                PhaseKind::Up => true,
                PhaseKind::Down { status, latency_ms } => {
                    (400..=599).contains(&status) && latency_ms <= MAX_DOWN_LATENCY_MS
                }
                PhaseKind::Freeze => {
                    freezes += 1;
                    freezes == 1
                }
                PhaseKind::Degraded { capacity_factor } => {
                    degraded += 1;
                    degraded == 1 && capacity_factor > 0.0 && capacity_factor <= 1.0
                }
                PhaseKind::RateLimited {
                    calls,
                    window_ms,
                    retry_after_ms,
                    ..
                } => {
                    calls >= 1
                        && (1..=MAX_RATE_WINDOW_MS).contains(&window_ms)
                        && retry_after_ms.is_none_or(|r| r <= MAX_RETRY_AFTER_MS)
                }
                PhaseKind::Refused { latency_ms } => latency_ms <= MAX_DOWN_LATENCY_MS,
                PhaseKind::Toxic { toxicity, .. } => (0.0..=1.0).contains(&toxicity),
            };
            if !ok || !kind_ok {
                return Err(format!(
                    "scenario {:?}: invalid phase {p:?}: expected phases in time order within a \
                     day, at most one freeze and one degraded",
                    self.name
                ));
            }
        }
        Params::from_raw_with(&self.settings, &self.own_strategies())
            .map(|_| ())
            .map_err(|e| format!("scenario {:?}: {e}", self.name))
    }
}

/// A scenario file that cannot be used. Its text names the file, the line and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scenario file {origin}{line}: {message}")]
pub struct ScenarioError {
    /// The file's path (or `built-in NAME.toml`).
    pub origin: String,
    /// `:LINE` when the error has a place in the file, else empty.
    line: String,
    pub message: String,
}

impl ScenarioError {
    fn at(origin: &str, text: &str, offset: Option<usize>, message: String) -> Self {
        let line = offset
            .map(|o| format!(":{}", line_of(text, o)))
            .unwrap_or_default();
        ScenarioError {
            origin: origin.to_string(),
            line,
            message,
        }
    }

    /// The 1-based line of the error, when it has one.
    pub fn line(&self) -> Option<usize> {
        self.line.trim_start_matches(':').parse().ok()
    }
}

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
    chain: Option<Spanned<FileChain>>,
}

/// One `[[timeline]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePhase {
    phase: PhaseName,
    start_s: f64,
    end_s: f64,
    capacity_factor: Option<f64>,
    status: Option<u16>,
    latency_ms: Option<u64>,
    calls: Option<u32>,
    window_ms: Option<u64>,
    count_rejected: Option<bool>,
    retry_after_ms: Option<u64>,
    /// A toxic phase: Toxiproxy's type, attributes, stream and toxicity.
    toxic: Option<String>,
    attributes: Option<BTreeMap<String, f64>>,
    stream: Option<crate::wire::Direction>,
    toxicity: Option<f64>,
    /// A down phase of one replica only (0 is the first); none: every replica.
    replica: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum PhaseName {
    Up,
    Down,
    Freeze,
    Degraded,
    RateLimited,
    Refused,
    Toxic,
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
        let phases = self.phases(text, origin, replicas)?;
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
                Some(
                    c.into_inner()
                        .validate()
                        .map_err(|m| ScenarioError::at(origin, text, Some(at), m))?,
                )
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
            if let Some(id) = spec
                .strategies()
                .into_iter()
                .find(|id| !run_ids.iter().any(|r| r == id))
            {
                let key = if id == spec.strategy {
                    "strategy"
                } else {
                    "versus"
                };
                let offset = t.get_ref().get(key).map(|v| v.span().start);
                return Err(ScenarioError::at(
                    origin,
                    text,
                    offset,
                    format!(
                        "[[check]] {key} = {id:?}: expected a strategy the scenario runs ({})",
                        run_ids.join(", ")
                    ),
                ));
            }
            checks.push(spec);
        }

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
            chain,
        })
    }

    /// The timeline, checked: edges within a day, each phase of positive length, in order and
    /// not overlapping, and only the keys its kind takes.
    fn phases(
        &self,
        text: &str,
        origin: &str,
        replicas: u32,
    ) -> Result<Vec<PhaseWindow>, ScenarioError> {
        let mut out: Vec<PhaseWindow> = Vec::new();
        for spanned in &self.timeline {
            let p = spanned.get_ref();
            let fail = |message: String| {
                Err(ScenarioError::at(
                    origin,
                    text,
                    Some(spanned.span().start),
                    format!("[[timeline]] {:?} phase: {message}", p.phase),
                ))
            };
            let time_ok = |t: f64| t.is_finite() && (0.0..=MAX_TIME_S).contains(&t);
            if !time_ok(p.start_s) || !time_ok(p.end_s) || p.end_s <= p.start_s {
                return fail(format!(
                    "start_s = {}, end_s = {}: expected seconds from 0 to {MAX_TIME_S} with \
                     start_s < end_s",
                    p.start_s, p.end_s
                ));
            }
            if let Some(r) = p.replica {
                if !matches!(p.phase, PhaseName::Down | PhaseName::Degraded) {
                    return fail(
                        "replica is only for a down or a degraded phase (one replica's failure \
                         or slowness)"
                            .into(),
                    );
                }
                if r >= replicas {
                    return fail(format!(
                        "replica = {r}: expected a replica of [topology] replicas = {replicas}, \
                         from 0 to {}",
                        replicas - 1
                    ));
                }
            }
            // Phases of one replica may overlap another replica's, not their own.
            let shares = |q: &PhaseWindow| {
                q.replica.is_none() || p.replica.is_none() || q.replica == p.replica
            };
            if let Some(prev) = out.iter().rev().find(|q| shares(q)) {
                if p.start_s < prev.end_s {
                    return fail(format!(
                        "starts at {} s, before the previous phase ends ({} s): expected phases \
                         in time order, not overlapping",
                        p.start_s, prev.end_s
                    ));
                }
            }
            let seen = |kind: PhaseName| {
                self.timeline
                    .iter()
                    .take(out.len())
                    .any(|q| q.get_ref().phase == kind)
            };
            if matches!(p.phase, PhaseName::Freeze | PhaseName::Degraded) && seen(p.phase) {
                return fail(
                    "a second phase of this kind: expected at most one freeze and one degraded \
                     phase (down phases may repeat)"
                        .into(),
                );
            }
            if p.capacity_factor.is_some() && p.phase != PhaseName::Degraded {
                return fail("capacity_factor is only for a degraded phase".into());
            }
            if p.status.is_some() && p.phase != PhaseName::Down {
                return fail("status is only for a down phase".into());
            }
            if p.latency_ms.is_some() && !matches!(p.phase, PhaseName::Down | PhaseName::Refused) {
                return fail("latency_ms is only for a down or a refused phase".into());
            }
            // The keys only one kind of phase takes.
            let own_keys = [
                ("calls", p.calls.is_some(), PhaseName::RateLimited),
                ("window_ms", p.window_ms.is_some(), PhaseName::RateLimited),
                (
                    "count_rejected",
                    p.count_rejected.is_some(),
                    PhaseName::RateLimited,
                ),
                (
                    "retry_after_ms",
                    p.retry_after_ms.is_some(),
                    PhaseName::RateLimited,
                ),
                ("toxic", p.toxic.is_some(), PhaseName::Toxic),
                ("attributes", p.attributes.is_some(), PhaseName::Toxic),
                ("stream", p.stream.is_some(), PhaseName::Toxic),
                ("toxicity", p.toxicity.is_some(), PhaseName::Toxic),
            ];
            if let Some((key, _, kind)) = own_keys
                .iter()
                .find(|(_, set, kind)| *set && p.phase != *kind)
            {
                let kind = if *kind == PhaseName::Toxic {
                    "toxic"
                } else {
                    "rate_limited"
                };
                return fail(format!("{key} is only for a {kind} phase"));
            }
            let latency_ms = p.latency_ms.unwrap_or(0);
            if latency_ms > MAX_DOWN_LATENCY_MS {
                return fail(format!(
                    "latency_ms = {latency_ms}: expected a whole number of milliseconds from 0 \
                     to {MAX_DOWN_LATENCY_MS}"
                ));
            }
            let phase = match p.phase {
                PhaseName::RateLimited => {
                    let calls = match p.calls {
                        Some(c) if c >= 1 => c,
                        other => {
                            return fail(format!(
                                "calls = {other:?}: expected calls, a whole number of requests \
                                 per window, at least 1"
                            ))
                        }
                    };
                    let window_ms = match p.window_ms {
                        Some(w) if (1..=MAX_RATE_WINDOW_MS).contains(&w) => w,
                        other => {
                            return fail(format!(
                                "window_ms = {other:?}: expected window_ms, the sliding \
                                 window in milliseconds, from 1 to {MAX_RATE_WINDOW_MS}"
                            ))
                        }
                    };
                    if let Some(r) = p.retry_after_ms.filter(|&r| r > MAX_RETRY_AFTER_MS) {
                        return fail(format!(
                            "retry_after_ms = {r}: expected milliseconds from 0 to \
                             {MAX_RETRY_AFTER_MS}, or no key (the time until the window admits \
                             again)"
                        ));
                    }
                    PhaseKind::RateLimited {
                        calls,
                        window_ms,
                        count_rejected: p.count_rejected.unwrap_or(true),
                        retry_after_ms: p.retry_after_ms,
                    }
                }
                PhaseName::Up => PhaseKind::Up,
                PhaseName::Freeze => PhaseKind::Freeze,
                PhaseName::Refused => PhaseKind::Refused { latency_ms },
                PhaseName::Toxic => {
                    let Some(type_name) = &p.toxic else {
                        return fail(format!(
                            "expected toxic, a Toxiproxy toxic type: one of {}",
                            crate::wire::TOXIC_TYPES.join(", ")
                        ));
                    };
                    let toxic = match crate::wire::ToxicKind::from_parts(
                        type_name,
                        &p.attributes.clone().unwrap_or_default(),
                    ) {
                        Ok(k) => k,
                        Err(e) => return fail(e.replacen("type: ", "toxic = ", 1)),
                    };
                    let toxicity = p.toxicity.unwrap_or(1.0);
                    if !(0.0..=1.0).contains(&toxicity) {
                        return fail(format!(
                            "toxicity = {toxicity}: expected a probability from 0 to 1"
                        ));
                    }
                    PhaseKind::Toxic {
                        toxic,
                        stream: p.stream.unwrap_or_default(),
                        toxicity,
                    }
                }
                PhaseName::Down => match p.status.unwrap_or(503) {
                    status @ 400..=599 => PhaseKind::Down { status, latency_ms },
                    other => return fail(format!("status = {other}: expected 400 to 599")),
                },
                PhaseName::Degraded => match p.capacity_factor {
                    Some(f) if f > 0.0 && f <= 1.0 => PhaseKind::Degraded { capacity_factor: f },
                    Some(f) => {
                        return fail(format!(
                            "capacity_factor = {f}: expected a fraction greater than 0 and at \
                             most 1"
                        ))
                    }
                    None => {
                        return fail(
                            "expected capacity_factor, a fraction greater than 0 and at most 1"
                                .into(),
                        )
                    }
                },
            };
            out.push(PhaseWindow {
                phase,
                start_s: p.start_s,
                end_s: p.end_s,
                replica: p.replica,
            });
        }
        Ok(out)
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

/// A scenario: its [`ScenarioDef`] by value, shared (`Arc`), so that tables, logs and plans
/// pass it around like an id. There is no process-wide table of scenarios: [`Scenario::named`]
/// finds the built-in ones (compiled in, the same in every process), and a user's file becomes a
/// scenario with [`Scenario::from_def`], which the plan then carries to every process that needs
/// it. Two scenarios are equal when their names are. It serializes as its name; only a built-in
/// one deserializes from a name alone (a user's travels with its definition, as in
/// [`crate::control::StartRun`]).
#[derive(Clone)]
pub struct Scenario(Arc<ScenarioDef>);

/// The built-in scenarios, parsed once: constant data, like the text they come from.
fn catalogue() -> &'static [Scenario] {
    static CATALOGUE: OnceLock<Vec<Scenario>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        builtins()
            .into_iter()
            .map(|d| Scenario(Arc::new(d)))
            .collect()
    })
}

impl Scenario {
    /// E03-A, transient faults (built in).
    pub fn e03a() -> Scenario {
        Scenario::named("e03a").expect("built in")
    }

    /// E03-B, the outage (built in).
    pub fn e03b() -> Scenario {
        Scenario::named("e03b").expect("built in")
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The scenario's data.
    pub fn def(&self) -> &ScenarioDef {
        &self.0
    }

    pub fn title(&self) -> &str {
        &self.0.title
    }

    /// The built-in scenario called `name`.
    pub fn named(name: &str) -> Option<Scenario> {
        catalogue().iter().find(|s| s.name() == name).cloned()
    }

    /// The built-in scenarios, in catalogue order.
    pub fn builtins() -> Vec<Scenario> {
        catalogue().to_vec()
    }

    /// A user's scenario (a file a binary read, or a definition a control call carried). A
    /// built-in name is refused unless the definition is that built-in one (a file must not
    /// silently replace a built-in scenario); the user's strategies it was read with
    /// ([`ScenarioDef::policies`]) may differ. Two files of one run under one name are refused
    /// where the run's list is made (`e03_io::scenario_files`).
    pub fn from_def(def: ScenarioDef) -> Result<Scenario, ScenarioError> {
        if let Some(known) = Scenario::named(&def.name) {
            let mut bare = def.clone();
            bare.policies.clear();
            if *known.def() != bare {
                return Err(ScenarioError {
                    origin: def.name.clone(),
                    line: String::new(),
                    message: format!(
                        "the name {:?} is taken by a built-in scenario: give the file another \
                         name",
                        def.name
                    ),
                });
            }
        }
        Ok(Scenario(Arc::new(def)))
    }

    /// This scenario read with a user's policy file: its strategies may name `policies`' ids
    /// (see [`ScenarioDef::policies`]). The name stays the same.
    /// The same scenario, its name kept, with its timeline's phases replaced (the phase map's
    /// cells move a phase's end): checked as [`ScenarioDef::check`] checks a definition.
    pub fn with_phases(&self, phases: Vec<PhaseWindow>) -> Result<Scenario, String> {
        let mut def = (*self.0).clone();
        def.phases = phases;
        def.check()?;
        Ok(Scenario(Arc::new(def)))
    }

    pub fn with_policies(&self, policies: &[StrategySpec]) -> Scenario {
        if policies.is_empty() && self.0.policies.is_empty() {
            return self.clone();
        }
        let mut def = (*self.0).clone();
        def.policies = policies.to_vec();
        Scenario(Arc::new(def))
    }

    /// A scenario name, or `all` for the E03 experiment (E03-A, then E03-B: what compose and
    /// `lab run all` have always run; the catalogue's other scenarios run by name). Only built-in
    /// names: files are read by the binaries (the core does no IO; see `e03_io::scenario_files`).
    pub fn parse_list(value: &str) -> Result<Vec<Scenario>, ParamError> {
        let lower = value.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "e03-a" | "a" => "e03a",
            "e03-b" | "b" => "e03b",
            other => other,
        };
        if alias == "all" {
            return Ok(vec![Scenario::e03a(), Scenario::e03b()]);
        }
        Scenario::named(alias)
            .map(|s| vec![s])
            .ok_or_else(|| ParamError::UnknownScenario {
                known: Scenario::known_names().join(", "),
                value: value.to_string(),
            })
    }

    /// The names of the built-in scenarios, for error messages.
    pub fn known_names() -> Vec<String> {
        catalogue().iter().map(|s| s.name().to_string()).collect()
    }
}

impl PartialEq for Scenario {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Scenario {}

impl std::hash::Hash for Scenario {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name().hash(h);
    }
}

impl PartialOrd for Scenario {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scenario {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scenario({})", self.name())
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Scenario::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown scenario {name:?}: expected a built-in one ({}); a user's scenario \
                 travels with its definition",
                Scenario::known_names().join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(c.bottom, crate::chain::Bottom::Fail { status: 503 });
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
        let steps = include_str!("../scenarios/ratelimit.toml")
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
        let chain = include_str!("../scenarios/amplification.toml")
            .replace("name = \"amplification\"", "name = \"chain-wire\"");
        let e = err(&format!("{chain}\n{wire}"));
        assert!(e.message.contains("with a [chain] yet"), "{e}");
    }

    #[test]
    fn wire_phases_are_read_into_the_timeline_and_checked() {
        use crate::timeline::WireFault;
        use crate::wire::{Direction, ToxicKind};
        use std::time::Duration;
        let text = "name = \"wire-phases\"\ntitle = \"W\"\ndescription = \"d\"\n\
             [[timeline]]\nphase = \"refused\"\nstart_s = 1\nend_s = 3\nlatency_ms = 1\n\
             [[timeline]]\nphase = \"toxic\"\nstart_s = 4\nend_s = 5\ntoxic = \"latency\"\n\
             attributes = { latency = 50, jitter = 20 }\ntoxicity = 0.5\nstream = \"upstream\"\n";
        let def = parse(text, "x.toml").unwrap();
        let t = Scenario::from_def(def)
            .map(|s| crate::Params::default().timeline(&s))
            .unwrap();
        assert_eq!(t.wire.len(), 2);
        assert_eq!(t.wire[0].fault, WireFault::Refused);
        assert_eq!(
            (t.wire[0].start, t.wire[0].end, t.wire[0].latency),
            (
                Duration::from_secs(1),
                Duration::from_secs(3),
                Duration::from_millis(1)
            )
        );
        assert_eq!(
            t.wire[1].fault,
            WireFault::Toxic {
                toxic: ToxicKind::Latency {
                    latency_ms: 50,
                    jitter_ms: 20
                },
                stream: Direction::Upstream,
                toxicity: 0.5
            }
        );
        assert_eq!(t.phase_name(Duration::from_secs(2)), "refused");
        assert_eq!(t.phase_name(Duration::from_millis(4500)), "latency");
        assert_eq!(t.phase_name(Duration::from_secs(6)), "normal");
        assert_eq!(
            t.incident(),
            Some((Duration::from_secs(1), Duration::from_secs(5)))
        );
        let phase = |body: &str| format!("{MINIMAL}\n[[timeline]]\n{body}\n");
        let e = err(&phase("phase = \"toxic\"\nstart_s = 1\nend_s = 2"));
        assert!(
            e.message.contains("expected toxic, a Toxiproxy toxic type"),
            "{e}"
        );
        let e = err(&phase(
            "phase = \"toxic\"\nstart_s = 1\nend_s = 2\ntoxic = \"lag\"",
        ));
        assert!(e.message.contains("\"lag\" is not a toxic type"), "{e}");
        let e = err(&phase(
            "phase = \"toxic\"\nstart_s = 1\nend_s = 2\ntoxic = \"timeout\"\nattributes = { latency = 1 }",
        ));
        assert!(e.message.contains("attributes.latency"), "{e}");
        let e = err(&phase(
            "phase = \"toxic\"\nstart_s = 1\nend_s = 2\ntoxic = \"timeout\"\ntoxicity = 2",
        ));
        assert!(
            e.message.contains("toxicity = 2: expected a probability"),
            "{e}"
        );
        let e = err(&phase(
            "phase = \"down\"\nstart_s = 1\nend_s = 2\ntoxicity = 1",
        ));
        assert!(
            e.message.contains("toxicity is only for a toxic phase"),
            "{e}"
        );
    }

    #[test]
    fn phases_are_checked() {
        let phase = |body: &str| format!("{MINIMAL}\n[[timeline]]\n{body}\n");
        let e = err(&phase("phase = \"freeze\"\nstart_s = 5\nend_s = 4"));
        assert_eq!(e.line(), Some(5), "{e}");
        assert!(e.message.contains("start_s < end_s"), "{e}");
        let e = err(&phase("phase = \"degraded\"\nstart_s = 1.0\nend_s = 2.0"));
        assert!(e.message.contains("expected capacity_factor"), "{e}");
        let e = err(&format!(
            "{MINIMAL}[[timeline]]\nphase = \"freeze\"\nstart_s = 1.0\nend_s = 2.0\n\
             [[timeline]]\nphase = \"freeze\"\nstart_s = 3.0\nend_s = 4.0\n"
        ));
        assert_eq!(e.line(), Some(8), "{e}");
        assert!(e.message.contains("at most one freeze"), "{e}");
        let e = err(&phase("phase = \"melt\"\nstart_s = 1.0\nend_s = 2.0"));
        assert!(e.message.contains("melt"), "{e}");
        let e = err(&phase(
            "phase = \"down\"\nstart_s = 1.0\nend_s = 2.0\nstatus = 200",
        ));
        assert!(e.message.contains("400 to 599"), "{e}");
        let e = err(&phase(
            "phase = \"freeze\"\nstart_s = 1.0\nend_s = 2.0\nlatency_ms = 26",
        ));
        assert!(
            e.message
                .contains("latency_ms is only for a down or a refused phase"),
            "{e}"
        );
        let e = err(&phase(
            "phase = \"down\"\nstart_s = 1.0\nend_s = 2.0\nlatency_ms = 600001",
        ));
        assert!(e.message.contains("latency_ms = 600001: expected"), "{e}");
        let ok = parse(
            &phase("phase = \"down\"\nstart_s = 0\nend_s = 0.7\nlatency_ms = 26"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(
            ok.phases[0].phase,
            PhaseKind::Down {
                status: 503,
                latency_ms: 26
            }
        );
        let e = err(&format!(
            "{MINIMAL}[[timeline]]\nphase = \"down\"\nstart_s = 1.0\nend_s = 3.0\n\
             [[timeline]]\nphase = \"freeze\"\nstart_s = 2.0\nend_s = 4.0\n"
        ));
        assert_eq!(e.line(), Some(8), "{e}");
        assert!(e.message.contains("not overlapping"), "{e}");
    }

    #[test]
    fn a_rate_limited_phase_parses_with_its_defaults_and_reaches_the_timeline() {
        use std::time::Duration;
        let text = format!(
            "{MINIMAL}[[timeline]]\nphase = \"rate_limited\"\nstart_s = 1\nend_s = 9\n\
             calls = 24\nwindow_ms = 300\n\
             [[timeline]]\nphase = \"rate_limited\"\nstart_s = 9\nend_s = 10\n\
             calls = 2\nwindow_ms = 100\ncount_rejected = false\nretry_after_ms = 250\n"
        );
        let def = parse(&text, "x.toml").unwrap();
        assert_eq!(
            def.phases[0].phase,
            PhaseKind::RateLimited {
                calls: 24,
                window_ms: 300,
                count_rejected: true,
                retry_after_ms: None
            }
        );
        assert_eq!(
            def.phases[1].phase,
            PhaseKind::RateLimited {
                calls: 2,
                window_ms: 100,
                count_rejected: false,
                retry_after_ms: Some(250)
            }
        );
        assert!(def.check().is_ok());
        let scenario = Scenario::from_def(def).unwrap();
        let t = Params::default().timeline(&scenario);
        assert_eq!(t.rate_limited.len(), 2);
        let r = t.rate_limited[1];
        assert_eq!(
            (
                r.start,
                r.end,
                r.calls,
                r.window,
                r.count_rejected,
                r.retry_after
            ),
            (
                Duration::from_secs(9),
                Duration::from_secs(10),
                2,
                Duration::from_millis(100),
                false,
                Some(Duration::from_millis(250))
            )
        );
    }

    #[test]
    fn the_ratelimit_example_parses_with_the_seed_limit() {
        let def = parse(
            include_str!("../../examples/ratelimit.toml"),
            "examples/ratelimit.toml",
        )
        .unwrap();
        assert_eq!(
            def.phases[0].phase,
            PhaseKind::RateLimited {
                calls: 24,
                window_ms: 300,
                count_rejected: true,
                retry_after_ms: None
            }
        );
        assert!(def.check().is_ok());
    }

    #[test]
    fn a_rate_limited_phase_names_its_bad_keys() {
        let rl = |extra: &str| {
            format!(
                "{MINIMAL}[[timeline]]\nphase = \"rate_limited\"\nstart_s = 1\nend_s = 2\n{extra}"
            )
        };
        let e = err(&rl("window_ms = 300\n"));
        assert!(e.message.contains("calls = None: expected calls"), "{e}");
        let e = err(&rl("calls = 0\nwindow_ms = 300\n"));
        assert!(e.message.contains("at least 1"), "{e}");
        let e = err(&rl("calls = 24\n"));
        assert!(e.message.contains("expected window_ms"), "{e}");
        let e = err(&rl(
            "calls = 24\nwindow_ms = 300\nretry_after_ms = 3600001\n",
        ));
        assert!(e.message.contains("retry_after_ms = 3600001"), "{e}");
        let e = err(&format!(
            "{MINIMAL}[[timeline]]\nphase = \"down\"\nstart_s = 1\nend_s = 2\ncalls = 3\n"
        ));
        assert!(
            e.message.contains("calls is only for a rate_limited phase"),
            "{e}"
        );
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
    fn handles_compare_by_name_and_find_their_data() {
        assert_eq!(
            Scenario::builtins()[..2],
            [Scenario::e03a(), Scenario::e03b()]
        );
        assert_eq!(Scenario::e03b().title(), "E03-B outage");
        // `all` is the E03 experiment, not the whole catalogue (herd alone is 1000 clients).
        assert_eq!(
            Scenario::parse_list("all").unwrap(),
            [Scenario::e03a(), Scenario::e03b()]
        );
        assert_eq!(Scenario::parse_list("E03-B").unwrap(), [Scenario::e03b()]);
        let json = serde_json::to_string(&Scenario::e03a()).unwrap();
        assert_eq!(json, "\"e03a\"");
        assert_eq!(
            serde_json::from_str::<Scenario>(&json).unwrap(),
            Scenario::e03a()
        );
        assert!(serde_json::from_str::<Scenario>("\"nope\"").is_err());
    }

    #[test]
    fn a_user_scenario_is_a_value_not_an_entry_in_a_process_table() {
        let mine = parse(&MINIMAL.replace("mine", "reg-test"), "x.toml").unwrap();
        let s = Scenario::from_def(mine.clone()).unwrap();
        assert_eq!(s.def(), &mine);
        assert_eq!(Scenario::from_def(mine).unwrap(), s);
        // Making it left nothing behind: its name alone means nothing to this process.
        assert!(Scenario::named("reg-test").is_none());
        assert!(Scenario::parse_list("reg-test").is_err());
        assert!(serde_json::from_str::<Scenario>("\"reg-test\"").is_err());
        // A file cannot take a built-in name, unless it is that built-in scenario.
        let fake = parse(&MINIMAL.replace("mine", "e03b"), "x.toml").unwrap();
        let e = Scenario::from_def(fake).unwrap_err();
        assert!(e.message.contains("taken by a built-in scenario"), "{e}");
        let same = parse(BUILTIN_FILES[1].1, "copy.toml").unwrap();
        assert_eq!(Scenario::from_def(same).unwrap(), Scenario::e03b());
    }

    #[test]
    fn a_users_policies_travel_with_the_scenario() {
        let policies = crate::strategy_table::parse_policy_file(
            "[[strategy]]\nid = \"mine\"\nmax_attempts = 2\nbackoff = \"none\"\n",
            "p.toml",
        )
        .unwrap();
        let text = format!("{MINIMAL}[policy]\nstrategies = \"A,mine\"\n");
        let e = parse(&text, "x.toml").unwrap_err();
        assert!(e.message.contains("\"mine\" is not one"), "{e}");
        let def = parse_with(&text, "x.toml", &policies).unwrap();
        assert_eq!(def.policies, policies);
        let s = Scenario::from_def(def).unwrap();
        let p = Params::for_scenario(&s, &BTreeMap::new()).unwrap();
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["A", "mine"]);
        assert_eq!(p.strategies()[1].max_attempts, Some(2));
        // Sent as JSON (a plan, a start call), the definition keeps them.
        let back: ScenarioDef =
            serde_json::from_str(&serde_json::to_string(s.def()).unwrap()).unwrap();
        assert_eq!(back.policies, policies);
        back.check().unwrap();
        // A built-in scenario run with the file may name them too, under its own name.
        let raw = BTreeMap::from([("E03_STRATEGIES".to_string(), "mine".to_string())]);
        assert!(Params::for_scenario(&Scenario::e03b(), &raw).is_err());
        let b = Scenario::e03b().with_policies(&policies);
        assert_eq!(b, Scenario::e03b());
        assert_eq!(
            Params::for_scenario(&b, &raw).unwrap().strategies()[0].id,
            "mine"
        );
    }

    #[test]
    fn parsed_definitions_pass_the_wire_check_and_bad_ones_do_not() {
        for def in builtins() {
            def.check().unwrap();
        }
        let mut bad = builtin("e03b").unwrap();
        bad.phases.swap(0, 1);
        assert!(bad.check().unwrap_err().contains("invalid phase"));
        let mut bad = builtin("e03b").unwrap();
        bad.name = "../x".into();
        assert!(bad.check().is_err());
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
        use crate::ledger::KeyPolicy;
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

    #[test]
    fn a_down_phase_of_one_replica_is_that_replica_s_alone() {
        let file = |topology: &str, phases: &str| {
            format!("name = \"r\"\ntitle = \"t\"\ndescription = \"d\"\n{topology}\n{phases}")
        };
        let two = "[topology]\nreplicas = 2";
        // Replica 0 down from 1 s to 3 s, replica 1 from 2 s to 4 s: they may overlap.
        let phases = "[[timeline]]\nphase = \"down\"\nreplica = 0\nstart_s = 1\nend_s = 3\n\
                      [[timeline]]\nphase = \"down\"\nreplica = 1\nstart_s = 2\nend_s = 4\n";
        let def = parse(&file(two, phases), "r.toml").unwrap();
        assert_eq!(def.settings["E03_REPLICAS"], "2");
        let s = Scenario::from_def(def).unwrap();
        let p = Params::for_scenario(&s, &BTreeMap::new()).unwrap();
        assert_eq!(p.replicas(), 2);
        let down = |r| {
            p.timeline_of(&s, r)
                .down
                .iter()
                .map(|w| (w.start.as_secs(), w.end.as_secs()))
                .collect::<Vec<_>>()
        };
        assert_eq!((down(0), down(1)), (vec![(1, 3)], vec![(2, 4)]));
        // A degraded phase of one replica: that replica's slowness alone.
        let slow = "[[timeline]]\nphase = \"degraded\"\nreplica = 1\nstart_s = 1\nend_s = 3\n\
                    capacity_factor = 0.5\n";
        let slow = Scenario::from_def(parse(&file(two, slow), "r.toml").unwrap()).unwrap();
        let sp = Params::for_scenario(&slow, &BTreeMap::new()).unwrap();
        assert!(sp.timeline_of(&slow, 0).degraded.is_none());
        let d = sp.timeline_of(&slow, 1).degraded.unwrap();
        assert_eq!((d.start.as_secs(), d.capacity_factor), (1, 0.5));
        // Not on one replica, nor on a replica the topology does not have, nor on another kind.
        let own = "[[timeline]]\nphase = \"down\"\nreplica = 0\nstart_s = 1\nend_s = 3\n\
                   [[timeline]]\nphase = \"down\"\nstart_s = 2\nend_s = 4\n";
        let e = parse(&file(two, own), "r.toml").unwrap_err();
        assert!(e.message.contains("before the previous phase ends"), "{e}");
        let third = "[[timeline]]\nphase = \"down\"\nreplica = 2\nstart_s = 1\nend_s = 3\n";
        let e = parse(&file(two, third), "r.toml").unwrap_err();
        assert!(
            e.to_string().contains(
                "r.toml:6: [[timeline]] Down phase: replica = 2: expected a replica of \
                 [topology] replicas = 2, from 0 to 1"
            ),
            "{e}"
        );
        let freeze = "[[timeline]]\nphase = \"freeze\"\nreplica = 1\nstart_s = 1\nend_s = 3\n";
        let e = parse(&file(two, freeze), "r.toml").unwrap_err();
        assert!(
            e.message
                .contains("replica is only for a down or a degraded phase"),
            "{e}"
        );
        let e = parse(&file("[topology]\nbalancer = \"random\"", ""), "r.toml").unwrap_err();
        assert!(
            e.to_string().contains("E03_BALANCER") || e.to_string().contains("balancer"),
            "{e}"
        );
    }
}
