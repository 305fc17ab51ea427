//! Thresholds as data: a scenario's `[[threshold]]` tables, the bounds a team's CI holds a run
//! to (k6's thresholds: a breach ends the run with exit code 99, and `abortOnFail` stops it
//! early; grafana/k6 docs, "Thresholds").
//!
//! ```toml
//! [[threshold]]
//! strategy = "C"                # a strategy of the run
//! metric = "success_affected"   # any check metric (see crate::checks::CheckMetric), with the
//!                               # summary's own: success_affected (0 to 1), p99_ms, peak_100ms
//! more_than = 0.95              # a bound: any of min, max, more_than, less_than
//! abort_after_s = 2             # optional, live runs: stop the run once a breach has lasted
//!                               # this long (judged per 1 s window while the run goes on)
//! ```
//!
//! A threshold takes a `[[check]]`'s keys and is read by the check's own parser
//! ([`crate::checks::parse_check_table`]), less those that compare with a figure (`published`,
//! `model`, `exact`, `mode`, `tolerance`, `cause`): a threshold is a bound, judged on every run
//! it applies to, live or simulated.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::checks::{parse_check_table, Band, CheckMetric, CheckSpec};
use crate::toml_table::{fail_at, TableError};

/// One `[[threshold]]`: a check's metric and strategy with a bound, and how long a breach may
/// last in a live run before the run is stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdSpec {
    /// The metric, strategy and bound, as a check with a band alone.
    pub check: CheckSpec,
    /// Live runs: stop the run once the bound has been broken this long, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_after_s: Option<f64>,
}

impl ThresholdSpec {
    /// How every output names it: `success (affected) of C > 0.95`.
    pub fn label(&self) -> String {
        format!(
            "{} of {} {}",
            self.check.metric_label(),
            self.check.strategy,
            self.check.band.describe()
        )
    }

    /// Whether the live run can judge it on the figures so far while it goes on: the metrics
    /// the lab follows in the client logs ([`LIVE_METRICS`]).
    pub fn followed_live(&self) -> bool {
        matches!(
            self.check.metric,
            CheckMetric::SuccessAffected | CheckMetric::P99Ms
        )
    }
}

/// The keys a `[[threshold]]` takes: a check's, less the figure ones, plus `abort_after_s`.
pub const THRESHOLD_KEYS: &[&str] = &[
    "strategy",
    "metric",
    "min",
    "max",
    "more_than",
    "less_than",
    "window_ms",
    "retries_only",
    "versus",
    "dependency",
    "abort_after_s",
];

/// The metrics an `abort_after_s` threshold may read: those the lab computes from the client
/// logs as they are written.
pub const LIVE_METRICS: &str = "success_affected, p99_ms";

type Table = BTreeMap<String, Spanned<toml::Value>>;

