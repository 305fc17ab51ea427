//! The control endpoint: runs started and stopped by calls, their logs and the freeze.

mod common;

use std::time::{Duration, Instant};

use e03_model::events::{Cause, Event, Source};
use e03_plan::control::{RunCounts, START_PATH, STOP_PATH};

const STOP_COMPLETE: &str = r#"{"complete":true}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_during_a_short_freeze_is_answered_503_at_its_end() {
    let srv = common::start("freeze", None).await;
    let start_ms = common::unix_ms_now();
    let t0 = Instant::now();
    let call = common::start_call(
        "freeze-run",
        "B",
        7,
        &[
            ("E03_FREEZE_START_S", "0.3"),
            ("E03_FREEZE_END_S", "0.8"),
            ("E03_RECOVERY_END_S", "0.8"),
        ],
        start_ms,
    );
    let (status, body) = common::post(&srv.control_url(START_PATH), &call).await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep_until((t0 + Duration::from_millis(400)).into()).await;
    let res = common::client()
        .get(srv.work_url("/work"))
        .send()
        .await
        .unwrap();
    let answered = t0.elapsed();
    assert_eq!(res.status().as_u16(), 503);
    // Held until the freeze ends at 0.8 s (the 50 ms slack covers the two clocks' conversion).
    assert!(answered >= Duration::from_millis(750), "{answered:?}");
    let (status, body) = common::post(&srv.control_url(STOP_PATH), STOP_COMPLETE).await;
    assert_eq!(status, 200, "{body}");
    let counts: RunCounts = serde_json::from_str(&body).unwrap();
    assert_eq!((counts.arrivals, counts.responses), (1, 1));
    assert_eq!(counts.log_file, "e03b/server-B-seed7.jsonl");
    let log = srv.log(&counts.log_file);
    let (arrival, response) = match &log[1..3] {
        [Event::Arrival(a), Event::Response(r)] => (a.clone(), r.clone()),
        other => panic!("expected arrival then response, got {other:?}"),
    };
    assert_eq!(arrival.seq, response.seq);
    assert!((300_000..800_000).contains(&arrival.t_us), "{arrival:?}");
    assert_eq!((response.status, response.cause), (503, Cause::Freeze));
    assert!(response.t_us >= 800_000, "{response:?}");
    assert_eq!(arrival.tag.run, "freeze-run");
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_and_stop_give_an_ordered_log_with_matching_counts() {
    let srv = common::start("startstop", None).await;
    let client = common::client();
    let call = common::start_call("r1", "C", 3, &[("E03_WORKERS", "4")], common::unix_ms_now());
    assert_eq!(
        common::post(&srv.control_url(START_PATH), &call).await.0,
        200
    );
    let mut statuses = Vec::new();
    for client_id in 0..20 {
        let res = client
            .get(srv.work_url("/work"))
            .header("x-e03-client", client_id.to_string())
            .header("x-e03-op", "0")
            .header("x-e03-attempt", "1")
            .send()
            .await
            .unwrap();
        statuses.push(res.status().as_u16());
    }
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let (status, body) = common::post(&srv.control_url(STOP_PATH), STOP_COMPLETE).await;
    assert_eq!(status, 200, "{body}");
    let counts: RunCounts = serde_json::from_str(&body).unwrap();
    assert_eq!((counts.arrivals, counts.responses), (20, 20));

    let log = srv.log(&counts.log_file);
    assert!(
        matches!(&log[0], Event::RunStart(s) if s.source == Source::Server
        && s.scenario == "e03b" && s.params["E03_WORKERS"] == "4" && s.tag.seed == 3)
    );
    let Some(Event::RunEnd(end)) = log.last() else {
        panic!("last record is not run_end: {:?}", log.last())
    };
    assert!(end.complete);
    assert_eq!(end.records as usize, log.len() - 1);
    let mut arrived = std::collections::HashSet::new();
    let (mut arrivals, mut responses) = (0, 0);
    for e in &log[1..log.len() - 1] {
        match e {
            Event::Arrival(a) => {
                arrivals += 1;
                assert_eq!(a.attempt, Some(1));
                arrived.insert(a.seq);
            }
            Event::Response(r) => {
                responses += 1;
                assert!(
                    arrived.contains(&r.seq),
                    "response before its arrival: {r:?}"
                );
                assert!(r.immediate && r.admit_us.is_some());
            }
            other => panic!("unexpected record inside the run: {other:?}"),
        }
    }
    assert_eq!((arrivals, responses), (20, 20));
    // Without a run, work is refused; a second stop has nothing to stop.
    let res = client.get(srv.work_url("/work")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 503);
    assert_eq!(
        common::post(&srv.control_url(STOP_PATH), STOP_COMPLETE)
            .await
            .0,
        409
    );
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_start_ends_the_previous_run_incomplete_and_shutdown_ends_the_last() {
    let srv = common::start("restart", None).await;
    let now = common::unix_ms_now();
    let first = common::start_call("a", "A", 1, &[], now);
    let second = common::start_call("b", "D", 1, &[], now);
    assert_eq!(
        common::post(&srv.control_url(START_PATH), &first).await.0,
        200
    );
    assert_eq!(
        common::post(&srv.control_url(START_PATH), &second).await.0,
        200
    );
    let log_dir = srv.shutdown().await;
    for file in ["e03b/server-A-seed1.jsonl", "e03b/server-D-seed1.jsonl"] {
        let log = common::read_log(&log_dir.join(file));
        assert!(
            matches!(log.last(), Some(Event::RunEnd(e)) if !e.complete),
            "{file}: {log:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_control_calls_are_400_with_a_reason() {
    let srv = common::start("badcontrol", None).await;
    let url = srv.control_url(START_PATH);
    let (status, body) = common::post(&url, "{not json").await;
    assert_eq!(status, 400);
    assert!(body.starts_with("malformed start call JSON"), "{body}");
    // The typed parameters with a value out of its range: refused, named by its parameter.
    let mut bad_params: serde_json::Value =
        serde_json::from_str(&common::start_call("r", "A", 1, &[], common::unix_ms_now())).unwrap();
    bad_params["params"]["service"]["service_ms"] = serde_json::json!(-3.0);
    let (status, body) = common::post(&url, &bad_params.to_string()).await;
    assert_eq!(status, 400);
    assert!(body.contains("E03_SERVICE_MS"), "{body}");
    // Raw strings are not parameters any more.
    let mut raw_params = bad_params.clone();
    raw_params["params"] = serde_json::json!({"E03_SERVICE_MS": "40"});
    let (status, body) = common::post(&url, &raw_params.to_string()).await;
    assert_eq!(status, 400);
    assert!(body.starts_with("malformed start call JSON"), "{body}");
    // A scenario with a wire phase, and no fault proxy in front of this service: refused,
    // naming the phase.
    let mut wire = bad_params.clone();
    wire["params"] =
        serde_json::to_value(e03_plan::Params::from_raw(&common::raw(&[])).unwrap()).unwrap();
    wire["scenario"] = serde_json::json!("refused");
    let (status, body) = common::post(&url, &wire.to_string()).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("scenario refused has a wire phase (refused from 3 s)")
            && body.contains("no fault proxy in front"),
        "{body}"
    );
    let bad_strategy = common::start_call("r", "../../etc", 1, &[], common::unix_ms_now());
    assert_eq!(common::post(&url, &bad_strategy).await.0, 400);
    let (status, body) = common::post(&srv.control_url(STOP_PATH), r#"{"complete":"yes"}"#).await;
    assert_eq!(status, 400, "{body}");
    // Nothing was started: no log directory was created.
    let log_dir = srv.shutdown().await;
    assert!(!log_dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_call_ends_the_run_incomplete_and_stops_serving() {
    let server = common::start("shutdown-call", Some((e03_plan::Scenario::e03a(), &[]))).await;
    let res = common::client()
        .get(server.work_url("/work"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (status, _) = common::post(&server.control_url("/control/shutdown"), "").await;
    assert_eq!(status, 200);
    // `serve` returns by itself: its own shutdown future was never triggered.
    let log_dir = server.wait_exit().await;
    let events = common::read_log(&log_dir.join(common::STANDALONE_LOG));
    match events.last() {
        Some(Event::RunEnd(end)) => assert!(!end.complete),
        other => panic!("last record is not run_end: {other:?}"),
    }
}

/// A start call with `run_dir`: the log goes to `<log dir>/<run_dir>/<scenario>/`; a `run_dir`
/// that is not one safe folder name is refused with a 400 naming the field, and nothing is
/// written outside the log directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_dir_of_a_start_call_is_one_safe_folder_under_the_log_dir() {
    let srv = common::start("rundir", None).await;
    let with_dir = |dir: serde_json::Value| {
        let mut call: serde_json::Value = serde_json::from_str(&common::start_call(
            "r-dir",
            "A",
            5,
            &[],
            common::unix_ms_now(),
        ))
        .unwrap();
        call["run_dir"] = dir;
        call.to_string()
    };
    for bad in ["..", "../escape", "a/b", ".hidden", "", "/tmp/x", "a b"] {
        let (status, body) =
            common::post(&srv.control_url(START_PATH), &with_dir(bad.into())).await;
        assert_eq!(status, 400, "{bad:?}: {body}");
        assert!(body.contains("invalid run_dir"), "{bad:?}: {body}");
    }
    assert!(!srv.log_dir.parent().unwrap().join("escape").exists());

    let (status, body) = common::post(
        &srv.control_url(START_PATH),
        &with_dir("20261130-141224-2".into()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = common::post(&srv.control_url(STOP_PATH), STOP_COMPLETE).await;
    assert_eq!(status, 200, "{body}");
    let counts: RunCounts = serde_json::from_str(&body).unwrap();
    assert_eq!(
        counts.log_file,
        "20261130-141224-2/e03b/server-A-seed5.jsonl"
    );
    let log = srv.log(&counts.log_file);
    assert!(matches!(log.last(), Some(Event::RunEnd(end)) if end.complete));

    // `null` is the same as no run_dir: straight under the log directory.
    let (status, body) = common::post(
        &srv.control_url(START_PATH),
        &with_dir(serde_json::Value::Null),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = common::post(&srv.control_url(STOP_PATH), STOP_COMPLETE).await;
    let counts: RunCounts = serde_json::from_str(&body).unwrap();
    assert_eq!(counts.log_file, "e03b/server-A-seed5.jsonl");
    srv.shutdown().await;
}
