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
//!
//! The module, one job a file:
//! - `file.rs`: a file's raw form ([`ScenarioFile`], [`FILE_KEYS`]) and its validation into a
//!   [`ScenarioDef`] ([`parse`], [`parse_with`]);
//! - `phases.rs`: the `[[timeline]]` entries as written, and their validation into phases;
//! - `http_phase.rs`: the keys of `lab proxy --http`'s phases (`abort`, `delay`, `hang`,
//!   `reset`) read into their rule;
//! - `error.rs`: [`ScenarioError`], which names the file and the line;
//! - `def.rs`: [`ScenarioDef`], the validated definition, and the check of one that did not come
//!   from a file;
//! - `catalogue.rs`: the built-in scenarios ([`BUILTIN_FILES`], [`builtins`], [`builtin`]);
//! - `value.rs`: the [`Scenario`] value the drivers pass around, and its lookups by name.
//!
//! This file holds only the re-exports, so that every `scenario::X` path stays what it was.

mod catalogue;
mod chain_file;
mod def;
mod error;
mod file;
mod file_thresholds;
mod http_phase;
mod phases;
mod value;

pub use catalogue::{builtin, builtins, BUILTIN_FILES};
pub use def::ScenarioDef;
pub use error::ScenarioError;
pub use file::{parse, parse_with, ScenarioFile, FILE_KEYS};
pub use value::Scenario;
