//! The run's scheduler: the core's [`DependencyModel`] plus everything due around it, driven
//! in logical time. No clock and no IO here: every method takes `now` (time since the run's
//! time zero) and returns the answers to send, so it is tested like the core.
//!
//! # Logical time, no drift
//!
//! The model is never told "now" by a late timer. Every future instant the run cares about (a
//! worker's scheduled completion, a slow answer's due time, the freeze's edges) is an entry of
//! [`RunState`]'s queue, and [`RunState::advance`] applies every entry due up to a given moment
//! *at its own scheduled instant*, in time order. A worker that finishes at 40 ms and takes the
//! next queued request starts it at 40 ms, not at 41 ms when tokio's timer fired, so the pool
//! completes exactly `workers / service_time` requests per second whatever the timer lateness.
//! This is a discrete-event loop with the wall clock as its horizon; the live service and a
//! simulator get the same decisions.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use e03_core::dependency::ServiceConfig;
use e03_core::events::Cause;
use e03_core::timeline::FreezeWindow;
use e03_core::{Admission, Completion, DependencyModel, ReqId};
use tokio::sync::oneshot;

/// Status sent to a waiting handler. 400 means "malformed identity headers".
pub type Answer = u16;

/// A request waiting for its answer.
pub struct Pending {
    pub tx: oneshot::Sender<Answer>,
    pub arrival: Duration,
    /// When a worker started it.
    pub admit: Option<Duration>,
    /// A worker was free when it arrived.
    pub immediate: bool,
    /// Status of a late answer, between its worker's completion and its due time.
    pub late: Option<u16>,
}

/// An answer decided under the lock, sent and logged after it is released.
pub struct Delivery {
    pub seq: ReqId,
    pub status: u16,
    pub cause: Cause,
    pub admit: Option<Duration>,
    pub immediate: bool,
    pub tx: oneshot::Sender<Answer>,
}

/// A future instant the run must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Due {
    /// A worker's service time for this request ends.
    WorkDone(ReqId),
    /// This request's late answer (E03-A slow fate) is due.
    LateAnswer(ReqId),
}

/// Where the run is relative to its freeze window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreezeStage {
    Before,
    During,
    After,
}

/// The model and everything scheduled around it; behind the run's `std::sync::Mutex`, which is
/// never held across an await.
pub struct RunState {
    pub model: DependencyModel,
    due: BinaryHeap<Reverse<(Duration, Due)>>,
    pending: HashMap<ReqId, Pending>,
    freeze: Option<FreezeWindow>,
    stage: FreezeStage,
    /// The latest instant advanced to. Arrivals are handled on many threads, so one stamped a
    /// few microseconds earlier may come in after the driver advanced past it; the model then
    /// sees it at this instant instead (never in the past, where e.g. a freeze already ended
    /// would hold it forever). Its log record keeps its true arrival time.
    clock: Duration,
    pub ended: bool,
}

impl RunState {
    pub fn new(config: ServiceConfig) -> Self {
        let freeze = config.timeline.freeze;
        RunState {
            model: DependencyModel::new(config),
            due: BinaryHeap::new(),
            pending: HashMap::new(),
            freeze,
            stage: if freeze.is_some() {
                FreezeStage::Before
            } else {
                FreezeStage::After
            },
            clock: Duration::ZERO,
            ended: false,
        }
    }

    /// The next freeze edge not yet applied.
    fn next_edge(&self) -> Option<Duration> {
        match (self.stage, self.freeze) {
            (FreezeStage::Before, Some(f)) => Some(f.start),
            (FreezeStage::During, Some(f)) => Some(f.end),
            _ => None,
        }
    }

