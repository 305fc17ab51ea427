//! A scenario's checks (`[[check]]` tables, [`e03_plan::checks`]) evaluated on its runs, and
//! the per-caller attempt log of a small run.
//!
//! Every figure is computed from [`RunMetrics`] alone, so a live run (read from its logs) and a
//! simulated one are checked by the same code.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use e03_model::balancer::Change;
use e03_plan::checks::{CheckMetric, CheckMode, CheckSpec, Published, Reference};

use crate::metrics::{AttemptLine, LineEnd, RunMetrics};
use crate::peaks::ATTEMPT_LOG_WINDOW_MS;
use crate::table::Table;
use crate::ScenarioSummary;

/// One check on one seed's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    pub metric: String,
    pub strategy: String,
    pub seed: u64,
    pub ours: String,
    /// What ours is compared with, named: `published 24.30` (a source's figure), `model 0.50`
    /// (the model's), `threshold` (a band alone), `-` (only reported).
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
/// number above 1). From the run's list of arrivals when it kept one, else from the peaks
/// counted as the arrivals came ([`RunMetrics::peak_arrivals`]: every window of the run's
/// scenario's checks and of [`attempt_log_text`]).
pub fn peak_per_window(run: &RunMetrics, window_ms: u64, retries_only: bool) -> u64 {
    if run.arrivals.is_empty() {
        if let Some(&peak) = run.peak_arrivals.get(&(window_ms, retries_only)) {
            return peak;
        }
        // A run that counted its peaks as they came counted every window its callers ask
        // about; a window it did not count would read as 0 here.
        debug_assert!(
            run.peak_arrivals.is_empty(),
            "the {window_ms} ms window was not counted (RunMetrics::peak_arrivals)"
        );
    }
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
/// check and seed, in the file's order; none for a run that cannot be trusted
/// ([`crate::trust::Trust`]).
pub fn evaluate(s: &ScenarioSummary) -> Vec<CheckRow> {
    // An incomplete or unmatched run is judged by nothing (its banner says why).
    if !crate::trust::Trust::of(s).judges() {
        return Vec::new();
    }
    evaluate_with_specs(s).into_iter().map(|(_, r)| r).collect()
}

/// [`evaluate`]'s rows, each beside the check it comes from.
fn evaluate_with_specs(s: &ScenarioSummary) -> Vec<(&CheckSpec, CheckRow)> {
    let live = !s.simulated;
    let seeds = s.seeds();
    let mut rows = Vec::new();
    for check in s
        .scenario
        .def()
        .checks
        .iter()
        .filter(|c| c.mode.applies(live))
    {
        for &seed in &seeds {
            rows.push((check, evaluate_one(s, check, seed)));
        }
    }
    rows
}

/// One check's figure in one seed's runs: a number, or the breaker's transition times (s).
enum Figure {
    Number(f64),
    Times(Vec<f64>),
}

impl Figure {
    fn text(&self) -> String {
        match self {
            Figure::Number(v) => number(*v),
            Figure::Times(t) => seconds(t),
        }
    }
}

/// Why a check has no figure in one seed's runs: its text is shown in the figure's place.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NoFigure {
    /// A strategy the check reads was not run: the one it compares against, or (`None`) its own.
    NotRun(Option<String>),
    /// The runs hold nothing to read: what is missing (`no attempt log`, ...).
    Missing(&'static str),
    /// The strategy compared against had no permanent failure to measure.
    NoPermanentFailure(String),
}

impl From<&'static str> for NoFigure {
    fn from(what: &'static str) -> Self {
        NoFigure::Missing(what)
    }
}

impl std::fmt::Display for NoFigure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoFigure::NotRun(None) => f.write_str("not run"),
            NoFigure::NotRun(Some(id)) => write!(f, "{id} not run"),
            NoFigure::Missing(what) => f.write_str(what),
            NoFigure::NoPermanentFailure(id) => write!(f, "no permanent failure under {id}"),
        }
    }
}

