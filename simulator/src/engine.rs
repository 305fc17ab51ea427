//! One simulated run: the run's workload and one dependency on a virtual clock.
//!
//! The callers are the core's [`Workload`] (the closed loop's clients, a group, fixed-rate
//! callers, the open loop's arrivals: [`Params::workload`]), the same state machines the live
//! swarm drives. They own the first start offsets, think times, arrivals, operation numbering,
//! budget deposits, attempt ids and fault keys. This engine only drives them on the virtual
//! clock, as any driver does (the one interface's loop):
//!
//! - the workload's next wake ([`Workload::next_wake`]) is the clients' next event, in the
//!   event queue's order (after what the wire lets go at that instant, before the timeouts);
//!   each wake handles the earliest one due ([`Workload::on_wake`]), and the dependency's
//!   immediate answers go back before the next;
//! - an attempt the workload sends arrives at the dependency at that instant (network latency
//!   zero) with request id = arrival sequence and the attempt's fault key;
//! - the attempt ends at `min(answer, send + timeout)` and its result goes back to the workload
//!   ([`Workload::on_answer`]) with the run's one budget;
//! - a wire phase changes that (the connection model's doc, `engine/connections.rs`, "The
//!   wire"): nothing listens, a blackhole drops, a latency, a bandwidth or a slicer holds the
//!   answer (a `Deliver` event) or the request (an `Arrive` event), a reset or a limit ends the
//!   attempt.
//!
//! Everything observable is reported to an [`Observer`]; the analyzer's accumulator is one, a
//! test's trace is another. The dependency is the core's [`DependencyNode`]: whenever it has
//! something due at or before the clients' next event, the engine advances it to that instant
//! first. The hot path allocates nothing per event: events are `Copy`, the request table is a
//! `Vec` indexed by request id, answers go through one reused buffer.
//!
//! Its part, private to it: `engine/connections.rs`, the engine's methods that carry out what
//! the model's wire connections ([`WireConnections`]) decide about the clients' connections
//! (schedule a reset, tell the observer, end an attempt). What each wire fault does (delay,
//! hold, end a connection) is the model's rule, read by the live proxy too:
//! [`WireFault::delays`], [`WireFault::holds`], [`WireFault::ends_connections`].

mod connections;

use e03_model::attempt::Broken;
use e03_model::balancer::Probe;
use e03_model::breaker::BreakerState;
use e03_model::chain::deadline_on_arrival;
use e03_model::dependency::Caller;
use e03_model::events::Cause;
use e03_model::ledger::ChargeRequest;
use e03_model::policy::Policies;
use e03_model::priority::Priority;
use e03_model::schedule::{Answer, Step};
use e03_model::session::AttemptId;
use e03_model::timeline::{Timeline, WireFault};
use e03_model::wire::{Direction, REQUEST_BYTES};
use e03_model::wire_connections::WireConnections;
use e03_model::workload::{
    Effect, Ended, FanOutEnd, HeaderRules, Headers, Next, Outgoing, Workload,
};
use e03_model::{Admission, AttemptResult, DependencyNode, ReqId, Strategy};
use e03_plan::{Params, Scenario};

use crate::queue::{Event, EventQueue, Nanos, WAKE_RANK};
use crate::service::{dur, nanos};

