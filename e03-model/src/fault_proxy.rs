//! The HTTP fault proxy's decisions (`lab proxy --http`): for each request, at `now` on the
//! scenario's timeline, whether it is forwarded to the upstream, answered by the proxy, held or
//! reset. Sans IO, no clock: the proxy's driver gives `now` and carries out the [`Decision`].
//!
//! A scenario's timeline drives it as the dependency's phases drive the lab's own service:
//!
//! - `down`: the phase's status, after its latency, never forwarded (cause `down`);
//! - `freeze`: held until the freeze ends, then 503 (cause `freeze`), as the lab's service
//!   releases what it held;
//! - `rate_limited`: the phase's sliding window ([`crate::sliding_window`], the service's own
//!   rule); a request over the limit is answered 429 with `Retry-After` in whole seconds
//!   (rounded up: a client that honours it never comes back early), the others are forwarded;
//! - `abort`, `delay`, `hang`, `reset` ([`crate::http_fault`]): the phase's fault on the
//!   requests its rule picks, the others forwarded.
//!
//! - `degraded`: forwarded, and the answer held until the upstream's own time divided by the
//!   capacity factor has passed: the model's degraded service (its service time divided by the
//!   factor). A real service's capacity is not taken: an upstream without a bound on its
//!   workers is only slowed.
//!
//! The wire's phases (`refused`, `toxic`: `lab proxy` without `--http`) are refused before a
//! run ([`FaultProxy::cannot_apply`]).

use std::collections::HashMap;
use std::time::Duration;

use rand::Rng;

use crate::cause::Cause;
use crate::http_fault::{HttpFault, HttpFaultRule, RequestView, RetryAfter};
use crate::rng::LabRng;
use crate::sliding_window::SlidingWindow;
use crate::timeline::{Phase, Timeline};

/// The longest delay an Envoy fault header may ask for: an hour (Envoy takes any `u64` of
/// milliseconds; the proxy holds a request no longer than its phases may).
pub const MAX_HEADER_DELAY: Duration = Duration::from_secs(3600);

/// What the proxy does with a request, after [`Decision::wait`].
#[derive(Debug, Clone, PartialEq)]
pub enum Act {
    /// Forward it; `lose_answer`: reset the caller's connection once the upstream answered;
    /// `throughput_kib_s`: send the answer's body at most this fast (an Envoy header's limit);
    /// `capacity_factor`: a degraded phase's, the answer held until the upstream's time divided
    /// by it has passed (the model's degraded service: its service time divided by the factor).
    Forward {
        lose_answer: bool,
        throughput_kib_s: Option<u64>,
        capacity_factor: Option<f64>,
    },
    /// Answer it without forwarding.
    Answer {
        status: u16,
        retry_after: Option<RetryAfter>,
        body: Option<String>,
        cause: Cause,
    },
    /// Never answer it.
    Hang,
    /// Reset the caller's connection without forwarding.
    Reset,
}

/// The proxy's decision about one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// How long after its arrival the act happens (a delay, a down phase's latency, the rest
    /// of a freeze).
    pub wait: Duration,
    pub act: Act,
    /// The fault applied, as records name it (`abort 503`, `down 503`, `rate_limited 429`,
    /// `freeze`, `delay 200 ms`, ...); `None`: forwarded untouched.
    pub fault: Option<String>,
    /// Why a rule passed the request by, when it could not tell (no operation key).
    pub note: Option<String>,
}

impl Decision {
    fn forward() -> Self {
        Decision {
            wait: Duration::ZERO,
            act: Act::Forward {
                lose_answer: false,
                throughput_kib_s: None,
                capacity_factor: None,
            },
            fault: None,
            note: None,
        }
    }

    fn answer(wait: Duration, status: u16, cause: Cause, fault: String) -> Self {
        Decision {
            wait,
            act: Act::Answer {
                status,
                retry_after: None,
                body: None,
                cause,
            },
            fault: Some(fault),
            note: None,
        }
    }
}

