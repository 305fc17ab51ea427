//! Chains of services: a top caller, a list of hops that each call the next one with a retry
//! policy of their own, and a bottom dependency. The state machine of one hop's call
//! ([`HopCall`]) wraps the core's [`Operation`] and [`Strategy`]: the dependency service in
//! proxy mode (`lab hop`) drives it over HTTP, and the simulator drives it on its event queue.
//!
//! The top caller (layer 0) is one of the core's workloads ([`crate::workload::top_caller`]: one
//! client making the top requests one after the other with the top's policy), so the one live
//! driver of the swarm and the simulator's chain drive it as they drive any workload, through
//! [`crate::workload::Workload`]; its operation `o` is top request `o`. Its retry decisions are
//! [`HopCall`]'s: the same [`Operation`], strategy and limits.
//!
//! A scenario file describes its chains in a `[chain]` table and `[[chain.variant]]` tables:
//!
//! ```toml
//! [chain]
//! bottom = "fail"     # fail: answers `status` at once; hang: holds hold_ms, then 503
//! status = 503
//! requests = 3        # top requests per variant, one after the other
//!
//! [[chain.variant]]
//! id = "every"
//! label = "3 layers, 3 attempts at every layer"
//! top = { attempts = 1, timeout_ms = 10000 }
//! hops = [{ name = "gateway", attempts = 3 }, { name = "order", attempts = 3 }]
//! propagate = false   # send the remaining time in DEADLINE_HEADER
//! ```
//!
//! Layers are numbered from the top: 0 is the top caller, 1 the first hop, and the bottom
//! dependency is `hops.len() + 1`.
//!
//! # Answers of a hop
//!
//! - `200` when an attempt upstream succeeded;
//! - `502` when the hop gave up on its upstream (attempts spent, a non-retryable answer);
//! - `504` when its deadline passed: at arrival (the work is refused, nothing is sent upstream)
//!   or before its next attempt or retry could start.
//!
//! # Deadline propagation
//!
//! With `propagate = true` every call carries [`DEADLINE_HEADER`]: the whole milliseconds the
//! caller will still wait for this attempt (its attempt timeout, capped by its own deadline's
//! remaining time), like gRPC's `grpc-timeout`. A hop that receives it sets its operation's
//! deadline to arrival + that value, so its attempt timeouts never pass it, and answers `504`
//! without work when it is 0. The bottom dependency ends a hang at the deadline with `504`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::budget::Unlimited;
use crate::operation::{AttemptResult, Decision, GiveUp, Limits, OpOutcome, Operation};
use crate::rng::{stream, LabRng, Stream};
use crate::spec_error::SpecError;
use crate::strategy::Strategy;

/// The request header with the remaining time in whole milliseconds.
pub const DEADLINE_HEADER: &str = "x-e03-deadline-ms";
/// The request header with the top request's number (every hop passes it on; the top caller
/// sends its operation number in [`crate::events::HEADER_OP`] instead, which a hop reads when
/// this one is absent).
pub const REQUEST_HEADER: &str = "x-e03-request";
/// Status of a hop that gave up on its upstream.
pub const GAVE_UP_STATUS: u16 = 502;
/// Status of a call whose deadline passed.
pub const DEADLINE_STATUS: u16 = 504;

/// The value of [`DEADLINE_HEADER`] for a call its caller will wait `remaining` for: the whole
/// milliseconds, rounded down (a caller never claims more time than it gives).
pub fn deadline_header_ms(remaining: Duration) -> u64 {
    u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX)
}

/// The instant by which a call that arrived at `arrival` carrying `header_ms` in
/// [`DEADLINE_HEADER`] must be answered: its arrival plus the time its caller still waits.
/// The one rule by which every driver (live service, hop, simulator) reads the header, so the
/// time a request spent on the wire before it arrived is not known to the callee in any of them.
pub fn deadline_on_arrival(arrival: Duration, header_ms: u64) -> Duration {
    arrival.saturating_add(Duration::from_millis(header_ms))
}