/// The figure `check` reads from `runs` for `seed`, or what to show instead (a strategy not
/// run, no attempt log, ...).
fn figure(runs: &[RunMetrics], check: &CheckSpec, seed: u64) -> Result<Figure, NoFigure> {
    let run = |id: &str| runs.iter().find(|r| r.strategy == id && r.seed == seed);
    let Some(mine) = run(&check.strategy) else {
        return Err(NoFigure::NotRun(None));
    };
    let value: f64 = match &check.metric {
        CheckMetric::BottomCallsPerRequest
        | CheckMetric::OpMaxMs
        | CheckMetric::WastedMs
        | CheckMetric::LateCalls => {
            // A chain's figures come from its own runs (e03_metrics::chain).
            return Err("chain metric".into());
        }
        CheckMetric::GoodputShare | CheckMetric::WastedShare => match &mine.open_loop {
            Some(o) if matches!(check.metric, CheckMetric::GoodputShare) => o.goodput_share(),
            Some(o) => o.wasted_share(),
            None => return Err("not an open-loop run".into()),
        },
        CheckMetric::Recovered => match &mine.open_loop {
            Some(o) if o.trigger_end_s.is_some() => f64::from(u8::from(o.recovery_s.is_some())),
            Some(_) => return Err("no trigger in the timeline".into()),
            None => return Err("not an open-loop run".into()),
        },
        CheckMetric::OutOfRotationS => mine
            .hosts
            .iter()
            .find(|h| matches!(h.change, Change::Unhealthy | Change::Ejected))
            .map(|h| h.t_us as f64 / 1e6)
            .ok_or("no replica left the rotation")?,
        CheckMetric::CriticalSuccess => mine.critical().success().ok_or("no critical operation")?,
        CheckMetric::BestEffortSuccess => mine
            .best_effort
            .success()
            .ok_or("no best-effort operation")?,
        CheckMetric::FanoutSlowShare => mine
            .fanout
            .as_ref()
            .and_then(|f| f.slow_share())
            .ok_or("no fan-out request")?,
        CheckMetric::FanoutSuccess => mine
            .fanout
            .as_ref()
            .and_then(|f| f.success())
            .ok_or("no fan-out request")?,
        CheckMetric::DependencySuccess { dependency } => mine
            .dependencies
            .get(*dependency as usize)
            .and_then(|d| d.success())
            .ok_or("no operation to that dependency (E03_BALANCER=partition)")?,
        CheckMetric::DependencyP99Ms { dependency } => {
            mine.dependencies
                .get(*dependency as usize)
                .filter(|d| d.operations > 0)
                .ok_or("no operation to that dependency (E03_BALANCER=partition)")?
                .p99_ms
        }
        CheckMetric::FanoutDegradedShare => mine
            .fanout
            .as_ref()
            .and_then(|f| f.degraded_share())
            .ok_or("no fan-out request")?,
        CheckMetric::P999Ms => mine.p999_ms,
        CheckMetric::SuccessAffected => mine.success_affected,
        CheckMetric::P99Ms => mine.p99_ms,
        CheckMetric::Peak100Ms => mine.peak_100ms as f64,
        CheckMetric::P999Reduction { versus } => {
            let other = run(versus).ok_or_else(|| NoFigure::NotRun(Some(versus.clone())))?;
            if mine.p999_ms <= 0.0 {
                return Err("no p99.9".into());
            }
            other.p999_ms / mine.p999_ms
        }
        CheckMetric::ExtraRequests => {
            if mine.operations == 0 {
                return Err("no operation".into());
            }
            100.0 * (mine.total_requests as f64 / mine.operations as f64 - 1.0)
        }
        CheckMetric::Attempts => mine.total_requests as f64,
        CheckMetric::Accepted => mine.succeeded as f64,
        CheckMetric::FailedFast => mine.failed_fast as f64,
        CheckMetric::ConnectRefused => mine.no_answer.connect_refused as f64,
        CheckMetric::Timeouts => mine.no_answer.timeout as f64,
        CheckMetric::NetworkTimeouts => mine.wire.map_or(0, |w| w.network_timeouts) as f64,
        CheckMetric::DoneTwice => mine.wire.map_or(0, |w| w.done_twice) as f64,
        CheckMetric::Resets => mine.no_answer.reset_before_answer as f64,
        CheckMetric::Connections => mine.wire.map_or(0, |w| w.connections) as f64,
        CheckMetric::PeakArrivals {
            window_ms,
            retries_only,
        } => peak_per_window(mine, *window_ms, *retries_only) as f64,
        CheckMetric::DistinctWaits => match retry_waits_ms(mine) {
            Some(w) => w.into_iter().collect::<BTreeSet<u64>>().len() as f64,
            None => return Err("no attempt log".into()),
        },
        CheckMetric::AttemptsRatio { versus } => {
            let other = run(versus).ok_or_else(|| NoFigure::NotRun(Some(versus.clone())))?;
            mine.total_requests as f64 / other.total_requests.max(1) as f64
        }
        CheckMetric::PeakRatio {
            versus,
            window_ms,
            retries_only,
        } => {
            let other = run(versus).ok_or_else(|| NoFigure::NotRun(Some(versus.clone())))?;
            let p = |r: &RunMetrics| peak_per_window(r, *window_ms, *retries_only) as f64;
            p(mine) / p(other).max(1.0)
        }
        CheckMetric::DuplicateCharges
        | CheckMetric::RetriedLost
        | CheckMetric::DuplicatesMinusRetriedLost
        | CheckMetric::RetriesAfterPermanent
        | CheckMetric::WastedPerPermanentOp => {
            let l = mine.ledger.as_ref().ok_or("no ledger figures")?;
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
            let other = run(versus).ok_or_else(|| NoFigure::NotRun(Some(versus.clone())))?;
            let mean = |r: &RunMetrics| r.ledger.as_ref().map_or(0.0, |l| l.permanent_op_mean_ms);
            if mean(other) <= 0.0 {
                return Err(NoFigure::NoPermanentFailure(versus.clone()));
            }
            mean(mine) / mean(other)
        }
        CheckMetric::BreakerTransitions { .. } => {
            return Ok(Figure::Times(
                mine.breaker.iter().map(|m| m.t_us as f64 / 1e6).collect(),
            ))
        }
    };
    Ok(Figure::Number(value))
}

