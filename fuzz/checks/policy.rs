//! A policy file (`--policies FILE`, `E03_POLICIES`), as `e03_io::scenario_files::
//! load_policies` reads it (`e03_plan::strategy_table::parse_policy_file`).
//! Invariants: each strategy survives the JSON trip (plans carry them by value) and resolves
//! into a strategy with any backoff base and cap.

use std::time::Duration;

use e03_plan::strategy_table::{parse_policy_file, StrategySpec};

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(specs) = parse_policy_file(text, "fuzz.toml") else {
        return;
    };
    assert!(
        !specs.is_empty(),
        "a policy file without strategies was accepted"
    );
    for spec in &specs {
        let json = serde_json::to_string(spec).expect("a strategy serializes");
        let back: StrategySpec = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("a strategy does not read back: {e}\n{json}"));
        assert_eq!(&back, spec, "the JSON trip changed the strategy");
        let s = spec.resolve(Duration::from_millis(100), Duration::from_secs(10));
        assert_eq!(s.id, spec.id);
    }
}
