//! One client, one freeze: every attempt time worked out by hand from the spec's rules and
//! compared with the simulator's, to the nanosecond.
//!
//! The client's first start `s0` is drawn from its think stream exactly as the swarm does; the
//! freeze is placed so that the first operation lands inside it whatever `s0` is (it is in
//! `[0, 2 s)` and the freeze starts at 0).

use std::collections::BTreeMap;
use std::time::Duration;

use e03_model::rng::{stream, Stream};
use e03_model::{AttemptResult, GiveUp, OpOutcome, ReqId};
use e03_plan::{Params, Scenario};
use rand::Rng;
use simulator::queue::Nanos;
use simulator::{Engine, Observer};

const MS: Nanos = 1_000_000;
const SEED: u64 = 42;

#[derive(Debug, Default)]
struct Trace {
    /// (time, op, attempt) of every attempt sent.
    sends: Vec<(Nanos, u32, u32)>,
    /// (time, result) of every attempt's end.
    ends: Vec<(Nanos, AttemptResult)>,
    /// (op, start, end, attempts, outcome) of every operation.
    ops: Vec<(u32, Nanos, Nanos, u32, OpOutcome)>,
}

impl Observer for Trace {
    fn arrival(&mut self, t: Nanos, _req: ReqId, _client: u32, op: u32, attempt: u32) {
        self.sends.push((t, op, attempt));
    }
    fn attempt_end(&mut self, t: Nanos, _req: ReqId, result: AttemptResult) {
        self.ends.push((t, result));
    }
    fn operation(&mut self, e: &e03_model::workload::Ended) {
        let nanos = |d: std::time::Duration| d.as_nanos() as Nanos;
        self.ops
            .push((e.op, nanos(e.start), nanos(e.end), e.attempts, e.outcome));
    }
}

