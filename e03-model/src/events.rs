//! The event schema: what every process logs, one JSON object a line, tagged
//! `{"type": "...", "data": {...}}`.
//!
//! Every record carries the run id, the seed and the strategy, and its times in microseconds
//! since the run's time zero (`*_us`). The server log (arrivals and responses) is the source of
//! truth for load; the client log (attempts and operations) for success and latency. Both start
//! with `run_start` and end with `run_end`; a log without `run_end`, or whose `run_end` says
//! `complete: false`, belongs to a run that was stopped.

use serde::{Deserialize, Serialize};

use crate::operation::GiveUp;

pub use crate::identity_headers::{HEADER_ATTEMPT, HEADER_CLIENT, HEADER_OP};

/// Identifies the run a record belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunTag {
    /// Unique id of the run (scenario, strategy, seed and a start stamp).
    pub run: String,
    pub seed: u64,
    pub strategy: String,
}

/// Which side wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Server,
    Client,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    #[serde(flatten)]
    pub tag: RunTag,
    pub source: Source,
    /// The scenario's name ("e03a", "e03b", ...); a dependency started without a control call
    /// names its scenario too since its strategy says "standalone" (older logs said
    /// "standalone" here).
    pub scenario: String,
    /// Wall-clock time of time zero, in ms since the Unix epoch.
    pub start_unix_ms: u64,
    /// The parameters in force (raw form, env name to value), for people and scripts.
    pub params: serde_json::Value,
    /// The same parameters typed, as the run's plan carried them (the lab's `Params` as JSON):
    /// what the analyzer reads back, so that nothing is read from text again. Absent in older
    /// logs, whose `params` are read instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_params: Option<serde_json::Value>,
    /// A client log's clock offset to its dependency, measured before the run
    /// ([`crate::clock`]): the dependency's time zero was sent on the dependency's clock.
    /// Absent in server logs, and when the dependency does not answer `GET /control/clock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::clock::ClockOffset>,
    /// A client log of one shard of a run split over swarm processes ([`crate::shard`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::Shard>,
}

/// A request arrived at the dependency (logged before any decision about it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arrival {
    #[serde(flatten)]
    pub tag: RunTag,
    /// The service's number for the request, from 0 in arrival order.
    pub seq: u64,
    pub t_us: u64,
    /// The swarm's identity of the attempt, when the request carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The class its priority header gave ([`crate::priority::PRIORITY_HEADER`]); absent:
    /// critical.
    #[serde(
        default,
        skip_serializing_if = "crate::priority::Priority::is_critical"
    )]
    pub class: crate::priority::Priority,
}

pub use crate::cause::Cause;

/// The dependency answered a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    #[serde(flatten)]
    pub tag: RunTag,
    pub seq: u64,
    /// When the answer was handed to the connection.
    pub t_us: u64,
    pub status: u16,
    pub cause: Cause,
    /// When a worker started it (absent if it never got one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admit_us: Option<u64>,
    /// Whether a worker was free when it arrived (no model queueing).
    #[serde(default)]
    pub immediate: bool,
    /// Tokens the answer cost (the rate-limit article's accounting, see
    /// [`crate::faults::FaultModel::cost`]); absent without token accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u32>,
}

/// How an attempt ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptEnd {
    /// An HTTP status (see `status`).
    Status,
    /// No complete answer within the attempt's timeout (a read timeout).
    Timeout,
    /// A connection failure of no other class ([`crate::attempt::Broken::Other`]).
    ConnectionError,
    /// Nothing listened ([`crate::attempt::Broken`] names the four classes below).
    ConnectRefused,
    ConnectTimeout,
    ResetBeforeAnswer,
    ResetMidBody,
    /// The run was stopped (signal) while the attempt was in flight.
    Aborted,
    /// Its hedged operation ended (another attempt answered) while it was in flight: the
    /// client stopped waiting and closed its connection. It was sent; the dependency did its
    /// work all the same.
    Cancelled,
    /// Never sent: a policy layer refused it (an open circuit breaker, client-side
    /// throttling; see `rejection`). It did not reach the dependency, and `sent_us` is when it
    /// was refused.
    FailedFast,
}

