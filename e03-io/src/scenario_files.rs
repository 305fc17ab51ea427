//! Scenario arguments: built-in names and scenario files, read here (the core does no IO) into
//! [`Scenario`] values that the run's plan carries; and a user's policy file, whose strategies
//! the scenarios carry ([`e03_plan::scenario::ScenarioDef::policies`]).

use std::path::{Path, PathBuf};

use e03_plan::scenario;
use e03_plan::strategy_table::StrategySpec;
use e03_plan::Scenario;

use crate::error::InputError;

pub use e03_plan::log_names::SCENARIO_FILE;

/// One scenario named on a command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioArg {
    pub scenario: Scenario,
    /// The file it was read from, if it is not built in.
    pub file: Option<PathBuf>,
    /// The definition's text (the file's, or the built-in one), read once, to keep beside the
    /// run's outputs ([`keep`]).
    pub text: String,
}

/// Whether a scenario argument names a file rather than a built-in scenario.
pub fn is_file_arg(value: &str) -> bool {
    value.ends_with(".toml") || value.contains('/') || value.contains(std::path::MAIN_SEPARATOR)
}

/// Reads and validates one scenario file; its strategies may name `policies`' ids.
fn load_file(path: &Path, policies: &[StrategySpec]) -> Result<ScenarioArg, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::ReadScenario {
        path: path.to_path_buf(),
        error: e.to_string(),
    })?;
    let def = scenario::parse_with(&text, &path.display().to_string(), policies)?;
    let scenario = Scenario::from_def(def).map_err(|e| InputError::ScenarioDef {
        path: path.to_path_buf(),
        message: e.message,
    })?;
    Ok(ScenarioArg {
        scenario,
        file: Some(path.to_path_buf()),
        text,
    })
}

/// The text of a built-in scenario's file.
fn builtin_text(s: &Scenario) -> String {
    scenario::BUILTIN_FILES
        .iter()
        .find(|(file, _)| file.trim_end_matches(".toml") == s.name())
        .map(|(_, text)| text.to_string())
        .unwrap_or_default()
}

/// `e03a`, `e03b`, `all`, a scenario file's path, or a comma-separated list of them (in order,
/// without repeats: two files under one name are refused too). The error says what is accepted.
pub fn resolve(value: &str) -> Result<Vec<ScenarioArg>, InputError> {
    resolve_with(value, &[])
}

/// [`resolve`] for a run with a user's policy file: every scenario carries `policies`, and a
/// file's strategies may name them.
pub fn resolve_with(
    value: &str,
    policies: &[StrategySpec],
) -> Result<Vec<ScenarioArg>, InputError> {
    let mut out: Vec<ScenarioArg> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let found: Vec<ScenarioArg> = if is_file_arg(part) {
            vec![load_file(Path::new(part), policies)?]
        } else {
            Scenario::parse_list(part)?
                .into_iter()
                .map(|scenario| ScenarioArg {
                    text: builtin_text(&scenario),
                    scenario: scenario.with_policies(policies),
                    file: None,
                })
                .collect()
        };
        for f in found {
            if out.iter().any(|o| o.scenario == f.scenario) {
                return Err(InputError::NamedTwice {
                    name: f.scenario.name().to_string(),
                });
            }
            out.push(f);
        }
    }
    if out.is_empty() {
        return Err(InputError::NoScenario);
    }
    Ok(out)
}

pub use crate::names::POLICIES_ENV;

/// The name of a policy file's kept copy in a scenario folder.
pub const POLICIES_FILE: &str = "policies.toml";

/// A user's policy file, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Policies {
    /// Its text, to keep beside the run's outputs ([`keep_policies`]).
    pub text: String,
    /// Its strategies, for the scenarios to carry ([`resolve_with`]).
    pub specs: Vec<StrategySpec>,
}

/// Reads and checks a user's policy file (`[[strategy]]` tables, see
/// `e03_plan::strategy_table`). Errors name the file, line and key.
pub fn load_policies(path: &Path) -> Result<Policies, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::ReadPolicies {
        path: path.to_path_buf(),
        error: e.to_string(),
    })?;
    let specs = e03_plan::strategy_table::parse_policy_file(&text, &path.display().to_string())?;
    Ok(Policies { text, specs })
}

/// The policy file `E03_POLICIES` names, loaded; `None` when it is unset or empty.
pub fn load_policies_from_env() -> Result<Option<Policies>, InputError> {
    match std::env::var_os(POLICIES_ENV) {
        Some(v) if !v.is_empty() => load_policies(Path::new(&v)).map(Some),
        _ => Ok(None),
    }
}

/// Keeps a policy file's text in a scenario folder (`policies.toml`), as [`keep`] keeps the
/// scenario, so the folder can be analysed without the original file.
pub fn keep_policies(dir: &Path, text: &str) -> Result<(), InputError> {
    let path = dir.join(POLICIES_FILE);
    std::fs::write(&path, text).map_err(|e| InputError::write(&path, &e))
}

/// Writes the list of the logs the runs in a scenario folder will write
/// ([`e03_plan::log_names::RUN_LOGS_FILE`]), whole or not at all: the shards of a run, started
/// together, each write the same list into a shared folder.
pub fn keep_run_logs(dir: &Path, names: &[String]) -> Result<(), InputError> {
    let path = dir.join(e03_plan::log_names::RUN_LOGS_FILE);
    let tmp = dir.join(format!(
        ".{}.{}",
        e03_plan::log_names::RUN_LOGS_FILE,
        std::process::id()
    ));
    std::fs::write(&tmp, e03_plan::log_names::run_logs_toml(names))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            InputError::write(&path, &e)
        })
}

/// Keeps a scenario's definition in a scenario folder (`DIR/scenario.toml`), so the folder
/// explains itself and `lab analyze` knows a user's scenario from a fresh process.
pub fn keep(dir: &Path, text: &str) -> Result<(), InputError> {
    let path = dir.join(SCENARIO_FILE);
    std::fs::write(&path, text).map_err(|e| InputError::write(&path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_files_resolve_in_order() {
        let dir = std::env::temp_dir().join(format!("e03-scn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mine.toml");
        std::fs::write(
            &file,
            "name = \"swarm-file-test\"\ntitle = \"t\"\ndescription = \"d\"\n",
        )
        .unwrap();
        let got = resolve(&format!("e03b,{}", file.display())).unwrap();
        assert_eq!(got[0].scenario, Scenario::e03b());
        assert_eq!(got[1].scenario.name(), "swarm-file-test");
        assert_eq!(got[1].file.as_deref(), Some(file.as_path()));
        assert!(got[0].text.contains("name = \"e03b\""));
        assert!(got[1].text.contains("swarm-file-test"));
        assert!(resolve("e03b,b")
            .unwrap_err()
            .to_string()
            .contains("named twice"));
        let missing = resolve("nope/x.toml").unwrap_err().to_string();
        assert!(
            missing.starts_with("cannot read scenario file nope/x.toml"),
            "{missing}"
        );
        let unknown = resolve("e03z").unwrap_err().to_string();
        assert!(unknown.contains("unknown scenario \"e03z\""), "{unknown}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
