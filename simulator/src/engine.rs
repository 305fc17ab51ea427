//! One simulated run: the swarm's closed-loop clients and one dependency on a virtual clock.
//!
//! Each client is the core's [`ClientSession`], the same state machine the live swarm drives: it
//! owns the first start offset, think times, operation numbering, budget deposits, attempt ids
//! and fault keys. This engine only drives it on the virtual clock:
//!
//! - a client's wake-up ([`ClientSession::next_wake`]) is a `StartOp` event (the next
//!   operation's start) or a `SendAttempt` event (a retry that is due);
//! - an attempt the session sends arrives at the dependency at that instant (network latency
//!   zero) with request id = arrival sequence and the session's fault key;
//! - the attempt ends at `min(answer, send + timeout)` and its result goes back to the session
//!   with the run's one budget.
//!
//! Everything observable is reported to an [`Observer`]; the analyzer's accumulator is one, a
//! test's trace is another. The dependency is the core's [`DependencyNode`]: whenever it has
//! something due at or before the clients' next event, the engine advances it to that instant
//! first. The hot path allocates nothing per event: events are `Copy`, the request table is a
//! `Vec` indexed by request id, answers go through one reused buffer.

use e03_core::arrivals::{Arrival, OpenLoop};
use e03_core::attempt::Broken;
use e03_core::breaker::BreakerState;
use e03_core::events::Cause;
use e03_core::ledger::ChargeRequest;
use e03_core::policy::ClientPolicy;
use e03_core::schedule::{Answer, Step};
use e03_core::session::{ClientSession, OpEnd, SessionConfig, Wake};
use e03_core::timeline::{Timeline, WireFault};
use e03_core::wire::Direction;
use e03_core::{
    Admission, AttemptResult, DependencyNode, OpOutcome, Params, ReqId, Scenario, Strategy,
};

use crate::queue::{Event, EventQueue, Nanos};
use crate::service::{dur, nanos};

/// Whether the simulator models `fault`: a `refused` phase, and a blackhole (Toxiproxy's
/// `timeout` toxic with timeout 0 on every connection: nothing passes that way until the phase
/// ends). Other toxics run live only for now.
pub fn modelled(fault: &WireFault) -> bool {
    *fault == WireFault::Refused || fault.blackhole().is_some()
}

/// What a run reports as it goes. Times are virtual nanoseconds since time zero.
pub trait Observer {
    /// Attempt `attempt` of operation `op` of `client` is sent and arrives at the dependency as
    /// request `req` (sending and arrival are the same instant).
    fn arrival(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32);
    /// Attempt `attempt` of operation `op` of `client` is sent as request `req` but never
    /// reaches the dependency: nothing listens (a `refused` phase; its end comes as a refused
    /// connect) or the wire drops it (an upstream blackhole; its timeout ends it).
    fn refused(&mut self, _t: Nanos, _req: ReqId, _client: u32, _op: u32, _attempt: u32) {}
    /// The dependency's decision about that request.
    fn admission(&mut self, _t: Nanos, _req: ReqId, _admission: Admission) {}
    /// Attempt `attempt` of operation `op` of `client` was refused by a policy layer (an open
    /// breaker, client-side throttling): it failed fast and reached nothing.
    fn failed_fast(&mut self, _t: Nanos, _client: u32, _op: u32, _attempt: u32) {}
    /// The strategy's circuit breaker changed state.
    fn breaker(&mut self, _t: Nanos, _from: BreakerState, _to: BreakerState) {}
    /// The answer to `req` was lost after its work was committed (the connection was reset).
    fn lost(&mut self, _t: Nanos, _req: ReqId) {}
    /// The ledger committed a charge for operation `op` of `client`.
    fn charge(&mut self, _t: Nanos, _client: u32, _op: u32) {}
    /// The attempt carried by `req` ended, as its client saw it.
    fn attempt_end(&mut self, _t: Nanos, _req: ReqId, _result: AttemptResult) {}
    /// The dependency answered request `req` (`status`); `given_up`: its client was no longer
    /// waiting for it (the attempt had timed out), so any work it took was wasted.
    fn served(&mut self, _t: Nanos, _req: ReqId, _answer: &Answer, _given_up: bool) {}
    /// Open loop: an operation arrived at `intended` but `max_in_flight` were in progress, so
    /// it was dropped (never started).
    fn dropped(&mut self, _intended: Nanos) {}
    /// An operation ended (`attempts` were sent).
    fn operation(
        &mut self,
        client: u32,
        op: u32,
        start: Nanos,
        end: Nanos,
        attempts: u32,
        outcome: OpOutcome,
    );
}

/// One client of the swarm.
#[derive(Debug)]
struct Client {
    session: ClientSession,
    /// The request carrying the attempt in flight, if one is.
    in_flight: Option<ReqId>,
}

