//! Chains of services on a virtual clock: every hop is the core's [`HopCall`] state machine,
//! the bottom is [`Bottom::answer`], and the top caller is the core's workload
//! ([`e03_model::workload::top_caller`]), driven here through the one workload interface as the
//! simulator's engine drives any workload; calls take no network time. A caller that stops
//! waiting for an attempt (its timeout) does not stop the callee, which works on to its own
//! end, as a server that does not notice its caller left. The records are the ones the live
//! hops and the live top caller log. A fault proxy in front of a layer
//! ([`e03_model::chain_proxy`]) is the HTTP fault proxy's own [`FaultProxy`], asked at each
//! call's arrival at that layer; its records are the ones a live `lab proxy --http` logs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use e03_model::attempt::Broken;
use e03_model::chain::{
    deadline_on_arrival, Bottom, CallRecord, ChainVariant, HopCall, HopStep, TopRecord,
};
use e03_model::chain_proxy::{call_request_headers, ProxyOutcome, CALL_METHOD, CALL_PATH};
use e03_model::events::{ProxiedEnd, ProxiedRecord, RunTag};
use e03_model::fault_proxy::FaultProxy;
use e03_model::http_fault::RequestView;
use e03_model::policy::Policies;
use e03_model::session::AttemptId;
use e03_model::workload::{Clients, Effect, HeaderRules, Next, Workload};
use e03_model::AttemptResult;

/// Who waits for a call's answer.
#[derive(Debug, Clone, Copy)]
enum Parent {
    /// The top caller's attempt.
    Top(AttemptId),
    /// The calling hop's call and its attempt number.
    Call(usize, u32),
    /// The proxy in front of the layer, for its call `usize` (which has a parent of its own).
    Proxy(usize),
}

/// A call that came through a proxy in front of its layer.
struct Proxied {
    /// Who waits for its answer through the proxy.
    parent: Parent,
    outcome: ProxyOutcome,
    layer: u32,
    req: u64,
    header_ms: Option<u64>,
    /// When its caller stops waiting (its attempt's timeout).
    left_at: Duration,
    /// When it was forwarded to the layer.
    forwarded_at: Duration,
    record: ProxiedRecord,
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
    /// A proxy acts on its call `proxied` (at once, or after a delay phase's wait).
    Proxy { proxied: usize },
}

