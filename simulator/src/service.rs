//! The dependency's side of the simulation: nothing of its own. The core's
//! [`DependencySchedule`] holds the model, its due instants (ends of work, late answers, freeze
//! edges) and their order within an instant; the engine drives it on the virtual clock exactly
//! as the live service drives it on the wall clock.
//!
//! [`replay`] drives it alone with a recorded list of arrival times and returns every decision,
//! so it can be checked against the live service's log or the model driven by hand.

use std::time::Duration;

use e03_model::dependency::ServiceConfig;
use e03_model::schedule::Step;
use e03_model::{Admission, DependencySchedule, ReqId};

use crate::queue::Nanos;

pub(crate) fn nanos(d: Duration) -> Nanos {
    d.as_nanos() as Nanos
}

pub(crate) fn dur(t: Nanos) -> Duration {
    Duration::from_nanos(t)
}

/// One decision of the dependency, at a virtual time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// What `arrive` decided for a request.
    Admitted {
        t: Nanos,
        req: ReqId,
        admission: Admission,
    },
    /// A queued request got a worker.
    Started {
        t: Nanos,
        req: ReqId,
        service: Duration,
    },
    /// A request was answered (handed to its connection).
    Answered { t: Nanos, req: ReqId, status: u16 },
}

/// Replays a recorded list of arrival times (request `i` arrives at `arrivals[i]`, in
/// non-decreasing order; its fault key is `i`) through the dependency's schedule alone, and
/// returns every decision in the order it was taken. At one instant the schedule's rules hold:
/// freeze edges, then ends of work, then late answers, then arrivals (work due at an arrival's
/// instant is done before deciding about the arrival).
pub fn replay(cfg: ServiceConfig, arrivals: &[Duration]) -> Vec<Decision> {
    let mut service = DependencySchedule::new(cfg);
    let mut steps = Vec::new();
    let mut out = Vec::with_capacity(arrivals.len() * 3);
    for (i, at) in arrivals.iter().enumerate() {
        let req = i as ReqId;
        service.advance(*at, &mut steps);
        record(steps.drain(..), &mut out);
        let admission = service.arrive(*at, req, req, &mut steps);
        out.push(Decision::Admitted {
            t: nanos(*at),
            req,
            admission,
        });
        record(steps.drain(..), &mut out);
    }
    service.advance(Duration::MAX, &mut steps);
    record(steps.drain(..), &mut out);
    out
}

