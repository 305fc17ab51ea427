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
//! through [`Workload::on_answer`], named by its [`AttemptId`]. Both append [`Effect`]s to a
//! [`Next`], the driver's buffer (reused, so a simulated run allocates nothing per event): the
//! attempts to send now, the attempts a policy layer refused (logged as failed fast), the
//! operations that ended, the arrivals dropped, and the rest of [`Effect`]'s kinds. The driver
//! takes them out with [`Next::drain`], in one fixed order, and turns each into its IO in one
//! function with a `match` over every kind. [`Workload::stop`] ends the run early: every
//! operation in progress ends, an attempt still in flight counted as sent. An attempt's
//! headers (its idempotency key, its deadline header) are the model's too:
//! [`HeaderRules::headers`].
//!
//! ```text
//! loop {
//!     select {
//!         sleep_until(w.next_wake()) => w.on_wake(now, policy, &mut next), // again while due
//!         (id, result) = an answer    => w.on_answer(id, result, now, policy, &mut next),
//!     }
//!     for e in next.drain() { effect(e) }   // record, cancel, probe, send: one match
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
//! ([`Next`], its [`Effect`]s and the records in them: [`Outgoing`], [`Refused`], [`Ended`],
//! and [`FanOutEnd`], here rather than beside [`FanOut`] because [`Effect`] carries it), and
//! the attempts' [`HeaderRules`]. Each machine is a file of
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
use crate::chain::deadline_header_ms;
use crate::ledger::KeyPolicy;
use crate::operation::{AttemptResult, OpOutcome};
use crate::policy::Policies;
use crate::priority::Priority;
pub use crate::session::Outgoing;
use crate::session::{AttemptId, OpEnd};
use crate::steps::Flow;
use crate::strategy::Strategy;

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

/// How a run heads its attempts: what decides each one's `Idempotency-Key` and deadline
/// header ([`HeaderRules::headers`]). Each driver (the live swarm, the simulator's engine, the
/// chain simulator's top caller) holds one for its run and asks it, so the three send the same
/// headers for the same attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderRules {
    /// The run's seed: keys are unique per run.
    pub seed: u64,
    /// A charging strategy's key policy ([`Strategy::idempotency`]); `None`: its attempts
    /// carry no key.
    pub idempotency: Option<KeyPolicy>,
    /// Whether attempts carry the deadline header: the dependency admits by deadline, or
    /// deadlines travel down a chain.
    pub deadline: bool,
}

/// What one attempt carries besides its identity ([`HeaderRules::headers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headers {
    /// Its `Idempotency-Key`, if its strategy charges and its key policy gives one.
    pub idempotency_key: Option<String>,
    /// Its deadline header's value, when the run sends one: its timeout in whole
    /// milliseconds, how long its caller will wait for it ([`deadline_header_ms`]).
    pub deadline_ms: Option<u64>,
}

impl HeaderRules {
    /// The rules of a run of `strategy` with `seed`; `deadline`: whether its attempts carry
    /// the deadline header.
    pub fn of(strategy: &Strategy, seed: u64, deadline: bool) -> HeaderRules {
        HeaderRules {
            seed,
            idempotency: strategy.idempotency,
            deadline,
        }
    }

