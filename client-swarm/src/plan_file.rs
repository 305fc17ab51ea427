//! `--plan FILE`: a plan written as JSON (a [`SwarmRunPlan`], as `lab run` writes it for its
//! swarm) is the whole setting of a swarm: no other flag and no `E03_*` variable is read. Its
//! text is checked as the flags are, into the same [`Setup`]; the fuzz target `plan` drives
//! [`check_plan_text`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::plan::SwarmRunPlan;
use crate::setup::Setup;
use crate::usage_error::UsageError;

/// `--plan FILE`: the whole command line when it is `PROGRAM --plan FILE`; `Err` when `--plan`
/// comes with anything else (a plan is the whole setting).
pub(crate) fn plan_arg(args: &[OsString]) -> Result<Option<PathBuf>, UsageError> {
    match args {
        [_, flag, file] if flag == "--plan" => Ok(Some(PathBuf::from(file))),
        _ if args.iter().skip(1).any(|a| a == "--plan") => Err(UsageError::PlanAlone),
        _ => Ok(None),
    }
}

/// Reads a plan file ([`SwarmRunPlan`] as JSON) into a setup; `Err` names `--plan`.
pub(crate) fn load_plan(path: &Path) -> Result<Setup, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| UsageError::PlanRead {
        path: path.to_path_buf(),
        error: e.to_string(),
    })?;
    setup_of_plan_text(&text).map_err(|e| UsageError::Plan {
        path: path.to_path_buf(),
        error: Box::new(e),
    })
}

/// A plan's text, parsed and checked into a setup; `Err` is the message without the file's name.
fn setup_of_plan_text(text: &str) -> Result<Setup, UsageError> {
    let plan: SwarmRunPlan = serde_json::from_str(text).map_err(|e| UsageError::PlanJson {
        json: e.to_string(),
    })?;
    Setup::from_plan(plan)
}

/// A plan file's text read and checked as `lab swarm --plan FILE` reads it (its scenarios are
/// made `Scenario` values); the plan as it will run. `Err` is the message without the
/// file's name (the fuzz target `plan` drives it, see docs/fuzzing.md).
pub fn check_plan_text(text: &str) -> Result<SwarmRunPlan, UsageError> {
    setup_of_plan_text(text).map(|s| s.to_plan())
}
