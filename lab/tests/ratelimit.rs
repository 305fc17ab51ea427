//! The rate-limit article's ratelimit scenario: a short variant live over loopback (429 + Retry-After received
//! and logged on both sides), and the simulated table with its verdicts.

mod common;

use std::path::{Path, PathBuf};

use common::lab;

fn temp(name: &str) -> PathBuf {
    common::temp("ratelimit", name)
}

/// Every JSON line of the logs named `<prefix>-*.jsonl` under `dir` (recursively).
fn records(dir: &Path, prefix: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".jsonl"))
            {
                let text = std::fs::read_to_string(&p).unwrap();
                out.extend(text.lines().map(|l| serde_json::from_str(l).unwrap()));
            }
        }
    }
    out
}

#[test]
fn a_short_live_run_receives_and_logs_429s_with_retry_after() {
    let dir = temp("live");
    // 30 steps of 50 ms, a burst of 30 items at 10 a step from step 2 with fixed retries: the
    // 24-calls window overflows at once. Bounded: 30 steps, at most 12 + 1 calls a step.
    let o = lab()
        .args([
            "run",
            "ratelimit",
            "--seed",
            "7",
            "--strategies",
            "fixed",
            "--step-loads",
            "10",
            "--steps",
            "30",
            "--step-ms",
            "50",
            "--batch-items",
            "40",
            "--burst-items",
            "30",
            "--burst-start",
            "2",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // The client saw 429s with a Retry-After and logged them with their flow and step.
    let client = records(&dir, "client-");
    let throttled: Vec<&serde_json::Value> = client
        .iter()
        .filter(|r| r["type"] == "attempt" && r["data"]["status"] == 429)
        .collect();
    assert!(throttled.len() > 10, "{} 429s\n{out}", throttled.len());
    for r in &throttled {
        let d = &r["data"];
        assert!(d["retry_after_us"].as_u64().is_some_and(|v| v > 0), "{d}");
        assert!(d["flow"] == "batch" || d["flow"] == "interactive", "{d}");
        assert!(d["step"].as_u64().is_some(), "{d}");
    }
    // The dependency logged them as rate_limited, each with a cost of 0 tokens, and paid
    // answers with their input tokens.
    let server = records(&dir, "server-");
    let responses: Vec<&serde_json::Value> = server
        .iter()
        .filter(|r| r["type"] == "response")
        .map(|r| &r["data"])
        .collect();
    let limited: Vec<_> = responses
        .iter()
        .filter(|d| d["cause"] == "rate_limited")
        .collect();
    assert_eq!(limited.len(), throttled.len());
    assert!(limited.iter().all(|d| d["status"] == 429 && d["cost"] == 0));
    assert!(responses
        .iter()
        .filter(|d| d["cause"] == "ok")
        .all(|d| d["cost"] == 48));
    // The table and the check against the simulation were printed.
    assert!(out.contains("Who pays for a retry"), "{out}");
    assert!(out.contains("Check: live against simulated"), "{out}");
}

#[test]
fn simulated_the_heavy_load_shows_the_seeds_ordering_and_its_verdicts() {
    let dir = temp("sim");
    let o = lab()
        .args(["simulate", "ratelimit", "--seeds", "1,2,3", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let ordering = out
        .split("The article's ordering under the heaviest load:")
        .nth(1)
        .expect("the ordering");
    assert_eq!(
        ordering.lines().filter(|l| l.contains("yes")).count(),
        3,
        "{out}"
    );
    // Fixed retries under heavy load: a measured loss of batch and interactive completion.
    let fixed = out
        .lines()
        .find(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            cells.len() > 3 && cells[1] == "6/step" && cells[2] == "fixed"
        })
        .expect("the heavy fixed row");
    assert_eq!(fixed.matches("worse").count(), 2, "{fixed}");
    assert_eq!(fixed.matches("measured (>").count(), 2, "{fixed}");
    // The figure and the table's CSV are written.
    let res = std::fs::read_dir(dir.join("latest/simulated/ratelimit"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for f in ["calls_per_step.svg", "calls_per_step.png", "steps.csv"] {
        assert!(res.iter().any(|n| n == f), "{f} missing: {res:?}");
    }
}
