//! Checks as data: a scenario's `[[check]]` tables, each comparing one figure of a run with the
//! figure its source published.
//!
//! ```toml
//! [[check]]
//! strategy = "immediate-20ms"   # a strategy of the run
//! metric = "attempts"           # see CheckMetric
//! published = 64                # the source's figure (a list for breaker_transitions, seconds)
//! min = 56                      # a band: any of min, max, more_than, less_than; or exact = true
//! max = 76
//! mode = "both"                 # both | simulated | live | live_model: which runs it applies to
//! cause = "..."                 # optional: the known cause of a difference, printed with it
//! ```
//!
//! `mode = "live_model"` checks a live run against the model rather than the source: the same
//! scenario, seeds and strategies simulated with every down phase answering after the failure
//! latency the live run measured (the median time from sending an attempt that the down phase
//! failed to knowing it failed). Ours must be within `tolerance` of the model's figure (numbers;
//! 0 when absent), or each transition within `tolerance_ms` of the model's (breaker
//! transitions). A `published` figure there is shown beside them, not judged: it is what a
//! source on a virtual clock (zero latency) printed.
//!
//! Without `published` (and without a band) the figure is only reported beside the others.
//! Whose figure a check compares with is said in every output: `published = X` is a source's
//! figure, `model = X` the model's prediction written in the file (a scenario whose source
//! gives none), and a band with neither is a **threshold**, a bound of the file's author,
//! judged on its own.
//!
//! Metric keys: `window_ms` and `retries_only` (peak metrics), `versus` (ratio metrics: the
//! other strategy), `tolerance_ms` (breaker_transitions). The figures are computed from a run's
//! metrics by `e03_metrics::checks`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::toml_table::{fail_at, TableError};

/// What a check measures in one run of one strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckMetric {
    /// Attempts that reached the dependency.
    Attempts,
    /// Operations that succeeded.
    Accepted,
    /// Attempts a policy layer (an open breaker) refused before sending.
    FailedFast,
    /// Attempts sent while nothing listened: their connect was refused (a `refused` phase).
    ConnectRefused,
    /// Attempts that got no complete answer within their timeout (read timeouts).
    Timeouts,
    /// Read timeouts whose answer the dependency had already sent: the network's alone (a
    /// timeline with a wire phase; `e03_metrics::wire`).
    NetworkTimeouts,
    /// Operations whose work the dependency committed more than once (a timeline with a wire
    /// phase).
    DoneTwice,
    /// Attempts whose connection was reset before the answer (`reset_before_answer`).
    Resets,
    /// Connections the callers opened to the proxy in front (a timeline with a wire phase).
    Connections,
    /// The most arrivals in one window of `window_ms` (aligned to time zero); retries only
    /// (attempt number above 1) or all.
    PeakArrivals { window_ms: u64, retries_only: bool },
    /// The breaker's state changes, their times in seconds, each within `tolerance_ms` of the
    /// published one (and as many).
    BreakerTransitions { tolerance_ms: f64 },
    /// How many different waits (whole ms) came before retries (a jitter that does something
    /// gives more than one).
    DistinctWaits,
    /// This strategy's attempts divided by those of `versus`.
    AttemptsRatio { versus: String },
    /// This strategy's peak arrivals per `window_ms` divided by those of `versus`.
    PeakRatio {
        versus: String,
        window_ms: u64,
        retries_only: bool,
    },
    /// Charges in the ledger beyond the first of each operation (the retry-logic article).
    DuplicateCharges,
    /// Lost responses (work committed, connection reset) whose operation sent another attempt,
    /// counted from the service's and the client's logs, not from the ledger.
    RetriedLost,
    /// `duplicate_charges - retried_lost`: zero when every retried lost response, and nothing
    /// else, made a duplicate.
    DuplicatesMinusRetriedLost,
    /// Attempts sent after a permanent answer (400, 401, 403, 404, 409, 422) in the same
    /// operation.
    RetriesAfterPermanent,
    /// Attempts after the first, per operation that got a permanent answer: the waste of not
    /// classifying, `attempts - 1` when every such operation makes all its attempts.
    WastedPerPermanentOp,
    /// Mean latency of the operations that got a permanent answer, divided by that of the
    /// same operations under `versus`.
    PermanentLatencyRatio { versus: String },
    /// Open loop: useful work (successes that reached a client still waiting) per second, as
    /// a share of the dependency's capacity (`e03_metrics::openloop`).
    GoodputShare,
    /// Open loop: work done that counted for nothing, as a share of the work done.
    WastedShare,
    /// Open loop: 1 when the run recovered after its trigger (the recovery verdict,
    /// `e03_metrics::openloop`), 0 when it stayed metastable to the run's end.
    Recovered,
    /// Over replicas (`E03_REPLICAS`): when a replica first left the callers' balancer's
    /// rotation (unhealthy by its probes, or ejected), in s from time zero: the switch of an
    /// active-passive pair.
    OutOfRotationS,
    /// The share of critical operations that succeeded ([`e03_model::priority::Priority`]).
    CriticalSuccess,
    /// The share of best-effort operations that succeeded.
    BestEffortSuccess,
    /// Fan-out (`E03_WORKLOAD=fan_out`): the share of requests slower than
    /// `E03_FANOUT_SLOW_MS`.
    FanoutSlowShare,
    /// Fan-out: the share of requests that succeeded (a fallback's answer counts).
    FanoutSuccess,
    /// Over a partition (`E03_BALANCER=partition`): the share of the operations that called
    /// `dependency` that succeeded.
    DependencySuccess { dependency: u32 },
    /// Over a partition: the p99 of those operations' latency, in ms.
    DependencyP99Ms { dependency: u32 },
    /// Fan-out: the share of requests served degraded (a fallback's answer in them).
    FanoutDegradedShare,
    /// The 99.9th percentile of the operations' latency, in ms.
    P999Ms,
    /// The summary's own: the share of affected operations that succeeded (all operations
    /// without an incident), 0 to 1, as the tables' `success (affected)`.
    SuccessAffected,
    /// The summary's own: the 99th percentile of the operations' latency, in ms.
    P99Ms,
    /// The summary's own: the most arrivals in one 100 ms window (the tables' `peak 100 ms`).
    Peak100Ms,
    /// `versus`'s p99.9 divided by this strategy's: how many times lower this one's tail is
    /// (hedging, "The Tail at Scale").
    P999Reduction { versus: String },
    /// Requests sent beyond one per operation, in percent of the operations (hedges and
    /// retries: `100 x (attempts / operations - 1)`).
    ExtraRequests,
    /// Chain scenarios (see [`e03_model::chain`]): calls that reached the bottom layer per top
    /// request.
    BottomCallsPerRequest,
    /// Chain scenarios: the longest top operation, in ms.
    OpMaxMs,
    /// Chain scenarios: ms of work at the lower layers after the top caller had given up, per
    /// top request.
    WastedMs,
    /// Chain scenarios: calls at the lower layers that ended after the top caller had given
    /// up, per top request.
    LateCalls,
}

