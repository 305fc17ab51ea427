//! One simulated run: the swarm's closed-loop clients and one dependency on a virtual clock.
//!
//! The clients follow the live swarm's rules step by step, with the core's types:
//!
//! - client `c` draws from `stream(seed, Think, c)` its first start offset, uniform in
//!   `[0, 2 s)` at microsecond resolution, then after each operation a think time uniform in
//!   `[think_min, think_max]` us; an operation starts only if its start is before the run's
//!   length;
//! - an operation is an [`Operation`]; its first attempt deposits into the budget; each attempt
//!   gets `attempt_timeout(now)` and arrives at the dependency at the instant it is sent
//!   (network latency zero) with request id = arrival sequence and fault key
//!   `request_key(client, op, attempt)` (`op` counts the client's operations from 0);
//! - the attempt ends at `min(answer, send + timeout)`; `on_result` (with the client's jitter
//!   stream `stream(seed, Jitter, c)` and the run's one budget) says retry after `wait` or done.
//!
//! Everything observable is reported to an [`Observer`]; the analyzer's accumulator is one, a
//! test's trace is another. The dependency is the core's [`DependencySchedule`]: whenever it has
//! something due at or before the clients' next event, the engine advances it to that instant
//! first. The hot path allocates nothing per event: events are `Copy`, the request table is a
//! `Vec` indexed by request id, answers go through one reused buffer.

use e03_core::budget::AnyBudget;
use e03_core::faults::request_key;
use e03_core::operation::Limits;
use e03_core::rng::{stream, LabRng, Stream};
use e03_core::schedule::Step;
use e03_core::{
    Admission, AttemptResult, DependencySchedule, GiveUp, Next, OpOutcome, Operation, Params,
    ReqId, RetryBudget, Scenario, Strategy,
};
use rand::Rng;

use crate::queue::{Event, EventQueue, Nanos};
use crate::service::{dur, nanos};

/// What a run reports as it goes. Times are virtual nanoseconds since time zero.
pub trait Observer {
    /// Attempt `attempt` of operation `op` of `client` is sent and arrives at the dependency as
    /// request `req` (sending and arrival are the same instant).
    fn arrival(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32);
    /// The dependency's decision about that request.
    fn admission(&mut self, _t: Nanos, _req: ReqId, _admission: Admission) {}
    /// The attempt carried by `req` ended, as its client saw it.
    fn attempt_end(&mut self, _t: Nanos, _req: ReqId, _result: AttemptResult) {}
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

/// First start offsets are uniform in `[0, 2 s)`.
const FIRST_START_SPAN_US: u64 = 2_000_000;

/// One client of the swarm.
#[derive(Debug)]
struct Client {
    /// Think times and the first start offset.
    think: LabRng,
    /// Retry jitter.
    jitter: LabRng,
    /// The operation in progress.
    op: Option<Operation>,
    /// Number of the operation in progress (from 0); the next one gets `op_no + 1`.
    op_no: u32,
    /// Operations started so far.
    started: u32,
    /// The request carrying the attempt in flight, if one is.
    in_flight: Option<ReqId>,
}

/// The whole state of one run.
pub struct Engine<'a, O: Observer> {
    strategy: &'a Strategy,
    limits: Limits,
    /// Operations start only before this instant.
    end_of_starts: Nanos,
    think_us: (u64, u64),
    queue: EventQueue,
    service: DependencySchedule,
    clients: Vec<Client>,
    /// Owner of each request (indexed by request id = arrival sequence).
    owner: Vec<u32>,
    /// One budget shared by every client of this run (strategy D's token bucket).
    budget: AnyBudget,
    /// What the dependency did at the current instant; its answers are drained to the clients.
    answers: Vec<Step>,
    observer: O,
}

