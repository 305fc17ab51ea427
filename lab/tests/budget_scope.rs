//! Who holds a retry budget (`E03_BUDGET_SCOPE`), live: strategy D through a short E03-B
//! freeze. With one budget for the 200 clients (fleet), its 10 tokens are gone at the freeze
//! and retries are denied; with a budget per client, each client's 10 tokens outlast its few
//! retries and none is denied. The setting travels in the plan to the swarm, whose logs show
//! it; the simulator, on the same seed, agrees on which side of zero each lands.

mod common;

use common::{lab, temp, text};

/// `lab COMMAND e03b` for strategy D with this budget scope: a freeze from 1 s to 2.5 s, 4 s
/// of operations, seed 3. Each run's retries denied and retries sent, from its summary.
fn denied_and_retries(command: &str, scope: &str) -> (u64, u64) {
    let dir = temp("budget_scope", &format!("{command}-{scope}"));
    let o = lab()
        .args([
            command,
            "e03b",
            "--strategies",
            "D",
            "--budget-scope",
            scope,
            "--seed",
            "3",
            "--duration-s",
            "4",
            "--freeze-start-s",
            "1",
            "--freeze-end-s",
            "2.5",
            "--recovery-end-s",
            "3",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let summary = common::files(&dir, "summary", ".json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary[0]).unwrap()).unwrap();
    let run = &v["runs"][0];
    let out = (
        run["retries_denied"].as_u64().unwrap(),
        run["retries_sent"].as_u64().unwrap(),
    );
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn a_budget_per_client_denies_no_retry_where_the_fleets_one_denies_many() {
    for command in ["run", "simulate"] {
        let (fleet_denied, fleet_retries) = denied_and_retries(command, "fleet");
        let (client_denied, client_retries) = denied_and_retries(command, "client");
        assert!(fleet_denied > 20, "{command}: fleet denied {fleet_denied}");
        assert_eq!(client_denied, 0, "{command}: client scope denied some");
        assert!(
            client_retries > fleet_retries + 20,
            "{command}: {client_retries} retries per client against {fleet_retries} for the fleet"
        );
    }
}