/// Whether `ours` lists as many times as `want`, each within `tolerance_ms`.
fn times_match(ours: &[f64], want: &[f64], tolerance_ms: f64) -> bool {
    ours.len() == want.len()
        && ours
            .iter()
            .zip(want)
            .all(|(a, b)| (a - b).abs() * 1000.0 <= tolerance_ms + 1e-9)
}

/// What a check compares ours with, as its row's `against` cell names it: `published 24.3`,
/// `model 0.5`, `threshold` or `-` (only reported).
pub fn against(check: &CheckSpec) -> String {
    let figure = match &check.published {
        Published::Number(n) => number(*n),
        Published::List(l) => seconds(l),
        Published::None => String::new(),
    };
    match check.reference() {
        Reference::Published => format!("published {figure}"),
        Reference::Model => format!("model {figure}"),
        Reference::Threshold => "threshold".into(),
        Reference::Reported => "-".into(),
    }
}

/// One check (or a threshold's band, [`crate::thresholds`]) on one seed's runs.
pub(crate) fn evaluate_spec(s: &ScenarioSummary, check: &CheckSpec, seed: u64) -> CheckRow {
    evaluate_one(s, check, seed)
}

fn evaluate_one(s: &ScenarioSummary, check: &CheckSpec, seed: u64) -> CheckRow {
    let mut row = CheckRow {
        metric: check.metric_label(),
        strategy: check.strategy.clone(),
        seed,
        ours: "-".into(),
        published: against(check),
        band: check.band.describe(),
        pass: None,
    };
    let ours = match figure(&s.runs, check, seed) {
        Ok(f) => f,
        Err(shown) => {
            row.ours = shown.to_string();
            return row;
        }
    };
    row.ours = ours.text();
    if check.mode == CheckMode::LiveModel {
        return against_model(s, check, seed, &ours, row);
    }
    match (&ours, &check.metric, &check.published) {
        (Figure::Times(t), CheckMetric::BreakerTransitions { tolerance_ms }, published) => {
            row.band = format!("each within {} ms", number(*tolerance_ms));
            match published {
                Published::List(want) => row.pass = Some(times_match(t, want, *tolerance_ms)),
                _ => row.band = String::new(),
            }
        }
        (Figure::Number(v), _, Published::Number(n)) => row.pass = Some(check.band.holds(*v, *n)),
        // A threshold: the band alone (never `exact`, which needs a figure).
        (Figure::Number(v), _, Published::None) if check.reference() == Reference::Threshold => {
            row.pass = Some(check.band.holds(*v, f64::NAN))
        }
        _ => {}
    }
    row
}

