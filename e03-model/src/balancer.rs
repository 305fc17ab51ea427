//! A caller's client-side balancer over the replicas of one dependency (the reliability-patterns article, "Redundancy
//! ve Failover"; issue "The server's side", item 3): which replica each attempt goes to, which
//! replicas are out of rotation, and when they come back. After Envoy's cluster manager, with
//! its documented defaults:
//!
//! - **Picking** ([`Pick`]): round robin over the replicas in rotation; least outstanding, as
//!   Envoy's `LEAST_REQUEST` ("power of two choices": `choices` replicas drawn at random, with
//!   replacement, and the one with the fewest requests in flight taken; the first drawn wins a
//!   tie; `choice_count` defaults to 2); or failover (active-passive, Envoy's priority levels
//!   with one replica each: the first replica in rotation, in list order).
//! - **Panic** (Envoy's `healthy_panic_threshold`, default 50%): when fewer than that share of
//!   the replicas are in rotation, the balancer ignores health and picks among them all.
//! - **Outlier detection** ([`OutlierSpec`], Envoy's `outlier_detection`, passive): a replica is
//!   ejected at once on its `consecutive_5xx`-th failure in a row (default 5; a failure is a 5xx
//!   or no answer: a timeout, a refused or reset connection). It is not ejected if that would
//!   put more than `max_ejection_percent` (default 10%) of the replicas out, unless none is out
//!   ("will eject at least one host regardless of the value"). An ejected replica stays out
//!   `base_ejection_time` (default 30 s) times the number of its ejections, at most
//!   `max_ejection_time` (default 300 s), and comes back at the first sweep (every `interval`,
//!   default 10 s, from time zero) after that; its failure count starts again from zero. Left
//!   out: the success-rate and failure-percentage detectors, `enforcing_*` below 100%, the
//!   ejection-time jitter and the slow decay of the ejection multiplier of newer versions.
//! - **Active health checks** ([`HealthCheckSpec`], Envoy's `health_checks`): every replica is
//!   probed; the next probe goes `interval` after the last one's answer, or after its
//!   `timeout`. A replica goes out of rotation after `unhealthy_threshold` failed probes in a
//!   row and back after `healthy_threshold` good ones. Envoy's health checks have no defaults;
//!   the defaults here are a Kubernetes readiness probe's (`periodSeconds` 10,
//!   `timeoutSeconds` 1, `failureThreshold` 3, `successThreshold` 1). Replicas start in
//!   rotation, and the first probes go at time zero.
//!
//! Sans IO, no clock: the driver sends the probes [`Balancer::on_wake`] asks for, hands back
//! their answers and every attempt's outcome, and logs the [`HostChange`]s.

use std::time::Duration;

/// How a replica is picked among those in rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    /// Each in turn.
    RoundRobin,
    /// The fewest requests in flight among `choices` drawn at random (Envoy: 2).
    LeastOutstanding { choices: u32 },
    /// The first in list order (active-passive).
    Failover,
    /// The replica the operation's client names, client mod replicas, in rotation or not: the
    /// replicas are then different dependencies, not copies, and none stands in for another
    /// (the reliability-patterns article's product page: a fan-out request's call `i` calls dependency `i` when
    /// `E03_FANOUT` equals `E03_REPLICAS`).
    Partition,
}

impl Pick {
    /// What `E03_BALANCER` accepts: `round_robin`, `least_outstanding` (two choices, Envoy's
    /// default), `failover` or `partition`.
    pub fn parse(value: &str) -> Option<Pick> {
        match value {
            "round_robin" => Some(Pick::RoundRobin),
            "least_outstanding" => Some(Pick::LeastOutstanding { choices: 2 }),
            "failover" => Some(Pick::Failover),
            "partition" => Some(Pick::Partition),
            _ => None,
        }
    }
}

/// Envoy's consecutive-5xx outlier detection, with its defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutlierSpec {
    pub consecutive_5xx: u32,
    pub interval: Duration,
    pub base_ejection_time: Duration,
    pub max_ejection_time: Duration,
    pub max_ejection_percent: u32,
}