impl AttemptEnd {
    /// How a sent attempt's result is logged: its end and its status, if it had one.
    pub fn of(result: &crate::AttemptResult) -> (AttemptEnd, Option<u16>) {
        use crate::attempt::Broken;
        match *result {
            crate::AttemptResult::Status { code, .. } => (AttemptEnd::Status, Some(code)),
            crate::AttemptResult::Timeout => (AttemptEnd::Timeout, None),
            crate::AttemptResult::ConnectionError(b) => (
                match b {
                    Broken::ConnectRefused => AttemptEnd::ConnectRefused,
                    Broken::ConnectTimeout => AttemptEnd::ConnectTimeout,
                    Broken::ResetBeforeAnswer => AttemptEnd::ResetBeforeAnswer,
                    Broken::ResetMidBody => AttemptEnd::ResetMidBody,
                    Broken::Other => AttemptEnd::ConnectionError,
                },
                None,
            ),
        }
    }

    /// The connection failure this end logs, if it is one.
    pub fn broken(self) -> Option<crate::attempt::Broken> {
        use crate::attempt::Broken;
        Some(match self {
            AttemptEnd::ConnectRefused => Broken::ConnectRefused,
            AttemptEnd::ConnectTimeout => Broken::ConnectTimeout,
            AttemptEnd::ResetBeforeAnswer => Broken::ResetBeforeAnswer,
            AttemptEnd::ResetMidBody => Broken::ResetMidBody,
            AttemptEnd::ConnectionError => Broken::Other,
            _ => return None,
        })
    }
}

/// One attempt the swarm sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    #[serde(flatten)]
    pub tag: RunTag,
    pub client: u32,
    pub op: u32,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// When the attempt was due (operation start, or end of its retry wait).
    pub due_us: u64,
    /// When it actually left.
    pub sent_us: u64,
    pub end_us: u64,
    pub end: AttemptEnd,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why a failed-fast attempt was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection: Option<crate::budget::Rejection>,
    /// The step workload (the rate-limit article): the flow the attempt belongs to and its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<crate::steps::Flow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The `Retry-After` the answer carried (a 429), in µs; logged by the step workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_us: Option<u64>,
}

/// A strategy's circuit breaker changed state (one breaker per strategy, shared by its clients).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerChange {
    #[serde(flatten)]
    pub tag: RunTag,
    pub t_us: u64,
    pub from: crate::breaker::BreakerState,
    pub to: crate::breaker::BreakerState,
    /// Whose breaker changed: its holder under `E03_BUDGET_SCOPE` (left out for holder 0, the
    /// fleet's one breaker by default).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub holder: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Final outcome of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failed,
}

/// One operation of the swarm, start to final outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationRecord {
    #[serde(flatten)]
    pub tag: RunTag,
    pub client: u32,
    pub op: u32,
    pub start_us: u64,
    pub end_us: u64,
    pub attempts: u32,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<GiveUp>,
    /// The step workload (the rate-limit article): the flow the operation belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<crate::steps::Flow>,
    /// Its class ([`crate::priority::Priority`]); absent: critical.
    #[serde(
        default,
        skip_serializing_if = "crate::priority::Priority::is_critical"
    )]
    pub class: crate::priority::Priority,
}

/// Open loop: an operation that arrived while `E03_MAX_IN_FLIGHT` operations were in progress,
/// so it was never started (no attempt, no operation record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    #[serde(flatten)]
    pub tag: RunTag,
    /// Its intended start, µs after time zero.
    pub intended_us: u64,
}

/// Fan-out (`E03_WORKLOAD=fan_out`): a request of `calls` operations (clients `client x calls`
/// to `client x calls + calls - 1`, operation `request`) that ended: its quorum succeeded, could
/// no longer, or every call ended; logged after the call that decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FanOutRecord {
    #[serde(flatten)]
    pub tag: RunTag,
    /// The caller.
    pub client: u32,
    pub request: u32,
    pub start_us: u64,
    /// When its last call ended.
    pub end_us: u64,
    pub calls: u32,
    /// Successes that end it (`E03_FANOUT_QUORUM`; `calls`: all).
    pub quorum: u32,
    /// Calls that had succeeded and failed when it ended.
    pub ok: u32,
    pub failed: u32,
    /// Failed calls its fallbacks served by then (a strategy's `fallbacks`): they count as
    /// successes towards the quorum, and the request was served degraded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallbacks: u32,
    /// Attempts its calls that had ended by then sent.
    pub attempts: u32,
}

