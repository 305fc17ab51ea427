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
//! - [`Steps`]: seed 002's step workload ([`StepWorkload`]), one call at a time;
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

use std::collections::BinaryHeap;
use std::time::Duration;

use crate::arrivals::{Arrival, OpenLoop};
use crate::balancer::{Balancer, BalancerSpec, HostChange, Outcome, Probe};
use crate::budget::Rejection;
use crate::chain::ChainVariant;
use rand::Rng;

use crate::operation::{AttemptResult, GiveUp, OpOutcome};
use crate::policy::Policies;
use crate::priority::Priority;
use crate::rng::{stream, LabRng, Stream};
use crate::schedule::Earliest;
use crate::session::{
    AttemptId, ClientSession, OpEnd, SendAttempt, SessionConfig, Starts, Wake,
    FIRST_START_SPREAD_US,
};
use crate::shard::Shard;
use crate::steps::{Call, Done, Flow, StepConfig, StepWorkload};
use crate::strategy::Strategy;

/// An attempt to send now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing {
    pub id: AttemptId,
    /// When it was due (its operation's start, the end of its retry wait, its step's start).
    pub due: Duration,
    /// Give up waiting for its answer this long after sending it.
    pub timeout: Duration,
    /// The step workload's flow and step (seed 002); `None` elsewhere.
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

/// The session of a chain's top caller (`variant`'s layer 0): the top's limits, `requests`
/// operations one after the other from time zero, each starting when the one before ended (no
/// think time).
pub fn top_session(variant: &ChainVariant, requests: u32) -> SessionConfig {
    SessionConfig {
        limits: variant.top.limits(),
        duration: Duration::MAX,
        think: (Duration::ZERO, Duration::ZERO),
        starts: Starts::AtZero,
        max_ops: Some(requests),
        best_effort_ppm: 0,
    }
}

/// A chain's top caller as one of these workloads: client 0 with the top's policy
/// ([`crate::chain::HopSpec::strategy`], [`top_session`]), its operation `o` top request `o`,
/// and the policy instance it retries under (no budget: the top's strategy is A or B). Its
/// decisions are [`crate::chain::HopCall`]'s (the same operation, strategy and limits). Its
/// attempts carry the deadline header (their timeout) exactly when deadlines travel, as a hop's
/// do: the driver adds it.
pub fn top_caller(variant: &ChainVariant, requests: u32, seed: u64) -> (Clients, Policies) {
    let strategy = variant.top.strategy();
    let session = ClientSession::new(seed, 0, top_session(variant, requests));
    (
        Clients::of([session], &strategy),
        Policies::fleet(&strategy, seed),
    )
}

/// The sooner of two wakes, either of which may be absent.
fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// N [`ClientSession`]s as one machine: a closed loop (`Starts::ClosedLoop`), a group starting
/// at zero, a ramp, fixed-rate callers, or the open loop's slots. Each session keeps its own rules (when
/// its operations start, its think times, its retries); this keeps a min-heap of their wakes,
/// earliest first, ties in the order they were scheduled.
#[derive(Debug, Clone)]
pub struct Clients {
    sessions: Vec<ClientSession>,
    /// `(due, order)` and the client: one entry per session with a wake; `order` is
    /// [`Self::stamp`]'s.
    wakes: BinaryHeap<Earliest<(Duration, u64), u32>>,
    /// The next stamp: wakes due at one instant come in the order they were scheduled.
    order: u64,
    strategy: Strategy,
    /// Whose clients these are: session `i` is client `shard.index + i * shard.count`.
    shard: Shard,
}

impl Clients {
    /// Clients `0..n` of a run with this seed (each draws its own first start).
    pub fn new(seed: u64, n: u32, config: SessionConfig, strategy: &Strategy) -> Self {
        Self::of(
            (0..n).map(|c| ClientSession::new(seed, c, config)),
            strategy,
        )
    }

    /// These sessions; session `i` must be client `i`.
    pub fn of(sessions: impl IntoIterator<Item = ClientSession>, strategy: &Strategy) -> Self {
        Self::of_shard(sessions, strategy, Shard::WHOLE)
    }

    /// Shard `shard`'s clients among clients `0..n` of a run with this seed: the sessions one
    /// process of a sharded run drives ([`crate::shard`]), each the session it is in a whole run.
    pub fn shard(
        seed: u64,
        n: u32,
        config: SessionConfig,
        strategy: &Strategy,
        shard: Shard,
    ) -> Self {
        Self::of_shard(
            shard
                .clients(n)
                .map(|c| ClientSession::new(seed, c, config)),
            strategy,
            shard,
        )
    }

    /// These sessions of shard `shard`: session `i` must be client
    /// `shard.index + i * shard.count`.
    pub fn of_shard(
        sessions: impl IntoIterator<Item = ClientSession>,
        strategy: &Strategy,
        shard: Shard,
    ) -> Self {
        let mut clients = Clients {
            sessions: Vec::new(),
            wakes: BinaryHeap::new(),
            order: 0,
            strategy: strategy.clone(),
            shard,
        };
        for s in sessions {
            clients.push(s);
        }
        clients
    }

    /// Where client `c`'s session is.
    fn at(&self, c: u32) -> usize {
        ((c - self.shard.index) / self.shard.count) as usize
    }

    /// Adds the next client's session.
    fn push(&mut self, session: ClientSession) {
        let c = self.shard.index + self.sessions.len() as u32 * self.shard.count;
        assert_eq!(
            session.client(),
            c,
            "session {} of shard {} must be client {c}",
            self.sessions.len(),
            self.shard
        );
        self.sessions
            .push(session.with_hedging(self.strategy.hedge));
        self.schedule(c);
    }

    /// The place in the order of scheduling of something scheduled now.
    fn stamp(&mut self) -> u64 {
        self.order += 1;
        self.order - 1
    }

    fn schedule(&mut self, c: u32) {
        if let Some(t) = self.sessions[self.at(c)].next_wake() {
            let key = (t, self.stamp());
            self.wakes.push(Earliest { key, value: c });
        }
    }

    /// The earliest wake: `(due, order)`.
    fn earliest(&self) -> Option<(Duration, u64)> {
        self.wakes.peek().map(|e| e.key)
    }

    /// Client `c`'s next operation, of this class, starts at `start` (an open loop's
    /// arrival), woken now.
    fn start(
        &mut self,
        c: u32,
        start: Duration,
        class: Priority,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let at = self.at(c);
        self.sessions[at].begin(start, class);
        self.wake(c, now, policy, next);
    }

    fn wake(&mut self, c: u32, now: Duration, policy: &mut Policies, next: &mut Next) {
        let at = self.at(c);
        match self.sessions[at].on_wake(now, policy.of(c)) {
            Wake::Send(a) => {
                next.sends.push(a.into());
                // A hedged operation's next hedge (nothing for one attempt at a time).
                self.schedule(c);
            }
            Wake::Ended(end) => {
                next.ended.push(end.into());
                self.schedule(c);
            }
            Wake::Wait => self.schedule(c),
            Wake::Rejected { attempt, why, end } => {
                next.refused.push(Refused {
                    attempt: attempt.into(),
                    why,
                });
                next.ended.push(end.into());
                self.schedule(c);
            }
        }
    }
}