/// What a run reports as it goes. Times are virtual nanoseconds since time zero.
pub trait Observer {
    /// Attempt `attempt` of operation `op` of `client` is sent and arrives at the dependency as
    /// request `req` (sending and arrival are the same instant, unless a toxic on the requests
    /// holds it: [`Observer::sent_delayed`]).
    fn arrival(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32);
    /// Attempt `attempt` of operation `op` of `client` is sent as request `req`, and a toxic
    /// on the requests holds it: it reaches the dependency later ([`Observer::arrived`]).
    fn sent_delayed(&mut self, _t: Nanos, _req: ReqId, _client: u32, _op: u32, _attempt: u32) {}
    /// Request `req`, sent earlier ([`Observer::sent_delayed`]), reaches the dependency.
    fn arrived(&mut self, _t: Nanos, _req: ReqId, _client: u32, _op: u32, _attempt: u32) {}
    /// Attempt `attempt` of operation `op` of `client` is sent as request `req` but never
    /// reaches the dependency: nothing listens (a `refused` phase; its end comes as a refused
    /// connect), the wire drops it (an upstream blackhole; its timeout ends it), or the proxy
    /// resets its new connection at once (`reset_peer`; it ends as a reset).
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
    /// Request `req`'s attempt was cancelled at `t` (its hedged operation ended without it).
    fn cancelled(&mut self, _t: Nanos, _req: ReqId) {}
    /// The dependency answered request `req` (`status`); `given_up`: its client was no longer
    /// waiting for it (the attempt had timed out), so any work it took was wasted.
    fn served(&mut self, _t: Nanos, _req: ReqId, _answer: &Answer, _given_up: bool) {}
    /// Open loop: an operation arrived at `intended` but `max_in_flight` were in progress, so
    /// it was dropped (never started).
    fn dropped(&mut self, _intended: Nanos) {}
    /// `client` opened a connection (counted only with a wire phase in the timeline).
    fn connection_opened(&mut self, _t: Nanos, _client: u32) {}
    /// The proxy reset a connection of `client` (`reset_peer`).
    fn connection_reset(&mut self, _t: Nanos, _client: u32) {}
    /// An operation ended: its client, number, start, end, attempts sent, outcome and class.
    fn operation(&mut self, ended: &Ended);
    /// A fan-out request ended (`E03_WORKLOAD=fan_out`), after its calls' operations.
    fn fanout(&mut self, _ended: &FanOutEnd) {}
    /// A replica left or re-entered the balancer's rotation (`E03_REPLICAS`).
    fn host_change(&mut self, _change: &e03_model::balancer::HostChange) {}
}

/// A request on its way to the dependency, held by a toxic on the requests.
#[derive(Debug)]
struct Transit {
    client: u32,
    op: u32,
    attempt: u32,
    key: u64,
    /// The deadline header it carries (its timeout in whole ms), as the swarm sends it when
    /// the dependency admits by deadline; read on arrival by the core's one rule.
    deadline_ms: Option<u64>,
    /// Its operation's class, sent in the priority header.
    class: Priority,
    charge: Option<ChargeRequest>,
}

/// One client of the workload, as the wire and the dependency see it.
#[derive(Debug, Default)]
struct Client {
    /// The attempt in flight, if one is, and the request carrying it.
    in_flight: Option<(ReqId, AttemptId)>,
    /// The other attempts in flight: a hedged operation's ([`e03_model::hedge`]). The wire's
    /// connection rules follow `in_flight` only.
    hedges: Vec<(ReqId, AttemptId)>,
}

impl Client {
    /// The request carrying the attempt in flight, if one is.
    fn req(&self) -> Option<ReqId> {
        self.in_flight.map(|(req, _)| req)
    }

    /// Whether the client still waits for request `req`'s answer.
    fn waits_for(&self, req: ReqId) -> bool {
        self.req() == Some(req) || self.hedges.iter().any(|&(r, _)| r == req)
    }

    /// Stops waiting for `req`: its attempt, if the client waited for it.
    fn take(&mut self, req: ReqId) -> Option<AttemptId> {
        if self.req() == Some(req) {
            return self.in_flight.take().map(|(_, id)| id);
        }
        let i = self.hedges.iter().position(|&(r, _)| r == req)?;
        Some(self.hedges.swap_remove(i).1)
    }

    /// Stops waiting for attempt `id`: its request, if the client waited for it.
    fn take_attempt(&mut self, id: AttemptId) -> Option<ReqId> {
        if let Some((req, _)) = self.in_flight.filter(|&(_, a)| a == id) {
            self.in_flight = None;
            return Some(req);
        }
        let i = self.hedges.iter().position(|&(_, a)| a == id)?;
        Some(self.hedges.swap_remove(i).0)
    }
}