/// Reads one `[[threshold]]` table (`at`: where it starts). The strategy ids are checked against
/// the run's strategies later, by the scenario, as a check's are.
pub fn parse_threshold_table(table: &Table, at: usize) -> Result<ThresholdSpec, TableError> {
    if let Some((key, _)) = table
        .iter()
        .find(|(k, _)| !THRESHOLD_KEYS.contains(&k.as_str()))
    {
        return fail_at(
            table,
            at,
            key,
            format!(
                "unknown key `{key}` in [[threshold]]: expected one of {} (a threshold is a \
                 bound, not a comparison with a published figure)",
                THRESHOLD_KEYS.join(", ")
            ),
        );
    }
    let abort_after_s = match table.get("abort_after_s").map(|v| v.get_ref()) {
        None => None,
        Some(v) => {
            let n = match v {
                toml::Value::Integer(i) => Some(*i as f64),
                toml::Value::Float(f) => Some(*f),
                _ => None,
            };
            match n {
                Some(n) if n.is_finite() && (0.0..=86_400.0).contains(&n) => Some(n),
                _ => {
                    return fail_at(
                        table,
                        at,
                        "abort_after_s",
                        format!(
                            "abort_after_s = {v}: expected a number of seconds from 0 to 86400"
                        ),
                    )
                }
            }
        }
    };
    let mut rest = table.clone();
    rest.remove("abort_after_s");
    let check = parse_check_table(&rest, at).map_err(|e| TableError {
        message: e.message.replace("[[check]]", "[[threshold]]"),
        ..e
    })?;
    if check.band == Band::default() || check.metric.is_chain() {
        let why = if check.metric.is_chain() {
            "a chain's metric is not judged as a threshold yet".to_string()
        } else {
            "a [[threshold]] needs a bound: min, max, more_than or less_than".to_string()
        };
        return fail_at(table, at, "metric", why);
    }
    if matches!(check.metric, CheckMetric::BreakerTransitions { .. }) {
        return fail_at(
            table,
            at,
            "metric",
            "metric = \"breaker_transitions\": a threshold bounds a number".into(),
        );
    }
    let spec = ThresholdSpec {
        check,
        abort_after_s,
    };
    if spec.abort_after_s.is_some() && !spec.followed_live() {
        return fail_at(
            table,
            at,
            "abort_after_s",
            format!(
                "abort_after_s with metric = {:?}: a live run follows only {LIVE_METRICS} while \
                 it goes on; judge this metric at the end (no abort_after_s)",
                spec.check.metric_label()
            ),
        );
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threshold(text: &str) -> Result<ThresholdSpec, TableError> {
        let t: Table = toml::from_str(text).unwrap();
        parse_threshold_table(&t, 0)
    }

    #[test]
    fn a_threshold_takes_a_checks_keys_and_abort_after_s() {
        let t = threshold(
            "strategy = \"C\"\nmetric = \"success_affected\"\nmore_than = 0.95\nabort_after_s = 2",
        )
        .unwrap();
        assert_eq!(t.check.metric, CheckMetric::SuccessAffected);
        assert_eq!(t.check.band.more_than, Some(0.95));
        assert_eq!(t.abort_after_s, Some(2.0));
        assert_eq!(t.label(), "success (affected) of C > 0.95");
        assert!(t.check.band.holds(0.96, f64::NAN) && !t.check.band.holds(0.95, f64::NAN));
        let t = threshold("strategy = \"B\"\nmetric = \"peak_100ms\"\nmax = 150").unwrap();
        assert_eq!(
            (t.check.metric.clone(), t.abort_after_s),
            (CheckMetric::Peak100Ms, None)
        );
        assert_eq!(t.label(), "peak 100 ms of B <= 150");
        let t = threshold(
            "strategy = \"B\"\nmetric = \"peak_arrivals\"\nwindow_ms = 10\nless_than = 9",
        )
        .unwrap();
        assert_eq!(t.label(), "peak arrivals per 10 ms of B < 9");
    }

    /// One case per error: the key it names and words of its message.
    #[test]
    fn each_bad_threshold_names_its_key() {
        for (text, key, said) in [
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"\nmax = 1\npublished = 3",
                "published",
                "unknown key `published` in [[threshold]]",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"\nmax = 1\nmode = \"live\"",
                "mode",
                "unknown key `mode`",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"",
                "metric",
                "needs a bound: min, max, more_than or less_than",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99\"\nmax = 1",
                "metric",
                "metric = \"p99\": expected one of",
            ),
            (
                "metric = \"p99_ms\"\nmax = 1",
                "strategy",
                "a [[threshold]] needs strategy",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"\nmax = \"fast\"",
                "max",
                "max = \"fast\": expected a number",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"\nmax = 1\nabort_after_s = -1",
                "abort_after_s",
                "abort_after_s = -1: expected a number of seconds from 0 to 86400",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"\nmax = 1\nabort_after_s = \"2s\"",
                "abort_after_s",
                "expected a number of seconds",
            ),
            (
                "strategy = \"C\"\nmetric = \"attempts\"\nmax = 1\nabort_after_s = 1",
                "abort_after_s",
                "a live run follows only success_affected, p99_ms",
            ),
            (
                "strategy = \"C\"\nmetric = \"breaker_transitions\"\ntolerance_ms = 5",
                "tolerance_ms",
                "unknown key `tolerance_ms`",
            ),
            (
                "strategy = \"C\"\nmetric = \"op_max_ms\"\nmax = 5",
                "metric",
                "a chain's metric",
            ),
            (
                "strategy = \"C\"\nmetric = \"p99_ms\"\nmin = 5\nmax = 1",
                "max",
                "max = 1: expected at least min (5)",
            ),
        ] {
            let e = threshold(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e:?}");
            assert!(e.message.contains(said), "{text}: {}", e.message);
        }
    }
}