impl Workload for Clients {
    fn next_wake(&self) -> Option<Duration> {
        self.earliest().map(|(t, _)| t)
    }

    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        if let Some(&Earliest {
            key: (t, _),
            value: c,
        }) = self.wakes.peek()
        {
            if t <= now {
                self.wakes.pop();
                // A hedge's wake that an answer moved or made moot is stale: skipped.
                if self.sessions[self.at(c)].next_wake() == Some(t) {
                    self.wake(c, now, policy, next);
                }
            }
        }
    }

    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let c = id.client;
        let at = self.at(c);
        let session = &mut self.sessions[at];
        if let Some(end) = session.on_answer(id, now, result, &self.strategy, policy.of(c)) {
            next.ended.push(end.into());
        }
        session.drain_cancelled(&mut next.cancels);
        // A retry due, or the next operation's start.
        self.schedule(c);
    }

    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
        self.wakes.clear();
        self.sessions
            .iter_mut()
            .filter_map(|s| s.abort(now, policy.of(s.client())))
            .map(Ended::from)
            .collect()
    }
}

/// The open loop: [`OpenLoop`]'s arrivals, each started in a free slot's session (a slot per
/// operation in progress, at most `max_in_flight`), or dropped when none is free. A slot's
/// session is client `slot`; it takes the next arrival once its operation ended. An arrival
/// and a slot's wake due at one instant come in the order they were scheduled (the next arrival
/// is scheduled when the one before it came).
#[derive(Debug, Clone)]
pub struct Arrivals {
    open: OpenLoop,
    slots: Clients,
    /// The next arrival's place in the order of scheduling.
    arrival_order: u64,
}

impl Arrivals {
    pub fn new(open: OpenLoop, strategy: &Strategy) -> Self {
        let mut slots = Clients::of([], strategy);
        Arrivals {
            open,
            arrival_order: slots.stamp(),
            slots,
        }
    }

    /// The arrivals and slots (their counts).
    pub fn open_loop(&self) -> &OpenLoop {
        &self.open
    }

    /// Frees the slot of every operation that ended (`ended`, this call's).
    fn release(&mut self, ended: &[Ended]) {
        for e in ended {
            self.open.release(e.client);
        }
    }
}

impl Workload for Arrivals {
    fn next_wake(&self) -> Option<Duration> {
        sooner(self.open.next_arrival(), self.slots.next_wake())
    }

    /// The earliest of the next arrival (its operation starts in a free slot, sent at once, or
    /// it is dropped) and the slots' wakes.
    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let ended = next.ended.len();
        let arrival = self
            .open
            .next_arrival()
            .filter(|&t| t <= now)
            .map(|t| (t, self.arrival_order));
        let slot = self.slots.earliest().filter(|&(t, _)| t <= now);
        match (arrival, slot) {
            (Some(a), s) if s.is_none_or(|s| a < s) => {
                let arrival = self.open.on_arrival();
                self.arrival_order = self.slots.stamp();
                match arrival {
                    Arrival::Start {
                        slot,
                        start,
                        class,
                        new,
                    } => {
                        if let Some(session) = new {
                            self.slots.push(*session);
                        }
                        self.slots.start(slot, start, class, now, policy, next);
                    }
                    Arrival::Dropped { start } => next.dropped.push(start),
                }
            }
            _ => self.slots.on_wake(now, policy, next),
        }
        self.release(&next.ended[ended..]);
    }

    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let ended = next.ended.len();
        self.slots.on_answer(id, result, now, policy, next);
        self.release(&next.ended[ended..]);
    }

    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
        self.slots.stop(now, policy)
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
    /// ([`Strategy::fallbacks`]): they count towards the quorum, and make the request degraded.
    pub fallbacks: u32,
    /// Attempts its calls that had ended by then sent.
    pub attempts: u32,
}

impl FanOutEnd {
    /// Whether its quorum succeeded (a fallback's answer counts).
    pub fn success(&self) -> bool {
        self.ok + self.fallbacks >= self.quorum
    }

    /// Whether it succeeded with a fallback's answer in it (served degraded).
    pub fn degraded(&self) -> bool {
        self.success() && self.fallbacks > 0
    }
}

/// A fan-out request in progress.
#[derive(Debug, Clone, Copy)]
struct Request {
    start: Duration,
    /// Calls still going.
    left: u32,
    ok: u32,
    failed: u32,
    fallbacks: u32,
    attempts: u32,
    /// The latest end of its calls counted so far (live, answers handed over by parallel tasks
    /// may come out of time order: the request ends with its slowest call, whichever was
    /// handed over last).
    latest: Duration,
    /// Whether it was reported (its quorum decided before its last call ended).
    reported: bool,
}

/// One caller of a [`FanOut`]: its think stream, its next start, its request in progress.
#[derive(Debug, Clone)]
struct Caller {
    think: LabRng,
    /// Requests started.
    requests: u32,
    /// The request in progress, until its last call ends.
    current: Option<Request>,
}

/// Fan-out (issue "Hedging and adaptive clients", item 2; Dean and Barroso, "The Tail at
/// Scale", CACM 2013): N callers, each making one request at a time; a request calls the
/// dependency `calls` times at once and ends when every call has ended (the slowest decides its
/// latency), or as soon as `quorum` of them succeeded (`E03_FANOUT_QUORUM`; "good enough"
/// answers, as the article's search results from most leaves). Its other calls still go on:
/// nothing cancels them, and the caller's next request waits for them (its sessions are busy),
/// a think time after the last one ends. Each call is an operation of its own, with the strategy's retries: caller `u`'s
/// call `i` is client `u x calls + i`, and every call of request `r` is that client's operation
/// `r` (so its identity, fault fate and retry jitter are its own). A caller starts as a closed-
/// loop client does (its first request uniformly in the first 2 s, then a think time after
/// each request ends, from its own think stream) within the run's duration and
/// `E03_OPS_PER_CLIENT`.
#[derive(Debug, Clone)]
pub struct FanOut {
    calls: Clients,
    fan: u32,
    quorum: u32,
    /// The last this many calls of a request have a fallback ([`Strategy::fallbacks`]).
    fallbacks: u32,
    config: SessionConfig,
    seed: u64,
    callers: Vec<Caller>,
    /// `(start, order)` and the caller: the callers' next requests.
    starts: BinaryHeap<Earliest<(Duration, u64), u32>>,
}

impl FanOut {
    /// `callers` callers of a run with this seed, each request calling `fan` times and ending
    /// once `quorum` calls succeeded (0 or `fan`: all of them). `config`'s think times,
    /// duration and limits apply (its `starts` is the closed loop's).
    pub fn new(
        seed: u64,
        callers: u32,
        fan: u32,
        quorum: u32,
        config: SessionConfig,
        strategy: &Strategy,
    ) -> Self {
        assert!(fan > 0, "a fan-out of no call");
        let quorum = if quorum == 0 { fan } else { quorum.min(fan) };
        let call_config = SessionConfig {
            starts: Starts::OnDemand,
            ..config
        };
        let calls = Clients::of(
            (0..callers * fan).map(|c| ClientSession::new(seed, c, call_config)),
            strategy,
        );
        let mut fanout = FanOut {
            calls,
            fan,
            quorum,
            fallbacks: strategy.fallbacks.min(fan),
            config,
            seed,
            callers: Vec::new(),
            starts: BinaryHeap::new(),
        };
        for u in 0..callers {
            let mut think = stream(seed, Stream::Think, u);
            let first = Duration::from_micros(think.random_range(0..FIRST_START_SPREAD_US));
            fanout.callers.push(Caller {
                think,
                requests: 0,
                current: None,
            });
            fanout.schedule(u, first);
        }
        fanout
    }

