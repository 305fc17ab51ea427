//! `GET /metrics` on a live run: a standalone E03-B run with 2 workers, a queue of 3 and a
//! freeze from 0.4 s to 0.6 s takes bursts of concurrent `GET /work` (some start, some queue,
//! some are refused, some are held by the freeze). `/metrics` is scraped during the freeze and
//! at the end; every sample line must parse as the Prometheus text format, and at the end the
//! counters must agree with the server's own log: arrivals, answers by cause, admissions, and the
//! request duration histogram's count by status with the statuses the client saw.

mod common;
#[path = "support/prometheus_text.rs"]
mod prometheus_text;

use std::collections::BTreeMap;
use std::time::Duration;

use e03_model::events::{Cause, Event};
use e03_plan::Scenario;
use prometheus_text::{parse, value, Sample};
use tokio::time::Instant;

const PARAMS: &[(&str, &str)] = &[
    ("E03_WORKERS", "2"),
    ("E03_QUEUE", "3"),
    ("E03_SERVICE_MS", "50"),
    ("E03_FREEZE_START_S", "0.4"),
    ("E03_FREEZE_END_S", "0.6"),
    ("E03_RECOVERY_END_S", "0.8"),
];

/// (ms after start, requests sent together).
const BURSTS: &[(u64, usize)] = &[(100, 8), (250, 3), (450, 4), (900, 3)];

async fn scrape(url: &str) -> Vec<Sample> {
    let res = common::client().get(url).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let ctype = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ctype.contains("openmetrics-text"), "{ctype}");
    parse(&res.text().await.unwrap())
}

fn cause_name(c: Cause) -> &'static str {
    match c {
        Cause::Ok => "ok",
        Cause::Fault => "fault",
        Cause::Slow => "slow",
        Cause::Full => "full",
        Cause::QueueTimeout => "queue_timeout",
        Cause::Limited => "limited",
        Cause::Shed => "shed",
        Cause::Deadline => "deadline",
        Cause::Freeze => "freeze",
        Cause::Down => "down",
        Cause::RateLimited => "rate_limited",
        Cause::Lost => "lost",
        Cause::Permanent => "permanent",
        Cause::Timeout => "timeout",
        Cause::Cutoff => "cutoff",
        // `lab proxy --http`'s answers: never the service's.
        Cause::Upstream => "upstream",
        Cause::Injected => "injected",
        Cause::Unreachable => "unreachable",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_and_agree_with_the_log() {
    let start = Instant::now();
    let server = common::start("metrics", Some((Scenario::e03b(), PARAMS))).await;
    let work = server.work_url("/work");
    let metrics_url = server.work_url("/metrics");
    let client = common::client();
    let mut calls = Vec::new();
    let mut during_freeze = None;
    for &(at_ms, n) in BURSTS {
        tokio::time::sleep_until(start + Duration::from_millis(at_ms)).await;
        for _ in 0..n {
            let (client, url) = (client.clone(), work.clone());
            calls.push(tokio::spawn(async move {
                client.get(url).send().await.unwrap().status().as_u16()
            }));
        }
        if at_ms == 450 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            during_freeze = Some(scrape(&metrics_url).await);
        }
    }
    let mut seen: BTreeMap<u16, u64> = BTreeMap::new();
    for call in calls {
        *seen.entry(call.await.unwrap()).or_default() += 1;
    }
    let sent: usize = BURSTS.iter().map(|b| b.1).sum();

    // During the freeze: the phase gauge says so, and the held requests are in flight.
    let frozen = during_freeze.unwrap();
    assert_eq!(
        value(&frozen, "e03_dependency_phase", &[("phase", "frozen")]),
        1.0
    );
    assert_eq!(
        value(&frozen, "e03_dependency_phase", &[("phase", "normal")]),
        0.0
    );
    assert_eq!(value(&frozen, "e03_dependency_run_active", &[]), 1.0);
    assert!(value(&frozen, "http_server_active_requests", &[]) >= 4.0);

    // An answer is handed over before it is logged: wait until every answer is counted.
    let mut samples = scrape(&metrics_url).await;
    for _ in 0..100 {
        if value(&samples, "e03_dependency_responses_total", &[]) >= sent as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        samples = scrape(&metrics_url).await;
    }
    let log_dir = server.shutdown().await;
    let log = common::read_log(&log_dir.join(common::STANDALONE_LOG));

    let arrivals = log
        .iter()
        .filter(|e| matches!(e, Event::Arrival(_)))
        .count();
    assert_eq!(arrivals, sent);
    assert_eq!(
        value(&samples, "e03_dependency_arrivals_total", &[]),
        arrivals as f64
    );
    let mut by_cause: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &log {
        if let Event::Response(r) = e {
            *by_cause.entry(cause_name(r.cause)).or_default() += 1;
        }
    }
    for cause in ["ok", "full", "freeze", "fault", "slow", "down"] {
        assert_eq!(
            value(
                &samples,
                "e03_dependency_responses_total",
                &[("cause", cause)]
            ),
            by_cause.get(cause).copied().unwrap_or(0) as f64,
            "responses with cause {cause}"
        );
    }
    // Every kind of admission happened, and the decisions add up to the arrivals.
    for (decision, cause) in [
        ("admitted", "none"),
        ("queued", "none"),
        ("held", "none"),
        ("refused", "full"),
    ] {
        assert!(
            value(
                &samples,
                "e03_dependency_admissions_total",
                &[("decision", decision), ("cause", cause)]
            ) > 0.0,
            "no {decision} admission"
        );
    }
    assert_eq!(
        value(&samples, "e03_dependency_admissions_total", &[]),
        arrivals as f64
    );
    assert_eq!(
        value(
            &samples,
            "e03_dependency_admissions_total",
            &[("decision", "held")]
        ),
        by_cause["freeze"] as f64
    );
    assert_eq!(
        value(
            &samples,
            "e03_dependency_admissions_total",
            &[("decision", "refused")]
        ),
        by_cause["full"] as f64
    );
    // The duration histogram counted every answer the client saw, by status.
    for (status, n) in &seen {
        let code = status.to_string();
        assert_eq!(
            value(
                &samples,
                "http_server_request_duration_seconds_count",
                &[("http_response_status_code", code.as_str())]
            ),
            *n as f64,
            "requests answered {status}"
        );
    }
    assert_eq!(value(&samples, "http_server_active_requests", &[]), 0.0);
    assert_eq!(value(&samples, "e03_dependency_queue_depth", &[]), 0.0);
    assert_eq!(value(&samples, "e03_dependency_busy_workers", &[]), 0.0);
    // This run has no adaptive concurrency limit.
    assert_eq!(
        value(&samples, "e03_dependency_concurrency_limit", &[]),
        0.0
    );
    assert_eq!(
        value(&samples, "e03_dependency_phase", &[("phase", "normal")]),
        1.0
    );
    let _ = std::fs::remove_dir_all(&log_dir);
}
