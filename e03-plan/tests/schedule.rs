//! The dependency's schedule (`e03_model::schedule`) driven with configs the plan builds from
//! parameters and scenarios, as the live service and the simulator build them.

use std::time::Duration;

use e03_model::dependency::*;
use e03_model::events::Cause;
use e03_model::schedule::*;
use e03_plan::{Params, Scenario};
fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn schedule(pairs: &[(&str, &str)], scenario: Scenario) -> DependencySchedule {
    let raw = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let p = Params::from_raw(&raw).unwrap();
    DependencySchedule::new(p.service_config(&scenario, 42))
}

/// An arrival that is admitted, queued or held (answered later).
fn arrive(s: &mut DependencySchedule, now: Duration, id: ReqId) -> Admission {
    let mut out = Vec::new();
    let admission = s.arrive(now, id, id, &mut out);
    assert!(out.is_empty(), "not answered at once");
    admission
}

fn answers(steps: &[Step]) -> Vec<Answer> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Answer(a) => Some(*a),
            Step::Started { .. } => None,
        })
        .collect()
}

#[test]
fn lost_and_permanent_fates_answer_after_the_work_with_their_causes() {
    // Every request's answer lost; then every operation permanently wrong.
    let mut s = schedule(
        &[
            ("E03_FAIL_RATE", "0"),
            ("E03_SLOW_RATE", "0"),
            ("E03_LOST_RATE", "1"),
        ],
        Scenario::e03a(),
    );
    arrive(&mut s, ms(0), 0);
    let mut steps = Vec::new();
    s.advance(ms(100), &mut steps);
    let a = answers(&steps);
    assert_eq!(
        (a[0].status, a[0].cause, a[0].at),
        (200, Cause::Lost, ms(40))
    );
    let mut s = schedule(&[("E03_PERMANENT_RATE", "1")], Scenario::e03a());
    arrive(&mut s, ms(0), 0);
    let mut steps = Vec::new();
    s.advance(ms(100), &mut steps);
    let a = answers(&steps);
    assert_eq!((a[0].cause, a[0].at), (Cause::Permanent, ms(40)));
    assert!(e03_model::faults::PERMANENT_STATUSES.contains(&a[0].status));
}

#[test]
fn a_saturated_pool_completes_exactly_its_capacity_in_logical_time() {
    // E03-B: no transient faults, and its freeze (8.5 s) is far away. 2 workers, 40 ms:
    // 100 requests queued at 0 finish in 40 ms rounds, however late the caller advances.
    let mut s = schedule(
        &[("E03_WORKERS", "2"), ("E03_QUEUE", "1000")],
        Scenario::e03b(),
    );
    for id in 0..100 {
        arrive(&mut s, ms(0), id);
    }
    assert_eq!((s.model().busy_workers(), s.model().queued()), (2, 98));
    let mut steps = Vec::new();
    s.advance(ms(2003), &mut steps); // one wake-up, 3 ms late, after 50 rounds
    let out = answers(&steps);
    assert_eq!(out.len(), 100);
    let admits: Vec<_> = out.iter().map(|d| d.admit.unwrap()).collect();
    assert_eq!(admits[98], ms(1960), "the 50th round starts at 49 x 40 ms");
    assert!(out.iter().all(|d| d.status == 200 && d.cause == Cause::Ok));
    assert!(out[..2].iter().all(|d| d.immediate) && !out[2].immediate);
    // Each answer carries its own instant, not the late wake-up's.
    assert_eq!((out[0].at, out[99].at), (ms(40), ms(2000)));
    assert_eq!(steps.len(), 198, "100 answers and 98 starts from the queue");
}

#[test]
fn capacity_is_exact_over_a_degraded_window() {
    // 1 worker, 40 ms, degraded (80 ms) in [2 ms, 1002 ms) after a 1 ms freeze: a queue
    // saturated from 2 ms completes 12.5 per second while degraded and 25 per second after,
    // to the nanosecond, however late the driver wakes.
    let mut s = schedule(
        &[
            ("E03_WORKERS", "1"),
            ("E03_QUEUE", "1000"),
            ("E03_FREEZE_START_S", "0.001"),
            ("E03_FREEZE_END_S", "0.002"),
            ("E03_RECOVERY_END_S", "1.002"),
        ],
        Scenario::e03b(),
    );
    for id in 0..200 {
        arrive(&mut s, ms(2), id);
    }
    let mut steps = Vec::new();
    s.advance(ms(3000), &mut steps);
    let out = answers(&steps);
    let done_in = |from: u64, to: u64| {
        out.iter()
            .filter(|a| a.at > ms(from) && a.at <= ms(to))
            .count()
    };
    // Degraded: ends at 82, 162, ..., 962 ms; the request started at 962 ms still takes
    // 80 ms. Then every 40 ms from 1042 ms.
    assert_eq!(done_in(2, 1002), 12);
    assert_eq!(out[12].at, ms(1042));
    assert_eq!(done_in(1002, 2002), 25);
    assert!(out.iter().all(|a| a.cause == Cause::Ok));
    assert!(out.windows(2).all(|w| w[0].at < w[1].at));
}

