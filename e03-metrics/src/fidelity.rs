//! How faithfully a live run followed the model, and whether both sides saw the same attempts.
//!
//! The simulator is the model; a live run is the model plus real sockets, timers and a scheduler
//! shared with everything else on the machine. Three figures say how far a live run drifted:
//!
//! - client send lateness: how late an attempt left after it was due (timer and scheduler slop);
//! - server queueing outside the model: for requests the model admitted at once (a worker was
//!   free), how long they still waited before their work started;
//! - achieved throughput while saturated, against the configured capacity: `workers / service
//!   time` normally, `workers / (service time / recovery factor)` in the degraded window. The
//!   service is saturated while a request waits in its queue (from the arrival of a request the
//!   model queued to its admission): every worker is busy then, so work should be completed at
//!   exactly the configured rate. Saturation spells that touch the freeze are left out (nothing
//!   completes there by design); the others are split at the degraded window's edges, so the
//!   burst that follows the freeze (strategy A's) is measured against the degraded capacity.
//!   Below [`MIN_SATURATED_S`] seconds a figure is not reported (a dozen completions cannot
//!   measure a 3% drift). Counting whole 1 s windows that merely *contain* a queued admission or
//!   a rejection, as first specified, reports a window with a 40 ms burst as "saturated" at a
//!   fraction of capacity: a false alarm on every normal run.
//!
//! Each spell (piece) is measured over a whole number of service periods from its first
//! completion: a busy pool completes exactly `workers` jobs per period whatever the phases of its
//! workers, so the figure has no rounding bias. Measured from the spell's first arrival to its
//! end instead, a spell would count up to one whole extra round of the pool (after the freeze all
//! workers finish nearly together, ten at a time): 3-5% high over a 2.5 s spell.
//!
//! Each phase's achieved rate is its completions over its saturated seconds; the combined ratio
//! is all completions over what the configured capacities promise for those seconds,
//! `normal s x normal capacity + degraded s x degraded capacity`, so each phase weighs by its
//! saturated time. Completions are counted, not weighed by their work: where a spell crosses
//! the degraded window's end, the workers finish their last 80 ms jobs within 80 ms of it, one
//! each, which is just what a pool of 40 ms jobs would complete in that time on average; work
//! would give the whole 80 ms of each to the normal side and read some 4% high.
//!
//! Matching checks that every attempt the swarm logged arrived at the dependency under the same
//! identity (client, op, attempt), and the other way round; an attempt whose connection was
//! never made (`connect_refused`, `connect_timeout`) has nothing to match, and one without an
//! answer sent or ended inside a wire phase may be missing (the proxy may have cut it). Arrivals without identity headers
//! count as unmatched server arrivals. The identities are not kept: a fixed-size sketch of the
//! difference of the two multisets (see `matching`) lists up to a few hundred differing
//! identities exactly and gives lower bounds beyond; the chance that logs which differ read as
//! matched is about 2^-64.
//!
//! Memory does not grow with the number of events. The service logs each request's arrival
//! before its response, so an arrival's time is kept only until its response pairs with it
//! (the queueing wait goes straight into a histogram, a queued request's wait into a set of
//! merged saturation spells); what stays is the requests not answered yet: the queue, those
//! held in the freeze until it ends, and arrivals never answered in the log (a malformed
//! request is answered 400 unlogged, the queue at the run's end 503 unlogged), which are
//! dropped once far older than any answer can be. The spells are disjoint, a handful per
//! second of saturation. The completion times are kept exactly (the estimator measures from
//! the first completion to the µs, and a round of the pool completes at the same µs), but
//! only admitted requests complete and at most `workers` at a time: their number is bounded by
//! the run's duration times the capacity (250/s by default, some 60 KB for 30 s), however
//! many requests, retries and rejections the clients send. Counting them in 100 µs bins
//! instead would take 40 KB per second of run whatever the load, and lose that exactness.

use std::collections::{BTreeMap, HashMap};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use e03_model::dependency::ServiceConfig;
use e03_model::events::{Arrival, Attempt, AttemptEnd, Response};

use crate::matching::IdentitySketch;
use crate::quantiles::{histogram, quantile_ms, MAX_T_US};

/// Largest send lateness (p99) before the table warns, in ms.
pub const LATENESS_WARN_MS: f64 = 2.0;
/// Largest |achieved / configured - 1| before the table warns.
pub const RATIO_WARN: f64 = 0.03;
/// Least saturated time for the throughput ratio to be reported, in seconds.
pub const MIN_SATURATED_S: f64 = 0.5;
/// Unanswered arrivals held before the first look for stale ones.
const PRUNE_MIN: usize = 4096;

/// Fidelity figures of one live run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    pub lateness_p50_ms: f64,
    pub lateness_p99_ms: f64,
    pub lateness_max_ms: f64,
    /// Requests admitted at once whose wait (admit - arrival) was measured.
    pub queueing_samples: u64,
    pub queueing_p99_ms: f64,
    pub queueing_max_ms: f64,
    /// How late the service handed served answers to their connection after the instant the
    /// model scheduled them (admission + service time, + the slow delay for a slow answer): the
    /// service's own timer and scheduler slop, which clients see added to the model's latency.
    #[serde(default)]
    pub answer_lateness_p99_ms: f64,
    #[serde(default)]
    pub answer_lateness_max_ms: f64,
    /// Served answers whose lateness was measured: none when the dependency has no schedule of
    /// the model's (a `lab proxy --http` in front of a real service), and then the lateness is
    /// not measured, not zero.
    #[serde(default)]
    pub answer_samples: u64,
    /// Seconds outside the freeze and degraded windows during which a request waited in the
    /// queue.
    pub saturated_s: f64,
    /// Completions per second in those seconds (None below [`MIN_SATURATED_S`]).
    pub achieved_rps: Option<f64>,
    /// `workers / service time`.
    pub configured_rps: f64,
    /// Seconds inside the degraded window during which a request waited in the queue.
    pub degraded_saturated_s: f64,
    /// Completions per second in those seconds (None below [`MIN_SATURATED_S`]).
    pub degraded_achieved_rps: Option<f64>,
    /// `workers / (service time / recovery factor)`; None without a degraded window (E03-A).
    pub degraded_configured_rps: Option<f64>,
    /// All completions in normal and degraded saturated seconds / what the configured
    /// capacities promise for them: achieved / configured, each phase weighed by its saturated
    /// time (None below [`MIN_SATURATED_S`] in all).
    pub ratio: Option<f64>,
}

