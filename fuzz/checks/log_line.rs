//! Log lines, as the analyzer reads a run's logs (`analyzer::reader::read_events`), and the
//! run's parameters read back from its `run_start` record (`analyzer::reader::params_of`).
//! Invariants: every record read survives the JSON trip, and the count adds up.

use analyzer::reader::{params_of, read_events};
use e03_model::events::Event;

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let mut seen = 0u64;
    let status = read_events(data, "fuzz.jsonl", |event| {
        seen += 1;
        let json = serde_json::to_string(event).expect("a record serializes");
        let back: Event = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("a record does not read back: {e}\n{json}"));
        assert_eq!(&back, event, "the JSON trip changed a record");
    });
    if let Ok(status) = status {
        assert_eq!(status.records, seen);
        if let Some(start) = &status.run_start {
            let mut warnings = Vec::new();
            let _ = params_of(start, "fuzz.jsonl", &mut warnings, None);
        }
    }
}
