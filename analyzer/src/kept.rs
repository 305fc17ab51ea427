//! The scenario a run folder keeps beside its logs (`<scenario>/scenario.toml`, written by the
//! swarm), so that a folder of a user's scenario can be analysed after the run, by a process
//! that never saw the user's file; likewise a user's policy file (`<scenario>/policies.toml`).

use std::path::Path;

use e03_plan::scenario;
use e03_plan::Scenario;

pub use e03_plan::log_names::SCENARIO_FILE;

/// A kept file that does not read, or a scenario name that names none.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeptError {
    /// A kept `scenario.toml` or `policies.toml` that does not parse: the reader's message,
    /// which names the file and line.
    #[error("{0}")]
    Unreadable(String),
    /// A name that is neither the folder's kept scenario nor a built-in one.
    #[error("expected one scenario: {}", accepted.join(", "))]
    Unknown { accepted: Vec<String> },
}

/// A user's policy file, kept beside a scenario's logs by the swarm (`lab --policies`).
pub const POLICIES_FILE: &str = "policies.toml";

/// The scenario kept in `dir` (`scenario.toml`), read with the policy file kept beside it; `None`
/// when `dir` keeps none. A kept copy of a built-in scenario is that built-in one.
pub fn kept_scenario(dir: &Path) -> Result<Option<Scenario>, KeptError> {
    // A user's policy file kept beside the logs: the scenario may name its strategies.
    let policies = dir.join(POLICIES_FILE);
    let specs = match std::fs::read_to_string(&policies) {
        Ok(text) => {
            e03_plan::strategy_table::parse_policy_file(&text, &policies.display().to_string())
                .map_err(|e| KeptError::Unreadable(e.to_string()))?
        }
        Err(_) => Vec::new(),
    };
    let path = dir.join(SCENARIO_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let def = scenario::parse_with(&text, &path.display().to_string(), &specs)
        .map_err(|e| KeptError::Unreadable(e.to_string()))?;
    Scenario::from_def(def)
        .map(Some)
        .map_err(|e| KeptError::Unreadable(e.to_string()))
}

/// The scenario `value` names: `kept` (a folder's own, from [`kept_scenario`]) when the names
/// agree, else a built-in one (`Err`: the accepted names).
pub fn scenario_named(value: &str, kept: Option<&Scenario>) -> Result<Scenario, KeptError> {
    if let Some(k) = kept.filter(|k| k.name() == value.trim()) {
        return Ok(k.clone());
    }
    match Scenario::parse_list(value) {
        Ok(list) if list.len() == 1 => Ok(list[0].clone()),
        _ => {
            let mut accepted = Scenario::known_names();
            accepted.extend(kept.map(|k| k.name().to_string()));
            Err(KeptError::Unknown { accepted })
        }
    }
}

/// The scenarios a run directory holds a folder of, built-in ones first (catalogue order), then
/// the others by name; a folder's kept definition is its scenario.
pub fn scenarios_in(run_dir: &Path) -> Result<Vec<Scenario>, KeptError> {
    let mut found: Vec<Scenario> = Vec::new();
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Ok(found);
    };
    let mut dirs: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let kept = kept_scenario(&dir)?.filter(|k| Some(k.name()) == name.as_deref());
        if let Some(s) = kept.or_else(|| name.as_deref().and_then(Scenario::named)) {
            found.push(s);
        }
    }
    let builtins = Scenario::builtins();
    found.sort_by(|a, b| {
        let at = |s: &Scenario| builtins.iter().position(|x| x == s).unwrap_or(usize::MAX);
        (at(a), a.name()).cmp(&(at(b), b.name()))
    });
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_user_scenario_is_found_and_known_afterwards() {
        let run = std::env::temp_dir().join(format!("e03-kept-{}", std::process::id()));
        let mine = run.join("kept-test");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::create_dir_all(run.join("e03b")).unwrap();
        std::fs::create_dir_all(run.join("notes")).unwrap();
        std::fs::write(
            mine.join(SCENARIO_FILE),
            "name = \"kept-test\"\ntitle = \"t\"\ndescription = \"d\"\n",
        )
        .unwrap();
        let found = scenarios_in(&run).unwrap();
        let names: Vec<&str> = found.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            ["e03b", "kept-test"],
            "folders of no scenario are left out"
        );
        assert_eq!(found[1].title(), "t", "the kept definition, by value");
        assert!(
            Scenario::named("kept-test").is_none(),
            "nothing left behind"
        );
        let kept = kept_scenario(&mine).unwrap();
        assert_eq!(
            scenario_named("kept-test", kept.as_ref()).unwrap(),
            found[1]
        );
        assert_eq!(
            scenario_named("b", kept.as_ref()).unwrap(),
            Scenario::e03b()
        );
        let e = scenario_named("nope", kept.as_ref()).unwrap_err();
        assert!(e.to_string().ends_with(", kept-test"), "{e}");
        assert_eq!(kept_scenario(&run.join("notes")).unwrap(), None);
        std::fs::remove_dir_all(&run).unwrap();
    }
}
