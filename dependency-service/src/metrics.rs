//! The service's Prometheus metrics, served as text at `GET /metrics` on the work listener.
//!
//! Built on the `prometheus-client` crate (its registry and text encoder); no hand-written
//! exposition. Names follow the OpenTelemetry HTTP semantic conventions where they fit
//! (`http_server_request_duration_seconds`, `http_server_active_requests`); the lab's own
//! metrics carry the prefix `e03_dependency_`.
//!
//! Per-request cost: the counters are atomics, resolved once at start for every label value
//! they can take (no map lookup per request). The duration histogram is looked up by status
//! code in its family (a read lock) and `prometheus-client`'s histogram takes its own short
//! lock per observation. The gauges that describe the model (queue depth, busy workers, phase)
//! cost nothing per request: they are read from the current run when `/metrics` is scraped.

use std::sync::Arc;
use std::time::Duration;

use e03_model::dependency::Admission;
use e03_model::events::Cause;
use e03_model::timeline::Phase;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upper bounds of the request duration buckets, seconds: from 0.5 ms to 10 s, fine around the
/// lab's 40 ms service time and its 2 s attempt timeout.
const DURATION_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0,
];

/// Every phase name `e03_dependency_phase` reports, so a dashboard sees each series from the
/// first scrape.
pub const PHASES: [&str; 4] = ["normal", "frozen", "degraded", "down"];

/// Every response cause, as logged (`cause` of a `response` record).
const CAUSES: [(Cause, &str); 15] = [
    (Cause::Ok, "ok"),
    (Cause::Fault, "fault"),
    (Cause::Slow, "slow"),
    (Cause::Full, "full"),
    (Cause::QueueTimeout, "queue_timeout"),
    (Cause::Limited, "limited"),
    (Cause::Shed, "shed"),
    (Cause::Deadline, "deadline"),
    (Cause::Freeze, "freeze"),
    (Cause::Down, "down"),
    (Cause::RateLimited, "rate_limited"),
    (Cause::Lost, "lost"),
    (Cause::Permanent, "permanent"),
    (Cause::Timeout, "timeout"),
    (Cause::Cutoff, "cutoff"),
];