/// A `live_model` check: ours against the model's figure for the same seed (the published
/// figure, if any, is shown under the table by [`check_notes`]).
fn against_model(
    s: &ScenarioSummary,
    check: &CheckSpec,
    seed: u64,
    ours: &Figure,
    mut row: CheckRow,
) -> CheckRow {
    let Some(model) = &s.model else {
        row.published = "no model run".into();
        row.band = "model".into();
        return row;
    };
    // The latency the model ran at, when the run had failures to measure it from.
    let at = if model.failures == 0 {
        String::new()
    } else {
        format!(", at {:.2} ms", model.failure_latency_us as f64 / 1000.0)
    };
    let theirs = match figure(&model.runs, check, seed) {
        Ok(f) => f,
        Err(shown) => {
            row.published = format!("model: {shown}");
            return row;
        }
    };
    row.published = format!("model {}", theirs.text());
    match (ours, &theirs, &check.metric) {
        (Figure::Times(a), Figure::Times(b), CheckMetric::BreakerTransitions { tolerance_ms }) => {
            row.band = format!("each ± {} ms{at}", number(*tolerance_ms));
            row.pass = Some(times_match(a, b, *tolerance_ms));
        }
        (Figure::Number(a), Figure::Number(b), _) => {
            let tolerance = check.tolerance.unwrap_or(0.0);
            row.band = format!("± {}{at}", number(tolerance));
            row.pass = Some((a - b).abs() <= tolerance + 1e-9);
        }
        _ => {}
    }
    row
}

/// The median time from sending an attempt that a down phase failed (its status is a down
/// phase's) or a refused phase refused (its connect was refused) to knowing it failed, in µs,
/// over every run's attempt log, with how many such attempts there were; `None` when no run
/// kept an attempt log with such an attempt.
pub fn failure_latency_us(s: &ScenarioSummary) -> Option<(u64, usize)> {
    let timeline = s.params.timeline(&s.scenario);
    let statuses: Vec<u16> = timeline.down.iter().map(|d| d.status).collect();
    let refused = timeline.refused();
    let mut latencies: Vec<u64> = s
        .runs
        .iter()
        .flat_map(|r| &r.attempt_log)
        .filter(|l| match l.end {
            LineEnd::Status(st) => statuses.contains(&st),
            LineEnd::Broken(e03_model::attempt::Broken::ConnectRefused) => refused,
            _ => false,
        })
        .map(|l| l.end_us.saturating_sub(l.sent_us))
        .collect();
    if latencies.is_empty() {
        return None;
    }
    latencies.sort_unstable();
    // The lower median of an even count: a measured value, not an average of two.
    Some((latencies[(latencies.len() - 1) / 2], latencies.len()))
}

/// Whether the summary is live and has a `live_model` check (so it needs a [`crate::ModelRun`]).
pub fn needs_model(s: &ScenarioSummary) -> bool {
    !s.simulated
        && s.scenario
            .def()
            .checks
            .iter()
            .any(|c| c.mode == CheckMode::LiveModel)
}

/// One line per failed check: the metric, the strategy (and seed), ours, the published
/// figure, the band, and the check's known cause in words when its file gives one.
pub fn fail_lines(s: &ScenarioSummary) -> Vec<String> {
    let seeds = s.seeds();
    let mut lines = Vec::new();
    for (check, r) in evaluate_with_specs(s) {
        if r.pass != Some(false) {
            continue;
        }
        let seed_text = if seeds.len() > 1 {
            format!(", seed {}", r.seed)
        } else {
            String::new()
        };
        let mut line = format!(
            "FAIL {} of {}{seed_text}: ours {}, {}, band {}",
            r.metric, r.strategy, r.ours, r.published, r.band
        );
        if let Some(cause) = &check.cause {
            line.push_str(&format!("; known cause: {cause}"));
        }
        lines.push(line);
    }
    lines
}

