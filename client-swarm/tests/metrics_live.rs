//! `GET /metrics` of a live run: a short E03-B run of the real swarm (strategies A and D, 30
//! clients, a 0.5 s freeze) against two real dependency services on port 0, with the swarm's
//! metrics served on port 0. At the end, both expositions must parse line by line as the
//! Prometheus text format, and the counters must agree with the logs: the dependency's arrivals
//! with its server log, the swarm's attempts by strategy, attempt number and outcome, its
//! operations by outcome and reason and its budget denials with the client log.

mod common;
#[path = "../../dependency-service/tests/support/prometheus_text.rs"]
mod prometheus_text;

use std::collections::BTreeMap;
use std::time::Duration;

use client_swarm::{run_swarm, serve_metrics, SeedRun};
use common::{dependency, params, read_log, temp_dir};
use e03_model::events::{AttemptEnd, Event, Outcome};
use e03_model::GiveUp;
use e03_plan::Scenario;
use prometheus_text::{parse, value};

async fn scrape_text(url: &str) -> String {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let res = client.get(url).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200, "{url}");
    res.text().await.unwrap()
}

fn reason_name(why: GiveUp) -> &'static str {
    match why {
        GiveUp::NotRetryable => "not_retryable",
        GiveUp::AttemptsExhausted => "attempts_exhausted",
        GiveUp::Deadline => "deadline",
        GiveUp::BudgetDenied => "budget_denied",
        GiveUp::FailedFast => "failed_fast",
        GiveUp::Aborted => "aborted",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swarm_and_dependency_metrics_agree_with_the_logs() {
    let out = temp_dir("metrics-live");
    let server_logs = out.join("server");
    let targets = vec![
        dependency("A", &server_logs).await,
        dependency("D", &server_logs).await,
    ];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let swarm_metrics = format!("http://{}/metrics", listener.local_addr().unwrap());
    tokio::spawn(serve_metrics(listener));
    let work_urls: BTreeMap<String, String> = targets
        .iter()
        .map(|t| (t.strategy.clone(), t.work_url.clone()))
        .collect();
    let plan = SeedRun {
        scenario: Scenario::e03b(),
        seed: 42,
        params: params(&[
            ("E03_STRATEGIES", "A,D"),
            ("E03_CLIENTS", "30"),
            ("E03_DURATION_S", "3"),
            ("E03_THINK_MIN_MS", "200"),
            ("E03_THINK_MAX_MS", "400"),
            ("E03_FREEZE_START_S", "1.0"),
            ("E03_FREEZE_END_S", "1.5"),
            ("E03_RECOVERY_END_S", "2.0"),
        ]),
        targets,
        out_dir: out.clone(),
        run_dir: None,
        start_delay: Duration::from_millis(500),
        shard: None,
        send_logs: None,
    };
    let report = run_swarm(plan, std::future::pending()).await.unwrap();
    assert!(report.complete);
    let swarm_text = scrape_text(&swarm_metrics).await;
    let swarm = parse(&swarm_text);
    // With E03_TEST_METRICS_DUMP=DIR the expositions and the figures the logs give are written
    // to DIR, for a second check with a real Prometheus parser (scripts/check-metrics.py, run
    // by test-e03.sh): `*.prom` files and `expected.json`, a list of {file, name, labels, value}.
    let dump = std::env::var_os("E03_TEST_METRICS_DUMP").map(std::path::PathBuf::from);
    let mut expected: Vec<serde_json::Value> = Vec::new();
    let mut expect = |file: &str, name: &str, labels: &[(&str, &str)], value: f64| {
        let labels: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        expected.push(serde_json::json!({
            "file": file, "name": name, "labels": labels, "value": value
        }));
    };
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("swarm.prom"), &swarm_text).unwrap();
    }
    // Budget tokens: D's token bucket is a gauge between 0 and its cap; A has no budget.
    let d_tokens = value(&swarm, "e03_swarm_budget_tokens", &[("strategy", "D")]);
    assert!((0.0..=10.0).contains(&d_tokens), "D tokens {d_tokens}");
    assert!(
        !swarm_text.contains("e03_swarm_budget_tokens{strategy=\"A\"}"),
        "{swarm_text}"
    );

    for r in &report.runs {
        let s = r.strategy.as_str();
        let client = read_log(&out.join(format!("e03b/client-{s}-seed42.jsonl")));
        let server = read_log(&server_logs.join(format!("e03b/server-{s}-seed42.jsonl")));
        // The dependency: arrivals as logged (the run was stopped, so every record is in).
        let dep_text = scrape_text(&format!("{}/metrics", work_urls[s])).await;
        let dep = parse(&dep_text);
        let dep_file = format!("dependency-{s}.prom");
        if let Some(dir) = &dump {
            std::fs::write(dir.join(&dep_file), &dep_text).unwrap();
        }
        let arrivals = server
            .iter()
            .filter(|e| matches!(e, Event::Arrival(_)))
            .count();
        assert!(arrivals > 0);
        assert_eq!(
            value(&dep, "e03_dependency_arrivals_total", &[]),
            arrivals as f64,
            "strategy {s}: dependency arrivals"
        );
        assert_eq!(value(&dep, "e03_dependency_run_active", &[]), 0.0);
        expect(
            &dep_file,
            "e03_dependency_arrivals_total",
            &[],
            arrivals as f64,
        );

        // The swarm: attempts by attempt number and outcome, as logged.
        let mut by_outcome: BTreeMap<(u32, String), u64> = BTreeMap::new();
        let mut sent = 0u64;
        for e in &client {
            if let Event::Attempt(a) = e {
                let outcome = match (a.end, a.status) {
                    (AttemptEnd::Status, Some(code)) => code.to_string(),
                    (AttemptEnd::Timeout, _) => "timeout".into(),
                    (AttemptEnd::FailedFast, _) => "failed_fast".into(),
                    (AttemptEnd::Aborted, _) => "aborted".into(),
                    (AttemptEnd::Status, None) => "status".into(),
                    (end, _) => end.broken().unwrap().name().into(),
                };
                if a.end != AttemptEnd::FailedFast {
                    sent += 1;
                }
                *by_outcome.entry((a.attempt, outcome)).or_default() += 1;
            }
        }
        assert!(
            by_outcome.keys().any(|(_, o)| o == "503"),
            "strategy {s}: no 503"
        );
        assert!(
            by_outcome.keys().any(|(n, _)| *n > 1),
            "strategy {s}: no retry"
        );
        for ((attempt, outcome), n) in &by_outcome {
            let attempt = attempt.to_string();
            assert_eq!(
                value(
                    &swarm,
                    "e03_swarm_attempts_total",
                    &[("strategy", s), ("attempt", &attempt), ("outcome", outcome)]
                ),
                *n as f64,
                "strategy {s}: attempt {attempt} outcome {outcome}"
            );
            expect(
                "swarm.prom",
                "e03_swarm_attempts_total",
                &[("strategy", s), ("attempt", &attempt), ("outcome", outcome)],
                *n as f64,
            );
        }
        let total: u64 = by_outcome.values().sum();
        assert_eq!(
            value(&swarm, "e03_swarm_attempts_total", &[("strategy", s)]),
            total as f64
        );
        assert_eq!(
            sent, arrivals as u64,
            "strategy {s}: every attempt sent arrived"
        );
        assert_eq!(
            value(
                &swarm,
                "http_client_request_duration_seconds_count",
                &[("strategy", s)]
            ),
            sent as f64
        );

        // Operations by outcome and reason, and the budget's denials.
        let mut ops: BTreeMap<(&str, &str), u64> = BTreeMap::new();
        for e in &client {
            if let Event::Operation(o) = e {
                let outcome = match o.outcome {
                    Outcome::Success => "success",
                    Outcome::Failed => "failed",
                };
                *ops.entry((outcome, o.reason.map_or("", reason_name)))
                    .or_default() += 1;
            }
        }
        for ((outcome, reason), n) in &ops {
            assert_eq!(
                value(
                    &swarm,
                    "e03_swarm_operations_total",
                    &[("strategy", s), ("outcome", outcome), ("reason", reason)]
                ),
                *n as f64,
                "strategy {s}: operations {outcome} {reason}"
            );
            expect(
                "swarm.prom",
                "e03_swarm_operations_total",
                &[("strategy", s), ("outcome", outcome), ("reason", reason)],
                *n as f64,
            );
        }
        assert_eq!(
            value(&swarm, "e03_swarm_operations_total", &[("strategy", s)]),
            r.operations as f64
        );
        let denied = ops.get(&("failed", "budget_denied")).copied().unwrap_or(0);
        assert_eq!(
            value(
                &swarm,
                "e03_swarm_retries_denied_by_budget_total",
                &[("strategy", s)]
            ),
            denied as f64,
            "strategy {s}: budget denials"
        );
    }
    if let Some(dir) = &dump {
        std::fs::write(
            dir.join("expected.json"),
            serde_json::to_string_pretty(&expected).unwrap(),
        )
        .unwrap();
    }
    std::fs::remove_dir_all(out).unwrap();
}