impl Fidelity {
    /// Warning lines when the run drifted from the model more than the thresholds allow.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings_beside(None)
    }

    /// [`Fidelity::warnings`], the lateness one saying whose lateness it is when the machine's
    /// floor was measured ([`MachineFloor::verdict`]).
    pub fn warnings_beside(&self, floor: Option<&MachineFloor>) -> Vec<String> {
        let mut w = Vec::new();
        if self.lateness_p99_ms > LATENESS_WARN_MS {
            let whose = floor.map_or(String::new(), |m| {
                format!(
                    "; {}",
                    m.verdict(self.lateness_p99_ms.max(self.answer_lateness_p99_ms))
                )
            });
            w.push(format!(
                "client send lateness p99 {:.1} ms exceeds {LATENESS_WARN_MS} ms: the swarm's timers ran late{whose}",
                self.lateness_p99_ms
            ));
        }
        if let Some(r) = self.ratio.filter(|r| (r - 1.0).abs() > RATIO_WARN) {
            w.push(format!(
                "achieved throughput while saturated is {:.1}% of the configured capacity (tolerance {:.0}%)",
                r * 100.0,
                RATIO_WARN * 100.0
            ));
        }
        w
    }
}

/// The file of a live run's folder (`OUT/<run id>/machine.json`) in which the lab keeps the
/// machine's own wake-up latency, measured before the traffic.
pub const MACHINE_FILE: &str = "machine.json";

/// How much later than the machine's own floor the lab may be before its lateness is its own:
/// within 1.5x of how late the machine wakes any sleeping thread, the machine set the figure.
pub const MACHINE_FACTOR: f64 = 1.5;

/// The machine's own limit: how late it woke a sleeping thread (1 s of 1 ms sleeps, as
/// `cyclictest` measures), at the scheduling the run's timers got, measured by `lab run` just
/// before the traffic and kept in [`MACHINE_FILE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFloor {
    /// `SCHED_FIFO` (real-time timers) or `SCHED_OTHER`.
    pub scheduling: String,
    /// Why the timers did not get real-time scheduling (empty when they did).
    #[serde(default)]
    pub why: String,
    pub wake_samples: u64,
    pub wake_p99_ms: f64,
    pub wake_mean_ms: f64,
    pub wake_max_ms: f64,
}

/// Whose lateness a live run's figure is: the machine's, or the lab's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatenessOwner {
    /// Within [`MACHINE_FACTOR`] of the machine's floor: any sleeping thread is this late here.
    Machine,
    /// More than [`MACHINE_FACTOR`] times the floor: another process busy on the cores, or the
    /// lab's own work delaying its timers.
    Lab,
}

impl MachineFloor {
    /// Whose lateness `lab_p99_ms` (the worst of the send and answer lateness p99) is.
    pub fn owner(&self, lab_p99_ms: f64) -> LatenessOwner {
        if lab_p99_ms <= MACHINE_FACTOR * self.wake_p99_ms {
            LatenessOwner::Machine
        } else {
            LatenessOwner::Lab
        }
    }

    /// The words a lateness WARNING ends with: whose lateness it is.
    pub fn verdict(&self, lab_p99_ms: f64) -> String {
        match self.owner(lab_p99_ms) {
            LatenessOwner::Machine => format!(
                "the machine's: within {MACHINE_FACTOR}x of how late this machine wakes any \
                 sleeping thread ({:.2} ms at p99, {}){}",
                self.wake_p99_ms,
                self.scheduling,
                if self.scheduling == "SCHED_FIFO" {
                    ""
                } else {
                    "; real-time timers need root or CAP_SYS_NICE"
                }
            ),
            LatenessOwner::Lab => format!(
                "the lab's: more than {MACHINE_FACTOR}x the machine's own floor ({:.2} ms at p99, \
                 {}): another process busy on the cores, or the lab's own work delaying its timers",
                self.wake_p99_ms, self.scheduling
            ),
        }
    }
}

/// Identity matching between the client and server logs of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matched {
    pub client_attempts: u64,
    pub server_arrivals: u64,
    pub matched: u64,
    /// Client attempts with no server arrival of the same identity.
    pub unmatched_client: u64,
    /// Server arrivals with no client attempt of the same identity (or no identity at all).
    pub unmatched_server: u64,
    /// Client attempts without an answer, sent or ended inside a wire phase: the fault proxy
    /// closed their connection or dropped their request, maybe before it passed the request
    /// on, so each may be missing at the dependency ([`Matched::ok`]).
    #[serde(default)]
    pub cut_by_proxy: u64,
    /// Client attempts cancelled (hedging): the swarm dropped their request when their
    /// operation ended, maybe before it was written, so each may be missing at the dependency.
    #[serde(default)]
    pub cancelled: u64,
}

impl Matched {
    /// Every server arrival is a client attempt, and every client attempt arrived, but those
    /// the fault proxy cut and those cancelled (at most `cut_by_proxy + cancelled` may be
    /// missing).
    pub fn ok(&self) -> bool {
        self.unmatched_client <= self.cut_by_proxy + self.cancelled && self.unmatched_server == 0
    }
}