impl CheckMetric {
    /// Whether this metric reads a chain run (not a strategy run).
    pub fn is_chain(&self) -> bool {
        matches!(
            self,
            CheckMetric::BottomCallsPerRequest
                | CheckMetric::OpMaxMs
                | CheckMetric::WastedMs
                | CheckMetric::LateCalls
        )
    }
}

/// The published figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Published {
    Number(f64),
    List(Vec<f64>),
    /// None: the figure is only reported, beside the checked ones (no verdict).
    None,
}

/// The accepted range of ours; every bound that is set must hold. `exact`: ours equals the
/// published figure.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Band {
    pub exact: bool,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub more_than: Option<f64>,
    pub less_than: Option<f64>,
}

impl Band {
    /// Whether `ours` is inside (for a number; the published figure for `exact`).
    pub fn holds(&self, ours: f64, published: f64) -> bool {
        (!self.exact || ours == published)
            && self.min.is_none_or(|m| ours >= m)
            && self.max.is_none_or(|m| ours <= m)
            && self.more_than.is_none_or(|m| ours > m)
            && self.less_than.is_none_or(|m| ours < m)
    }

    /// The band as text: `exact`, `56..76`, `>= 2`, `> 1`, ...
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.exact {
            parts.push("exact".to_string());
        }
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => parts.push(format!("{lo}..{hi}")),
            (Some(lo), None) => parts.push(format!(">= {lo}")),
            (None, Some(hi)) => parts.push(format!("<= {hi}")),
            (None, None) => {}
        }
        if let Some(v) = self.more_than {
            parts.push(format!("> {v}"));
        }
        if let Some(v) = self.less_than {
            parts.push(format!("< {v}"));
        }
        parts.join(", ")
    }
}

/// Which runs a check applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckMode {
    #[default]
    Both,
    Simulated,
    Live,
    /// A live run against the model at the failure latency it measured (see the module docs).
    LiveModel,
}

impl CheckMode {
    pub fn applies(self, live: bool) -> bool {
        match self {
            CheckMode::Both => true,
            CheckMode::Simulated => !live,
            CheckMode::Live | CheckMode::LiveModel => live,
        }
    }
}