#[test]
fn a_full_pool_rejects_at_once() {
    let mut s = schedule(
        &[("E03_WORKERS", "1"), ("E03_QUEUE", "1")],
        Scenario::e03b(),
    );
    arrive(&mut s, ms(0), 0);
    arrive(&mut s, ms(0), 1);
    let mut out = Vec::new();
    assert_eq!(s.arrive(ms(1), 2, 2, &mut out), Admission::Rejected);
    let out = answers(&out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].req, out[0].status, out[0].cause),
        (2, 503, Cause::Full)
    );
    assert_eq!((out[0].admit, out[0].at), (None, ms(1)));
}

#[test]
fn a_rate_limited_phase_answers_429_with_retry_after_at_once() {
    let mut cfg = Params::default().service_config(&Scenario::e03a(), 1);
    cfg.faults = Default::default();
    cfg.timeline
        .rate_limited
        .push(e03_model::timeline::RateLimitWindow {
            start: ms(0),
            end: ms(1000),
            calls: 2,
            window: ms(300),
            count_rejected: true,
            retry_after: None,
        });
    let mut s = DependencySchedule::new(cfg);
    let mut out = Vec::new();
    assert!(matches!(
        s.arrive(ms(0), 0, 0, &mut out),
        Admission::Start { .. }
    ));
    assert!(matches!(
        s.arrive(ms(10), 1, 1, &mut out),
        Admission::Start { .. }
    ));
    assert!(out.is_empty());
    // Counted: 0, 10 and this one; the window admits again when 10 leaves, at 310 ms.
    assert_eq!(
        s.arrive(ms(20), 2, 2, &mut out),
        Admission::Throttled {
            retry_after: ms(290)
        }
    );
    let [Step::Answer(a)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(
        (a.req, a.at, a.status, a.cause, a.admit, a.retry_after),
        (2, ms(20), 429, Cause::RateLimited, None, Some(ms(290)))
    );
    assert_eq!(s.waiting(), 2, "the rejected request is not waiting");
    // Admitted requests are served as usual.
    out.clear();
    s.advance(ms(50), &mut out);
    let done: Vec<_> = answers(&out).iter().map(|a| (a.req, a.status)).collect();
    assert_eq!(done, [(0, 200), (1, 200)]);
}

#[test]
fn a_down_phase_answers_its_status_at_once() {
    let mut cfg = Params::default().service_config(&Scenario::e03a(), 1);
    cfg.faults = Default::default();
    cfg.timeline.down.push(e03_model::timeline::DownWindow {
        start: ms(100),
        end: ms(200),
        status: 502,
        latency: Duration::ZERO,
    });
    let mut s = DependencySchedule::new(cfg);
    let mut out = Vec::new();
    assert_eq!(
        s.arrive(ms(150), 0, 0, &mut out),
        Admission::Refused {
            status: 502,
            latency: Duration::ZERO
        }
    );
    let [Step::Answer(a)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!((a.at, a.status, a.cause), (ms(150), 502, Cause::Down));
    assert_eq!(s.waiting(), 0);
}

#[test]
fn a_down_phase_with_latency_answers_later_without_a_worker() {
    let mut cfg = Params::default().service_config(&Scenario::e03a(), 1);
    cfg.faults = Default::default();
    cfg.workers = 1;
    cfg.queue = 0;
    cfg.timeline.down.push(e03_model::timeline::DownWindow {
        start: ms(100),
        end: ms(200),
        status: 503,
        latency: ms(26),
    });
    let mut s = DependencySchedule::new(cfg);
    let mut out = Vec::new();
    // Three requests at once while down: none takes the one worker, none is rejected full.
    for id in 0..3 {
        let adm = s.arrive(ms(150), id, id, &mut out);
        assert_eq!(
            adm,
            Admission::Refused {
                status: 503,
                latency: ms(26)
            }
        );
    }
    assert!(out.is_empty(), "nothing answered at arrival: {out:?}");
    assert_eq!(s.waiting(), 3);
    assert_eq!(s.next_due(), Some(ms(176)));
    s.advance(ms(175), &mut out);
    assert!(out.is_empty());
    s.advance(ms(176), &mut out);
    let got = answers(&out);
    assert_eq!(got.len(), 3);
    for (i, a) in got.iter().enumerate() {
        assert_eq!(
            (a.req, a.at, a.status, a.cause, a.admit),
            (i as ReqId, ms(176), 503, Cause::Down, None)
        );
    }
    // An answer due after the window ends still comes; the next arrival is served.
    out.clear();
    s.arrive(ms(190), 9, 9, &mut out);
    assert_eq!(
        s.arrive(ms(200), 10, 10, &mut out),
        Admission::Start { service: ms(40) }
    );
    s.advance(ms(216), &mut out);
    assert_eq!(
        answers(&out)
            .iter()
            .map(|a| (a.req, a.at))
            .collect::<Vec<_>>(),
        [(9, ms(216))]
    );
}

#[test]
fn freeze_holds_work_and_answers_it_503_at_its_end() {
    let mut s = schedule(
        &[
            ("E03_WORKERS", "1"),
            ("E03_SERVICE_MS", "100"),
            ("E03_FREEZE_START_S", "0.05"),
            ("E03_FREEZE_END_S", "0.3"),
            ("E03_RECOVERY_END_S", "0.5"),
        ],
        Scenario::e03b(),
    );
    arrive(&mut s, ms(0), 0);
    arrive(&mut s, ms(100), 1);
    assert_eq!((s.model().busy_workers(), s.model().held()), (0, 2));
    let mut out = Vec::new();
    s.advance(ms(299), &mut out);
    assert!(out.is_empty(), "nothing answered during the freeze");
    s.advance(ms(300), &mut out);
    let out = answers(&out);
    let got: Vec<_> = out.iter().map(|d| (d.req, d.status, d.cause)).collect();
    assert_eq!(got, [(0, 503, Cause::Freeze), (1, 503, Cause::Freeze)]);
    assert_eq!(out[0].admit, Some(ms(0)));
    // After the freeze: degraded, service time doubled.
    arrive(&mut s, ms(301), 2);
    assert_eq!(s.next_due(), Some(ms(501)));
}

#[test]
fn an_arrival_at_the_freeze_end_is_served_and_work_due_at_its_start_is_held() {
    let mut s = schedule(
        &[
            ("E03_WORKERS", "1"),
            ("E03_FREEZE_START_S", "0.04"),
            ("E03_FREEZE_END_S", "0.1"),
            ("E03_RECOVERY_END_S", "0.1"),
        ],
        Scenario::e03b(),
    );
    // Its work would end at 40 ms, the freeze's start: the edge comes first.
    arrive(&mut s, ms(0), 0);
    let mut out = Vec::new();
    assert_eq!(
        s.arrive(ms(100), 1, 1, &mut out),
        Admission::Start { service: ms(40) },
        "the window is half-open"
    );
    s.advance(ms(140), &mut out);
    let got: Vec<_> = answers(&out)
        .iter()
        .map(|a| (a.req, a.at, a.cause))
        .collect();
    assert_eq!(got, [(0, ms(100), Cause::Freeze), (1, ms(140), Cause::Ok)]);
}

#[test]
fn an_arrival_handled_after_the_freeze_end_is_served_not_held_forever() {
    let mut s = schedule(
        &[
            ("E03_FREEZE_START_S", "0.1"),
            ("E03_FREEZE_END_S", "0.3"),
            ("E03_RECOVERY_END_S", "0.3"),
        ],
        Scenario::e03b(),
    );
    let mut out = Vec::new();
    s.advance(ms(300), &mut out); // the driver applied the freeze's end
    arrive(&mut s, ms(299), 0); // stamped just before it, handled just after
    assert_eq!((s.model().busy_workers(), s.model().held()), (1, 0));
    s.advance(ms(340), &mut out);
    assert_eq!(answers(&out)[0].admit, Some(ms(300)));
}

/// An answer as the queue tests write it: id, instant in ms, status, cause.
type Answered = (ReqId, u64, u16, Cause);

/// One worker of 40 ms, a request every 10 ms from 0 to 150 ms (ids 0 to 15), no faults,
/// under `policy`: what was answered (id, instant in ms, status, cause) and who started
/// when (id, instant in ms), up to 160 ms.
fn queue_run(policy: &str) -> (Vec<Answered>, Vec<(ReqId, u64)>) {
    let mut s = schedule(
        &[
            ("E03_WORKERS", "1"),
            ("E03_FAIL_RATE", "0"),
            ("E03_SLOW_RATE", "0"),
            ("E03_QUEUE_POLICY", policy),
        ],
        Scenario::e03a(),
    );
    let mut out = Vec::new();
    for id in 0..16 {
        s.arrive(ms(10 * id), id, id, &mut out);
    }
    s.advance(ms(160), &mut out);
    let ms_of = |t: Duration| t.as_millis() as u64;
    let answered = answers(&out)
        .iter()
        .map(|a| (a.req, ms_of(a.at), a.status, a.cause))
        .collect();
    let started = out
        .iter()
        .filter_map(|s| match s {
            Step::Started { req, at, .. } => Some((*req, ms_of(*at))),
            Step::Answer(_) => None,
        })
        .collect();
    (answered, started)
}

/// "Fail at Scale"'s queue timeout, by hand: the queue is last empty at 10 ms (request 1
/// queued into it), so from 110 ms on it stands. Requests queued before then may wait
/// 100 ms, those queued after it 5 ms. Request 4 (queued at 40 ms) is dropped at 140 ms,
/// request 12 (queued at 120 ms) at 125 ms; request 6's timeout (160 ms) comes with the end
/// of request 3's work, which takes it first.
#[test]
fn codel_drops_a_request_at_its_queue_timeout_short_once_the_queue_stands() {
    let qt = Cause::QueueTimeout;
    let (answered, started) = queue_run("codel");
    assert_eq!(
        answered,
        [
            (0, 40, 200, Cause::Ok),
            (1, 80, 200, Cause::Ok),
            (2, 120, 200, Cause::Ok),
            (12, 125, 503, qt),
            (13, 135, 503, qt),
            (4, 140, 503, qt),
            (14, 145, 503, qt),
            (5, 150, 503, qt),
            (15, 155, 503, qt),
            (3, 160, 200, Cause::Ok),
        ]
    );
    assert_eq!(started, [(1, 40), (2, 80), (3, 120), (6, 160)]);
    // FIFO drops nobody: the same requests start in arrival order.
    let (answered, started) = queue_run("fifo");
    assert!(answered.iter().all(|a| a.3 == Cause::Ok), "{answered:?}");
    assert_eq!(started, [(1, 40), (2, 80), (3, 120), (4, 160)]);
}

/// Adaptive LIFO: FIFO until the queue stands (110 ms), then the newest first. At 120 ms
/// the freed worker takes request 11 (queued at 110 ms), not request 3, which is dropped
/// at its timeout (130 ms); at 160 ms it takes request 10 (queued at 100 ms; 12 to 15 were
/// dropped after 5 ms), and request 6, still waiting then, is dropped.
#[test]
fn adaptive_lifo_serves_the_newest_once_the_queue_stands() {
    let qt = Cause::QueueTimeout;
    let (answered, started) = queue_run("adaptive_lifo");
    assert_eq!(started, [(1, 40), (2, 80), (11, 120), (10, 160)]);
    assert_eq!(
        answered,
        [
            (0, 40, 200, Cause::Ok),
            (1, 80, 200, Cause::Ok),
            (2, 120, 200, Cause::Ok),
            (12, 125, 503, qt),
            (3, 130, 503, qt),
            (13, 135, 503, qt),
            (4, 140, 503, qt),
            (14, 145, 503, qt),
            (5, 150, 503, qt),
            (15, 155, 503, qt),
            (11, 160, 200, Cause::Ok),
            (6, 160, 503, qt),
        ]
    );
}

#[test]
fn slow_answers_free_the_worker_and_answer_later() {
    let mut s = schedule(
        &[
            ("E03_WORKERS", "1"),
            ("E03_FAIL_RATE", "0"),
            ("E03_SLOW_RATE", "1"),
            ("E03_SLOW_MS", "500"),
        ],
        Scenario::e03a(),
    );
    arrive(&mut s, ms(0), 0);
    arrive(&mut s, ms(10), 1);
    assert_eq!(s.model().queued(), 1);
    let mut out = Vec::new();
    s.advance(ms(100), &mut out);
    assert_eq!(
        out,
        [Step::Started {
            req: 1,
            at: ms(40),
            service: ms(40)
        }],
        "worker freed at 40 ms, nothing answered before 540 ms"
    );
    out.clear();
    s.advance(ms(540), &mut out);
    let out = answers(&out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].req, out[0].status, out[0].cause, out[0].admit),
        (0, 200, Cause::Slow, Some(ms(0)))
    );
}

