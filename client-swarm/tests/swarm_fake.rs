//! `run_swarm` end to end against fake dependencies on 127.0.0.1 port 0: the control protocol,
//! the shared time zero, the log layout, and a stop in the middle of a run.

mod common;

use std::time::Duration;

use client_swarm::{run_swarm, SeedRun, Target};
use common::{fake_dependency, params, read_log, temp_dir};
use e03_model::events::{AttemptEnd, Event, Outcome, Source};
use e03_model::GiveUp;
use e03_plan::Scenario;

fn target(strategy: &str, base: &str) -> Target {
    Target {
        replica: 0,
        strategy: strategy.into(),
        work_url: base.into(),
        control_url: base.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_strategies_run_together_and_log_every_attempt() {
    let (a_url, a) = fake_dependency(Duration::from_millis(5)).await;
    let (d_url, d) = fake_dependency(Duration::from_millis(5)).await;
    let out = temp_dir("fake-run");
    let p = params(&[
        ("E03_STRATEGIES", "A,D"),
        ("E03_CLIENTS", "8"),
        ("E03_DURATION_S", "1"),
        ("E03_THINK_MIN_MS", "100"),
        ("E03_THINK_MAX_MS", "200"),
    ]);
    let plan = SeedRun {
        scenario: Scenario::e03b(),
        seed: 7,
        params: p.clone(),
        targets: vec![
            target("D", &d_url),
            target("A", &a_url),
            target("Z", "http://x:1"),
        ],
        out_dir: out.clone(),
        run_dir: None,
        start_delay: Duration::from_millis(300),
        shard: None,
        send_logs: None,
    };
    let report = run_swarm(plan, std::future::pending()).await.unwrap();
    assert!(report.complete);
    let ids: Vec<_> = report.runs.iter().map(|r| r.strategy.as_str()).collect();
    assert_eq!(
        ids,
        ["A", "D"],
        "reports follow params.strategies, extra targets ignored"
    );

    let (sa, sd) = (
        a.starts.lock().unwrap()[0].clone(),
        d.starts.lock().unwrap()[0].clone(),
    );
    assert_eq!(
        sa.start_unix_ms, sd.start_unix_ms,
        "one time zero for all strategies"
    );
    assert_eq!((sa.strategy.as_str(), sd.strategy.as_str()), ("A", "D"));
    assert_eq!(sa.seed, 7);
    assert!(a.stops.lock().unwrap()[0].complete);

    let mut first_starts = Vec::new();
    for r in &report.runs {
        let path = out.join(format!("e03b/client-{}-seed7.jsonl", r.strategy));
        let log = read_log(&path);
        let Event::RunStart(start) = &log[0] else {
            panic!("run_start first")
        };
        assert_eq!(start.source, Source::Client);
        assert_eq!(
            start.tag.run,
            format!("e03b-{}-seed7-{}", r.strategy, sa.start_unix_ms)
        );
        let Event::RunEnd(end) = log.last().unwrap() else {
            panic!("run_end last")
        };
        assert!(end.complete);
        assert_eq!(end.records as usize, log.len() - 1);
        let attempts = log
            .iter()
            .filter(|e| matches!(e, Event::Attempt(_)))
            .count();
        let ops: Vec<_> = log
            .iter()
            .filter_map(|e| match e {
                Event::Operation(o) => Some(o),
                _ => None,
            })
            .collect();
        assert_eq!(attempts as u64, r.attempts);
        assert_eq!(ops.len() as u64, r.operations);
        assert_eq!(
            r.server.arrivals, r.attempts,
            "every attempt arrived, none extra"
        );
        // 8 clients, first start in [0, 1 s) for about half of them, then 100-200 ms thinks.
        assert!(r.operations >= 4, "{} operations", r.operations);
        assert!(ops
            .iter()
            .all(|o| o.start_us < 1_000_000 && o.outcome == Outcome::Success));
        assert!(log.iter().all(|e| match e {
            Event::Attempt(a) => a.tag == start.tag,
            Event::Operation(o) => o.tag == start.tag,
            _ => true,
        }));
        let mut firsts: Vec<_> = ops
            .iter()
            .filter(|o| o.op == 0)
            .map(|o| (o.client, o.start_us))
            .collect();
        firsts.sort_unstable();
        first_starts.push(firsts);
    }
    assert_eq!(
        first_starts[0], first_starts[1],
        "same seed, same first starts for every strategy"
    );
    std::fs::remove_dir_all(out).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_mid_run_aborts_in_flight_attempts_and_marks_everything_incomplete() {
    // Answers take 10 s and attempts may wait 20 s: every attempt is in flight when the stop
    // comes.
    let (url, dep) = fake_dependency(Duration::from_secs(10)).await;
    let out = temp_dir("fake-stop");
    let p = params(&[
        ("E03_STRATEGIES", "C"),
        ("E03_CLIENTS", "20"),
        ("E03_DURATION_S", "30"),
        ("E03_ATTEMPT_TIMEOUT_MS", "20000"),
        ("E03_DEADLINE_MS", "20000"),
    ]);
    let plan = SeedRun {
        scenario: Scenario::e03a(),
        seed: 1,
        params: p,
        targets: vec![target("C", &url)],
        out_dir: out.clone(),
        run_dir: None,
        start_delay: Duration::from_millis(100),
        shard: None,
        send_logs: None,
    };
    let began = std::time::Instant::now();
    let report = run_swarm(plan, tokio::time::sleep(Duration::from_millis(2500)))
        .await
        .unwrap();
    // Generous bound: the stop must not wait for the 10 s answers or the 30 s duration.
    assert!(
        began.elapsed() < Duration::from_secs(8),
        "{:?}",
        began.elapsed()
    );
    assert!(!report.complete && !report.runs[0].complete);
    assert!(!dep.stops.lock().unwrap()[0].complete);
    let log = read_log(&out.join("e03a/client-C-seed1.jsonl"));
    let attempts: Vec<_> = log
        .iter()
        .filter_map(|e| match e {
            Event::Attempt(a) => Some(a),
            _ => None,
        })
        .collect();
    assert!(!attempts.is_empty());
    assert!(attempts.iter().all(|a| a.end == AttemptEnd::Aborted));
    assert_eq!(attempts.len() as u64, report.runs[0].server.arrivals);
    assert!(log.iter().all(|e| match e {
        Event::Operation(o) => o.reason == Some(GiveUp::Aborted),
        _ => true,
    }));
    let Event::RunEnd(end) = log.last().unwrap() else {
        panic!("run_end last")
    };
    assert!(!end.complete);
    std::fs::remove_dir_all(out).unwrap();
}

#[tokio::test]
async fn a_strategy_without_a_target_fails_before_anything_is_sent() {
    let (url, dep) = fake_dependency(Duration::ZERO).await;
    let out = temp_dir("fake-missing");
    let plan = SeedRun {
        scenario: Scenario::e03b(),
        seed: 1,
        params: params(&[("E03_STRATEGIES", "A,B")]),
        targets: vec![target("A", &url)],
        out_dir: out.clone(),
        run_dir: None,
        start_delay: Duration::from_millis(100),
        shard: None,
        send_logs: None,
    };
    let err = run_swarm(plan, std::future::pending()).await.unwrap_err();
    assert!(
        err.to_string().contains("strategy B has no target"),
        "{err}"
    );
    assert!(dep.starts.lock().unwrap().is_empty());
    assert!(!out.join("e03b").exists(), "no log opened");
    std::fs::remove_dir_all(out).unwrap();
}