/// A hop's (or the top caller's) client policy towards the next layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopSpec {
    /// Shown in tables and log file names.
    pub name: String,
    /// First attempt plus retries (1: no retry).
    pub attempts: u32,
    /// Timeout of one attempt, in ms.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Fixed wait before each retry, in ms (0: immediate).
    #[serde(default)]
    pub backoff_ms: u64,
    /// The hop's own deadline for its whole operation, in ms; none: attempts are bounded only
    /// by their count and timeouts (and a propagated deadline).
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

fn default_timeout_ms() -> u64 {
    10_000
}

/// Longest time value of a chain, in ms (one hour).
pub const MAX_CHAIN_MS: u64 = 3_600_000;
/// Most hops in a chain.
pub const MAX_HOPS: usize = 8;
/// Most attempts per hop.
pub const MAX_HOP_ATTEMPTS: u32 = 10;
/// Most top requests per variant.
pub const MAX_REQUESTS: u32 = 1000;

impl HopSpec {
    /// Checks the policy; the message starts with `what` and names the key and what it
    /// accepts.
    pub fn check(&self, what: &str) -> Result<(), SpecError> {
        if self.name.is_empty()
            || self.name.len() > 32
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(SpecError::value(
                format!("{what} name"),
                format!("{:?}", self.name),
                "1 to 32 characters from a-z, A-Z, 0-9, '-' and '_'",
            ));
        }
        if !(1..=MAX_HOP_ATTEMPTS).contains(&self.attempts) {
            return Err(SpecError::value(
                format!("{what} attempts"),
                self.attempts,
                format!("a whole number from 1 to {MAX_HOP_ATTEMPTS}"),
            ));
        }
        if !(1..=MAX_CHAIN_MS).contains(&self.timeout_ms) {
            return Err(SpecError::value(
                format!("{what} timeout_ms"),
                self.timeout_ms,
                format!("a whole number of ms from 1 to {MAX_CHAIN_MS}"),
            ));
        }
        if self.backoff_ms > MAX_CHAIN_MS {
            return Err(SpecError::value(
                format!("{what} backoff_ms"),
                self.backoff_ms,
                format!("a whole number of ms from 0 to {MAX_CHAIN_MS}"),
            ));
        }
        if let Some(d) = self.deadline_ms {
            if !(1..=MAX_CHAIN_MS).contains(&d) {
                return Err(SpecError::value(
                    format!("{what} deadline_ms"),
                    d,
                    format!("a whole number of ms from 1 to {MAX_CHAIN_MS}"),
                ));
            }
        }
        Ok(())
    }

    /// The core strategy of this policy: immediate retries, or a fixed wait of `backoff_ms`
    /// (exponential backoff with its cap at its base).
    pub fn strategy(&self) -> Strategy {
        let wait = Duration::from_millis(self.backoff_ms);
        let id = if self.backoff_ms == 0 { "A" } else { "B" };
        let budget = crate::budget::BudgetSpec::token_bucket(10.0, 0.1);
        let mut s = Strategy::standard(id, wait, wait, budget).expect("A and B are standard");
        s.max_attempts = Some(self.attempts);
        s
    }

    /// The operation limits of this policy. Without a deadline of its own the operation may
    /// last a day (attempts and timeouts bound it first).
    pub fn limits(&self) -> Limits {
        Limits {
            max_attempts: self.attempts,
            attempt_timeout: Duration::from_millis(self.timeout_ms),
            deadline: Duration::from_millis(self.deadline_ms.unwrap_or(86_400_000)),
        }
    }
}

/// What the bottom dependency does with every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Bottom {
    /// Answers `status` at once.
    Fail { status: u16 },
    /// Holds every call `hold_ms`, then answers 503; a propagated deadline ends the hold early
    /// with 504.
    Hang { hold_ms: u64 },
}