/// The HTTP fault proxy's state: the timeline, a rate-limited phase's window, the requests
/// seen of each operation (a rule's `first`) and the draws.
#[derive(Debug)]
pub struct FaultProxy {
    timeline: Timeline,
    limiter: SlidingWindow,
    /// Requests seen per (HTTP fault phase, operation).
    seen: HashMap<(usize, String), u32>,
    rng: LabRng,
}

impl FaultProxy {
    /// `rng`: the proxy's draws (a rule's share, a delay's length).
    pub fn new(timeline: Timeline, rng: LabRng) -> Self {
        FaultProxy {
            timeline,
            limiter: SlidingWindow::default(),
            seen: HashMap::new(),
            rng,
        }
    }

    /// What of `timeline` a proxy cannot apply to a real upstream, named as a scenario file
    /// names the phase, with why; `None`: all of it.
    pub fn cannot_apply(timeline: &Timeline) -> Option<(&'static str, &'static str)> {
        if let Some(w) = timeline.wire.first() {
            return Some((
                if w.fault == crate::timeline::WireFault::Refused {
                    "refused"
                } else {
                    "toxic"
                },
                "a fault on the wire is lab proxy's without --http (docs/wire.md)",
            ));
        }
        None
    }

    /// A draw in `[0, 1)` from the proxy's stream (for faults chosen by headers).
    pub fn draw(&mut self) -> f64 {
        self.rng.random::<f64>()
    }

    /// The decision about `req`, arrived at `now`, with Envoy's fault headers honoured
    /// (`--fault-headers`, [`crate::fault_headers`]) where the scenario's phase leaves the
    /// request untouched: the scenario's faults come first. Envoy's order: the delay, then the
    /// abort once it ended, and the answer's throughput limit when it is forwarded. A delay is
    /// held at most [`MAX_HEADER_DELAY`].
    pub fn decide_with_headers(&mut self, now: Duration, req: &RequestView) -> Decision {
        let mut d = self.decide(now, req);
        if d.fault.is_some() {
            return d;
        }
        let asked = crate::fault_headers::read(req.headers);
        d.note = d
            .note
            .take()
            .into_iter()
            .chain(
                asked
                    .ignored
                    .iter()
                    .map(|i| format!("ignored {}: {:?}: {}", i.header, i.value, i.reason)),
            )
            .reduce(|a, b| format!("{a}; {b}"));
        let chosen = asked.decide([self.draw(), self.draw(), self.draw()]);
        let mut labels = Vec::new();
        if let Some(delay) = chosen.delay {
            d.wait = delay.min(MAX_HEADER_DELAY);
            labels.push(format!("header delay {} ms", d.wait.as_millis()));
        }
        if let Some(status) = chosen.abort {
            d.act = Act::Answer {
                status,
                retry_after: None,
                body: None,
                cause: Cause::Injected,
            };
            labels.push(format!("header abort {status}"));
        } else if let Some(kib) = chosen.throughput_kib_s {
            d.act = Act::Forward {
                lose_answer: false,
                throughput_kib_s: Some(kib),
                capacity_factor: None,
            };
            labels.push(format!("header throughput {kib} KiB/s"));
        }
        if !labels.is_empty() {
            d.fault = Some(labels.join(", "));
        }
        d
    }