/// Whose figure [`CheckSpec::published`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureOf {
    /// A source's published figure (`published = X`).
    #[default]
    Source,
    /// The model's prediction, written in the file (`model = X`): no source gives one.
    Model,
}

/// What a check compares ours with, as every output names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    /// A source's figure: "published".
    Published,
    /// The model's figure (written in the file, or a `live_model` check's model run): "model".
    Model,
    /// A band alone, the file author's bound: "threshold".
    Threshold,
    /// No figure and no band: ours is only reported.
    Reported,
}

/// One check of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSpec {
    pub strategy: String,
    pub metric: CheckMetric,
    /// The figure ours is compared with: a source's, or the model's ([`Self::figure_of`]).
    pub published: Published,
    #[serde(default)]
    pub figure_of: FigureOf,
    #[serde(default)]
    pub band: Band,
    #[serde(default)]
    pub mode: CheckMode,
    /// `live_model`: how far ours may be from the model's figure (numbers).
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// The known cause of a difference between ours and the published figure, in words.
    #[serde(default)]
    pub cause: Option<String>,
}

impl CheckSpec {
    /// What ours is compared with: a source's figure, the model's, a threshold, or nothing.
    pub fn reference(&self) -> Reference {
        match (&self.published, self.figure_of) {
            _ if self.mode == CheckMode::LiveModel => Reference::Model,
            (Published::None, _) if self.band == Band::default() => Reference::Reported,
            (Published::None, _) => Reference::Threshold,
            (_, FigureOf::Model) => Reference::Model,
            (_, FigureOf::Source) => Reference::Published,
        }
    }

    /// The metric's name as written in the file, with its parameters.
    pub fn metric_label(&self) -> String {
        match &self.metric {
            CheckMetric::Attempts => "attempts".into(),
            CheckMetric::Accepted => "accepted".into(),
            CheckMetric::FailedFast => "failed fast".into(),
            CheckMetric::ConnectRefused => "connects refused".into(),
            CheckMetric::Timeouts => "read timeouts".into(),
            CheckMetric::NetworkTimeouts => "read timeouts, answer sent".into(),
            CheckMetric::DoneTwice => "operations worked twice".into(),
            CheckMetric::Resets => "resets before the answer".into(),
            CheckMetric::Connections => "connections opened".into(),
            CheckMetric::PeakArrivals {
                window_ms,
                retries_only,
            } => format!(
                "peak {} per {window_ms} ms",
                if *retries_only { "retries" } else { "arrivals" }
            ),
            CheckMetric::BreakerTransitions { .. } => "breaker transitions (s)".into(),
            CheckMetric::DistinctWaits => "distinct retry waits".into(),
            CheckMetric::AttemptsRatio { versus } => format!("attempts / {versus}'s"),
            CheckMetric::PeakRatio {
                versus, window_ms, ..
            } => format!("peak per {window_ms} ms / {versus}'s"),
            CheckMetric::GoodputShare => "goodput / capacity".into(),
            CheckMetric::WastedShare => "wasted work / work done".into(),
            CheckMetric::Recovered => "recovered after the trigger (1) or not (0)".into(),
            CheckMetric::OutOfRotationS => "first replica out of rotation (s)".into(),
            CheckMetric::CriticalSuccess => "critical operations' success".into(),
            CheckMetric::BestEffortSuccess => "best-effort operations' success".into(),
            CheckMetric::FanoutSlowShare => "share of fan-out requests that were slow".into(),
            CheckMetric::FanoutSuccess => "share of fan-out requests that succeeded".into(),
            CheckMetric::DependencySuccess { dependency } => {
                format!("dependency {dependency}'s operations' success")
            }
            CheckMetric::DependencyP99Ms { dependency } => {
                format!("dependency {dependency}'s operations' p99 (ms)")
            }
            CheckMetric::FanoutDegradedShare => "share of fan-out requests served degraded".into(),
            CheckMetric::P999Ms => "p99.9 (ms)".into(),
            CheckMetric::SuccessAffected => "success (affected)".into(),
            CheckMetric::P99Ms => "p99 (ms)".into(),
            CheckMetric::Peak100Ms => "peak 100 ms".into(),
            CheckMetric::P999Reduction { versus } => format!("{versus}'s p99.9 / this p99.9"),
            CheckMetric::ExtraRequests => "extra requests (% of operations)".into(),
            CheckMetric::BottomCallsPerRequest => "bottom calls per top request".into(),
            CheckMetric::OpMaxMs => "longest top operation (ms)".into(),
            CheckMetric::WastedMs => "wasted lower-hop ms per top request".into(),
            CheckMetric::LateCalls => "lower-hop calls ended after the top gave up".into(),
            CheckMetric::DuplicateCharges => "duplicate charges (ledger)".into(),
            CheckMetric::RetriedLost => "retried lost responses (logs)".into(),
            CheckMetric::DuplicatesMinusRetriedLost => {
                "duplicate charges - retried lost responses".into()
            }
            CheckMetric::RetriesAfterPermanent => "retries after a permanent error".into(),
            CheckMetric::WastedPerPermanentOp => "wasted attempts per permanent failure".into(),
            CheckMetric::PermanentLatencyRatio { versus } => {
                format!("permanent failures' latency / {versus}'s")
            }
        }
    }
}