    /// Caller `u`'s next request at `at`, if it is inside the run and its limit.
    fn schedule(&mut self, u: u32, at: Duration) {
        let caller = &self.callers[u as usize];
        let limit = self.config.max_ops.is_some_and(|m| caller.requests >= m);
        if at < self.config.duration && !limit {
            let key = (at, self.calls.stamp());
            self.starts.push(Earliest { key, value: u });
        }
    }

    /// Counts the calls that ended (`next.ended[from..]`) into their requests: a request is
    /// reported once its quorum succeeded, can no longer succeed, or its last call ended; once
    /// its last call ended its caller thinks before the next.
    fn count(&mut self, from: usize, next: &mut Next) {
        for i in from..next.ended.len() {
            let e = next.ended[i];
            let u = e.client / self.fan;
            let (fan, quorum) = (self.fan, self.quorum);
            // Call `i` of a request is client `u x fan + i`; the last `fallbacks` have one.
            let has_fallback = e.client % fan >= fan - self.fallbacks;
            let caller = &mut self.callers[u as usize];
            let Some(r) = caller.current.as_mut() else {
                continue;
            };
            r.left -= 1;
            if e.outcome == OpOutcome::Success {
                r.ok += 1;
            } else if has_fallback {
                r.fallbacks += 1;
            } else {
                r.failed += 1;
            }
            r.attempts += e.attempts;
            r.latest = r.latest.max(e.end);
            let decided = r.ok + r.fallbacks >= quorum || fan - r.failed < quorum || r.left == 0;
            if decided && !r.reported {
                r.reported = true;
                next.fanouts.push(FanOutEnd {
                    client: u,
                    request: e.op,
                    start: r.start,
                    end: r.latest,
                    calls: fan,
                    quorum,
                    ok: r.ok,
                    failed: r.failed,
                    fallbacks: r.fallbacks,
                    attempts: r.attempts,
                });
            }
            if r.left > 0 {
                continue;
            }
            let ended = r.latest;
            caller.current = None;
            let (lo, hi) = (
                self.config.think.0.as_micros() as u64,
                self.config.think.1.as_micros() as u64,
            );
            let think = Duration::from_micros(caller.think.random_range(lo..=hi.max(lo)));
            self.schedule(u, ended + think);
        }
    }
}

impl Workload for FanOut {
    fn next_wake(&self) -> Option<Duration> {
        sooner(self.starts.peek().map(|e| e.key.0), self.calls.next_wake())
    }

    /// The earliest of the callers' next requests (all its calls start, sent at once) and the
    /// calls' wakes (retries).
    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let from = next.ended.len();
        let start = self.starts.peek().map(|e| e.key).filter(|&(t, _)| t <= now);
        let call = self.calls.earliest().filter(|&(t, _)| t <= now);
        match (start, call) {
            (Some(s), c) if c.is_none_or(|c| s < c) => {
                let u = self.starts.pop().expect("peeked").value;
                let caller = &mut self.callers[u as usize];
                let request = caller.requests;
                caller.requests += 1;
                caller.current = Some(Request {
                    start: s.0,
                    left: self.fan,
                    ok: 0,
                    failed: 0,
                    fallbacks: 0,
                    attempts: 0,
                    latest: s.0,
                    reported: false,
                });
                let class = Priority::of(self.seed, u, request, self.config.best_effort_ppm);
                for i in 0..self.fan {
                    self.calls
                        .start(u * self.fan + i, s.0, class, now, policy, next);
                }
            }
            _ => self.calls.on_wake(now, policy, next),
        }
        self.count(from, next);
    }

    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let from = next.ended.len();
        self.calls.on_answer(id, result, now, policy, next);
        self.count(from, next);
    }

    /// Every call in progress ends; the requests they belong to are not reported (they did
    /// not end).
    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
        self.starts.clear();
        self.calls.stop(now, policy)
    }
}

/// Seed 002's step workload behind the one interface: [`StepWorkload`] names one call at a
/// time; each call gives up after `timeout`.
#[derive(Debug)]
pub struct Steps {
    inner: StepWorkload,
    timeout: Duration,
}

impl Steps {
    pub fn new(cfg: StepConfig, strategy: &Strategy, seed: u64, timeout: Duration) -> Self {
        Steps {
            inner: StepWorkload::new(cfg, strategy, seed),
            timeout,
        }
    }

    fn call(&self, call: Call, due: Duration) -> Outgoing {
        Outgoing {
            id: AttemptId {
                client: call.flow.client(),
                op: call.op,
                attempt: call.attempt,
            },
            due,
            timeout: self.timeout,
            flow: Some(call.flow),
            step: Some(call.step),
            class: Priority::Critical,
            replica: 0,
        }
    }

    fn ended(&self, d: Done) -> Ended {
        let cfg = self.inner.config();
        Ended {
            client: d.flow.client(),
            op: d.op,
            start: cfg.at(d.arrived),
            end: cfg.at(d.ended),
            attempts: d.attempts,
            outcome: if d.completed {
                OpOutcome::Success
            } else {
                OpOutcome::Failed(GiveUp::AttemptsExhausted)
            },
            flow: Some(d.flow),
            class: Priority::Critical,
        }
    }

    fn next(&self, n: crate::steps::Next, due: Duration, next: &mut Next) {
        next.sends.extend(n.send.map(|c| self.call(c, due)));
        next.ended
            .extend(n.ended.into_iter().map(|d| self.ended(d)));
    }
}

impl Workload for Steps {
    fn next_wake(&self) -> Option<Duration> {
        self.inner.next_wake()
    }

    /// A step begins; its first call was due at the step's start.
    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let due = self.inner.next_wake().unwrap_or(now);
        let n = self.inner.on_wake(now, policy.of(0));
        self.next(n, due, next);
    }

    /// The next call of the step is due now, when the previous one was answered.
    fn on_answer(
        &mut self,
        _id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let n = self.inner.on_answer(result, now, policy.of(0));
        self.next(n, now, next);
    }

    fn stop(&mut self, _now: Duration, _policy: &mut Policies) -> Vec<Ended> {
        let done = self.inner.finish();
        done.into_iter().map(|d| self.ended(d)).collect()
    }
}

/// Any workload, its attempts spread over the dependency's replicas by a client-side
/// [`Balancer`] (`E03_REPLICAS`, `E03_BALANCER`; issue "The server's side", item 3): one
/// balancer for the whole workload, as one sidecar proxy serves every caller of a process.
///
/// Each attempt the inner workload sends gets its replica ([`Outgoing::replica`]) when it is
/// sent; its answer feeds the balancer's outlier detection (a 5xx, a timeout or a broken
/// connection is a failure) before the inner workload sees it. The balancer's sweeps are wakes
/// of their own, taken before the inner workload's at the same instant; the replicas that left
/// or re-entered rotation are in [`Next::hosts`]. An attempt cancelled by a hedge, or still in
/// flight at a stop, is counted out of flight with no outcome.
pub struct Balanced {
    inner: Box<dyn Workload + Send>,
    balancer: Balancer,
    draws: LabRng,
    /// The replica of each attempt in flight.
    replica_of: std::collections::HashMap<AttemptId, u16>,
}

