//! Chains of services on a virtual clock: every hop is the core's [`HopCall`] state machine,
//! the bottom is [`Bottom::answer`], and the top caller is the core's workload
//! ([`e03_core::workload::top_caller`]), driven here through the one workload interface as the
//! simulator's engine drives any workload; calls take no network time. A caller that stops
//! waiting for an attempt (its timeout) does not stop the callee, which works on to its own
//! end, as a server that does not notice its caller left. The records are the ones the live
//! hops and the live top caller log.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use e03_core::chain::{
    deadline_header_ms, deadline_on_arrival, Bottom, CallRecord, ChainVariant, HopCall, HopStep,
    TopRecord,
};
use e03_core::policy::Policies;
use e03_core::session::AttemptId;
use e03_core::workload::{Clients, Next, Workload};
use e03_core::AttemptResult;

/// Who waits for a call's answer.
#[derive(Debug, Clone, Copy)]
enum Parent {
    /// The top caller's attempt.
    Top(AttemptId),
    /// The calling hop's call and its attempt number.
    Call(usize, u32),
}

/// One call in flight at a layer below the top caller.
struct Call {
    layer: u32,
    req: u64,
    start: Duration,
    parent: Parent,
    /// The hop's state machine (none at the bottom).
    hop: Option<HopCall>,
    /// The attempt this call waits for (number), while one is in flight.
    waiting: Option<u32>,
    refused: bool,
    done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A call (at the bottom) ends with this status.
    Finish { call: usize, status: u16 },
    /// A call's attempt `attempt` times out.
    Timeout { call: usize, attempt: u32 },
    /// The top caller's attempt (operation, attempt) times out.
    TopTimeout { op: u32, attempt: u32 },
    /// A call's wait before a retry is over.
    Wake { call: usize },
}

struct Sim<'a> {
    variant: &'a ChainVariant,
    bottom: Bottom,
    seed: u64,
    top: Clients,
    policy: Policies,
    /// The top caller's attempt in flight (it sends one at a time).
    top_waiting: Option<AttemptId>,
    calls: Vec<Call>,
    queue: BinaryHeap<Reverse<(Duration, u64, Ev)>>,
    seq: u64,
    records: Vec<CallRecord>,
    tops: Vec<TopRecord>,
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl Sim<'_> {
    fn at(&mut self, t: Duration, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq, ev)));
    }

    /// What the top caller asked at `now`: its ended operations are top records, its sends
    /// arrive at layer 1 (with the deadline header when deadlines travel).
    fn act(&mut self, now: Duration, asked: Next) {
        self.tops.extend(asked.ended.iter().filter_map(|e| {
            TopRecord::of_operation(e.op, us(e.start), us(e.end), e.attempts, e.outcome)
        }));
        for send in asked.sends {
            self.top_waiting = Some(send.id);
            let (op, attempt) = (send.id.op, send.id.attempt);
            self.at(now + send.timeout, Ev::TopTimeout { op, attempt });
            let header_ms = self
                .variant
                .propagate
                .then(|| deadline_header_ms(send.timeout));
            self.arrive(now, 1, u64::from(op), Parent::Top(send.id), header_ms);
        }
    }

    /// The top caller's attempt `id` ended at `now` with `result` (if it still waits for it).
    fn top_answer(&mut self, now: Duration, id: AttemptId, result: AttemptResult) {
        if self.top_waiting != Some(id) {
            return; // that attempt was given up already
        }
        self.top_waiting = None;
        let mut asked = Next::default();
        self.top
            .on_answer(id, result, now, &mut self.policy, &mut asked);
        self.act(now, asked);
    }

    /// A call arrives at `layer` (1 or below) at `now`, with the deadline header value
    /// `header_ms`.
    fn arrive(
        &mut self,
        now: Duration,
        layer: u32,
        req: u64,
        parent: Parent,
        header_ms: Option<u64>,
    ) {
        let id = self.calls.len();
        let bottom_layer = self.variant.bottom_layer();
        self.calls.push(Call {
            layer,
            req,
            start: now,
            parent,
            hop: None,
            waiting: None,
            refused: false,
            done: false,
        });
        if layer == bottom_layer {
            let deadline = header_ms.map(|ms| deadline_on_arrival(now, ms));
            let (end, status) = self.bottom.answer(now, deadline);
            self.calls[id].refused = deadline.is_some_and(|d| d <= now);
            self.at(end, Ev::Finish { call: id, status });
            return;
        }
        let spec = &self.variant.hops[layer as usize - 1];
        let seed = self.seed ^ ((id as u64) << 8);
        match HopCall::arrive(now, spec, header_ms, self.variant.propagate, seed) {
            Err(status) => {
                self.calls[id].refused = true;
                self.finish(now, id, status);
            }
            Ok(mut hop) => {
                let step = hop.next(now);
                self.calls[id].hop = Some(hop);
                self.step(now, id, step);
            }
        }
    }

    fn step(&mut self, now: Duration, id: usize, step: HopStep) {
        match step {
            HopStep::Send { timeout, header_ms } => {
                let attempt = self.calls[id].hop.as_ref().expect("a hop").attempt();
                self.calls[id].waiting = Some(attempt);
                self.at(now + timeout, Ev::Timeout { call: id, attempt });
                let (layer, req) = (self.calls[id].layer + 1, self.calls[id].req);
                self.arrive(now, layer, req, Parent::Call(id, attempt), header_ms);
            }
            HopStep::Wait(wait) => self.at(now + wait, Ev::Wake { call: id }),
            HopStep::Answer(status) => self.finish(now, id, status),
        }
    }

    /// Call `id` answers `status` at `now`: logged, and its caller learns it if still waiting.
    fn finish(&mut self, now: Duration, id: usize, status: u16) {
        let c = &mut self.calls[id];
        if c.done {
            return;
        }
        c.done = true;
        self.records.push(CallRecord {
            layer: c.layer,
            req: c.req,
            start_us: us(c.start),
            end_us: us(now),
            status,
            refused: c.refused,
        });
        match c.parent {
            Parent::Top(attempt) => self.top_answer(now, attempt, AttemptResult::status(status)),
            Parent::Call(parent, attempt) => {
                self.deliver(now, parent, attempt, AttemptResult::status(status))
            }
        }
    }

    fn deliver(&mut self, now: Duration, id: usize, attempt: u32, result: AttemptResult) {
        if self.calls[id].waiting != Some(attempt) || self.calls[id].done {
            return; // that attempt was given up already
        }
        self.calls[id].waiting = None;
        let step = self.calls[id]
            .hop
            .as_mut()
            .expect("a hop")
            .on_result(now, result);
        self.step(now, id, step);
    }

    /// Until the top caller has nothing left to do and every lower call has ended (the work
    /// below a caller that left goes on). A wake of the top caller due by the next event comes
    /// first: its next request starts the moment the one before ended.
    fn run(&mut self) {
        loop {
            let event = self.queue.peek().map(|Reverse((t, _, _))| *t);
            let wake = self.top.next_wake();
            match (wake, event) {
                (None, None) => break,
                (Some(wake), e) if e.is_none_or(|e| wake <= e) => {
                    let mut asked = Next::default();
                    self.top.on_wake(wake, &mut self.policy, &mut asked);
                    self.act(wake, asked);
                }
                _ => {
                    let Some(Reverse((t, _, ev))) = self.queue.pop() else {
                        unreachable!("an event is due before any wake");
                    };
                    self.handle(t, ev);
                }
            }
        }
    }

    fn handle(&mut self, now: Duration, ev: Ev) {
        match ev {
            Ev::Finish { call, status } => self.finish(now, call, status),
            Ev::Timeout { call, attempt } => {
                self.deliver(now, call, attempt, AttemptResult::Timeout)
            }
            Ev::TopTimeout { op, attempt } => {
                let id = AttemptId {
                    client: 0,
                    op,
                    attempt,
                };
                self.top_answer(now, id, AttemptResult::Timeout)
            }
            Ev::Wake { call } => {
                if !self.calls[call].done {
                    let step = self.calls[call].hop.as_mut().expect("a hop").next(now);
                    self.step(now, call, step);
                }
            }
        }
    }
}