impl<'a, O: Observer> Engine<'a, O> {
    pub fn new(
        scenario: Scenario,
        params: &Params,
        strategy: &'a Strategy,
        seed: u64,
        observer: O,
    ) -> Self {
        let n = params.swarm.clients;
        let mut queue = EventQueue::with_capacity(4 * n as usize + 64);
        let service = DependencySchedule::new(params.service_config(scenario, seed));
        let (tmin, tmax) = params.think_range();
        let think_us = (tmin.as_micros() as u64, tmax.as_micros() as u64);
        let end_of_starts = nanos(params.duration());
        let mut clients = Vec::with_capacity(n as usize);
        for c in 0..n {
            let mut think = stream(seed, Stream::Think, c);
            let offset_us = think.random_range(0..FIRST_START_SPAN_US);
            let start = offset_us * 1000;
            if start < end_of_starts {
                queue.push(start, Event::StartOp(c));
            }
            clients.push(Client {
                think,
                jitter: stream(seed, Stream::Jitter, c),
                op: None,
                op_no: 0,
                started: 0,
                in_flight: None,
            });
        }
        // Roughly: operations per client x attempts; only a capacity hint.
        let expected_ops = (params.swarm.duration_s * 1000.0 / params.swarm.think_min_ms.max(1.0))
            .min(1e6) as usize
            + 1;
        Self {
            strategy,
            limits: params.limits(),
            end_of_starts,
            think_us,
            queue,
            service,
            clients,
            owner: Vec::with_capacity(expected_ops.saturating_mul(n as usize).min(1 << 24)),
            budget: AnyBudget::from_spec(strategy.budget),
            answers: Vec::with_capacity(256),
            observer,
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
                Event::StartOp(c) => self.start_op(t, c),
                Event::SendAttempt(c) => self.send_attempt(t, c),
                Event::AttemptTimeout(req) => {
                    self.attempt_ends(t, req, AttemptResult::Timeout);
                }
            }
            self.deliver_answers(t);
        }
        self.observer
    }

    fn start_op(&mut self, t: Nanos, c: u32) {
        let client = &mut self.clients[c as usize];
        client.op_no = client.started;
        client.started += 1;
        client.op = Some(Operation::start(dur(t), self.limits));
        self.budget.deposit();
        self.send_attempt(t, c);
    }

    fn send_attempt(&mut self, t: Nanos, c: u32) {
        let client = &mut self.clients[c as usize];
        let op = client
            .op
            .as_ref()
            .expect("an attempt belongs to an operation");
        let Some(timeout) = op.attempt_timeout(dur(t)) else {
            // `on_result` never schedules a retry at or past the deadline; kept for safety.
            let attempts = op.attempt().saturating_sub(1);
            self.finish_op(t, c, attempts, OpOutcome::Failed(GiveUp::Deadline));
            return;
        };
        let attempt = op.attempt();
        let op_no = client.op_no;
        let req = self.owner.len() as ReqId;
        self.owner.push(c);
        client.in_flight = Some(req);
        self.queue
            .push(t + nanos(timeout), Event::AttemptTimeout(req));
        self.observer.arrival(t, req, c, op_no, attempt);
        let key = request_key(c, op_no, attempt);
        let admission = self.service.arrive(dur(t), req, key, &mut self.answers);
        self.observer.admission(t, req, admission);
    }

    /// Hands every answer due now to its client (if it is still waiting for it).
    fn deliver_answers(&mut self, t: Nanos) {
        // Delivering schedules retries and new operations as events, so it never adds answers;
        // indexing (rather than draining) keeps the buffer's allocation for the next instant.
        for i in 0..self.answers.len() {
            if let Step::Answer(a) = self.answers[i] {
                self.attempt_ends(t, a.req, AttemptResult::status(a.status));
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
        let op = client
            .op
            .as_mut()
            .expect("an attempt belongs to an operation");
        let attempts = op.attempt();
        match op.on_result(
            dur(t),
            result,
            self.strategy,
            &mut self.budget,
            &mut client.jitter,
        ) {
            Next::Retry { wait } => self.queue.push(t + nanos(wait), Event::SendAttempt(c)),
            Next::Done(outcome) => self.finish_op(t, c, attempts, outcome),
        }
    }

    fn finish_op(&mut self, t: Nanos, c: u32, attempts: u32, outcome: OpOutcome) {
        let client = &mut self.clients[c as usize];
        let op = client.op.take().expect("an operation in progress");
        let start = nanos(op.started_at());
        let think_us = client.think.random_range(self.think_us.0..=self.think_us.1);
        let next = t + think_us * 1000;
        let op_no = client.op_no;
        if next < self.end_of_starts {
            self.queue.push(next, Event::StartOp(c));
        }
        self.observer
            .operation(c, op_no, start, t, attempts, outcome);
    }
}