impl Balanced {
    /// `inner`'s attempts over `replicas` replicas (1 to 65,536); draws from the run's
    /// balancer stream under `seed`.
    pub fn new(
        inner: Box<dyn Workload + Send>,
        spec: BalancerSpec,
        replicas: usize,
        seed: u64,
    ) -> Balanced {
        assert!((1..=1 << 16).contains(&replicas), "replicas out of range");
        Balanced {
            inner,
            balancer: Balancer::new(spec, replicas),
            draws: stream(seed, Stream::Balancer, 0),
            replica_of: std::collections::HashMap::new(),
        }
    }

    /// Picks a replica for each attempt `next` got since `from`, and collects the balancer's
    /// changes.
    fn route(&mut self, from: usize, next: &mut Next) {
        for send in &mut next.sends[from..] {
            let draws = &mut self.draws;
            let host = self
                .balancer
                .pick(send.id.client, &mut || draws.random::<u64>());
            send.replica = host as u16;
            self.replica_of.insert(send.id, host as u16);
        }
        for id in &next.cancels {
            if let Some(host) = self.replica_of.remove(id) {
                self.balancer.abandoned(host as usize);
            }
        }
        next.hosts.extend(self.balancer.take_changes());
    }
}

/// How an attempt counts for outlier detection: any answer below 500 is good.
fn outcome(result: AttemptResult) -> Outcome {
    match result {
        AttemptResult::Status { code, .. } if code < 500 => Outcome::Good,
        _ => Outcome::Failed,
    }
}