/// The whole state of one run.
pub struct Engine<'a, O: Observer> {
    strategy: &'a Strategy,
    queue: EventQueue,
    /// The dependency: its schedule, ledger and commit rule (the core's [`DependencyNode`], the
    /// same the live service drives).
    service: DependencyNode,
    clients: Vec<Client>,
    /// Owner of each request (indexed by request id = arrival sequence).
    owner: Vec<u32>,
    seed: u64,
    /// One budget and breaker shared by every client of this run.
    budget: ClientPolicy,
    /// What the dependency did at the current instant; its answers are drained to the clients.
    answers: Vec<Step>,
    observer: O,
    /// The open loop's arrivals and slots (`E03_WORKLOAD=open_loop`); its slot `k` is
    /// `clients[k]`, opened as arrivals need it.
    open: Option<OpenLoop>,
    /// The timeline, for its wire faults (issue 27): a `refused` phase ends every attempt sent
    /// in it as a refused connect, after its latency; a blackhole drops what passes its way.
    timeline: Timeline,
}

impl<'a, O: Observer> Engine<'a, O> {
    pub fn new(
        scenario: Scenario,
        params: &Params,
        strategy: &'a Strategy,
        seed: u64,
        observer: O,
    ) -> Self {
        let n = params.swarm().clients;
        let mut queue = EventQueue::with_capacity(4 * n as usize + 64);
        let service = DependencyNode::new(params.service_config(scenario, seed));
        let config = SessionConfig::from_params(params);
        let open = params.is_open_loop().then(|| params.open_loop(seed));
        let n = if open.is_some() { 0 } else { n };
        let mut clients = Vec::with_capacity(n as usize);
        if let Some(t) = open.as_ref().and_then(OpenLoop::next_arrival) {
            queue.push(nanos(t), Event::Arrival);
        }
        for c in 0..n {
            let session = ClientSession::new(seed, c, config);
            if let Some(start) = session.next_wake() {
                queue.push(nanos(start), Event::StartOp(c));
            }
            clients.push(Client {
                session,
                in_flight: None,
            });
        }
        // Roughly: operations per client x attempts; only a capacity hint.
        let expected_ops = (params.swarm().duration_s * 1000.0
            / params.swarm().think_min_ms.max(1.0))
        .min(1e6) as usize
            + 1;
        Self {
            timeline: params.timeline(scenario),
            strategy,
            queue,
            service,
            clients,
            owner: Vec::with_capacity(expected_ops.saturating_mul(n as usize).min(1 << 24)),
            seed,
            budget: ClientPolicy::new(strategy, seed),
            answers: Vec::with_capacity(256),
            observer,
            open,
        }
    }

    /// Runs until nothing is left to happen and returns the observer.
    pub fn run(mut self) -> O {
        loop {
            // The dependency first at an instant (its schedule's order), then the clients.
            let client = self.queue.next_time();
            if let Some(t) = self.service.next_due().map(nanos) {
                if client.is_none_or(|c| t <= c) {
                    self.service.advance(dur(t), &mut self.answers);
                    self.deliver_answers(t);
                    continue;
                }
            }
            let Some((t, event)) = self.queue.pop() else {
                break;
            };
            match event {
                Event::StartOp(c) | Event::SendAttempt(c) => self.wake(t, c),
                Event::AttemptTimeout(req) => {
                    self.attempt_ends(t, req, AttemptResult::Timeout);
                }
                Event::Refused(req) => {
                    let refused = AttemptResult::ConnectionError(Broken::ConnectRefused);
                    self.attempt_ends(t, req, refused);
                }
                Event::Arrival => self.arrival(t),
            }
            self.deliver_answers(t);
        }
        self.observer
    }

    /// The open loop's next operation arrives: it starts in a slot now, or is dropped.
    fn arrival(&mut self, t: Nanos) {
        let open = self.open.as_mut().expect("arrivals only in an open loop");
        let arrival = open.on_arrival();
        if let Some(next) = open.next_arrival() {
            self.queue.push(nanos(next), Event::Arrival);
        }
        match arrival {
            Arrival::Start { slot, start, new } => {
                if let Some(session) = new {
                    debug_assert_eq!(slot as usize, self.clients.len());
                    self.clients.push(Client {
                        session: *session,
                        in_flight: None,
                    });
                }
                self.clients[slot as usize].session.begin(start);
                self.wake(t, slot);
            }
            Arrival::Dropped { start } => self.observer.dropped(nanos(start)),
        }
    }