/// The live-only inputs of one run, kept in memory that does not grow with the number of events
/// (see the module docs).
#[derive(Debug)]
pub(crate) struct LiveAccumulator {
    cfg: ServiceConfig,
    /// Each replica's timeline (`E03_REPLICAS`: a `[[timeline]]` phase may be one replica's);
    /// empty: `cfg`'s for every replica.
    timelines: Vec<e03_model::timeline::Timeline>,
    /// Arrival time by sequence number of requests not answered yet: taken out by their
    /// response.
    arrival_us: HashMap<u64, u64>,
    /// The service-time factor of the requests not answered yet that are in the heavy tail
    /// (`E03_TAIL_RATE`), by sequence number: their work takes that many service times.
    tailed: HashMap<u64, f64>,
    /// Latest arrival time seen, µs.
    latest_us: u64,
    /// Size of `arrival_us` past which entries older than [`Self::horizon_us`] are dropped.
    prune_at: usize,
    /// Wait (admit - arrival) of requests the model admitted at once, µs.
    queueing: Histogram<u64>,
    /// Client attempts minus server arrivals, per identity.
    identities: IdentitySketch,
    anonymous_arrivals: u64,
    server_arrivals: u64,
    client_attempts: u64,
    /// Client attempts without an answer, sent or ended inside a wire phase.
    cut_by_proxy: u64,
    cancelled: u64,
    /// Saturation spells outside the freeze, merged as they come: start -> end, µs, disjoint
    /// and not touching; one set per replica of the dependency (`E03_REPLICAS`, by
    /// [`replica_of`] its requests' sequence numbers), each saturated on its own.
    spells: Vec<BTreeMap<u64, u64>>,
    /// When each admitted request's work ended (admission + service time), µs. At most
    /// `workers` jobs run at once, so this holds at most `workers x (duration / service time
    /// + 1)` entries: run duration times capacity, whatever the offered load.
    completions: Vec<Vec<u64>>,
    /// Answer time minus the model's scheduled answer time, µs.
    answer_late: Histogram<u64>,
}

/// Where replica `r`'s request sequence numbers start when a run over replicas
/// (`E03_REPLICAS`) is read: each replica numbers its requests from 0, so its log's are moved to
/// `r << 48` on (by the analyzer) to keep them apart.
pub const REPLICA_SEQ_SHIFT: u32 = 48;

/// The replica of a request's (moved) sequence number ([`REPLICA_SEQ_SHIFT`]).
fn replica_of(seq: u64) -> usize {
    (seq >> REPLICA_SEQ_SHIFT) as usize
}

/// Saturated time (µs) and the completions in it, for one phase.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Spells {
    saturated_us: u64,
    completions: u64,
}

impl Spells {
    fn secs(&self) -> f64 {
        self.saturated_us as f64 / 1e6
    }

    /// Completions per second, once there is enough saturated time to tell.
    fn rate(&self) -> Option<f64> {
        (self.secs() >= MIN_SATURATED_S).then(|| self.completions as f64 / self.secs())
    }
}

/// Adds `[a, b]` to a set of disjoint intervals, merging it with those it overlaps or touches.
fn merge_into(spells: &mut BTreeMap<u64, u64>, mut a: u64, mut b: u64) {
    if let Some((&s, &e)) = spells.range(..=a).next_back() {
        if e >= a {
            spells.remove(&s);
            a = s;
            b = b.max(e);
        }
    }
    while let Some((&s, &e)) = spells.range(a..=b).next() {
        spells.remove(&s);
        b = b.max(e);
    }
    spells.insert(a, b);
}

impl LiveAccumulator {
    pub(crate) fn new(cfg: ServiceConfig) -> Self {
        LiveAccumulator {
            cfg,
            timelines: Vec::new(),
            arrival_us: HashMap::new(),
            tailed: HashMap::new(),
            latest_us: 0,
            prune_at: PRUNE_MIN,
            queueing: histogram(),
            identities: IdentitySketch::default(),
            anonymous_arrivals: 0,
            server_arrivals: 0,
            client_attempts: 0,
            cut_by_proxy: 0,
            cancelled: 0,
            spells: vec![BTreeMap::new()],
            completions: vec![Vec::new()],
            answer_late: histogram(),
        }
    }

    /// How long after its arrival a request is surely answered in the log: the freeze, a
    /// slow answer's delay and a full queue's wait at degraded speed, twice over, plus 10 s
    /// of slop. Arrivals older than that are never answered (a malformed request is answered
    /// 400 unlogged) and are dropped.
    /// Each replica's own timeline, when they differ (see [`Self::timeline`]).
    pub(crate) fn with_timelines(mut self, timelines: Vec<e03_model::timeline::Timeline>) -> Self {
        self.timelines = timelines;
        self
    }

    /// The timeline of `replica`.
    fn timeline(&self, replica: usize) -> &e03_model::timeline::Timeline {
        self.timelines.get(replica).unwrap_or(&self.cfg.timeline)
    }

    fn horizon_us(&self) -> u64 {
        let t = &self.cfg.timeline;
        let freeze = t
            .freeze
            .map(|f| f.end.saturating_sub(f.start))
            .unwrap_or_default();
        let slowest = std::iter::once(t)
            .chain(&self.timelines)
            .filter_map(|t| {
                t.degraded
                    .map(|d| t.service_time(d.start, self.cfg.service_time))
            })
            .max()
            .unwrap_or_default()
            .max(self.cfg.service_time)
            .mul_f64(if self.cfg.faults.tail_rate > 0.0 {
                self.cfg.faults.tail_factor.max(1.0)
            } else {
                1.0
            });
        let rounds = (self.cfg.queue / self.cfg.workers.max(1) + 2) as u32;
        let wait = freeze + self.cfg.faults.slow_delay + slowest * rounds;
        (wait * 2).as_micros() as u64 + 10_000_000
    }

    pub(crate) fn arrival(&mut self, a: &Arrival) {
        self.server_arrivals += 1;
        self.arrival_us.insert(a.seq, a.t_us);
        self.latest_us = self.latest_us.max(a.t_us);
        if self.arrival_us.len() > self.prune_at {
            let oldest = self.latest_us.saturating_sub(self.horizon_us());
            self.arrival_us.retain(|_, t| *t >= oldest);
            let kept = &self.arrival_us;
            self.tailed.retain(|seq, _| kept.contains_key(seq));
            self.prune_at = (2 * self.arrival_us.len()).max(PRUNE_MIN);
        }
        if self.cfg.faults.tail_rate > 0.0 {
            // The service's fault key: the identity's, or its sequence number without one.
            let key = match (a.client, a.op, a.attempt) {
                (Some(c), Some(o), Some(n)) => e03_model::faults::request_key(c, o, n),
                _ => a.seq,
            };
            let factor = self.cfg.faults.service_factor(self.cfg.seed, key);
            if factor != 1.0 {
                self.tailed.insert(a.seq, factor);
            }
        }
        match (a.client, a.op, a.attempt) {
            (Some(c), Some(o), Some(n)) => self.identities.server(c, o, n),
            _ => self.anonymous_arrivals += 1,
        }
    }

