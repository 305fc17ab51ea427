//! What a user gave the drivers that e03-io cannot use: [`InputError`], the error of the
//! scenario and policy files, the run directory's flags, the progress setting and the
//! collector's URL. Its text names the flag, env var, file or key, and what it accepts.
//! (The live log writer's and the log shipping's errors are [`crate::sink::LogError`] and
//! `ship::ShipError`.)

use std::path::PathBuf;

use e03_plan::scenario::ScenarioError;
use e03_plan::strategy_table::PolicyFileError;
use e03_plan::ParamError;

use crate::names::{LATEST, POLICIES_ENV};

/// A scenario argument, a policy file, a run id, a progress mode or a collector URL that cannot
/// be used, or a file e03-io could not read or write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// `--progress` / `E03_PROGRESS` is not a mode.
    #[error("invalid --progress (E03_PROGRESS) {value:?}: expected auto, bar, lines or off")]
    Progress { value: String },
    /// A scenario file that cannot be read; `error` is the system's reason.
    #[error("cannot read scenario file {}: {error}", path.display())]
    ReadScenario { path: PathBuf, error: String },
    /// A scenario file that does not parse or breaks a rule (its text names the line).
    #[error(transparent)]
    ScenarioFile(#[from] ScenarioError),
    /// A scenario file whose definition cannot be a scenario (a built-in's name with other
    /// data); `message` says why.
    #[error("scenario file {}: {message}", path.display())]
    ScenarioDef { path: PathBuf, message: String },
    /// A scenario name that is not built in (the parameter's error).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The same scenario twice in one list.
    #[error("scenario {name:?} is named twice: expected each scenario once")]
    NamedTwice { name: String },
    /// An empty scenario list.
    #[error("no scenario given: expected e03a, e03b, all or a scenario file")]
    NoScenario,
    /// A policy file (`E03_POLICIES`, `--policies`) that cannot be read.
    #[error(
        "invalid {env}={:?} (--policies): cannot read it: {error} (expected a TOML file of \
         [[strategy]] tables)",
        path.display(),
        env = POLICIES_ENV
    )]
    ReadPolicies { path: PathBuf, error: String },
    /// A policy file that does not parse or breaks a rule (its text names the line).
    #[error(transparent)]
    PolicyFile(#[from] PolicyFileError),
    /// A file that could not be written; `error` is the system's reason.
    #[error("cannot write {}: {error}", path.display())]
    Write { path: PathBuf, error: String },
    /// A run id (`flag`) that is not a folder name of its own.
    #[error(
        "invalid {flag} {id:?}: expected a folder name of letters, digits, '-', '_' or '.' (not \
         {latest:?} or \"simulated\")",
        latest = LATEST
    )]
    RunId { flag: String, id: String },
    /// A run id whose folder is there, without `--overwrite`.
    #[error(
        "{} already exists: choose another run id, or pass --overwrite (E03_OVERWRITE=1) to \
         replace the lab's logs in it (your other files there are kept)",
        dir.display()
    )]
    RunExists { dir: PathBuf },
    /// A collector URL (`--send-logs`, `E03_SEND_LOGS`; the caller names its flag) that is not
    /// a plain `http://HOST:PORT`.
    #[error(
        "{value:?}: expected the analyzer's base URL, http://HOST:PORT (`lab report --listen \
         ADDR` there), for example http://analyzer:9100"
    )]
    CollectorUrl { value: String },
}

impl InputError {
    /// A file that could not be written.
    pub fn write(path: impl Into<PathBuf>, error: &std::io::Error) -> Self {
        InputError::Write {
            path: path.into(),
            error: error.to_string(),
        }
    }
}