/// The keys a `[[check]]` table takes.
pub const CHECK_KEYS: &[&str] = &[
    "strategy",
    "metric",
    "published",
    "model",
    "exact",
    "min",
    "max",
    "more_than",
    "less_than",
    "window_ms",
    "retries_only",
    "versus",
    "dependency",
    "tolerance_ms",
    "mode",
    "tolerance",
    "cause",
];

const METRICS: &str =
    "one of attempts, accepted, failed_fast, connect_refused, timeouts, network_timeouts, \
                       done_twice, resets, connections, peak_arrivals, \
                       breaker_transitions, distinct_waits, attempts_ratio, peak_ratio, \
                       duplicate_charges, retried_lost, duplicates_minus_retried_lost, \
                       retries_after_permanent, wasted_per_permanent_op, \
                       permanent_latency_ratio, goodput_share, wasted_share, recovered, out_of_rotation_s, critical_success, \
                       best_effort_success, fanout_slow_share, fanout_success, \
                       fanout_degraded_share, dependency_success, dependency_p99_ms, p999_ms, p999_reduction, \
                       extra_requests, success_affected, p99_ms, peak_100ms; \
                       for chains bottom_calls_per_request, op_max_ms, \
                       wasted_ms, late_calls";

type Table = BTreeMap<String, Spanned<toml::Value>>;

