//! A workload added in the core alone runs on both drivers: `kind = "ramp"` (client `c`'s first
//! operation at `c x period_ms`), from a user's scenario file, simulated and live.

mod common;

use std::path::{Path, PathBuf};

use common::{files, lab, temp, text};

/// Four clients joining 200 ms apart, one operation each (a 10 s think ends the run first),
/// against a dependency without faults, immediate retries.
const RAMP: &str = r#"
name = "ramp4"
title = "A ramp of four clients"
description = "Four clients join 200 ms apart; one operation each."

[faults]
fail_rate = 0
slow_rate = 0

[workload]
kind = "ramp"
clients = 4
period_ms = 200
duration_s = 1
think_min_ms = 10000
think_max_ms = 10000

[policy]
strategies = ["A"]
"#;

fn scenario_file(dir: &Path) -> PathBuf {
    let file = dir.join("ramp4.toml");
    std::fs::write(&file, RAMP).unwrap();
    file
}

/// The attempts per 100 ms window of the one strategy, from `arrivals_100ms.csv`.
fn arrivals(dir: &Path) -> Vec<u64> {
    let csv = files(dir, "arrivals_100ms", ".csv");
    assert_eq!(csv.len(), 1, "{csv:?}");
    let text = std::fs::read_to_string(&csv[0]).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect()
}

/// `lab COMMAND FILE --out DIR/COMMAND`, which must exit 0; its output folder.
fn run(dir: &Path, command: &str, file: &Path) -> PathBuf {
    let out = dir.join(command);
    let o = lab()
        .arg(command)
        .arg(file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "lab {command}: {stdout}\n{stderr}"
    );
    out
}

#[test]
fn a_ramp_starts_one_client_every_period_simulated_and_live() {
    let dir = temp("workloads", "ramp");
    let file = scenario_file(&dir);

    // Simulated: one attempt in each of the windows starting at 0, 200, 400 and 600 ms.
    let out = run(&dir, "simulate", &file);
    let windows = arrivals(&out);
    assert_eq!(windows, [1, 0, 1, 0, 1, 0, 1]);

    // Live: the client log's first attempts were due at 0, 200, 400 and 600 ms, and sent then.
    let out = run(&dir, "run", &file);
    let logs = files(&out, "client-", ".jsonl");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let mut due: Vec<(u64, u64, u64)> = std::fs::read_to_string(&logs[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["type"] == "attempt")
        .map(|r| {
            let d = &r["data"];
            let field = |k: &str| d[k].as_u64().unwrap_or_else(|| panic!("{k}: {d}"));
            (field("client"), field("due_us"), field("sent_us"))
        })
        .collect();
    due.sort();
    let expected: Vec<(u64, u64)> = (0..4).map(|c| (c, c * 200_000)).collect();
    let got: Vec<(u64, u64)> = due.iter().map(|&(c, d, _)| (c, d)).collect();
    assert_eq!(got, expected, "one attempt per client, due at c x 200 ms");
    assert!(due.iter().all(|&(_, d, s)| s >= d), "{due:?}");
    assert_eq!(arrivals(&out).iter().sum::<u64>(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}