#[test]
fn same_instant_order_is_edge_then_work_then_late_answers_by_id() {
    // 2 workers, 40 ms service, every fate slow by 40 ms: 5 and 1 start at 0, then 3, 2, 4
    // and 0 wait in that order.
    let mut s = schedule(
        &[
            ("E03_WORKERS", "2"),
            ("E03_FAIL_RATE", "0"),
            ("E03_SLOW_RATE", "1"),
            ("E03_SLOW_MS", "40"),
        ],
        Scenario::e03a(),
    );
    for id in [5, 1, 3, 2, 4, 0] {
        arrive(&mut s, ms(0), id);
    }
    let mut out = Vec::new();
    s.advance(ms(80), &mut out);
    let started = |req, at| Step::Started {
        req,
        at: ms(at),
        service: ms(40),
    };
    let late = |req, admit| {
        Step::Answer(Answer {
            req,
            at: ms(80),
            status: 200,
            cause: Cause::Slow,
            admit: Some(ms(admit)),
            immediate: admit == 0,
            retry_after: None,
            cost: None,
        })
    };
    // At 80 ms the ends of work (of 2 and 3, which start 4 and 0) come before the late
    // answers of 1 and 5, which come by id although 5 arrived first.
    assert_eq!(
        out,
        [
            started(3, 40),
            started(2, 40),
            started(4, 80),
            started(0, 80),
            late(1, 0),
            late(5, 0),
        ]
    );
}

