//! A control call or a run's log list that cannot be used: [`ControlError`], naming the field
//! of the call (or the file's key) and what it accepts.

use crate::scenario::ScenarioError;
use e03_model::spec_error::SpecError;

/// A [`crate::control::StartRun`] read back that cannot be used, or a
/// [`crate::log_names::RUN_LOGS_FILE`] that does not list logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// `scenario` names another scenario than the `definition` it carries.
    #[error("scenario {given:?} comes with the definition of {defined:?}: expected its own")]
    DefinitionOf { given: String, defined: String },
    /// The `definition` breaks a rule of a scenario's.
    #[error(transparent)]
    Definition(#[from] SpecError),
    /// The `definition` cannot be made a scenario (a built-in's name with other data).
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// `scenario` without a definition, and not a built-in one; `known` lists those.
    #[error("unknown scenario {name:?}: expected a built-in one ({known}) or a definition")]
    UnknownScenario { name: String, known: String },
    /// `replica` is not one of the run's `E03_REPLICAS`.
    #[error(
        "replica {replica}: expected a replica of the run's E03_REPLICAS = {replicas}, from 0 \
         to {}",
        replicas - 1
    )]
    Replica { replica: u32, replicas: u32 },
    /// The log list is not TOML with a `logs` array of strings: the TOML reader's message.
    #[error("{message}")]
    LogList { message: String },
    /// A name in `logs` that is not a log's file name in the run's folder.
    #[error("logs = {name:?}: expected a log's file name")]
    LogName { name: String },
}
