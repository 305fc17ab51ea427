//! The `aws-adaptive` preset (the AWS SDKs' adaptive retry mode: standard mode plus the
//! client-side CUBIC rate limiter) in the rate-limit article's `ratelimit`, live and simulated: under the
//! heavy load (6 items a step) the limiter keeps the 429s down and the batch finishes, where
//! standard mode's retries are mostly rejected; live and simulated agree within 5% on its calls
//! and 429s, the bar `ratelimit` sets its own rows.

mod common;

use common::{files, lab, temp, text};

/// The `steps` figures of every run of `lab COMMAND ratelimit --strategies
/// aws-standard,aws-adaptive`, by strategy id.
fn figures(command: &str) -> std::collections::HashMap<String, serde_json::Value> {
    let dir = temp("adaptive", command);
    let o = lab()
        .args([
            command,
            "ratelimit",
            "--strategies",
            "aws-standard,aws-adaptive",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "lab {command}: {stdout}\n{stderr}"
    );
    let summary = files(&dir, "summary", ".json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary[0]).unwrap()).unwrap();
    let out = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["strategy"].as_str().unwrap().to_string(),
                r["steps"].clone(),
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn n(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn the_adaptive_mode_keeps_429s_down_and_the_batch_whole_live_and_simulated() {
    let sim = figures("simulate");
    let live = figures("run");
    for runs in [&sim, &live] {
        let (standard, adaptive) = (&runs["aws-standard-L6"], &runs["aws-adaptive-L6"]);
        assert!(n(standard, "rejected") >= 50.0, "{standard}");
        assert!(n(adaptive, "rejected") <= 10.0, "{adaptive}");
        assert_eq!(n(adaptive, "completed"), n(adaptive, "items"), "{adaptive}");
        assert!(
            n(standard, "completed") < n(standard, "items"),
            "{standard}"
        );
        // At the light load it never throttles, so it is standard mode exactly.
        assert_eq!(runs["aws-standard-L3"], runs["aws-adaptive-L3"]);
    }
    let (s, l) = (&sim["aws-adaptive-L6"], &live["aws-adaptive-L6"]);
    let calls = (n(s, "batch_calls"), n(l, "batch_calls"));
    assert!((calls.0 - calls.1).abs() <= 0.05 * calls.0, "{calls:?}");
    let rejected = (n(s, "rejected"), n(l, "rejected"));
    assert!((rejected.0 - rejected.1).abs() <= 2.0, "{rejected:?}");
}

/// Under E03-B's outage the answers are 503s, never throttling answers, so the limiter never
/// turns on: `aws-adaptive` is `aws-standard` exactly, figure for figure.
#[test]
fn without_a_throttling_answer_the_adaptive_mode_is_standard_mode() {
    let dir = temp("adaptive", "e03b");
    let o = lab()
        .args([
            "simulate",
            "e03b",
            "--strategies",
            "aws-standard,aws-adaptive",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let summary = files(&dir, "summary", ".json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary[0]).unwrap()).unwrap();
    let mut runs: Vec<serde_json::Value> = v["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 2);
    for r in &mut runs {
        r.as_object_mut().unwrap().remove("strategy");
    }
    assert_eq!(runs[0], runs[1]);
    assert!(runs[0]["retries_sent"].as_u64().unwrap() > 0, "{}", runs[0]);
    let _ = std::fs::remove_dir_all(&dir);
}
