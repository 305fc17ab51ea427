//! The swarm's Prometheus metrics: one registry per process ([`metrics`]), served as text at
//! `GET /metrics` on the address of `--metrics-listen` / `E03_METRICS_LISTEN` ([`serve_metrics`];
//! off by default).
//!
//! Built on the `prometheus-client` crate (its registry and text encoder). The HTTP client
//! duration follows the OpenTelemetry HTTP semantic conventions
//! (`http_client_request_duration_seconds`); the lab's own metrics carry the prefix `e03_swarm_`
//! and a `strategy` label. Counters count over every run of the process (every scenario and
//! seed).
//!
//! Cost: nothing is updated unless the metrics are served; then every metric is updated after
//! an attempt ended (never between a timer's wake-up and the
//! send), with atomics; each update looks its labelled series up in its family (a read lock) and
//! the histogram takes its own short lock per observation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use e03_model::breaker::BreakerState;
use e03_model::budget::Rejection;
use e03_model::events::AttemptEnd;
use e03_model::{GiveUp, OpOutcome};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Path of the metrics endpoint.
pub const METRICS_PATH: &str = "/metrics";

/// Upper bounds of the client duration buckets, seconds (0.5 ms to 10 s).
const DURATION_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttemptLabels {
    strategy: String,
    attempt: u32,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StrategyLabel {
    strategy: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    strategy: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    strategy: String,
    outcome: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientDurationLabels {
    strategy: String,
    http_response_status_code: String,
    error_type: &'static str,
}

/// Every metric of the swarm and the registry that encodes them.
pub struct SwarmMetrics {
    registry: Registry,
    attempts: Family<AttemptLabels, Counter>,
    retries_denied: Family<StrategyLabel, Counter>,
    failed_fast: Family<ReasonLabels, Counter>,
    operations: Family<OperationLabels, Counter>,
    breaker: Family<StrategyLabel, Gauge>,
    budget_tokens: Family<StrategyLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    duration: Family<ClientDurationLabels, Histogram, fn() -> Histogram>,
}

fn new_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The `outcome` label of an attempt: its status code when answered, else how it ended.
pub fn attempt_outcome(end: AttemptEnd, status: Option<u16>) -> String {
    match (end, status) {
        (AttemptEnd::Status, Some(code)) => code.to_string(),
        (AttemptEnd::Status, None) => "status".into(),
        (AttemptEnd::Timeout, _) => "timeout".into(),
        (AttemptEnd::FailedFast, _) => "failed_fast".into(),
        (AttemptEnd::Aborted, _) => "aborted".into(),
        (AttemptEnd::Cancelled, _) => "cancelled".into(),
        (broken, _) => broken
            .broken()
            .expect("every other end is a connection failure")
            .name()
            .into(),
    }
}

/// The `reason` label of an operation that failed (as in the client log's `reason`).
pub fn give_up_name(why: GiveUp) -> &'static str {
    match why {
        GiveUp::NotRetryable => "not_retryable",
        GiveUp::AttemptsExhausted => "attempts_exhausted",
        GiveUp::Deadline => "deadline",
        GiveUp::BudgetDenied => "budget_denied",
        GiveUp::FailedFast => "failed_fast",
        GiveUp::Aborted => "aborted",
    }
}

fn rejection_name(why: Rejection) -> &'static str {
    match why {
        Rejection::BreakerOpen => "breaker_open",
        Rejection::Throttled => "throttled",
        Rejection::ConcurrencyLimited => "concurrency_limited",
        Rejection::BulkheadFull => "bulkhead_full",
    }
}

/// `e03_swarm_breaker_state`: 0 closed, 1 half-open, 2 open.
fn breaker_value(state: BreakerState) -> i64 {
    match state {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
    }
}

