//! Chains of services on a virtual clock: the top caller and every hop are the core's
//! [`HopCall`] state machines, the bottom is [`Bottom::answer`]; calls take no network time.
//! A caller that stops waiting for an attempt (its timeout) does not stop the callee, which
//! works on to its own end, as a server that does not notice its caller left. Top requests are
//! sent one after the other. The records are the ones the live hops log.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use e03_core::chain::{
    deadline_on_arrival, Bottom, CallRecord, ChainVariant, HopCall, HopStep, TopRecord,
};
use e03_core::AttemptResult;

/// One call in flight at some layer (0: the top caller's operation).
struct Call {
    layer: u32,
    req: u64,
    start: Duration,
    /// Who waits for it: the calling call and its attempt number.
    parent: Option<(usize, u32)>,
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
    /// A call's wait before a retry is over.
    Wake { call: usize },
}

struct Sim<'a> {
    variant: &'a ChainVariant,
    bottom: Bottom,
    seed: u64,
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

    /// A call arrives at `layer` at `now`, with the deadline header value `header_ms`.
    fn arrive(
        &mut self,
        now: Duration,
        layer: u32,
        req: u64,
        parent: Option<(usize, u32)>,
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
        let spec = if layer == 0 {
            &self.variant.top
        } else {
            &self.variant.hops[layer as usize - 1]
        };
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
                self.arrive(now, layer, req, Some((id, attempt)), header_ms);
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
        if c.layer == 0 {
            let attempts = c.hop.as_ref().map_or(0, |h| h.attempt());
            self.tops.push(TopRecord {
                req: c.req,
                start_us: us(c.start),
                end_us: us(now),
                status,
                attempts,
            });
            return;
        }
        self.records.push(CallRecord {
            layer: c.layer,
            req: c.req,
            start_us: us(c.start),
            end_us: us(now),
            status,
            refused: c.refused,
        });
        if let Some((parent, attempt)) = c.parent {
            self.deliver(now, parent, attempt, AttemptResult::status(status));
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

    fn run(&mut self, requests: u32) {
        let mut now = Duration::ZERO;
        for req in 1..=u64::from(requests) {
            let top = self.calls.len();
            self.arrive(now, 0, req, None, None);
            while !self.calls[top].done {
                let Some(Reverse((t, _, ev))) = self.queue.pop() else {
                    break;
                };
                now = t;
                self.handle(now, ev);
            }
        }
        // The lower layers' work that outlives the top requests.
        while let Some(Reverse((t, _, ev))) = self.queue.pop() {
            self.handle(t, ev);
        }
    }

    fn handle(&mut self, now: Duration, ev: Ev) {
        match ev {
            Ev::Finish { call, status } => self.finish(now, call, status),
            Ev::Timeout { call, attempt } => {
                self.deliver(now, call, attempt, AttemptResult::Timeout)
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
    let mut sim = Sim {
        variant,
        bottom,
        seed,
        calls: Vec::new(),
        queue: BinaryHeap::new(),
        seq: 0,
        records: Vec::new(),
        tops: Vec::new(),
    };
    sim.run(requests);
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