#[test]
fn ending_drops_every_waiting_answer() {
    let mut s = schedule(&[("E03_WORKERS", "1")], Scenario::e03b());
    arrive(&mut s, ms(0), 0);
    arrive(&mut s, ms(0), 1);
    s.end();
    assert_eq!(s.next_due(), Some(ms(8500)), "only the freeze edge is left");
    assert_eq!(s.waiting(), 0);
    let mut out = Vec::new();
    s.advance(ms(100), &mut out);
    assert!(out.is_empty());
}

/// The rule the live run's answer lateness is measured against (`Cause::due_after_work`) is
/// the schedule's: every answer of a mixed fault model (ok, 503, slow, lost, permanent) leaves
/// at its work's end plus the delay its cause names, and no answer's cause is one the rule
/// does not time.
#[test]
fn each_answer_leaves_when_its_cause_says_after_its_work() {
    let mut s = schedule(
        &[
            ("E03_WORKERS", "64"),
            ("E03_FAIL_RATE", "0.2"),
            ("E03_SLOW_RATE", "0.2"),
            ("E03_SLOW_MS", "500"),
            ("E03_LOST_RATE", "0.1"),
            ("E03_PERMANENT_RATE", "0.1"),
        ],
        Scenario::e03a(),
    );
    let mut steps = Vec::new();
    for id in 0..64 {
        s.arrive(ms(id), id, id, &mut steps);
    }
    s.advance(ms(2000), &mut steps);
    let answered = answers(&steps);
    assert_eq!(answered.len(), 64);
    let mut causes = std::collections::BTreeSet::new();
    for a in &answered {
        // Admitted at its arrival (64 workers), its work 40 ms (E03-A before its freeze).
        let work_end = a.admit.unwrap() + ms(40);
        let after = a.cause.due_after_work(ms(500)).expect("a timed cause");
        assert_eq!(a.at, work_end + after, "{a:?}");
        causes.insert(format!("{:?}", a.cause));
    }
    assert!(
        causes.len() >= 4 && causes.contains("Slow"),
        "a mix of causes, slow ones among them: {causes:?}"
    );
    // Hand-computed: the refusals are no work's answers.
    assert_eq!(Cause::Full.due_after_work(ms(500)), None);
    assert_eq!(Cause::Slow.due_after_work(ms(7)), Some(ms(7)));
    assert_eq!(Cause::Ok.due_after_work(ms(7)), Some(ms(0)));
}
