//! A scenario file, as `lab simulate FILE` and `lab run FILE` read it
//! (`e03_core::scenario::parse`, then registered by `e03_io::scenario_files`).
//! Invariants: what parses passes the control call's check (`ScenarioDef::check`, what a
//! service applies to a definition sent to it), and survives the JSON trip to the service.
#![no_main]

use e03_core::scenario::{self, ScenarioDef};
use e03_core::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
    // What the loader does next: make it known by name (a built-in's name is refused).
    if let Ok(s) = Scenario::register(def) {
        assert_eq!(Scenario::named(s.name()), Some(s));
    }
});