/// The name of a timeline phase in `e03_dependency_phase{phase=..}`.
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Normal => "normal",
        Phase::Frozen => "frozen",
        Phase::Degraded => "degraded",
        Phase::Down(_) => "down",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    http_response_status_code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AdmissionLabels {
    decision: &'static str,
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabel {
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabel {
    phase: &'static str,
}

/// The model's state at a scrape: see [`Metrics::encode`].
pub struct ModelState {
    pub queued: usize,
    pub busy_workers: usize,
    /// The adaptive concurrency limit (`E03_CONCURRENCY_LIMIT`), if the run has one.
    pub concurrency_limit: Option<u32>,
    pub phase: Phase,
}

/// Counters resolved once per label value: the admission decisions.
struct Admissions {
    admitted: Counter,
    queued: Counter,
    held: Counter,
    refused_full: Counter,
    refused_down: Counter,
    refused_rate_limited: Counter,
    refused_deadline: Counter,
    refused_limited: Counter,
    refused_shed: Counter,
}

/// Every metric of the service and the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    duration: Family<StatusLabel, Histogram, fn() -> Histogram>,
    active: Gauge,
    arrivals: Counter,
    admissions: Admissions,
    responses: Vec<(Cause, Counter)>,
    late_answers: Counter,
    queue_depth: Gauge,
    busy_workers: Gauge,
    concurrency_limit: Gauge,
    phase: Family<PhaseLabel, Gauge>,
    run_active: Gauge,
}

fn new_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let duration = Family::<StatusLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            new_histogram,
        );
        registry.register(
            "http_server_request_duration_seconds",
            "Duration of GET /work requests, from the handler's start to its answer, by status",
            duration.clone(),
        );
        let active = Gauge::default();
        registry.register(
            "http_server_active_requests",
            "GET /work requests in the handler now",
            active.clone(),
        );
        let arrivals = Counter::default();
        registry.register(
            "e03_dependency_arrivals",
            "Arrivals logged by the current and past runs of this process",
            arrivals.clone(),
        );
        let admission_family = Family::<AdmissionLabels, Counter>::default();
        registry.register(
            "e03_dependency_admissions",
            "The model's decision on each arrival: admitted (a worker took it), queued, held \
             (frozen), refused (cause full or down)",
            admission_family.clone(),
        );
        let admission = |decision, cause| {
            admission_family
                .get_or_create(&AdmissionLabels { decision, cause })
                .clone()
        };
        let admissions = Admissions {
            admitted: admission("admitted", "none"),
            queued: admission("queued", "none"),
            held: admission("held", "none"),
            refused_full: admission("refused", "full"),
            refused_down: admission("refused", "down"),
            refused_rate_limited: admission("refused", "rate_limited"),
            refused_deadline: admission("refused", "deadline"),
            refused_limited: admission("refused", "limited"),
            refused_shed: admission("refused", "shed"),
        };
        let response_family = Family::<CauseLabel, Counter>::default();
        registry.register(
            "e03_dependency_responses",
            "Answers logged, by cause (as in the server log's response records)",
            response_family.clone(),
        );
        let responses = CAUSES
            .iter()
            .map(|&(cause, name)| {
                (
                    cause,
                    response_family
                        .get_or_create(&CauseLabel { cause: name })
                        .clone(),
                )
            })
            .collect();
        let late_answers = Counter::default();
        registry.register(
            "e03_dependency_late_answers",
            "Answers given late on purpose (E03-A's slow fate: cause slow)",
            late_answers.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "e03_dependency_queue_depth",
            "Requests waiting in the model's queue (read at scrape time)",
            queue_depth.clone(),
        );
        let busy_workers = Gauge::default();
        registry.register(
            "e03_dependency_busy_workers",
            "Workers of the model serving a request (read at scrape time)",
            busy_workers.clone(),
        );
        let concurrency_limit = Gauge::default();
        registry.register(
            "e03_dependency_concurrency_limit",
            "The adaptive concurrency limit now (aimd or gradient2; 0 without one, read at \
             scrape time)",
            concurrency_limit.clone(),
        );
        let phase = Family::<PhaseLabel, Gauge>::default();
        registry.register(
            "e03_dependency_phase",
            "1 for the timeline's current phase, 0 for the others (all 0 with no run)",
            phase.clone(),
        );
        for name in PHASES {
            let _ = phase.get_or_create(&PhaseLabel { phase: name });
        }
        let run_active = Gauge::default();
        registry.register(
            "e03_dependency_run_active",
            "1 while a run is in progress, else 0",
            run_active.clone(),
        );
        Metrics {
            registry,
            duration,
            active,
            arrivals,
            admissions,
            responses,
            late_answers,
            queue_depth,
            busy_workers,
            concurrency_limit,
            phase,
            run_active,
        }
    }

    /// A request entered the work handler; the guard counts it out when dropped (also when the
    /// client disconnects and hyper drops the handler).
    pub fn request_started(self: &Arc<Self>) -> ActiveRequest {
        self.active.inc();
        ActiveRequest {
            metrics: self.clone(),
        }
    }

    /// A work request was answered with `status` after `elapsed`.
    pub fn request_done(&self, status: u16, elapsed: Duration) {
        self.duration
            .get_or_create(&StatusLabel {
                http_response_status_code: status,
            })
            .observe(elapsed.as_secs_f64());
    }

    /// An arrival was logged.
    pub fn arrival(&self) {
        self.arrivals.inc();
    }

    /// The model decided about an arrival.
    pub fn admission(&self, admission: Admission) {
        let a = &self.admissions;
        match admission {
            Admission::Start { .. } => a.admitted.inc(),
            Admission::Queued => a.queued.inc(),
            Admission::Held => a.held.inc(),
            Admission::Rejected => a.refused_full.inc(),
            Admission::Refused { .. } => a.refused_down.inc(),
            Admission::Throttled { .. } => a.refused_rate_limited.inc(),
            Admission::Late => a.refused_deadline.inc(),
            Admission::Limited => a.refused_limited.inc(),
            Admission::Shed => a.refused_shed.inc(),
        };
    }

    /// An answer was logged with `cause`.
    pub fn response(&self, cause: Cause) {
        if let Some((_, c)) = self.responses.iter().find(|(k, _)| *k == cause) {
            c.inc();
        }
        if cause == Cause::Slow {
            self.late_answers.inc();
        }
    }

    /// The text exposition, with the model's gauges set from `state` (`None`: no run).
    pub fn encode(&self, state: Option<ModelState>) -> String {
        let current = state.as_ref().map(|s| phase_name(s.phase));
        for name in PHASES {
            self.phase
                .get_or_create(&PhaseLabel { phase: name })
                .set(i64::from(current == Some(name)));
        }
        let (queued, busy, limit) = state.map_or((0, 0, None), |s| {
            (s.queued, s.busy_workers, s.concurrency_limit)
        });
        self.queue_depth.set(queued as i64);
        self.busy_workers.set(busy as i64);
        self.concurrency_limit.set(limit.map_or(0, i64::from));
        self.run_active.set(i64::from(current.is_some()));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

/// Counts one request in `http_server_active_requests` while alive.
pub struct ActiveRequest {
    metrics: Arc<Metrics>,
}

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        self.metrics.active.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_counters_histogram_and_phase() {
        let m = Arc::new(Metrics::new());
        m.arrival();
        m.arrival();
        m.admission(Admission::Start {
            service: Duration::from_millis(40),
        });
        m.admission(Admission::Rejected);
        m.admission(Admission::Late);
        m.admission(Admission::Late);
        m.admission(Admission::Limited);
        m.admission(Admission::Shed);
        m.response(Cause::Shed);
        m.admission(Admission::Throttled {
            retry_after: Duration::from_millis(250),
        });
        m.response(Cause::Slow);
        m.response(Cause::RateLimited);
        let guard = m.request_started();
        m.request_done(503, Duration::from_millis(3));
        let text = m.encode(Some(ModelState {
            queued: 7,
            busy_workers: 10,
            concurrency_limit: Some(37),
            phase: Phase::Frozen,
        }));
        assert!(text.contains("e03_dependency_arrivals_total 2\n"), "{text}");
        assert!(text
            .contains("e03_dependency_admissions_total{decision=\"admitted\",cause=\"none\"} 1\n"));
        assert!(text
            .contains("e03_dependency_admissions_total{decision=\"refused\",cause=\"full\"} 1\n"));
        // Deadline-aware admission's refusals (E03_ADMISSION=deadline) are counted apart.
        assert!(text.contains(
            "e03_dependency_admissions_total{decision=\"refused\",cause=\"deadline\"} 2\n"
        ));
        assert!(text.contains(
            "e03_dependency_admissions_total{decision=\"refused\",cause=\"limited\"} 1\n"
        ));
        // Priority admission's sheds (E03_ADMISSION=priority), refusal and answer.
        assert!(text
            .contains("e03_dependency_admissions_total{decision=\"refused\",cause=\"shed\"} 1\n"));
        assert!(text.contains("e03_dependency_responses_total{cause=\"shed\"} 1\n"));
        assert!(text.contains("e03_dependency_responses_total{cause=\"slow\"} 1\n"));
        // A rate-limited phase's 429s (the ratelimit scenario) are refusals of their own.
        assert!(text.contains(
            "e03_dependency_admissions_total{decision=\"refused\",cause=\"rate_limited\"} 1\n"
        ));
        assert!(text.contains("e03_dependency_responses_total{cause=\"rate_limited\"} 1\n"));
        assert!(text.contains("e03_dependency_late_answers_total 1\n"));
        assert!(text.contains("e03_dependency_queue_depth 7\n"));
        assert!(text.contains("e03_dependency_busy_workers 10\n"));
        assert!(text.contains("e03_dependency_concurrency_limit 37\n"));
        assert!(text.contains("e03_dependency_phase{phase=\"frozen\"} 1\n"));
        assert!(text.contains("e03_dependency_phase{phase=\"normal\"} 0\n"));
        assert!(text.contains("http_server_active_requests 1\n"));
        assert!(text.contains(
            "http_server_request_duration_seconds_count{http_response_status_code=\"503\"} 1\n"
        ));
        drop(guard);
        let text = m.encode(None);
        assert!(text.contains("http_server_active_requests 0\n"));
        assert!(text.contains("e03_dependency_run_active 0\n"));
        assert!(text.contains("e03_dependency_phase{phase=\"frozen\"} 0\n"));
    }
}