impl Default for OutlierSpec {
    fn default() -> Self {
        OutlierSpec {
            consecutive_5xx: 5,
            interval: Duration::from_secs(10),
            base_ejection_time: Duration::from_secs(30),
            max_ejection_time: Duration::from_secs(300),
            max_ejection_percent: 10,
        }
    }
}

/// Active health checks, with a Kubernetes readiness probe's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HealthCheckSpec {
    pub interval: Duration,
    pub timeout: Duration,
    pub unhealthy_threshold: u32,
    pub healthy_threshold: u32,
}

impl Default for HealthCheckSpec {
    fn default() -> Self {
        HealthCheckSpec {
            interval: Duration::from_secs(10),
            timeout: Duration::from_secs(1),
            unhealthy_threshold: 3,
            healthy_threshold: 1,
        }
    }
}

/// The partition rule, once for the balancer and the metrics: client `client`'s own replica
/// among `replicas` (`E03_BALANCER=partition`: each client's calls go to one dependency, and its
/// operations are counted as that dependency's).
pub fn partition_of(client: u32, replicas: usize) -> usize {
    client as usize % replicas.max(1)
}

/// A balancer's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BalancerSpec {
    pub pick: Pick,
    pub outlier: Option<OutlierSpec>,
    pub health: Option<HealthCheckSpec>,
    /// Below this share of replicas in rotation (in %), pick among them all (Envoy: 50).
    pub panic_percent: u32,
}

impl BalancerSpec {
    /// `pick` with Envoy's panic threshold, no outlier detection and no health checks.
    pub fn new(pick: Pick) -> BalancerSpec {
        BalancerSpec {
            pick,
            outlier: None,
            health: None,
            panic_percent: 50,
        }
    }
}

/// How an attempt to a replica ended, for outlier detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Any answer below 500.
    Good,
    /// A 5xx, or no answer (timeout, refused or reset connection).
    Failed,
}

/// A replica leaving or re-entering rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Ejected,
    Returned,
    Unhealthy,
    Healthy,
}

/// One [`Change`], when and to which replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostChange {
    pub at: Duration,
    pub host: usize,
    pub change: Change,
}

/// A health probe to send now; hand its answer to [`Balancer::on_probe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub host: usize,
    pub id: u64,
}

#[derive(Debug, Clone, Copy)]
enum ProbeState {
    Due(Duration),
    Out { id: u64, deadline: Duration },
}

#[derive(Debug, Clone)]
struct Host {
    outstanding: u32,
    failures: u32,
    ejections: u32,
    ejected_at: Option<Duration>,
    healthy: bool,
    probe_fails: u32,
    probe_passes: u32,
    probe: ProbeState,
}

/// The balancer's state over `n` replicas.
#[derive(Debug, Clone)]
pub struct Balancer {
    spec: BalancerSpec,
    hosts: Vec<Host>,
    turn: usize,
    next_sweep: Option<Duration>,
    next_probe_id: u64,
    changes: Vec<HostChange>,
}

impl Balancer {
    /// `replicas` replicas (at least 1), all in rotation at time zero.
    pub fn new(spec: BalancerSpec, replicas: usize) -> Balancer {
        assert!(replicas > 0, "a balancer over no replica");
        let host = Host {
            outstanding: 0,
            failures: 0,
            ejections: 0,
            ejected_at: None,
            healthy: true,
            probe_fails: 0,
            probe_passes: 0,
            probe: ProbeState::Due(Duration::ZERO),
        };
        Balancer {
            spec,
            hosts: vec![host; replicas],
            turn: 0,
            next_sweep: spec.outlier.map(|o| o.interval),
            next_probe_id: 0,
            changes: Vec::new(),
        }
    }

    /// Whether replica `host` is in rotation (healthy and not ejected).
    pub fn in_rotation(&self, host: usize) -> bool {
        let h = &self.hosts[host];
        h.healthy && h.ejected_at.is_none()
    }

