//! The model a live run is judged against: its `live_model` checks compare a live figure with
//! the same scenario simulated at the failure latency the live run measured. The analyzer reads
//! the logs and takes this function as a value ([`e03_metrics::ModelOf`]), so it depends on no
//! simulator; `lab run`, `lab analyze` and `lab simulate --compare` pass [`model_run`].

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
