//! The dependency's heavy tail (`[faults] tail_rate`, `tail_factor`): a share of requests takes
//! a multiple of the service time, drawn per request from the seed and its identity. Live, the
//! service holds exactly the requests the core's draw names for the longer time; simulated, the
//! same share shows in the latency percentiles.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{files, lab, log_records, temp, text};
use e03_model::faults::{request_key, FaultModel};

/// 100 operations a second for 2 s against 10 workers of 20 ms (500 a second; 345 with the
/// tail's mean of 1.45 service times), one attempt each: 5% of the requests take 200 ms.
const TAIL: &str = r#"
name = "tail5"
title = "A heavy tail: 5% of requests take ten service times"
description = "Open loop at 100/s, 10 workers of 20 ms, one attempt; 5% of requests take 200 ms."

[dependency]
workers = 10
service_ms = 20
queue = 100

[faults]
tail_rate = 0.05
tail_factor = 10

[workload]
kind = "open_loop"
rate = 100
duration_s = 2

[policy]
strategies = ["A"]
max_attempts = 1
attempt_timeout_ms = 1000
deadline_ms = 1000
"#;

const SEED: u64 = 7;

fn scenario_file(dir: &Path) -> PathBuf {
    let file = dir.join("tail5.toml");
    std::fs::write(&file, TAIL).unwrap();
    file
}

/// `lab COMMAND FILE --seed 7 --out DIR/COMMAND`, which must exit 0: its output folder and
/// standard output.
fn run(dir: &Path, command: &str, file: &Path) -> (PathBuf, String) {
    let out = dir.join(command);
    let o = lab()
        .arg(command)
        .arg(file)
        .args(["--seed", &SEED.to_string(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "lab {command}: {stdout}\n{stderr}"
    );
    (out, stdout)
}

/// The one run of `summary.json`.
fn the_run(out: &Path) -> serde_json::Value {
    let summary = files(out, "summary", ".json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary[0]).unwrap()).unwrap();
    v["runs"][0].clone()
}

#[test]
fn the_tail_holds_exactly_the_requests_the_core_draws_live_and_shows_simulated() {
    let dir = temp("heavy_tail", "tail5");
    let file = scenario_file(&dir);
    let model = FaultModel {
        tail_rate: 0.05,
        tail_factor: 10.0,
        ..FaultModel::default()
    };

    // Live: every request the server kept 200 ms (admission to answer) is one the core's draw
    // puts in the tail, and every one it puts there was kept that long.
    let (out, _) = run(&dir, "run", &file);
    let server = log_records(&out, "server-A-");
    let mut identity = std::collections::HashMap::new();
    for r in server.iter().filter(|r| r["type"] == "arrival") {
        let d = &r["data"];
        let id = |k: &str| d[k].as_u64().unwrap() as u32;
        identity.insert(
            d["seq"].as_u64().unwrap(),
            request_key(id("client"), id("op"), id("attempt")),
        );
    }
    let (mut held, mut drawn) = (BTreeSet::new(), BTreeSet::new());
    let mut answered = 0;
    for r in server.iter().filter(|r| r["type"] == "response") {
        let d = &r["data"];
        let seq = d["seq"].as_u64().unwrap();
        let worked_us = d["t_us"].as_u64().unwrap() - d["admit_us"].as_u64().unwrap();
        assert!(worked_us >= 20_000, "{d}");
        answered += 1;
        if worked_us >= 150_000 {
            held.insert(seq);
        }
        if model.service_factor(SEED, identity[&seq]) == 10.0 {
            drawn.insert(seq);
        }
    }
    assert!(answered >= 190, "{answered}");
    assert_eq!(held, drawn, "the requests held 200 ms are the core's tail");
    let share = drawn.len() as f64 / answered as f64;
    assert!((0.02..0.09).contains(&share), "{share}");

    // Simulated: 5% of the operations take ten service times, so the 99th percentile is
    // 200 ms; the capacity the tables measure goodput against is the tail's: 10 workers /
    // (20 ms x 1.45) = 344.8 a second.
    let (out, stdout) = run(&dir, "simulate", &file);
    assert!(stdout.contains("SIMULATED"), "{stdout}");
    let run = the_run(&out);
    let p99 = run["p99_ms"].as_f64().unwrap();
    assert!((199.0..=210.0).contains(&p99), "p99 {p99}");
    let capacity = run["open_loop"]["capacity_per_s"].as_f64().unwrap();
    assert!(
        (capacity - 10.0 / (0.020 * 1.45)).abs() < 1e-6,
        "{capacity}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