impl Bottom {
    /// Checks the values of a bottom given whole (a hop's control call); the message names the
    /// key and what it accepts.
    pub fn check(&self) -> Result<(), SpecError> {
        match *self {
            Bottom::Fail { status } if !(400..=599).contains(&status) => Err(SpecError::value(
                "bottom status",
                status,
                "an HTTP error status from 400 to 599",
            )),
            Bottom::Hang { hold_ms } if !(1..=MAX_CHAIN_MS).contains(&hold_ms) => {
                Err(SpecError::value(
                    "bottom hold_ms",
                    hold_ms,
                    format!("a whole number of ms from 1 to {MAX_CHAIN_MS}"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// When a call that arrived at `now` with the propagated deadline `deadline` ends, and
    /// its status. A deadline already passed refuses the call at once.
    pub fn answer(&self, now: Duration, deadline: Option<Duration>) -> (Duration, u16) {
        if deadline.is_some_and(|d| d <= now) {
            return (now, DEADLINE_STATUS);
        }
        match *self {
            Bottom::Fail { status } => (now, status),
            Bottom::Hang { hold_ms } => {
                let end = now + Duration::from_millis(hold_ms);
                match deadline {
                    Some(d) if d < end => (d, DEADLINE_STATUS),
                    _ => (end, 503),
                }
            }
        }
    }
}

/// One chain to run: the top caller's policy, the hops and whether deadlines travel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainVariant {
    /// Short id (checks name it in `strategy`).
    pub id: String,
    /// One line for tables.
    #[serde(default)]
    pub label: String,
    /// The top caller's policy (layer 0).
    pub top: HopSpec,
    /// The hops, top first; may be empty (the top caller calls the bottom directly).
    #[serde(default)]
    pub hops: Vec<HopSpec>,
    /// Whether every call carries the remaining time in [`DEADLINE_HEADER`].
    #[serde(default)]
    pub propagate: bool,
    /// Fault proxies in front of some layers, at most one per layer
    /// ([`crate::chain_proxy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proxies: Vec<ChainProxy>,
}

/// A fault proxy in front of layer `layer` of a chain (1 for the first hop, `hops + 1` for the
/// bottom), driven by its own timeline of HTTP fault phases (`abort`, `delay`, `hang`,
/// `reset`), time zero at the proxy's start ([`crate::chain_proxy`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainProxy {
    pub layer: u32,
    pub timeline: crate::timeline::Timeline,
}

impl ChainVariant {
    /// Number of layers of calls below the top caller (hops plus the bottom).
    pub fn bottom_layer(&self) -> u32 {
        self.hops.len() as u32 + 1
    }

    /// The proxy in front of layer `layer`, if any.
    pub fn proxy_before(&self, layer: u32) -> Option<&ChainProxy> {
        self.proxies.iter().find(|p| p.layer == layer)
    }

    /// The name of layer `layer` (0 top, then hops, then "bottom").
    pub fn layer_name(&self, layer: u32) -> String {
        match layer {
            0 => self.top.name.clone(),
            l if (l as usize) <= self.hops.len() => self.hops[l as usize - 1].name.clone(),
            _ => "bottom".into(),
        }
    }
}

/// A scenario's chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainDef {
    pub bottom: Bottom,
    /// Top requests per variant, sent one after the other.
    pub requests: u32,
    pub variants: Vec<ChainVariant>,
}

/// What a hop's call does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopStep {
    /// Send the next attempt upstream with this timeout; `header_ms` is the value of
    /// [`DEADLINE_HEADER`] to send (when deadlines travel).
    Send {
        timeout: Duration,
        header_ms: Option<u64>,
    },
    /// Wait this long, then ask [`HopCall::next`] again.
    Wait(Duration),
    /// Answer the caller with this status; the call is over.
    Answer(u16),
}

/// One call through one hop (or the top caller's operation): the core's [`Operation`] with
/// the hop's policy, its deadline capped by a propagated one.
#[derive(Debug, Clone)]
pub struct HopCall {
    op: Operation,
    strategy: Strategy,
    propagate: bool,
    rng: LabRng,
    pending: Option<Duration>,
}

impl HopCall {
    /// A call arrives at `now`. `received_ms`: the value of [`DEADLINE_HEADER`] it carried, if
    /// any. A received deadline of 0 refuses the call: `Err(504)`, nothing is sent upstream.
    pub fn arrive(
        now: Duration,
        spec: &HopSpec,
        received_ms: Option<u64>,
        propagate: bool,
        seed: u64,
    ) -> Result<HopCall, u16> {
        let mut limits = spec.limits();
        if let Some(ms) = received_ms {
            if ms == 0 {
                return Err(DEADLINE_STATUS);
            }
            limits.deadline = limits.deadline.min(Duration::from_millis(ms));
        }
        Ok(HopCall {
            op: Operation::start(now, limits),
            strategy: spec.strategy(),
            propagate,
            rng: stream(seed, Stream::Jitter, 0),
            pending: None,
        })
    }

    /// The absolute deadline of this call's operation.
    pub fn deadline(&self) -> Duration {
        self.op.deadline()
    }

    /// The number of the attempt about to be sent or in flight (1-based).
    pub fn attempt(&self) -> u32 {
        self.op.attempt()
    }

    /// The next step at `now`: the first attempt, or the attempt after a wait.
    pub fn next(&mut self, now: Duration) -> HopStep {
        match self.op.attempt_timeout(now) {
            None => HopStep::Answer(DEADLINE_STATUS),
            Some(timeout) => {
                self.pending = Some(timeout);
                // The caller of the next layer learns how long this attempt will be waited for.
                let header_ms = self.propagate.then(|| deadline_header_ms(timeout));
                HopStep::Send { timeout, header_ms }
            }
        }
    }

    /// The attempt in flight ended at `now` with `result`.
    pub fn on_result(&mut self, now: Duration, result: AttemptResult) -> HopStep {
        self.pending = None;
        match self
            .op
            .on_result(now, result, &self.strategy, &mut Unlimited, &mut self.rng)
        {
            Decision::Retry { wait } if wait.is_zero() => self.next(now),
            Decision::Retry { wait } => HopStep::Wait(wait),
            Decision::Done(OpOutcome::Success) => HopStep::Answer(200),
            Decision::Done(OpOutcome::Failed(crate::operation::GiveUp::Deadline)) => {
                HopStep::Answer(DEADLINE_STATUS)
            }
            Decision::Done(OpOutcome::Failed(_)) => HopStep::Answer(GAVE_UP_STATUS),
        }
    }
}

/// One call that arrived at a layer below the top caller, as its receiver logs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// 1 for the first hop, `hops + 1` for the bottom.
    pub layer: u32,
    /// The top request it works for.
    pub req: u64,
    /// Arrival and answer, in µs on the run's clock.
    pub start_us: u64,
    pub end_us: u64,
    pub status: u16,
    /// Refused at arrival: its deadline had passed.
    #[serde(default)]
    pub refused: bool,
}

/// One top request, as the top caller logs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopRecord {
    pub req: u64,
    pub start_us: u64,
    /// When the top caller stopped waiting (its answer or its giving up).
    pub end_us: u64,
    pub status: u16,
    pub attempts: u32,
}