    pub(crate) fn attempt(&mut self, a: &Attempt) {
        // An attempt whose connection was never made (refused, or not made in time) reached
        // nothing: there is no arrival to match it with.
        if a.end.broken().is_some_and(|b| b.before_sending()) {
            return;
        }
        self.client_attempts += 1;
        self.identities.client(a.client, a.op, a.attempt);
        // Without an answer, and sent or ended inside a wire phase: the proxy may have closed
        // its connection or dropped its request before passing it on.
        let inside = |us: u64| {
            self.cfg
                .timeline
                .wire_at(std::time::Duration::from_micros(us))
                .is_some()
        };
        let unanswered = matches!(a.end, AttemptEnd::Timeout) || a.end.broken().is_some();
        if unanswered && (inside(a.sent_us) || inside(a.end_us)) {
            self.cut_by_proxy += 1;
        }
        self.cancelled += u64::from(a.end == AttemptEnd::Cancelled);
    }

    /// A response: pairs it with its arrival (logged before it by the service), then forgets
    /// the arrival.
    pub(crate) fn response(&mut self, r: &Response) {
        let replica = replica_of(r.seq);
        if self.spells.len() <= replica {
            self.spells.resize_with(replica + 1, BTreeMap::new);
            self.completions.resize_with(replica + 1, Vec::new);
        }
        let arrived = self.arrival_us.remove(&r.seq);
        let factor = self.tailed.remove(&r.seq).unwrap_or(1.0);
        let Some(admit) = r.admit_us.filter(|&t| t < MAX_T_US) else {
            return;
        };
        match arrived {
            Some(t) if r.immediate => self.queueing.saturating_record(admit.saturating_sub(t)),
            Some(t) if t < admit && !self.in_freeze(t, admit) => {
                merge_into(&mut self.spells[replica], t, admit)
            }
            _ => {}
        }
        let service = self
            .timeline(replica)
            .service_time(
                std::time::Duration::from_micros(admit),
                self.cfg.service_time,
            )
            .mul_f64(factor);
        let done = admit.saturating_add(service.as_micros() as u64);
        self.completions[replica].push(done);
        // The schedule's own rule (the model's), read back from the answer's cause.
        let scheduled = r
            .cause
            .due_after_work(self.cfg.faults.slow_delay)
            .map(|after| done.saturating_add(after.as_micros() as u64));
        if let Some(at) = scheduled {
            self.answer_late
                .saturating_record(r.t_us.saturating_sub(at));
        }
    }

    /// Entries held in the growable structures: unanswered arrivals, spells and completions
    /// (the sketch and histograms have a fixed size).
    #[cfg(test)]
    pub(crate) fn retained(&self) -> usize {
        self.arrival_us.len()
            + self.spells.iter().map(BTreeMap::len).sum::<usize>()
            + self.completions.iter().map(Vec::len).sum::<usize>()
    }

    /// Whether `[from, to)` (µs) overlaps the freeze.
    fn in_freeze(&self, from: u64, to: u64) -> bool {
        self.cfg.timeline.freeze.is_some_and(|f| {
            let (s, e) = (f.start.as_micros() as u64, f.end.as_micros() as u64);
            s < to && e > from
        })
    }

    /// Saturated time and the completions in it, (normal, degraded). Spells touching the
    /// freeze are dropped; the rest are merged and split at the degraded window's edges.
    /// Sorts the completions in place (a copy would double the largest structure at the end).
    fn saturation(&mut self) -> (Spells, Spells) {
        let (mut normal, mut slow) = (Spells::default(), Spells::default());
        for replica in 0..self.spells.len() {
            let (n, s) = self.saturation_of(replica);
            normal.saturated_us += n.saturated_us;
            normal.completions += n.completions;
            slow.saturated_us += s.saturated_us;
            slow.completions += s.completions;
        }
        (normal, slow)
    }

    /// [`Self::saturation`] of one replica.
    fn saturation_of(&mut self, replica: usize) -> (Spells, Spells) {
        self.completions[replica].sort_unstable();
        let done = &self.completions[replica];
        let merged = self.spells[replica].iter().map(|(&a, &b)| (a, b));
        let degraded = self
            .cfg
            .timeline
            .degraded
            .map(|d| (d.start.as_micros() as u64, d.end.as_micros() as u64));
        let (mut normal, mut slow) = (Spells::default(), Spells::default());
        for (a, b) in merged {
            let mut cuts = vec![a];
            if let Some((ds, de)) = degraded {
                cuts.extend([ds, de].into_iter().filter(|&c| a < c && c < b));
            }
            cuts.push(b);
            for piece in cuts.windows(2) {
                let (a, b) = (piece[0], piece[1]);
                // Measured over whole service periods from the piece's first completion: while
                // the pool is busy, each worker completes exactly one job per period whatever
                // their phases, so (first, first + m periods] holds m x workers completions.
                // Counting from the spell's start (an arrival, anywhere between completions) to
                // its end instead adds up to one whole round of the pool (after the freeze the
                // workers finish nearly together, ten within a few ms): up to 3-5% high.
                let in_degraded = degraded.is_some_and(|(ds, de)| a >= ds && b <= de);
                let period = self
                    .cfg
                    .timeline
                    .service_time(std::time::Duration::from_micros(a), self.cfg.service_time)
                    .as_micros() as u64;
                let first = done.partition_point(|&t| t <= a);
                let Some(&c1) = done.get(first) else {
                    continue;
                };
                let periods = b.saturating_sub(c1) / period.max(1);
                if periods == 0 {
                    continue;
                }
                let end = c1 + periods * period;
                let lo = done.partition_point(|&t| t <= c1);
                let hi = done.partition_point(|&t| t <= end);
                let phase = if in_degraded { &mut slow } else { &mut normal };
                phase.saturated_us += end - c1;
                phase.completions += (hi - lo) as u64;
            }
        }
        (normal, slow)
    }

