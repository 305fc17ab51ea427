//! One dependency node (`e03_model::node`: the schedule, the ledger and the commit rule) driven
//! with configs the plan builds from parameters and scenarios.

use std::time::Duration;

use e03_model::dependency::*;
use e03_model::events::Cause;
use e03_model::ledger::*;
use e03_model::node::*;
use e03_model::schedule::*;
use e03_plan::{Params, Scenario};
fn charge(key: &str, amount: u64) -> ChargeRequest {
    ChargeRequest {
        key: Some(key.into()),
        amount,
        client: Some(1),
        op: Some(0),
        attempt: Some(1),
    }
}

fn answer(req: ReqId, at_ms: u64, status: u16, cause: Cause) -> Answer {
    Answer {
        req,
        at: Duration::from_millis(at_ms),
        status,
        cause,
        admit: Some(Duration::ZERO),
        immediate: true,
        retry_after: None,
        cost: None,
    }
}

fn node() -> DependencyNode {
    DependencyNode::new(Params::default().service_config(&Scenario::e03a(), 1))
}

#[test]
fn work_that_ran_commits_and_a_key_answers_its_first_charge() {
    // Hand-computed: request 0 (key k, 1) answered Ok at 40 ms -> charge 1, 200; request 1
    // (k, 1) answered Lost at 90 ms -> its work ran: replayed, charge 1, 200, nothing new;
    // request 2 (k, 5) Slow -> the key reused for another amount: 422, charge 1; request 3
    // (k2, 1) answered 503 Fault -> no work ran, no commit, the model's 503.
    let mut n = node();
    let mut out = Vec::new();
    for (req, key, amount) in [(0, "k", 1), (1, "k", 1), (2, "k", 5), (3, "k2", 1)] {
        n.arrive(
            Duration::ZERO,
            req,
            req,
            Caller::default(),
            Some(charge(key, amount)),
            &mut out,
        );
    }
    let first = n.settle(&answer(0, 40, 200, Cause::Ok));
    assert_eq!((first.status, first.charge), (200, Some(1)));
    let line = first.charged.expect("a new charge");
    assert_eq!((line.charge, line.t_us, line.amount), (1, 40_000, 1));
    let lost = n.settle(&answer(1, 90, 200, Cause::Lost));
    assert_eq!(
        (lost.status, lost.charge, lost.charged),
        (200, Some(1), None)
    );
    let reused = n.settle(&answer(2, 95, 200, Cause::Slow));
    assert_eq!((reused.status, reused.charge), (422, Some(1)));
    let failed = n.settle(&answer(3, 99, 503, Cause::Fault));
    assert_eq!(
        (failed.status, failed.charge, failed.charged),
        (503, None, None)
    );
    assert_eq!((n.ledger().charges(), n.ledger().replays()), (1, 2));
    // Settled once: the same answer again is not a charge any more.
    assert_eq!(n.settle(&answer(0, 100, 200, Cause::Ok)).charge, None);
}

#[test]
fn a_request_that_is_no_charge_keeps_the_models_status() {
    let mut n = node();
    let mut out = Vec::new();
    n.arrive(Duration::ZERO, 7, 7, Caller::default(), None, &mut out);
    let s = n.settle(&answer(7, 40, 200, Cause::Ok));
    assert_eq!((s.status, s.charge, s.charged), (200, None, None));
    assert_eq!(n.ledger().charges(), 0);
}

#[test]
fn ending_drops_the_waiting_charges() {
    let mut n = node();
    let mut out = Vec::new();
    n.arrive(
        Duration::ZERO,
        0,
        0,
        Caller::default(),
        Some(charge("k", 1)),
        &mut out,
    );
    n.end();
    assert_eq!(n.settle(&answer(0, 40, 200, Cause::Ok)).charge, None);
    assert_eq!(n.ledger().charges(), 0);
}