    /// Client `c`'s wake-up: it starts an operation and/or sends the attempt that is due.
    fn wake(&mut self, t: Nanos, c: u32) {
        let client = &mut self.clients[c as usize];
        let send = match client.session.on_wake(dur(t), &mut self.budget) {
            Wake::Send(send) => send,
            // Only when a retry is due at or past the deadline, which `on_result` never
            // schedules; kept for safety.
            Wake::Ended(end) => return self.op_ended(t, c, end),
            Wake::Rejected { attempt, end, .. } => {
                self.observer
                    .failed_fast(t, c, attempt.id.op, attempt.id.attempt);
                self.report_breaker();
                return self.op_ended(t, c, end);
            }
        };
        client.in_flight = Some(self.owner.len() as ReqId);
        self.report_breaker();
        let req = self.owner.len() as ReqId;
        self.owner.push(c);
        self.queue
            .push(t + nanos(send.timeout), Event::AttemptTimeout(req));
        if let Some(w) = self.timeline.wire_at(dur(t)) {
            if w.fault == WireFault::Refused {
                // Nothing listens: the attempt never reaches the dependency.
                self.observer
                    .refused(t, req, c, send.id.op, send.id.attempt);
                self.queue.push(t + nanos(w.latency), Event::Refused(req));
                return;
            }
            if w.fault.blackhole() == Some(Direction::Upstream) {
                // The wire drops the request: its timeout ends it.
                self.observer
                    .refused(t, req, c, send.id.op, send.id.attempt);
                return;
            }
        }
        self.observer
            .arrival(t, req, c, send.id.op, send.id.attempt);
        // A charging strategy's attempt is a charge (`POST /charge`) with its policy's key.
        let charge = self.strategy.idempotency.map(|policy| ChargeRequest {
            key: policy.key(self.seed, c, send.id.op, send.id.attempt),
            amount: 1,
            client: Some(c),
            op: Some(send.id.op),
            attempt: Some(send.id.attempt),
        });
        let admission = self
            .service
            .arrive(dur(t), req, send.id.key(), charge, &mut self.answers);
        self.observer.admission(t, req, admission);
    }

    /// Hands every answer due now to its client (if it is still waiting for it).
    fn deliver_answers(&mut self, t: Nanos) {
        // Delivering schedules retries and new operations as events, so it never adds answers;
        // indexing (rather than draining) keeps the buffer's allocation for the next instant.
        for i in 0..self.answers.len() {
            if let Step::Answer(a) = self.answers[i] {
                let c = self.owner[a.req as usize];
                let given_up = self.clients[c as usize].in_flight != Some(a.req);
                self.observer.served(t, a.req, &a, given_up);
                let settled = self.service.settle(&a);
                if let Some(charge) = &settled.charged {
                    self.observer.charge(
                        t,
                        c,
                        charge.op.expect("the engine's charges carry their op"),
                    );
                }
                let wire = self.timeline.wire_at(dur(t));
                if wire.and_then(|w| w.fault.blackhole()) == Some(Direction::Downstream) {
                    // The wire drops the answer: the work is done, the attempt's timeout ends it.
                    continue;
                }
                let code = settled.status;
                let result = if a.cause == Cause::Lost {
                    self.observer.lost(t, a.req);
                    AttemptResult::ConnectionError(e03_core::cause::LOST_ANSWER)
                } else {
                    AttemptResult::Status {
                        code,
                        retry_after: a.retry_after,
                    }
                };
                self.attempt_ends(t, a.req, result);
            }
        }
        self.answers.clear();
    }

    fn attempt_ends(&mut self, t: Nanos, req: ReqId, result: AttemptResult) {
        let c = self.owner[req as usize];
        let client = &mut self.clients[c as usize];
        if client.in_flight != Some(req) {
            return; // answer after a timeout, or timeout after the answer
        }
        client.in_flight = None;
        self.observer.attempt_end(t, req, result);
        let end = client
            .session
            .on_result(dur(t), result, self.strategy, &mut self.budget);
        let due = client.session.next_wake();
        self.report_breaker();
        match end {
            None => {
                let due = due.expect("a retry is due");
                self.queue.push(nanos(due), Event::SendAttempt(c));
            }
            Some(end) => self.op_ended(t, c, end),
        }
    }

    /// Hands the breaker's state changes, if any, to the observer.
    fn report_breaker(&mut self) {
        for tr in self.budget.take_transitions() {
            self.observer.breaker(nanos(tr.at), tr.from, tr.to);
        }
    }

    /// An operation ended: the client's next one (if any) is scheduled, the observer told.
    fn op_ended(&mut self, t: Nanos, c: u32, end: OpEnd) {
        if let Some(open) = self.open.as_mut() {
            open.release(c);
        } else if let Some(next) = self.clients[c as usize].session.next_wake() {
            self.queue.push(nanos(next), Event::StartOp(c));
        }
        self.observer
            .operation(c, end.op, nanos(end.start), t, end.attempts, end.outcome);
    }
}