impl SwarmMetrics {
    fn new() -> SwarmMetrics {
        let mut registry = Registry::default();
        let attempts = Family::<AttemptLabels, Counter>::default();
        registry.register(
            "e03_swarm_attempts",
            "Attempts logged, by strategy, attempt number and outcome (status code, timeout, \
             connect_refused, connect_timeout, reset_before_answer, reset_mid_body, \
             connection_error, failed_fast, aborted)",
            attempts.clone(),
        );
        let retries_denied = Family::<StrategyLabel, Counter>::default();
        registry.register(
            "e03_swarm_retries_denied_by_budget",
            "Retries the retry budget refused (each ends its operation)",
            retries_denied.clone(),
        );
        let failed_fast = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "e03_swarm_failed_fast",
            "Attempts a policy layer refused to send, by reason (breaker_open, throttled)",
            failed_fast.clone(),
        );
        let operations = Family::<OperationLabels, Counter>::default();
        registry.register(
            "e03_swarm_operations",
            "Operations ended, by outcome (success, failed) and reason of a failure",
            operations.clone(),
        );
        let breaker = Family::<StrategyLabel, Gauge>::default();
        registry.register(
            "e03_swarm_breaker_state",
            "The strategy's circuit breaker: 0 closed, 1 half-open, 2 open (only strategies \
             with a breaker)",
            breaker.clone(),
        );
        let budget_tokens =
            Family::<StrategyLabel, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "e03_swarm_budget_tokens",
            "Tokens in the strategy's retry budget after the last attempt ended (token bucket, \
             gRPC, AWS quota, Finagle/tower balance in retries; only budgets that keep tokens)",
            budget_tokens.clone(),
        );
        let duration =
            Family::<ClientDurationLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                new_histogram,
            );
        registry.register(
            "http_client_request_duration_seconds",
            "Duration of attempts sent, from the send to the end, by strategy and status code \
             (error_type timeout, or the connection failure's class, when there was no answer)",
            duration.clone(),
        );
        SwarmMetrics {
            registry,
            attempts,
            retries_denied,
            failed_fast,
            operations,
            breaker,
            budget_tokens,
            duration,
        }
    }

    /// One attempt record was logged. `elapsed` is its time from send to end (none when it was
    /// never sent).
    pub fn attempt(
        &self,
        strategy: &str,
        attempt: u32,
        end: AttemptEnd,
        status: Option<u16>,
        elapsed: Option<Duration>,
    ) {
        self.attempts
            .get_or_create(&AttemptLabels {
                strategy: strategy.to_string(),
                attempt,
                outcome: attempt_outcome(end, status),
            })
            .inc();
        let error_type = match end {
            AttemptEnd::Timeout => "timeout",
            AttemptEnd::Cancelled => "cancelled",
            _ => end.broken().map_or("", |b| b.name()),
        };
        let sent = !matches!(end, AttemptEnd::FailedFast | AttemptEnd::Aborted);
        if let (true, Some(elapsed)) = (sent, elapsed) {
            self.duration
                .get_or_create(&ClientDurationLabels {
                    strategy: strategy.to_string(),
                    http_response_status_code: status.map(|s| s.to_string()).unwrap_or_default(),
                    error_type,
                })
                .observe(elapsed.as_secs_f64());
        }
    }

    /// A policy layer refused an attempt.
    pub fn failed_fast(&self, strategy: &str, why: Rejection) {
        self.failed_fast
            .get_or_create(&ReasonLabels {
                strategy: strategy.to_string(),
                reason: rejection_name(why),
            })
            .inc();
    }

    /// An operation ended with `outcome`.
    pub fn operation(&self, strategy: &str, outcome: OpOutcome) {
        let (outcome, reason) = match outcome {
            OpOutcome::Success => ("success", ""),
            OpOutcome::Failed(why) => ("failed", give_up_name(why)),
        };
        if reason == "budget_denied" {
            self.retries_denied
                .get_or_create(&StrategyLabel {
                    strategy: strategy.to_string(),
                })
                .inc();
        }
        self.operations
            .get_or_create(&OperationLabels {
                strategy: strategy.to_string(),
                outcome,
                reason,
            })
            .inc();
    }

    /// The strategy's breaker is in `state` now.
    pub fn breaker(&self, strategy: &str, state: BreakerState) {
        self.breaker
            .get_or_create(&StrategyLabel {
                strategy: strategy.to_string(),
            })
            .set(breaker_value(state));
    }

    /// The strategy's retry budget holds `tokens` now.
    pub fn budget_tokens(&self, strategy: &str, tokens: f64) {
        self.budget_tokens
            .get_or_create(&StrategyLabel {
                strategy: strategy.to_string(),
            })
            .set(tokens);
    }

    /// A strategy starts a run: its budget denials start at zero in the exposition.
    pub fn strategy_started(&self, strategy: &str) {
        let _ = self.retries_denied.get_or_create(&StrategyLabel {
            strategy: strategy.to_string(),
        });
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

static METRICS: LazyLock<SwarmMetrics> = LazyLock::new(SwarmMetrics::new);

/// Whether anything serves the metrics: until [`serve_metrics`] is called the client loop
/// updates nothing (the default, `--metrics-listen` unset, costs one relaxed load an attempt).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The process's swarm metrics, once [`serve_metrics`] serves them; `None` before.
pub fn metrics() -> Option<&'static SwarmMetrics> {
    ENABLED.load(Ordering::Relaxed).then(|| &*METRICS)
}

