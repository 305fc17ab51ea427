//! The phase map: every strategy of a scenario at several offered loads (shares of the
//! dependency's capacity) and trigger sizes, over several seeds, each run on the virtual clock
//! and judged by the recovery verdict of [`e03_metrics::openloop`].
//!
//! Two kinds of trigger:
//!
//! - **a freeze** (`metastable`): a cell's run is the scenario with three parameters changed:
//!   `E03_RATE` (load x capacity), the freeze's end (`E03_FREEZE_END_S`, its start kept, no
//!   degraded window after it) and the run's length (`E03_DURATION_S`: the freeze's end plus
//!   the horizon);
//! - **a lost replica** (`failover`, a scenario without a freeze whose dependency has replicas
//!   and a down phase of one of them): the load is the survivors' share, `E03_RATE` = load x
//!   the capacity of the replicas left (one replica's times `E03_REPLICAS - 1`), the trigger is
//!   that down phase's length (its start kept), and the run lasts to its end plus the horizon.
//!   The map then shows where a lost replica becomes a metastable failure, per policy
//!   (issue "The server's side", item 5).
//!
//! Runs are independent jobs spread over the machine's cores by [`crate::run::par_map`].

use std::collections::BTreeMap;

use e03_metrics::openloop::{MapCell, PhaseMap};
use e03_model::timeline::PhaseKind;
use e03_plan::{ParamError, Params, Scenario};

use crate::run::{par_map, simulate_run};

/// What to map.
#[derive(Debug, Clone)]
pub struct MapSpec {
    pub scenario: Scenario,
    /// The user's parameters (env names), under which each cell sets its own.
    pub raw: BTreeMap<String, String>,
    /// Offered loads, shares of capacity (of the survivors', for a lost replica).
    pub loads: Vec<f64>,
    /// Trigger sizes in seconds: the freeze's length, or the lost replica's outage.
    pub triggers_s: Vec<f64>,
    /// Seconds after the trigger's end each run has to recover.
    pub horizon_s: f64,
}

/// A map that cannot be made: the parameters' error, or a scenario without a trigger to vary.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MapError {
    /// The user's parameters (env names) under the scenario.
    #[error(transparent)]
    Params(#[from] ParamError),
    /// A scenario with neither a freeze nor a down phase of one replica of several.
    #[error(
        "scenario {scenario} has no freeze phase and no down phase of one replica of several: \
         the map varies the freeze's length (like metastable) or the lost replica's outage \
         (like failover)"
    )]
    NoTrigger { scenario: String },
    /// One cell's parameters (a load or a trigger size the parameters refuse).
    #[error("the cell at load {load} and trigger {trigger_s} s: {error}")]
    Cell {
        load: f64,
        trigger_s: f64,
        error: ParamError,
    },
}

/// What a map's trigger is ([`MapSpec::trigger`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The scenario's freeze.
    Freeze,
    /// The down phase `phase` (its index in the scenario's phases) of one of `replicas`.
    LostReplica { phase: usize, replicas: u32 },
}

impl MapSpec {
    /// The scenario's trigger: its freeze, else a down phase of one replica of several; an
    /// error names what the map needs.
    pub fn trigger(&self) -> Result<Trigger, MapError> {
        let phases = &self.scenario.def().phases;
        if phases.iter().any(|p| p.phase == PhaseKind::Freeze) {
            return Ok(Trigger::Freeze);
        }
        let base = Params::for_scenario(&self.scenario, &self.raw)?;
        let lost = phases
            .iter()
            .position(|p| p.replica.is_some() && matches!(p.phase, PhaseKind::Down { .. }));
        match lost {
            Some(phase) if base.replicas() > 1 => Ok(Trigger::LostReplica {
                phase,
                replicas: base.replicas(),
            }),
            _ => Err(MapError::NoTrigger {
                scenario: self.scenario.name().to_string(),
            }),
        }
    }

    /// The parameters of the cell at `load` and trigger size `trigger_s`.
    pub fn cell_params(&self, load: f64, trigger_s: f64) -> Result<Params, ParamError> {
        Ok(self.cell(load, trigger_s)?.1)
    }

    /// The scenario and parameters of the cell at `load` and trigger size `trigger_s`.
    pub fn cell(&self, load: f64, trigger_s: f64) -> Result<(Scenario, Params), ParamError> {
        let base = Params::for_scenario(&self.scenario, &self.raw)?;
        let capacity = base.service().workers as f64 / (base.service().service_ms / 1000.0);
        match self.trigger() {
            Ok(Trigger::LostReplica { phase, replicas }) => {
                let mut phases = self.scenario.def().phases.clone();
                let p = &mut phases[phase];
                p.end_s = p.start_s + trigger_s;
                let end = p.end_s;
                let scenario =
                    self.scenario
                        .with_phases(phases)
                        .map_err(|e| ParamError::Invalid {
                            name: "--freezes".into(),
                            value: trigger_s.to_string(),
                            accepts: format!("an outage that fits the timeline ({e})"),
                        })?;
                let params = base.edited(|_, swarm| {
                    swarm.workload = "open_loop".into();
                    swarm.rate = load * capacity * f64::from(replicas - 1);
                    swarm.duration_s = end + self.horizon_s;
                })?;
                Ok((scenario, params))
            }
            _ => {
                let start = base.service().freeze_start_s;
                let end = start + trigger_s;
                let params = base.edited(|service, swarm| {
                    swarm.workload = "open_loop".into();
                    swarm.rate = load * capacity;
                    service.freeze_end_s = end;
                    service.recovery_end_s = end;
                    swarm.duration_s = end + self.horizon_s;
                })?;
                Ok((self.scenario.clone(), params))
            }
        }
    }
}