/// The known causes the scenario's applicable checks give, one line each (`metric of strategy:
/// cause`), printed under the check table.
pub fn check_notes(s: &ScenarioSummary) -> Vec<String> {
    let live = !s.simulated;
    let mut notes: Vec<String> = Vec::new();
    if let (true, Some(m)) = (live, &s.model) {
        // A down answer, or a refused connect (a refused phase): what the run's failures were.
        let what = if s.params.timeline(&s.scenario).down.is_empty() {
            "refused connect"
        } else {
            "down answer"
        };
        if m.failures == 0 {
            notes.push(
                "model: the same runs simulated (no down or refused phase: no failure latency \
                 to measure)"
                    .into(),
            );
        } else {
            notes.push(format!(
                "model: the same runs simulated with every {what} {:.2} ms after its attempt \
             (the median failure latency measured in this run, over {} failed attempts)",
                m.failure_latency_us as f64 / 1000.0,
                m.failures
            ));
        }
    }
    for c in s
        .scenario
        .def()
        .checks
        .iter()
        .filter(|c| c.mode.applies(live))
    {
        let source = match (&c.published, c.mode) {
            (Published::Number(n), CheckMode::LiveModel) => {
                format!("the source published {}", number(*n))
            }
            (Published::List(l), CheckMode::LiveModel) => {
                format!("the source published {}", seconds(l))
            }
            _ => String::new(),
        };
        let line = match (&c.cause, source.is_empty()) {
            (Some(cause), true) => format!("{} of {}: {cause}", c.metric_label(), c.strategy),
            (Some(cause), false) => {
                format!("{} of {}: {source}; {cause}", c.metric_label(), c.strategy)
            }
            (None, false) => format!("{} of {}: {source}", c.metric_label(), c.strategy),
            (None, true) => continue,
        };
        if !notes.contains(&line) {
            notes.push(line);
        }
    }
    notes
}