/// Reads one `[[check]]` table (`at`: where it starts). The strategy ids are checked against
/// the run's strategies later, by the scenario.
pub fn parse_check_table(table: &Table, at: usize) -> Result<CheckSpec, TableError> {
    macro_rules! fail {
        ($key:expr, $message:expr $(,)?) => {
            fail_at(table, at, $key, $message)
        };
    }
    if let Some((key, _)) = table
        .iter()
        .find(|(k, _)| !CHECK_KEYS.contains(&k.as_str()))
    {
        return fail!(
            key,
            format!(
                "unknown key `{key}` in [[check]]: expected one of {}",
                CHECK_KEYS.join(", ")
            ),
        );
    }
    let get = |key: &str| table.get(key).map(|v| v.get_ref());
    let as_num = |v: &toml::Value| match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    };
    let number = |key: &str| -> Result<Option<f64>, TableError> {
        match get(key) {
            None => Ok(None),
            Some(v) => match as_num(v) {
                Some(n) => Ok(Some(n)),
                None => fail!(key, format!("{key} = {v}: expected a number")),
            },
        }
    };
    let string = |key: &str| -> Result<Option<String>, TableError> {
        match get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => fail!(key, format!("{key} = {v}: expected a string")),
        }
    };
    let boolean = |key: &str| -> Result<bool, TableError> {
        match get(key) {
            None => Ok(false),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => fail!(key, format!("{key} = {v}: expected true or false")),
        }
    };
    let only = |key: &str, what: &str| -> Result<(), TableError> {
        match get(key) {
            Some(_) => fail!(key, format!("{key} is only for {what}")),
            None => Ok(()),
        }
    };

    let Some(strategy) = string("strategy")? else {
        return fail!(
            "strategy",
            "a [[check]] needs strategy: a strategy id of the run".into()
        );
    };
    let window = || -> Result<u64, TableError> {
        match get("window_ms") {
            Some(toml::Value::Integer(i)) if (1..=3_600_000).contains(i) => Ok(*i as u64),
            Some(v) => fail!(
                "window_ms",
                format!("window_ms = {v}: expected a whole number of ms from 1 to 3600000"),
            ),
            None => fail!("metric", "this metric needs window_ms".into()),
        }
    };
    let versus = || -> Result<String, TableError> {
        match string("versus")? {
            Some(v) => Ok(v),
            None => fail!(
                "metric",
                "a ratio needs versus: the other strategy's id".into()
            ),
        }
    };
    let dependency = || -> Result<u32, TableError> {
        match get("dependency") {
            Some(toml::Value::Integer(i)) if (0..16).contains(i) => Ok(*i as u32),
            Some(v) => fail!(
                "dependency",
                format!("dependency = {v}: expected a replica of the partition, 0 to 15"),
            ),
            None => fail!(
                "metric",
                "this metric needs dependency: the partition's replica, 0 is the first".into()
            ),
        }
    };
    let Some(name) = string("metric")? else {
        return fail!("metric", format!("a [[check]] needs metric: {METRICS}"));
    };
    let peak = matches!(name.as_str(), "peak_arrivals" | "peak_ratio");
    if !peak {
        only("window_ms", "peak_arrivals and peak_ratio")?;
        only("retries_only", "peak_arrivals and peak_ratio")?;
    }
    if !matches!(
        name.as_str(),
        "attempts_ratio" | "peak_ratio" | "permanent_latency_ratio" | "p999_reduction"
    ) {
        only(
            "versus",
            "attempts_ratio, peak_ratio, permanent_latency_ratio and p999_reduction",
        )?;
    }
    if name != "breaker_transitions" {
        only("tolerance_ms", "breaker_transitions")?;
    }
    if !matches!(name.as_str(), "dependency_success" | "dependency_p99_ms") {
        only("dependency", "dependency_success and dependency_p99_ms")?;
    }
    let metric = match name.as_str() {
        "attempts" => CheckMetric::Attempts,
        "accepted" => CheckMetric::Accepted,
        "failed_fast" => CheckMetric::FailedFast,
        "connect_refused" => CheckMetric::ConnectRefused,
        "timeouts" => CheckMetric::Timeouts,
        "network_timeouts" => CheckMetric::NetworkTimeouts,
        "done_twice" => CheckMetric::DoneTwice,
        "resets" => CheckMetric::Resets,
        "connections" => CheckMetric::Connections,
        "distinct_waits" => CheckMetric::DistinctWaits,
        "goodput_share" => CheckMetric::GoodputShare,
        "wasted_share" => CheckMetric::WastedShare,
        "recovered" => CheckMetric::Recovered,
        "out_of_rotation_s" => CheckMetric::OutOfRotationS,
        "critical_success" => CheckMetric::CriticalSuccess,
        "best_effort_success" => CheckMetric::BestEffortSuccess,
        "fanout_slow_share" => CheckMetric::FanoutSlowShare,
        "fanout_success" => CheckMetric::FanoutSuccess,
        "fanout_degraded_share" => CheckMetric::FanoutDegradedShare,
        "dependency_success" => CheckMetric::DependencySuccess {
            dependency: dependency()?,
        },
        "dependency_p99_ms" => CheckMetric::DependencyP99Ms {
            dependency: dependency()?,
        },
        "p999_ms" => CheckMetric::P999Ms,
        "success_affected" => CheckMetric::SuccessAffected,
        "p99_ms" => CheckMetric::P99Ms,
        "peak_100ms" => CheckMetric::Peak100Ms,
        "extra_requests" => CheckMetric::ExtraRequests,
        "p999_reduction" => CheckMetric::P999Reduction { versus: versus()? },
        "bottom_calls_per_request" => CheckMetric::BottomCallsPerRequest,
        "op_max_ms" => CheckMetric::OpMaxMs,
        "wasted_ms" => CheckMetric::WastedMs,
        "late_calls" => CheckMetric::LateCalls,
        "peak_arrivals" => CheckMetric::PeakArrivals {
            window_ms: window()?,
            retries_only: boolean("retries_only")?,
        },
        "attempts_ratio" => CheckMetric::AttemptsRatio { versus: versus()? },
        "duplicate_charges" => CheckMetric::DuplicateCharges,
        "retried_lost" => CheckMetric::RetriedLost,
        "duplicates_minus_retried_lost" => CheckMetric::DuplicatesMinusRetriedLost,
        "retries_after_permanent" => CheckMetric::RetriesAfterPermanent,
        "wasted_per_permanent_op" => CheckMetric::WastedPerPermanentOp,
        "permanent_latency_ratio" => CheckMetric::PermanentLatencyRatio { versus: versus()? },
        "peak_ratio" => CheckMetric::PeakRatio {
            versus: versus()?,
            window_ms: window()?,
            retries_only: boolean("retries_only")?,
        },
        "breaker_transitions" => match number("tolerance_ms")? {
            Some(t) if t >= 0.0 => CheckMetric::BreakerTransitions { tolerance_ms: t },
            Some(t) => {
                return fail!(
                    "tolerance_ms",
                    format!("tolerance_ms = {t}: expected 0 or more"),
                )
            }
            None => CheckMetric::BreakerTransitions { tolerance_ms: 0.0 },
        },
        other => return fail!("metric", format!("metric = {other:?}: expected {METRICS}")),
    };

    // `model = X` is the model's figure where `published = X` is a source's: one or the other.
    let (figure_key, figure_of) = match (get("published"), get("model")) {
        (Some(_), Some(_)) => {
            return fail!(
                "model",
                "published is a source's figure, model the model's: give one or the other".into(),
            )
        }
        (None, Some(_)) => ("model", FigureOf::Model),
        _ => ("published", FigureOf::Source),
    };
    let published = match (get(figure_key), &metric) {
        // No published figure: a figure reported beside the checked ones, never failing.
        (None, _) => Published::None,
        (Some(toml::Value::Array(items)), CheckMetric::BreakerTransitions { .. }) => {
            match items.iter().map(as_num).collect::<Option<Vec<f64>>>() {
                Some(list) => Published::List(list),
                None => {
                    return fail!(
                        figure_key,
                        format!("{figure_key}: expected a list of times in seconds"),
                    )
                }
            }
        }
        (Some(v), CheckMetric::BreakerTransitions { .. }) => {
            return fail!(
                figure_key,
                format!("{figure_key} = {v}: expected a list of times in seconds"),
            )
        }
        (Some(v), _) => match as_num(v) {
            Some(n) => Published::Number(n),
            None => return fail!(figure_key, format!("{figure_key} = {v}: expected a number")),
        },
    };

    let band = Band {
        exact: boolean("exact")?,
        min: number("min")?,
        max: number("max")?,
        more_than: number("more_than")?,
        less_than: number("less_than")?,
    };
    let mode = match string("mode")?.as_deref() {
        None | Some("both") => CheckMode::Both,
        Some("simulated") => CheckMode::Simulated,
        Some("live") => CheckMode::Live,
        Some("live_model") => CheckMode::LiveModel,
        Some(other) => {
            return fail!(
                "mode",
                format!("mode = {other:?}: expected both, simulated, live or live_model"),
            )
        }
    };
    let cause = string("cause")?;
    let is_list = matches!(metric, CheckMetric::BreakerTransitions { .. });
    if mode == CheckMode::LiveModel {
        if figure_of == FigureOf::Model {
            return fail!(
                "model",
                "a live_model check is judged against the model's run: its `published` is the                  source's figure, shown beside"
                    .into(),
            );
        }
        // Judged against the model: no band; `published` is shown beside, not judged.
        if band != Band::default() {
            return fail!(
                "mode",
                "a live_model check is judged against the model: it takes tolerance (or \
                 tolerance_ms for breaker_transitions), not exact, min, max, more_than or less_than"
                    .into(),
            );
        }
        let tolerance = match number("tolerance")? {
            Some(t) if is_list => {
                return fail!(
                    "tolerance",
                    format!("tolerance = {t}: breaker_transitions takes tolerance_ms"),
                )
            }
            Some(t) if t < 0.0 => {
                return fail!("tolerance", format!("tolerance = {t}: expected 0 or more"))
            }
            t => t,
        };
        return Ok(CheckSpec {
            strategy,
            metric,
            published,
            figure_of,
            band,
            mode,
            tolerance,
            cause,
        });
    }
    only("tolerance", "mode = \"live_model\"")?;
    if is_list && band != Band::default() {
        return fail!(
            "metric",
            "breaker_transitions takes tolerance_ms, not exact, min, max, more_than or less_than"
                .into(),
        );
    }
    let reported = published == Published::None;
    // A band alone is a threshold; `exact` needs a figure to equal.
    if reported && band.exact {
        return fail!(
            "exact",
            "exact = true needs the figure to equal: published (a source's) or model".into(),
        );
    }
    if !is_list && !reported && band == Band::default() {
        return fail!(
            "published",
            "a check needs exact = true or a band (min, max, more_than, less_than)".into(),
        );
    }
    if let (Some(lo), Some(hi)) = (band.min, band.max) {
        if hi < lo {
            return fail!("max", format!("max = {hi}: expected at least min ({lo})"));
        }
    }
    Ok(CheckSpec {
        strategy,
        metric,
        published,
        figure_of,
        band,
        mode,
        tolerance: None,
        cause,
    })
}

