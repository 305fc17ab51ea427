//! The scenario a run folder keeps beside its logs (`<scenario>/scenario.toml`, written by the
//! swarm), so that a folder of a user's scenario can be analysed after the run, by a process
//! that never saw the user's file; likewise a user's policy file (`<scenario>/policies.toml`).

use std::path::Path;

use e03_core::scenario;
use e03_core::Scenario;

pub use e03_core::control::SCENARIO_FILE;

/// A user's policy file, kept beside a scenario's logs by the swarm (`lab --policies`).
pub const POLICIES_FILE: &str = "policies.toml";

/// Makes the scenario kept in `dir` known to this process, if `dir` keeps one whose name is not
/// known yet (a known name, a built-in one among them, keeps its known definition).
pub fn register_kept(dir: &Path) -> Result<(), String> {
    // A user's policy file kept beside the logs: its strategies first, the scenario may name them.
    let policies = dir.join(POLICIES_FILE);
    if let Ok(text) = std::fs::read_to_string(&policies) {
        let specs =
            e03_core::strategy_table::parse_policy_file(&text, &policies.display().to_string())
                .map_err(|e| e.to_string())?;
        e03_core::strategy_table::register_policies(specs)?;
    }
    let path = dir.join(SCENARIO_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let def = scenario::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
    if Scenario::named(&def.name).is_none() {
        Scenario::register(def).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The scenarios a run directory holds a folder of, built-in ones first (catalogue order), then
/// the others by name. Kept definitions are registered on the way.
pub fn scenarios_in(run_dir: &Path) -> Result<Vec<Scenario>, String> {
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
        register_kept(&dir)?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(s) = name.as_deref().and_then(Scenario::named) {
            found.push(s);
        }
    }
    let builtins = Scenario::builtins();
    found.sort_by_key(|s| {
        (
            builtins.iter().position(|b| b == s).unwrap_or(usize::MAX),
            s.name(),
        )
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
        assert_eq!(Scenario::named("kept-test").unwrap().title(), "t");
        std::fs::remove_dir_all(&run).unwrap();
    }
}
