//! The dependency's whole schedule: its capacity model ([`DependencyModel`]) plus every future
//! instant it must act on, in one state machine driven in logical time.
//!
//! The live service and the simulator are both thin drivers of [`DependencySchedule`], the way
//! quinn-proto's connection is driven by tokio and by test harnesses alike:
//!
//! 1. a request comes in: [`DependencySchedule::arrive`] decides about it (and answers a rejected
//!    one at once);
//! 2. the driver asks [`DependencySchedule::next_due`], sleeps until then (tokio plus a precise
//!    timer live, or its own virtual clock), and calls [`DependencySchedule::advance`] with the
//!    time it woke at;
//! 3. it hands the answers [`DependencySchedule::advance`] returned to their requests.
//!
//! No clock, no IO, no channels here: requests are known by id, and the driver keeps whatever it
//! needs to reach them (the live service a map from id to its oneshot sender).
//!
//! # Logical time, no drift
//!
//! The model is never told "now" by a late timer. Every future instant (a worker's scheduled
//! completion, a slow answer's due time, the freeze's edges) is an entry of the schedule's queue,
//! and `advance(now)` applies every entry due up to `now` *at its own instant*, in time order. A
//! worker that finishes at 40 ms and takes the next queued request starts it at 40 ms, not at
//! 41 ms when a timer fired, so the pool completes exactly `workers / service_time` requests per
//! second whatever the driver's lateness.
//!
//! # Order within an instant
//!
//! 1. a freeze edge (the window is half-open: at its end the service is open again);
//! 2. ends of work, by request id;
//! 3. queue timeouts ([`crate::dependency::QueuePolicy`]), by request id: a request whose
//!    worker frees at its timeout is served;
//! 4. late answers (E03-A's slow fate), by request id;
//! 5. arrivals: `arrive(now)` first applies everything due at or before `now`.
//!
//! Arrivals never go back in time: one handed in with a stamp earlier than the latest instant
//! advanced to is decided at that instant instead (never in the past, where e.g. a freeze that
//! already ended would hold it forever).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::dependency::{Admission, Caller, Completion, DependencyModel, ReqId, ServiceConfig};
use crate::events::Cause;

/// An entry of a [`BinaryHeap`] that pops the *smallest* `key` first and ignores `value` when
/// ordering (so the value needs no `Ord`: a channel, an event). Ties pop in no fixed order: put
/// a tie-breaker (an insertion counter) in the key where that matters.
#[derive(Debug, Clone, Copy)]
pub struct Earliest<K, V> {
    pub key: K,
    pub value: V,
}

impl<K: Ord, V> PartialEq for Earliest<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<K: Ord, V> Eq for Earliest<K, V> {}

impl<K: Ord, V> PartialOrd for Earliest<K, V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord, V> Ord for Earliest<K, V> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest entry first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A future instant the schedule acts on. The variant order is the order within an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    FreezeBegins,
    FreezeEnds,
    /// A worker's service time for this request ends.
    WorkDone(ReqId),
    /// This queued request's queue timeout passes.
    QueueTimeout(ReqId),
    /// This request's late answer (E03-A slow fate), with its status, is due.
    LateAnswer(ReqId, u16),
    /// This request's error answer from a down phase with an error latency is due.
    DownAnswer(ReqId, u16),
}

impl Due {
    fn is_edge(self) -> bool {
        matches!(self, Due::FreezeBegins | Due::FreezeEnds)
    }
}

/// An answer to hand to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub req: ReqId,
    /// The model's instant of the answer (the driver may hand it over a little later).
    pub at: Duration,
    pub status: u16,
    pub cause: Cause,
    /// When a worker started it; `None` if none ever did.
    pub admit: Option<Duration>,
    /// A worker was free when it arrived.
    pub immediate: bool,
    /// The `Retry-After` to send with it (a 429 of a rate-limited phase); `None`: no header.
    pub retry_after: Option<Duration>,
    /// The tokens the answer cost (seed 002's accounting); `None` without it.
    pub cost: Option<u32>,
}

/// What the schedule did, in the order it did it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A request is answered.
    Answer(Answer),
    /// A queued request got a worker at `at` for `service` (a driver that only answers
    /// requests skips it).
    Started {
        req: ReqId,
        at: Duration,
        service: Duration,
    },
}

/// What the schedule remembers of a request it has not answered yet.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    admit: Option<Duration>,
    immediate: bool,
}