impl FanOutRecord {
    /// Whether its quorum succeeded ([`crate::workload::quorum_met`]).
    pub fn success(&self) -> bool {
        crate::workload::quorum_met(self.ok, self.fallbacks, self.quorum)
    }

    /// Whether it succeeded with a fallback's answer in it (served degraded).
    pub fn degraded(&self) -> bool {
        self.success() && self.fallbacks > 0
    }
}

/// The last record of a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    #[serde(flatten)]
    pub tag: RunTag,
    pub source: Source,
    pub t_us: u64,
    /// False when the run was stopped (signal) before its natural end.
    pub complete: bool,
    /// Records written before this one.
    pub records: u64,
}

/// Any record of any log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Event {
    RunStart(RunStart),
    Arrival(Arrival),
    Response(Response),
    Attempt(Attempt),
    Operation(OperationRecord),
    Breaker(BreakerChange),
    Dropped(Dropped),
    FanOut(FanOutRecord),
    /// A replica left or re-entered the callers' balancer's rotation (`E03_REPLICAS`).
    Host(HostRecord),
    /// A readiness probe the callers' balancer sent (`E03_HEALTH_INTERVAL_MS`).
    Probe(ProbeRecord),
    RunEnd(RunEnd),
    /// A committed charge: a line of a run's ledger (`ledger-*.jsonl`, see
    /// `e03_plan::log_names::ledger_log_path`).
    Charge(ChargeRecord),
    /// What `lab proxy --http` did with a request, beside its arrival and response records.
    Proxied(ProxiedRecord),
}

/// What the HTTP fault proxy (`lab proxy --http`, [`crate::fault_proxy`]) did with one
/// request, logged when it ended, after its `response` record (or instead of one when no
/// answer was sent: a hang, a reset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxiedRecord {
    #[serde(flatten)]
    pub tag: RunTag,
    /// The arrival's `seq`.
    pub seq: u64,
    /// When the proxy was done with it: answered, reset, or left by its caller.
    pub t_us: u64,
    pub method: String,
    /// Path and query, as received.
    pub path: String,
    /// The fault applied (`abort 503`, `down 503`, `rate_limited 429`, `freeze`,
    /// `delay 200 ms`, `hang`, `reset before`, `reset after`, an Envoy header's
    /// `header abort 503` or `header delay 200 ms`); absent: forwarded untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// How it ended: `answered` (an answer went out, see `status`), `reset` (the caller's
    /// connection was reset), `left` (the caller closed its connection before an answer, or
    /// the proxy stopped).
    pub end: ProxiedEnd,
    /// The status the caller received, when it received one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The upstream's status and time (sent to answer head), when it was forwarded and answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_us: Option<u64>,
    /// Why the upstream could not answer (connect refused, timed out, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_error: Option<String>,
    /// What the proxy could not tell or chose to ignore (a rule's missing operation key, an
    /// Envoy fault header's bad value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ProxiedRecord {
    /// Whether the proxy forwarded it to its upstream (which answered it, or failed to).
    pub fn forwarded(&self) -> bool {
        self.upstream_status.is_some() || self.upstream_error.is_some()
    }
}

/// How a proxied request ended ([`ProxiedRecord::end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProxiedEnd {
    Answered,
    Reset,
    Left,
}

/// A replica of the dependency left or re-entered the callers' balancer's rotation
/// ([`crate::balancer::HostChange`]), in the client log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    #[serde(flatten)]
    pub tag: RunTag,
    pub t_us: u64,
    pub replica: u32,
    /// `ejected`, `returned`, `unhealthy` or `healthy`.
    pub change: crate::balancer::Change,
}

