//! A live run beside the model: the one place that says which simulation a live run is
//! compared with. Every command that compares goes through it: `lab run` (the `live_model`
//! checks, and the step workload's table), `lab analyze` (the checks), `lab compare` (every
//! figure's mean side by side) and `lab map --verify` (each boundary cell's verdict).
//!
//! The model of a live run is read from its logs, not from the command that started it: the
//! scenario, the typed parameters its `run_start` recorded, its strategies and seeds, simulated
//! ([`Beside::of`]). The `live_model` checks take the same run with every down phase answering
//! after the failure latency the live run measured ([`model_run`]). The analyzer reads the logs
//! and takes [`model_run`] as a value ([`e03_metrics::ModelOf`]), so it depends on no simulator;
//! this crate depends on the analyzer's figures, so it is where both sides meet.

use std::io::Write;

use e03_metrics::openloop::OpenLoopMetrics;
use e03_metrics::steps::{heavy_ordering, step_comparison};
use e03_metrics::tables::Table;
use e03_metrics::{ModelRun, ScenarioSummary};

/// The failure latency measured in `live`'s logs ([`e03_metrics::checks::failure_latency_us`]),
/// then the same scenario, seeds and strategies simulated with every down phase answering after
/// it. `None` when the scenario has no `live_model` check, or no run kept an attempt log with a
/// failed attempt (the checks then say "no model run").
pub fn model_run(live: &ScenarioSummary) -> Option<ModelRun> {
    if !e03_metrics::checks::needs_model(live) {
        return None;
    }
    // A timeline with no down or refused phase has no failure latency to measure: its model
    // runs as written.
    let measures = live.params.timeline(&live.scenario).has_failure_phase();
    let (latency_us, failures) = match e03_metrics::checks::failure_latency_us(live) {
        Some(measured) => measured,
        None if !measures => (0, 0),
        None => return None,
    };
    let params = if measures {
        live.params
            .clone()
            .with_down_latency(std::time::Duration::from_micros(latency_us))
    } else {
        live.params.clone()
    };
    Some(ModelRun {
        failure_latency_us: latency_us,
        failures,
        runs: crate::run::simulate_all(live.scenario.clone(), &params),
    })
}

/// A live run and its model: the same scenario, parameters, strategies and seeds simulated.
pub struct Beside<'a> {
    /// The live run's figures, from its logs.
    pub live: &'a ScenarioSummary,
    /// The model's figures for the same runs.
    pub model: ScenarioSummary,
}

/// The step workload's comparison (the rate-limit article): batch calls and 429s per load and
/// policy, and the heavy-load ordering on each side.
pub struct StepsBeside {
    /// Live, simulated and their relative difference per load and policy, each within the band
    /// or not ([`e03_metrics::steps::step_comparison`]).
    pub table: Table,
    /// The heavy-load ordering's statements, each true or not, live then simulated (`None`
    /// when either side lacks a policy of the three).
    pub ordering: Option<(Ordering, Ordering)>,
}

/// The heavy-load ordering's statements of one side, each with whether it holds
/// ([`e03_metrics::steps::heavy_ordering`]).
pub type Ordering = Vec<(String, bool)>;

/// One run's open-loop figures on both sides (`lab map --verify`).
pub struct OpenLoopBeside {
    /// The strategy's id.
    pub strategy: String,
    /// The run's seed.
    pub seed: u64,
    /// The model's open-loop figures (`None` when the run has none).
    pub model: Option<OpenLoopMetrics>,
    /// The live run's open-loop figures.
    pub live: Option<OpenLoopMetrics>,
}

impl<'a> Beside<'a> {
    /// The model of `live`: its scenario and the parameters its logs recorded (strategies and
    /// seeds included), simulated.
    pub fn of(live: &'a ScenarioSummary) -> Self {
        Beside {
            live,
            model: crate::run::simulate(live.scenario.clone(), &live.params),
        }
    }

    /// Every figure's mean over the seeds, per strategy, live beside simulated with their
    /// difference ([`crate::compare::print_comparison`]).
    pub fn print_means<W: Write>(&self, w: &mut W) -> std::io::Result<()> {
        crate::compare::print_comparison(w, self.live, &self.model)
    }

    /// The step workload's table, relative differences within `band` or not, and the
    /// heavy-load ordering on both sides.
    pub fn steps(&self, band: f64) -> StepsBeside {
        StepsBeside {
            table: step_comparison(self.live, &self.model, band),
            ordering: heavy_ordering(self.live).zip(heavy_ordering(&self.model)),
        }
    }

    /// Each live run's open-loop figures beside its model's, in the live runs' order.
    pub fn open_loop(&self) -> Vec<OpenLoopBeside> {
        self.live
            .runs
            .iter()
            .map(|l| OpenLoopBeside {
                strategy: l.strategy.clone(),
                seed: l.seed,
                model: self
                    .model
                    .runs
                    .iter()
                    .find(|m| m.strategy == l.strategy && m.seed == l.seed)
                    .and_then(|m| m.open_loop.clone()),
                live: l.open_loop.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_plan::{Params, Scenario};

    /// The parameters of `scenario` with these settings.
    fn params(scenario: &Scenario, pairs: &[(&str, &str)]) -> Params {
        let raw = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Params::for_scenario(scenario, &raw).unwrap()
    }

    /// A "live" summary that is a simulation itself: its model is itself, run for run.
    #[test]
    fn the_model_of_a_run_is_the_runs_logged_parameters_simulated() {
        let p = params(
            &Scenario::e03b(),
            &[("E03_STRATEGIES", "A,C"), ("E03_SEEDS", "3,4")],
        );
        let mut live = crate::run::simulate(Scenario::e03b(), &p);
        live.simulated = false;
        let beside = Beside::of(&live);
        assert_eq!(beside.model.runs.len(), 4);
        for (l, m) in live.runs.iter().zip(&beside.model.runs) {
            assert_eq!((&l.strategy, l.seed), (&m.strategy, m.seed));
            assert_eq!(l.total_requests, m.total_requests);
            assert_eq!(l.peak_100ms, m.peak_100ms);
        }
        // The means side by side differ nowhere.
        let mut out = Vec::new();
        beside.print_means(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let total = text
            .lines()
            .find(|l| l.starts_with("| total_requests"))
            .unwrap();
        assert!(total.trim_end().ends_with(" 0.0% |"), "{total}");
        assert!(!text.contains("note:"), "{text}");
    }

    /// The model follows the live run's parameters, not anyone else's: a live run of one
    /// strategy and seed has a model of that one run, paired by strategy and seed.
    #[test]
    fn open_loop_pairs_each_live_run_with_its_own_model_run() {
        let scenario = Scenario::named("metastable").unwrap();
        let p = params(
            &scenario,
            &[
                ("E03_STRATEGIES", "C"),
                ("E03_SEEDS", "7"),
                ("E03_DURATION_S", "40"),
            ],
        );
        let mut live = crate::run::simulate(scenario.clone(), &p);
        live.simulated = false;
        let alone = crate::run::simulate_run(scenario, &p, p.strategy("C").unwrap(), 7);
        let pairs = Beside::of(&live).open_loop();
        assert_eq!(pairs.len(), 1);
        assert_eq!((pairs[0].strategy.as_str(), pairs[0].seed), ("C", 7));
        let (m, l) = (
            pairs[0].model.as_ref().unwrap(),
            pairs[0].live.as_ref().unwrap(),
        );
        assert_eq!(m.verdict_text(), l.verdict_text());
        assert_eq!(
            m.verdict_text(),
            alone.open_loop.unwrap().verdict_text(),
            "the model of one run is that run simulated"
        );
    }
}