/// The check table's heading: what a row's `against` cell may name.
pub const CHECK_HEADING: &str =
    "Checks: ours against a source's published figure, the model's, or a threshold";

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
    header.extend(["ours", "against", "band", "check"]);
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
            peak_per_window(run, ATTEMPT_LOG_WINDOW_MS, false)
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
                LineEnd::Broken(b) => b.name().to_uppercase().replace('_', " "),
                LineEnd::FailedFast => "FAILED FAST".into(),
                LineEnd::Unanswered => "NO ANSWER".into(),
                LineEnd::Cancelled => "CANCELLED".into(),
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
    use e03_plan::{Params, Scenario};

    fn run_with(arrivals: &[(u64, u32)]) -> RunMetrics {
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
        for &(t, n) in arrivals {
            a.arrival(t, Some(n));
        }
        a.finish()
    }

    #[test]
    fn peaks_counted_as_arrivals_come_equal_those_of_the_arrival_list() {
        // herd's checks ask for 10 ms windows of retries; the attempt log for 200 ms of all.
        let scenario = Scenario::named("herd").unwrap();
        let params = Params::for_scenario(&scenario, &Default::default()).unwrap();
        let new = || RunAccumulator::new(scenario.clone(), &params, "C", 1);
        let (mut listed, mut counted) = (new(), new().without_arrival_list());
        // Out of time order now and then, with and without attempt numbers, and past MAX_T_US.
        let mut t = 0u64;
        for i in 0..20_000u64 {
            t = if i % 97 == 0 {
                t.saturating_sub(250_000)
            } else {
                t + i % 7 * 900
            };
            let attempt = (i % 5 != 0).then_some((i % 4) as u32);
            listed.arrival(t, attempt);
            counted.arrival(t, attempt);
        }
        listed.arrival(u64::MAX, Some(2));
        counted.arrival(u64::MAX, Some(2));
        let (listed, counted) = (listed.finish(), counted.finish());
        assert!(counted.arrivals.is_empty());
        assert_eq!(
            counted.peak_arrivals.len(),
            2,
            "{:?}",
            counted.peak_arrivals
        );
        for (window_ms, retries_only) in [(10, true), (200, false)] {
            let peak = peak_per_window(&listed, window_ms, retries_only);
            assert!(peak > 1);
            assert_eq!(peak_per_window(&counted, window_ms, retries_only), peak);
        }
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
        let mut a = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 1);
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
        let params = Params::for_scenario(&scenario, &Default::default()).unwrap();
        let mut a = RunAccumulator::new(scenario.clone(), &params, "breaker", 42);
        use e03_model::breaker::BreakerState::*;
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
            model: None,
            machine: None,
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
        let fails = fail_lines(&late);
        assert_eq!(fails.len(), 1, "{fails:?}");
        assert!(
            fails[0].starts_with("FAIL breaker transitions (s) of breaker: ours ")
                && fails[0].contains("6.461")
                && fails[0].contains("published 0.450 2.450")
                && fails[0].contains("band each within 10 ms"),
            "{}",
            fails[0]
        );
        // Live, the live_model checks apply: without a model run they cannot be judged.
        let mut live = late.clone();
        live.simulated = false;
        assert!(needs_model(&live) && !needs_model(&summary));
        let rows = evaluate(&live);
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.pass.is_none()), "{rows:?}");
        assert_eq!(rows[0].published, "no model run");
        // Against a model with the same figures (6.461 s within 10 ms of 6.459 s): PASS, with
        // the article's figure shown beside the model's.
        live.model = Some(crate::ModelRun {
            failure_latency_us: 1000,
            failures: 117,
            runs: summary.runs.clone(),
        });
        let rows = evaluate(&live);
        assert!(rows.iter().all(|r| r.pass == Some(true)), "{rows:?}");
        assert_eq!(rows[0].published, "model 123");
        assert_eq!(rows[0].band, "± 1, at 1.00 ms");
        assert_eq!(rows[2].band, "each ± 10 ms, at 1.00 ms");
        // Two calls more than the model: outside its tolerance of 1; the FAIL line says why.
        for k in 0..2 {
            live.runs[0].arrivals.push((7_000_000 + k, 1));
        }
        live.runs[0].total_requests += 2;
        let rows = evaluate(&live);
        assert_eq!(rows[0].pass, Some(false), "{rows:?}");
        let fails = fail_lines(&live);
        assert_eq!(fails.len(), 1, "{fails:?}");
        assert!(
            fails[0].contains("ours 125, model 123, band ± 1, at 1.00 ms")
                && fails[0].contains("known cause: the break (2 s) is an exact multiple"),
            "{}",
            fails[0]
        );
        let notes = check_notes(&live);
        assert!(
            notes[0].starts_with("model: the same runs simulated with every down answer 1.00 ms")
        );
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(
            notes[1].starts_with("attempts of breaker: the source published 123; the break"),
            "{}",
            notes[1]
        );
    }

    #[test]
    fn failure_latency_is_the_median_of_attempts_a_down_phase_failed() {
        let scenario = Scenario::named("breaker").unwrap();
        let params = Params::for_scenario(&scenario, &Default::default()).unwrap();
        let mut a = RunAccumulator::new(scenario.clone(), &params, "breaker", params.seed());
        a.arrival(0, Some(1));
        let mut run = a.finish();
        let line = |sent_us, end_us, end| AttemptLine {
            client: 0,
            op: 0,
            attempt: 1,
            sent_us,
            end_us,
            end,
        };
        run.attempt_log = vec![
            line(0, 900, LineEnd::Status(503)),
            line(50_000, 50_700, LineEnd::Status(503)),
            line(100_000, 101_300, LineEnd::Status(503)),
            line(150_000, 150_600, LineEnd::Status(503)),
            // Not failed by the down phase: neither counted.
            line(200_000, 200_100, LineEnd::Status(200)),
            line(250_000, 250_000, LineEnd::FailedFast),
        ];
        let mut s = ScenarioSummary {
            scenario,
            model: None,
            machine: None,
            params,
            simulated: false,
            complete: true,
            runs: vec![run],
        };
        // Sorted 600, 700, 900, 1300: the lower median.
        assert_eq!(failure_latency_us(&s), Some((700, 4)));
        s.runs[0].attempt_log.clear();
        assert_eq!(failure_latency_us(&s), None);
    }
}
