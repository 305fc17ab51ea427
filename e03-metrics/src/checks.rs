//! A scenario's checks (`[[check]]` tables, [`e03_core::checks`]) evaluated on its runs, and
//! the per-caller attempt log of a small run.
//!
//! Every figure is computed from [`RunMetrics`] alone, so a live run (read from its logs) and a
//! simulated one are checked by the same code.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use e03_core::checks::{CheckMetric, CheckSpec, Published};

use crate::metrics::{AttemptLine, LineEnd, RunMetrics};
use crate::tables::Table;
use crate::ScenarioSummary;

/// One check on one seed's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    pub metric: String,
    pub strategy: String,
    pub seed: u64,
    pub ours: String,
    pub published: String,
    pub band: String,
    /// `None`: the check could not be evaluated (a strategy not run, no attempt log).
    pub pass: Option<bool>,
}

impl CheckRow {
    pub fn verdict(&self) -> &'static str {
        match self.pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None if self.published == "-" => "reported",
            None => "n/a",
        }
    }
}

/// The most arrivals in one window of `window_ms` aligned to time zero (retries only: attempt
/// number above 1).
pub fn peak_per_window(run: &RunMetrics, window_ms: u64, retries_only: bool) -> u64 {
    let width = window_ms.max(1) * 1000;
    let mut counts: std::collections::HashMap<u64, u64> = Default::default();
    for &(t_us, attempt) in &run.arrivals {
        if retries_only && attempt <= 1 {
            continue;
        }
        *counts.entry(t_us / width).or_default() += 1;
    }
    counts.values().copied().max().unwrap_or(0)
}

/// The waits before retries (sent minus the previous attempt's end, whole ms), per operation,
/// in order. `None` without an attempt log.
pub fn retry_waits_ms(run: &RunMetrics) -> Option<Vec<u64>> {
    if run.attempt_log.is_empty() {
        return None;
    }
    let mut waits = Vec::new();
    for (prev, line) in by_operation(&run.attempt_log) {
        if let Some(prev) = prev {
            waits.push(line.sent_us.saturating_sub(prev.end_us) / 1000);
        }
    }
    Some(waits)
}

