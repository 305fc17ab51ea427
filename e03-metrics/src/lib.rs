//! The lab's metrics as pure computation: no files, no network, no plotting, no command line.
//!
//! Map of the modules, bottom-up: each reads only modules listed before it (and the
//! [`ScenarioSummary`] of this file), so the crate's files form no circle of imports.
//!
//! Leaves, which read nothing of the crate:
//!
//! - `quantiles`: the window widths, the cap on times and the HDR histogram with its quantile
//!   read in ms, which the accumulator and every figure module read.
//! - `records`: the plain records a run's figures are made of (a class's tally, the attempt
//!   log's lines and how each ended, the unanswered attempts by class, the breaker's and the
//!   balancer's changes), re-exported from [`metrics`].
//! - `peaks`: the busiest window of arrivals per width, counted as they come for the checks.
//! - `table`: the one [`tables::Table`] renderer, and [`tables::Spread`] over seeds with its
//!   [`tables::Verdict`]; every table builder reads it.
//! - `matching`: the fixed-size sketch (an invertible Bloom lookup table) that compares the
//!   client's and the server's identities without keeping them.
//! - [`wire`]: a wire fault's figures: timeouts only the network caused, work done twice.
//! - [`statuses`]: the answers the clients received per HTTP status, and their table.
//!
//! The figure modules, each a tally the accumulator feeds, its figures, and (for some) its
//! table:
//!
//! - [`fidelity`]: live-only figures: send lateness, queueing outside the model, throughput
//!   while saturated, and client/server identity matching.
//! - [`openloop`]: the open loop's figures (offered, dropped, late starts, wasted work,
//!   amplification over time) and the recovery verdict (recovered in N s, or metastable).
//! - [`ledger`]: the retry-logic article's figures: duplicate charges, lost responses retried, permanent errors.
//! - [`steps`]: the step workload's figures (the rate-limit article): who pays for a retry.
//! - [`fanout`]: the fan-out workload's requests, their success and their tail.
//! - [`dependencies`]: each dependency's operations over a partition.
//! - [`shards`]: each shard's figures, for a live run split over swarm processes.
//!
//! The accumulator:
//!
//! - [`metrics`]: [`RunAccumulator`], the per-run accumulator of spec section 6, and
//!   [`RunMetrics`], its result.
//! - [`facts`]: its one door, [`RunAccumulator::take`], and the [`facts::Fact`]s it takes, one
//!   at a time, from the analyzer's log reader ([`feed`]) or from the simulator.
//!
//! What reads a run's figures:
//!
//! - [`trust`]: how far a scenario's figures can be trusted (whole, incomplete, unmatched), and
//!   the banner of an untrusted one; every reader below that judges asks it first.
//! - [`checks`]: a scenario's `[[check]]` tables evaluated on its runs (ours beside the published
//!   figure, PASS or FAIL), and the per-caller attempt log of a small run.
//! - [`stats`]: the figures of a run as a list of named accessors with their units.
//! - [`chain`]: the figures of a chain run: calls per layer, wasted work, its checks.
//! - `measures`: the four measures the comparison tables and the conclusion both read, and a
//!   strategy's spread of one over its seeds.
//! - `live_tables`: live runs only: the fidelity table and lines, matching, shards.
//! - `conclusion`: the plain-language conclusion under the comparison.
//!
//! The top:
//!
//! - [`tables`]: the comparison tables (one row per strategy, the series around the outage, the
//!   seed-to-seed verdicts), the hedge and class tables, and [`print_tables`], which prints every
//!   table of the lab and the plain-language conclusion under them; printers take any
//!   `W: Write`. It re-exports the renderer, spreads and verdicts (`table`), the conclusion and
//!   the live tables at their old paths.
//!
//! [`ScenarioSummary`] is everything measured for one scenario, live or simulated.

use std::collections::BTreeMap;

use serde::Serialize;

use e03_model::events::Event;
use e03_plan::{Params, Scenario};

pub mod chain;
pub mod checks;
mod conclusion;
pub mod dependencies;
pub mod facts;
pub mod fanout;
pub mod fidelity;
pub mod ledger;
mod live_tables;
mod matching;
mod measures;
pub mod metrics;
pub mod openloop;
mod peaks;
mod quantiles;
mod records;
pub mod shards;
pub mod stats;
pub mod statuses;
pub mod steps;
mod table;
pub mod tables;
#[cfg(test)]
mod test_summaries;
pub mod thresholds;
pub mod trust;
pub mod wire;

pub use metrics::{RunAccumulator, RunMetrics};
pub use tables::print_tables;