struct Sim<'a> {
    variant: &'a ChainVariant,
    bottom: Bottom,
    seed: u64,
    top: Clients,
    /// How the top caller's attempts are headed (the deadline header when deadlines travel).
    headers: HeaderRules,
    policy: Policies,
    /// The top caller's attempt in flight (it sends one at a time).
    top_waiting: Option<AttemptId>,
    calls: Vec<Call>,
    queue: BinaryHeap<Reverse<(Duration, u64, Ev)>>,
    seq: u64,
    records: Vec<CallRecord>,
    tops: Vec<TopRecord>,
    /// The proxy in front of each layer that has one.
    proxies: Vec<(u32, FaultProxy)>,
    proxied: Vec<Proxied>,
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl Sim<'_> {
    fn at(&mut self, t: Duration, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq, ev)));
    }

    /// What the top caller asked at `now`, in [`Next::drain`]'s order: its ended operations
    /// are top records, its sends arrive at layer 1 (with the deadline header when deadlines
    /// travel, [`HeaderRules::headers`]).
    fn act(&mut self, now: Duration, mut asked: Next) {
        for effect in asked.drain() {
            match effect {
                Effect::Ended(e) => self.tops.extend(TopRecord::of_operation(
                    e.op,
                    us(e.start),
                    us(e.end),
                    e.attempts,
                    e.outcome,
                )),
                Effect::Send(send) => {
                    self.top_waiting = Some(send.id);
                    let (op, attempt) = (send.id.op, send.id.attempt);
                    self.at(now + send.timeout, Ev::TopTimeout { op, attempt });
                    let header_ms = self.headers.headers(&send).deadline_ms;
                    let to = Parent::Top(send.id);
                    self.send(now, 1, u64::from(op), to, header_ms, send.timeout);
                }
                // The top caller is one session with no budget or breaker (its strategy is A
                // or B), no hedge, balancer, fan-out or open loop: it asks none of these, and
                // this simulator keeps top records only (as before the effects were one type).
                Effect::Refused(_)
                | Effect::Dropped(_)
                | Effect::FanOut(_)
                | Effect::Host(_)
                | Effect::Cancel(_)
                | Effect::Probe(_) => {}
            }
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

    /// A call is sent to `layer` (1 or below) at `now`, with the deadline header value
    /// `header_ms`, by a caller that waits `timeout` for it: through the proxy in front of the
    /// layer, if it has one.
    fn send(
        &mut self,
        now: Duration,
        layer: u32,
        req: u64,
        parent: Parent,
        header_ms: Option<u64>,
        timeout: Duration,
    ) {
        let Some(proxy) = self.proxies.iter_mut().find(|(l, _)| *l == layer) else {
            return self.arrive(now, layer, req, parent, header_ms);
        };
        let headers = call_request_headers(layer, req, header_ms);
        let view: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let decision = proxy.1.decide(
            now,
            &RequestView {
                method: CALL_METHOD,
                path: CALL_PATH,
                headers: &view,
            },
        );
        let seq = self.proxied.iter().filter(|p| p.layer == layer).count() as u64;
        let proxied = self.proxied.len();
        self.proxied.push(Proxied {
            parent,
            outcome: ProxyOutcome::of(&decision),
            layer,
            req,
            header_ms,
            left_at: now + timeout,
            forwarded_at: now,
            record: ProxiedRecord {
                tag: RunTag {
                    run: format!("simulated-{}", self.variant.id),
                    seed: self.seed,
                    strategy: "proxy".into(),
                },
                seq,
                t_us: us(now),
                method: CALL_METHOD.into(),
                path: CALL_PATH.into(),
                fault: decision.fault,
                end: ProxiedEnd::Left,
                status: None,
                upstream_status: None,
                upstream_us: None,
                upstream_error: None,
                notes: decision.note.into_iter().collect(),
            },
        });
        self.at(now + decision.wait, Ev::Proxy { proxied });
    }

    /// A proxy acts on its call `p` at `now`: forwards it, answers it, resets its caller's
    /// connection or holds it until its caller leaves.
    fn proxy_acts(&mut self, now: Duration, p: usize) {
        let px = &mut self.proxied[p];
        let (parent, layer, req, header_ms) = (px.parent, px.layer, px.req, px.header_ms);
        match px.outcome {
            ProxyOutcome::Forward { .. } => {
                px.forwarded_at = now;
                self.arrive(now, layer, req, Parent::Proxy(p), header_ms);
            }
            ProxyOutcome::Answer(status) => {
                px.record.end = ProxiedEnd::Answered;
                px.record.status = Some(status);
                px.record.t_us = us(now);
                self.answer(now, parent, AttemptResult::status(status));
            }
            ProxyOutcome::Reset => {
                px.record.end = ProxiedEnd::Reset;
                px.record.t_us = us(now);
                let reset = AttemptResult::ConnectionError(Broken::ResetBeforeAnswer);
                self.answer(now, parent, reset);
            }
            ProxyOutcome::Hang => px.record.t_us = us(px.left_at.max(now)),
        }
    }

    /// The layer answered `status` at `now` to the proxy's call `p`: the proxy passes it on,
    /// or resets its caller's connection (a `reset` after), if its caller still waits.
    fn proxy_answered(&mut self, now: Duration, p: usize, status: u16) {
        let waits = self.waits(self.proxied[p].parent);
        let px = &mut self.proxied[p];
        px.record.upstream_status = Some(status);
        px.record.upstream_us = Some(us(now.saturating_sub(px.forwarded_at)));
        px.record.t_us = us(now);
        let parent = px.parent;
        let result = match px.outcome {
            _ if !waits => {
                px.record.end = ProxiedEnd::Left;
                px.record.t_us = us(px.left_at.min(now));
                return;
            }
            ProxyOutcome::Forward { lose_answer: true } => {
                px.record.end = ProxiedEnd::Reset;
                AttemptResult::ConnectionError(Broken::ResetBeforeAnswer)
            }
            _ => {
                px.record.end = ProxiedEnd::Answered;
                px.record.status = Some(status);
                AttemptResult::status(status)
            }
        };
        self.answer(now, parent, result);
    }

    /// Whether `parent` still waits for the call it made.
    fn waits(&self, parent: Parent) -> bool {
        match parent {
            Parent::Top(id) => self.top_waiting == Some(id),
            Parent::Call(id, attempt) => {
                self.calls[id].waiting == Some(attempt) && !self.calls[id].done
            }
            Parent::Proxy(p) => self.waits(self.proxied[p].parent),
        }
    }

    /// `parent` learns `result` at `now`, if it still waits.
    fn answer(&mut self, now: Duration, parent: Parent, result: AttemptResult) {
        match parent {
            Parent::Top(attempt) => self.top_answer(now, attempt, result),
            Parent::Call(call, attempt) => self.deliver(now, call, attempt, result),
            Parent::Proxy(p) => {
                let status = match result {
                    AttemptResult::Status { code, .. } => code,
                    _ => unreachable!("a layer answers a proxy with a status"),
                };
                self.proxy_answered(now, p, status)
            }
        }
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
                let to = Parent::Call(id, attempt);
                self.send(now, layer, req, to, header_ms, timeout);
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
        let parent = c.parent;
        self.answer(now, parent, AttemptResult::status(status));
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
            Ev::Proxy { proxied } => self.proxy_acts(now, proxied),
            Ev::Wake { call } => {
                if !self.calls[call].done {
                    let step = self.calls[call].hop.as_mut().expect("a hop").next(now);
                    self.step(now, call, step);
                }
            }
        }
    }
}