    /// Requests in flight to `host`.
    pub fn outstanding(&self, host: usize) -> u32 {
        self.hosts[host].outstanding
    }

    /// The replica for the next attempt of `client`'s operation, counted in flight until
    /// [`Balancer::answered`]. `draw` gives uniform random numbers (least outstanding uses
    /// `choices` of them); a partition takes the client's own replica.
    pub fn pick(&mut self, client: u32, draw: &mut impl FnMut() -> u64) -> usize {
        let n = self.hosts.len();
        if self.spec.pick == Pick::Partition {
            let host = partition_of(client, n);
            self.hosts[host].outstanding += 1;
            return host;
        }
        let mut candidates: Vec<usize> = (0..n).filter(|&h| self.in_rotation(h)).collect();
        if candidates.is_empty() || candidates.len() * 100 < self.spec.panic_percent as usize * n {
            candidates = (0..n).collect();
        }
        let host = match self.spec.pick {
            Pick::RoundRobin => {
                let h = candidates[self.turn % candidates.len()];
                self.turn = self.turn.wrapping_add(1);
                h
            }
            Pick::LeastOutstanding { choices } => {
                let mut best: Option<usize> = None;
                for _ in 0..choices.max(1) {
                    let h = candidates[(draw() % candidates.len() as u64) as usize];
                    if best.is_none_or(|b| self.hosts[h].outstanding < self.hosts[b].outstanding) {
                        best = Some(h);
                    }
                }
                best.expect("at least one choice")
            }
            Pick::Failover => candidates[0],
            Pick::Partition => unreachable!("picked above"),
        };
        self.hosts[host].outstanding += 1;
        host
    }

    /// An attempt to `host` ended at `now`.
    pub fn answered(&mut self, host: usize, now: Duration, outcome: Outcome) {
        let h = &mut self.hosts[host];
        h.outstanding = h.outstanding.saturating_sub(1);
        let Some(outlier) = self.spec.outlier else {
            return;
        };
        match outcome {
            Outcome::Good => h.failures = 0,
            Outcome::Failed => {
                h.failures += 1;
                if h.failures == outlier.consecutive_5xx && h.ejected_at.is_none() {
                    self.try_eject(host, now, outlier);
                }
            }
        }
    }

    fn try_eject(&mut self, host: usize, now: Duration, outlier: OutlierSpec) {
        let out = self.hosts.iter().filter(|h| h.ejected_at.is_some()).count();
        let allowed =
            out == 0 || (out + 1) * 100 <= outlier.max_ejection_percent as usize * self.hosts.len();
        if allowed {
            let h = &mut self.hosts[host];
            h.ejections += 1;
            h.ejected_at = Some(now);
            self.changes.push(HostChange {
                at: now,
                host,
                change: Change::Ejected,
            });
        }
    }

    /// An attempt to `host` that will have no outcome (cancelled, or in flight at a stop):
    /// no longer in flight, and nothing learnt.
    pub fn abandoned(&mut self, host: usize) {
        let h = &mut self.hosts[host];
        h.outstanding = h.outstanding.saturating_sub(1);
    }

