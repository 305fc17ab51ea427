//! One workload interface: every way the lab's callers make calls is a state machine behind the
//! [`Workload`] trait, and one driver per clock (the swarm's on tokio, the simulator's on its
//! event queue) drives any of them without knowing which it is.
//!
//! The shape is the [`ClientSession`]'s, for a whole run: the driver asks
//! [`Workload::next_wake`] when it must next call in, sleeps until then, and calls
//! [`Workload::on_wake`] with the time it woke, once per wake that is due: each call handles
//! the earliest one, so the driver can hand over the answers that came back meanwhile (the
//! simulator's dependency answers a refused request at once, and the next client's budget must
//! see it). Wakes due at one instant come in the order they were scheduled (a retry due at once
//! after those already waiting). The answer of every attempt it sent goes back
//! through [`Workload::on_answer`], named by its [`AttemptId`]. Both append to a [`Next`], the
//! driver's buffer (reused, so a simulated run allocates nothing per event): the attempts to
//! send now, the attempts a policy layer refused (logged as failed fast), the operations that
//! ended, and the arrivals dropped. [`Workload::stop`] ends the run early: every
//! operation in progress ends, an attempt still in flight counted as sent.
//!
//! ```text
//! loop {
//!     select {
//!         sleep_until(w.next_wake()) => w.on_wake(now, policy, &mut next), // again while due
//!         (id, result) = an answer    => w.on_answer(id, result, now, policy, &mut next),
//!     }
//!     log next.refused, next.ended, next.dropped; send next.sends; next.clear()
//! }   // until no wake is asked for and nothing is in flight
//! ```
//!
//! The machines here:
//! - [`Clients`]: a closed loop (or a fixed group, or fixed-rate callers) of N
//!   [`ClientSession`]s, one machine with a min-heap of their wakes;
//! - [`Arrivals`]: the open loop, [`OpenLoop`]'s arrivals started in its slots' sessions;
//! - [`Steps`]: the rate-limit article's step workload ([`StepWorkload`]), one call at a time;
//! - the chain's top caller: a [`Clients`] of one session, its top requests one after the
//!   other ([`top_caller`]);
//! - [`FanOut`]: each request calls the dependency K times at once and ends when every call
//!   has (Dean and Barroso, "The Tail at Scale").
//!
//! A workload never reads a clock and does no IO; it decides, the driver acts.
//!
//! Where it stands (issue "One plan, one workload interface, one IO layer", item 3): the
//! simulator drives every one of these through its one engine (`simulator::engine`), with the
//! same results as its former loops (`lab simulate e03b --seeds 1-100` and the catalogue,
//! byte for byte), and the swarm through its one live driver (`client-swarm`'s `drive`: a timer
//! task for the wakes, a task per attempt that hands its answer over and sends what is then
//! due), with send lateness within the run-to-run spread of its former task per client
//! (ARCHITECTURE.md). The
//! chain's top caller is a [`Clients`] of one session ([`top_caller`]),
//! driven by both drivers like the rest.
//!
//! This file holds the interface: the [`Workload`] trait and what a workload hands its driver
//! ([`Next`] and the records in it: [`Outgoing`], [`Refused`], [`Ended`], and [`FanOutEnd`],
//! here rather than beside [`FanOut`] because [`Next`] carries it). Each machine is a file of
//! its own (`clients.rs`, `arrivals.rs`, `fan_out.rs`, `steps.rs`, `balanced.rs`), and so is
//! the chain's top caller (`top_caller.rs`, a [`Clients`] of one session): they use this file,
//! which only declares them and re-exports their types, so no circle ties them to it.
//!
//! [`ClientSession`]: crate::session::ClientSession
//! [`OpenLoop`]: crate::arrivals::OpenLoop
//! [`StepWorkload`]: crate::steps::StepWorkload

use std::time::Duration;

use crate::balancer::{HostChange, Probe};
use crate::budget::Rejection;
use crate::operation::{AttemptResult, OpOutcome};
use crate::policy::Policies;
use crate::priority::Priority;
use crate::session::{AttemptId, OpEnd, SendAttempt};
use crate::steps::Flow;

mod arrivals;
mod balanced;
mod clients;
mod fan_out;
mod steps;
mod top_caller;

pub use arrivals::Arrivals;
pub use balanced::Balanced;
pub use clients::Clients;
pub use fan_out::FanOut;
pub use steps::Steps;
pub use top_caller::{top_caller, top_session};

/// An attempt to send now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing {
    pub id: AttemptId,
    /// When it was due (its operation's start, the end of its retry wait, its step's start).
    pub due: Duration,
    /// Give up waiting for its answer this long after sending it.
    pub timeout: Duration,
    /// The step workload's flow and step (the rate-limit article); `None` elsewhere.
    pub flow: Option<Flow>,
    pub step: Option<u32>,
    /// Its operation's class (sent in the priority header when best effort).
    pub class: Priority,
    /// The replica of the dependency it goes to (`E03_REPLICAS`; 0 when there is one):
    /// [`Balanced`] picks it.
    pub replica: u16,
}

impl Outgoing {
    /// The fault key of the attempt (its fault fate's identity).
    pub fn key(&self) -> u64 {
        self.id.key()
    }
}

impl From<SendAttempt> for Outgoing {
    fn from(a: SendAttempt) -> Self {
        Outgoing {
            id: a.id,
            due: a.due,
            timeout: a.timeout,
            flow: None,
            step: None,
            class: a.class,
            replica: 0,
        }
    }
}

