//! The whole pipeline for real: `lab run` starts dependency-service processes and a client-swarm
//! process on loopback, they exchange real HTTP, and the analyzer's summary comes from the logs.
//! A short run (a few seconds of traffic, a 0.5 s freeze) keeps it fast; the assertions are on
//! the shape of the results, not on timing.

mod common;

use common::lab;

#[test]
fn short_live_run_writes_a_summary_with_every_strategy() {
    let out = std::env::temp_dir().join(format!("e03-lab-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let output = lab()
        .args(["run", "e03b", "--seed", "42", "--out"])
        .arg(&out)
        .args([
            "--clients",
            "40",
            "--duration-s",
            "3",
            "--think-min-ms",
            "200",
        ])
        .args([
            "--think-max-ms",
            "400",
            "--freeze-start-s",
            "1.2",
            "--freeze-end-s",
            "1.7",
        ])
        .args(["--recovery-end-s", "2.2"])
        .output()
        .expect("lab runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "lab run failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("latest/e03b/summary.json")).expect("summary written"),
    )
    .expect("summary is JSON");
    assert_eq!(summary["scenario"], "e03b");
    assert_eq!(summary["complete"], true);
    let runs = summary["runs"].as_array().expect("runs");
    let mut strategies: Vec<&str> = runs
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    strategies.sort_unstable();
    assert_eq!(strategies, ["A", "B", "C", "D"]);
    for r in runs {
        assert_eq!(r["seed"], 42);
        assert!(r["operations"].as_u64().unwrap() > 40, "{r}");
        assert!(
            r["total_requests"].as_u64().unwrap() >= r["operations"].as_u64().unwrap(),
            "{r}"
        );
        let success = r["success_affected"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&success), "{r}");
    }
    // The freeze releases everything it held as 503: strategy A retries them at once.
    let a = runs.iter().find(|r| r["strategy"] == "A").unwrap();
    assert!(a["retries_sent"].as_u64().unwrap() > 0, "{a}");
    // The table is printed with one row per strategy.
    for id in ["A", "B", "C", "D"] {
        let row = format!("| {id} ");
        assert!(
            stdout.lines().any(|l| l.starts_with(&row)),
            "no row {id} in\n{stdout}"
        );
    }
    for log in [
        "server-A-seed42.jsonl",
        "client-D-seed42.jsonl",
        "arrivals_100ms.csv",
    ] {
        assert!(out.join("latest/e03b").join(log).exists(), "{log} missing");
    }
    // Each client log records the swarm's clock offset to its dependency, NTP style (8 samples,
    // the one of least round trip): on one host the true offset is 0, so what it measured is
    // within half that round trip (plus the µs of rounding).
    for id in ["A", "B", "C", "D"] {
        let path = out.join(format!("latest/e03b/client-{id}-seed42.jsonl"));
        let first = std::fs::read_to_string(&path).unwrap();
        let start: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
        assert_eq!(start["type"], "run_start", "{start}");
        let clock = &start["data"]["clock"];
        assert_eq!(clock["samples"], 8, "{start}");
        let (offset, rtt) = (
            clock["offset_us"].as_i64().unwrap(),
            clock["rtt_us"].as_i64().unwrap(),
        );
        assert!(offset.abs() <= rtt / 2 + 1, "{id}: {clock}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Flags, env vars, and the text the error must contain.
type BadCase = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
);

#[test]
fn bad_parameters_stop_the_lab_before_anything_runs() {
    let out = std::env::temp_dir().join(format!("e03-lab-bad-{}", std::process::id()));
    let cases: [BadCase; 5] = [
        (&["--workers", "0"], &[], "--workers=\"0\""),
        (
            &[],
            &[("E03_SERVICE_MS", "fast")],
            "E03_SERVICE_MS=\"fast\"",
        ),
        (
            &["--freeze-start-s", "9", "--freeze-end-s", "8"],
            &[],
            "invalid --freeze-end-s=\"8\"",
        ),
        (&["--strategies", "A,X"], &[], "--strategies"),
        (&[], &[("E03_WORKRES", "5")], "E03_WORKRES"),
    ];
    for (flags, env, expected) in cases {
        let output = lab()
            .args(["run", "e03b", "--out"])
            .arg(&out)
            .args(flags)
            .envs(env.iter().copied())
            .output()
            .expect("lab runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flags:?} {env:?}: {stderr}");
        assert!(stderr.contains(expected), "{flags:?} {env:?}: {stderr}");
        assert!(!out.exists(), "nothing may be written for bad input");
    }
    let output = lab().args(["run", "e03z"]).output().expect("lab runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown scenario \"e03z\""));
}
