//! [`Balanced`]: any workload with its attempts spread over the dependency's replicas by a
//! client-side balancer.

use std::time::Duration;

use rand::Rng;

use crate::balancer::{Balancer, BalancerSpec, Outcome, Probe};
use crate::operation::AttemptResult;
use crate::policy::Policies;
use crate::rng::{stream, LabRng, Stream};
use crate::session::AttemptId;

use super::{sooner, Ended, Next, Workload};

/// Any workload, its attempts spread over the dependency's replicas by a client-side
/// [`Balancer`] (`E03_REPLICAS`, `E03_BALANCER`; issue "The server's side", item 3): one
/// balancer for the whole workload, as one sidecar proxy serves every caller of a process.
///
/// Each attempt the inner workload sends gets its replica
/// ([`Outgoing::replica`](super::Outgoing::replica)) when it is sent; its answer feeds the
/// balancer's outlier detection (a 5xx, a timeout or a broken connection is a failure) before
/// the inner workload sees it. The balancer's sweeps are wakes
/// of their own, taken before the inner workload's at the same instant; the replicas that left
/// or re-entered rotation are in [`Next::hosts`]. An attempt cancelled by a hedge, or still in
/// flight at a stop, is counted out of flight with no outcome.
pub struct Balanced {
    inner: Box<dyn Workload + Send>,
    balancer: Balancer,
    draws: LabRng,
    /// The replica of each attempt in flight.
    replica_of: std::collections::HashMap<AttemptId, u16>,
}

impl Balanced {
    /// `inner`'s attempts over `replicas` replicas (1 to 65,536); draws from the run's
    /// balancer stream under `seed`.
    pub fn new(
        inner: Box<dyn Workload + Send>,
        spec: BalancerSpec,
        replicas: usize,
        seed: u64,
    ) -> Balanced {
        assert!((1..=1 << 16).contains(&replicas), "replicas out of range");
        Balanced {
            inner,
            balancer: Balancer::new(spec, replicas),
            draws: stream(seed, Stream::Balancer, 0),
            replica_of: std::collections::HashMap::new(),
        }
    }

    /// Picks a replica for each attempt `next` got since `from`, and collects the balancer's
    /// changes.
    fn route(&mut self, from: usize, next: &mut Next) {
        for send in &mut next.sends[from..] {
            let draws = &mut self.draws;
            let host = self
                .balancer
                .pick(send.id.client, &mut || draws.random::<u64>());
            send.replica = host as u16;
            self.replica_of.insert(send.id, host as u16);
        }
        for id in next.cancels() {
            if let Some(host) = self.replica_of.remove(id) {
                self.balancer.abandoned(host as usize);
            }
        }
        next.hosts.extend(self.balancer.take_changes());
    }
}

/// How an attempt counts for outlier detection: any answer below 500 is good.
fn outcome(result: AttemptResult) -> Outcome {
    match result {
        AttemptResult::Status { code, .. } if code < 500 => Outcome::Good,
        _ => Outcome::Failed,
    }
}