/// A readiness probe (`GET /ready`) of the callers' active health checks, in the client log:
/// sent to `replica` at `sent_us`, ended at `end_us` with `status` (none: no answer within the
/// probe's timeout, or no connection), `ok` when the replica said it was ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    #[serde(flatten)]
    pub tag: RunTag,
    pub sent_us: u64,
    pub end_us: u64,
    pub replica: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub ok: bool,
}

/// One committed charge of the ledger, with its run and the service's number for the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChargeRecord {
    #[serde(flatten)]
    pub tag: RunTag,
    /// The request's sequence number (as in its `arrival`).
    pub seq: u64,
    #[serde(flatten)]
    pub charge: crate::ledger::Charge,
}

impl Event {
    /// One JSON line, without its newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events always serialise")
    }
}

/// Microseconds of a duration, for the `*_us` fields.
pub fn us(d: std::time::Duration) -> u64 {
    d.as_micros() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_failure_is_logged_under_its_own_name_and_read_back() {
        use crate::attempt::Broken;
        for b in Broken::ALL {
            let (end, status) = AttemptEnd::of(&crate::AttemptResult::ConnectionError(b));
            assert_eq!((end.broken(), status), (Some(b), None));
            assert_eq!(
                serde_json::to_string(&end).unwrap(),
                format!("\"{}\"", b.name())
            );
        }
        assert_eq!(
            AttemptEnd::of(&crate::AttemptResult::Timeout),
            (AttemptEnd::Timeout, None)
        );
        assert_eq!(AttemptEnd::Timeout.broken(), None);
        assert_eq!(
            AttemptEnd::of(&crate::AttemptResult::status(503)),
            (AttemptEnd::Status, Some(503))
        );
    }

    fn tag() -> RunTag {
        RunTag {
            run: "e03b-B-42".into(),
            seed: 42,
            strategy: "B".into(),
        }
    }

    #[test]
    fn events_are_tagged_json_lines_and_round_trip() {
        let e = Event::Arrival(Arrival {
            tag: tag(),
            seq: 3,
            t_us: 8_500_123,
            client: Some(7),
            op: Some(2),
            attempt: Some(1),
            class: crate::priority::Priority::Critical,
        });
        let line = e.to_line();
        // A critical request's class is not written: an older log reads the same.
        assert!(!line.contains("class"), "{line}");
        assert!(
            line.starts_with(
                r#"{"type":"arrival","data":{"run":"e03b-B-42","seed":42,"strategy":"B""#
            ),
            "{line}"
        );
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), e);
    }

    /// A run's parameters are kept as written, numbers included; a long decimal (found by the
    /// `log_line` fuzz target: 125 digits) must read back as the same number after a write, or
    /// a log re-read would differ from the one written (serde_json's `float_roundtrip`).
    #[test]
    fn a_long_decimal_in_the_parameters_survives_the_json_trip() {
        let line = format!(
            r#"{{"type":"run_start","data":{{"run":"r","seed":3,"strategy":"C","source":"client","scenario":"e03b","start_unix_ms":1,"params":{{"sent_us":487556{}}}}}}}"#,
            "6".repeat(119)
        );
        let e: Event = serde_json::from_str(&line).unwrap();
        let back: Event = serde_json::from_str(&e.to_line()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn operation_reason_is_snake_case() {
        let e = Event::Operation(OperationRecord {
            tag: tag(),
            client: 1,
            op: 0,
            start_us: 0,
            end_us: 10,
            attempts: 2,
            outcome: Outcome::Failed,
            reason: Some(GiveUp::BudgetDenied),
            flow: None,
            class: crate::priority::Priority::BestEffort,
        });
        assert!(e
            .to_line()
            .contains(r#""outcome":"failed","reason":"budget_denied""#));
        assert!(e.to_line().contains(r#""class":"best_effort""#));
        assert_eq!(serde_json::from_str::<Event>(&e.to_line()).unwrap(), e);
    }

    #[test]
    fn arrival_without_identity_parses() {
        let line =
            r#"{"type":"arrival","data":{"run":"r","seed":1,"strategy":"-","seq":0,"t_us":5}}"#;
        let Event::Arrival(a) = serde_json::from_str::<Event>(line).unwrap() else {
            panic!("not an arrival")
        };
        assert_eq!((a.client, a.t_us), (None, 5));
    }
}
