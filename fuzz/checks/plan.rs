//! A run plan, as `lab swarm --plan FILE` (`client_swarm::check_plan_text`) and
//! `lab serve --plan FILE` (`dependency_service::ServePlan`) read it.
//! Invariants: a plan that is accepted reads back to itself after the trip through JSON.

use client_swarm::check_plan_text;
use dependency_service::ServePlan;

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(plan) = check_plan_text(text) {
        let json = serde_json::to_string(&plan).expect("a plan serializes");
        match check_plan_text(&json) {
            Ok(back) => assert_eq!(back, plan, "the JSON trip changed the swarm's plan"),
            Err(e) => panic!("an accepted plan is refused once written: {e}\n{json}"),
        }
    }
    if let Ok(plan) = serde_json::from_str::<ServePlan>(text) {
        let json = serde_json::to_string(&plan).expect("a serve plan serializes");
        let back: ServePlan = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("a serve plan does not read back: {e}\n{json}"));
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }
}