impl Workload for Balanced {
    /// The inner workload's wakes, and the balancer's while the run goes on (the inner
    /// workload wakes again, or an attempt is in flight): a finished run has no wake.
    fn next_wake(&self) -> Option<Duration> {
        let inner = self.inner.next_wake();
        if inner.is_none() && self.replica_of.is_empty() {
            return None;
        }
        sooner(self.balancer.next_wake(), inner)
    }

    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let inner = self.inner.next_wake();
        let sweep = self.balancer.next_wake();
        if sweep.is_some_and(|t| t <= now && inner.is_none_or(|i| t <= i)) {
            // Outlier sweeps, probe timeouts and probes due.
            self.balancer.on_wake(now, &mut next.probes);
            next.hosts.extend(self.balancer.take_changes());
            return;
        }
        let from = next.sends().len();
        self.inner.on_wake(now, policy, next);
        self.route(from, next);
    }

    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        if let Some(host) = self.replica_of.remove(&id) {
            self.balancer.answered(host as usize, now, outcome(result));
        }
        let from = next.sends().len();
        self.inner.on_answer(id, result, now, policy, next);
        self.route(from, next);
    }

    fn on_probe(&mut self, probe: Probe, ok: bool, now: Duration, next: &mut Next) {
        self.balancer.on_probe(probe, now, ok);
        next.hosts.extend(self.balancer.take_changes());
    }

    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
        for (_, host) in self.replica_of.drain() {
            self.balancer.abandoned(host as usize);
        }
        self.inner.stop(now, policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;
    use crate::workload::test_support::*;
    use crate::workload::Outgoing;

    /// One attempt a millisecond, 0 to `end` - 1 ms, each of a client of its own.
    struct Ticks {
        next: u32,
        end: u32,
    }

    impl Workload for Ticks {
        fn next_wake(&self) -> Option<Duration> {
            (self.next < self.end).then(|| ms(self.next as u64))
        }
        fn on_wake(&mut self, now: Duration, _: &mut Policies, next: &mut Next) {
            next.send(Outgoing {
                id: AttemptId {
                    client: self.next,
                    op: 0,
                    attempt: 1,
                },
                due: now,
                timeout: ms(1000),
                flow: None,
                step: None,
                class: Priority::Critical,
                replica: u16::MAX,
            });
            self.next += 1;
        }
        fn on_answer(
            &mut self,
            _: AttemptId,
            _: AttemptResult,
            _: Duration,
            _: &mut Policies,
            _: &mut Next,
        ) {
        }
        fn stop(&mut self, _: Duration, _: &mut Policies) -> Vec<Ended> {
            Vec::new()
        }
    }

    /// Round robin over 2 replicas, replica 0 answering 503 and replica 1 200, each at once;
    /// outlier detection at 2 failures in a row, sweeps every 10 ms, ejection 30 ms. By hand:
    /// 0 ms to replica 0 (fails), 1 ms to 1, 2 ms to 0 (its 2nd failure: ejected at 2 ms); 3
    /// to 39 ms to 1; the sweep at 30 ms finds it out 28 ms, the one at 40 ms 38 ms, past 30:
    /// back at 40 ms, taken before the attempt of 40 ms. The turn has counted 40 picks, so 40
    /// ms goes to 0 (fails), 41 to 1, 42 to 0 (ejected again, for 2 x 30 ms), 43 to 59 to 1.
    #[test]
    fn a_balanced_workload_ejects_the_failing_replica_and_takes_it_back() {
        use crate::balancer::{Change, OutlierSpec, Pick};
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut spec = BalancerSpec::new(Pick::RoundRobin);
        spec.outlier = Some(OutlierSpec {
            consecutive_5xx: 2,
            interval: ms(10),
            base_ejection_time: ms(30),
            ..OutlierSpec::default()
        });
        let mut w = Balanced::new(Box::new(Ticks { next: 0, end: 60 }), spec, 2, 1);
        let (mut picked, mut hosts) = (Vec::new(), Vec::new());
        let mut next = Next::default();
        while let Some(t) = w.next_wake() {
            w.on_wake(t, &mut policy, &mut next);
            for send in std::mem::take(&mut next.sends) {
                picked.push(send.replica);
                let code = if send.replica == 0 { 503 } else { 200 };
                w.on_answer(
                    send.id,
                    AttemptResult::status(code),
                    t,
                    &mut policy,
                    &mut next,
                );
            }
            hosts.extend(next.hosts.drain(..).map(|h| (h.at, h.host, h.change)));
        }
        let mut expected = vec![0, 1, 0];
        expected.extend([1; 37]);
        expected.extend([0, 1, 0]);
        expected.extend([1; 17]);
        assert_eq!(picked, expected);
        assert_eq!(
            hosts,
            vec![
                (ms(2), 0, Change::Ejected),
                (ms(40), 0, Change::Returned),
                (ms(42), 0, Change::Ejected)
            ]
        );
        assert_eq!(w.balancer.outstanding(1), 0);
    }

    /// Active-passive over 2 replicas with active health checks every 10 ms (timeout 5 ms,
    /// out after 2 failed probes, back after 1 good one), no outlier detection. Replica 0 is
    /// not ready, and answers 503, from 10 ms to 35 ms; every probe is answered at once. By
    /// hand: the probes of 0 ms pass; at 10 ms replica 0's first fails, at 20 ms its second
    /// (unhealthy at 20 ms, the balancer's wake before the attempt of 20 ms); 30 ms fails
    /// again, 40 ms passes (healthy at 40 ms). So the attempts of 0 to 19 ms go to replica 0
    /// (those of 10 to 19 ms fail: the errors until the switch, the interval times the
    /// threshold at one attempt a ms), 20 to 39 ms to replica 1, 40 to 59 ms to replica 0.
    #[test]
    fn active_health_checks_switch_to_the_standby_and_back() {
        use crate::balancer::{Change, HealthCheckSpec, Pick};
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut spec = BalancerSpec::new(Pick::Failover);
        spec.health = Some(HealthCheckSpec {
            interval: ms(10),
            timeout: ms(5),
            unhealthy_threshold: 2,
            healthy_threshold: 1,
        });
        let mut w = Balanced::new(Box::new(Ticks { next: 0, end: 60 }), spec, 2, 1);
        let down = |host: u16, t: Duration| host == 0 && t >= ms(10) && t < ms(35);
        let (mut picked, mut hosts, mut failed, mut probes) = (Vec::new(), Vec::new(), 0, 0);
        let mut next = Next::default();
        while let Some(t) = w.next_wake() {
            w.on_wake(t, &mut policy, &mut next);
            for probe in std::mem::take(&mut next.probes) {
                probes += 1;
                w.on_probe(probe, !down(probe.host as u16, t), t, &mut next);
            }
            for send in std::mem::take(&mut next.sends) {
                picked.push(send.replica);
                let code = if down(send.replica, t) { 503 } else { 200 };
                failed += u32::from(code == 503);
                w.on_answer(
                    send.id,
                    AttemptResult::status(code),
                    t,
                    &mut policy,
                    &mut next,
                );
            }
            hosts.extend(next.hosts.drain(..).map(|h| (h.at, h.host, h.change)));
        }
        let mut expected = vec![0; 20];
        expected.extend([1; 20]);
        expected.extend([0; 20]);
        assert_eq!(picked, expected);
        assert_eq!(failed, 10, "the errors until the switch");
        assert_eq!(
            hosts,
            vec![(ms(20), 0, Change::Unhealthy), (ms(40), 0, Change::Healthy)]
        );
        // Both replicas probed at 0, 10, 20, 30, 40 and 50 ms; the run then ends.
        assert_eq!(probes, 12);
    }
}
