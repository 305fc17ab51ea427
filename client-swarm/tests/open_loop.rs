//! The open loop against a real dependency service (port 0) that freezes: operations keep
//! arriving and being sent while the dependency holds everything, exactly as the core's arrival
//! process says, each on its own; a closed loop would have stopped sending.

mod common;

use std::time::Duration;

use client_swarm::{run_swarm, SeedRun};
use common::{dependency, params, read_log, temp_dir};
use e03_model::arrivals::Arrival;
use e03_model::events::{Cause, Event};
use e03_plan::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_dependency_does_not_make_the_open_loop_send_less() {
    let out = temp_dir("open-loop");
    let server_logs = out.join("server");
    let target = dependency("A", &server_logs).await;
    // 100 operations per second for 3 s, no retries; the dependency holds everything it gets
    // from 1 s to 2 s and answers it 503 then.
    let p = params(&[
        ("E03_STRATEGIES", "A"),
        ("E03_WORKLOAD", "open_loop"),
        ("E03_RATE", "100"),
        ("E03_DURATION_S", "3"),
        ("E03_MAX_ATTEMPTS", "1"),
        ("E03_FREEZE_START_S", "1.0"),
        ("E03_FREEZE_END_S", "2.0"),
        ("E03_RECOVERY_END_S", "2.0"),
    ]);
    let seed = 5;
    let plan = SeedRun {
        scenario: Scenario::e03b(),
        seed,
        params: p.clone(),
        targets: vec![target],
        out_dir: out.clone(),
        run_dir: None,
        start_delay: Duration::from_millis(500),
        shard: None,
        send_logs: None,
    };
    let report = run_swarm(plan, std::future::pending()).await.unwrap();
    assert!(report.complete);

    // The arrivals the core's process draws for this seed, in µs.
    let mut open = p.open_loop(seed);
    let mut expected = Vec::new();
    while open.next_arrival().is_some() {
        match open.on_arrival() {
            Arrival::Start { slot, start, .. } => {
                expected.push(start.as_micros() as u64);
                open.release(slot);
            }
            Arrival::Dropped { .. } => unreachable!("one slot per arrival at most"),
        }
    }
    let in_freeze = |t: u64| (1_000_000..2_000_000).contains(&t);
    let expected_in_freeze = expected.iter().filter(|t| in_freeze(**t)).count();
    assert!(expected_in_freeze > 60, "{expected_in_freeze}");

    let client = read_log(&out.join(format!("e03b/client-A-seed{seed}.jsonl")));
    let server = read_log(&server_logs.join(format!("e03b/server-A-seed{seed}.jsonl")));
    assert!(
        !client.iter().any(|e| matches!(e, Event::Dropped(_))),
        "nothing dropped"
    );
    let mut sent: Vec<(u64, u64)> = client
        .iter()
        .filter_map(|e| match e {
            Event::Attempt(a) => Some((a.due_us, a.sent_us)),
            _ => None,
        })
        .collect();
    sent.sort_unstable();
    // Every arrival was sent, due at its intended start: none waited for the stall to end.
    let due: Vec<u64> = sent.iter().map(|(d, _)| *d).collect();
    assert_eq!(due, expected);
    let sent_in_freeze = sent.iter().filter(|(d, _)| in_freeze(*d)).count();
    assert_eq!(sent_in_freeze, expected_in_freeze);
    // A closed loop would have sent these only after the 1 s stall; the open loop sends each
    // far sooner (the bound is loose: this checks the loop's shape, not the timer's precision).
    let worst = sent
        .iter()
        .map(|(d, s)| s.saturating_sub(*d))
        .max()
        .unwrap();
    assert!(worst < 500_000, "an operation waited {worst} us to be sent");

    // The dependency really stalled: it held and released as 503 what arrived in the freeze,
    // and it saw every attempt.
    let arrivals = server
        .iter()
        .filter(|e| matches!(e, Event::Arrival(_)))
        .count();
    assert_eq!(arrivals, expected.len());
    let held = server
        .iter()
        .filter(|e| matches!(e, Event::Response(r) if r.cause == Cause::Freeze))
        .count();
    assert!(
        held >= expected_in_freeze - 5,
        "{held} held, {expected_in_freeze} arrived in it"
    );
}
