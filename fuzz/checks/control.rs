//! The control JSON: the dependency's `POST /control/start` (`dependency_service::
//! validate_start`) and `POST /control/stop` (`e03_plan::control::StopRun`), and the hop's
//! `POST /control/configure` (`dependency_service::hop::check_setup`).
//! Input: the first byte picks the call, the rest is its body.
//! Invariants: an accepted hop setup survives the JSON trip and is accepted again; an accepted
//! start call has a run id and a strategy.

use dependency_service::hop::check_setup;
use dependency_service::validate_start;
use e03_plan::control::StopRun;

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    match pick % 3 {
        0 => {
            if let Ok(spec) = validate_start(body) {
                assert!(!spec.run.is_empty() && !spec.strategy.is_empty());
            }
        }
        1 => {
            if let Ok((setup, rel)) = check_setup(body) {
                assert!(rel.is_relative());
                let json = serde_json::to_vec(&setup).expect("a setup serializes");
                match check_setup(&json) {
                    Ok((back, back_rel)) => {
                        assert_eq!(back, setup, "the JSON trip changed the setup");
                        assert_eq!(back_rel, rel);
                    }
                    Err(e) => panic!("an accepted setup is refused once written: {e}"),
                }
            }
        }
        _ => {
            let _ = serde_json::from_slice::<StopRun>(body);
        }
    }
}