fn params(pairs: &[(&str, &str)]) -> Params {
    let mut raw: BTreeMap<String, String> = [
        ("E03_CLIENTS", "1"),
        ("E03_FREEZE_START_S", "0"),
        ("E03_SEED", "42"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    raw.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Params::from_raw(&raw).unwrap()
}

fn run(p: &Params, strategy: &str) -> Trace {
    let s = p.strategy(strategy).unwrap().clone();
    Engine::new(Scenario::e03b(), p, &s, SEED, Trace::default()).run()
}

/// The client's first start, drawn as the swarm draws it.
fn s0() -> Nanos {
    stream(SEED, Stream::Think, 0).random_range(0..2_000_000u64) * 1000
}

/// C's and D's waits before retries 1, 2, 3, drawn from the client's jitter stream in order.
fn jitter_waits(p: &Params) -> Vec<Nanos> {
    let c = p.strategy("C").unwrap();
    let mut rng = stream(SEED, Stream::Jitter, 0);
    (1..=3)
        .map(|n| c.wait(n, Duration::ZERO, &mut rng).as_nanos() as Nanos)
        .collect()
}

fn ok(code: u16) -> AttemptResult {
    AttemptResult::status(code)
}

/// Freeze [0, 3 s), no degraded window, attempt timeout 5 s: the first attempt is held and
/// answered 503 at the freeze's end (3 s); the retry is served normally (40 ms). A think time
/// of exactly 1 s allows a second, single-attempt operation before the 5 s run length.
fn released_at_freeze_end() -> Params {
    params(&[
        ("E03_FREEZE_END_S", "3"),
        ("E03_RECOVERY_END_S", "3"),
        ("E03_ATTEMPT_TIMEOUT_MS", "5000"),
        ("E03_DEADLINE_MS", "10000"),
        ("E03_THINK_MIN_MS", "1000"),
        ("E03_THINK_MAX_MS", "1000"),
        ("E03_DURATION_S", "5"),
        ("E03_STRATEGIES", "A,B,C,D"),
    ])
}

/// Checks one strategy's run of [`released_at_freeze_end`] given its retry instant.
fn check_released(t: &Trace, retry_at: Nanos) {
    let s0 = s0();
    let done = retry_at + 40 * MS;
    let second = done + 1000 * MS;
    assert_eq!(
        t.sends,
        vec![(s0, 0, 1), (retry_at, 0, 2), (second, 1, 1)],
        "attempt times"
    );
    assert_eq!(
        t.ends,
        vec![
            (3000 * MS, ok(503)),
            (done, ok(200)),
            (second + 40 * MS, ok(200))
        ]
    );
    assert_eq!(
        t.ops,
        vec![
            (0, s0, done, 2, OpOutcome::Success),
            (1, second, second + 40 * MS, 1, OpOutcome::Success)
        ]
    );
}

#[test]
fn a_retries_at_the_freeze_end_instant_and_is_served() {
    // The freeze is half-open: at its end the service is open again, so A's immediate retry
    // (sent the instant the 503 arrives) is admitted, not held.
    check_released(&run(&released_at_freeze_end(), "A"), 3000 * MS);
}

#[test]
fn b_retries_200_ms_after_the_release() {
    check_released(&run(&released_at_freeze_end(), "B"), 3200 * MS);
}

#[test]
fn c_and_d_retry_within_full_jitter_bounds_after_the_release() {
    let p = released_at_freeze_end();
    let w1 = jitter_waits(&p)[0];
    assert!(w1 <= 200 * MS);
    check_released(&run(&p, "C"), 3000 * MS + w1);
    // D's budget starts full: the same retry at the same instant.
    check_released(&run(&p, "D"), 3000 * MS + w1);
}

/// Freeze [0, 8 s), attempt timeout 500 ms, deadline 5 s: every attempt is held and times out
/// on the client's side, so the retries follow the strategy's waits exactly.
fn timeouts_inside_the_freeze() -> Params {
    params(&[
        ("E03_FREEZE_END_S", "8"),
        ("E03_RECOVERY_END_S", "8"),
        ("E03_ATTEMPT_TIMEOUT_MS", "500"),
        ("E03_DEADLINE_MS", "5000"),
        ("E03_THINK_MIN_MS", "20000"),
        ("E03_THINK_MAX_MS", "20000"),
        ("E03_DURATION_S", "10"),
        ("E03_BUDGET_CAP", "1"),
        ("E03_STRATEGIES", "A,B,C,D"),
    ])
}

/// Attempt k+1 is sent `waits[k]` after attempt k timed out (500 ms after it was sent).
fn sends_after_timeouts(waits: &[Nanos]) -> Vec<(Nanos, u32, u32)> {
    let mut t = s0();
    let mut sends = vec![(t, 0, 1)];
    for (k, w) in waits.iter().enumerate() {
        t += 500 * MS + w;
        sends.push((t, 0, k as u32 + 2));
    }
    sends
}

fn check_exhausted(t: &Trace, waits: &[Nanos]) {
    let sends = sends_after_timeouts(waits);
    let end = sends[3].0 + 500 * MS;
    assert_eq!(t.sends, sends, "attempt times");
    assert_eq!(t.ends.len(), 4);
    assert!(t.ends.iter().all(|e| e.1 == AttemptResult::Timeout));
    assert_eq!(
        t.ops,
        vec![(
            0,
            s0(),
            end,
            4,
            OpOutcome::Failed(GiveUp::AttemptsExhausted)
        )]
    );
}

#[test]
fn a_retries_at_once_after_each_timeout_and_runs_out_of_attempts() {
    check_exhausted(&run(&timeouts_inside_the_freeze(), "A"), &[0, 0, 0]);
}

#[test]
fn b_waits_200_400_800_ms() {
    check_exhausted(
        &run(&timeouts_inside_the_freeze(), "B"),
        &[200 * MS, 400 * MS, 800 * MS],
    );
}

#[test]
fn c_waits_within_0_to_200_400_800_ms() {
    let p = timeouts_inside_the_freeze();
    let waits = jitter_waits(&p);
    for (w, hi) in waits.iter().zip([200, 400, 800]) {
        assert!(*w <= hi * MS, "{w} > {hi} ms");
    }
    check_exhausted(&run(&p, "C"), &waits);
}

#[test]
fn d_is_denied_its_second_retry_by_a_one_token_budget() {
    let p = timeouts_inside_the_freeze();
    let t = run(&p, "D");
    let w1 = jitter_waits(&p)[0];
    let sends = sends_after_timeouts(&[w1]);
    assert_eq!(t.sends, sends);
    assert_eq!(
        t.ops,
        vec![(
            0,
            s0(),
            sends[1].0 + 500 * MS,
            2,
            OpOutcome::Failed(GiveUp::BudgetDenied)
        )]
    );
}
