//! A client-side adaptive concurrency limit (the `aimd-client` preset: strategy C behind
//! Netflix's AIMD limit, from 20, min 20), live: during a freeze the 20 attempts it lets out
//! hang, so every other attempt fails fast (`concurrency_limited`) and never more than 20 are in
//! flight; the simulator, on the same seed, refuses about as many.
//!
//! The freeze starts at time zero: AIMD grows its limit on an answer that comes while half of
//! it is in flight, and before a freeze a loaded machine's slow answers can do that (21 in
//! flight was measured in a suite run with the freeze at 1 s). With no answer before the freeze
//! ends, the limit is 20 throughout it (a timeout cuts it to its floor, 20), whatever the
//! machine's speed.

mod common;

use common::{lab, log_records, temp, text};

/// `lab COMMAND e03b` with a freeze from 0 s to 2.5 s, 4 s of operations, strategy
/// `aimd-client`, seed 3: its output folder's client log records and standard output.
fn run(command: &str) -> (Vec<serde_json::Value>, String, std::path::PathBuf) {
    let dir = temp("client_limit", command);
    let o = lab()
        .args([
            command,
            "e03b",
            "--strategies",
            "aimd-client",
            "--seed",
            "3",
            "--duration-s",
            "4",
            "--freeze-start-s",
            "0",
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
    let records = if command == "run" {
        log_records(&dir, "client-aimd-client-")
    } else {
        Vec::new()
    };
    (records, stdout, dir)
}

#[test]
fn a_client_limit_keeps_at_most_its_limit_in_flight_and_fails_the_rest_fast() {
    let (client, stdout, dir) = run("run");
    let attempts: Vec<&serde_json::Value> = client
        .iter()
        .filter(|r| r["type"] == "attempt")
        .map(|r| &r["data"])
        .collect();
    let limited: Vec<&&serde_json::Value> = attempts
        .iter()
        .filter(|a| a["end"] == "failed_fast")
        .collect();
    assert!(limited.len() > 20, "{} failed fast", limited.len());
    for a in &limited {
        assert_eq!(a["rejection"], "concurrency_limited", "{a}");
    }
    // In flight at once, from the intervals [sent, end] of the attempts sent during the freeze
    // (the limit grows on the answers that end it): never above 20.
    let mut edges: Vec<(u64, i32)> = Vec::new();
    let in_freeze = |a: &&&serde_json::Value| a["sent_us"].as_u64().unwrap() < 2_500_000;
    for a in attempts
        .iter()
        .filter(|a| a["end"] != "failed_fast")
        .filter(in_freeze)
    {
        edges.push((a["sent_us"].as_u64().unwrap(), 1));
        edges.push((a["end_us"].as_u64().unwrap(), -1));
    }
    // An attempt that ends frees its place before one sent at the same microsecond takes it.
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    assert_eq!(most, 20, "the freeze holds the limit's 20 attempts at once");
    assert!(stdout.contains("failed fast"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);

    // The simulator refuses as many on the same seed (within 10%; 210 simulated on 2026-12-07).
    let (_, sim, dir) = run("simulate");
    let summary = common::files(&dir, "summary", ".json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary[0]).unwrap()).unwrap();
    let simulated = v["runs"][0]["failed_fast"].as_u64().unwrap() as f64;
    let live = limited.len() as f64;
    assert!(
        (live - simulated).abs() <= 0.1 * simulated,
        "live {live} against simulated {simulated}\n{sim}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// In `ratelimit` the step workload never has 20 calls in flight, so a limit whose floor is 20
/// never binds: `aimd-client` and `gradient2-client` give strategy C's figures exactly.
#[test]
fn in_ratelimit_a_client_limit_never_binds() {
    let dir = temp("client_limit", "ratelimit");
    let o = lab()
        .args([
            "simulate",
            "ratelimit",
            "--strategies",
            "C,aimd-client,gradient2-client",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{stdout}\n{stderr}");
    let summary = common::files(&dir, "summary", ".json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary[0]).unwrap()).unwrap();
    let steps = |id: &str| {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["strategy"] == id)
            .unwrap_or_else(|| panic!("no {id}"))["steps"]
            .clone()
    };
    for load in ["L3", "L6"] {
        let c = steps(&format!("C-{load}"));
        assert!(c["batch_calls"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(steps(&format!("aimd-client-{load}")), c);
        assert_eq!(steps(&format!("gradient2-client-{load}")), c);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
