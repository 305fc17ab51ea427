//! Run parameters: one table of every parameter (env var, flag, default, what it accepts), raw
//! string values read from it, and one validation step into typed [`Params`].
//!
//! Callers collect raw values from wherever they come from (the environment, command-line
//! flags, a control call) into a map keyed by env var name and call [`Params::from_raw`]. Every
//! error names the parameter, the value given and what is accepted, so a binary can print it and
//! exit 2 before anything runs.
//!
//! The module, one step a file:
//! - `table.rs`: the parameter table ([`PARAMS`], [`spec`]), which docs/parameters.md is
//!   generated from;
//! - `error.rs`: [`ParamError`];
//! - `values.rs`: the typed values ([`ServiceParams`], [`SwarmParams`], [`StepParams`]);
//! - `rules.rs`: the rules between parameters ([`ORDER_RULES`] and the others);
//! - `seeds.rs`: seed lists ([`parse_seeds`]);
//! - `from_raw.rs`: a raw map read into [`Params`] ([`Params::from_raw`]);
//! - `to_raw.rs`: [`Params`] back into a raw map ([`Params::to_raw`]);
//! - `edits.rs`: the other checked ways to make a [`Params`] (from JSON, edits of one);
//! - `model.rs`: the model's configs built from [`Params`] (limits, starts, step configs, the
//!   balancer, a session's config);
//! - `workload.rs`: a run's workload machine built from [`Params`], whole or per shard.
//!
//! This file holds the [`Params`] type, its accessors and the re-exports, so that every
//! `params::X` path stays what it was.

use e03_model::strategy::Strategy;

mod edits;
mod error;
mod from_raw;
mod model;
mod ranges;
mod rules;
mod seeds;
mod table;
mod to_raw;
mod values;
mod workload;

pub use error::ParamError;
pub use from_raw::raw_reads;
pub use rules::ORDER_RULES;
pub use seeds::parse_seeds;
pub use table::{spec, ParamSpec, PARAMS};
pub(crate) use values::{ms, secs};
pub use values::{ServiceParams, StepParams, SwarmParams};

/// Every parameter of a run, validated. The fields are private so that every `Params` has
/// passed the checks: it is made by [`Params::from_raw`] (or [`Params::for_scenario`]), changed
/// only by the checked [`Params::with_seeds`], and read back from JSON through the same rules
/// (`serde(try_from)`). So there is always at least one seed ([`Params::seed`] cannot fail), at
/// least one strategy, no repeated strategy id, and the cross-parameter rules hold.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ParamsFields")]
pub struct Params {
    service: ServiceParams,
    swarm: SwarmParams,
    seeds: Vec<u64>,
    /// The run's strategies; for the step workload, each strategy once per load level (see
    /// [`Strategy::load`]).
    strategies: Vec<Strategy>,
    steps: StepParams,
}

/// The serialized shape of [`Params`], checked by `TryFrom` before it becomes one.
#[derive(serde::Deserialize)]
struct ParamsFields {
    service: ServiceParams,
    swarm: SwarmParams,
    seeds: Vec<u64>,
    strategies: Vec<Strategy>,
    steps: StepParams,
}

impl Params {
    /// The dependency's parameters.
    pub fn service(&self) -> &ServiceParams {
        &self.service
    }

    /// The swarm's parameters.
    pub fn swarm(&self) -> &SwarmParams {
        &self.swarm
    }

    /// Every seed of the run, in order; never empty, no repeats.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// The run's first seed (`E03_SEED`, or the first of `E03_SEEDS`).
    pub fn seed(&self) -> u64 {
        self.seeds[0]
    }

    /// The strategies of the run, in order; never empty, no repeated id.
    pub fn strategies(&self) -> &[Strategy] {
        &self.strategies
    }

    /// The step workload's parameters (`E03_WORKLOAD=steps`).
    pub fn steps(&self) -> &StepParams {
        &self.steps
    }

    pub fn strategy(&self, id: &str) -> Option<&Strategy> {
        self.strategies.iter().find(|s| s.id == id)
    }
}

/// A raw map (env name to value) from pairs, for the tests of the parameters' readers.
#[cfg(test)]
pub(crate) fn raw(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