/// The dependency's model and everything scheduled around it.
#[derive(Debug)]
pub struct DependencySchedule {
    model: DependencyModel,
    due: BinaryHeap<Reverse<(Duration, Due)>>,
    /// Request ids are small sequential integers: Fx hashing is much cheaper than SipHash.
    waiting: FxHashMap<ReqId, Waiting>,
    /// The latest instant advanced to (see the module docs).
    clock: Duration,
}

impl DependencySchedule {
    /// A fresh dependency at time zero; its freeze edges (if any) are scheduled now.
    pub fn new(config: ServiceConfig) -> Self {
        let mut due = BinaryHeap::new();
        if let Some(f) = config.timeline.freeze {
            due.push(Reverse((f.start, Due::FreezeBegins)));
            due.push(Reverse((f.end, Due::FreezeEnds)));
        }
        Self {
            model: DependencyModel::new(config),
            due,
            waiting: FxHashMap::default(),
            clock: Duration::ZERO,
        }
    }

    pub fn model(&self) -> &DependencyModel {
        &self.model
    }

    /// The earliest instant something is due; the driver calls [`Self::advance`] then.
    pub fn next_due(&self) -> Option<Duration> {
        self.due.peek().map(|Reverse((t, _))| *t)
    }

    /// Applies everything due at or before `now`, each at its own instant, in order (see the
    /// module docs), and appends what it did to `out`.
    pub fn advance(&mut self, now: Duration, out: &mut Vec<Step>) {
        self.clock = self.clock.max(now);
        while let Some(&Reverse((t, due))) = self.due.peek() {
            if t > self.clock {
                return;
            }
            self.due.pop();
            self.apply(t, due, out);
        }
    }

    /// Request `req` (fault key `key`, see [`crate::faults::request_key`]) arrives at `now`:
    /// everything due up to `now` is applied, then the model decides. A rejected request is
    /// answered through `out` at once; any other is answered by a later `advance`.
    pub fn arrive(
        &mut self,
        now: Duration,
        req: ReqId,
        key: u64,
        out: &mut Vec<Step>,
    ) -> Admission {
        self.arrive_by(now, req, key, Caller::default(), out)
    }

    /// [`Self::arrive`] for a request whose caller said when it gives up, or its class (see
    /// [`DependencyModel::arrive_by`]).
    pub fn arrive_by(
        &mut self,
        now: Duration,
        req: ReqId,
        key: u64,
        caller: Caller,
        out: &mut Vec<Step>,
    ) -> Admission {
        self.advance(now, out);
        let now = self.clock;
        let admission = self.model.arrive_by(now, req, key, caller);
        match admission {
            Admission::Start { service } => {
                self.waiting.insert(
                    req,
                    Waiting {
                        admit: Some(now),
                        immediate: true,
                    },
                );
                self.due.push(Reverse((now + service, Due::WorkDone(req))));
            }
            Admission::Queued | Admission::Held => {
                if let (Admission::Queued, Some(timeout)) = (admission, self.model.queue_timeout())
                {
                    self.due
                        .push(Reverse((now + timeout, Due::QueueTimeout(req))));
                }
                self.waiting.insert(
                    req,
                    Waiting {
                        admit: None,
                        immediate: false,
                    },
                );
            }
            Admission::Rejected => out.push(self.at_once(req, 503, Cause::Full, None)),
            Admission::Refused { status, latency } if latency.is_zero() => {
                out.push(self.at_once(req, status, Cause::Down, None))
            }
            Admission::Limited => out.push(self.at_once(req, 503, Cause::Limited, None)),
            Admission::Shed => out.push(self.at_once(req, 503, Cause::Shed, None)),
            Admission::Late => {
                out.push(self.at_once(req, crate::chain::DEADLINE_STATUS, Cause::Deadline, None))
            }
            Admission::Throttled { retry_after } => {
                out.push(self.at_once(req, 429, Cause::RateLimited, Some(retry_after)))
            }
            Admission::Refused { status, latency } => {
                // Answered later, without a worker or a queue place.
                self.waiting.insert(
                    req,
                    Waiting {
                        admit: None,
                        immediate: false,
                    },
                );
                self.due
                    .push(Reverse((now + latency, Due::DownAnswer(req, status))));
            }
        }
        admission
    }