    /// The headers `attempt` carries: the one place a driver's key and deadline header come
    /// from (a simulated run and a live one send the same).
    pub fn headers(&self, attempt: &Outgoing) -> Headers {
        let id = attempt.id;
        Headers {
            idempotency_key: self
                .idempotency
                .and_then(|policy| policy.key(self.seed, id.client, id.op, id.attempt)),
            deadline_ms: self.deadline.then(|| deadline_header_ms(attempt.timeout)),
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

/// One thing a workload asks its driver to do: record something, cancel or probe, or send.
/// Each driver turns an effect into its IO in one function with a `match` over every variant
/// (no wildcard arm), so a new kind of effect does not compile in a driver until it is handled
/// there: the simulator's `Engine::effect`, the live swarm's `Driver::effect` (and the chain
/// simulator's top caller, which asks only for sends and ends).
///
/// The variants are declared in the order [`Next::drain`] yields them (see there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// An attempt a policy layer refused: not sent, it failed fast (its operation's end is an
    /// [`Effect::Ended`] of the same [`Next`]). Record it.
    Refused(Refused),
    /// An operation ended. Record it.
    Ended(Ended),
    /// An arrival dropped, at its intended start: the open loop's pool was full. Record it.
    Dropped(Duration),
    /// A fan-out request ended ([`FanOut`]): every call of it has its [`Effect::Ended`].
    /// Record it.
    FanOut(FanOutEnd),
    /// A replica left or re-entered the balancer's rotation ([`Balanced`]). Record it.
    Host(HostChange),
    /// Cancel this attempt: still in flight when its hedged operation ended
    /// ([`crate::hedge`]). Its answer no longer goes to the workload; it is logged as cancelled
    /// (it counts as sent).
    Cancel(AttemptId),
    /// Send a health probe now ([`Balanced`] with active health checks): a `GET /ready` to its
    /// replica; hand its answer to [`Workload::on_probe`].
    Probe(Probe),
    /// Send this attempt now; hand its answer to [`Workload::on_answer`].
    Send(Outgoing),
}

/// What a workload asks of its driver after a wake-up or an answer: the [`Effect`]s it
/// appended (by [`Next::send`], [`Next::refuse`], ...), which the driver takes out with
/// [`Next::drain`] and acts on one by one. A buffer the driver reuses (a simulated run
/// allocates nothing per event): each kind is kept in a list of its own, so the drain can give
/// them in the drivers' order whatever order they were appended in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Next {
    /// Send these now, in this order.
    sends: Vec<Outgoing>,
    /// Attempts refused by the policy layer (each one's operation is in `ended`).
    refused: Vec<Refused>,
    /// Operations that ended.
    ended: Vec<Ended>,
    /// Arrivals dropped (their intended starts).
    dropped: Vec<Duration>,
    /// Fan-out requests that ended: every call of each is in `ended`.
    fanouts: Vec<FanOutEnd>,
    /// Attempts to cancel.
    cancels: Vec<AttemptId>,
    /// Replicas that left or re-entered the balancer's rotation.
    hosts: Vec<HostChange>,
    /// Health probes to send now.
    probes: Vec<Probe>,
}

impl Next {
    /// Asks the driver to send `attempt` now ([`Effect::Send`]), after the sends asked before.
    pub fn send(&mut self, attempt: Outgoing) {
        self.sends.push(attempt);
    }

    /// Records that a policy layer refused `refused` ([`Effect::Refused`]).
    pub fn refuse(&mut self, refused: Refused) {
        self.refused.push(refused);
    }

    /// Records that an operation ended ([`Effect::Ended`]).
    pub fn end(&mut self, ended: Ended) {
        self.ended.push(ended);
    }

    /// Records that the arrival due at `start` was dropped ([`Effect::Dropped`]).
    pub fn drop_arrival(&mut self, start: Duration) {
        self.dropped.push(start);
    }

    /// Records that a fan-out request ended ([`Effect::FanOut`]).
    pub fn fan_out_end(&mut self, ended: FanOutEnd) {
        self.fanouts.push(ended);
    }

    /// Asks the driver to cancel attempt `id` ([`Effect::Cancel`]).
    pub fn cancel(&mut self, id: AttemptId) {
        self.cancels.push(id);
    }

    /// Records that a replica left or re-entered the rotation ([`Effect::Host`]).
    pub fn host(&mut self, change: HostChange) {
        self.hosts.push(change);
    }

    /// Asks the driver to send a health probe now ([`Effect::Probe`]).
    pub fn probe(&mut self, probe: Probe) {
        self.probes.push(probe);
    }

