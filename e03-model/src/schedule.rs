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
    /// The tokens the answer cost (the rate-limit article's accounting); `None` without it.
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