    /// The decision about `req`, arrived at `now`.
    pub fn decide(&mut self, now: Duration, req: &RequestView) -> Decision {
        match self.timeline.phase(now) {
            Phase::Down(status) => {
                let latency = self
                    .timeline
                    .down_at(now)
                    .map_or(Duration::ZERO, |d| d.latency);
                return Decision::answer(latency, status, Cause::Down, format!("down {status}"));
            }
            Phase::Frozen => {
                let end = self.timeline.freeze.map_or(now, |f| f.end);
                return Decision::answer(
                    end.saturating_sub(now),
                    503,
                    Cause::Freeze,
                    "freeze".into(),
                );
            }
            Phase::Degraded => {
                let mut d = Decision::forward();
                d.act = Act::Forward {
                    lose_answer: false,
                    throughput_kib_s: None,
                    capacity_factor: self.timeline.degraded.map(|g| g.capacity_factor),
                };
                d.fault = self
                    .timeline
                    .degraded
                    .map(|g| format!("degraded {:.0}%", g.capacity_factor * 100.0));
                return d;
            }
            Phase::Normal => {}
        }
        if let Some((i, limit)) = self.timeline.rate_limit_at(now) {
            let limit = *limit;
            if let Some(wait) = self.limiter.check(i, &limit, now) {
                let mut d = Decision::answer(
                    Duration::ZERO,
                    429,
                    Cause::RateLimited,
                    "rate_limited 429".into(),
                );
                if let Act::Answer { retry_after, .. } = &mut d.act {
                    *retry_after = Some(RetryAfter {
                        seconds: wait.as_micros().div_ceil(1_000_000) as u32,
                        as_date: false,
                    });
                }
                return d;
            }
            return Decision::forward();
        }
        let Some((i, w)) = self
            .timeline
            .http
            .iter()
            .enumerate()
            .find(|(_, w)| now >= w.start && now < w.end)
        else {
            return Decision::forward();
        };
        let rule = w.rule.clone();
        self.apply(i, &rule, req)
    }