/// The whole state of one run.
pub struct Engine<'a, O: Observer> {
    strategy: &'a Strategy,
    queue: EventQueue,
    /// The dependency: its schedule, ledger and commit rule (the core's [`DependencyNode`], the
    /// same the live service drives), one per replica (`E03_REPLICAS`), each on its own
    /// timeline.
    services: Vec<DependencyNode>,
    /// The replica each request went to (indexed by request id).
    host: Vec<u16>,
    /// The callers: every client's operations and attempts.
    workload: Box<dyn Workload + Send>,
    /// What the workload asks, one reused buffer ([`Self::act`] empties it).
    next: Next,
    /// The workload's next wake ([`Workload::next_wake`]), as of its last call.
    wake_at: Option<Nanos>,
    /// Indexed by client number, grown as the workload's clients first send.
    clients: Vec<Client>,
    /// Owner of each request (indexed by request id = arrival sequence).
    owner: Vec<u32>,
    /// The strategy's budgets and breakers, one per holder of the run's budget scope (one for
    /// every client by default).
    budget: Policies,
    /// What the dependency did at the current instant; its answers are drained to the clients.
    answers: Vec<Step>,
    observer: O,
    /// The timeline, for its wire faults (issue 27): a `refused` phase ends every attempt sent
    /// in it as a refused connect, after its latency; a blackhole drops what passes its way.
    timeline: Timeline,
    /// Answers a latency on the wire holds, by request, until their `Deliver` event.
    held: std::collections::HashMap<ReqId, AttemptResult>,
    /// Requests a latency on the wire holds until their `Arrive` event.
    in_transit: std::collections::HashMap<ReqId, Transit>,
    /// Every client's connection to the proxy in front (a timeline with wire phases only).
    wire: WireConnections,
    /// How its attempts are headed (their idempotency keys, and the deadline header when the
    /// dependency admits by deadline), the swarm's rules.
    headers: HeaderRules,
    /// The health probes sent (active health checks), each with its answer, by
    /// [`Event::ProbeAnswer`] number.
    probes: Vec<(Probe, bool)>,
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
        let services = (0..params.replicas())
            .map(|r| {
                DependencyNode::new(params.replica_config_for(&scenario, seed, &strategy.id, r))
            })
            .collect();
        let workload = params.workload(strategy, seed);
        let clients = Vec::with_capacity(n as usize);
        // Roughly: operations per client x attempts; only a capacity hint.
        let expected_ops = (params.swarm().duration_s * 1000.0
            / params.swarm().think_min_ms.max(1.0))
        .min(1e6) as usize
            + 1;
        let timeline = params.timeline(&scenario);
        for (i, w) in timeline.wire.iter().enumerate() {
            if w.fault.ends_connections().is_some() {
                queue.push(nanos(w.start), Event::WireStart(i));
            }
        }
        Self {
            timeline,
            strategy,
            queue,
            services,
            host: Vec::new(),
            next: Next::default(),
            wake_at: workload.next_wake().map(nanos),
            workload,
            clients,
            owner: Vec::with_capacity(expected_ops.saturating_mul(n as usize).min(1 << 24)),
            budget: params.policies(strategy, seed),
            answers: Vec::with_capacity(256),
            observer,
            held: std::collections::HashMap::new(),
            in_transit: std::collections::HashMap::new(),
            wire: WireConnections::new(seed, strategy.connections),
            headers: HeaderRules::of(strategy, seed, params.admits_by_deadline_for(&strategy.id)),
            probes: Vec::new(),
        }
    }

    /// Runs until nothing is left to happen, then stops the workload (what it left unfinished
    /// ends), and returns the observer.
    pub fn run(mut self) -> O {
        let mut now = 0;
        loop {
            // The dependency first at an instant (its schedule's order), then the clients: the
            // wire's deliveries, the workload's wakes, the timeouts (the queue's order).
            let event = self.queue.next_key();
            let wake = self.wake_at;
            let client = match (event, wake) {
                (Some((e, _)), Some(w)) => Some(e.min(w)),
                (e, w) => e.map(|(t, _)| t).or(w),
            };
            // The replica due first (the first of those due at one instant).
            let due = (0..self.services.len())
                .filter_map(|r| self.services[r].next_due().map(|t| (nanos(t), r)))
                .min();
            if let Some((t, r)) = due {
                if client.is_none_or(|c| t <= c) {
                    now = t;
                    self.services[r].advance(dur(t), &mut self.answers);
                    self.deliver_answers(t);
                    continue;
                }
            }
            if let Some(w) = wake {
                if event.is_none_or(|key| (w, WAKE_RANK) < key) {
                    now = w;
                    self.wake(w);
                    self.deliver_answers(w);
                    continue;
                }
            }
            let Some((t, event)) = self.queue.pop() else {
                break;
            };
            now = t;
            match event {
                Event::AttemptTimeout(req) => {
                    let c = self.owner[req as usize];
                    if self.clients[c as usize].req() == Some(req) {
                        // An HTTP/1.1 client cannot reuse a connection whose answer it gave
                        // up on: it closes it, and its next attempt opens a new one.
                        self.wire.close(c);
                    }
                    self.attempt_ends(t, req, AttemptResult::Timeout);
                }
                Event::Refused(req) => {
                    let refused = AttemptResult::ConnectionError(Broken::ConnectRefused);
                    self.attempt_ends(t, req, refused);
                }
                Event::Reset(req) => {
                    let reset = AttemptResult::ConnectionError(Broken::ResetBeforeAnswer);
                    self.attempt_ends(t, req, reset);
                }
                Event::WireStart(i) => self.reset_open_connections(t, i),
                Event::ConnReset(c, n, i) => self.conn_reset(t, c, n, i as usize),
                Event::Deliver(req) => {
                    if let Some(result) = self.held.remove(&req) {
                        self.attempt_ends(t, req, result);
                    }
                }
                Event::ProbeAnswer(i) => {
                    let (probe, ok) = self.probes[i as usize];
                    self.workload.on_probe(probe, ok, dur(t), &mut self.next);
                    self.act(t);
                }
                Event::Arrive(req) => {
                    if let Some(r) = self.in_transit.remove(&req) {
                        self.observer.arrived(t, req, r.client, r.op, r.attempt);
                        self.arrive(t, req, r);
                    }
                }
            }
            self.deliver_answers(t);
        }
        // The rate-limit article's steps leave the batch items not done when the steps run out.
        for e in self.workload.stop(dur(now), &mut self.budget) {
            self.ended(e);
        }
        self.observer
    }

    /// The workload's earliest wake, due at `t`.
    fn wake(&mut self, t: Nanos) {
        self.workload
            .on_wake(dur(t), &mut self.budget, &mut self.next);
        self.act(t);
    }

    /// Does what the workload asked at `t` ([`Self::next`], emptied): the breaker's changes
    /// reported, then each effect in [`Next::drain`]'s order ([`Self::effect`]).
    fn act(&mut self, t: Nanos) {
        // The breaker's changes go first, as the live driver logs them. They came after the
        // refused attempts' failed-fast reports before; the accumulator keeps the two apart
        // (a list of changes; a count and the attempt log), so no figure can tell.
        self.report_breaker();
        let mut next = std::mem::take(&mut self.next);
        for effect in next.drain() {
            self.effect(t, effect);
        }
        self.next = next;
        self.wake_at = self.workload.next_wake().map(nanos);
    }

    /// Turns one effect the workload asked at `t` into the run's events: records reported to
    /// the observer, a cancel closing its attempt's connection, a probe answered from its
    /// replica's timeline, an attempt sent. One arm per kind, no wildcard: a new kind of effect
    /// does not compile until it is handled here.
    fn effect(&mut self, t: Nanos, effect: Effect) {
        match effect {
            Effect::Refused(r) => {
                let id = r.attempt.id;
                self.observer.failed_fast(t, id.client, id.op, id.attempt);
            }
            Effect::Ended(e) => self.ended(e),
            Effect::Dropped(d) => self.observer.dropped(nanos(d)),
            Effect::FanOut(f) => self.observer.fanout(&f),
            Effect::Host(h) => self.observer.host_change(&h),
            Effect::Cancel(id) => {
                // The client stops waiting and closes that connection; the dependency still
                // works.
                let client = &mut self.clients[id.client as usize];
                let primary = client.in_flight.is_some_and(|(_, a)| a == id);
                if let Some(req) = client.take_attempt(id) {
                    if primary {
                        self.wire.close(id.client);
                    }
                    self.observer.cancelled(t, req);
                }
            }
            Effect::Probe(probe) => {
                // A `GET /ready` to the replica, answered from its timeline (the same rule the
                // live service answers it by); no network time, as for the attempts.
                let (at, status) = self.services[probe.host]
                    .schedule()
                    .model()
                    .config()
                    .timeline
                    .readiness(dur(t));
                self.queue
                    .push(nanos(at), Event::ProbeAnswer(self.probes.len() as u32));
                self.probes.push((probe, status == 200));
            }
            Effect::Send(send) => self.send(t, send),
        }
    }

    /// Sends attempt `send` at `t`, through the wire to the dependency.
    fn send(&mut self, t: Nanos, send: Outgoing) {
        let c = send.id.client;
        if self.clients.len() <= c as usize {
            self.clients.resize_with(c as usize + 1, Client::default);
        }
        let client = &mut self.clients[c as usize];
        let req = self.owner.len() as ReqId;
        if client.in_flight.is_some() {
            client.hedges.push((req, send.id));
        } else {
            client.in_flight = Some((req, send.id));
        }
        self.owner.push(c);
        self.host.push(send.replica);
        self.queue
            .push(t + nanos(send.timeout), Event::AttemptTimeout(req));
        if let Some(w) = self.timeline.wire_at(dur(t)) {
            if w.fault == WireFault::Refused {
                // Nothing listens: the attempt never reaches the dependency, and the proxy
                // closed the open connections.
                self.wire.close(c);
                self.observer
                    .refused(t, req, c, send.id.op, send.id.attempt);
                self.queue.push(t + nanos(w.latency), Event::Refused(req));
                return;
            }
        }
        if !self.timeline.wire.is_empty() && self.connect(t, c) {
            // The proxy reset the new connection at once: the request never arrives.
            self.observer
                .refused(t, req, c, send.id.op, send.id.attempt);
            self.queue.push(t, Event::Reset(req));
            return;
        }
        if let Some((i, w)) = self.timeline.wire_phase_at(dur(t)) {
            if w.fault.holds() == Some(Direction::Upstream) && self.conn_hit(c, i) {
                // The wire drops the request: its timeout ends it.
                self.observer
                    .refused(t, req, c, send.id.op, send.id.attempt);
                return;
            }
        }
        // A `limit_data` on the requests: the proxy closes the connection once its limit
        // passed. A request cut never arrives; one that ends at the limit arrives and is worked
        // on, and its answer finds the connection closed. Either way the attempt ends now.
        let limited = match self.limit_pass(t, c, Direction::Upstream, REQUEST_BYTES) {
            Some((kept, _)) if kept < REQUEST_BYTES => {
                self.observer
                    .refused(t, req, c, send.id.op, send.id.attempt);
                self.queue.push(t, Event::Reset(req));
                return;
            }
            Some((_, closed)) => closed,
            None => false,
        };
        // The model heads it (its key and its deadline header, [`HeaderRules::headers`]); a
        // charging strategy's attempt is a charge (`POST /charge`) with its policy's key.
        let Headers {
            idempotency_key,
            deadline_ms,
        } = self.headers.headers(&send);
        let charge = self.strategy.idempotency.map(|_| ChargeRequest {
            key: idempotency_key,
            amount: 1,
            client: Some(c),
            op: Some(send.id.op),
            attempt: Some(send.id.attempt),
        });
        let transit = Transit {
            client: c,
            op: send.id.op,
            attempt: send.id.attempt,
            key: send.id.key(),
            deadline_ms,
            class: send.class,
            charge,
        };
        match self.wire_delay(t, c, Direction::Upstream) {
            Some(d) if d > 0 => {
                // A latency on the requests holds it: it arrives later.
                self.observer
                    .sent_delayed(t, req, c, send.id.op, send.id.attempt);
                self.in_transit.insert(req, transit);
                self.queue.push(t + d, Event::Arrive(req));
            }
            _ => {
                self.observer
                    .arrival(t, req, c, send.id.op, send.id.attempt);
                self.arrive(t, req, transit);
            }
        }
        if limited {
            self.queue.push(t, Event::Reset(req));
        }
    }

    /// Request `req` reaches the dependency.
    fn arrive(&mut self, t: Nanos, req: ReqId, r: Transit) {
        let host = self.host[req as usize] as usize;
        let admission = self.services[host].arrive(
            dur(t),
            req,
            r.key,
            Caller {
                deadline: r.deadline_ms.map(|ms| deadline_on_arrival(dur(t), ms)),
                class: r.class,
            },
            r.charge,
            &mut self.answers,
        );
        self.observer.admission(t, req, admission);
    }

    /// Hands every answer due now to its client (if it is still waiting for it).
    fn deliver_answers(&mut self, t: Nanos) {
        // Delivering can add answers: a workload that sends its next call when an answer comes
        // (the rate-limit article's steps) may be answered at once. Indexing (rather than draining) keeps the
        // buffer's allocation for the next instant.
        let mut i = 0;
        while i < self.answers.len() {
            let step = self.answers[i];
            i += 1;
            if let Step::Answer(a) = step {
                let c = self.owner[a.req as usize];
                let given_up = !self.clients[c as usize].waits_for(a.req);
                self.observer.served(t, a.req, &a, given_up);
                let settled = self.services[self.host[a.req as usize] as usize].settle(&a);
                if let Some(charge) = &settled.charged {
                    self.observer.charge(
                        t,
                        c,
                        charge.op.expect("the engine's charges carry their op"),
                    );
                }
                let phase = self.timeline.wire_phase_at(dur(t));
                if phase.is_some_and(|(i, w)| {
                    w.fault.holds() == Some(Direction::Downstream) && self.conn_hit(c, i)
                }) {
                    // The wire drops the answer: the work is done, the attempt's timeout ends it.
                    continue;
                }
                let code = settled.status;
                let result = if a.cause == Cause::Lost {
                    self.observer.lost(t, a.req);
                    AttemptResult::ConnectionError(e03_model::cause::LOST_ANSWER)
                } else {
                    AttemptResult::Status {
                        code,
                        retry_after: a.retry_after,
                    }
                };
                // A client that gave up closed the connection: nothing passes it then.
                let result = if given_up {
                    result
                } else {
                    self.limit_data(t, c, result)
                };
                match self.wire_delay(t, c, Direction::Downstream) {
                    Some(d) if d > 0 => {
                        self.held.insert(a.req, result);
                        self.queue.push(t + d, Event::Deliver(a.req));
                    }
                    _ => self.attempt_ends(t, a.req, result),
                }
            }
        }
        self.answers.clear();
    }

    fn attempt_ends(&mut self, t: Nanos, req: ReqId, result: AttemptResult) {
        let c = self.owner[req as usize];
        let Some(id) = self.clients[c as usize].take(req) else {
            return; // answer after a timeout, or timeout after the answer (or a cancel)
        };
        self.observer.attempt_end(t, req, result);
        self.workload
            .on_answer(id, result, dur(t), &mut self.budget, &mut self.next);
        self.act(t);
    }

    /// Hands the breaker's state changes, if any, to the observer.
    fn report_breaker(&mut self) {
        for (_, tr) in self.budget.take_transitions() {
            self.observer.breaker(nanos(tr.at), tr.from, tr.to);
        }
    }

    /// An operation ended: the observer told.
    fn ended(&mut self, e: Ended) {
        self.observer.operation(&e);
    }
}
