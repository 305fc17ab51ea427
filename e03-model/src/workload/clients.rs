//! [`Clients`]: N client sessions as one workload (a closed loop, a group, a ramp, fixed-rate
//! callers, the open loop's slots), one min-heap of their wakes.

use std::collections::BinaryHeap;
use std::time::Duration;

use crate::operation::AttemptResult;
use crate::policy::Policies;
use crate::priority::Priority;
use crate::schedule::Earliest;
use crate::session::{AttemptId, ClientSession, SessionConfig, Wake};
use crate::shard::Shard;
use crate::strategy::Strategy;

use super::{Ended, Next, Refused, Workload};

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
    pub(super) fn push(&mut self, session: ClientSession) {
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
    pub(super) fn stamp(&mut self) -> u64 {
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
    pub(super) fn earliest(&self) -> Option<(Duration, u64)> {
        self.wakes.peek().map(|e| e.key)
    }

    /// Client `c`'s next operation, of this class, starts at `start` (an open loop's
    /// arrival), woken now.
    pub(super) fn start(
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
                next.send(a);
                // A hedged operation's next hedge (nothing for one attempt at a time).
                self.schedule(c);
            }
            Wake::Ended(end) => {
                next.end(end.into());
                self.schedule(c);
            }
            Wake::Wait => self.schedule(c),
            Wake::Rejected { attempt, why, end } => {
                next.refuse(Refused { attempt, why });
                next.end(end.into());
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
            next.end(end.into());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::{GiveUp, OpOutcome};
    use crate::session::Starts;
    use crate::workload::test_support::*;

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
}
