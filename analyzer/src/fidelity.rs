//! How faithfully a live run followed the model, and whether both sides saw the same attempts.
//!
//! The simulator is the model; a live run is the model plus real sockets, timers and a scheduler
//! shared with everything else on the machine. Three figures say how far a live run drifted:
//!
//! - client send lateness: how late an attempt left after it was due (timer and scheduler slop);
//! - server queueing outside the model: for requests the model admitted at once (a worker was
//!   free), how long they still waited before their work started;
//! - achieved throughput while saturated: worker completions (counted at admission + service
//!   time) per second of saturation, against the configured capacity `workers / service time`.
//!   The service is saturated while a request waits in its queue (from the arrival of a request
//!   the model queued to its admission): every worker is busy then, so completions should come
//!   at exactly the configured rate. Saturation spells that touch the freeze or the degraded
//!   window are left out, and below [`MIN_SATURATED_S`] seconds in all the ratio is not reported
//!   (a dozen completions cannot measure a 3% drift). Counting whole 1 s windows that merely
//!   *contain* a queued admission or a rejection, as first specified, reports a window with a
//!   40 ms burst as "saturated" at a fraction of capacity: a false alarm on every normal run.
//!
//! Matching checks that every attempt the swarm logged arrived at the dependency under the same
//! identity (client, op, attempt), and the other way round.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use e03_core::dependency::ServiceConfig;
use e03_core::events::{Arrival, Attempt, Response};

use crate::metrics::{histogram, quantile_ms, MAX_T_US};

/// Largest send lateness (p99) before the table warns, in ms.
pub const LATENESS_WARN_MS: f64 = 2.0;
/// Largest |achieved / configured - 1| before the table warns.
pub const RATIO_WARN: f64 = 0.03;
/// Least saturated time for the throughput ratio to be reported, in seconds.
pub const MIN_SATURATED_S: f64 = 0.5;

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
    /// Seconds (outside freeze and degraded windows) during which a request waited in the queue.
    pub saturated_s: f64,
    /// Worker completions per second while saturated (None below [`MIN_SATURATED_S`]).
    pub achieved_rps: Option<f64>,
    pub configured_rps: f64,
    /// achieved / configured.
    pub ratio: Option<f64>,
}