/// An operation that ended: its log record's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    pub client: u32,
    pub op: u32,
    pub start: Duration,
    pub end: Duration,
    /// Attempts sent (an attempt in flight at a stop counts).
    pub attempts: u32,
    pub outcome: OpOutcome,
    /// The step workload's flow; `None` elsewhere.
    pub flow: Option<Flow>,
    pub class: Priority,
}

impl From<OpEnd> for Ended {
    fn from(e: OpEnd) -> Self {
        Ended {
            client: e.client,
            op: e.op,
            start: e.start,
            end: e.end,
            attempts: e.attempts,
            outcome: e.outcome,
            flow: None,
            class: e.class,
        }
    }
}

/// An attempt a policy layer refused: it is not sent; it failed fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub attempt: Outgoing,
    pub why: Rejection,
}

/// What a workload asks of its driver after a wake-up or an answer. The driver logs the refused
/// attempts, the ended operations and the dropped arrivals, then sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Next {
    /// Send these now, in this order; hand each answer to [`Workload::on_answer`].
    pub sends: Vec<Outgoing>,
    /// Attempts refused by the policy layer (each one's operation is in `ended`).
    pub refused: Vec<Refused>,
    /// Operations that ended.
    pub ended: Vec<Ended>,
    /// Arrivals dropped (their intended starts): the open loop's pool was full.
    pub dropped: Vec<Duration>,
    /// Fan-out requests that ended ([`FanOut`]): every call of each is in `ended`.
    pub fanouts: Vec<FanOutEnd>,
    /// Attempts to cancel: still in flight when their hedged operation ended ([`crate::hedge`]).
    /// Their answers no longer go to the workload; log each as cancelled (it counts as sent).
    pub cancels: Vec<AttemptId>,
    /// Replicas that left or re-entered the balancer's rotation ([`Balanced`]): log each.
    pub hosts: Vec<HostChange>,
    /// Health probes to send now ([`Balanced`] with active health checks): a `GET /ready` to
    /// each one's replica; hand each answer to [`Workload::on_probe`].
    pub probes: Vec<Probe>,
}

impl Next {
    /// Empties it, keeping its allocations.
    pub fn clear(&mut self) {
        self.sends.clear();
        self.refused.clear();
        self.ended.clear();
        self.dropped.clear();
        self.fanouts.clear();
        self.cancels.clear();
        self.hosts.clear();
        self.probes.clear();
    }
}

/// One run's callers as one sans-IO state machine (see the module doc).
pub trait Workload {
    /// When the driver must call [`on_wake`](Self::on_wake) next; `None`: only answers can make
    /// anything happen (or, with nothing in flight, the run is over).
    fn next_wake(&self) -> Option<Duration>;

    /// Woken at `now` (at or after [`next_wake`](Self::next_wake)): the earliest wake due by
    /// `now`, and only it. The driver calls again while `next_wake()` is at or before `now`.
    /// What it asks is appended to `next`.
    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next);

    /// The attempt `id` (one of [`Next::sends`]) ended at `now` with `result`; what that asks
    /// is appended to `next`.
    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    );

    /// The driver stops the run at `now`: every operation in progress ends (an attempt in
    /// flight, whose answer the driver gave up on, counted as sent); nothing more is due.
    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended>;

    /// The answer to a health probe [`Next::probes`] asked for, at `now`: `ok` when its
    /// replica said it is ready. Only a workload over replicas with active health checks
    /// ([`Balanced`]) sends probes; the others have nothing to do with an answer.
    fn on_probe(&mut self, probe: Probe, ok: bool, now: Duration, next: &mut Next) {
        let _ = (probe, ok, now, next);
    }
}

/// A fan-out request that ended: of its `calls` operations (clients `client x calls` to
/// `client x calls + calls - 1`, operation `request`), `quorum` succeeded, or so many failed
/// that they no longer can, or every one ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanOutEnd {
    /// The caller (user) that made the request.
    pub client: u32,
    /// The caller's request number, from 0 (the operation number of each of its calls).
    pub request: u32,
    pub start: Duration,
    /// When it ended: its quorum's last success, the failure that made the quorum
    /// unreachable, or its last call's end.
    pub end: Duration,
    pub calls: u32,
    /// Successes it needed (`calls`: all of them).
    pub quorum: u32,
    /// Calls that had succeeded and failed by then.
    pub ok: u32,
    pub failed: u32,
    /// Calls that had failed by then and were served by their fallback
    /// ([`Strategy::fallbacks`](crate::strategy::Strategy::fallbacks)): they count towards the
    /// quorum, and make the request degraded.
    pub fallbacks: u32,
    /// Attempts its calls that had ended by then sent.
    pub attempts: u32,
}

/// The fan-out success rule, once for the workload, its record and the analyzer: a request
/// succeeds when its successes and the failed calls its fallbacks served reach its quorum.
pub fn quorum_met(ok: u32, fallbacks: u32, quorum: u32) -> bool {
    ok + fallbacks >= quorum
}

impl FanOutEnd {
    /// Whether its quorum succeeded (a fallback's answer counts): [`quorum_met`].
    pub fn success(&self) -> bool {
        quorum_met(self.ok, self.fallbacks, self.quorum)
    }

    /// Whether it succeeded with a fallback's answer in it (served degraded).
    pub fn degraded(&self) -> bool {
        self.success() && self.fallbacks > 0
    }
}

/// The sooner of two wakes, either of which may be absent.
fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod test_support;
