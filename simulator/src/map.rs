//! The phase map: every strategy of a scenario at several offered loads (shares of the
//! dependency's capacity) and trigger sizes (freeze lengths), over several seeds, each run on
//! the virtual clock and judged by the recovery verdict of [`e03_metrics::openloop`].
//!
//! A cell's run is the scenario with three parameters changed: `E03_RATE` (load x capacity),
//! the freeze's end (`E03_FREEZE_END_S`, its start kept, no degraded window after it) and the
//! run's length (`E03_DURATION_S`: the freeze's end plus the horizon). Runs are independent
//! jobs spread over the machine's cores by [`crate::par_map`].

use std::collections::BTreeMap;

use e03_core::{ParamError, Params, Scenario};
use e03_metrics::openloop::{MapCell, PhaseMap};

use crate::run::{par_map, simulate_run};

/// What to map.
#[derive(Debug, Clone)]
pub struct MapSpec {
    pub scenario: Scenario,
    /// The user's parameters (env name to value), seeds and strategies among them.
    pub raw: BTreeMap<String, String>,
    /// Offered loads, shares of capacity, each in (0, 4].
    pub loads: Vec<f64>,
    /// Freeze lengths, seconds.
    pub triggers_s: Vec<f64>,
    /// Seconds observed after the trigger's end.
    pub horizon_s: f64,
}

impl MapSpec {
    /// The parameters of the cell at `load` and `trigger_s`.
    pub fn cell_params(&self, load: f64, trigger_s: f64) -> Result<Params, ParamError> {
        let base = Params::for_scenario(&self.scenario, &self.raw)?;
        let start = base.service().freeze_start_s;
        let capacity = base.service().workers as f64 / (base.service().service_ms / 1000.0);
        let end = start + trigger_s;
        // Typed edits, checked by the same rules as the values a user types.
        base.edited(|service, swarm| {
            swarm.workload = "open_loop".into();
            swarm.rate = load * capacity;
            service.freeze_end_s = end;
            service.recovery_end_s = end;
            swarm.duration_s = end + self.horizon_s;
        })
    }
}

/// Computes the map: every strategy x load x trigger x seed, in parallel.
pub fn phase_map(spec: &MapSpec) -> Result<PhaseMap, String> {
    let base = Params::for_scenario(&spec.scenario, &spec.raw).map_err(|e| e.to_string())?;
    if spec
        .scenario
        .def()
        .phases
        .iter()
        .all(|p| !matches!(p.phase, e03_core::timeline::PhaseKind::Freeze))
    {
        return Err(format!(
            "scenario {} has no freeze phase: the map varies the freeze's length",
            spec.scenario.name()
        ));
    }
    let mut cells_params = Vec::new();
    for &load in &spec.loads {
        for &t in &spec.triggers_s {
            let p = spec
                .cell_params(load, t)
                .map_err(|e| format!("the cell at load {load} and freeze {t} s: {e}"))?;
            cells_params.push((load, t, p));
        }
    }
    let seeds = base.seeds().to_vec();
    let mut jobs = Vec::new();
    for (s, strategy) in base.strategies().iter().enumerate() {
        for (c, _) in cells_params.iter().enumerate() {
            for &seed in &seeds {
                jobs.push((s, strategy.id.clone(), c, seed));
            }
        }
    }
    let results = par_map(&jobs, |(_, id, c, seed)| {
        let (_, _, p) = &cells_params[*c];
        let strategy = p.strategy(id).expect("the cell runs the map's strategies");
        simulate_run(spec.scenario.clone(), p, strategy, *seed)
            .open_loop
            .and_then(|o| o.recovery_s)
    });
    let mut cells = Vec::new();
    for (job, chunk) in jobs.chunks(seeds.len()).zip(results.chunks(seeds.len())) {
        let (_, id, c, _) = &job[0];
        let (load, t, _) = &cells_params[*c];
        cells.push(MapCell {
            strategy: id.clone(),
            load: *load,
            trigger_s: *t,
            recovery_s: chunk.to_vec(),
        });
    }
    Ok(PhaseMap {
        scenario: spec.scenario.name().to_string(),
        title: spec.scenario.title().to_string(),
        strategies: base
            .strategies()
            .iter()
            .map(|s| (s.id.clone(), format!("{} {}", s.id, s.name)))
            .collect(),
        loads: spec.loads.clone(),
        triggers_s: spec.triggers_s.clone(),
        seeds,
        horizon_s: spec.horizon_s,
        capacity_per_s: base.service().workers as f64 / (base.service().service_ms / 1000.0),
        max_attempts: base.swarm().max_attempts,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_map_finds_both_sides_and_budgets_move_the_boundary() {
        let scenario = Scenario::parse_list("metastable").unwrap()[0].clone();
        let raw = [("E03_STRATEGIES", "A,D"), ("E03_SEEDS", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let spec = MapSpec {
            scenario,
            raw,
            loads: vec![0.2, 0.8],
            triggers_s: vec![3.0],
            horizon_s: 30.0,
        };
        let p = spec.cell_params(0.8, 3.0).unwrap();
        assert_eq!(p.swarm().rate, 200.0);
        assert_eq!(p.service().freeze_end_s, 13.0);
        assert_eq!(p.swarm().duration_s, 43.0);
        let map = phase_map(&spec).unwrap();
        assert_eq!(map.cells.len(), 4);
        let a_low = map.cell("A", 0, 0).unwrap();
        let a_high = map.cell("A", 1, 0).unwrap();
        let d_high = map.cell("D", 1, 0).unwrap();
        assert_eq!(a_low.recovered(), 1, "{a_low:?}");
        assert_eq!(a_high.recovered(), 0, "{a_high:?}");
        assert_eq!(
            d_high.recovered(),
            1,
            "the token bucket stops the storm: {d_high:?}"
        );
    }
}