impl Fidelity {
    /// Warning lines when the run drifted from the model more than the thresholds allow.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.lateness_p99_ms > LATENESS_WARN_MS {
            w.push(format!(
                "client send lateness p99 {:.1} ms exceeds {LATENESS_WARN_MS} ms: the swarm's timers ran late",
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
}

impl Matched {
    pub fn ok(&self) -> bool {
        self.unmatched_client == 0 && self.unmatched_server == 0
    }
}

type Identity = (u32, u32, u32);

/// The live-only inputs of one run.
#[derive(Debug)]
pub(crate) struct LiveAccumulator {
    cfg: ServiceConfig,
    /// Arrival time by sequence number, to measure the wait of immediate admissions.
    arrival_us: HashMap<u64, u64>,
    /// (seq, admit_us) of responses the model admitted at once; resolved at the end so that
    /// log order does not matter.
    immediate: Vec<(u64, u64)>,
    /// (server arrivals, client attempts) per identity.
    identities: HashMap<Identity, (u64, u64)>,
    anonymous_arrivals: u64,
    server_arrivals: u64,
    client_attempts: u64,
    /// (seq, admit_us) of requests the model queued: each waited from its arrival to then.
    queued: Vec<(u64, u64)>,
    /// When each admitted request's work ended (admission + service time), µs.
    completions: Vec<u64>,
}

impl LiveAccumulator {
    pub(crate) fn new(cfg: ServiceConfig) -> Self {
        LiveAccumulator {
            cfg,
            arrival_us: HashMap::new(),
            immediate: Vec::new(),
            identities: HashMap::new(),
            anonymous_arrivals: 0,
            server_arrivals: 0,
            client_attempts: 0,
            queued: Vec::new(),
            completions: Vec::new(),
        }
    }

    pub(crate) fn arrival(&mut self, a: &Arrival) {
        self.server_arrivals += 1;
        self.arrival_us.insert(a.seq, a.t_us);
        match (a.client, a.op, a.attempt) {
            (Some(c), Some(o), Some(n)) => self.identities.entry((c, o, n)).or_default().0 += 1,
            _ => self.anonymous_arrivals += 1,
        }
    }

    pub(crate) fn attempt(&mut self, a: &Attempt) {
        self.client_attempts += 1;
        self.identities
            .entry((a.client, a.op, a.attempt))
            .or_default()
            .1 += 1;
    }

    pub(crate) fn response(&mut self, r: &Response) {
        let Some(admit) = r.admit_us.filter(|&t| t < MAX_T_US) else {
            return;
        };
        if r.immediate {
            self.immediate.push((r.seq, admit));
        } else {
            self.queued.push((r.seq, admit));
        }
        let service = self.cfg.timeline.service_time(
            std::time::Duration::from_micros(admit),
            self.cfg.service_time,
        );
        self.completions
            .push(admit.saturating_add(service.as_micros() as u64));
    }

    /// Whether `[from, to)` (µs) overlaps the freeze or the degraded window.
    fn disturbed(&self, from: u64, to: u64) -> bool {
        let t = &self.cfg.timeline;
        let spans = [
            t.freeze.map(|f| (f.start, f.end)),
            t.degraded.map(|d| (d.start, d.end)),
        ];
        spans.into_iter().flatten().any(|(s, e)| {
            let (s, e) = (s.as_micros() as u64, e.as_micros() as u64);
            s < to && e > from
        })
    }

    /// Total saturated time (µs) outside the outage and the completions within it.
    fn saturation(&self) -> (u64, u64) {
        let mut spells: Vec<(u64, u64)> = self
            .queued
            .iter()
            .filter_map(|(seq, admit)| {
                let t = *self.arrival_us.get(seq)?;
                (t < *admit && !self.disturbed(t, *admit)).then_some((t, *admit))
            })
            .collect();
        spells.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (a, b) in spells {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let mut done = self.completions.clone();
        done.sort_unstable();
        let mut count = 0;
        for &(a, b) in &merged {
            // Completions in (a, b]: the one at b is what admitted the last waiting request.
            let lo = done.partition_point(|&t| t <= a);
            let hi = done.partition_point(|&t| t <= b);
            count += (hi - lo) as u64;
        }
        (merged.iter().map(|(a, b)| b - a).sum(), count)
    }

    pub(crate) fn finish(self, lateness: &Histogram<u64>) -> (Fidelity, Matched) {
        let mut queueing = histogram();
        for (seq, admit) in &self.immediate {
            if let Some(&t) = self.arrival_us.get(seq) {
                queueing.saturating_record(admit.saturating_sub(t));
            }
        }
        let configured_rps = self.cfg.capacity_per_s();
        let (saturated_us, done) = self.saturation();
        let saturated_s = saturated_us as f64 / 1e6;
        let achieved_rps = (saturated_s >= MIN_SATURATED_S).then(|| done as f64 / saturated_s);
        let fidelity = Fidelity {
            lateness_p50_ms: quantile_ms(lateness, 0.5),
            lateness_p99_ms: quantile_ms(lateness, 0.99),
            lateness_max_ms: if lateness.is_empty() {
                0.0
            } else {
                lateness.max() as f64 / 1000.0
            },
            queueing_samples: queueing.len(),
            queueing_p99_ms: quantile_ms(&queueing, 0.99),
            queueing_max_ms: if queueing.is_empty() {
                0.0
            } else {
                queueing.max() as f64 / 1000.0
            },
            saturated_s,
            achieved_rps,
            configured_rps,
            ratio: achieved_rps.map(|a| a / configured_rps),
        };
        let matched: u64 = self.identities.values().map(|&(s, c)| s.min(c)).sum();
        let matched = Matched {
            client_attempts: self.client_attempts,
            server_arrivals: self.server_arrivals,
            matched,
            unmatched_client: self.client_attempts - matched,
            unmatched_server: self.server_arrivals - matched,
        };
        (fidelity, matched)
    }
}

#[cfg(test)]
mod tests {
    use e03_core::events::{AttemptEnd, Cause, RunTag};
    use e03_core::{Params, Scenario};

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
        }
    }

    #[test]
    fn throughput_while_saturated_is_completions_per_second_of_queueing() {
        // Defaults: 10 workers x 40 ms = 250 req/s. From 2.0 s to 3.0 s a request is always
        // waiting: a queued request arrives at 2.0 s and is admitted at 3.0 s, and the workers
        // complete 250 requests in (2.0 s, 3.0 s]. A completion at 5 s, outside any spell,
        // does not count; a spell at 9 s (in the freeze) is left out.
        let mut a = RunAccumulator::new(Scenario::E03B, &Params::default(), "C", 1);
        a.arrival_event(&arrival(0, 2_000_000, None));
        a.response(&response(0, Cause::Ok, Some(3_000_000), false));
        // Completions at 2.004 s, 2.008 s, ... 3.000 s: 250 of them.
        for i in 1..=250u64 {
            a.response(&response(i, Cause::Ok, Some(1_960_000 + i * 4_000), true));
        }
        a.response(&response(900, Cause::Ok, Some(4_960_000), true));
        a.arrival_event(&arrival(901, 9_000_000, None));
        a.response(&response(901, Cause::Ok, Some(9_800_000), false));
        let f = a.finish().fidelity.unwrap();
        assert!((f.saturated_s - 1.0).abs() < 1e-9, "{f:?}");
        assert_eq!(f.achieved_rps, Some(250.0), "{f:?}");
        assert_eq!(f.ratio, Some(1.0));
        assert_eq!(f.configured_rps, 250.0);
        assert!(f.warnings().is_empty());
    }

    #[test]
    fn too_little_saturation_reports_no_ratio() {
        let mut a = RunAccumulator::new(Scenario::E03A, &Params::default(), "C", 1);
        a.arrival_event(&arrival(0, 1_000_000, None));
        a.response(&response(0, Cause::Ok, Some(1_040_000), false));
        a.response(&response(1, Cause::Ok, Some(1_000_000), true));
        let f = a.finish().fidelity.unwrap();
        assert!((f.saturated_s - 0.04).abs() < 1e-9);
        assert_eq!((f.achieved_rps, f.ratio), (None, None));
    }

    #[test]
    fn queueing_outside_the_model_and_lateness_warn_past_their_thresholds() {
        let mut a = RunAccumulator::new(Scenario::E03A, &Params::default(), "C", 1);
        a.arrival_event(&arrival(0, 1_000, Some((1, 0, 1))));
        a.arrival_event(&arrival(1, 2_000, Some((2, 0, 1))));
        a.response(&response(0, Cause::Ok, Some(1_500), true)); // 0.5 ms outside the model
        a.response(&response(1, Cause::Ok, Some(9_000), false)); // queued by the model: not counted
        a.attempt(1, 0, 5_000); // 5 ms late
        let f = a.finish().fidelity.unwrap();
        assert_eq!(f.queueing_samples, 1);
        assert!((f.queueing_max_ms - 0.5).abs() < 0.01, "{f:?}");
        assert!((f.lateness_p99_ms - 5.0).abs() < 0.01, "{f:?}");
        let w = f.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("lateness"));
    }

    #[test]
    fn identities_are_matched_both_ways() {
        let mut a = RunAccumulator::new(Scenario::E03B, &Params::default(), "C", 1);
        a.arrival_event(&arrival(0, 10, Some((1, 0, 1))));
        a.arrival_event(&arrival(1, 20, Some((1, 0, 2))));
        a.arrival_event(&arrival(2, 30, None)); // a request without identity
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
        };
        a.attempt_event(&attempt(1, 1));
        a.attempt_event(&attempt(1, 2));
        a.attempt_event(&attempt(7, 1)); // never arrived
        let m = a.finish().matched.unwrap();
        assert_eq!(
            m,
            Matched {
                client_attempts: 3,
                server_arrivals: 3,
                matched: 2,
                unmatched_client: 1,
                unmatched_server: 1
            }
        );
        assert!(!m.ok());
    }
}