/// Everything measured for one scenario: one [`RunMetrics`] per strategy and seed.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioSummary {
    pub scenario: Scenario,
    pub params: Params,
    /// True when the figures come from the simulator, not from live traffic.
    pub simulated: bool,
    /// False if any run was stopped early or its logs are cut.
    pub complete: bool,
    pub runs: Vec<RunMetrics>,
    /// A live run's model: what its `live_model` checks are judged against (see
    /// [`checks::failure_latency_us`]); `None` for a simulated run or without such checks.
    pub model: Option<ModelRun>,
    /// A live run's machine floor ([`fidelity::MachineFloor`]), shown beside its lateness;
    /// `None` for a simulated run, or a live one without `machine.json` (a compose run).
    pub machine: Option<fidelity::MachineFloor>,
}

/// The model a live run is checked against: the same scenario, seeds and strategies simulated
/// with every down phase answering after the failure latency the live run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRun {
    /// The median failure latency measured live, in µs.
    pub failure_latency_us: u64,
    /// How many failed attempts it is the median of.
    pub failures: usize,
    /// The simulated runs, one per strategy and seed.
    pub runs: Vec<RunMetrics>,
}

/// What a live run's `live_model` checks are judged against, computed from its summary:
/// the simulator's `simulator::model_run` in the lab. The analyzer reads logs
/// only and takes this as a value from its caller, so it depends on no model; a caller that
/// judges no `live_model` check may pass [`no_model`].
pub type ModelOf = fn(&ScenarioSummary) -> Option<ModelRun>;

/// A [`ModelOf`] that runs no model: `live_model` checks then say "no model run".
pub fn no_model(_: &ScenarioSummary) -> Option<ModelRun> {
    None
}

impl ScenarioSummary {
    /// Strategy ids in the order of the runs.
    pub fn strategies(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for r in &self.runs {
            if !seen.contains(&r.strategy) {
                seen.push(r.strategy.clone());
            }
        }
        seen
    }

    /// Seeds in the order of the runs.
    pub fn seeds(&self) -> Vec<u64> {
        let mut seen: Vec<u64> = Vec::new();
        for r in &self.runs {
            if !seen.contains(&r.seed) {
                seen.push(r.seed);
            }
        }
        seen
    }

    /// The runs of one strategy, in seed order.
    pub fn runs_of<'a>(&'a self, strategy: &str) -> impl Iterator<Item = &'a RunMetrics> + 'a {
        let strategy = strategy.to_string();
        self.runs.iter().filter(move |r| r.strategy == strategy)
    }

    /// The human name of a strategy ("backoff + full jitter"), from the parameters' strategy
    /// table; None for an id it does not know (a server log read alone).
    pub fn strategy_name(&self, id: &str) -> Option<&str> {
        self.params
            .strategies()
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.name.as_str())
    }

    /// The id followed by its name: "C backoff + full jitter" (the id alone if unknown).
    pub fn strategy_label(&self, id: &str) -> String {
        match self.strategy_name(id) {
            Some(name) if !name.is_empty() => format!("{id} {name}"),
            _ => id.to_string(),
        }
    }
}

/// The shape of `summary.json`.
#[derive(Serialize)]
struct SummaryFile<'a> {
    scenario: Scenario,
    simulated: bool,
    complete: bool,
    /// `whole`, `incomplete` or `unmatched` ([`trust::Trust`]): whether verdicts, checks and
    /// conclusions were drawn from these figures.
    trust: trust::Trust,
    params: BTreeMap<String, String>,
    runs: &'a [RunMetrics],
    /// The scenario's thresholds on these figures (none when the run is not judged).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    thresholds: Vec<thresholds::ThresholdRow>,
}

/// The `summary.json` text of a scenario (spec section 8): every field of spec section 6 per
/// run plus `complete`, `fidelity` and `matched` (null for the simulator).
pub fn summary_json(s: &ScenarioSummary) -> String {
    let file = SummaryFile {
        scenario: s.scenario.clone(),
        simulated: s.simulated,
        complete: s.complete,
        trust: trust::Trust::of(s),
        params: s.params.to_raw(),
        runs: &s.runs,
        thresholds: thresholds::evaluate(s),
    };
    serde_json::to_string_pretty(&file).expect("summaries always serialise") + "\n"
}

/// Hands one log record to an accumulator, as the fact it tells ([`facts::Fact::of`]).
pub fn feed(acc: &mut RunAccumulator, event: &Event) {
    if let Some(fact) = facts::Fact::of(event) {
        acc.take(fact);
    }
}