/// Each attempt with the one before it in its operation, in the order of the log.
fn by_operation(log: &[AttemptLine]) -> Vec<(Option<&AttemptLine>, &AttemptLine)> {
    let mut last: std::collections::HashMap<(u32, u32), &AttemptLine> = Default::default();
    let mut out = Vec::with_capacity(log.len());
    for line in log {
        let prev = last.insert((line.client, line.op), line);
        out.push((prev, line));
    }
    out
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn seconds(list: &[f64]) -> String {
    list.iter()
        .map(|t| format!("{t:.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The checks of the summary's scenario that apply to it (live or simulated), one row per
/// check and seed, in the file's order.
pub fn evaluate(s: &ScenarioSummary) -> Vec<CheckRow> {
    let live = !s.simulated;
    let mut rows = Vec::new();
    for check in s
        .scenario
        .def()
        .checks
        .iter()
        .filter(|c| c.mode.applies(live))
    {
        for seed in s.seeds() {
            rows.push(evaluate_one(s, check, seed));
        }
    }
    rows
}

fn evaluate_one(s: &ScenarioSummary, check: &CheckSpec, seed: u64) -> CheckRow {
    let run = |id: &str| s.runs.iter().find(|r| r.strategy == id && r.seed == seed);
    let mut row = CheckRow {
        metric: check.metric_label(),
        strategy: check.strategy.clone(),
        seed,
        ours: "-".into(),
        published: match &check.published {
            Published::Number(n) => number(*n),
            Published::List(l) => seconds(l),
            Published::None => "-".into(),
        },
        band: check.band.describe(),
        pass: None,
    };
    let Some(mine) = run(&check.strategy) else {
        row.ours = "not run".into();
        return row;
    };
    let published = match check.published {
        Published::Number(n) => n,
        Published::List(_) | Published::None => 0.0,
    };
    let value: f64 = match &check.metric {
        CheckMetric::BottomCallsPerRequest
        | CheckMetric::OpMaxMs
        | CheckMetric::WastedMs
        | CheckMetric::LateCalls => {
            // A chain's figures come from its own runs (e03_metrics::chain).
            row.ours = "chain metric".into();
            return row;
        }
        CheckMetric::Attempts => mine.total_requests as f64,
        CheckMetric::Accepted => mine.succeeded as f64,
        CheckMetric::FailedFast => mine.failed_fast as f64,
        CheckMetric::PeakArrivals {
            window_ms,
            retries_only,
        } => peak_per_window(mine, *window_ms, *retries_only) as f64,
        CheckMetric::DistinctWaits => match retry_waits_ms(mine) {
            Some(w) => w.into_iter().collect::<BTreeSet<u64>>().len() as f64,
            None => {
                row.ours = "no attempt log".into();
                return row;
            }
        },
        CheckMetric::AttemptsRatio { versus } => {
            let Some(other) = run(versus) else {
                row.ours = format!("{versus} not run");
                return row;
            };
            mine.total_requests as f64 / other.total_requests.max(1) as f64
        }
        CheckMetric::PeakRatio {
            versus,
            window_ms,
            retries_only,
        } => {
            let Some(other) = run(versus) else {
                row.ours = format!("{versus} not run");
                return row;
            };
            let p = |r: &RunMetrics| peak_per_window(r, *window_ms, *retries_only) as f64;
            p(mine) / p(other).max(1.0)
        }
        CheckMetric::DuplicateCharges
        | CheckMetric::RetriedLost
        | CheckMetric::DuplicatesMinusRetriedLost
        | CheckMetric::RetriesAfterPermanent
        | CheckMetric::WastedPerPermanentOp => {
            let Some(l) = &mine.ledger else {
                row.ours = "no ledger figures".into();
                return row;
            };
            match &check.metric {
                CheckMetric::DuplicateCharges => l.duplicate_charges as f64,
                CheckMetric::RetriedLost => l.retried_lost as f64,
                CheckMetric::DuplicatesMinusRetriedLost => {
                    l.duplicate_charges as f64 - l.retried_lost as f64
                }
                CheckMetric::RetriesAfterPermanent => l.retries_after_permanent as f64,
                _ => l.wasted_per_permanent_op(),
            }
        }
        CheckMetric::PermanentLatencyRatio { versus } => {
            let Some(other) = run(versus) else {
                row.ours = format!("{versus} not run");
                return row;
            };
            let mean = |r: &RunMetrics| r.ledger.as_ref().map_or(0.0, |l| l.permanent_op_mean_ms);
            if mean(other) <= 0.0 {
                row.ours = format!("no permanent failure under {versus}");
                return row;
            }
            mean(mine) / mean(other)
        }
        CheckMetric::BreakerTransitions { tolerance_ms } => {
            let ours: Vec<f64> = mine.breaker.iter().map(|m| m.t_us as f64 / 1e6).collect();
            row.ours = seconds(&ours);
            row.band = format!("each within {} ms", number(*tolerance_ms));
            let Published::List(want) = &check.published else {
                row.band = String::new();
                return row;
            };
            row.pass = Some(
                ours.len() == want.len()
                    && ours
                        .iter()
                        .zip(want)
                        .all(|(a, b)| (a - b).abs() * 1000.0 <= tolerance_ms + 1e-9),
            );
            return row;
        }
    };
    row.ours = number(value);
    if check.published != Published::None {
        row.pass = Some(check.band.holds(value, published));
    }
    row
}

/// The check table, or `None` when the scenario has no check for this kind of run.
pub fn check_table(s: &ScenarioSummary) -> Option<Table> {
    let rows = evaluate(s);
    if rows.is_empty() {
        return None;
    }
    let many = s.seeds().len() > 1;
    let mut header = vec!["metric", "strategy"];
    if many {
        header.push("seed");
    }
    header.extend(["ours", "published", "band", "check"]);
    let mut t = Table {
        headers: header.into_iter().map(String::from).collect(),
        rows: Vec::new(),
    };
    for r in rows {
        let mut cells = vec![r.metric.clone(), r.strategy.clone()];
        if many {
            cells.push(r.seed.to_string());
        }
        cells.extend([
            r.ours.clone(),
            r.published.clone(),
            r.band.clone(),
            r.verdict().to_string(),
        ]);
        t.rows.push(cells);
    }
    Some(t)
}

/// Whether any check of the summary failed (one that could not be evaluated does not fail).
pub fn any_failed(s: &ScenarioSummary) -> bool {
    evaluate(s).iter().any(|r| r.pass == Some(false))
}

/// Most operations a run may have for its attempt log to be printed.
pub const ATTEMPT_LOG_OPERATIONS: u64 = 16;

/// The per-caller attempt log of each small run, as the source of `gateway4` prints it:
///
/// ```text
/// retry every 20 ms (immediate-20ms), seed 42: 4 callers, 68 attempts total, 4 accepted, peak 20 per 200 ms
///   caller 1 attempt 1: straight away -> DOWN at 26ms
///   caller 1 attempt 2: after 20ms -> DOWN at 72ms
/// ```
///
/// `None` when no run is small enough (at most [`ATTEMPT_LOG_OPERATIONS`] operations, and a
/// whole attempt log).
pub fn attempt_log_text(s: &ScenarioSummary) -> Option<String> {
    let mut out = String::new();
    for run in &s.runs {
        if run.operations > ATTEMPT_LOG_OPERATIONS || run.attempt_log.is_empty() {
            continue;
        }
        let callers: BTreeSet<u32> = run.attempt_log.iter().map(|l| l.client).collect();
        let _ = writeln!(
            out,
            "{}, seed {}: {} callers, {} attempts total, {} accepted, peak {} per 200 ms",
            s.strategy_label(&run.strategy),
            run.seed,
            callers.len(),
            run.total_requests,
            run.succeeded,
            peak_per_window(run, 200, false)
        );
        let mut lines = by_operation(&run.attempt_log);
        lines.sort_by_key(|(_, l)| (l.client, l.op, l.attempt));
        for (prev, l) in lines {
            let wait = match prev {
                None => "straight away".to_string(),
                Some(p) => format!("after {}ms", l.sent_us.saturating_sub(p.end_us) / 1000),
            };
            let end = match l.end {
                LineEnd::Status(code) if (200..300).contains(&code) => "ACCEPTED".to_string(),
                LineEnd::Status(503) => "DOWN".to_string(),
                LineEnd::Status(code) => format!("FAILED {code}"),
                LineEnd::Timeout => "TIMEOUT".into(),
                LineEnd::ConnectionError => "CONNECTION ERROR".into(),
                LineEnd::FailedFast => "FAILED FAST".into(),
                LineEnd::Unanswered => "NO ANSWER".into(),
            };
            let op = if run.operations > callers.len() as u64 {
                format!(" op {}", l.op + 1)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  caller {}{op} attempt {}: {wait} -> {end} at {}ms",
                l.client + 1,
                l.attempt,
                l.end_us / 1000
            );
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RunAccumulator;
    use e03_core::{Params, Scenario};

    fn run_with(arrivals: &[(u64, u32)]) -> RunMetrics {
        let mut a = RunAccumulator::new(Scenario::E03B, &Params::default(), "C", 1);
        for &(t, n) in arrivals {
            a.arrival(t, Some(n));
        }
        a.finish()
    }

    #[test]
    fn peaks_count_aligned_windows_and_may_skip_first_attempts() {
        let r = run_with(&[(0, 1), (5_000, 1), (9_999, 2), (10_000, 2), (12_000, 3)]);
        assert_eq!(peak_per_window(&r, 10, false), 3);
        assert_eq!(peak_per_window(&r, 10, true), 2);
        assert_eq!(peak_per_window(&r, 1000, false), 5);
    }

    #[test]
    fn waits_are_measured_from_the_previous_answer_of_the_same_operation() {
        let mut a = RunAccumulator::new(Scenario::E03B, &Params::default(), "C", 1);
        let line = |client, attempt, sent_us, end_us| AttemptLine {
            client,
            op: 0,
            attempt,
            sent_us,
            end_us,
            end: LineEnd::Status(503),
        };
        a.attempt_line(line(0, 1, 0, 26_000));
        a.attempt_line(line(1, 1, 0, 26_000));
        a.attempt_line(line(0, 2, 46_000, 72_000));
        a.attempt_line(line(1, 2, 79_000, 105_000));
        a.attempt_line(line(0, 3, 92_000, 118_000));
        let r = a.finish();
        assert_eq!(retry_waits_ms(&r), Some(vec![20, 53, 20]));
    }

    #[test]
    fn the_breaker_scenario_checks_its_transitions_with_a_tolerance() {
        let scenario = Scenario::named("breaker").unwrap();
        let params = Params::for_scenario(scenario, &Default::default()).unwrap();
        let mut a = RunAccumulator::new(scenario, &params, "breaker", 42);
        use e03_core::breaker::BreakerState::*;
        for (t, from, to) in [
            (450_000, Closed, Open),
            (2_450_000, Open, HalfOpen),
            (2_450_000, HalfOpen, Open),
            (4_450_000, Open, HalfOpen),
            (4_450_000, HalfOpen, Open),
            (6_450_000, Open, HalfOpen),
            (6_459_000, HalfOpen, Closed),
        ] {
            a.breaker_change(t, from, to);
        }
        for _ in 0..117 {
            a.failed_fast();
        }
        for k in 0..123 {
            a.arrival(k * 50_000, Some(1));
        }
        let summary = ScenarioSummary {
            scenario,
            params,
            simulated: true,
            complete: true,
            runs: vec![a.finish()],
        };
        let rows = evaluate(&summary);
        assert_eq!(rows.len(), 3, "the simulated checks only");
        assert!(rows.iter().all(|r| r.pass == Some(true)), "{rows:?}");
        assert_eq!(rows[0].ours, "123");
        // 11 ms late at 6.45 s: outside 10 ms.
        let mut late = summary.clone();
        late.runs[0].breaker[6].t_us = 6_461_000;
        assert_eq!(evaluate(&late)[2].pass, Some(false));
        assert!(any_failed(&late) && !any_failed(&summary));
        // Live, the live checks apply (within 2 calls and 60 ms).
        let mut live = late.clone();
        live.simulated = false;
        let rows = evaluate(&live);
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.pass == Some(true)), "{rows:?}");
    }
}
