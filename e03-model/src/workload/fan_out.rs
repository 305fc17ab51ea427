//! [`FanOut`]: each caller's request calls the dependency K times at once, and ends with its
//! quorum or its slowest call (Dean and Barroso, "The Tail at Scale").

use std::collections::BinaryHeap;
use std::time::Duration;

use rand::Rng;

use crate::operation::{AttemptResult, OpOutcome};
use crate::policy::Policies;
use crate::priority::Priority;
use crate::rng::{stream, LabRng, Stream};
use crate::schedule::Earliest;
use crate::session::{AttemptId, ClientSession, SessionConfig, Starts, FIRST_START_SPREAD_US};
use crate::strategy::Strategy;

use super::clients::Clients;
use super::{quorum_met, sooner, Ended, FanOutEnd, Next, Workload};

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

    /// Counts the calls that ended (`next.ended()[from..]`) into their requests: a request is
    /// reported once its quorum succeeded, can no longer succeed, or its last call ended; once
    /// its last call ended its caller thinks before the next.
    fn count(&mut self, from: usize, next: &mut Next) {
        for i in from..next.ended().len() {
            let e = next.ended()[i];
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
            let decided =
                quorum_met(r.ok, r.fallbacks, quorum) || fan - r.failed < quorum || r.left == 0;
            if decided && !r.reported {
                r.reported = true;
                next.fan_out_end(FanOutEnd {
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
        let from = next.ended().len();
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
        let from = next.ended().len();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::test_support::*;

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
}