    /// The answer, at the schedule's clock, to a request refused at its arrival: no worker,
    /// no work.
    fn at_once(
        &self,
        req: ReqId,
        status: u16,
        cause: Cause,
        retry_after: Option<Duration>,
    ) -> Step {
        Step::Answer(Answer {
            req,
            at: self.clock,
            status,
            cause,
            admit: None,
            immediate: false,
            retry_after,
            cost: self.model.config().faults.cost(cause),
        })
    }

    /// The run ends: every waiting request is forgotten (its driver answers it if it wants to)
    /// and no work or late answer is due any more; only the freeze's edges stay scheduled.
    pub fn end(&mut self) {
        self.waiting.clear();
        self.due.retain(|Reverse((_, due))| due.is_edge());
    }

    /// Requests arrived and not answered yet.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn apply(&mut self, t: Duration, due: Due, out: &mut Vec<Step>) {
        match due {
            Due::FreezeBegins => self.model.freeze_begins(t),
            Due::FreezeEnds => {
                for req in self.model.freeze_ends(t) {
                    self.answer(t, req, 503, Cause::Freeze, out);
                }
            }
            Due::WorkDone(req) => {
                let done = self.model.work_done(t, req);
                match done.completion {
                    Completion::Respond(200) => self.answer(t, req, 200, Cause::Ok, out),
                    Completion::Respond(status) => self.answer(t, req, status, Cause::Fault, out),
                    Completion::Lost(status) => self.answer(t, req, status, Cause::Lost, out),
                    Completion::Permanent(status) => {
                        self.answer(t, req, status, Cause::Permanent, out)
                    }
                    Completion::RespondLate(status, delay) => {
                        self.due
                            .push(Reverse((t + delay, Due::LateAnswer(req, status))));
                    }
                    // The freeze took it over; its end answers it.
                    Completion::Timeout => {
                        self.answer(t, req, crate::faults::TIMEOUT_STATUS, Cause::Timeout, out)
                    }
                    Completion::Cutoff => {
                        self.answer(t, req, crate::faults::CUTOFF_STATUS, Cause::Cutoff, out)
                    }
                    Completion::Stale => {}
                }
                if let Some((next, service)) = done.next {
                    if let Some(w) = self.waiting.get_mut(&next) {
                        w.admit = Some(t);
                    }
                    self.due.push(Reverse((t + service, Due::WorkDone(next))));
                    out.push(Step::Started {
                        req: next,
                        at: t,
                        service,
                    });
                }
            }
            Due::QueueTimeout(req) => {
                if self.model.expire(t, req) {
                    self.answer(t, req, 503, Cause::QueueTimeout, out);
                }
            }
            Due::LateAnswer(req, status) => self.answer(t, req, status, Cause::Slow, out),
            Due::DownAnswer(req, status) => self.answer(t, req, status, Cause::Down, out),
        }
    }

    fn answer(&mut self, t: Duration, req: ReqId, status: u16, cause: Cause, out: &mut Vec<Step>) {
        if let Some(w) = self.waiting.remove(&req) {
            out.push(Step::Answer(Answer {
                req,
                at: t,
                status,
                cause,
                admit: w.admit,
                immediate: w.immediate,
                retry_after: None,
                cost: self.model.config().faults.cost(cause),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Params, Scenario};

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
        assert!(crate::faults::PERMANENT_STATUSES.contains(&a[0].status));
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
        let mut cfg = Params::default().service_config(&crate::Scenario::e03a(), 1);
        cfg.faults = Default::default();
        cfg.timeline
            .rate_limited
            .push(crate::timeline::RateLimitWindow {
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
        let mut cfg = Params::default().service_config(&crate::Scenario::e03a(), 1);
        cfg.faults = Default::default();
        cfg.timeline.down.push(crate::timeline::DownWindow {
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
        let mut cfg = Params::default().service_config(&crate::Scenario::e03a(), 1);
        cfg.faults = Default::default();
        cfg.workers = 1;
        cfg.queue = 0;
        cfg.timeline.down.push(crate::timeline::DownWindow {
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

    #[test]
    fn earliest_pops_the_smallest_key_first_whatever_its_value() {
        let mut heap = BinaryHeap::new();
        for (key, value) in [((5, 0), "c"), ((1, 1), "a"), ((5, 2), "d"), ((3, 3), "b")] {
            heap.push(Earliest { key, value });
        }
        let order: Vec<_> = std::iter::from_fn(|| heap.pop().map(|e| e.value)).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }
}
