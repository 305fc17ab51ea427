//! Scenarios as data: `lab list` shows the catalogue, a user's scenario file runs live and
//! simulated like a built-in one (its run folder keeps the file, so it can be analysed later),
//! E03 flags override the file, and a malformed file is refused with its line and exit 2.

mod common;

use std::path::{Path, PathBuf};

use common::{lab, text};

fn temp(name: &str) -> PathBuf {
    common::temp("scn", name)
}

/// A short scenario of our own: down for 0.5 s, then degraded; 20 clients for 2 s, B and C.
const BLIP: &str = r#"
name = "blip-test"
title = "Blip test"
description = "Down for half a second, then a quarter of the capacity for a second."

[[timeline]]
phase = "down"
start_s = 0.8
end_s = 1.3
status = 502

[[timeline]]
phase = "degraded"
start_s = 1.3
end_s = 2.3
capacity_factor = 0.25

[workload]
clients = 20
duration_s = 2
think_min_ms = 100
think_max_ms = 200

[policy]
strategies = ["B", "C"]
attempt_timeout_ms = 500
deadline_ms = 1500
backoff_base_ms = 50
backoff_cap_ms = 400
"#;

fn write_blip(dir: &Path) -> PathBuf {
    let file = dir.join("blip.toml");
    std::fs::write(&file, BLIP).unwrap();
    file
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn list_shows_the_builtin_catalogue() {
    let o = lab().arg("list").output().unwrap();
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    let (catalogue, strategies) = out.split_once("\nStrategies").expect("two parts");
    let first_words = |part: &str| -> Vec<String> {
        part.lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(String::from)
            .collect()
    };
    assert_eq!(
        first_words(catalogue),
        [
            "e03a",
            "e03b",
            "gateway4",
            "breaker",
            "herd",
            "budget",
            "amplification",
            "deadline",
            "idempotency",
            "classification",
            "metastable",
            "ratelimit",
            "refused",
            "blackhole",
            "slow-network",
            "reset-storm",
            "shedding",
            "failover",
            "failover-45",
            "active-passive",
            "degradation",
            "bulkhead",
            "tail",
            "hedge",
            "hedge-freeze"
        ],
        "{out}"
    );
    assert!(out.contains("freezes from 8.5 s to 10 s"), "{out}");
    // Then every strategy --strategies accepts: A to F, then the presets with their sources.
    let ids = first_words(strategies);
    assert_eq!(ids[1..7], ["A", "B", "C", "D", "E", "F"], "{out}");
    for preset in [
        "grpc",
        "aws-standard",
        "aws-2026",
        "finagle",
        "envoy",
        "sre-adaptive",
    ] {
        assert!(ids.iter().any(|i| i == preset), "{preset} missing: {out}");
    }
    assert!(strategies.contains("proposal A6"), "{out}");
}

#[test]
fn a_user_scenario_runs_live_and_simulated_and_its_folder_explains_itself() {
    let dir = temp("run");
    let file = write_blip(&dir);
    let out = dir.join("results");

    let o = lab()
        .args(["run", file.to_str().unwrap(), "--seed", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let live = out.join("latest").join("blip-test");
    let s = summary(&live);
    assert_eq!(s["scenario"], "blip-test");
    let ids: Vec<&str> = s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["B", "C"], "the file's strategies");
    // The down phase answered 502 at once: the server logged such answers, with their cause.
    let server = std::fs::read_to_string(live.join("server-B-seed3.jsonl")).unwrap();
    assert!(
        server.contains("\"status\":502") && server.contains("\"down\""),
        "no 502 from the down phase in the server log"
    );
    // The folder keeps the file, so a fresh process can analyse it.
    assert_eq!(
        std::fs::read_to_string(live.join("scenario.toml")).unwrap(),
        BLIP
    );
    let o = lab().arg("analyze").arg(&live).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Blip test (blip-test)"), "{stdout}");

    // Simulated, with an E03 flag over the file's value.
    let o = lab()
        .args(["simulate", file.to_str().unwrap(), "--seeds", "1-2"])
        .args(["--clients", "10", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let sim = out.join("latest").join("simulated").join("blip-test");
    let s = summary(&sim);
    assert_eq!(s["params"]["E03_CLIENTS"], "10", "the flag wins");
    assert_eq!(s["params"]["E03_DURATION_S"], "2", "the file's value stays");
    assert!(sim.join("scenario.toml").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_malformed_scenario_file_names_its_line_and_exits_2() {
    let dir = temp("bad");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\ntitle = \"t\"\ndescription = \"d\"\n\n[[timeline]]\nphase = \"freeze\"\n\
         start_s = 3\nend_s = 2\n",
    )
    .unwrap();
    for sub in ["run", "simulate", "compare"] {
        let o = lab()
            .args([sub, file.to_str().unwrap(), "--out"])
            .arg(dir.join("results"))
            .output()
            .unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{sub}: {stderr}");
        assert!(
            stderr.contains(&format!("scenario file {}:5: ", file.display()))
                && stderr.contains("expected seconds from 0 to 86400 with start_s < end_s"),
            "{sub}: {stderr}"
        );
    }
    assert!(
        !dir.join("results").exists(),
        "nothing written for bad input"
    );
    let o = lab()
        .args(["simulate", "no-such-file.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o)
        .1
        .contains("cannot read scenario file no-such-file.toml"));
    std::fs::remove_dir_all(&dir).unwrap();
}