/// Serves `GET /metrics` on `listener` until the process ends. The metrics are collected from
/// this call on (before the returned future first runs), so a run started after it is counted
/// whole.
pub fn serve_metrics(
    listener: tokio::net::TcpListener,
) -> impl std::future::Future<Output = std::io::Result<()>> {
    ENABLED.store(true, Ordering::Relaxed);
    let app = Router::new().route(
        METRICS_PATH,
        get(|| async {
            (
                [(
                    header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )],
                METRICS.encode(),
            )
                .into_response()
        }),
    );
    async move { axum::serve(listener, app).await }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_attempts_operations_and_breaker() {
        let m = SwarmMetrics::new();
        m.strategy_started("X");
        m.attempt(
            "X",
            1,
            AttemptEnd::Status,
            Some(503),
            Some(Duration::from_millis(2)),
        );
        m.attempt(
            "X",
            2,
            AttemptEnd::Timeout,
            None,
            Some(Duration::from_secs(2)),
        );
        m.attempt("X", 3, AttemptEnd::FailedFast, None, None);
        // A hedge's cancelled copy: sent, so timed, with no answer.
        m.attempt(
            "X",
            4,
            AttemptEnd::Cancelled,
            None,
            Some(Duration::from_millis(60)),
        );
        m.failed_fast("X", Rejection::BreakerOpen);
        m.operation("X", OpOutcome::Failed(GiveUp::BudgetDenied));
        m.operation("X", OpOutcome::Success);
        m.breaker("X", BreakerState::Open);
        let text = m.encode();
        for line in [
            "e03_swarm_attempts_total{strategy=\"X\",attempt=\"1\",outcome=\"503\"} 1\n",
            "e03_swarm_attempts_total{strategy=\"X\",attempt=\"2\",outcome=\"timeout\"} 1\n",
            "e03_swarm_attempts_total{strategy=\"X\",attempt=\"3\",outcome=\"failed_fast\"} 1\n",
            "e03_swarm_attempts_total{strategy=\"X\",attempt=\"4\",outcome=\"cancelled\"} 1\n",
            "http_client_request_duration_seconds_count{strategy=\"X\",http_response_status_code=\"\",error_type=\"cancelled\"} 1\n",
            "e03_swarm_failed_fast_total{strategy=\"X\",reason=\"breaker_open\"} 1\n",
            "e03_swarm_retries_denied_by_budget_total{strategy=\"X\"} 1\n",
            "e03_swarm_operations_total{strategy=\"X\",outcome=\"failed\",reason=\"budget_denied\"} 1\n",
            "e03_swarm_operations_total{strategy=\"X\",outcome=\"success\",reason=\"\"} 1\n",
            "e03_swarm_breaker_state{strategy=\"X\"} 2\n",
            "http_client_request_duration_seconds_count{strategy=\"X\",http_response_status_code=\"503\",error_type=\"\"} 1\n",
            "http_client_request_duration_seconds_count{strategy=\"X\",http_response_status_code=\"\",error_type=\"timeout\"} 1\n",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
    }
}