/// Simulates every cell of `spec` for every strategy and seed of its parameters.
pub fn phase_map(spec: &MapSpec) -> Result<PhaseMap, MapError> {
    let base = Params::for_scenario(&spec.scenario, &spec.raw)?;
    let trigger = spec.trigger()?;
    let mut cells_params = Vec::new();
    for &load in &spec.loads {
        for &t in &spec.triggers_s {
            let (scenario, p) = spec.cell(load, t).map_err(|error| MapError::Cell {
                load,
                trigger_s: t,
                error,
            })?;
            cells_params.push((load, t, scenario, p));
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
        let (_, _, scenario, p) = &cells_params[*c];
        let strategy = p.strategy(id).expect("the cell runs the map's strategies");
        simulate_run(scenario.clone(), p, strategy, *seed)
            .open_loop
            .and_then(|o| o.recovery_s)
    });
    let mut cells = Vec::new();
    for (job, chunk) in jobs.chunks(seeds.len()).zip(results.chunks(seeds.len())) {
        let (_, id, c, _) = &job[0];
        let (load, t, _, _) = &cells_params[*c];
        cells.push(MapCell {
            strategy: id.clone(),
            load: *load,
            trigger_s: *t,
            recovery_s: chunk.to_vec(),
        });
    }
    let one = base.service().workers as f64 / (base.service().service_ms / 1000.0);
    let (capacity_per_s, axes) = match trigger {
        Trigger::Freeze => (one, None),
        Trigger::LostReplica { replicas, .. } => (
            one * f64::from(replicas - 1),
            Some((
                "load on the survivors (share of their capacity)".to_string(),
                "lost replica's outage (s)".to_string(),
            )),
        ),
    };
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
        capacity_per_s,
        max_attempts: base.swarm().max_attempts,
        axes,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map of built-in `scenario` for `strategies` and `seeds`, over (loads, triggers,
    /// horizon).
    fn spec(
        scenario: &str,
        strategies: &str,
        seeds: &str,
        grid: (Vec<f64>, Vec<f64>, f64),
    ) -> MapSpec {
        let raw = [("E03_STRATEGIES", strategies), ("E03_SEEDS", seeds)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        MapSpec {
            scenario: Scenario::parse_list(scenario).unwrap()[0].clone(),
            raw,
            loads: grid.0,
            triggers_s: grid.1,
            horizon_s: grid.2,
        }
    }

    #[test]
    fn a_small_map_finds_both_sides_and_budgets_move_the_boundary() {
        let spec = spec("metastable", "A,D", "1", (vec![0.2, 0.8], vec![3.0], 30.0));
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

    /// `failover` mapped by the survivor's share against the outage: the cells at 90% and
    /// 120% of the survivor's 250/s are `failover-45` and `failover` (225/s and 300/s, replica
    /// 0 down from 10 s to 20 s, 80 s in all), and give their verdicts: without retries both
    /// recover; C holds at 90% and stays metastable at 120%.
    #[test]
    fn a_lost_replica_is_mapped_by_the_survivor_s_share() {
        let spec = spec(
            "failover",
            "no-retry,C",
            "42",
            (vec![0.9, 1.2], vec![10.0], 60.0),
        );
        assert_eq!(
            spec.trigger(),
            Ok(Trigger::LostReplica {
                phase: 0,
                replicas: 2
            })
        );
        let (s, p) = spec.cell(1.2, 10.0).unwrap();
        assert_eq!((p.swarm().rate, p.swarm().duration_s), (300.0, 80.0));
        assert_eq!(
            (s.def().phases[0].start_s, s.def().phases[0].end_s),
            (10.0, 20.0)
        );
        let (s, _) = spec.cell(0.9, 4.0).unwrap();
        assert_eq!(s.def().phases[0].end_s, 14.0);
        let map = phase_map(&spec).unwrap();
        assert_eq!(map.capacity_per_s, 250.0);
        assert_eq!(map.axis_names().1, "lost replica's outage (s)");
        let verdict = |id: &str, i: usize| map.cell(id, i, 0).unwrap().recovered();
        assert_eq!((verdict("no-retry", 0), verdict("no-retry", 1)), (1, 1));
        assert_eq!((verdict("C", 0), verdict("C", 1)), (1, 0), "{map:?}");
        // A scenario with neither a freeze nor a lost replica has no map.
        let e03a = MapSpec {
            scenario: Scenario::e03a(),
            raw: BTreeMap::new(),
            ..spec
        };
        assert!(e03a
            .trigger()
            .unwrap_err()
            .to_string()
            .contains("no freeze phase"));
    }
}
