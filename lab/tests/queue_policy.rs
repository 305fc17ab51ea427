//! The dependency's queue policy ("Fail at Scale"'s queue timeout) reaches the live service
//! through the plan: under load above capacity, requests still waiting at their queue timeout
//! are answered 503 `queue_timeout` without work, and FIFO drops nobody.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{files, lab, temp, text};

/// Open-loop arrivals at 375/s for 3 s against 250/s of capacity (10 workers of 40 ms), a
/// 1,000-deep queue, one attempt of 1 s, no faults: `lab run e03a` with `policy`. Its server
/// records, by type.
fn overloaded_run(dir: &Path, policy: &str) -> Vec<serde_json::Value> {
    let out = dir.join(policy);
    let o = lab()
        .args([
            "run",
            "e03a",
            "--fail-rate",
            "0",
            "--slow-rate",
            "0",
            "--workload",
            "open_loop",
            "--rate",
            "375",
            "--queue",
            "1000",
            "--attempt-timeout-ms",
            "1000",
            "--deadline-ms",
            "1000",
            "--max-attempts",
            "1",
            "--duration-s",
            "3",
            "--strategies",
            "A",
            "--queue-policy",
            policy,
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let logs = files(&out, "server-", ".jsonl");
    assert_eq!(logs.len(), 1, "{logs:?}");
    std::fs::read_to_string(&logs[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_live_codel_queue_drops_waiting_requests_at_their_timeout_and_fifo_drops_none() {
    let dir = temp("queue-policy", "codel");
    let records = overloaded_run(&dir, "codel");
    let arrived: HashMap<u64, u64> = records
        .iter()
        .filter(|r| r["type"] == "arrival")
        .map(|r| {
            (
                r["data"]["seq"].as_u64().unwrap(),
                r["data"]["t_us"].as_u64().unwrap(),
            )
        })
        .collect();
    let dropped: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["type"] == "response" && r["data"]["cause"] == "queue_timeout")
        .map(|r| &r["data"])
        .collect();
    // A third of the load is over capacity: many are dropped, not a handful.
    assert!(dropped.len() > 100, "{} dropped", dropped.len());
    for d in &dropped {
        assert_eq!(d["status"], 503, "{d}");
        assert!(d.get("admit_us").is_none(), "dropped without work: {d}");
        // Dropped after its timeout: 5 ms in a standing queue, 100 ms otherwise.
        let waited = d["t_us"].as_u64().unwrap() - arrived[&d["seq"].as_u64().unwrap()];
        assert!(
            (4_900..=150_000).contains(&waited),
            "waited {waited} us: {d}"
        );
    }
    // Most served requests were served: a queue timeout keeps the queue short.
    let served = records
        .iter()
        .filter(|r| r["type"] == "response" && r["data"]["cause"] == "ok")
        .count();
    assert!(
        served > dropped.len(),
        "{served} served, {} dropped",
        dropped.len()
    );

    let records = overloaded_run(&dir, "fifo");
    let causes: Vec<&str> = records
        .iter()
        .filter(|r| r["type"] == "response")
        .map(|r| r["data"]["cause"].as_str().unwrap())
        .collect();
    assert!(!causes.is_empty());
    assert!(causes.iter().all(|&c| c == "ok"), "FIFO drops nobody");
    let _ = std::fs::remove_dir_all(&dir);
}
