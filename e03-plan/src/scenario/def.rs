//! A scenario, validated: [`ScenarioDef`], the plain value the drivers use and send to each
//! other as JSON; the bounds its phases keep; and the check of a definition that did not come
//! from a file (a control call's), which holds it to what a file's validation accepts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checks::CheckSpec;
use crate::names::valid_name;
use crate::params::Params;
use crate::strategy_table::StrategySpec;
use crate::thresholds::ThresholdSpec;
use e03_model::chain::ChainDef;
use e03_model::spec_error::SpecError;
use e03_model::timeline::{PhaseKind, PhaseWindow};

/// Longest accepted phase edge, in seconds (one day, as for the E03 time parameters).
pub(super) const MAX_TIME_S: f64 = 86_400.0;

/// Longest error latency of a `down` phase, in ms (ten minutes).
pub(super) const MAX_DOWN_LATENCY_MS: u64 = 600_000;
/// Longest sliding window of a `rate_limited` phase: one hour.
pub(super) const MAX_RATE_WINDOW_MS: u64 = 3_600_000;
/// Longest fixed `Retry-After` of a `rate_limited` phase: one hour (the swarm honours no more).
pub(super) const MAX_RETRY_AFTER_MS: u64 = 3_600_000;

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
    /// The file's bounds for a team's CI (`[[threshold]]` tables, [`crate::thresholds`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdSpec>,
    /// The file's chains of services (`[chain]`, see [`e03_model::chain`]): such a scenario runs
    /// its chain variants, not the strategies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainDef>,
}

/// The order in which a scenario's ids find the strategies besides A to F and the presets: the
/// user's policy file's, then the file's own tables.
pub(super) fn own_strategies(
    policies: &[StrategySpec],
    strategies: &[StrategySpec],
) -> Vec<StrategySpec> {
    policies.iter().chain(strategies).cloned().collect()
}

impl ScenarioDef {
    /// The strategies its ids may name besides A to F and the presets: the user's policy file's
    /// ([`ScenarioDef::policies`]), then its own tables.
    pub fn own_strategies(&self) -> Vec<StrategySpec> {
        own_strategies(&self.policies, &self.strategies)
    }

    /// Checks a definition that did not come from [`crate::scenario::parse`] (a control call): a path-safe name
    /// and phases that it would have accepted.
    pub fn check(&self) -> Result<(), SpecError> {
        if !valid_name(&self.name) {
            return Err(SpecError::rule(
                "name",
                format!("invalid scenario name {:?}", self.name),
            ));
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
                PhaseKind::Http { ref rule } => (0.0..=100.0).contains(&rule.percent),
            };
            if !ok || !kind_ok {
                return Err(SpecError::rule(
                    "phases",
                    format!(
                        "scenario {:?}: invalid phase {p:?}: expected phases in time order \
                         within a day, at most one freeze and one degraded",
                        self.name
                    ),
                ));
            }
        }
        Params::from_raw_with(&self.settings, &self.own_strategies())
            .map(|_| ())
            .map_err(|e| SpecError::Settings {
                scenario: self.name.clone(),
                message: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{builtin, builtins};

    #[test]
    fn parsed_definitions_pass_the_wire_check_and_bad_ones_do_not() {
        for def in builtins() {
            def.check().unwrap();
        }
        let mut bad = builtin("e03b").unwrap();
        bad.phases.swap(0, 1);
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("invalid phase"));
        let mut bad = builtin("e03b").unwrap();
        bad.name = "../x".into();
        assert!(bad.check().is_err());
    }
}