    pub(crate) fn finish(mut self, lateness: &Histogram<u64>) -> (Fidelity, Matched) {
        let (normal, slow) = self.saturation();
        let queueing = &self.queueing;
        let configured_rps = self.cfg.capacity_per_s();
        let degraded_configured_rps = self.cfg.timeline.degraded.map(|d| {
            let service = self
                .cfg
                .timeline
                .service_time(d.start, self.cfg.service_time);
            self.cfg.workers as f64 / service.as_secs_f64()
        });
        // Only phases with enough saturated time to be measured count: a lone 40 ms period at
        // the degraded window's end (workers still finishing 80 ms jobs) says nothing.
        let measured = |p: &Spells, rps: f64| match p.rate() {
            Some(_) => (p.completions as f64, p.secs() * rps),
            None => (0.0, 0.0),
        };
        let (done_n, promised_n) = measured(&normal, configured_rps);
        let (done_d, promised_d) = measured(&slow, degraded_configured_rps.unwrap_or(0.0));
        let promised = promised_n + promised_d;
        let ratio = (promised > 0.0).then(|| (done_n + done_d) / promised);
        let fidelity = Fidelity {
            lateness_p50_ms: quantile_ms(lateness, 0.5),
            lateness_p99_ms: quantile_ms(lateness, 0.99),
            lateness_max_ms: if lateness.is_empty() {
                0.0
            } else {
                lateness.max() as f64 / 1000.0
            },
            queueing_samples: queueing.len(),
            queueing_p99_ms: quantile_ms(queueing, 0.99),
            answer_lateness_p99_ms: quantile_ms(&self.answer_late, 0.99),
            answer_samples: self.answer_late.len(),
            answer_lateness_max_ms: if self.answer_late.is_empty() {
                0.0
            } else {
                self.answer_late.max() as f64 / 1000.0
            },
            queueing_max_ms: if queueing.is_empty() {
                0.0
            } else {
                queueing.max() as f64 / 1000.0
            },
            saturated_s: normal.secs(),
            achieved_rps: normal.rate(),
            configured_rps,
            degraded_saturated_s: slow.secs(),
            degraded_achieved_rps: slow.rate(),
            degraded_configured_rps,
            ratio,
        };
        let diff = self.identities.difference();
        // Both sides' counts are exact; the sketch says how many of them differ.
        let named = self.server_arrivals - self.anonymous_arrivals;
        let matched = self
            .client_attempts
            .saturating_sub(diff.client_only)
            .min(named.saturating_sub(diff.server_only));
        let matched = Matched {
            client_attempts: self.client_attempts,
            server_arrivals: self.server_arrivals,
            matched,
            unmatched_client: self.client_attempts - matched,
            unmatched_server: self.server_arrivals - matched,
            cut_by_proxy: self.cut_by_proxy,
            cancelled: self.cancelled,
        };
        (fidelity, matched)
    }
}

#[cfg(test)]
mod tests {
    use e03_model::events::{AttemptEnd, Cause, RunTag};
    use e03_plan::{Params, Scenario};

    use crate::metrics::RunAccumulator;

    use super::*;

    fn tag() -> RunTag {
        RunTag {
            run: "r".into(),
            seed: 1,
            strategy: "C".into(),
        }
    }

    fn response(seq: u64, cause: Cause, admit_us: Option<u64>, immediate: bool) -> Response {
        Response {
            tag: tag(),
            seq,
            t_us: admit_us.unwrap_or(0),
            status: 200,
            cause,
            admit_us,
            immediate,
            cost: None,
        }
    }

    fn arrival(seq: u64, t_us: u64, id: Option<(u32, u32, u32)>) -> Arrival {
        Arrival {
            tag: tag(),
            seq,
            t_us,
            client: id.map(|i| i.0),
            op: id.map(|i| i.1),
            attempt: id.map(|i| i.2),
            class: Default::default(),
        }
    }

    #[test]
    fn throughput_while_saturated_is_completions_per_second_of_queueing() {
        // Defaults: 10 workers x 40 ms = 250 req/s. From 2.0 s to 3.0 s a request is always
        // waiting: a queued request arrives at 2.0 s and is admitted at 3.0 s, and the workers
        // complete 250 requests of 40 ms in (2.0 s, 3.0 s]. A completion at 5 s, outside any
        // spell, does not count; a spell at 9 s (in the freeze) is left out.
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
        a.arrival_record(&arrival(0, 2_000_000, None));
        a.response_record(&response(0, Cause::Ok, Some(3_000_000), false));
        // Completions at 2.004 s, 2.008 s, ... 3.000 s: 250 of them.
        for i in 1..=250u64 {
            a.response_record(&response(i, Cause::Ok, Some(1_960_000 + i * 4_000), true));
        }
        a.response_record(&response(900, Cause::Ok, Some(4_960_000), true));
        a.arrival_record(&arrival(901, 9_000_000, None));
        a.response_record(&response(901, Cause::Ok, Some(9_800_000), false));
        let f = a.finish().fidelity.unwrap();
        // Measured over whole 40 ms periods from the first completion (2.004 s): 24 periods,
        // 0.96 s, 240 completions.
        assert!((f.saturated_s - 0.96).abs() < 1e-9, "{f:?}");
        assert!((f.achieved_rps.unwrap() - 250.0).abs() < 1e-9, "{f:?}");
        assert_eq!(f.ratio, Some(1.0));
        assert_eq!(f.configured_rps, 250.0);
        assert_eq!(
            (f.degraded_saturated_s, f.degraded_achieved_rps),
            (0.0, None)
        );
        assert!(f.warnings().is_empty());
    }

    /// Two replicas (`E03_REPLICAS`), each saturated from 2.0 s to 3.0 s and completing its 250
    /// requests there: read one after the other, with replica 1's sequence numbers moved to
    /// `1 << 48`, each is measured against its own 250/s. Merged into one set of spells and
    /// completions, the same run read 500 completions in one second against one replica's
    /// 250/s: a ratio of 2.
    #[test]
    fn each_replica_is_saturated_on_its_own() {
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
        for replica in 0..2u64 {
            let base = replica << REPLICA_SEQ_SHIFT;
            a.arrival_record(&arrival(base, 2_000_000, None));
            a.response_record(&response(base, Cause::Ok, Some(3_000_000), false));
            for i in 1..=250u64 {
                let admit = 1_960_000 + i * 4_000;
                a.response_record(&response(base + i, Cause::Ok, Some(admit), true));
            }
        }
        let f = a.finish().fidelity.unwrap();
        assert!((f.saturated_s - 2.0 * 0.96).abs() < 1e-9, "{f:?}");
        assert_eq!(f.ratio, Some(1.0), "{f:?}");
    }