    /// The earliest instant something is due.
    pub fn next_due(&self) -> Option<Duration> {
        let queued = self.due.peek().map(|Reverse((t, _))| *t);
        match (self.next_edge(), queued) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Applies everything due at or before `now`, each at its own instant, in time order (a
    /// freeze edge before work due at the same instant: the window is half-open).
    pub fn advance(&mut self, now: Duration, out: &mut Vec<Delivery>) {
        self.clock = self.clock.max(now);
        let now = self.clock;
        loop {
            let edge = self.next_edge();
            let work = self.due.peek().map(|Reverse((t, _))| *t);
            let edge_first = match (edge, work) {
                (Some(e), Some(w)) => e <= w,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return,
            };
            if edge_first {
                let t = edge.expect("edge present");
                if t > now {
                    return;
                }
                self.apply_edge(t, out);
            } else {
                let Some(Reverse((t, due))) = self.due.peek().copied() else {
                    return;
                };
                if t > now {
                    return;
                }
                self.due.pop();
                self.apply_due(t, due, out);
            }
        }
    }

    fn apply_edge(&mut self, t: Duration, out: &mut Vec<Delivery>) {
        match self.stage {
            FreezeStage::Before => {
                self.model.freeze_begins(t);
                self.stage = FreezeStage::During;
            }
            FreezeStage::During => {
                for id in self.model.freeze_ends(t) {
                    self.answer(id, 503, Cause::Freeze, out);
                }
                self.stage = FreezeStage::After;
            }
            FreezeStage::After => {}
        }
    }

    fn apply_due(&mut self, t: Duration, due: Due, out: &mut Vec<Delivery>) {
        match due {
            Due::WorkDone(id) => {
                let done = self.model.work_done(t, id);
                match done.completion {
                    Completion::Respond(200) => self.answer(id, 200, Cause::Ok, out),
                    Completion::Respond(code) => self.answer(id, code, Cause::Fault, out),
                    Completion::RespondLate(code, delay) => {
                        if let Some(p) = self.pending.get_mut(&id) {
                            p.late = Some(code);
                        }
                        self.due.push(Reverse((t + delay, Due::LateAnswer(id))));
                    }
                    // Held: the freeze's end answers it. Stale: already answered.
                    Completion::Stale => {}
                }
                if let Some((next, service)) = done.next {
                    // Never start a request before it arrived (arrivals on other threads may be
                    // applied a few microseconds out of order).
                    let start = self.pending.get(&next).map_or(t, |p| p.arrival.max(t));
                    if let Some(p) = self.pending.get_mut(&next) {
                        p.admit = Some(start);
                    }
                    self.due
                        .push(Reverse((start + service, Due::WorkDone(next))));
                }
            }
            Due::LateAnswer(id) => {
                let status = self.pending.get(&id).and_then(|p| p.late).unwrap_or(200);
                self.answer(id, status, Cause::Slow, out);
            }
        }
    }

    /// A request arrives at `now` (after everything due up to `now` was applied): the model
    /// decides, and the request either waits in `pending` or is answered through `out`.
    pub fn arrive(
        &mut self,
        now: Duration,
        seq: ReqId,
        key: u64,
        tx: oneshot::Sender<Answer>,
        out: &mut Vec<Delivery>,
    ) {
        self.advance(now, out);
        let now = self.clock;
        let mut pending = Pending {
            tx,
            arrival: now,
            admit: None,
            immediate: false,
            late: None,
        };
        match self.model.arrive(now, seq, key) {
            Admission::Start { service } => {
                pending.admit = Some(now);
                pending.immediate = true;
                self.pending.insert(seq, pending);
                self.due.push(Reverse((now + service, Due::WorkDone(seq))));
            }
            Admission::Queued | Admission::Held => {
                self.pending.insert(seq, pending);
            }
            Admission::Rejected => out.push(Delivery {
                seq,
                status: 503,
                cause: Cause::Full,
                admit: None,
                immediate: false,
                tx: pending.tx,
            }),
        }
    }

    /// The run ends: nothing more is due, and waiting requests lose their answer channel (their
    /// handlers answer 503 themselves).
    pub fn end(&mut self) {
        self.ended = true;
        self.pending.clear();
        self.due.clear();
    }

    fn answer(&mut self, id: ReqId, status: u16, cause: Cause, out: &mut Vec<Delivery>) {
        if let Some(p) = self.pending.remove(&id) {
            out.push(Delivery {
                seq: id,
                status,
                cause,
                admit: p.admit,
                immediate: p.immediate,
                tx: p.tx,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_core::{Params, Scenario};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn state(pairs: &[(&str, &str)], scenario: Scenario) -> RunState {
        let raw = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let p = Params::from_raw(&raw).unwrap();
        RunState::new(p.service_config(scenario, 42))
    }

    /// An arrival that is admitted, queued or held (answered later).
    fn arrive(st: &mut RunState, now: Duration, id: ReqId) -> oneshot::Receiver<u16> {
        let (tx, rx) = oneshot::channel();
        let mut out = Vec::new();
        st.arrive(now, id, id, tx, &mut out);
        assert!(out.is_empty(), "not answered at once");
        rx
    }

    #[test]
    fn a_saturated_pool_completes_exactly_its_capacity_in_logical_time() {
        // E03-B: no transient faults, and its freeze (8.5 s) is far away. 2 workers, 40 ms:
        // 100 requests queued at 0 finish in 40 ms rounds, however late the caller advances.
        let mut st = state(
            &[("E03_WORKERS", "2"), ("E03_QUEUE", "1000")],
            Scenario::E03B,
        );
        let _rx: Vec<_> = (0..100).map(|id| arrive(&mut st, ms(0), id)).collect();
        assert_eq!((st.model.busy_workers(), st.model.queued()), (2, 98));
        let mut out = Vec::new();
        st.advance(ms(2003), &mut out); // one wake-up, 3 ms late, after 50 rounds
        assert_eq!(out.len(), 100);
        let admits: Vec<_> = out.iter().map(|d| d.admit.unwrap()).collect();
        assert_eq!(admits[98], ms(1960), "the 50th round starts at 49 x 40 ms");
        assert!(out.iter().all(|d| d.status == 200 && d.cause == Cause::Ok));
        assert!(out[..2].iter().all(|d| d.immediate) && !out[2].immediate);
    }

    #[test]
    fn a_full_pool_rejects_at_once() {
        let mut st = state(&[("E03_WORKERS", "1"), ("E03_QUEUE", "1")], Scenario::E03B);
        let _a = arrive(&mut st, ms(0), 0);
        let _b = arrive(&mut st, ms(0), 1);
        let (tx, _rx) = oneshot::channel();
        let mut out = Vec::new();
        st.arrive(ms(1), 2, 2, tx, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].seq, out[0].status, out[0].cause),
            (2, 503, Cause::Full)
        );
        assert_eq!(out[0].admit, None);
    }

    #[test]
    fn freeze_holds_work_and_answers_it_503_at_its_end() {
        let mut st = state(
            &[
                ("E03_WORKERS", "1"),
                ("E03_SERVICE_MS", "100"),
                ("E03_FREEZE_START_S", "0.05"),
                ("E03_FREEZE_END_S", "0.3"),
                ("E03_RECOVERY_END_S", "0.5"),
            ],
            Scenario::E03B,
        );
        let _rx0 = arrive(&mut st, ms(0), 0);
        let _rx1 = arrive(&mut st, ms(100), 1);
        assert_eq!((st.model.busy_workers(), st.model.held()), (0, 2));
        let mut out = Vec::new();
        st.advance(ms(299), &mut out);
        assert!(out.is_empty(), "nothing answered during the freeze");
        st.advance(ms(300), &mut out);
        let answers: Vec<_> = out.iter().map(|d| (d.seq, d.status, d.cause)).collect();
        assert_eq!(answers, [(0, 503, Cause::Freeze), (1, 503, Cause::Freeze)]);
        assert_eq!(out[0].admit, Some(ms(0)));
        // After the freeze: degraded, service time doubled.
        let _rx2 = arrive(&mut st, ms(301), 2);
        assert_eq!(st.next_due(), Some(ms(501)));
    }

    #[test]
    fn an_arrival_handled_after_the_freeze_end_is_served_not_held_forever() {
        let mut st = state(
            &[
                ("E03_FREEZE_START_S", "0.1"),
                ("E03_FREEZE_END_S", "0.3"),
                ("E03_RECOVERY_END_S", "0.3"),
            ],
            Scenario::E03B,
        );
        let mut out = Vec::new();
        st.advance(ms(300), &mut out); // the driver applied the freeze's end
        let _rx = arrive(&mut st, ms(299), 0); // stamped just before it, handled just after
        assert_eq!((st.model.busy_workers(), st.model.held()), (1, 0));
        assert_eq!(st.pending[&0].admit, Some(ms(300)));
    }

    #[test]
    fn slow_answers_free_the_worker_and_answer_later() {
        let mut st = state(
            &[
                ("E03_WORKERS", "1"),
                ("E03_FAIL_RATE", "0"),
                ("E03_SLOW_RATE", "1"),
                ("E03_SLOW_MS", "500"),
            ],
            Scenario::E03A,
        );
        let _rx0 = arrive(&mut st, ms(0), 0);
        let _rx1 = arrive(&mut st, ms(10), 1);
        assert_eq!(st.model.queued(), 1);
        let mut out = Vec::new();
        st.advance(ms(100), &mut out);
        assert!(out.is_empty(), "nothing answered before 540 ms");
        assert_eq!(st.pending[&1].admit, Some(ms(40)), "worker freed at 40 ms");
        st.advance(ms(540), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].seq, out[0].status, out[0].cause),
            (0, 200, Cause::Slow)
        );
    }

    #[test]
    fn ending_drops_every_waiting_answer() {
        let mut st = state(&[("E03_WORKERS", "1")], Scenario::E03B);
        let mut rx = arrive(&mut st, ms(0), 0);
        st.end();
        assert_eq!(
            st.next_due(),
            Some(ms(8500)),
            "only the freeze edge is left"
        );
        assert_eq!(rx.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        assert!(st.pending.is_empty());
    }
}
