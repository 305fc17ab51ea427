//! The dependency's queue policy ("Fail at Scale"'s queue timeout) and deadline-aware
//! admission reach the live service through the plan: under load above capacity, requests
//! still waiting at their queue timeout are answered 503 `queue_timeout` without work, requests
//! that cannot finish before their caller's deadline are answered 504 `deadline` at once, and
//! FIFO drops nobody.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{files, lab, temp, text};

/// Open-loop arrivals at 375/s for 3 s against 250/s of capacity (10 workers of 40 ms), a
/// 1,000-deep queue, one attempt of 1 s, no faults: `lab run e03a` with `flag` set to `value`
/// (`--queue-policy`, `--admission`). Its server records.
fn overloaded_run(dir: &Path, flag: &str, value: &str) -> Vec<serde_json::Value> {
    let out = dir.join(value);
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
            flag,
            value,
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
    let records = overloaded_run(&dir, "--queue-policy", "codel");
    let arrived = arrivals(&records);
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

    let records = overloaded_run(&dir, "--queue-policy", "fifo");
    let causes: Vec<&str> = records
        .iter()
        .filter(|r| r["type"] == "response")
        .map(|r| r["data"]["cause"].as_str().unwrap())
        .collect();
    assert!(!causes.is_empty());
    assert!(causes.iter().all(|&c| c == "ok"), "FIFO drops nobody");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each arrival's instant (µs), by its sequence number.
fn arrivals(records: &[serde_json::Value]) -> HashMap<u64, u64> {
    records
        .iter()
        .filter(|r| r["type"] == "arrival")
        .map(|r| {
            (
                r["data"]["seq"].as_u64().unwrap(),
                r["data"]["t_us"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The swarm sends each attempt's timeout (1 s) in `x-e03-deadline-ms`; the dependency refuses
/// at once what it expects to finish after it, and what it serves ends within it.
#[test]
fn live_deadline_admission_refuses_at_once_what_cannot_finish_in_time() {
    let dir = temp("queue-policy", "deadline");
    let records = overloaded_run(&dir, "--admission", "deadline");
    let arrived = arrivals(&records);
    let responses: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["type"] == "response")
        .map(|r| &r["data"])
        .collect();
    let waited =
        |d: &serde_json::Value| d["t_us"].as_u64().unwrap() - arrived[&d["seq"].as_u64().unwrap()];
    let refused: Vec<_> = responses
        .iter()
        .filter(|d| d["cause"] == "deadline")
        .collect();
    assert!(refused.len() > 100, "{} refused", refused.len());
    for d in &refused {
        assert_eq!(d["status"], 504, "{d}");
        assert!(d.get("admit_us").is_none(), "refused without work: {d}");
        assert!(waited(d) < 50_000, "refused at once: {d}");
    }
    let served: Vec<_> = responses.iter().filter(|d| d["cause"] == "ok").collect();
    assert!(served.len() > refused.len());
    // The estimate assumes every worker has just started: what it admits ends in time.
    let late = served.iter().filter(|d| waited(d) > 1_000_000).count();
    assert_eq!(late, 0, "served after the caller's 1 s deadline");
    assert_eq!(responses.len(), refused.len() + served.len());
    let _ = std::fs::remove_dir_all(&dir);
}