    /// Completions of a pool whose `workers` are busy without a break from `from_us` (staggered
    /// by `stagger_us`) until `until_us`, each job taking its admission phase's service time.
    fn busy_pool(a: &mut RunAccumulator, from_us: u64, until_us: u64, stagger_us: u64) {
        let timeline = Params::default().outage_timeline();
        let mut seq = 10_000;
        for w in 0..10u64 {
            let mut t = from_us + w * stagger_us;
            while t < until_us {
                a.response_record(&response(seq, Cause::Ok, Some(t), true));
                seq += 1;
                let service = timeline.service_time(
                    std::time::Duration::from_micros(t),
                    std::time::Duration::from_millis(40),
                );
                t += service.as_micros() as u64;
            }
        }
    }

    /// One queued request waiting over `[from_us, to_us)`: the pool is saturated then.
    fn spell(a: &mut RunAccumulator, seq: u64, from_us: u64, to_us: u64) {
        a.arrival_record(&arrival(seq, from_us, None));
        a.response_record(&response(seq, Cause::Ok, Some(to_us), false));
    }

    #[test]
    fn saturation_in_the_degraded_window_is_measured_against_the_degraded_capacity() {
        // Defaults: degraded 10 s to 15 s at factor 0.5: 80 ms jobs, 125 req/s. The pool is busy
        // from 10.0 s; a request waits from 10.5 s to 11.5 s; a spell at 9.9 s touches the
        // freeze (8.5 s to 10 s) and is left out.
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "A", 1);
        busy_pool(&mut a, 10_000_000, 12_000_000, 8_000);
        spell(&mut a, 0, 10_500_000, 11_500_000);
        spell(&mut a, 1, 9_900_000, 10_100_000);
        let f = a.finish().fidelity.unwrap();
        assert_eq!((f.saturated_s, f.achieved_rps), (0.0, None), "{f:?}");
        // Jobs end every 8 ms; measured over whole 80 ms periods from the first completion in
        // the spell (10.504 s): 12 periods, 0.96 s, 120 completions.
        assert!((f.degraded_saturated_s - 0.96).abs() < 1e-9, "{f:?}");
        assert_eq!(f.degraded_configured_rps, Some(125.0));
        assert!(
            (f.degraded_achieved_rps.unwrap() - 125.0).abs() < 1e-6,
            "{f:?}"
        );
        assert!((f.ratio.unwrap() - 1.0).abs() < 1e-9, "{f:?}");
        assert!(f.warnings().is_empty());
    }

    #[test]
    fn a_spell_across_the_degraded_end_is_split_at_it() {
        // Busy from 13 s to 17 s, workers 8 ms out of phase; a request waits from 14 s to 16 s:
        // a second against each capacity. Just after 15 s the workers still finish their last
        // 80 ms jobs, one each within 80 ms, as many as 40 ms jobs would give there on
        // average; both halves and the whole read 1.0 within the few jobs cut at the edges
        // (bound 3%, the warning's).
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "A", 1);
        busy_pool(&mut a, 13_000_000, 17_000_000, 8_000);
        spell(&mut a, 0, 14_000_000, 16_000_000);
        let f = a.finish().fidelity.unwrap();
        // Each half is measured over whole periods from its first completion, 8 ms after its
        // start: 24 x 40 ms and 12 x 80 ms.
        assert!((f.saturated_s - 0.96).abs() < 1e-9, "{f:?}");
        assert!((f.degraded_saturated_s - 0.96).abs() < 1e-9, "{f:?}");
        let normal = f.achieved_rps.unwrap() / 250.0;
        let degraded = f.degraded_achieved_rps.unwrap() / 125.0;
        let ratio = f.ratio.unwrap();
        for r in [normal, degraded, ratio] {
            assert!((r - 1.0).abs() <= RATIO_WARN, "{r} {f:?}");
        }
        assert!(
            (ratio - (normal * 250.0 + degraded * 125.0) / 375.0).abs() < 1e-9,
            "halves weighed by their time: {f:?}"
        );
        assert!(f.warnings().is_empty(), "{:?}", f.warnings());
    }

    #[test]
    fn a_pool_slower_than_the_degraded_capacity_warns() {
        // Jobs end every 16 ms from 10.08 s to 12.08 s instead of every 8 ms: half the
        // degraded capacity.
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "A", 1);
        for i in 0..125u64 {
            a.response_record(&response(
                100 + i,
                Cause::Ok,
                Some(10_000_000 + i * 16_000),
                true,
            ));
        }
        spell(&mut a, 0, 10_080_000, 12_080_000);
        let f = a.finish().fidelity.unwrap();
        assert!((f.ratio.unwrap() - 0.5).abs() < 0.01, "{f:?}");
        assert!(
            (f.degraded_achieved_rps.unwrap() - 62.5).abs() < 1.0,
            "{f:?}"
        );
        let w = f.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("throughput"), "{w:?}");
    }

    #[test]
    fn answers_are_measured_against_their_scheduled_instant() {
        // Admitted at 1.0 s with 40 ms of work: scheduled at 1.040 s, answered at 1.0415 s.
        // A slow answer is scheduled 2.5 s later still; rejections have no schedule.
        let mut a = RunAccumulator::new(Scenario::e03a(), &Params::default(), "C", 1);
        let mut served = response(0, Cause::Ok, Some(1_000_000), true);
        served.t_us = 1_041_500;
        let mut slow = response(1, Cause::Slow, Some(2_000_000), true);
        slow.t_us = 4_540_200;
        let mut full = response(2, Cause::Full, None, false);
        full.t_us = 9_000_000;
        for r in [&served, &slow, &full] {
            a.response_record(r);
        }
        let f = a.finish().fidelity.unwrap();
        assert!((f.answer_lateness_max_ms - 1.5).abs() < 0.01, "{f:?}");
        assert!((f.answer_lateness_p99_ms - 1.5).abs() < 0.01, "{f:?}");
    }

    #[test]
    fn e03a_has_no_degraded_capacity() {
        let mut a = RunAccumulator::new(Scenario::e03a(), &Params::default(), "C", 1);
        a.response_record(&response(1, Cause::Ok, Some(12_000_000), true));
        let f = a.finish().fidelity.unwrap();
        assert_eq!(
            (f.degraded_configured_rps, f.degraded_saturated_s, f.ratio),
            (None, 0.0, None)
        );
    }

    #[test]
    fn too_little_saturation_reports_no_ratio() {
        let mut a = RunAccumulator::new(Scenario::e03a(), &Params::default(), "C", 1);
        a.arrival_record(&arrival(0, 1_000_000, None));
        a.response_record(&response(0, Cause::Ok, Some(1_040_000), false));
        a.response_record(&response(1, Cause::Ok, Some(1_000_000), true));
        let f = a.finish().fidelity.unwrap();
        // One completion (at the spell's end) measures nothing.
        assert_eq!(f.saturated_s, 0.0);
        assert_eq!((f.achieved_rps, f.ratio), (None, None));
    }

    #[test]
    fn queueing_outside_the_model_and_lateness_warn_past_their_thresholds() {
        let mut a = RunAccumulator::new(Scenario::e03a(), &Params::default(), "C", 1);
        a.arrival_record(&arrival(0, 1_000, Some((1, 0, 1))));
        a.arrival_record(&arrival(1, 2_000, Some((2, 0, 1))));
        a.response_record(&response(0, Cause::Ok, Some(1_500), true)); // 0.5 ms outside the model
        a.response_record(&response(1, Cause::Ok, Some(9_000), false)); // queued by the model: not counted
        a.attempt(1, 0, 5_000); // 5 ms late
        let f = a.finish().fidelity.unwrap();
        assert_eq!(f.queueing_samples, 1);
        assert!((f.queueing_max_ms - 0.5).abs() < 0.01, "{f:?}");
        assert!((f.lateness_p99_ms - 5.0).abs() < 0.01, "{f:?}");
        let w = f.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("lateness"));
    }

    fn floor(scheduling: &str, p99: f64) -> MachineFloor {
        MachineFloor {
            scheduling: scheduling.into(),
            why: String::new(),
            wake_samples: 1000,
            wake_p99_ms: p99,
            wake_mean_ms: p99 / 10.0,
            wake_max_ms: p99 * 2.0,
        }
    }

    #[test]
    fn lateness_within_one_and_a_half_times_the_machine_floor_is_the_machines() {
        // Floor 2.0 ms at p99: up to 3.0 ms is the machine's, beyond it the lab's.
        let m = floor("SCHED_OTHER", 2.0);
        assert_eq!(m.owner(1.0), LatenessOwner::Machine);
        assert_eq!(m.owner(3.0), LatenessOwner::Machine);
        assert_eq!(m.owner(3.01), LatenessOwner::Lab);
        assert!(m.verdict(2.5).starts_with("the machine's: within 1.5x"));
        assert!(m
            .verdict(2.5)
            .ends_with("real-time timers need root or CAP_SYS_NICE"));
        assert!(m.verdict(9.0).starts_with("the lab's: more than 1.5x"));
        // A real-time floor does not send the user after a privilege the run already had.
        assert!(!floor("SCHED_FIFO", 0.2)
            .verdict(0.25)
            .contains("CAP_SYS_NICE"));
    }

    #[test]
    fn a_lateness_warning_says_whose_it_is_when_the_floor_was_measured() {
        let mut a = RunAccumulator::new(Scenario::e03a(), &Params::default(), "C", 1);
        a.arrival_record(&arrival(0, 1_000, Some((1, 0, 1))));
        a.response_record(&response(0, Cause::Ok, Some(1_000), true));
        a.attempt(1, 0, 5_000); // 5 ms late
        let f = a.finish().fidelity.unwrap();
        // Without a floor, today's words; with a 4 ms floor, the machine's (5 <= 6); with a
        // 1 ms floor, the lab's (5 > 1.5).
        assert!(f.warnings()[0].ends_with("the swarm's timers ran late"));
        let machine = f.warnings_beside(Some(&floor("SCHED_OTHER", 4.0)));
        assert!(
            machine[0].contains("ran late; the machine's: within 1.5x"),
            "{machine:?}"
        );
        let lab = f.warnings_beside(Some(&floor("SCHED_FIFO", 1.0)));
        assert!(
            lab[0].contains("ran late; the lab's: more than 1.5x"),
            "{lab:?}"
        );
    }

    #[test]
    fn the_machine_file_reads_back_what_the_lab_writes() {
        let m = floor("SCHED_FIFO", 0.14);
        let back: MachineFloor = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        // An older file without `why` still reads.
        let old = r#"{"scheduling":"SCHED_OTHER","wake_samples":3,"wake_p99_ms":2.5,"wake_mean_ms":0.2,"wake_max_ms":3.0}"#;
        assert_eq!(serde_json::from_str::<MachineFloor>(old).unwrap().why, "");
    }

    #[test]
    fn an_attempt_the_proxy_cut_in_a_refused_phase_may_be_missing_at_the_dependency() {
        // refused: nothing listens from 3 s to 5 s; the proxy closes the open connections.
        let refused = Scenario::named("refused").unwrap();
        let matched = |end_us| {
            let mut a = RunAccumulator::new(refused.clone(), &Params::default(), "A", 1);
            a.attempt_record(&Attempt {
                tag: tag(),
                client: 1,
                op: 0,
                attempt: 1,
                due_us: 0,
                sent_us: end_us - 500,
                end_us,
                end: AttemptEnd::ResetBeforeAnswer,
                status: None,
                rejection: None,
                flow: None,
                step: None,
                retry_after_us: None,
            });
            a.finish().matched.unwrap()
        };
        let cut = matched(3_000_400);
        assert_eq!((cut.unmatched_client, cut.cut_by_proxy), (1, 1));
        assert!(cut.ok());
        // A reset outside the phase is the dependency's or the network's: it must have arrived.
        let lost = matched(2_000_000);
        assert_eq!((lost.unmatched_client, lost.cut_by_proxy), (1, 0));
        assert!(!lost.ok());
    }

    /// A hedge's copy cancelled before its request was written never reached the dependency:
    /// it may be missing. Any other attempt without an arrival still is a mismatch.
    #[test]
    fn a_cancelled_attempt_may_be_missing_at_the_dependency() {
        let matched = |end| {
            let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
            a.attempt_record(&Attempt {
                tag: tag(),
                client: 1,
                op: 0,
                attempt: 2,
                due_us: 0,
                sent_us: 100,
                end_us: 200,
                end,
                status: None,
                rejection: None,
                flow: None,
                step: None,
                retry_after_us: None,
            });
            a.finish().matched.unwrap()
        };
        let cancelled = matched(AttemptEnd::Cancelled);
        assert_eq!((cancelled.unmatched_client, cancelled.cancelled), (1, 1));
        assert!(cancelled.ok());
        let timed_out = matched(AttemptEnd::Timeout);
        assert_eq!((timed_out.unmatched_client, timed_out.cancelled), (1, 0));
        assert!(!timed_out.ok());
    }

    #[test]
    fn identities_are_matched_both_ways() {
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
        a.arrival_record(&arrival(0, 10, Some((1, 0, 1))));
        a.arrival_record(&arrival(1, 20, Some((1, 0, 2))));
        a.arrival_record(&arrival(2, 30, None)); // a request without identity
        let attempt = |client, attempt| Attempt {
            tag: tag(),
            client,
            op: 0,
            attempt,
            due_us: 0,
            sent_us: 0,
            end_us: 1,
            end: AttemptEnd::Status,
            status: Some(200),
            rejection: None,
            flow: None,
            step: None,
            retry_after_us: None,
        };
        a.attempt_record(&attempt(1, 1));
        a.attempt_record(&attempt(1, 2));
        a.attempt_record(&attempt(7, 1)); // never arrived
                                          // Refused, or not connected in time: never left, so not looked for at the dependency.
        for (client, end) in [
            (8, AttemptEnd::ConnectRefused),
            (9, AttemptEnd::ConnectTimeout),
        ] {
            a.attempt_record(&Attempt {
                end,
                status: None,
                ..attempt(client, 1)
            });
        }
        let m = a.finish().matched.unwrap();
        assert_eq!(
            m,
            Matched {
                client_attempts: 3,
                server_arrivals: 3,
                matched: 2,
                unmatched_client: 1,
                unmatched_server: 1,
                cut_by_proxy: 0,
                cancelled: 0,
            }
        );
        assert!(!m.ok());
    }

    #[test]
    fn memory_does_not_grow_with_the_number_of_events() {
        // Two million requests in 30 s, each with its client attempt: every 200th is admitted
        // at once (150/s, under the 250/s capacity), every 2000th waits 2 ms in the queue,
        // the rest are rejected; each is answered a few arrivals later. What is retained is
        // bounded by the run's duration (completions at most capacity x 30 s = 7500, spells
        // fewer), not by the two million events.
        let cfg = Params::default().service_config(&Scenario::e03a(), 1);
        let mut live = LiveAccumulator::new(cfg);
        let n = 2_000_000u64;
        let step_us = 30_000_000 / n;
        let answer = |live: &mut LiveAccumulator, seq: u64| {
            let t = seq * step_us;
            let (cause, admit, immediate) = match seq {
                s if s % 2000 == 0 => (Cause::Ok, Some(t + 2_000), false),
                s if s % 200 == 0 => (Cause::Ok, Some(t + 10), true),
                _ => (Cause::Full, None, false),
            };
            live.response(&response(seq, cause, admit, immediate));
        };
        let mut most = 0;
        for seq in 0..n {
            let id = ((seq % 500) as u32, (seq / 500) as u32, 1);
            live.arrival(&arrival(seq, seq * step_us, Some(id)));
            live.attempt(&Attempt {
                tag: tag(),
                client: id.0,
                op: id.1,
                attempt: id.2,
                due_us: 0,
                sent_us: 0,
                end_us: 1,
                end: AttemptEnd::Status,
                status: Some(200),
                rejection: None,
                flow: None,
                step: None,
                retry_after_us: None,
            });
            if seq >= 8 {
                answer(&mut live, seq - 8);
            }
            most = most.max(live.retained());
        }
        for seq in n - 8..n {
            answer(&mut live, seq);
        }
        assert_eq!(live.arrival_us.len(), 0);
        assert_eq!(live.completions[0].len(), 10_000);
        assert_eq!(live.spells[0].len(), 1_000);
        assert!(most <= 11_009, "retained {most} entries");
        let (f, m) = live.finish(&histogram());
        assert_eq!(f.queueing_samples, 9_000);
        assert_eq!((m.client_attempts, m.matched), (n, n));
        assert!(m.ok(), "{m:?}");
    }

    #[test]
    fn an_attempt_missing_on_the_server_side_is_detected() {
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
        let attempt = |client, op| Attempt {
            tag: tag(),
            client,
            op,
            attempt: 1,
            due_us: 0,
            sent_us: 0,
            end_us: 1,
            end: AttemptEnd::Status,
            status: Some(200),
            rejection: None,
            flow: None,
            step: None,
            retry_after_us: None,
        };
        for i in 0..10_000u32 {
            a.attempt_record(&attempt(i % 50, i / 50));
            // The server never saw client 7's op 123; everything else arrived once, in
            // another order.
            let j = 9_999 - i;
            if (j % 50, j / 50) != (7, 123) {
                a.arrival_record(&arrival(j as u64, j as u64, Some((j % 50, j / 50, 1))));
            }
        }
        let m = a.finish().matched.unwrap();
        assert_eq!(
            m,
            Matched {
                client_attempts: 10_000,
                server_arrivals: 9_999,
                matched: 9_999,
                unmatched_client: 1,
                unmatched_server: 0,
                cut_by_proxy: 0,
                cancelled: 0,
            }
        );
        assert!(!m.ok());
    }

    #[test]
    fn arrivals_never_answered_are_dropped_once_stale() {
        // 100 000 malformed requests over 300 s (answered 400, unlogged): only those within
        // the horizon (about 20 s by default, some 6 700 arrivals) and at most twice that
        // between prunes stay. A request answered 15 s after arriving still pairs.
        let cfg = Params::default().service_config(&Scenario::e03a(), 1);
        let mut live = LiveAccumulator::new(cfg);
        assert!(live.horizon_us() > 15_000_000, "{}", live.horizon_us());
        for seq in 0..100_000u64 {
            live.arrival(&arrival(seq, seq * 3_000, None));
        }
        assert!(live.arrival_us.len() < 20_000, "{}", live.arrival_us.len());
        let seq = 100_000 - 5_000;
        live.response(&response(seq, Cause::Ok, Some(seq * 3_000 + 500), true));
        let (f, _) = live.finish(&histogram());
        assert_eq!(f.queueing_samples, 1);
    }
}
