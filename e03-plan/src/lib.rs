//! The lab's plan: everything a user's input becomes before a driver runs it, over the model.
//!
//! The model's state machines live in `e03-model` (no clock, no IO, no parsing); this crate
//! reads the parameter table, scenario, policy and chain files, presets, checks, thresholds, the
//! command line and the control protocol into typed values, and builds the model's configs from
//! them. It does no IO either: files are read by `e03-io`, flags by the `cli` feature's clap
//! parser. The model's types are named by their own crate, `e03_model::strategy::Strategy`;
//! this crate re-exports none of them.
//!
//! Map of the modules:
//!
//! - [`params`]: the run parameters (spec sections 2 to 5), read from env-style maps or flags and
//!   validated once into typed values; every error names the parameter and what it accepts.
//! - [`strategy_table`]: a strategy written as a `[[strategy]]` table, and how a run's strategy
//!   ids are resolved (A to F, the presets, then a scenario's own).
//! - [`scenario`]: scenarios as data (TOML files: timeline, faults, workload, policies, checks).
//! - [`scenario_config`]: a run's parameters read against its scenario: the timeline and the
//!   dependency's configuration per strategy and replica.
//! - [`toml_table`]: reading a table of a user's TOML file, errors that say `file:line`.
//! - [`names`]: which strings may name a scenario, a strategy and a run folder.
//! - [`checks`]: a scenario's `[[check]]` tables: which figure, the published value, the band.
//! - [`presets`]: named strategies with well-known libraries' defaults (`grpc`, `aws-2026`, ...).
//! - [`control`]: the control protocol (start/stop a run).
//! - [`hop_control`]: a hop's control protocol (configure it, ask what is in flight).
//! - [`log_names`]: the name of every log and file a run leaves in its folder.
//! - `cli` (feature `cli`): flags and env vars for every parameter.

pub mod checks;
#[cfg(feature = "cli")]
pub mod cli;
pub mod control;
pub mod control_error;
pub mod hop_control;
pub mod log_names;
pub mod names;
pub mod params;
pub mod presets;
pub mod scenario;
pub mod scenario_config;
pub mod strategy_table;
pub mod thresholds;
pub mod toml_table;

pub use params::{ParamError, Params};
pub use scenario::Scenario;