    /// Takes every effect out, leaving it empty (its allocations kept), in the one order both
    /// drivers act in, whatever order they were asked in: the records first (refused attempts,
    /// ended operations, dropped arrivals, ended fan-out requests, replicas' changes), then the
    /// cancels, then the probes, and the sends last, each kind in the order it was asked.
    /// The order is the simulator's from before the effects were one type: its cancels close
    /// their connections before new attempts go out on them, and each send's request id is its
    /// place among the sends, so its figures are the same byte for byte. The live driver used
    /// to start the probes' tasks first and log replicas' changes before dropped arrivals and
    /// fan-out ends; it follows this order now, which changes no figure (the analyzer keeps
    /// each kind of record apart, and a probe's task starts a few log writes later). Effects
    /// left unread when the iterator is dropped early are gone too.
    pub fn drain(&mut self) -> Drain<'_> {
        Drain {
            next: self,
            kind: 0,
            at: 0,
        }
    }

    /// The effect at `at` among the kind numbered `kind` in [`Next::drain`]'s order, a copy;
    /// `None` past the last of that kind, or past the last kind (`kind` of 8 or more).
    fn get(&self, kind: u8, at: usize) -> Option<Effect> {
        match kind {
            0 => self.refused.get(at).copied().map(Effect::Refused),
            1 => self.ended.get(at).copied().map(Effect::Ended),
            2 => self.dropped.get(at).copied().map(Effect::Dropped),
            3 => self.fanouts.get(at).copied().map(Effect::FanOut),
            4 => self.hosts.get(at).copied().map(Effect::Host),
            5 => self.cancels.get(at).copied().map(Effect::Cancel),
            6 => self.probes.get(at).copied().map(Effect::Probe),
            7 => self.sends.get(at).copied().map(Effect::Send),
            _ => None,
        }
    }

    /// Whether nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
            && self.refused.is_empty()
            && self.ended.is_empty()
            && self.dropped.is_empty()
            && self.fanouts.is_empty()
            && self.cancels.is_empty()
            && self.hosts.is_empty()
            && self.probes.is_empty()
    }

    /// The attempts to send ([`Effect::Send`]), in order: a read-only look, for a driver's
    /// bookkeeping before it acts (the live driver counts them in flight) and for tests.
    pub fn sends(&self) -> &[Outgoing] {
        &self.sends
    }

    /// The refused attempts ([`Effect::Refused`]).
    pub fn refused(&self) -> &[Refused] {
        &self.refused
    }

    /// The operations that ended ([`Effect::Ended`]).
    pub fn ended(&self) -> &[Ended] {
        &self.ended
    }

    /// The dropped arrivals' intended starts ([`Effect::Dropped`]).
    pub fn dropped(&self) -> &[Duration] {
        &self.dropped
    }

    /// The fan-out requests that ended ([`Effect::FanOut`]).
    pub fn fanouts(&self) -> &[FanOutEnd] {
        &self.fanouts
    }

    /// The attempts to cancel ([`Effect::Cancel`]): the live driver marks them under its lock.
    pub fn cancels(&self) -> &[AttemptId] {
        &self.cancels
    }

    /// The replicas' changes ([`Effect::Host`]).
    pub fn hosts(&self) -> &[HostChange] {
        &self.hosts
    }

    /// The probes to send ([`Effect::Probe`]): the live driver counts them in flight.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

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

/// The effects of a [`Next`], taken out in [`Next::drain`]'s order: an index over its lists
/// (the effects are `Copy`), rather than a chain of their eight drains, nested eight deep.
/// Dropped, it empties the [`Next`] (allocations kept), whether or not every effect was read.
#[derive(Debug)]
pub struct Drain<'a> {
    next: &'a mut Next,
    /// The kind being read, in the drain's order (0: the refused attempts .. 7: the sends).
    kind: u8,
    /// The next one of that kind.
    at: usize,
}