fn record(steps: impl Iterator<Item = Step>, out: &mut Vec<Decision>) {
    out.extend(steps.map(|step| match step {
        Step::Answer(a) => Decision::Answered {
            t: nanos(a.at),
            req: a.req,
            status: a.status,
        },
        Step::Started { req, at, service } => Decision::Started {
            t: nanos(at),
            req,
            service,
        },
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::rng::{stream, Stream};
    use e03_model::{Completion, DependencyModel};
    use e03_plan::{Params, Scenario};
    use rand::Rng;

    /// The model driven by hand, the obvious way, without an event queue: before each arrival,
    /// apply everything due at or before its instant, earliest first; at one instant a freeze
    /// edge first, then ends of work by request id, then late answers by request id (the live
    /// service's rules).
    struct ByHand {
        m: DependencyModel,
        /// Pending ends of work and late answers: (time, req, late status).
        pending: Vec<(Nanos, ReqId, Option<u16>)>,
        /// Freeze edges not yet applied: (time, begins).
        edges: Vec<(Nanos, bool)>,
        out: Vec<Decision>,
    }

    impl ByHand {
        fn schedule(&mut self, t: Nanos, req: ReqId, late: Option<u16>) {
            self.pending.push((t, req, late));
        }

        fn run_until(&mut self, until: Nanos) {
            loop {
                let work = (0..self.pending.len())
                    .filter(|i| self.pending[*i].0 <= until)
                    .min_by_key(|i| {
                        let (t, req, late) = self.pending[*i];
                        (t, late.is_some(), req)
                    });
                let edge = self.edges.first().copied().filter(|e| e.0 <= until);
                match (work, edge) {
                    (w, Some((te, begins))) if w.is_none_or(|i| te <= self.pending[i].0) => {
                        self.edges.remove(0);
                        if begins {
                            self.m.freeze_begins(dur(te));
                        } else {
                            for req in self.m.freeze_ends(dur(te)) {
                                self.out.push(Decision::Answered {
                                    t: te,
                                    req,
                                    status: 503,
                                });
                            }
                        }
                    }
                    (Some(i), _) => {
                        let (t, req, late) = self.pending.remove(i);
                        if let Some(status) = late {
                            self.out.push(Decision::Answered { t, req, status });
                            continue;
                        }
                        let done = self.m.work_done(dur(t), req);
                        match done.completion {
                            Completion::Respond(status)
                            | Completion::Lost(status)
                            | Completion::Permanent(status) => {
                                self.out.push(Decision::Answered { t, req, status })
                            }
                            Completion::RespondLate(status, d) => {
                                self.schedule(t + nanos(d), req, Some(status))
                            }
                            Completion::Timeout => self.out.push(Decision::Answered {
                                t,
                                req,
                                status: e03_model::faults::TIMEOUT_STATUS,
                            }),
                            Completion::Cutoff => self.out.push(Decision::Answered {
                                t,
                                req,
                                status: e03_model::faults::CUTOFF_STATUS,
                            }),
                            Completion::Stale => {}
                        }
                        if let Some((next, service)) = done.next {
                            self.out.push(Decision::Started {
                                t,
                                req: next,
                                service,
                            });
                            self.schedule(t + nanos(service), next, None);
                        }
                    }
                    _ => return,
                }
            }
        }
    }

    fn by_hand(cfg: ServiceConfig, arrivals: &[Duration]) -> Vec<Decision> {
        let edges = cfg
            .timeline
            .freeze
            .map(|f| vec![(nanos(f.start), true), (nanos(f.end), false)])
            .unwrap_or_default();
        let mut h = ByHand {
            m: DependencyModel::new(cfg),
            pending: Vec::new(),
            edges,
            out: Vec::new(),
        };
        for (i, at) in arrivals.iter().enumerate() {
            let t = nanos(*at);
            h.run_until(t);
            let req = i as ReqId;
            let admission = h.m.arrive(*at, req, req);
            h.out.push(Decision::Admitted { t, req, admission });
            match admission {
                Admission::Start { service } => h.schedule(t + nanos(service), req, None),
                Admission::Rejected | Admission::Limited | Admission::Shed => {
                    h.out.push(Decision::Answered {
                        t,
                        req,
                        status: 503,
                    })
                }
                Admission::Refused { status, .. } => {
                    h.out.push(Decision::Answered { t, req, status })
                }
                Admission::Throttled { .. } => h.out.push(Decision::Answered {
                    t,
                    req,
                    status: 429,
                }),
                Admission::Late => h.out.push(Decision::Answered {
                    t,
                    req,
                    status: e03_model::chain::DEADLINE_STATUS,
                }),
                Admission::Queued | Admission::Held => {}
            }
        }
        h.run_until(Nanos::MAX);
        h.out
    }

    /// A bursty arrival list at microsecond resolution: quiet, then bursts that overflow the
    /// queue, across the freeze and the degraded window.
    fn arrivals(seed: u64, n: usize, span_us: u64) -> Vec<Duration> {
        let mut rng = stream(seed, Stream::Think, 0);
        let mut v: Vec<u64> = (0..n).map(|_| rng.random_range(0..span_us)).collect();
        // Bursts: 300 requests inside 5 ms at 3 s and at 10.0 s (the freeze's end).
        v.extend((0..300).map(|i| 3_000_000 + i * 16));
        v.extend((0..300).map(|i| 10_000_000 + i * 16));
        v.sort_unstable();
        v.into_iter().map(Duration::from_micros).collect()
    }

    #[test]
    fn outage_decisions_equal_the_model_driven_by_hand() {
        let params = Params::default();
        let cfg = params.service_config(&Scenario::e03b(), 42);
        let list = arrivals(1, 3000, 20_000_000);
        let sim = replay(cfg.clone(), &list);
        let hand = by_hand(cfg, &list);
        assert_eq!(sim.len(), hand.len());
        assert_eq!(sim, hand);
        // The list exercises every kind of admission.
        let kinds = |want: fn(&Admission) -> bool| {
            sim.iter()
                .filter(|d| matches!(d, Decision::Admitted { admission, .. } if want(admission)))
                .count()
        };
        assert!(kinds(|a| matches!(a, Admission::Start { .. })) > 0);
        assert!(kinds(|a| matches!(a, Admission::Queued)) > 0);
        assert!(kinds(|a| matches!(a, Admission::Rejected)) > 0);
        assert!(kinds(|a| matches!(a, Admission::Held)) > 0);
    }

    #[test]
    fn transient_fault_decisions_equal_the_model_driven_by_hand() {
        let params = Params::default();
        let cfg = params.service_config(&Scenario::e03a(), 7);
        let list = arrivals(2, 3000, 20_000_000);
        let sim = replay(cfg.clone(), &list);
        assert_eq!(sim, by_hand(cfg, &list));
        let late = sim
            .iter()
            .filter(|d| matches!(d, Decision::Answered { status: 200, .. }))
            .count();
        let failed = sim
            .iter()
            .filter(|d| matches!(d, Decision::Answered { status: 503, .. }))
            .count();
        assert!(late > 0 && failed > 0);
    }

    #[test]
    fn work_ending_at_an_arrivals_instant_frees_its_worker_first() {
        let mut cfg = Params::default().service_config(&Scenario::e03a(), 1);
        cfg.faults = Default::default();
        (cfg.workers, cfg.queue) = (1, 0);
        let ms = Duration::from_millis;
        let d = replay(cfg, &[ms(0), ms(40), ms(40)]);
        let admissions: Vec<(ReqId, Admission)> = d
            .iter()
            .filter_map(|d| match d {
                Decision::Admitted { req, admission, .. } => Some((*req, *admission)),
                _ => None,
            })
            .collect();
        let start = Admission::Start { service: ms(40) };
        assert_eq!(
            admissions,
            [(0, start), (1, start), (2, Admission::Rejected)]
        );
        // Request 0 is answered at 40 ms before request 1 is admitted at 40 ms.
        let t40 = 40 * 1_000_000;
        assert_eq!(
            d[1..3],
            [
                Decision::Answered {
                    t: t40,
                    req: 0,
                    status: 200
                },
                Decision::Admitted {
                    t: t40,
                    req: 1,
                    admission: start
                },
            ]
        );
    }

    #[test]
    fn every_request_is_answered_exactly_once() {
        let params = Params::default();
        let list = arrivals(3, 2000, 20_000_000);
        let sim = replay(params.service_config(&Scenario::e03b(), 1), &list);
        let mut answered = vec![0u32; list.len()];
        for d in &sim {
            if let Decision::Answered { req, .. } = d {
                answered[*req as usize] += 1;
            }
        }
        assert!(answered.iter().all(|n| *n == 1));
    }
}