impl CheckSpec {
    /// The strategy ids this check reads.
    pub fn strategies(&self) -> Vec<&str> {
        let mut ids = vec![self.strategy.as_str()];
        match &self.metric {
            CheckMetric::AttemptsRatio { versus }
            | CheckMetric::PeakRatio { versus, .. }
            | CheckMetric::PermanentLatencyRatio { versus }
            | CheckMetric::P999Reduction { versus } => ids.push(versus),
            _ => {}
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<CheckSpec, TableError> {
        #[derive(Deserialize)]
        struct F {
            check: Spanned<Table>,
        }
        let f: F = toml::from_str(&format!("[check]\n{text}")).unwrap();
        parse_check_table(f.check.get_ref(), f.check.span().start)
    }

    #[test]
    fn live_model_checks_take_a_tolerance_and_no_band() {
        let c = check(
            "strategy = \"a\"\nmetric = \"attempts\"\npublished = 123\nmode = \"live_model\"\n\
             tolerance = 1\ncause = \"1 ms of latency\"",
        )
        .unwrap();
        assert_eq!(c.mode, CheckMode::LiveModel);
        assert_eq!(c.tolerance, Some(1.0));
        assert_eq!(c.cause.as_deref(), Some("1 ms of latency"));
        assert!(c.mode.applies(true) && !c.mode.applies(false));
        let t = check(
            "strategy = \"a\"\nmetric = \"breaker_transitions\"\ntolerance_ms = 10\n\
             mode = \"live_model\"",
        )
        .unwrap();
        assert_eq!(
            t.metric,
            CheckMetric::BreakerTransitions { tolerance_ms: 10.0 }
        );
        for (text, key, says) in [
            (
                "metric = \"attempts\"\nmode = \"live_model\"\nmin = 1",
                "mode",
                "takes tolerance",
            ),
            (
                "metric = \"attempts\"\nmode = \"live_model\"\ntolerance = -1",
                "tolerance",
                "expected 0 or more",
            ),
            (
                "metric = \"breaker_transitions\"\nmode = \"live_model\"\ntolerance = 1",
                "tolerance",
                "takes tolerance_ms",
            ),
            (
                "metric = \"attempts\"\npublished = 1\nexact = true\ntolerance = 1",
                "tolerance",
                "only for mode = \"live_model\"",
            ),
            (
                "metric = \"attempts\"\nmode = \"model\"",
                "mode",
                "expected both, simulated, live or live_model",
            ),
        ] {
            let e = check(&format!("strategy = \"a\"\n{text}")).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e:?}");
            assert!(e.message.contains(says), "{text}: {}", e.message);
        }
    }

    #[test]
    fn seed_004_metrics_parse_and_name_what_they_need() {
        let c =
            check("strategy = \"a\"\nmetric = \"duplicate_charges\"\npublished = 0\nexact = true")
                .unwrap();
        assert_eq!(c.metric, CheckMetric::DuplicateCharges);
        assert_eq!(c.metric_label(), "duplicate charges (ledger)");
        let c = check("strategy = \"a\"\nmetric = \"permanent_latency_ratio\"\nversus = \"b\"")
            .unwrap();
        assert_eq!(c.strategies(), ["a", "b"]);
        assert!(check("strategy = \"a\"\nmetric = \"permanent_latency_ratio\"").is_err());
        let e = check("strategy = \"a\"\nmetric = \"retried_lost\"\nversus = \"b\"").unwrap_err();
        assert!(e.message.contains("permanent_latency_ratio"), "{e:?}");
        for (name, metric) in [
            ("retried_lost", CheckMetric::RetriedLost),
            (
                "duplicates_minus_retried_lost",
                CheckMetric::DuplicatesMinusRetriedLost,
            ),
            (
                "retries_after_permanent",
                CheckMetric::RetriesAfterPermanent,
            ),
            ("wasted_per_permanent_op", CheckMetric::WastedPerPermanentOp),
            ("network_timeouts", CheckMetric::NetworkTimeouts),
            ("done_twice", CheckMetric::DoneTwice),
            ("resets", CheckMetric::Resets),
            ("connections", CheckMetric::Connections),
            ("goodput_share", CheckMetric::GoodputShare),
            ("wasted_share", CheckMetric::WastedShare),
            ("recovered", CheckMetric::Recovered),
            ("out_of_rotation_s", CheckMetric::OutOfRotationS),
            ("critical_success", CheckMetric::CriticalSuccess),
            ("best_effort_success", CheckMetric::BestEffortSuccess),
            ("fanout_slow_share", CheckMetric::FanoutSlowShare),
            ("fanout_success", CheckMetric::FanoutSuccess),
            ("fanout_degraded_share", CheckMetric::FanoutDegradedShare),
            ("p999_ms", CheckMetric::P999Ms),
            ("extra_requests", CheckMetric::ExtraRequests),
            ("success_affected", CheckMetric::SuccessAffected),
            ("p99_ms", CheckMetric::P99Ms),
            ("peak_100ms", CheckMetric::Peak100Ms),
        ] {
            let c = check(&format!("strategy = \"a\"\nmetric = \"{name}\"")).unwrap();
            assert_eq!(c.metric, metric);
        }
    }

    #[test]
    fn checks_parse_with_their_band() {
        let c = check(
            "strategy = \"B\"\nmetric = \"peak_arrivals\"\nwindow_ms = 10\nretries_only = true\n\
             published = 1000\nexact = true\nmode = \"simulated\"",
        )
        .unwrap();
        assert_eq!(
            c.metric,
            CheckMetric::PeakArrivals {
                window_ms: 10,
                retries_only: true
            }
        );
        assert_eq!(c.published, Published::Number(1000.0));
        assert!(c.band.exact && c.mode == CheckMode::Simulated);
        assert!(c.band.holds(1000.0, 1000.0) && !c.band.holds(999.0, 1000.0));

        let c = check(
            "strategy = \"a\"\nmetric = \"attempts_ratio\"\nversus = \"b\"\npublished = 2.6\nmin = 2",
        )
        .unwrap();
        assert_eq!(c.strategies(), ["a", "b"]);
        assert!(c.band.holds(2.0, 2.6) && !c.band.holds(1.9, 2.6));
        assert_eq!(c.band.describe(), ">= 2");

        let c = check(
            "strategy = \"a\"\nmetric = \"breaker_transitions\"\npublished = [0.45, 2.45]\n\
             tolerance_ms = 10",
        )
        .unwrap();
        assert_eq!(c.published, Published::List(vec![0.45, 2.45]));
        let b = Band {
            more_than: Some(1.0),
            ..Band::default()
        };
        assert!(!b.holds(1.0, 0.0) && b.holds(1.01, 0.0));
    }

    #[test]
    fn bad_checks_name_their_key() {
        let e = |t: &str| check(t).unwrap_err();
        assert_eq!(
            e("metric = \"attempts\"\npublished = 1\nexact = true").key,
            "strategy"
        );
        let x = e("strategy = \"a\"\nmetric = \"speed\"\npublished = 1\nexact = true");
        assert!(x.message.contains("expected one of attempts"), "{x:?}");
        // A band alone is a threshold; exact needs a figure; a figure is a source's or the
        // model's, not both.
        let t = check("strategy = \"a\"\nmetric = \"attempts\"\nmin = 1").unwrap();
        assert_eq!(t.reference(), Reference::Threshold);
        assert!(t.band.holds(1.0, f64::NAN) && !t.band.holds(0.5, f64::NAN));
        let x = e("strategy = \"a\"\nmetric = \"attempts\"\nexact = true");
        assert_eq!(x.key, "exact");
        assert!(x.message.contains("needs the figure to equal"), "{x:?}");
        let m = check("strategy = \"a\"\nmetric = \"attempts\"\nmodel = 0.5\nmax = 0.6").unwrap();
        assert_eq!(
            (m.published.clone(), m.reference()),
            (Published::Number(0.5), Reference::Model)
        );
        let p = check("strategy = \"a\"\nmetric = \"attempts\"\npublished = 5\nmax = 6").unwrap();
        assert_eq!(p.reference(), Reference::Published);
        let x =
            e("strategy = \"a\"\nmetric = \"attempts\"\npublished = 1\nmodel = 1\nexact = true");
        assert!(x.message.contains("give one or the other"), "{x:?}");
        let r = check("strategy = \"a\"\nmetric = \"attempts\"").unwrap();
        assert_eq!(r.published, Published::None);
        assert_eq!(r.reference(), Reference::Reported);
        let x = e("strategy = \"a\"\nmetric = \"attempts\"\npublished = 1");
        assert!(x.message.contains("needs exact = true or a band"), "{x:?}");
        let x = e("strategy = \"a\"\nmetric = \"peak_arrivals\"\npublished = 1\nexact = true");
        assert!(x.message.contains("needs window_ms"), "{x:?}");
        let x = e(
            "strategy = \"a\"\nmetric = \"attempts\"\nwindow_ms = 5\npublished = 1\nexact = true",
        );
        assert_eq!(x.key, "window_ms");
        let x = e("strategy = \"a\"\nmetric = \"attempts_ratio\"\npublished = 1\nmin = 1");
        assert!(x.message.contains("needs versus"), "{x:?}");
        let x = e("strategy = \"a\"\nmetric = \"attempts\"\npublished = 1\nmin = 5\nmax = 4");
        assert_eq!(x.key, "max");
        let x = e(
            "strategy = \"a\"\nmetric = \"attempts\"\npublished = 1\nexact = true\nmode = \"x\"",
        );
        assert_eq!(x.key, "mode");
        let x =
            e("strategy = \"a\"\nmetric = \"attempts\"\npublished = 1\nexact = true\ncolour = 1");
        assert!(x.message.contains("unknown key `colour`"), "{x:?}");
        let x = e("strategy = \"a\"\nmetric = \"breaker_transitions\"\npublished = 1");
        assert!(x.message.contains("list of times"), "{x:?}");
    }
}