impl Iterator for Drain<'_> {
    type Item = Effect;

    fn next(&mut self) -> Option<Effect> {
        while self.kind < 8 {
            if let Some(effect) = self.next.get(self.kind, self.at) {
                self.at += 1;
                return Some(effect);
            }
            self.kind += 1;
            self.at = 0;
        }
        None
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        self.next.clear();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balancer::Change;
    use crate::budget::Rejection;
    use crate::operation::GiveUp;
    use crate::priority::Priority;
    use test_support::ms;

    fn attempt(client: u32, attempt: u32) -> Outgoing {
        Outgoing {
            id: AttemptId {
                client,
                op: 0,
                attempt,
            },
            due: ms(1),
            timeout: Duration::from_micros(1_999_900),
            flow: None,
            step: None,
            class: Priority::Critical,
            replica: 0,
        }
    }

    fn ended(client: u32) -> Ended {
        Ended {
            client,
            op: 0,
            start: ms(0),
            end: ms(5),
            attempts: 1,
            outcome: OpOutcome::Failed(GiveUp::AttemptsExhausted),
            flow: None,
            class: Priority::Critical,
        }
    }

    /// One of every kind, asked in the reverse of the drain's order (and two sends, two ends):
    /// the drain gives the records, the cancels, the probes and the sends last, each kind in
    /// the order it was asked, and leaves the buffer empty.
    #[test]
    fn the_drain_gives_every_effect_in_the_drivers_order_and_empties_the_buffer() {
        let fan = FanOutEnd {
            client: 0,
            request: 0,
            start: ms(0),
            end: ms(5),
            calls: 2,
            quorum: 2,
            ok: 0,
            failed: 2,
            fallbacks: 0,
            attempts: 2,
        };
        let host = HostChange {
            at: ms(3),
            host: 1,
            change: Change::Ejected,
        };
        let probe = Probe { host: 1, id: 7 };
        let refused = Refused {
            attempt: attempt(4, 2),
            why: Rejection::BreakerOpen,
        };
        let mut next = Next::default();
        next.send(attempt(1, 1));
        next.probe(probe);
        next.cancel(attempt(2, 1).id);
        next.send(attempt(3, 1));
        next.host(host);
        next.fan_out_end(fan);
        next.drop_arrival(ms(2));
        next.end(ended(5));
        next.refuse(refused);
        next.end(ended(4));
        assert_eq!(next.sends(), [attempt(1, 1), attempt(3, 1)]);
        let all: Vec<Effect> = next.drain().collect();
        assert_eq!(
            all,
            [
                Effect::Refused(refused),
                Effect::Ended(ended(5)),
                Effect::Ended(ended(4)),
                Effect::Dropped(ms(2)),
                Effect::FanOut(fan),
                Effect::Host(host),
                Effect::Cancel(attempt(2, 1).id),
                Effect::Probe(probe),
                Effect::Send(attempt(1, 1)),
                Effect::Send(attempt(3, 1)),
            ]
        );
        assert!(next.is_empty());
        assert_eq!(next, Next::default());
        // Dropped after one effect, the drain still empties it.
        next.end(ended(1));
        next.send(attempt(1, 2));
        assert_eq!(next.drain().next(), Some(Effect::Ended(ended(1))));
        assert!(next.is_empty());
        assert_eq!(next.drain().next(), None);
    }

    /// The key follows the run's key policy and seed; the deadline header is the timeout in
    /// whole ms, only when the run sends it.
    #[test]
    fn the_headers_follow_the_runs_key_policy_and_deadline_rule() {
        let a = attempt(3, 2);
        let rules = |idempotency, deadline| HeaderRules {
            seed: 9,
            idempotency,
            deadline,
        };
        let h = rules(Some(KeyPolicy::PerOperation), true).headers(&a);
        assert_eq!(h.idempotency_key.as_deref(), Some("s9-c3-o0"));
        assert_eq!(h.deadline_ms, Some(1999));
        let h = rules(Some(KeyPolicy::PerAttempt), false).headers(&a);
        assert_eq!(h.idempotency_key.as_deref(), Some("s9-c3-o0-a2"));
        assert_eq!(h.deadline_ms, None);
        let none = Headers {
            idempotency_key: None,
            deadline_ms: None,
        };
        assert_eq!(rules(Some(KeyPolicy::None), false).headers(&a), none);
        assert_eq!(rules(None, false).headers(&a), none);
        // From a strategy: the standard ones charge nothing.
        let c = test_support::strategy("C");
        assert_eq!(HeaderRules::of(&c, 9, true), rules(None, true));
    }
}
