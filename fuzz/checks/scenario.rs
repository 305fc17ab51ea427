//! A scenario file, as `lab simulate FILE` and `lab run FILE` read it
//! (`e03_plan::scenario::parse`, then made a `Scenario` value by `e03_io::scenario_files`).
//! Invariants: what parses passes the control call's check (`ScenarioDef::check`, what a
//! service applies to a definition sent to it), and survives the JSON trip to the service.

use e03_plan::scenario::{self, ScenarioDef};
use e03_plan::Scenario;

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(def) = scenario::parse(text, "fuzz.toml") else {
        return;
    };
    if let Err(e) = def.check() {
        panic!("a parsed scenario fails the wire check: {e}\n{def:?}");
    }
    let json = serde_json::to_string(&def).expect("a definition serializes");
    let back: ScenarioDef = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("a definition does not read back: {e}\n{json}"));
    assert_eq!(back, def, "the JSON trip changed the definition");
    // What the loader does next: make it a scenario value (a built-in's name is refused unless
    // it is that built-in scenario), which carries the definition unchanged.
    if let Ok(s) = Scenario::from_def(def.clone()) {
        assert_eq!(s.name(), def.name);
        if Scenario::named(s.name()).is_none() {
            assert_eq!(s.def(), &def);
        }
    }
}