    fn apply(&mut self, phase: usize, rule: &HttpFaultRule, req: &RequestView) -> Decision {
        if !rule.matches.matches(req) {
            return Decision::forward();
        }
        if let Some(first) = &rule.first {
            let Some(op) = first.key.of(req) else {
                let mut d = Decision::forward();
                d.note = Some(format!(
                    "{} phase: no operation key ({})",
                    rule.fault.phase_name(),
                    first.key.spelling()
                ));
                return d;
            };
            let seen = self.seen.entry((phase, op)).or_insert(0);
            *seen += 1;
            if *seen > first.n {
                return Decision::forward();
            }
        }
        // Every request that reaches here draws, so a share's draws do not depend on timing.
        let draw = self.draw();
        if !rule.drawn(draw) {
            return Decision::forward();
        }
        let fault = Some(rule.fault.label());
        let (wait, act) = match &rule.fault {
            HttpFault::Abort {
                status,
                retry_after,
                body,
            } => (
                Duration::ZERO,
                Act::Answer {
                    status: *status,
                    retry_after: *retry_after,
                    body: body.clone(),
                    cause: Cause::Injected,
                },
            ),
            HttpFault::Delay { min, max } => {
                let span = max.saturating_sub(*min);
                let wait = *min + span.mul_f64(self.draw());
                (
                    wait,
                    Act::Forward {
                        lose_answer: false,
                        throughput_kib_s: None,
                        capacity_factor: None,
                    },
                )
            }
            HttpFault::Hang => (Duration::ZERO, Act::Hang),
            HttpFault::Reset {
                after_upstream: false,
            } => (Duration::ZERO, Act::Reset),
            HttpFault::Reset {
                after_upstream: true,
            } => (
                Duration::ZERO,
                Act::Forward {
                    lose_answer: true,
                    throughput_kib_s: None,
                    capacity_factor: None,
                },
            ),
        };
        Decision {
            wait,
            act,
            fault,
            note: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http_fault::{FirstOf, HttpFaultWindow, OperationKey};
    use crate::timeline::{DownWindow, FreezeWindow, RateLimitWindow};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn proxy(timeline: Timeline) -> FaultProxy {
        FaultProxy::new(
            timeline,
            crate::rng::stream(42, crate::rng::Stream::Wire, 0),
        )
    }

    const GET: RequestView = RequestView {
        method: "GET",
        path: "/",
        headers: &[],
    };

    #[test]
    fn the_dependency_s_phases_answer_as_the_lab_s_service_does() {
        let mut p = proxy(Timeline {
            down: vec![DownWindow {
                start: ms(1000),
                end: ms(2000),
                status: 503,
                latency: ms(20),
            }],
            freeze: Some(FreezeWindow {
                start: ms(3000),
                end: ms(4000),
            }),
            rate_limited: vec![RateLimitWindow {
                start: ms(5000),
                end: ms(9000),
                calls: 2,
                window: ms(1000),
                count_rejected: false,
                retry_after: None,
            }],
            ..Timeline::default()
        });
        assert_eq!(p.decide(ms(999), &GET), Decision::forward());
        let down = p.decide(ms(1000), &GET);
        assert_eq!(down.wait, ms(20));
        assert_eq!(down.fault.as_deref(), Some("down 503"));
        let frozen = p.decide(ms(3250), &GET);
        assert_eq!(frozen.wait, ms(750), "held to the freeze's end");
        assert!(matches!(
            frozen.act,
            Act::Answer {
                status: 503,
                cause: Cause::Freeze,
                ..
            }
        ));
        // Two calls a second: the third at 5.4 s waits until the first leaves at 6.0 s: 0.6 s,
        // sent as 1 s (rounded up).
        assert_eq!(p.decide(ms(5000), &GET), Decision::forward());
        assert_eq!(p.decide(ms(5100), &GET), Decision::forward());
        let limited = p.decide(ms(5400), &GET);
        assert_eq!(
            limited.act,
            Act::Answer {
                status: 429,
                retry_after: Some(RetryAfter {
                    seconds: 1,
                    as_date: false
                }),
                body: None,
                cause: Cause::RateLimited
            }
        );
        assert_eq!(p.decide(ms(6000), &GET), Decision::forward());
    }

    #[test]
    fn a_degraded_phase_holds_the_upstream_s_answer_as_its_capacity_says() {
        use crate::timeline::DegradedWindow;
        let mut p = proxy(Timeline {
            degraded: Some(DegradedWindow {
                start: ms(0),
                end: ms(1000),
                capacity_factor: 0.25,
            }),
            ..Timeline::default()
        });
        let d = p.decide(ms(10), &GET);
        assert_eq!(
            d.act,
            Act::Forward {
                lose_answer: false,
                throughput_kib_s: None,
                capacity_factor: Some(0.25)
            }
        );
        assert_eq!(d.fault.as_deref(), Some("degraded 25%"));
        assert_eq!(FaultProxy::cannot_apply(&p.timeline), None);
        assert_eq!(p.decide(ms(1000), &GET), Decision::forward());
    }

    #[test]
    fn the_first_n_of_each_operation_are_faulted_and_keyless_requests_pass() {
        let rule = HttpFaultRule {
            first: Some(FirstOf {
                n: 2,
                key: OperationKey::IdempotencyKey,
            }),
            ..HttpFaultRule::every(HttpFault::Abort {
                status: 503,
                retry_after: None,
                body: None,
            })
        };
        let mut p = proxy(Timeline {
            http: vec![HttpFaultWindow {
                start: ms(0),
                end: ms(10_000),
                rule,
            }],
            ..Timeline::default()
        });
        let req = |key: &'static [(&'static str, &'static str)]| RequestView {
            method: "POST",
            path: "/charge",
            headers: key,
        };
        let a = req(&[("Idempotency-Key", "a")]);
        let b = req(&[("idempotency-key", "b")]);
        let faulted = |d: &Decision| d.fault.as_deref() == Some("abort 503");
        assert!(faulted(&p.decide(ms(1), &a)));
        assert!(faulted(&p.decide(ms(2), &b)));
        assert!(faulted(&p.decide(ms(3), &a)));
        assert_eq!(p.decide(ms(4), &a), Decision::forward(), "a's third");
        assert!(faulted(&p.decide(ms(5), &b)));
        assert_eq!(p.decide(ms(6), &b), Decision::forward(), "b's third");
        let none = p.decide(ms(7), &req(&[]));
        assert_eq!(
            none.act,
            Act::Forward {
                lose_answer: false,
                throughput_kib_s: None,
                capacity_factor: None
            }
        );
        assert_eq!(
            none.note.as_deref(),
            Some("abort phase: no operation key (idempotency-key)")
        );
        // After the phase, every request is forwarded.
        assert_eq!(p.decide(ms(10_000), &a), Decision::forward());
    }

    #[test]
    fn envoy_s_headers_choose_a_fault_where_the_scenario_leaves_the_request_alone() {
        let mut p = proxy(Timeline {
            down: vec![DownWindow {
                start: ms(1000),
                end: ms(2000),
                status: 503,
                latency: ms(0),
            }],
            ..Timeline::default()
        });
        let headers = [
            ("x-envoy-fault-delay-request", "200"),
            ("x-envoy-fault-abort-request", "429"),
            ("x-envoy-fault-abort-grpc-request", "14"),
        ];
        let req = RequestView {
            method: "GET",
            path: "/",
            headers: &headers,
        };
        let d = p.decide_with_headers(ms(10), &req);
        assert_eq!(d.wait, ms(200));
        assert_eq!(
            d.fault.as_deref(),
            Some("header delay 200 ms, header abort 429")
        );
        assert!(matches!(
            d.act,
            Act::Answer {
                status: 429,
                cause: Cause::Injected,
                ..
            }
        ));
        assert!(
            d.note
                .as_deref()
                .unwrap()
                .contains("ignored x-envoy-fault-abort-grpc-request"),
            "{d:?}"
        );
        // The scenario's down phase comes first.
        let d = p.decide_with_headers(ms(1500), &req);
        assert_eq!(d.fault.as_deref(), Some("down 503"));
        let limit = [("X-Envoy-Fault-Throughput-Response", "64")];
        let d = p.decide_with_headers(
            ms(10),
            &RequestView {
                method: "GET",
                path: "/",
                headers: &limit,
            },
        );
        assert_eq!(
            d.act,
            Act::Forward {
                lose_answer: false,
                throughput_kib_s: Some(64),
                capacity_factor: None
            }
        );
        // Without a header: forwarded untouched.
        assert_eq!(p.decide_with_headers(ms(10), &GET), Decision::forward());
    }

    #[test]
    fn a_share_faults_about_its_share_and_a_reset_after_forwards_first() {
        let window = |rule| HttpFaultWindow {
            start: ms(0),
            end: ms(1000),
            rule,
        };
        let mut rule = HttpFaultRule::every(HttpFault::Reset {
            after_upstream: true,
        });
        rule.percent = 10.0;
        let mut p = proxy(Timeline {
            http: vec![window(rule)],
            ..Timeline::default()
        });
        let faulted = (0..10_000)
            .filter(|_| p.decide(ms(5), &GET).fault.is_some())
            .count();
        assert!((900..1100).contains(&faulted), "{faulted} of 10000 at 10 %");
        let mut p = proxy(Timeline {
            http: vec![window(HttpFaultRule::every(HttpFault::Reset {
                after_upstream: true,
            }))],
            ..Timeline::default()
        });
        assert_eq!(
            p.decide(ms(5), &GET).act,
            Act::Forward {
                lose_answer: true,
                throughput_kib_s: None,
                capacity_factor: None
            }
        );
        let mut p = proxy(Timeline {
            http: vec![window(HttpFaultRule::every(HttpFault::Delay {
                min: ms(100),
                max: ms(300),
            }))],
            ..Timeline::default()
        });
        for _ in 0..100 {
            let d = p.decide(ms(5), &GET);
            assert!(d.wait >= ms(100) && d.wait <= ms(300), "{:?}", d.wait);
            assert_eq!(
                d.act,
                Act::Forward {
                    lose_answer: false,
                    throughput_kib_s: None,
                    capacity_factor: None
                }
            );
        }
    }
}
