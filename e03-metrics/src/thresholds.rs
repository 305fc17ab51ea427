//! A scenario's thresholds (`[[threshold]]` tables, [`e03_plan::thresholds`]) judged on its
//! runs' final figures, by the checks' own code: one row per threshold and seed.

use e03_plan::checks::CheckSpec;
use serde::Serialize;

use crate::table::Table;
use crate::ScenarioSummary;

/// One threshold on one seed's runs, as `summary.json`, `report.md`, the tables and the JUnit
/// file show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdRow {
    /// `success (affected) of C > 0.95`.
    pub threshold: String,
    pub metric: String,
    pub strategy: String,
    pub seed: u64,
    /// The bound: `> 0.95`, `<= 150`.
    pub bound: String,
    /// The figure measured (or why there is none: `not run`, ...).
    pub measured: String,
    /// `None`: not judged (no figure).
    pub pass: Option<bool>,
}

impl ThresholdRow {
    pub fn verdict(&self) -> &'static str {
        match self.pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "n/a",
        }
    }

    /// The line a breach prints: `threshold success (affected) of C > 0.95 broken: measured
    /// 0.91 (seed 1)`.
    pub fn breach_line(&self) -> String {
        format!(
            "threshold {} broken: measured {} (seed {})",
            self.threshold, self.measured, self.seed
        )
    }
}

/// The thresholds of the summary's scenario on its final figures, one row per threshold and
/// seed, in the file's order; none for a run that cannot be trusted ([`crate::trust::Trust`]:
/// an incomplete run, an aborted one included, is judged by nothing).
pub fn evaluate(s: &ScenarioSummary) -> Vec<ThresholdRow> {
    if !crate::trust::Trust::of(s).judges() {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for t in &s.scenario.def().thresholds {
        // A band alone: the checks' code judges it as a threshold.
        let check: &CheckSpec = &t.check;
        for seed in s.seeds() {
            let r = crate::checks::evaluate_spec(s, check, seed);
            rows.push(ThresholdRow {
                threshold: t.label(),
                metric: r.metric,
                strategy: r.strategy,
                seed,
                bound: r.band,
                measured: r.ours,
                pass: r.pass,
            });
        }
    }
    rows
}

/// Whether any threshold of the summary broke.
pub fn any_broken(s: &ScenarioSummary) -> bool {
    evaluate(s).iter().any(|r| r.pass == Some(false))
}

/// The threshold table's heading.
pub const THRESHOLD_HEADING: &str = "Thresholds: the bounds the scenario holds the run to";

/// The threshold table, or `None` when the scenario has none (or the run is not judged).
pub fn threshold_table(s: &ScenarioSummary) -> Option<Table> {
    let rows = evaluate(s);
    if rows.is_empty() {
        return None;
    }
    let many = s.seeds().len() > 1;
    let mut headers = vec!["metric", "strategy"];
    if many {
        headers.push("seed");
    }
    headers.extend(["measured", "bound", "threshold"]);
    let mut t = Table {
        headers: headers.into_iter().map(String::from).collect(),
        rows: Vec::new(),
    };
    for r in rows {
        let mut cells = vec![r.metric.clone(), r.strategy.clone()];
        if many {
            cells.push(r.seed.to_string());
        }
        cells.extend([r.measured.clone(), r.bound.clone(), r.verdict().to_string()]);
        t.rows.push(cells);
    }
    Some(t)
}