/// Runs `requests` top requests through `variant` over `bottom`: the top records and every
/// lower call's record.
pub fn simulate_chain(
    variant: &ChainVariant,
    bottom: Bottom,
    requests: u32,
    seed: u64,
) -> (Vec<TopRecord>, Vec<CallRecord>) {
    let (top, policy) = e03_core::workload::top_caller(variant, requests, seed);
    let mut sim = Sim {
        variant,
        bottom,
        seed,
        top,
        policy,
        top_waiting: None,
        calls: Vec::new(),
        queue: BinaryHeap::new(),
        seq: 0,
        records: Vec::new(),
        tops: Vec::new(),
    };
    sim.run();
    (sim.tops, sim.records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_core::scenario::builtin;
    use e03_metrics::chain::ChainRun;

    fn runs(name: &str) -> Vec<ChainRun> {
        let def = builtin(name).unwrap().chain.unwrap();
        def.variants
            .iter()
            .map(|v| {
                let (tops, calls) = simulate_chain(v, def.bottom, def.requests, 1);
                ChainRun::of(v, &tops, &calls)
            })
            .collect()
    }

    #[test]
    fn amplification_gives_the_published_27_3_and_243() {
        let r = runs("amplification");
        let bottom: Vec<f64> = r.iter().map(|r| r.bottom_per_request()).collect();
        assert_eq!(bottom, [27.0, 3.0, 243.0]);
        // Every layer multiplies by its attempts: 1, 3, 9, 27 per request.
        assert_eq!(r[0].calls_per_layer, vec![3, 3, 9, 27, 81]);
        assert_eq!(r[1].calls_per_layer, vec![3, 3, 9, 9, 9]);
        assert!(r.iter().all(|r| r.succeeded == 0));
    }

    #[test]
    fn a_deadline_bounds_the_wait_and_propagation_stops_the_wasted_work() {
        let r = runs("deadline");
        assert_eq!(r[0].op_max_ms, 9000.0);
        assert_eq!(r[1].op_max_ms, 1000.0);
        assert_eq!(r[2].op_max_ms, 1000.0);
        assert_eq!(r[3].op_max_ms, 1000.0);
        assert!(r[2].wasted_ms > 10_000.0, "{}", r[2].wasted_ms);
        assert_eq!(r[3].wasted_ms, 0.0);
        assert_eq!(r[3].late_calls, 0);
    }
}