impl Workload for Balanced {
    /// The inner workload's wakes, and the balancer's while the run goes on (the inner
    /// workload wakes again, or an attempt is in flight): a finished run has no wake.
    fn next_wake(&self) -> Option<Duration> {
        let inner = self.inner.next_wake();
        if inner.is_none() && self.replica_of.is_empty() {
            return None;
        }
        sooner(self.balancer.next_wake(), inner)
    }

    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let inner = self.inner.next_wake();
        let sweep = self.balancer.next_wake();
        if sweep.is_some_and(|t| t <= now && inner.is_none_or(|i| t <= i)) {
            // Outlier sweeps, probe timeouts and probes due.
            self.balancer.on_wake(now, &mut next.probes);
            next.hosts.extend(self.balancer.take_changes());
            return;
        }
        let from = next.sends.len();
        self.inner.on_wake(now, policy, next);
        self.route(from, next);
    }

    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        if let Some(host) = self.replica_of.remove(&id) {
            self.balancer.answered(host as usize, now, outcome(result));
        }
        let from = next.sends.len();
        self.inner.on_answer(id, result, now, policy, next);
        self.route(from, next);
    }

    fn on_probe(&mut self, probe: Probe, ok: bool, now: Duration, next: &mut Next) {
        self.balancer.on_probe(probe, now, ok);
        next.hosts.extend(self.balancer.take_changes());
    }

    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
        for (_, host) in self.replica_of.drain() {
            self.balancer.abandoned(host as usize);
        }
        self.inner.stop(now, policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::Limits;
    use crate::session::Starts;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// One wake's [`Next`].
    fn wake(w: &mut dyn Workload, now: Duration, policy: &mut Policies) -> Next {
        let mut next = Next::default();
        w.on_wake(now, policy, &mut next);
        next
    }

    /// One answer's [`Next`].
    fn answer(
        w: &mut dyn Workload,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
    ) -> Next {
        let mut next = Next::default();
        w.on_answer(id, result, now, policy, &mut next);
        next
    }

    /// Every wake due by `now`, one call each, as a driver makes them (no answer between).
    fn wake_all(w: &mut dyn Workload, now: Duration, policy: &mut Policies) -> Next {
        let mut all = Next::default();
        while w.next_wake().is_some_and(|t| t <= now) {
            w.on_wake(now, policy, &mut all);
        }
        all
    }

    fn config(starts: Starts, think_ms: u64) -> SessionConfig {
        SessionConfig {
            limits: Limits {
                max_attempts: 4,
                attempt_timeout: ms(100),
                deadline: ms(1000),
            },
            duration: ms(10_000),
            think: (ms(think_ms), ms(think_ms)),
            starts,
            max_ops: Some(2),
            best_effort_ppm: 0,
        }
    }

    fn strategy(id: &str) -> Strategy {
        let budget = crate::budget::BudgetSpec::token_bucket(10.0, 0.1);
        Strategy::standard(id, ms(200), ms(2000), budget).unwrap()
    }

    fn ok() -> AttemptResult {
        AttemptResult::Status {
            code: 200,
            retry_after: None,
        }
    }

    fn unavailable() -> AttemptResult {
        AttemptResult::Status {
            code: 503,
            retry_after: None,
        }
    }

    /// Every attempt `w` sends and when it was due, driven to its end against a dependency
    /// that answers each attempt 20 ms after it was sent: 503 when its fault key is a multiple
    /// of 3, 200 otherwise.
    fn sends_of(w: &mut dyn Workload, policy: &mut Policies) -> Vec<(u32, u32, u32, Duration)> {
        use std::cmp::Reverse;
        let mut out = Vec::new();
        let mut answers: BinaryHeap<Reverse<(Duration, u32, u32, u32)>> = BinaryHeap::new();
        loop {
            let answer = answers.peek().map(|Reverse(a)| a.0);
            let mut next = Next::default();
            match (answer, w.next_wake()) {
                (None, None) => break,
                // An answer due by the next wake first.
                (Some(a), t) if t.is_none_or(|t| a <= t) => {
                    let Reverse((at, client, op, attempt)) = answers.pop().expect("peeked");
                    let id = AttemptId {
                        client,
                        op,
                        attempt,
                    };
                    let r = if id.key().is_multiple_of(3) {
                        unavailable()
                    } else {
                        ok()
                    };
                    w.on_answer(id, r, at, policy, &mut next);
                }
                (_, Some(t)) => w.on_wake(t, policy, &mut next),
                (Some(_), None) => unreachable!("the first arm takes it"),
            }
            for a in &next.sends {
                out.push((a.id.client, a.id.op, a.id.attempt, a.due));
                answers.push(Reverse((
                    a.due + ms(20),
                    a.id.client,
                    a.id.op,
                    a.id.attempt,
                )));
            }
        }
        out.sort();
        out
    }

    /// Shards of a closed loop (issue "The lab on an orchestrator", item 1): shard i/4 drives
    /// clients i, i+4, ...; the union of the four makes exactly the sends of the whole run,
    /// each due at the same instant (every draw is keyed by its client).
    #[test]
    fn the_union_of_the_shards_is_the_whole_run() {
        let cfg = SessionConfig {
            max_ops: None,
            duration: ms(3000),
            ..config(Starts::ClosedLoop, 0)
        };
        let cfg = SessionConfig {
            think: (ms(50), ms(150)),
            ..cfg
        };
        let c = strategy("C");
        let whole = sends_of(
            &mut Clients::new(9, 10, cfg, &c),
            &mut Policies::fleet(&c, 9),
        );
        assert!(whole.len() > 150, "{}", whole.len());
        assert!(whole.iter().any(|s| s.2 > 1), "some retries");
        let mut union = Vec::new();
        for i in 0..4 {
            let shard = Shard::new(i, 4).unwrap();
            let mut w = Clients::shard(9, 10, cfg, &c, shard);
            let mine = sends_of(&mut w, &mut Policies::fleet(&c, 9));
            assert!(mine.iter().all(|s| shard.has(s.0)), "shard {shard}");
            union.extend(mine);
        }
        union.sort();
        assert_eq!(union, whole);
    }

    /// A client-side rate limiter holds an attempt (the AWS SDKs' adaptive mode on strategy A,
    /// by hand): a 429 at 0.1 s turns it on at rate 0 (0 measured x 0.7), kept at the bucket's
    /// floor of 0.5 a second; the bucket had filled 0.1 token (rate 1 from 0 to 0.1 s). The
    /// immediate retry at 0.1 s waits (1 - 0.1) / 0.5 = 1.8 s, and goes at 1.9 s.
    #[test]
    fn a_rate_limited_retry_waits_for_its_token() {
        let a = Strategy {
            adaptive_rate: true,
            fallbacks: 0,
            bulkhead: Vec::new(),
            ..strategy("A")
        };
        let mut policy = Policies::fleet(&a, 1);
        let mut cfg = config(Starts::AtZero, 50);
        cfg.limits.deadline = ms(5000);
        let mut w = Clients::new(1, 1, cfg, &a);
        let n = wake(&mut w, ms(0), &mut policy);
        let first = n.sends[0].id;
        let throttled = AttemptResult::Status {
            code: 429,
            retry_after: None,
        };
        let n = answer(&mut w, first, throttled, ms(100), &mut policy);
        assert!(n.sends.is_empty() && n.ended.is_empty());
        assert_eq!(w.next_wake(), Some(ms(100)), "A retries at once");
        let n = wake(&mut w, ms(100), &mut policy);
        assert!(n.sends.is_empty(), "held by the limiter: {n:?}");
        let at = w.next_wake().unwrap();
        assert!(at.abs_diff(ms(1900)) <= Duration::from_micros(1), "{at:?}");
        let n = wake(&mut w, at, &mut policy);
        assert_eq!(n.sends.len(), 1);
        assert_eq!((n.sends[0].id.attempt, n.sends[0].due), (2, at));
        // Under a 1 s deadline the same hold would end past it: the operation ends at once, at
        // 0.1 s, as a retry whose wait ends past the deadline does.
        let mut policy = Policies::fleet(&a, 1);
        let mut w = Clients::new(1, 1, config(Starts::AtZero, 50), &a);
        let first = wake(&mut w, ms(0), &mut policy).sends[0].id;
        answer(&mut w, first, throttled, ms(100), &mut policy);
        let n = wake(&mut w, ms(100), &mut policy);
        assert!(n.sends.is_empty());
        assert_eq!(n.ended[0].outcome, OpOutcome::Failed(GiveUp::Deadline));
        assert_eq!((n.ended[0].attempts, n.ended[0].end), (1, ms(100)));
    }

    /// One caller fanning out to 3, thinking 100 ms, two requests, strategy A (immediate
    /// retries): a request ends with its last call; its calls are clients 0 to 2, operation =
    /// the request's number.
    #[test]
    fn a_fan_out_request_ends_with_its_slowest_call() {
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = FanOut::new(1, 1, 3, 0, config(Starts::ClosedLoop, 100), &a);
        let t0 = w.next_wake().unwrap();
        assert!(
            t0 < ms(2000),
            "the first request within the first 2 s: {t0:?}"
        );
        let n = wake(&mut w, t0, &mut policy);
        let id = |client, op, attempt| AttemptId {
            client,
            op,
            attempt,
        };
        let sent: Vec<AttemptId> = n.sends.iter().map(|s| s.id).collect();
        assert_eq!(sent, [id(0, 0, 1), id(1, 0, 1), id(2, 0, 1)]);
        assert!(n.sends.iter().all(|s| s.due == t0));
        let at = |d: u64| t0 + ms(d);
        assert!(answer(&mut w, id(0, 0, 1), ok(), at(10), &mut policy)
            .fanouts
            .is_empty());
        // Call 1 fails once; A retries at once.
        let n = answer(&mut w, id(1, 0, 1), unavailable(), at(20), &mut policy);
        assert!(n.ended.is_empty() && n.fanouts.is_empty());
        let n = wake_all(&mut w, at(20), &mut policy);
        assert_eq!(n.sends[0].id, id(1, 0, 2));
        let n = answer(&mut w, id(2, 0, 1), ok(), at(25), &mut policy);
        assert_eq!(n.ended.len(), 1);
        assert!(n.fanouts.is_empty(), "one call still going");
        let n = answer(&mut w, id(1, 0, 2), ok(), at(30), &mut policy);
        let first = FanOutEnd {
            client: 0,
            request: 0,
            start: t0,
            end: at(30),
            calls: 3,
            quorum: 3,
            ok: 3,
            failed: 0,
            fallbacks: 0,
            attempts: 4,
        };
        assert_eq!(n.fanouts, [first]);
        assert!(first.success());
        // 100 ms of thinking, then request 1: operation 1 of the same three clients.
        assert_eq!(w.next_wake(), Some(at(130)));
        let n = wake(&mut w, at(130), &mut policy);
        let sent: Vec<AttemptId> = n.sends.iter().map(|s| s.id).collect();
        assert_eq!(sent, [id(0, 1, 1), id(1, 1, 1), id(2, 1, 1)]);
        let not_found = AttemptResult::Status {
            code: 404,
            retry_after: None,
        };
        answer(&mut w, id(0, 1, 1), ok(), at(140), &mut policy);
        // A failed call: all three can no longer succeed, so the request ends now, failed.
        let n = answer(&mut w, id(2, 1, 1), not_found, at(150), &mut policy);
        assert_eq!(n.fanouts.len(), 1);
        let f = n.fanouts[0];
        assert_eq!((f.request, f.end, f.ok, f.failed), (1, at(150), 1, 1));
        assert!(!f.success());
        let n = answer(&mut w, id(1, 1, 1), ok(), at(160), &mut policy);
        assert!(n.fanouts.is_empty(), "reported once");
        assert_eq!(w.next_wake(), None, "two requests at most");
    }

    /// Live, answers handed over by parallel tasks may come out of time order: the request
    /// still ends with its slowest call (30 ms, handed over before the 20 ms one), and the
    /// caller thinks from there.
    #[test]
    fn a_fan_out_request_ends_with_its_slowest_call_whatever_the_order_of_hand_over() {
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = FanOut::new(1, 1, 2, 0, config(Starts::ClosedLoop, 100), &a);
        let t0 = w.next_wake().unwrap();
        let at = |d: u64| t0 + ms(d);
        let id = |client| AttemptId {
            client,
            op: 0,
            attempt: 1,
        };
        assert_eq!(wake(&mut w, t0, &mut policy).sends.len(), 2);
        assert!(answer(&mut w, id(1), ok(), at(30), &mut policy)
            .fanouts
            .is_empty());
        let n = answer(&mut w, id(0), ok(), at(20), &mut policy);
        assert_eq!(n.fanouts.len(), 1);
        assert_eq!(n.fanouts[0].end, at(30));
        assert_eq!(w.next_wake(), Some(at(130)));
    }

    /// A quorum of 2 of 3, by hand: the request ends with its second success (at 20 ms), its
    /// third call goes on (no cancel) and the caller thinks from that call's end (500 ms). The
    /// next request fails as soon as two calls failed (2 of 3 can no longer succeed).
    #[test]
    fn a_fan_out_request_with_a_quorum_ends_with_its_quorum() {
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = FanOut::new(1, 1, 3, 2, config(Starts::ClosedLoop, 100), &a);
        let t0 = w.next_wake().unwrap();
        let at = |d: u64| t0 + ms(d);
        let id = |client, op| AttemptId {
            client,
            op,
            attempt: 1,
        };
        assert_eq!(wake(&mut w, t0, &mut policy).sends.len(), 3);
        assert!(answer(&mut w, id(0, 0), ok(), at(10), &mut policy)
            .fanouts
            .is_empty());
        let n = answer(&mut w, id(2, 0), ok(), at(20), &mut policy);
        assert_eq!(n.fanouts.len(), 1);
        let f = n.fanouts[0];
        assert_eq!((f.end, f.quorum, f.ok, f.failed), (at(20), 2, 2, 0));
        assert!(f.success());
        assert_eq!(w.next_wake(), None, "the third call is still going");
        let n = answer(&mut w, id(1, 0), ok(), at(500), &mut policy);
        assert!(n.fanouts.is_empty(), "reported once");
        assert_eq!(w.next_wake(), Some(at(600)));
        assert_eq!(wake(&mut w, at(600), &mut policy).sends.len(), 3);
        let not_found = AttemptResult::Status {
            code: 404,
            retry_after: None,
        };
        answer(&mut w, id(0, 1), not_found, at(610), &mut policy);
        let n = answer(&mut w, id(1, 1), not_found, at(620), &mut policy);
        let f = n.fanouts[0];
        assert_eq!((f.end, f.ok, f.failed), (at(620), 0, 2));
        assert!(!f.success());
    }

    /// Three calls, the last with a fallback (`fallbacks = 1`), by hand: a request whose third
    /// call fails (404, not retried) is served degraded when its other two succeed (it ends
    /// with its last call, at 30 ms); the next fails at once when its first call fails (no
    /// fallback), whatever its third does.
    #[test]
    fn a_failed_call_with_a_fallback_serves_the_request_degraded() {
        let mut a = strategy("A");
        a.fallbacks = 1;
        let mut policy = Policies::fleet(&a, 1);
        let mut w = FanOut::new(1, 1, 3, 0, config(Starts::ClosedLoop, 100), &a);
        let t0 = w.next_wake().unwrap();
        let at = |d: u64| t0 + ms(d);
        let id = |client, op| AttemptId {
            client,
            op,
            attempt: 1,
        };
        let not_found = AttemptResult::Status {
            code: 404,
            retry_after: None,
        };
        assert_eq!(wake(&mut w, t0, &mut policy).sends.len(), 3);
        assert!(answer(&mut w, id(2, 0), not_found, at(10), &mut policy)
            .fanouts
            .is_empty());
        answer(&mut w, id(0, 0), ok(), at(20), &mut policy);
        let n = answer(&mut w, id(1, 0), ok(), at(30), &mut policy);
        let f = n.fanouts[0];
        assert_eq!(
            (f.end, f.quorum, f.ok, f.failed, f.fallbacks),
            (at(30), 3, 2, 0, 1)
        );
        assert!(f.success() && f.degraded());
        assert_eq!(w.next_wake(), Some(at(130)));
        assert_eq!(wake(&mut w, at(130), &mut policy).sends.len(), 3);
        answer(&mut w, id(2, 1), ok(), at(140), &mut policy);
        let n = answer(&mut w, id(0, 1), not_found, at(150), &mut policy);
        let f = n.fanouts[0];
        assert_eq!((f.end, f.ok, f.failed, f.fallbacks), (at(150), 1, 1, 0));
        assert!(!f.success() && !f.degraded());
    }

    /// Two clients starting at zero, thinking 50 ms, two operations each, strategy A
    /// (immediate retries): hand-computed sends, answers, retries and ends.
    #[test]
    fn a_group_of_sessions_is_one_machine_woken_earliest_first() {
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = Clients::new(1, 2, config(Starts::AtZero, 50), &a);
        assert_eq!(w.next_wake(), Some(ms(0)));
        // One wake per call: client 0's, then client 1's, both due at 0.
        let first = wake(&mut w, ms(0), &mut policy);
        assert_eq!(first.sends.len(), 1);
        assert_eq!(w.next_wake(), Some(ms(0)));
        let mut n = wake(&mut w, ms(0), &mut policy);
        n.sends.insert(0, first.sends[0]);
        let ids: Vec<(u32, u32, u32)> = n
            .sends
            .iter()
            .map(|s| (s.id.client, s.id.op, s.id.attempt))
            .collect();
        assert_eq!(
            ids,
            [(0, 0, 1), (1, 0, 1)],
            "both start at 0, client 0 first"
        );
        assert!(n
            .sends
            .iter()
            .all(|s| s.due == ms(0) && s.timeout == ms(100)));
        // Nothing is due while both wait for answers.
        assert_eq!(w.next_wake(), None);
        // Client 1's 503 at 10 ms: A retries at once.
        let n = answer(&mut w, n.sends[1].id, unavailable(), ms(10), &mut policy);
        assert_eq!(n, Next::default());
        assert_eq!(w.next_wake(), Some(ms(10)));
        let n = wake(&mut w, ms(10), &mut policy);
        assert_eq!(n.sends.len(), 1);
        assert_eq!((n.sends[0].id.client, n.sends[0].id.attempt), (1, 2));
        let retry = n.sends[0].id;
        // Client 0's 200 at 20 ms ends its operation; it thinks 50 ms.
        let n = answer(
            &mut w,
            AttemptId {
                client: 0,
                op: 0,
                attempt: 1,
            },
            ok(),
            ms(20),
            &mut policy,
        );
        assert_eq!(n.ended.len(), 1);
        let e = n.ended[0];
        assert_eq!(
            (e.client, e.op, e.start, e.end, e.attempts, e.outcome),
            (0, 0, ms(0), ms(20), 1, OpOutcome::Success)
        );
        assert_eq!(w.next_wake(), Some(ms(70)));
        // Client 1's retry succeeds at 30 ms: it is due at 80 ms, after client 0.
        let n = answer(&mut w, retry, ok(), ms(30), &mut policy);
        assert_eq!(n.ended[0].attempts, 2);
        let n = wake_all(&mut w, ms(75), &mut policy);
        assert_eq!(n.sends.len(), 1, "only client 0 is due by 75 ms");
        assert_eq!((n.sends[0].id.client, n.sends[0].id.op), (0, 1));
        assert_eq!(n.sends[0].due, ms(70));
        assert_eq!(w.next_wake(), Some(ms(80)));
        // A stop: client 0's attempt in flight counts as sent and its operation is aborted;
        // client 1, between operations, has nothing to end.
        let ended = w.stop(ms(76), &mut policy);
        assert_eq!(ended.len(), 1);
        assert_eq!(
            (ended[0].client, ended[0].attempts, ended[0].outcome),
            (0, 1, OpOutcome::Failed(GiveUp::Aborted))
        );
        assert_eq!(w.next_wake(), None);
    }

    /// Two retries due at one instant come in the order they were scheduled, not in client
    /// order: client 1's 503 is handed over before client 0's, so its retry goes first.
    #[test]
    fn wakes_due_at_one_instant_come_in_the_order_they_were_scheduled() {
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = Clients::new(1, 2, config(Starts::AtZero, 0), &a);
        let sent = wake_all(&mut w, ms(0), &mut policy);
        assert_eq!(sent.sends.len(), 2);
        // Both answered 503 at 10 ms, client 1's first: A retries both at once, due at 10 ms.
        for c in [1, 0] {
            let n = answer(&mut w, sent.sends[c].id, unavailable(), ms(10), &mut policy);
            assert_eq!(n, Next::default());
        }
        let first = wake(&mut w, ms(10), &mut policy);
        let second = wake(&mut w, ms(10), &mut policy);
        let order: Vec<(u32, u32)> = [&first, &second]
            .iter()
            .map(|n| (n.sends[0].id.client, n.sends[0].id.attempt))
            .collect();
        assert_eq!(
            order,
            [(1, 2), (0, 2)],
            "client 1's retry was scheduled first"
        );
        assert!([&first, &second].iter().all(|n| n.sends[0].due == ms(10)));
    }

    /// An open loop's arrival and a slot's retry due at one instant: whichever was scheduled
    /// first goes first. The next arrival is scheduled when the one before it came.
    #[test]
    fn an_arrival_and_a_retry_due_at_one_instant_come_in_the_order_they_were_scheduled() {
        use crate::arrivals::RateShape;
        let cfg = config(Starts::OnDemand, 0);
        let open = OpenLoop::new(3, cfg, RateShape::constant(1000.0, ms(1000)), 1);
        // The arrivals' times, drawn as the workload will draw them.
        let mut times = Vec::new();
        let mut reference = open.clone();
        while let Some(t) = reference.next_arrival() {
            times.push(t);
            reference.on_arrival();
        }
        let t1 = times[0];
        // The first arrival at least 201 ms after the first: a 200 ms wait started after t1
        // ends at it, and the arrival before it comes after that wait started.
        let k = times.iter().position(|&t| t > t1 + ms(201)).unwrap();
        let tk = times[k];
        assert!(times[k - 1] > tk - ms(200));
        let first_attempt = AttemptId {
            client: 0,
            op: 0,
            attempt: 1,
        };

        // B waits exactly 200 ms: a 503 at tk - 200 ms schedules the retry before arrival k
        // is scheduled (when arrival k - 1 comes), so the retry goes first, then the drop.
        let b = strategy("B");
        let mut policy = Policies::fleet(&b, 1);
        let mut w = Arrivals::new(open.clone(), &b);
        assert_eq!(wake(&mut w, t1, &mut policy).sends.len(), 1);
        wake_all(&mut w, tk - ms(200), &mut policy);
        let n = answer(
            &mut w,
            first_attempt,
            unavailable(),
            tk - ms(200),
            &mut policy,
        );
        assert_eq!(n, Next::default());
        wake_all(&mut w, tk - Duration::from_nanos(1), &mut policy);
        assert_eq!(w.next_wake(), Some(tk));
        let first = wake(&mut w, tk, &mut policy);
        assert_eq!(
            (
                first.sends.len(),
                first.sends[0].id.attempt,
                first.sends[0].due
            ),
            (1, 2, tk),
            "the retry, scheduled first, goes first"
        );
        assert!(first.dropped.is_empty());
        let second = wake(&mut w, tk, &mut policy);
        assert_eq!(
            second.dropped,
            [tk],
            "then arrival k, dropped: the slot is busy"
        );

        // A retries at once: a 503 at tk schedules the retry after arrival k was scheduled, so
        // the drop comes first, then the retry.
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = Arrivals::new(open, &a);
        assert_eq!(wake(&mut w, t1, &mut policy).sends.len(), 1);
        wake_all(&mut w, tk - Duration::from_nanos(1), &mut policy);
        let n = answer(&mut w, first_attempt, unavailable(), tk, &mut policy);
        assert_eq!(n, Next::default());
        let first = wake(&mut w, tk, &mut policy);
        assert_eq!(
            first.dropped,
            [tk],
            "arrival k, scheduled first, goes first"
        );
        assert!(first.sends.is_empty());
        let second = wake(&mut w, tk, &mut policy);
        assert_eq!(
            (
                second.sends.len(),
                second.sends[0].id.attempt,
                second.sends[0].due
            ),
            (1, 2, tk)
        );
    }

    #[test]
    fn an_open_loop_starts_arrivals_in_free_slots_and_drops_the_rest() {
        use crate::arrivals::RateShape;
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let cfg = config(Starts::OnDemand, 0);
        // 1,000 arrivals a second for 1 s, one slot: arrivals while it is busy are dropped.
        let open = OpenLoop::new(3, cfg, RateShape::constant(1000.0, ms(1000)), 1);
        let first = open.next_arrival().unwrap();
        let mut reference = open.clone();
        let mut w = Arrivals::new(open, &a);
        assert_eq!(w.next_wake(), Some(first));
        let n = wake(&mut w, first, &mut policy);
        assert_eq!(n.sends.len(), 1);
        assert_eq!(n.sends[0].id.client, 0);
        assert_eq!(n.sends[0].due, first);
        assert!(matches!(
            reference.on_arrival(),
            Arrival::Start { slot: 0, .. }
        ));
        // The slot is busy: the next arrivals, up to 100 ms, are dropped.
        let second = reference.next_arrival().unwrap();
        assert_eq!(w.next_wake(), Some(second));
        let n = wake_all(&mut w, first + ms(100), &mut policy);
        let mut expected = Vec::new();
        while reference
            .next_arrival()
            .is_some_and(|t| t <= first + ms(100))
        {
            let Arrival::Dropped { start } = reference.on_arrival() else {
                panic!("the only slot is busy")
            };
            expected.push(start);
        }
        assert!(!expected.is_empty());
        assert_eq!(n.dropped, expected);
        assert!(n.sends.is_empty());
        // Its answer frees the slot: the next arrival starts in it, as the same client.
        let n = answer(
            &mut w,
            AttemptId {
                client: 0,
                op: 0,
                attempt: 1,
            },
            ok(),
            first + ms(101),
            &mut policy,
        );
        assert_eq!(n.ended.len(), 1);
        assert_eq!(w.open_loop().in_flight(), 0);
        let t = w.next_wake().unwrap();
        let n = wake(&mut w, t, &mut policy);
        assert_eq!(
            (n.sends[0].id.client, n.sends[0].id.op),
            (0, 1),
            "slot 0 takes it"
        );
    }

    /// The step workload behind the interface: a step's first call was due at the step's start,
    /// the next one when the previous one was answered; an operation's start and end are its
    /// steps' starts.
    #[test]
    fn the_steps_name_one_call_at_a_time_due_at_the_step_then_at_the_answer() {
        let b = strategy("B");
        let mut policy = Policies::fleet(&b, 1);
        let cfg = StepConfig {
            step: ms(100),
            steps: 2,
            batch_items: 160,
            burst_start: 30,
            burst_items: 60,
            load: 3,
            step_calls: 12,
            max_attempts: 4,
            interactive_every: 2,
            interactive_until: 120,
            interactive_budget: 1,
        };
        let mut w = Steps::new(cfg, &b, 1, ms(50));
        assert_eq!(w.next_wake(), Some(ms(0)));
        // Woken 2 ms late: the query is still due at the step's start.
        let n = wake(&mut w, ms(2), &mut policy);
        assert_eq!(n.sends.len(), 1);
        let q = n.sends[0];
        assert_eq!(
            (q.id.client, q.id.op, q.id.attempt, q.due, q.timeout),
            (Flow::Interactive.client(), 0, 1, ms(0), ms(50))
        );
        assert_eq!((q.flow, q.step), (Some(Flow::Interactive), Some(0)));
        // Its answer at 5 ms ends it (from step 0 to step 0) and names batch item 0, due now.
        let n = answer(&mut w, q.id, ok(), ms(5), &mut policy);
        assert_eq!(n.sends.len(), 1);
        let item = n.sends[0];
        assert_eq!(
            (item.flow, item.id.op, item.due),
            (Some(Flow::Batch), 0, ms(5))
        );
        assert_eq!(n.ended.len(), 1);
        let e = n.ended[0];
        assert_eq!(
            (e.flow, e.start, e.end, e.attempts, e.outcome),
            (Some(Flow::Interactive), ms(0), ms(0), 1, OpOutcome::Success)
        );
        // A stop with the item in flight: it failed, its attempt counted.
        let ended = w.stop(ms(6), &mut policy);
        assert_eq!(ended.len(), 1);
        assert_eq!(
            (ended[0].flow, ended[0].attempts, ended[0].outcome),
            (
                Some(Flow::Batch),
                1,
                OpOutcome::Failed(GiveUp::AttemptsExhausted)
            )
        );
    }

    /// One attempt a millisecond, 0 to `end` - 1 ms, each of a client of its own.
    struct Ticks {
        next: u32,
        end: u32,
    }

    impl Workload for Ticks {
        fn next_wake(&self) -> Option<Duration> {
            (self.next < self.end).then(|| ms(self.next as u64))
        }
        fn on_wake(&mut self, now: Duration, _: &mut Policies, next: &mut Next) {
            next.sends.push(Outgoing {
                id: AttemptId {
                    client: self.next,
                    op: 0,
                    attempt: 1,
                },
                due: now,
                timeout: ms(1000),
                flow: None,
                step: None,
                class: Priority::Critical,
                replica: u16::MAX,
            });
            self.next += 1;
        }
        fn on_answer(
            &mut self,
            _: AttemptId,
            _: AttemptResult,
            _: Duration,
            _: &mut Policies,
            _: &mut Next,
        ) {
        }
        fn stop(&mut self, _: Duration, _: &mut Policies) -> Vec<Ended> {
            Vec::new()
        }
    }

    /// Round robin over 2 replicas, replica 0 answering 503 and replica 1 200, each at once;
    /// outlier detection at 2 failures in a row, sweeps every 10 ms, ejection 30 ms. By hand:
    /// 0 ms to replica 0 (fails), 1 ms to 1, 2 ms to 0 (its 2nd failure: ejected at 2 ms); 3
    /// to 39 ms to 1; the sweep at 30 ms finds it out 28 ms, the one at 40 ms 38 ms, past 30:
    /// back at 40 ms, taken before the attempt of 40 ms. The turn has counted 40 picks, so 40
    /// ms goes to 0 (fails), 41 to 1, 42 to 0 (ejected again, for 2 x 30 ms), 43 to 59 to 1.
    #[test]
    fn a_balanced_workload_ejects_the_failing_replica_and_takes_it_back() {
        use crate::balancer::{Change, OutlierSpec, Pick};
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut spec = BalancerSpec::new(Pick::RoundRobin);
        spec.outlier = Some(OutlierSpec {
            consecutive_5xx: 2,
            interval: ms(10),
            base_ejection_time: ms(30),
            ..OutlierSpec::default()
        });
        let mut w = Balanced::new(Box::new(Ticks { next: 0, end: 60 }), spec, 2, 1);
        let (mut picked, mut hosts) = (Vec::new(), Vec::new());
        let mut next = Next::default();
        while let Some(t) = w.next_wake() {
            w.on_wake(t, &mut policy, &mut next);
            for send in std::mem::take(&mut next.sends) {
                picked.push(send.replica);
                let code = if send.replica == 0 { 503 } else { 200 };
                w.on_answer(
                    send.id,
                    AttemptResult::status(code),
                    t,
                    &mut policy,
                    &mut next,
                );
            }
            hosts.extend(next.hosts.drain(..).map(|h| (h.at, h.host, h.change)));
        }
        let mut expected = vec![0, 1, 0];
        expected.extend([1; 37]);
        expected.extend([0, 1, 0]);
        expected.extend([1; 17]);
        assert_eq!(picked, expected);
        assert_eq!(
            hosts,
            vec![
                (ms(2), 0, Change::Ejected),
                (ms(40), 0, Change::Returned),
                (ms(42), 0, Change::Ejected)
            ]
        );
        assert_eq!(w.balancer.outstanding(1), 0);
    }

    /// Active-passive over 2 replicas with active health checks every 10 ms (timeout 5 ms,
    /// out after 2 failed probes, back after 1 good one), no outlier detection. Replica 0 is
    /// not ready, and answers 503, from 10 ms to 35 ms; every probe is answered at once. By
    /// hand: the probes of 0 ms pass; at 10 ms replica 0's first fails, at 20 ms its second
    /// (unhealthy at 20 ms, the balancer's wake before the attempt of 20 ms); 30 ms fails
    /// again, 40 ms passes (healthy at 40 ms). So the attempts of 0 to 19 ms go to replica 0
    /// (those of 10 to 19 ms fail: the errors until the switch, the interval times the
    /// threshold at one attempt a ms), 20 to 39 ms to replica 1, 40 to 59 ms to replica 0.
    #[test]
    fn active_health_checks_switch_to_the_standby_and_back() {
        use crate::balancer::{Change, HealthCheckSpec, Pick};
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut spec = BalancerSpec::new(Pick::Failover);
        spec.health = Some(HealthCheckSpec {
            interval: ms(10),
            timeout: ms(5),
            unhealthy_threshold: 2,
            healthy_threshold: 1,
        });
        let mut w = Balanced::new(Box::new(Ticks { next: 0, end: 60 }), spec, 2, 1);
        let down = |host: u16, t: Duration| host == 0 && t >= ms(10) && t < ms(35);
        let (mut picked, mut hosts, mut failed, mut probes) = (Vec::new(), Vec::new(), 0, 0);
        let mut next = Next::default();
        while let Some(t) = w.next_wake() {
            w.on_wake(t, &mut policy, &mut next);
            for probe in std::mem::take(&mut next.probes) {
                probes += 1;
                w.on_probe(probe, !down(probe.host as u16, t), t, &mut next);
            }
            for send in std::mem::take(&mut next.sends) {
                picked.push(send.replica);
                let code = if down(send.replica, t) { 503 } else { 200 };
                failed += u32::from(code == 503);
                w.on_answer(
                    send.id,
                    AttemptResult::status(code),
                    t,
                    &mut policy,
                    &mut next,
                );
            }
            hosts.extend(next.hosts.drain(..).map(|h| (h.at, h.host, h.change)));
        }
        let mut expected = vec![0; 20];
        expected.extend([1; 20]);
        expected.extend([0; 20]);
        assert_eq!(picked, expected);
        assert_eq!(failed, 10, "the errors until the switch");
        assert_eq!(
            hosts,
            vec![(ms(20), 0, Change::Unhealthy), (ms(40), 0, Change::Healthy)]
        );
        // Both replicas probed at 0, 10, 20, 30, 40 and 50 ms; the run then ends.
        assert_eq!(probes, 12);
    }
}