    /// The next instant the balancer wants a wake: an outlier sweep, a probe due, or a probe's
    /// timeout.
    pub fn next_wake(&self) -> Option<Duration> {
        let probes = self.spec.health.and_then(|_| {
            self.hosts
                .iter()
                .map(|h| match h.probe {
                    ProbeState::Due(at) => at,
                    ProbeState::Out { deadline, .. } => deadline,
                })
                .min()
        });
        match (self.next_sweep, probes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Everything due by `now`: outlier sweeps (replicas come back), probe timeouts (a failed
    /// probe) and probes to send, appended to `probes`.
    pub fn on_wake(&mut self, now: Duration, probes: &mut Vec<Probe>) {
        if let Some(outlier) = self.spec.outlier {
            while let Some(sweep) = self.next_sweep.filter(|&s| s <= now) {
                self.sweep(sweep, outlier);
                self.next_sweep = Some(sweep + outlier.interval);
            }
        }
        let Some(health) = self.spec.health else {
            return;
        };
        for host in 0..self.hosts.len() {
            if let ProbeState::Out { deadline, .. } = self.hosts[host].probe {
                if deadline <= now {
                    self.hosts[host].probe = ProbeState::Due(deadline + health.interval);
                    self.probe_result(host, deadline, false, health);
                }
            }
            if let ProbeState::Due(at) = self.hosts[host].probe {
                if at <= now {
                    let id = self.next_probe_id;
                    self.next_probe_id += 1;
                    self.hosts[host].probe = ProbeState::Out {
                        id,
                        deadline: now + health.timeout,
                    };
                    probes.push(Probe { host, id });
                }
            }
        }
    }

    fn sweep(&mut self, at: Duration, outlier: OutlierSpec) {
        for host in 0..self.hosts.len() {
            let h = &mut self.hosts[host];
            let Some(since) = h.ejected_at else {
                continue;
            };
            let out_for = (outlier.base_ejection_time * h.ejections)
                .min(outlier.max_ejection_time.max(outlier.base_ejection_time));
            if at.saturating_sub(since) >= out_for {
                h.ejected_at = None;
                h.failures = 0;
                self.changes.push(HostChange {
                    at,
                    host,
                    change: Change::Returned,
                });
            }
        }
    }

    /// A probe's answer: `ok` when the replica answered well within the timeout. An answer to
    /// a probe that already timed out is ignored.
    pub fn on_probe(&mut self, probe: Probe, now: Duration, ok: bool) {
        let Some(health) = self.spec.health else {
            return;
        };
        match self.hosts[probe.host].probe {
            ProbeState::Out { id, deadline } if id == probe.id && now < deadline => {
                self.hosts[probe.host].probe = ProbeState::Due(now + health.interval);
                self.probe_result(probe.host, now, ok, health);
            }
            _ => {}
        }
    }

    fn probe_result(&mut self, host: usize, at: Duration, ok: bool, health: HealthCheckSpec) {
        let h = &mut self.hosts[host];
        let change = if ok {
            h.probe_fails = 0;
            h.probe_passes += 1;
            (!h.healthy && h.probe_passes >= health.healthy_threshold).then(|| {
                h.healthy = true;
                Change::Healthy
            })
        } else {
            h.probe_passes = 0;
            h.probe_fails += 1;
            (h.healthy && h.probe_fails >= health.unhealthy_threshold).then(|| {
                h.healthy = false;
                Change::Unhealthy
            })
        };
        if let Some(change) = change {
            self.changes.push(HostChange { at, host, change });
        }
    }

    /// The changes since the last call, in order.
    pub fn take_changes(&mut self) -> Vec<HostChange> {
        std::mem::take(&mut self.changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Change::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn no_draw() -> impl FnMut() -> u64 {
        || unreachable!("round robin, failover and a partition draw nothing")
    }

    fn change(at: u64, host: usize, change: Change) -> HostChange {
        HostChange {
            at: s(at),
            host,
            change,
        }
    }

    #[test]
    fn round_robin_goes_around_the_replicas_in_rotation() {
        let mut b = Balancer::new(BalancerSpec::new(Pick::RoundRobin), 3);
        let picks: Vec<usize> = (0..4).map(|_| b.pick(0, &mut no_draw())).collect();
        assert_eq!(picks, [0, 1, 2, 0]);
        assert_eq!(b.outstanding(0), 2);
        b.answered(0, s(1), Outcome::Good);
        assert_eq!(b.outstanding(0), 1);
    }

    #[test]
    fn a_partition_sends_each_client_to_its_own_replica_in_rotation_or_not() {
        let mut spec = BalancerSpec::new(Pick::Partition);
        spec.outlier = Some(OutlierSpec::default());
        let mut b = Balancer::new(spec, 5);
        // Clients 0 to 11 of a fan-out of 5: caller u's call i is client 5u + i, replica i.
        let picks: Vec<usize> = (0..12).map(|c| b.pick(c, &mut no_draw())).collect();
        assert_eq!(picks, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]);
        assert_eq!((b.outstanding(0), b.outstanding(4)), (3, 2));
        // Out of rotation, replica 4 still takes its clients' calls: nothing stands in for it.
        for _ in 0..5 {
            b.answered(4, s(1), Outcome::Failed);
        }
        assert!(!b.in_rotation(4));
        assert_eq!(b.pick(9, &mut no_draw()), 4);
    }

    #[test]
    fn the_fifth_failure_in_a_row_ejects_and_the_sweep_brings_it_back() {
        // Envoy's defaults: 5 in a row, sweeps every 10 s, 30 s times the ejections, 10%.
        let mut spec = BalancerSpec::new(Pick::RoundRobin);
        spec.outlier = Some(OutlierSpec::default());
        let mut b = Balancer::new(spec, 2);
        // Four failures and a good answer: the count starts again.
        for _ in 0..4 {
            b.answered(1, s(1), Outcome::Failed);
        }
        b.answered(1, s(1), Outcome::Good);
        for _ in 0..4 {
            b.answered(1, s(1), Outcome::Failed);
        }
        assert!(b.in_rotation(1));
        // The fifth in a row, at 1 s: out at once.
        b.answered(1, s(1), Outcome::Failed);
        assert!(!b.in_rotation(1));
        let picks: Vec<usize> = (0..3).map(|_| b.pick(0, &mut no_draw())).collect();
        assert_eq!(picks, [0, 0, 0]);
        // Replica 0 fails five in a row too, but 2 of 2 out is over 10%: it stays.
        for _ in 0..5 {
            b.answered(0, s(2), Outcome::Failed);
        }
        assert!(b.in_rotation(0));
        // Sweeps at 10, 20, 30 s: 29 s out is under 30 s. At 40 s (39 s out) it is back.
        let mut probes = Vec::new();
        b.on_wake(s(30), &mut probes);
        assert!(!b.in_rotation(1));
        assert_eq!(b.next_wake(), Some(s(40)));
        b.on_wake(s(40), &mut probes);
        assert!(b.in_rotation(1));
        assert!(probes.is_empty());
        // Its second ejection, at 41 s, lasts 60 s: the sweep at 100 s (59 s) keeps it out,
        // the one at 110 s brings it back.
        for _ in 0..5 {
            b.answered(1, s(41), Outcome::Failed);
        }
        b.on_wake(s(100), &mut probes);
        assert!(!b.in_rotation(1));
        b.on_wake(s(110), &mut probes);
        assert!(b.in_rotation(1));
        assert_eq!(
            b.take_changes(),
            [
                change(1, 1, Ejected),
                change(40, 1, Returned),
                change(41, 1, Ejected),
                change(110, 1, Returned),
            ]
        );
        assert!(b.take_changes().is_empty());
    }

    #[test]
    fn below_the_panic_threshold_every_replica_is_picked() {
        let mut spec = BalancerSpec::new(Pick::RoundRobin);
        spec.outlier = Some(OutlierSpec {
            max_ejection_percent: 100,
            ..OutlierSpec::default()
        });
        let mut b = Balancer::new(spec, 3);
        for _ in 0..5 {
            b.answered(0, s(1), Outcome::Failed);
        }
        // 2 of 3 in rotation (67% >= 50%): only they are picked.
        let picks: Vec<usize> = (0..4).map(|_| b.pick(0, &mut no_draw())).collect();
        assert_eq!(picks, [1, 2, 1, 2]);
        for _ in 0..5 {
            b.answered(1, s(1), Outcome::Failed);
        }
        // 1 of 3 (33% < 50%): panic, all three; the turn goes on from 4.
        let picks: Vec<usize> = (0..3).map(|_| b.pick(0, &mut no_draw())).collect();
        assert_eq!(picks, [1, 2, 0]);
    }

    #[test]
    fn least_outstanding_takes_the_less_busy_of_two_draws() {
        let mut b = Balancer::new(BalancerSpec::new(Pick::LeastOutstanding { choices: 2 }), 3);
        let mut draws = [0u64, 1, 0, 2, 3, 4, 5, 5, 7, 8].into_iter();
        let mut draw = || draws.next().unwrap();
        // [0,0,0]: 0 and 1 tie, the first drawn wins -> 0.
        assert_eq!(b.pick(0, &mut draw), 0);
        // [1,0,0]: 0 (1) against 2 (0) -> 2.
        assert_eq!(b.pick(0, &mut draw), 2);
        // [1,0,1]: 3%3=0 (1) against 4%3=1 (0) -> 1.
        assert_eq!(b.pick(0, &mut draw), 1);
        // [1,1,1]: 5%3=2 twice -> 2.
        assert_eq!(b.pick(0, &mut draw), 2);
        // [1,1,2]: 7%3=1 (1) against 8%3=2 (2) -> 1.
        assert_eq!(b.pick(0, &mut draw), 1);
        assert_eq!(
            (b.outstanding(0), b.outstanding(1), b.outstanding(2)),
            (1, 2, 2)
        );
    }

    /// Drives `b`'s wakes up to `until`; a probe sent while `alive(host, now)` is answered at
    /// once and well, the others never.
    fn drive(b: &mut Balancer, until: Duration, alive: impl Fn(usize, Duration) -> bool) {
        let mut probes = Vec::new();
        while let Some(now) = b.next_wake().filter(|&t| t <= until) {
            b.on_wake(now, &mut probes);
            for p in probes.drain(..) {
                if alive(p.host, now) {
                    b.on_probe(p, now, true);
                }
            }
        }
    }

    #[test]
    fn failover_switches_after_three_failed_probes_and_back_after_one_good() {
        let mut spec = BalancerSpec::new(Pick::Failover);
        spec.health = Some(HealthCheckSpec {
            interval: s(2),
            ..HealthCheckSpec::default()
        });
        let mut b = Balancer::new(spec, 2);
        // The primary (0) is down from 5 s to 14 s.
        let alive = |host: usize, t: Duration| host == 1 || t < s(5) || t >= s(14);
        // Probes at 0, 2, 4 answer; the one at 6 times out at 7 (1 failed), the next goes at
        // 9 (out at 10: 2), then 12 (out at 13: 3): out of rotation at 13 s.
        drive(&mut b, s(12), alive);
        assert_eq!(b.pick(0, &mut no_draw()), 0);
        drive(&mut b, s(13), alive);
        assert_eq!(b.pick(0, &mut no_draw()), 1);
        // The next probe goes at 15, the primary is back: one good probe returns it.
        drive(&mut b, s(14), alive);
        assert_eq!(b.pick(0, &mut no_draw()), 1);
        drive(&mut b, s(15), alive);
        assert_eq!(b.pick(0, &mut no_draw()), 0);
        assert_eq!(
            b.take_changes(),
            [change(13, 0, Unhealthy), change(15, 0, Healthy)]
        );
    }

    #[test]
    fn a_late_probe_answer_is_ignored() {
        let mut spec = BalancerSpec::new(Pick::Failover);
        spec.health = Some(HealthCheckSpec {
            unhealthy_threshold: 1,
            ..HealthCheckSpec::default()
        });
        let mut b = Balancer::new(spec, 1);
        let mut probes = Vec::new();
        b.on_wake(s(0), &mut probes);
        assert_eq!(probes, [Probe { host: 0, id: 0 }]);
        // Timed out at 1 s: out of rotation; its answer at 1.5 s changes nothing.
        b.on_wake(s(1), &mut probes);
        b.on_probe(probes[0], Duration::from_millis(1500), true);
        assert!(!b.in_rotation(0));
        // The next probe is due at 11 s (timeout at 1 s, then 10 s).
        assert_eq!(b.next_wake(), Some(s(11)));
    }
}