impl TopRecord {
    /// The record of the top caller's operation `op` (top request `op`), started and ended at
    /// these µs, with its attempts and outcome; its status is the one a hop would answer with
    /// ([`top_status`]). `None` for an operation the run's stop cut short: it did not end.
    pub fn of_operation(
        op: u32,
        start_us: u64,
        end_us: u64,
        attempts: u32,
        outcome: OpOutcome,
    ) -> Option<TopRecord> {
        (outcome != OpOutcome::Failed(GiveUp::Aborted)).then(|| TopRecord {
            req: u64::from(op),
            start_us,
            end_us,
            status: top_status(outcome),
            attempts,
        })
    }
}

/// The status an operation of the top caller ends with, as a hop answers its caller: `200`,
/// [`DEADLINE_STATUS`] when its deadline passed, [`GAVE_UP_STATUS`] otherwise.
pub fn top_status(outcome: OpOutcome) -> u16 {
    match outcome {
        OpOutcome::Success => 200,
        OpOutcome::Failed(GiveUp::Deadline) => DEADLINE_STATUS,
        OpOutcome::Failed(_) => GAVE_UP_STATUS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_deadline_header_is_whole_ms_rounded_down_and_read_from_arrival() {
        assert_eq!(deadline_header_ms(ms(1000)), 1000);
        // 1.9999 s waited: 1999 ms claimed, never 2000.
        assert_eq!(deadline_header_ms(Duration::from_micros(1_999_900)), 1999);
        assert_eq!(deadline_header_ms(Duration::from_micros(999)), 0);
        // Sent at 100 ms with 1000 ms to wait, arrived at 130 ms: the callee counts from 130.
        assert_eq!(deadline_on_arrival(ms(130), 1000), ms(1130));
        assert_eq!(deadline_on_arrival(ms(130), 0), ms(130));
        assert_eq!(deadline_on_arrival(Duration::MAX, 5), Duration::MAX);
    }

    fn hop(attempts: u32, timeout_ms: u64) -> HopSpec {
        HopSpec {
            name: "h".into(),
            attempts,
            timeout_ms,
            backoff_ms: 0,
            deadline_ms: None,
        }
    }

    #[test]
    fn a_hop_sends_its_attempts_then_gives_up_with_502() {
        let mut c = HopCall::arrive(ms(0), &hop(3, 100), None, false, 1).unwrap();
        let mut sent = 0;
        let mut step = c.next(ms(0));
        loop {
            match step {
                HopStep::Send { header_ms, .. } => {
                    assert_eq!(header_ms, None);
                    sent += 1;
                    step = c.on_result(ms(1), AttemptResult::status(503));
                }
                HopStep::Wait(_) => panic!("no backoff"),
                HopStep::Answer(s) => {
                    assert_eq!(s, GAVE_UP_STATUS);
                    break;
                }
            }
        }
        assert_eq!(sent, 3);
    }

    #[test]
    fn success_answers_200() {
        let mut c = HopCall::arrive(ms(0), &hop(3, 100), None, false, 1).unwrap();
        assert!(matches!(c.next(ms(0)), HopStep::Send { .. }));
        assert_eq!(
            c.on_result(ms(5), AttemptResult::status(200)),
            HopStep::Answer(200)
        );
    }

    #[test]
    fn a_propagated_deadline_caps_the_attempt_timeout_and_travels_on() {
        let mut c = HopCall::arrive(ms(100), &hop(3, 3000), Some(1000), true, 1).unwrap();
        assert_eq!(c.deadline(), ms(1100));
        assert_eq!(
            c.next(ms(100)),
            HopStep::Send {
                timeout: ms(1000),
                header_ms: Some(1000)
            }
        );
        // The first attempt timed out at the deadline: no time is left for a retry.
        assert_eq!(
            c.on_result(ms(1100), AttemptResult::Timeout),
            HopStep::Answer(DEADLINE_STATUS)
        );
    }

    #[test]
    fn a_passed_deadline_refuses_the_work() {
        assert_eq!(
            HopCall::arrive(ms(0), &hop(3, 100), Some(0), true, 1).unwrap_err(),
            DEADLINE_STATUS
        );
        assert_eq!(
            Bottom::Hang { hold_ms: 500 }.answer(ms(10), Some(ms(10))),
            (ms(10), DEADLINE_STATUS)
        );
    }

    #[test]
    fn a_bottom_given_whole_is_checked() {
        assert!(Bottom::Fail { status: 503 }.check().is_ok());
        let e = Bottom::Fail { status: 200 }
            .check()
            .unwrap_err()
            .to_string();
        assert!(e.contains("status = 200"), "{e}");
        let e = Bottom::Hang { hold_ms: 0 }.check().unwrap_err().to_string();
        assert!(e.contains("hold_ms = 0"), "{e}");
    }

    #[test]
    fn a_hanging_bottom_holds_until_its_hold_or_the_deadline() {
        let b = Bottom::Hang { hold_ms: 5000 };
        assert_eq!(b.answer(ms(0), None), (ms(5000), 503));
        assert_eq!(b.answer(ms(0), Some(ms(800))), (ms(800), DEADLINE_STATUS));
        assert_eq!(
            Bottom::Fail { status: 503 }.answer(ms(7), None),
            (ms(7), 503)
        );
    }

    /// What a caller did with one request: its sends (time, timeout), its answer and when.
    type Trace = (Vec<(Duration, Duration)>, u16, Duration);

    /// Drives `spec`'s [`HopCall`] and the top caller's workload side by side through one
    /// request, answering the n-th attempt of each with `results[n]` after `took` (a timeout
    /// after the attempt's timeout): the sends (time, timeout) and the answer of each.
    fn side_by_side(spec: &HopSpec, results: &[AttemptResult], took: Duration) -> [Trace; 2] {
        use crate::workload::{Next as Asked, Workload};
        let answer_of = |n: usize, timeout: Duration| match results[n] {
            AttemptResult::Timeout => (timeout, AttemptResult::Timeout),
            r => (took.min(timeout), r),
        };
        // The hop's machine.
        let mut hop_sends = Vec::new();
        let mut c = HopCall::arrive(ms(0), spec, None, false, 1).unwrap();
        let mut now = ms(0);
        let mut step = c.next(now);
        let (status, end) = loop {
            match step {
                HopStep::Send { timeout, .. } => {
                    hop_sends.push((now, timeout));
                    let (after, r) = answer_of(hop_sends.len() - 1, timeout);
                    now += after;
                    step = c.on_result(now, r);
                }
                HopStep::Wait(w) => {
                    now += w;
                    step = c.next(now);
                }
                HopStep::Answer(s) => break (s, now),
            }
        };
        // The top caller: one request.
        let variant = ChainVariant {
            id: "v".into(),
            label: String::new(),
            top: spec.clone(),
            hops: Vec::new(),
            propagate: false,
            proxies: Vec::new(),
        };
        let (mut top, mut policy) = crate::workload::top_caller(&variant, 1, 7);
        let mut top_sends = Vec::new();
        let mut asked = Asked::default();
        let ended = loop {
            if let Some(e) = asked.ended().first() {
                break *e;
            }
            if let Some(&a) = asked.sends().last() {
                asked.clear();
                top_sends.push((a.due, a.timeout));
                let (after, r) = answer_of(top_sends.len() - 1, a.timeout);
                top.on_answer(a.id, r, a.due + after, &mut policy, &mut asked);
                continue;
            }
            let wake = top.next_wake().expect("a request in progress wakes");
            top.on_wake(wake, &mut policy, &mut asked);
        };
        assert_eq!(top.next_wake(), None, "one request only");
        assert_eq!((ended.client, ended.op), (0, 0));
        let rec = TopRecord::of_operation(0, 0, ended.end.as_micros() as u64, 1, ended.outcome);
        [
            (hop_sends, status, end),
            (top_sends, rec.unwrap().status, ended.end),
        ]
    }

    #[test]
    fn the_top_caller_workload_decides_as_the_hop_machine_does() {
        let t = AttemptResult::Timeout;
        let busy = AttemptResult::status(503);
        let ok = AttemptResult::status(200);
        // Three attempts, immediate: two 503s then 200 after 5 ms each; sends at 0, 5, 10.
        let [by_hop, top] = side_by_side(&hop(3, 100), &[busy, busy, ok], ms(5));
        assert_eq!(by_hop, top);
        assert_eq!(
            top.0,
            vec![(ms(0), ms(100)), (ms(5), ms(100)), (ms(10), ms(100))]
        );
        assert_eq!((top.1, top.2), (200, ms(15)));
        // A fixed 50 ms backoff, three timeouts: 502 at 100 + 50 + 100 + 50 + 100 = 400 ms.
        let spec = HopSpec {
            backoff_ms: 50,
            ..hop(3, 100)
        };
        let [hop_b, top_b] = side_by_side(&spec, &[t, t, t], ms(5));
        assert_eq!(hop_b, top_b);
        assert_eq!(top_b.0[2], (ms(300), ms(100)));
        assert_eq!((top_b.1, top_b.2), (GAVE_UP_STATUS, ms(400)));
        // A 1 s deadline over 3 s attempts: one attempt of 1 s, then 504.
        let spec = HopSpec {
            deadline_ms: Some(1000),
            ..hop(3, 3000)
        };
        let [hop_d, top_d] = side_by_side(&spec, &[t, t, t], ms(5));
        assert_eq!(hop_d, top_d);
        assert_eq!(top_d, (vec![(ms(0), ms(1000))], DEADLINE_STATUS, ms(1000)));
        // Not retryable: 404 ends it at once with 502.
        let [hop_n, top_n] = side_by_side(&hop(3, 100), &[AttemptResult::status(404)], ms(5));
        assert_eq!(hop_n, top_n);
        assert_eq!(top_n.1, GAVE_UP_STATUS);
    }

    #[test]
    fn the_top_caller_makes_its_requests_one_after_the_other() {
        use crate::workload::{Next as Asked, Workload};
        let variant = ChainVariant {
            id: "v".into(),
            label: String::new(),
            top: hop(1, 100),
            hops: Vec::new(),
            propagate: true,
            proxies: Vec::new(),
        };
        let (mut top, mut policy) = crate::workload::top_caller(&variant, 3, 1);
        let mut asked = Asked::default();
        let (mut starts, mut ended) = (Vec::new(), Vec::new());
        while let Some(wake) = top.next_wake() {
            top.on_wake(wake, &mut policy, &mut asked);
            let sends = asked.sends().to_vec();
            ended.extend_from_slice(asked.ended());
            asked.clear();
            for a in sends {
                starts.push((a.id.op, a.due));
                // Each answered 503 after 30 ms: one attempt, 502.
                top.on_answer(
                    a.id,
                    AttemptResult::status(503),
                    a.due + ms(30),
                    &mut policy,
                    &mut asked,
                );
            }
        }
        assert_eq!(starts, vec![(0, ms(0)), (1, ms(30)), (2, ms(60))]);
        ended.extend_from_slice(asked.ended());
        let recs: Vec<TopRecord> = ended
            .iter()
            .filter_map(|e| {
                TopRecord::of_operation(e.op, 0, e.end.as_micros() as u64, e.attempts, e.outcome)
            })
            .collect();
        assert_eq!(recs.len(), 3);
        assert!(recs
            .iter()
            .all(|r| r.status == GAVE_UP_STATUS && r.attempts == 1));
        // A stop's aborted operation is no top record; a deadline's is a 504.
        let aborted = OpOutcome::Failed(GiveUp::Aborted);
        assert_eq!(TopRecord::of_operation(4, 0, 1, 1, aborted), None);
        assert_eq!(
            top_status(OpOutcome::Failed(GiveUp::Deadline)),
            DEADLINE_STATUS
        );
    }

    #[test]
    fn without_a_deadline_three_attempts_of_3s_last_9s() {
        // Every attempt times out: the call's last step and when it came.
        let timed_out = |deadline_ms| {
            let top = HopSpec {
                deadline_ms,
                ..hop(3, 3000)
            };
            let mut c = HopCall::arrive(ms(0), &top, None, false, 1).unwrap();
            let mut now = ms(0);
            let mut step = c.next(now);
            while let HopStep::Send { timeout, .. } = step {
                now += timeout;
                step = c.on_result(now, AttemptResult::Timeout);
            }
            (step, now)
        };
        assert_eq!(timed_out(None), (HopStep::Answer(GAVE_UP_STATUS), ms(9000)));
        // With a deadline of 1 s the same operation ends at 1 s.
        assert_eq!(
            timed_out(Some(1000)),
            (HopStep::Answer(DEADLINE_STATUS), ms(1000))
        );
    }
}
