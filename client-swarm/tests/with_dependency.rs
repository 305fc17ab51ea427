//! A short E03-B run of the real swarm against two real dependency services (port 0): strategy
//! A and D in parallel through a short freeze. The client and server logs must agree attempt for
//! attempt, and the budget must hold D's retries down.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use client_swarm::{run_swarm, SeedRun};
use common::{dependency, params, read_log, temp_dir};
use e03_model::events::{Attempt, Event, OperationRecord};
use e03_model::GiveUp;
use e03_plan::Scenario;

fn attempts(log: &[Event]) -> Vec<&Attempt> {
    log.iter()
        .filter_map(|e| match e {
            Event::Attempt(a) => Some(a),
            _ => None,
        })
        .collect()
}

fn operations(log: &[Event]) -> Vec<&OperationRecord> {
    log.iter()
        .filter_map(|e| match e {
            Event::Operation(o) => Some(o),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_outage_run_with_a_and_d_matches_the_server_logs() {
    let out = temp_dir("with-dependency");
    let server_logs = out.join("server");
    let targets = vec![
        dependency("A", &server_logs).await,
        dependency("D", &server_logs).await,
    ];
    let p = params(&[
        ("E03_STRATEGIES", "A,D"),
        ("E03_CLIENTS", "30"),
        ("E03_DURATION_S", "3"),
        ("E03_THINK_MIN_MS", "200"),
        ("E03_THINK_MAX_MS", "400"),
        ("E03_FREEZE_START_S", "1.0"),
        ("E03_FREEZE_END_S", "1.5"),
        ("E03_RECOVERY_END_S", "2.0"),
    ]);
    let plan = SeedRun {
        scenario: Scenario::e03b(),
        seed: 42,
        params: p.clone(),
        targets,
        out_dir: out.clone(),
        run_dir: None,
        start_delay: Duration::from_millis(500),
        shard: None,
        send_logs: None,
    };
    let report = run_swarm(plan, std::future::pending()).await.unwrap();
    assert!(report.complete);

    let mut retries = Vec::new();
    for r in &report.runs {
        let client = read_log(&out.join(format!("e03b/client-{}-seed42.jsonl", r.strategy)));
        let server =
            read_log(&server_logs.join(format!("e03b/server-{}-seed42.jsonl", r.strategy)));
        let sent = attempts(&client);
        let ops = operations(&client);

        // Every attempt sent arrived, and nothing else did: same count, same identities.
        assert_eq!(sent.len() as u64, r.attempts);
        assert_eq!(r.server.arrivals, r.attempts, "strategy {}", r.strategy);
        let sent_ids: BTreeSet<_> = sent.iter().map(|a| (a.client, a.op, a.attempt)).collect();
        let arrived_ids: BTreeSet<_> = server
            .iter()
            .filter_map(|e| match e {
                Event::Arrival(a) => Some((a.client.unwrap(), a.op.unwrap(), a.attempt.unwrap())),
                _ => None,
            })
            .collect();
        assert_eq!(sent_ids, arrived_ids, "strategy {}", r.strategy);

        assert!(ops
            .iter()
            .all(|o| o.attempts >= 1 && o.attempts <= p.swarm().max_attempts));
        assert!(ops.iter().all(|o| o.start_us < 3_000_000));
        // The freeze holds requests and answers them 503 at its end (1.5 s): the client sees
        // those answers shortly after (generous upper bound for a busy 2-core machine).
        assert!(
            sent.iter().any(|a| a.status == Some(503)
                && (1_500_000..2_200_000).contains(&a.end_us)
                && a.sent_us < 1_500_000),
            "strategy {}: no attempt released by the freeze end",
            r.strategy
        );
        let firsts = sent.iter().filter(|a| a.attempt == 1).count();
        retries.push((
            r.strategy.clone(),
            sent.len() - firsts,
            firsts,
            ops.clone()
                .into_iter()
                .filter(|o| o.reason == Some(GiveUp::BudgetDenied))
                .count(),
        ));
    }
    let (a, d) = (&retries[0], &retries[1]);
    assert_eq!((a.0.as_str(), d.0.as_str()), ("A", "D"));
    // The bucket starts with 10 tokens and earns 0.1 per first attempt: D can never retry more.
    assert!(
        (d.1 as f64) <= 10.0 + 0.1 * d.2 as f64 + 1e-9,
        "D sent {} retries for {} first attempts",
        d.1,
        d.2
    );
    assert!(
        d.3 > 0 || d.1 < a.1,
        "D: {} denied, {} retries; A: {} retries",
        d.3,
        d.1,
        a.1
    );
    assert!(a.1 > 0, "A retried during the freeze");
    std::fs::remove_dir_all(out).unwrap();
}