/// What a simulated chain logged: the top records, every lower call's record and each
/// proxy's records with the layer it stands in front of, as the live processes log them.
#[derive(Debug, Clone, Default)]
pub struct ChainLogs {
    pub tops: Vec<TopRecord>,
    pub calls: Vec<CallRecord>,
    pub proxied: Vec<(u32, ProxiedRecord)>,
}

/// Runs `requests` top requests through `variant` over `bottom`.
pub fn simulate_chain(
    variant: &ChainVariant,
    bottom: Bottom,
    requests: u32,
    seed: u64,
) -> ChainLogs {
    let (top, policy) = e03_model::workload::top_caller(variant, requests, seed);
    let proxies = variant
        .proxies
        .iter()
        .map(|p| {
            let rng = e03_model::rng::stream(seed, e03_model::rng::Stream::Wire, p.layer);
            (p.layer, FaultProxy::new(p.timeline.clone(), rng))
        })
        .collect();
    let mut sim = Sim {
        variant,
        bottom,
        seed,
        top,
        headers: HeaderRules::of(&variant.top.strategy(), seed, variant.propagate),
        policy,
        top_waiting: None,
        calls: Vec::new(),
        queue: BinaryHeap::new(),
        seq: 0,
        records: Vec::new(),
        tops: Vec::new(),
        proxies,
        proxied: Vec::new(),
    };
    sim.run();
    ChainLogs {
        tops: sim.tops,
        calls: sim.records,
        proxied: sim
            .proxied
            .into_iter()
            .map(|p| (p.layer, p.record))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_metrics::chain::ChainRun;
    use e03_plan::scenario::builtin;

    fn runs(name: &str) -> Vec<ChainRun> {
        let def = builtin(name).unwrap().chain.unwrap();
        def.variants
            .iter()
            .map(|v| {
                let logs = simulate_chain(v, def.bottom, def.requests, 1);
                ChainRun::of(v, &logs.tops, &logs.calls, &logs.proxied)
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

    /// `examples/amplification-proxy.toml`, per top request: the proxy before inventory
    /// refuses the first call (inventory 8 calls, not 9: 24 at the bottom); the proxy before
    /// the gateway loses the first answer after the work, so the top's second attempt runs the
    /// chain again (54 at the bottom). Hand-computed in lab/tests/chain_proxy.rs.
    #[test]
    fn a_proxy_before_a_layer_changes_the_calls_as_its_faults_say() {
        let text = include_str!("../../examples/amplification-proxy.toml");
        let def = e03_plan::scenario::parse(text, "amplification-proxy.toml").unwrap();
        let chain = def.chain.unwrap();
        let run = |i: usize| {
            let v = &chain.variants[i];
            let logs = simulate_chain(v, chain.bottom, chain.requests, 1);
            ChainRun::of(v, &logs.tops, &logs.calls, &logs.proxied)
        };
        let lost = run(0);
        assert_eq!(lost.calls_per_layer, [3, 3, 9, 24, 72]);
        assert_eq!(lost.proxied_per_layer, [0, 0, 0, 27, 0]);
        assert_eq!(lost.not_forwarded_per_layer, [0, 0, 0, 3, 0]);
        let reset = run(1);
        assert_eq!(reset.calls_per_layer, [3, 6, 18, 54, 162]);
        assert_eq!(reset.proxied_per_layer, [0, 6, 0, 0, 0]);
        assert_eq!(reset.not_forwarded_per_layer, [0; 5]);
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
