//! Files written beside the logs: `summary.json` (spec section 8), the arrival series CSVs, the
//! figures and `report.md`.
//!
//! `summary.json` is written to a temporary file and renamed over the old one, so a reader never
//! sees half a summary. Its runs carry every field of spec section 6 plus `complete`, `fidelity`
//! and `matched` (null for the simulator).

use std::fs;
use std::path::Path;

use crate::metrics::RunMetrics;
use crate::{figures, html, AnalyzeError, ScenarioSummary};

fn out_err(path: &Path, e: impl std::fmt::Display) -> AnalyzeError {
    AnalyzeError::Output {
        path: path.into(),
        message: e.to_string(),
    }
}

/// Writes `bytes` to `path` at once ([`e03_io::logs::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AnalyzeError> {
    e03_io::logs::write_atomic(path, bytes).map_err(|e| out_err(path, e))
}

pub use e03_metrics::summary_json;

/// Writes `arrivals_100ms.csv` or `arrivals_1s.csv`: `seed,window_start_s,<S>...,<S>_retries...`.
pub fn write_series_csv(
    path: &Path,
    s: &ScenarioSummary,
    one_second: bool,
) -> Result<(), AnalyzeError> {
    let strategies = s.strategies();
    let mut w = csv::Writer::from_path(path).map_err(|e| out_err(path, e))?;
    let mut header = vec!["seed".to_string(), "window_start_s".to_string()];
    header.extend(strategies.iter().cloned());
    header.extend(strategies.iter().map(|id| format!("{id}_retries")));
    w.write_record(&header).map_err(|e| out_err(path, e))?;
    for seed in s.seeds() {
        let runs: Vec<Option<&RunMetrics>> = strategies
            .iter()
            .map(|id| s.runs_of(id).find(|r| r.seed == seed))
            .collect();
        let series = |r: &RunMetrics| -> (Vec<u64>, Vec<u64>) {
            if one_second {
                (r.arrivals_1s.clone(), r.retries_1s.clone())
            } else {
                (r.arrivals_100ms.clone(), r.retries_100ms.clone())
            }
        };
        let data: Vec<(Vec<u64>, Vec<u64>)> = runs
            .iter()
            .map(|r| r.map(series).unwrap_or_default())
            .collect();
        let windows = data.iter().map(|d| d.0.len()).max().unwrap_or(0);
        for k in 0..windows {
            let start = if one_second {
                k.to_string()
            } else {
                format!("{:.1}", k as f64 / 10.0)
            };
            let mut row = vec![seed.to_string(), start];
            row.extend(
                data.iter()
                    .map(|d| d.0.get(k).copied().unwrap_or(0).to_string()),
            );
            row.extend(
                data.iter()
                    .map(|d| d.1.get(k).copied().unwrap_or(0).to_string()),
            );
            w.write_record(&row).map_err(|e| out_err(path, e))?;
        }
    }
    w.flush().map_err(|e| out_err(path, e))
}

pub use crate::blocks::{report_blocks, Block};

/// `report.md`: the report's blocks as markdown, for reading on GitHub.
pub fn report_markdown(s: &ScenarioSummary) -> String {
    blocks_markdown(report_blocks(s))
}

/// Blocks as markdown (`report.md`, and a chain run's `chain.md`).
pub fn blocks_markdown(blocks: Vec<Block>) -> String {
    let mut md = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                md += &format!("{} {text}\n\n", "#".repeat(level as usize))
            }
            Block::Para(text) => md += &format!("{text}\n\n"),
            Block::Table(t) => md += &format!("{}\n", t.markdown()),
            Block::Figure { file, alt } => md += &format!("![{alt}]({file})\n\n"),
            Block::Pre(text) => md += &format!("```text\n{text}```\n\n"),
            Block::Items(lines) => {
                for line in lines {
                    md += &format!("- {line}\n");
                }
                md += "\n";
            }
        }
    }
    md
}

/// Writes summary.json, the CSVs, the figures and report.md into `dir`.
pub fn write_outputs(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    // Written into a folder of their own, then moved into place: a failure (a full disk)
    // leaves no truncated figure and no half of the outputs that would look like a result.
    // A name of this process's own, made here and never found: nothing of the user's (nor of
    // another analysis of the same folder) is ever removed with it.
    let stage = dir.join(format!("{STAGE}.{}", std::process::id()));
    fs::create_dir(&stage).map_err(|e| out_err(&stage, e))?;
    if let Err(e) = write_each(&stage, s) {
        let _ = fs::remove_dir_all(&stage);
        return Err(match e {
            AnalyzeError::Output { path, message } => AnalyzeError::Output {
                path: dir.join(path.strip_prefix(&stage).unwrap_or(&path)),
                message,
            },
            other => other,
        });
    }
    for entry in fs::read_dir(&stage).map_err(|e| out_err(&stage, e))? {
        let entry = entry.map_err(|e| out_err(&stage, e))?;
        let to = dir.join(entry.file_name());
        fs::rename(entry.path(), &to).map_err(|e| out_err(&to, e))?;
    }
    fs::remove_dir(&stage).map_err(|e| out_err(&stage, e))
}

/// The folder inside a scenario's folder where its outputs are written before they are moved
/// into place.
const STAGE: &str = ".outputs.tmp";

/// Every output of [`write_outputs`], written into `dir`.
fn write_each(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    write_atomic(&dir.join("summary.json"), summary_json(s).as_bytes())?;
    write_series_csv(&dir.join("arrivals_100ms.csv"), s, false)?;
    write_series_csv(&dir.join("arrivals_1s.csv"), s, true)?;
    figures::write_arrivals(dir, s)?;
    figures::write_comparison(dir, s)?;
    if let Some(t) = e03_metrics::ledger::ledger_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("ledger.csv"), &rows)?;
    }
    if let Some(t) = e03_metrics::tables::no_answer_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("no_answer.csv"), &rows)?;
    }
    if let Some(t) = e03_metrics::tables::connections_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("connections.csv"), &rows)?;
    }
    if let Some(t) = e03_metrics::steps::step_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("steps.csv"), &rows)?;
        figures::write_steps(dir, s)?;
    }
    if s.runs.iter().any(|r| r.open_loop.is_some()) {
        let rows = e03_metrics::openloop::open_loop_csv_rows(s);
        write_csv_rows(&dir.join("open_loop_1s.csv"), &rows)?;
        figures::write_goodput(dir, s)?;
    }
    if let Some(log) = e03_metrics::checks::attempt_log_text(s) {
        let path = dir.join("attempts.txt");
        fs::write(&path, log).map_err(|e| out_err(&path, e))?;
    }
    let report = dir.join("report.md");
    fs::write(&report, report_markdown(s)).map_err(|e| out_err(&report, e))?;
    // Last: it inlines the figures written above.
    let page = dir.join("report.html");
    let text = html::report_html(dir, s);
    fs::write(&page, text).map_err(|e| out_err(&page, e))
}

/// Writes rows of cells as a CSV file (the simulator's sweep table, for one), creating its
/// directory.
pub fn write_csv_rows(path: &Path, rows: &[Vec<String>]) -> Result<(), AnalyzeError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    }
    let mut w = csv::Writer::from_path(path).map_err(|e| out_err(path, e))?;
    for row in rows {
        w.write_record(row).map_err(|e| out_err(path, e))?;
    }
    w.flush().map_err(|e| out_err(path, e))
}
